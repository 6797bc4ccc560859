#!/usr/bin/env bash
# The reference answers' evidence on one NVIDIA H200, in one go.
#
#   OUT=/some/folder bash results/run_h200.sh        # from the repository root
#
# Needs python3 with torch, triton, numpy and rich (no jsonschema, textual or watchfiles).
# Writes into $OUT (at most 8 files):
#   checks-h200.json / .log   every GPU workshop's named checks on the reference answers
#   bench-graph.json / .log   benchmark, --timing graph (warm graph replay), every dtype
#   bench-events.json / .log  benchmark, --timing events (per Python call, warm L2), every dtype
#   SUMMARY.md                results/summarize.py over those two benchmark files
# Budget (measured on an H200, 2026-12-02, 5 ops x all dtypes = 252 variants per run): the
# checks about 75 s, the graph run about 65 s, the events run about 25 s with --quick and
# about a minute without; the whole script stays well under 8 minutes.  If a slower
# machine needs it, add --quick (fewer repetitions) to the benchmark steps.
# Each step runs even if an earlier one failed; the exit status is the worst of them.
# To keep the evidence, copy the two bench-*.json files into results/ under new names
# (date and commit, e.g. results/2026-12-02-<commit>-graph.json) and run
# `python3 results/summarize.py`; never overwrite an earlier file.
set -o pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the folder for the results}"
mkdir -p "$OUT"
PY=${PYTHON:-python3}
cd "$(dirname "$0")/.." || exit 1

status=0
step() {   # step NAME COMMAND...: run, tee the log, remember the worst exit status
    local name=$1; shift
    local t0=$SECONDS
    echo "=== $name: $*"
    "$@" 2>&1 | tee "$OUT/$name.log"
    local rc=$?
    echo "=== $name: exit $rc after $((SECONDS - t0)) s"
    if [ "$rc" -gt "$status" ]; then status=$rc; fi
    return 0
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv || true
$PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"

step checks-h200 $PY -m checks all --include-gpu --solution --json "$OUT/checks-h200.json"
step bench-graph $PY -m checks.benchmark --op all --solution --timing graph --dtype all \
    --output "$OUT/bench-graph.json"
step bench-events $PY -m checks.benchmark --op all --solution --timing events --dtype all \
    --output "$OUT/bench-events.json"
$PY results/summarize.py --results "$OUT" --output "$OUT/SUMMARY.md" || status=1
echo "=== done in $SECONDS s; worst exit status $status"
exit "$status"
