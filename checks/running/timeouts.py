"""What a check that ran out of time was doing, in words: the kernel it was launching and
how many launches it had made (from the worker's ``Launching`` events), and where the
learner's code was (from a faulthandler stack dump).  Standard library only."""

from __future__ import annotations

import os
import re
from typing import Optional

from checks.running import events

MANY_LAUNCHES = 1000  # launches in one check past which their count is the likely cause


def timeout_activity(launching: Optional[events.Launching]) -> str:
    """What a timed-out check had been doing, for its message: the kernel it launched
    last, on which grid, and how many launches the check had made by then (the worker
    reports them at most about twice a second, so "at least")."""
    if launching is None:
        return " (an infinite loop, or far too slow)"
    grid = ", ".join(str(g) for g in launching.grid or ())
    on = f" on grid ({grid}{',' if len(launching.grid or ()) == 1 else ''})" if grid else ""
    times = "once" if launching.count == 1 else f"at least {launching.count:,} times"
    text = f"; by then it had launched {launching.kernel}{on} {times}"
    if launching.total != launching.count:
        text += f" ({launching.total:,} launches of every kernel)"
    if launching.total >= MANY_LAUNCHES:
        return text + (
            ": each launch costs microseconds before the GPU does any work, so a wrapper that"
            " launches per row or per head runs out of time; cover more of the work per launch"
        )
    return text + ": a kernel that loops forever, or does far too much work per program"


_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+) in (?P<function>.+?)\s*$')


def stuck_at(stack: str, path) -> Optional[dict]:
    """The most recent frame in ``path`` in a faulthandler stack dump: where the
    learner's code was when it was stopped ({"file", "line", "function"}), else None.
    The thread that took the dump ("Current thread") is searched first."""
    target = os.path.realpath(str(path))
    blocks: list[tuple[bool, list[re.Match]]] = []
    block: Optional[list[re.Match]] = None
    for line in stack.splitlines():
        if line.startswith(("Current thread", "Thread ", "Stack (most recent")):
            block = []
            blocks.append((line.startswith("Current thread"), block))
        elif block is not None:
            m = _FRAME.match(line)
            if m:
                block.append(m)
    blocks.sort(key=lambda b: not b[0])
    for _, frames in blocks:
        for m in frames:  # most recent call first
            if os.path.realpath(m["file"]) == target:
                return {"file": m["file"], "line": int(m["line"]), "function": m["function"]}
    return None
