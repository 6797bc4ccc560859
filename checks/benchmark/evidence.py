"""The JSON evidence of one run (schema ``results/schema/benchmark.schema.json``):
the envelope around the rows, the sha256 of every measured file, and strict JSON
(no NaN).  Pure Python."""

from __future__ import annotations

import hashlib
import math
import subprocess
import time
from pathlib import Path
from typing import Optional

from checks.benchmark.rows import REL_TOL, exit_code

REPO = Path(__file__).resolve().parent.parent.parent
SCHEMA = "kernel-course/benchmark"
VERSION = 1


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def rel_path(path: Path) -> str:
    p = Path(path).resolve()
    try:
        return p.relative_to(REPO).as_posix()
    except ValueError:
        return str(p)


def source_hashes(paths) -> dict:
    return {rel_path(p): sha256_file(p) for p in paths if p and Path(p).is_file()}


def engine_files() -> list:
    """The benchmark's own modules (their hashes go into every payload)."""
    return sorted(Path(__file__).resolve().parent.glob("*.py"))


def git_commit() -> Optional[str]:
    """The checkout's commit (read-only), or None outside a git checkout."""
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or None if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def build_payload(
    *,
    command: list,
    timing: str,
    cache: str,
    target: str,
    environment: dict,
    hashes: dict,
    ceilings: dict,
    results: list,
    targets: Optional[list] = None,
    method: str = "",
    quick: bool = False,
    created: Optional[str] = None,
    commit: Optional[str] = None,
    notes: Optional[list] = None,
    tolerance_scales: Optional[dict] = None,
) -> dict:
    payload = {
        "schema": SCHEMA,
        "version": VERSION,
        "created": created or time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": list(command),
        "timing": timing,
        "cache": cache,
        "quick": bool(quick),
        "method": method,
        "target": target,
        "commit": commit,
        "environment": environment,
        "source_hashes": hashes,
        "ceilings": ceilings,
        "tolerances": {"rel_error": REL_TOL, "scale_by_op": dict(tolerance_scales or {})},
        "results": results,
        "targets": targets or [],
        "notes": notes or [],
        "exit_code": exit_code(results),
    }
    return clean(payload)


def clean(x):
    """NaN and infinities are not JSON: they become null."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    return x
