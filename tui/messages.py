"""Typed messages that carry a check run's progress from a thread worker to the screen.

Every message names the run it belongs to (``generation``, a counter the screen bumps
for each new run) and the content hash of the file that run checks.  The screen drops
any message whose generation is not the current one, so a result from a stale run is
never displayed as current.
"""

from __future__ import annotations

from textual.message import Message

from checks.judging import Record


class RunMessage(Message):
    def __init__(self, generation: int, content_hash: str) -> None:
        super().__init__()
        self.generation = generation
        self.content_hash = content_hash


class CheckPlanned(RunMessage):
    """The worker has loaded the checks it will run (ids, labels) in order."""

    def __init__(self, generation: int, content_hash: str, cases: list) -> None:
        super().__init__(generation, content_hash)
        self.cases = cases


class CheckStarted(RunMessage):
    """One named check has begun."""

    def __init__(self, generation: int, content_hash: str, check_id: str) -> None:
        super().__init__(generation, content_hash)
        self.check_id = check_id


class RecordArrived(RunMessage):
    """One named check has a verdict."""

    def __init__(self, generation: int, content_hash: str, record: Record) -> None:
        super().__init__(generation, content_hash)
        self.record = record


class RunFinished(RunMessage):
    """The run is over: ``outcome`` is done / crashed / timeout / cancelled / usage / error."""

    def __init__(
        self,
        generation: int,
        content_hash: str,
        outcome: str,
        records: list,
        seconds: float = 0.0,
        error: str = "",
    ) -> None:
        super().__init__(generation, content_hash)
        self.outcome = outcome
        self.records = records
        self.seconds = seconds
        self.error = error


class BenchmarkFinished(RunMessage):
    """The timing subprocess is over: ``results`` rows, or ``error`` saying why not."""

    def __init__(
        self, generation: int, content_hash: str, results: list, error: str = "", output: str = ""
    ) -> None:
        super().__init__(generation, content_hash)
        self.results = results
        self.error = error
        self.output = output
