"""Watch the workspace FOLDER for saves of one file.

Editors that save by writing a temporary file and renaming it over the old one
replace the inode, so a watch on the file itself goes deaf after the first save; a
watch on the folder, filtered by name, sees every save.  ``poll=True`` uses polling
for file systems that send no events (network drives, some WSL and container mounts).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import AsyncIterator

import watchfiles


def name_filter(name: str):
    def keep(change: watchfiles.Change, path: str) -> bool:
        return Path(path).name == name and change != watchfiles.Change.deleted
    return keep


def _signature(path: Path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


async def saves(folder: Path, name: str, *, poll: bool = False,
                stop_event=None, idle_ms: int = 500) -> AsyncIterator[set]:
    """Yield the changes to ``folder/name`` as they happen (a set per batch), and an
    empty set after every ``idle_ms`` without one: the first empty set says the watch
    is in place (a save before that could be missed).

    With ``poll``, the poller compares whole-second modification times, so a save in
    the same second as the previous one goes unseen: every wake-up also compares the
    file's own finer signature (inode, size, nanosecond times) and reports a change."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    last = _signature(target) if poll else None
    async for changes in watchfiles.awatch(
            folder, watch_filter=name_filter(name), recursive=False,
            force_polling=True if poll else None, poll_delay_ms=150,
            debounce=400, step=30, stop_event=stop_event,
            rust_timeout=idle_ms, yield_on_timeout=True):
        if poll:
            now = _signature(target)
            if not changes and now is not None and now != last:
                changes = {(watchfiles.Change.modified, str(target))}
            last = now
        yield changes
