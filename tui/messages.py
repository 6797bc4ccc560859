"""The benchmark's and the repair search's messages to the workshop screen, without Textual.

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


@dataclass(frozen=True)
class RepairProgress:
    """The repair search (``python -m checks.repair``) has tried ``tried`` of its
    ``candidates`` changes (0 of N right after it began), in its ``stage`` ("single"
    edits, then "pair"s)."""

    generation: int
    content_hash: str
    tried: int
    candidates: int
    stage: str = ""


@dataclass(frozen=True)
class RepairFinished:
    """The repair search is over: its ``repair`` (the result line's dict, whose
    ``status`` is found, none, budget, cancelled or not-applicable), or None with
    ``error`` saying why there is none (the process ended without a result)."""

    generation: int
    content_hash: str
    repair: dict | None
    error: str = ""
