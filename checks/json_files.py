"""Writing the course's JSON files: the header every file of ``python -m checks`` starts
with, and the atomic writer every JSON file (records, evidence, progress, the app's
state) goes through.

Standard library only.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

RECORDS_SCHEMA = "kernel-course/check-records"


def run_header(kind: str, exit_code: int, interpret: bool) -> dict:
    """The fields every JSON file of ``python -m checks`` starts with (``kind``: "" for a
    run's records, "self-check" for the author's check)."""
    return {
        "schema": RECORDS_SCHEMA + (f"/{kind}" if kind else ""),
        "version": 1,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": ["python", "-m", "checks"] + sys.argv[1:],
        "exit_code": exit_code,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "interpret": bool(interpret),
        },
    }


def _umask() -> int:
    """The process's umask, read without changing it where /proc allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no /proc: read it by setting it back at once
    os.umask(mask)
    return mask


def ordinary_file_mode() -> int:
    """The mode open() gives a new file: 0666 less the umask (mkstemp's is a private 0600)."""
    return 0o666 & ~_umask()


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path`` and rename it over: a reader never
    sees half a file, and an interrupted write leaves the old file intact.  The file gets
    the mode an ordinary file gets (0644 less the umask), not mkstemp's private 0600."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            try:
                os.fchmod(f.fileno(), 0o644 & ~_umask())
            except (AttributeError, OSError):
                pass
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def write_json_atomic(path: Path, payload) -> Path:
    """Write JSON atomically (see :func:`write_text_atomic`).  Compact, no indentation
    (evidence files hold thousands of raw samples): one line and a newline; any JSON reader
    reads it as it read the indented files written before."""
    return write_text_atomic(path, json.dumps(payload, separators=(",", ":")) + "\n")
