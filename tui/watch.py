"""Watch the workspace FOLDER for saves of one file.

Editors that save by writing a temporary file and renaming it over the old one
replace the inode, so a watch on the file itself goes deaf after the first save; a
watch on the folder, filtered by name, sees every save.  ``poll=True`` uses polling
for file systems that send no events (network drives, some WSL and container mounts).

Without the ``watchfiles`` package (a headless run on a GPU machine) a standard-library
poller stands in: it compares the file's signature every ``STEP_MS``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import AsyncIterator

try:
    import watchfiles
except ImportError:  # headless, on a machine with only the course's GPU packages
    watchfiles = None  # type: ignore[assignment]  # the optional module, None when absent

# The app's settings: a batch is yielded once no change came for STEP_MS (grouping at
# most DEBOUNCE_MS); --poll looks every POLL_DELAY_MS.
STEP_MS, DEBOUNCE_MS, POLL_DELAY_MS = 30, 400, 150
BACKEND = "watchfiles" if watchfiles is not None else "stat-poll"


def name_filter(name: str):
    def keep(change, path: str) -> bool:
        return Path(path).name == name and change != watchfiles.Change.deleted

    return keep


def _signature(path: Path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


async def _stat_poll(
    target: Path, stop_event, idle_ms: int, interval_ms: int = STEP_MS
) -> AsyncIterator[set]:
    """The fallback: compare the file's signature every ``interval_ms``."""
    loop = asyncio.get_running_loop()
    last = _signature(target)
    yield set()  # the watch is in place
    quiet_since = loop.time()
    while stop_event is None or not stop_event.is_set():
        await asyncio.sleep(interval_ms / 1000)
        now = _signature(target)
        if now != last:
            last = now
            if now is not None:
                yield {("modified", str(target))}
                quiet_since = loop.time()
                continue
        if loop.time() - quiet_since >= idle_ms / 1000:
            quiet_since = loop.time()
            yield set()


async def saves(
    folder: Path, name: str, *, poll: bool = False, stop_event=None, idle_ms: int = 500
) -> AsyncIterator[set]:
    """Yield the changes to ``folder/name`` as they happen (a set per batch), and an
    empty set after every ``idle_ms`` without one: the first empty set says the watch
    is in place (a save before that could be missed).

    With ``poll``, the poller compares whole-second modification times, so a save in
    the same second as the previous one goes unseen: every wake-up also compares the
    file's own finer signature (inode, size, nanosecond times) and reports a change."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    if watchfiles is None:
        async for changes in _stat_poll(target, stop_event, idle_ms):
            yield changes
        return
    last = _signature(target) if poll else None
    async for changes in watchfiles.awatch(
        folder,
        watch_filter=name_filter(name),
        recursive=False,
        force_polling=True if poll else None,
        poll_delay_ms=POLL_DELAY_MS,
        debounce=DEBOUNCE_MS,
        step=STEP_MS,
        stop_event=stop_event,
        rust_timeout=idle_ms,
        yield_on_timeout=True,
    ):
        if poll:
            now = _signature(target)
            if not changes and now is not None and now != last:
                changes = {(watchfiles.Change.modified, str(target))}
            last = now
        yield changes
