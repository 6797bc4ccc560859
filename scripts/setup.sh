#!/usr/bin/env bash
# Create .venv in the repository root and install the project into it.
# torch first, chosen by scripts/choose_torch.py: with an NVIDIA GPU, the torch release
# paired with the pinned Triton; without one, a CPU build (a plain "torch" requirement
# would pull a multi-GB CUDA build), or a message saying how to get one. It decides from
# the indexes' pages (and at most a torch's metadata), downloading no wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  choice=$(.venv/bin/python scripts/choose_torch.py --python .venv/bin/python) || exit 1
  mapfile -t torch_args <<<"$choice"
  .venv/bin/python -m pip install -q "${torch_args[@]}"
fi
# setuptools warns about every editable install even under -q; the warning is not ours to act on.
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q -e ".[test]"
