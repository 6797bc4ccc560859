"""Typed messages that carry a check run's progress from a thread worker to the screen.

Frozen dataclasses, without Textual: the controller (tui.runner) posts them, the
workshop screen receives each wrapped once in a Textual message (tui.run_loop.RunUpdate)
and the headless loop (tui.headless, no Textual) keeps them as they are.  Readers match
on the class (``isinstance(m, RunFinished)``).

Every message names the run it belongs to (``generation``, a counter the screen bumps
for each new run) and the content hash of the file that run checks.  The screen drops
any message whose generation is not the current one, so a result from a stale run is
never displayed as current.

A run's records arrive one by one (``RecordArrived``), each exactly once;
``RunFinished`` says only how the run ended, so a reader that needs the run's records
keeps those of its generation.
"""

from __future__ import annotations

from dataclasses import dataclass

from checks.judging import Record


@dataclass(frozen=True)
class RunMessage:
    generation: int
    content_hash: str


@dataclass(frozen=True)
class CheckPlanned(RunMessage):
    """The worker has loaded the checks it will run (ids, labels) in order."""

    cases: list


@dataclass(frozen=True)
class CheckStarted(RunMessage):
    """One named check has begun."""

    check_id: str


@dataclass(frozen=True)
class RecordArrived(RunMessage):
    """One named check has a verdict."""

    record: Record


@dataclass(frozen=True)
class RunFinished(RunMessage):
    """The run is over: ``outcome`` is done / crashed / timeout / cancelled / usage / error."""

    outcome: str
    seconds: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class BenchmarkRow(RunMessage):
    """The timing subprocess has measured one more row (more may follow)."""

    row: dict


@dataclass(frozen=True)
class BenchmarkFinished(RunMessage):
    """The timing subprocess is over: ``results`` rows, or ``error`` saying why not."""

    results: list
    error: str = ""
    output: str = ""
