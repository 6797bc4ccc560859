"""The run messages of tui.messages as plain objects, for use without Textual.

The headless controller (the latency benchmark on a machine with no Textual) posts
these: the same class names and fields, without the Textual ``Message`` base.
"""

from __future__ import annotations


class RunMessage:
    def __init__(self, generation: int, content_hash: str) -> None:
        self.generation = generation
        self.content_hash = content_hash


class CheckPlanned(RunMessage):
    def __init__(self, generation: int, content_hash: str, cases: list) -> None:
        super().__init__(generation, content_hash)
        self.cases = cases


class CheckStarted(RunMessage):
    def __init__(self, generation: int, content_hash: str, check_id: str) -> None:
        super().__init__(generation, content_hash)
        self.check_id = check_id


class RecordArrived(RunMessage):
    def __init__(self, generation: int, content_hash: str, record) -> None:
        super().__init__(generation, content_hash)
        self.record = record


class RunFinished(RunMessage):
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
