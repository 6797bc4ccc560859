"""The benchmark's messages to the workshop screen, without Textual.

A check run's events are the engine's own (checks.running: Plan, Begin, RecordEvent,
End); the timing of a passing run is the app's, so its messages are defined here.  The
screen receives either kind wrapped once in a Textual message (tui.run_loop.RunUpdate).
Like a run's events, each names its run (``generation``) and the content hash it timed;
the screen drops it when its generation is not the current one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BenchmarkRow:
    """The timing subprocess has measured one more row (more may follow)."""

    generation: int
    content_hash: str
    row: dict


@dataclass(frozen=True)
class BenchmarkFinished:
    """The timing subprocess is over: ``results`` rows, or ``error`` saying why not."""

    generation: int
    content_hash: str
    results: list
    error: str = ""
    output: str = ""
