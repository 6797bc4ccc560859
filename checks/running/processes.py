"""Worker processes in a group of their own, and stopping a whole group: the one place
where POSIX and Windows differ.

Standard library only: the app imports this module.
"""

from __future__ import annotations

import os
import signal
import subprocess

POSIX = os.name == "posix"


def own_group() -> dict:
    """``subprocess.Popen`` keywords that start the process in a new group, so that it
    and everything it starts can be stopped at once."""
    if POSIX:
        return {"start_new_session": True}
    # Windows only: mypy checks the platform it runs on
    return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]


def kill_group(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and every process it started (a process started with
    :func:`own_group`), then reap it."""
    if POSIX:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    else:
        try:
            subprocess.run(["taskkill", "/F", "/T", "/PID", str(proc.pid)], capture_output=True, check=False)
        except OSError:
            proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
