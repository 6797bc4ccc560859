"""The benchmark's message to the workshop screen, without Textual.

A check run's events are the engine's own (checks.running: Plan, Begin, RecordEvent,
End); the timing of a passing run is the app's, so its message is defined here.  The
screen receives either kind wrapped once in a Textual message (tui.run_loop.RunUpdate).
Like a run's events, it names its run (``generation``) and the content hash it timed;
the screen drops it when its generation is not the current one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BenchmarkFinished:
    """The timing subprocess is over: ``results`` rows, or ``error`` saying why not."""

    generation: int
    content_hash: str
    results: list
    error: str = ""
    output: str = ""
