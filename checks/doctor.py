"""``python -m checks --doctor``: what will work here, and why not, with the fix.

Each line is one fact about this machine (Python, the packages, the GPU and its
compute capability, Triton's interpreter, compute-sanitizer) and, where something is
missing, the command that fixes it.  Standard library at import time; torch and
triton are imported inside, and a failure to import them is itself a finding.
"""

from __future__ import annotations

import importlib
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Optional

OK, WARN, PROBLEM = "ok", "note", "problem"


@dataclass
class Finding:
    status: str  # ok / note / problem
    what: str
    detail: str
    fix: str = ""


def gpu_present() -> bool:
    """Whether an NVIDIA GPU is visible, without importing torch (the app must not)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    if os.path.exists("/dev/nvidiactl"):
        return True
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        r = subprocess.run([smi, "-L"], capture_output=True, timeout=5)
        return r.returncode == 0 and b"GPU" in r.stdout
    except (OSError, subprocess.TimeoutExpired):
        return False


def _version(name: str) -> Optional[str]:
    try:
        mod = importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return None
    return getattr(mod, "__version__", "installed")


def findings() -> list:
    out = [
        Finding(
            OK if sys.version_info >= (3, 10) else PROBLEM,
            "python",
            f"{platform.python_version()} at {sys.executable}",
            "" if sys.version_info >= (3, 10) else "use Python 3.10 or newer",
        )
    ]
    in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    if not in_venv:
        out.append(
            Finding(
                WARN,
                "environment",
                "not inside a virtual environment",
                "run `bash scripts/setup.sh` and use .venv/bin/python",
            )
        )
    fix_install = "bash scripts/setup.sh (installs everything into .venv)"
    for name, why in (
        ("torch", "GPU workshops and their checks"),
        ("triton", "GPU workshops (kernels, and the interpreter on a CPU)"),
        ("numpy", "Triton's interpreter"),
        ("textual", "the terminal app"),
        ("watchfiles", "the app's file watching"),
    ):
        v = _version(name)
        status = OK if v else (WARN if name in ("textual", "watchfiles") else PROBLEM)
        out.append(
            Finding(
                status,
                name,
                f"{v} (for {why})" if v else f"missing: needed for {why}",
                "" if v else fix_install,
            )
        )
    np_v = _version("numpy")
    if np_v and _version("triton") == "3.6.0" and tuple(int(p) for p in np_v.split(".")[:2]) >= (2, 4):
        out.append(
            Finding(PROBLEM, "numpy", f"{np_v} breaks Triton 3.6's interpreter", "pip install 'numpy<2.4'")
        )
    out += _gpu_findings()
    return out


def _gpu_findings() -> list:
    out = []
    try:
        import torch
    except Exception:  # noqa: BLE001
        return [
            Finding(PROBLEM, "GPU workshops", "cannot run: torch is not importable", "bash scripts/setup.sh")
        ]
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        name = torch.cuda.get_device_name()
        cap_ok = major >= 8
        out.append(
            Finding(
                OK if cap_ok else WARN,
                "GPU",
                f"{name}, compute capability {major}.{minor}",
                "" if cap_ok else "bf16 checks need compute capability 8.0 or newer",
            )
        )
        out.append(
            Finding(
                OK, "GPU workshops", "run natively on the GPU and are timed by python -m checks.benchmark"
            )
        )
    else:
        why = "this PyTorch is a CPU build" if torch.version.cuda is None else "no CUDA device is visible"
        out.append(
            Finding(
                WARN,
                "GPU",
                f"none ({why})",
                "none needed to learn: the GPU workshops run in Triton's interpreter",
            )
        )
        out.append(
            Finding(
                OK if _version("triton") else PROBLEM,
                "GPU workshops",
                "run in Triton's interpreter on the CPU: correct but slow, not timed; "
                "bf16 tl.dot and CUDA-stream checks are skipped (they need a GPU)",
            )
        )
    if os.environ.get("TRITON_INTERPRET") == "1":
        out.append(
            Finding(
                WARN,
                "TRITON_INTERPRET",
                "is set to 1 in your shell: every kernel runs in the interpreter, even on a GPU",
                "unset TRITON_INTERPRET",
            )
        )
    sanitizer = shutil.which("compute-sanitizer")
    if torch.cuda.is_available():
        out.append(
            Finding(
                OK if sanitizer else WARN,
                "compute-sanitizer",
                sanitizer or "not found (needed only for --sanitize)",
                "" if sanitizer else "install the CUDA toolkit, or put its bin/ on PATH",
            )
        )
    return out


def report(out) -> int:
    """Print the findings; exit 0 when nothing is a problem, 3 otherwise."""
    marks = {OK: "ok", WARN: "note", PROBLEM: "FIX"}
    items = findings()
    for f in items:
        out.line(f"  {marks[f.status]:<5} {f.what:<18} {f.detail}")
        if f.fix:
            out.line(f"        -> {f.fix}")
    problems = [f for f in items if f.status == PROBLEM]
    out.line()
    out.line(
        "Everything the course needs is here."
        if not problems
        else f"{len(problems)} problem(s) above; the line after each says how to fix it."
    )
    return 0 if not problems else 3
