"""Helpers for the app's headless tests: a temporary workspace, editor-like saves, and
waiting (with a deadline) for the results table to reach a state."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from checks import workspace as ws

DEADLINE = 60.0


def editor_save(path: Path, text: str) -> None:
    """Save like vim or a JetBrains IDE: write a temporary file, rename it over."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


async def wait_for(pilot, predicate, timeout: float = DEADLINE, what: str = "condition"):
    """Poll the app (letting it process messages) until predicate() is true."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        await pilot.pause(0.1)
        value = predicate()
        if value:
            return value
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def results_panel(app):
    from tui.widgets.results import ResultsPanel

    return app.screen.query_one(ResultsPanel)


async def wait_for_run(pilot, digest: str | None = None, timeout: float = DEADLINE):
    """Wait until the table shows a finished run (of the file with ``digest``, if given)."""

    def done():
        p = results_panel(pilot.app)
        return bool(p.outcome) and (digest is None or p.digest == digest)

    await wait_for(pilot, done, timeout, f"a finished run of {digest and digest[:8]}")
    await wait_for_lesson(pilot, timeout)
    return results_panel(pilot.app)


async def wait_for_lesson(pilot, timeout: float = DEADLINE):
    """Wait until the open workshop has rendered its lesson (it does once the screen has
    stayed open a moment; on a loaded machine a CPU workshop's run can finish first)."""
    await wait_for(pilot, lambda: getattr(pilot.app.screen, "lesson_ready", True), timeout, "the lesson")


def digest_of(path: Path) -> str:
    return ws.content_hash(Path(path).read_bytes())


async def wait_for_watch(pilot, timeout: float = 15):
    """Wait until the open workshop's folder watch is in place (saves before it could
    be missed, on a loaded machine)."""
    await wait_for(pilot, lambda: getattr(pilot.app.screen, "watching", False), timeout, "the folder watch")


async def save(pilot, path: Path, text: str) -> None:
    """An editor's save, once the app's folder watch is in place."""
    await wait_for_watch(pilot)
    editor_save(path, text)


def ready_workers(pool) -> list:
    """The warm workers a controller's pool holds, whatever its shape (one worker per
    preload, or a list per (preload, workshop))."""
    out = []
    for v in list(pool._ready.values()):
        out += list(v) if isinstance(v, (list, tuple)) else [v]
    return out
