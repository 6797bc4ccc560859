"""Where a regrade runs: the GPUs this machine has (without importing torch), the
course's commit, and a description of the machine for the report.

Standard library only.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]


def _nvidia_smi(query: str) -> list:
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return []
    try:
        r = subprocess.run(
            [tool, f"--query-gpu={query}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in r.stdout.splitlines() if line.strip()] if r.returncode == 0 else []


def parse_gpus(spec: str) -> Optional[list]:
    """``--gpus``: "auto" (None: look), "none" ([]), or a comma list of device ids.
    Raises ValueError naming the argument for anything else."""
    spec = spec.strip()
    if spec == "auto":
        return None
    if spec == "none":
        return []
    ids = [part.strip() for part in spec.split(",")]
    if not ids or not all(ids) or len(set(ids)) != len(ids):
        raise ValueError(f"--gpus: give auto, none or distinct device ids like 0,1, not {spec!r}")
    return ids


def gpus_here(spec: str = "auto") -> list:
    """The CUDA devices to put a worker on: ``--gpus`` when given, else
    CUDA_VISIBLE_DEVICES when set (empty: none), else what nvidia-smi lists."""
    chosen = parse_gpus(spec)
    if chosen is not None:
        return chosen
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip() and d.strip() != "-1"]
    return _nvidia_smi("index")


def gpu_names() -> list:
    return _nvidia_smi("name")


def commit() -> str:
    """The course's commit, with "+changes" when tracked files differ from it ("" outside git)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=30
        )
        if head.returncode != 0:
            return ""
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def memory_gib() -> float:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return 0.0


def describe() -> dict:
    """This machine, for the report (the workers' own hosts are in each result)."""
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count() or 1,
        "memory_gib": memory_gib(),
        "gpus": gpu_names(),
    }


def default_cpu_workers() -> int:
    """About one interpreter worker per two cores."""
    return max(1, (os.cpu_count() or 1) // 2)
