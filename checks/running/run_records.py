"""One run's records, kept in one place: by check id, in plan order.

A run (:class:`checks.running.child.ChildRun`, :class:`checks.running.pool.ShardedRun`)
adds each verdict here as it yields it; the session reads it for the progress file, the
screen for the results table and the export.  Standard library only.
"""

from __future__ import annotations

import threading
from typing import Iterator, Optional

from checks.judging.records import Record
from checks.running.events import RunOutcome


class RunRecords:
    """The records of one run by check id: the planned checks' in plan order, then those
    outside the plan (a load error, a crash between checks) in the order they came.

    ``generation`` and ``content_hash`` name the run (as its events do); ``outcome`` is
    ``running`` until the run ends.  Safe to read from another thread while it fills."""

    def __init__(self, generation: Optional[int] = None, content_hash: Optional[str] = None) -> None:
        self.generation = generation
        self.content_hash = content_hash
        self.outcome: str = RunOutcome.RUNNING
        self._plan: list = []
        self._by_id: dict = {}
        self._lock = threading.Lock()

    @property
    def plan(self) -> list:
        """The planned checks (dicts of id, label, why, section), in run order."""
        with self._lock:
            return list(self._plan)

    def set_plan(self, cases: list) -> None:
        with self._lock:
            self._plan = list(cases)

    def add(self, record: Record) -> bool:
        """Keep ``record``; False (and nothing kept) when its check already has one."""
        with self._lock:
            if record.id in self._by_id:
                return False
            self._by_id[record.id] = record
            return True

    def get(self, check_id: str) -> Optional[Record]:
        with self._lock:
            return self._by_id.get(check_id)

    @property
    def records(self) -> list:
        """Every record: the planned checks' in plan order, then the rest as they came."""
        with self._lock:
            planned = [c["id"] for c in self._plan if c["id"] in self._by_id]
            rest = [k for k in self._by_id if k not in set(planned)]
            return [self._by_id[k] for k in planned + rest]

    def __contains__(self, check_id: object) -> bool:
        with self._lock:
            return check_id in self._by_id

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_id)

    def __bool__(self) -> bool:
        return len(self) > 0
