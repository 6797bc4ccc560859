"""What a check worker says while it runs, typed: one dataclass per message.

A worker (``python -m checks.running.worker``) writes one JSON object per line; the parent
reads each with :func:`from_wire`, which checks it against the message's dataclass (an
unknown ``type`` or a missing field is a ``ValueError``), and a run
(:class:`checks.running.child.ChildRun`, :class:`checks.running.pool.ShardedRun`) yields these objects
to its reader in order::

    Ready -> Plan -> Loaded -> (Begin -> Launching* -> RecordEvent)* -> Done   (the worker's lines)
    Plan, Loaded, Begin, RecordEvent ..., End                       (what a run yields)

The one vocabulary of a run, from the worker to the screen: every event a run yields
carries the run's ``generation`` (a counter a :class:`checks.running.RunSession` bumps per
run) and ``content_hash`` (the file's content it checks; from ``Loaded`` on, the bytes the
worker imported).  The worker's lines leave them out; the parent stamps them as it decodes
(``from_wire(message, generation=..., content_hash=...)``).  A reader matches on the class
(``isinstance(ev, events.End)``).  Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, ClassVar, Optional

from checks.judging.records import Record


class RunOutcome(str, Enum):
    """How a run ended (a str: it compares equal to its word and is written as it)."""

    RUNNING = "running"  # not yet
    DONE = "done"  # every selected check has its record
    CRASHED = "crashed"  # the process died (a segfault, os._exit)
    TIMEOUT = "timeout"  # stopped at the run's time limit
    CANCELLED = "cancelled"  # a newer save, or the app closing
    USAGE = "usage"  # the job itself was wrong (an unknown check id)
    ERROR = "error"  # the controller could not run it (no process could start)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, kw_only=True)
class Event:
    type: ClassVar[str] = ""
    t: Optional[float] = None  # the worker's clock when it wrote the line (transfer time)
    generation: Optional[int] = None  # the run it belongs to (None: no session's run)
    content_hash: Optional[str] = None  # the content that run checks

    def to_wire(self) -> dict:
        """The JSON object a worker writes (``None`` fields left out)."""
        out = {"type": self.type}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Record):
                value = value.to_dict()
            if value is not None:
                out[f.name] = value
        return out


@dataclass(frozen=True, kw_only=True)
class Ready(Event):
    """The worker's imports (and warm-up) are done; ``cases`` when it was warmed for a
    workshop, ``warm_error`` when the warm-up failed (a slower first check, not a fault)."""

    type: ClassVar[str] = "ready"
    pid: int
    cases: Optional[list] = None
    warm_error: Optional[str] = None
    target: Optional[list] = None  # the GPU's compile target: backend, arch, warp size


@dataclass(frozen=True, kw_only=True)
class Plan(Event):
    """The checks this run will report, in order: dicts of id, label, why, section."""

    type: ClassVar[str] = "plan"
    cases: list


@dataclass(frozen=True, kw_only=True)
class Loaded(Event):
    """The exercise file was imported; ``content_hash``: the sha256 of exactly the bytes
    the checks run on."""

    type: ClassVar[str] = "loaded"


@dataclass(frozen=True, kw_only=True)
class Begin(Event):
    type: ClassVar[str] = "begin"
    id: str


@dataclass(frozen=True, kw_only=True)
class RecordEvent(Event):
    """One check's verdict.  ``compile_s``/``compiles``/``cache_hits``: Triton compiling
    during it, where the worker can tell; ``variants``: the kernel variants of the
    learner's file it compiled first (see checks.running.variants); ``wait_s``: the seconds it
    waited for the compile pool."""

    type: ClassVar[str] = "record"
    record: Record
    compile_s: Optional[float] = None
    compiles: Optional[int] = None
    cache_hits: Optional[int] = None
    variants: Optional[list] = None
    wait_s: Optional[float] = None


@dataclass(frozen=True, kw_only=True)
class Launching(Event):
    """A kernel launch began during the running check (sent at a kernel's first launch of
    the check, then at most about twice a second): ``kernel``, its ``count`` of launches
    in this check so far (this one included), ``total`` launches of every kernel in this
    check, and this launch's ``grid``.  The parent keeps the latest: a time limit's message
    says what was running.  Not yielded to a run's reader."""

    type: ClassVar[str] = "launching"
    kernel: str
    count: int
    total: int
    grid: Optional[list] = None


@dataclass(frozen=True, kw_only=True)
class Usage(Event):
    """The job itself was wrong (an unknown check id): a usage error, not a verdict."""

    type: ClassVar[str] = "usage"
    message: str


@dataclass(frozen=True, kw_only=True)
class Done(Event):
    """The job is over; ``code``: a benchmark job's exit code."""

    type: ClassVar[str] = "done"
    code: Optional[int] = None


@dataclass(frozen=True, kw_only=True)
class Eof(Event):
    """The worker's channel closed (it exited, crashed or was killed)."""

    type: ClassVar[str] = "eof"


@dataclass(frozen=True, kw_only=True)
class End(Event):
    """A run is over: how (done / crashed / timeout / cancelled / usage / error) and how
    long; ``error``: what went wrong beside the verdicts (a usage error, a progress file
    that could not be written)."""

    type: ClassVar[str] = "end"
    outcome: str
    seconds: float = 0.0
    stdout_bytes: int = 0
    shards: int = 1
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class Failure(Event):
    """A shard's reader raised: re-raised by the merged run once every shard ended."""

    type: ClassVar[str] = "error"
    error: BaseException


WIRE = {cls.type: cls for cls in (Ready, Plan, Loaded, Begin, Launching, RecordEvent, Usage, Done)}


def from_wire(message: dict, **run: Any) -> Event:
    """The typed event for one JSON object a worker wrote; ``ValueError`` when it is not
    one (unknown type, missing or unknown fields, a record that is not a record).
    ``run``: fields the line leaves out (``generation``, ``content_hash``), stamped on it."""
    if not isinstance(message, dict):
        raise ValueError(f"a worker message is a JSON object, not {type(message).__name__}")
    kind = message.get("type")
    cls = WIRE.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown worker message type {message.get('type')!r}")
    body = {**run, **{k: v for k, v in message.items() if k != "type"}}
    if cls is RecordEvent:
        if not isinstance(body.get("record"), dict):
            raise ValueError("a record message carries its record as an object")
        body["record"] = Record.from_dict(body["record"])
    try:
        return cls(**body)
    except TypeError as e:
        raise ValueError(f"{cls.type} message: {e}") from None
