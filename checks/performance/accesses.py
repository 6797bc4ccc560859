"""Every load and store of one call in Triton's interpreter, summed per kernel and tensor.

:func:`record` runs a call with a listener on the interpreter's memory builder (through
checks.judging.launches, the one module that patches Triton) and returns one
:class:`KernelRecord` per launch: its grid, its arguments (for the sm_90 compile), and per
(tensor, load or store) the bytes moved over all programs and, for the first few programs
that touch it, how many 32-byte sectors each warp-wide request touches against the fewest
it could.

A launch of more than ``max_programs`` programs is sampled: the interpreter runs its
programs in order (x slowest, z fastest) and the first access of the program after the
sample ends the launch (:class:`_Enough`, a BaseException that neither Triton nor the
answer's wrapper catches, caught here).  The bytes of the programs that ran are scaled up
to the whole grid (:func:`finish`; programs that touched no memory count among those
that ran), and the record says how many ran.  The grid, the program ids and
``tl.num_programs`` are the launch's own: only the programs past the sample do not run,
so their outputs stay unwritten (a reading does not judge values).  Past
``cpu_seconds`` (CPU time) of recording in one call, each launch ends at its next
program (at least one recorded); past ``limit_seconds`` the recording ends wherever it
is with :class:`TooSlow` (no reading: a program itself runs that long), so one call's
recording never takes longer.

A warp-wide request is 32 lanes.  Triton hands a block's elements to lanes along the
axis that is contiguous in memory when it can see one (its coalescing pass), so the
lanes are ordered here along the axis whose neighbours lie closest in memory; a 1D
block has only its own order.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from checks.judging import launch_records, launches

SECTOR = 32
WARP = 32
SAMPLED_PROGRAMS = 4  # programs per stream whose requests are counted in sectors
MAX_PROGRAMS = 32  # programs per launch the interpreter runs; the rest are scaled from them
CPU_SECONDS = 4.0  # of recording per call, past which each launch ends at its next program
LIMIT_SECONDS = 7.0  # of recording per call, past which it ends wherever it is: no reading


class _Enough(BaseException):
    """The sample of a launch is complete: raised at the first access of the next program."""


class TooSlow(BaseException):
    """One program ran past the recording's limit without finishing (a BaseException, like
    :class:`_Enough`, so that Triton's interpreter passes it on unwrapped)."""


@dataclass
class Stream:
    """The loads (or the stores) of one tensor in one launch."""

    tensor: str
    kind: str  # "load" or "store"
    elem: int
    bytes: int = 0  # over every program
    requests: int = 0  # warp-wide, sampled programs only
    sectors: int = 0
    ideal_sectors: int = 0
    programs_seen: set = field(default_factory=set)
    program_bytes: int = 0  # bytes the sampled programs moved
    program_unique: int = 0  # distinct bytes the sampled programs moved (each program alone)
    lane_step: int = 0  # bytes between neighbouring lanes of the first sampled request
    addresses: dict = field(default_factory=dict)  # sampled program -> its addresses (while recording)

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0

    @property
    def ideal_per_request(self) -> float:
        return self.ideal_sectors / self.requests if self.requests else 0.0


@dataclass
class KernelRecord:
    name: str
    function: Any
    args: tuple
    kwargs: dict
    arg_names: list
    programs: int
    tensors: dict  # name -> (start, end, numel * element_size)
    streams: dict = field(default_factory=dict)  # (tensor, kind) -> Stream
    recorded: int = 0  # programs the interpreter ran that accessed memory
    ran: int = 0  # of a sampled launch: the programs that ran, in the interpreter's order
    sampled: bool = False  # the launch ended after ``ran`` programs of ``programs``
    why_sampled: str = ""  # "count" (max_programs) or "time" (cpu_seconds)
    program: Any = None  # the id of the program running now


def _tensor_ranges(named: list) -> dict:
    out = {}
    for name, a in named:
        if hasattr(a, "data_ptr") and hasattr(a, "stride") and hasattr(a, "element_size") and a.numel():
            span = sum((n - 1) * s for n, s in zip(a.shape, a.stride())) + 1
            start = a.data_ptr()
            out[name] = (start, start + span * a.element_size(), a.numel() * a.element_size())
    return out


def _grid_size(launch: launches.Launch) -> int:
    grid = launch.grid
    if callable(grid):
        meta = dict(zip(launch.arg_names(), launch.args), **launch.kwargs)
        grid = grid(meta)
    if isinstance(grid, int):
        grid = (grid,)
    n = 1
    for g in tuple(grid or (1,)):
        n *= int(g)
    return n


def lane_order(addrs: np.ndarray) -> np.ndarray:
    """The block's addresses flattened in lane order: the axis whose neighbours lie
    closest in memory moves fastest."""
    if addrs.ndim < 2:
        return addrs.reshape(-1)
    signed = addrs.astype(np.int64)
    steps = []
    for axis in range(addrs.ndim):
        if addrs.shape[axis] < 2:
            steps.append(np.inf)
            continue
        step = np.abs(np.diff(np.take(signed, [0, 1], axis=axis), axis=axis)).reshape(-1)
        nonzero = step[step > 0]
        steps.append(float(nonzero.min()) if nonzero.size else np.inf)
    fastest = int(np.argmin(steps)) if np.isfinite(min(steps)) else addrs.ndim - 1
    return np.moveaxis(addrs, fastest, -1).reshape(-1)


def lane_step(addrs: np.ndarray) -> int:
    """Bytes between neighbouring lanes of the first warp (0: all lanes on one address)."""
    flat = lane_order(addrs)[:WARP].astype(np.int64)
    steps = np.abs(np.diff(flat))
    steps = steps[steps > 0]
    return int(np.median(steps)) if steps.size else 0


def sector_counts(addrs: np.ndarray, active: Any, elem: int) -> tuple:
    """(warp-wide requests, 32-byte sectors they touch, the fewest they could touch)."""
    flat = lane_order(addrs)
    on = np.ones(flat.shape, bool) if active is None else lane_order(np.asarray(active))
    pad = (-flat.size) % WARP
    if pad:
        flat = np.concatenate([flat, np.zeros(pad, flat.dtype)])
        on = np.concatenate([on, np.zeros(pad, bool)])
    warps = flat.reshape(-1, WARP)
    lanes_on = on.reshape(-1, WARP)
    requests = sectors = ideal = 0
    for w, o in zip(warps, lanes_on):
        n = int(o.sum())
        if not n:
            continue
        requests += 1
        sectors += int(np.unique(w[o] // SECTOR).size)
        ideal += -(-n * elem // SECTOR)
    return requests, sectors, ideal


class _Recorder(launches.Listener):
    launch_kinds = frozenset((launches.INTERPRETED,))

    def __init__(
        self,
        max_programs: Optional[int] = MAX_PROGRAMS,
        cpu_seconds: float = CPU_SECONDS,
        limit_seconds: float = LIMIT_SECONDS,
        launched: Optional[Callable[[KernelRecord], None]] = None,
    ) -> None:
        self.thread = threading.get_ident()
        self.records: list = []
        self.current: Any = None
        self.max_programs, self.cpu_seconds, self.limit_seconds = max_programs, cpu_seconds, limit_seconds
        self.began = time.process_time()
        self.launched = launched

    def around_launch(self, launch: launches.Launch, proceed: Callable[[], Any]) -> Any:
        if launch.kind != launches.INTERPRETED or threading.get_ident() != self.thread:
            return proceed()
        named = list(zip(launch.arg_names(), launch.args)) + list(launch.kwargs.items())
        try:
            programs = _grid_size(launch)
        except Exception:  # noqa: BLE001 - a grid we cannot evaluate: sample the start only
            programs = 0
        rec = KernelRecord(
            launch.name,
            launch.function,
            launch.args,
            dict(launch.kwargs),
            launch.arg_names(),
            programs,
            _tensor_ranges(named),
        )
        self.records.append(rec)
        if self.launched is not None:
            self.launched(rec)
        outer, self.current = self.current, rec
        try:
            return proceed()
        except _Enough:
            rec.sampled = True
            return None
        finally:
            self.current = outer

    def _next_program(self, rec: KernelRecord, pid: Any, now: float) -> None:
        """``pid`` makes its first access: record it, or end the launch's sample."""
        if rec.recorded:
            if self.max_programs is not None and rec.recorded >= self.max_programs:
                rec.why_sampled = "count"
            elif now - self.began >= self.cpu_seconds:
                rec.why_sampled = "time"
            if rec.why_sampled:
                rec.ran = _order(pid, launches.interpreted_grid()) or rec.recorded
                raise _Enough()
        rec.recorded += 1
        rec.program = pid

    def access(self, access: launch_records.Access) -> None:
        rec = self.current
        if rec is None or threading.get_ident() != self.thread or access.kind not in ("load", "store"):
            return
        pid, now = access.program_id, time.process_time()
        if now - self.began > self.limit_seconds:
            raise TooSlow(
                f"the interpreter ran {now - self.began:.0f} s of CPU on this call without finishing it "
                f"(program {pid} of {rec.name}, {rec.recorded} of its {rec.programs} programs recorded; "
                f"a reading runs at most {self.max_programs} programs of a launch): too slow to read"
            )
        if pid != rec.program or not rec.recorded:
            self._next_program(rec, pid, now)
        addrs = access.addrs
        first = int(addrs[0])
        name = "other"
        for tname, (start, end, _) in rec.tensors.items():
            if start <= first < end:
                name = tname
                break
        key = (name, access.kind)
        stream = rec.streams.get(key)
        if stream is None:
            stream = rec.streams[key] = Stream(name, access.kind, access.elem)
        moved = int(addrs.size) * access.elem
        stream.bytes += moved
        if len(stream.programs_seen) < SAMPLED_PROGRAMS or pid in stream.programs_seen:
            stream.programs_seen.add(pid)
            full, active = access.lanes()
            r, s, i = sector_counts(full, active, access.elem)
            if not stream.lane_step:
                stream.lane_step = lane_step(full)
            stream.requests += r
            stream.sectors += s
            stream.ideal_sectors += i
            stream.program_bytes += moved
            stream.addresses.setdefault(pid, set()).update(np.unique(addrs).tolist())


def _order(pid: tuple, grid: tuple) -> int:
    """How many programs the interpreter ran before ``pid`` (x slowest, z fastest)."""
    if len(pid) != 3 or len(grid) != 3:
        return 0
    (x, y, z), (_, ny, nz) = pid, grid
    return (x * ny + y) * nz + z


def finish(rec: KernelRecord) -> None:
    """Fold the sampled programs' addresses into their distinct bytes, and scale a sampled
    launch's bytes from the programs that ran to its whole grid."""
    scale = rec.programs / rec.ran if rec.sampled and rec.ran and rec.programs else 1.0
    for stream in rec.streams.values():
        stream.program_unique = sum(len(a) for a in stream.addresses.values()) * stream.elem
        stream.addresses = {}
        stream.bytes = int(round(stream.bytes * scale))


def sample_sentence(records: list) -> str:
    """'sampled: ...' when a launch ran only part of its grid, else ''."""
    parts = [
        f"the first {rec.ran} of {rec.programs} programs of {rec.name}"
        + (" (the recording's time limit)" if rec.why_sampled == "time" else "")
        for rec in records
        if rec.sampled
    ]
    if not parts:
        return ""
    return (
        f"sampled: the interpreter ran {', '.join(parts)}; the bytes of the others are scaled from "
        "theirs (each program assumed to move as much)"
    )


def record(
    call: Callable[[], Any],
    max_programs: Optional[int] = MAX_PROGRAMS,
    cpu_seconds: float = CPU_SECONDS,
    limit_seconds: float = LIMIT_SECONDS,
    launched: Optional[Callable[[KernelRecord], None]] = None,
) -> tuple:
    """(what ``call()`` returned, [KernelRecord per interpreted launch, in order]): at most
    ``max_programs`` programs of each launch run (None: every one), see the module doc;
    ``launched`` hears each launch before it runs."""
    recorder = _Recorder(max_programs, cpu_seconds, limit_seconds, launched)
    # numpy's warnings off: a sampled launch leaves outputs unwritten, and the next kernel's
    # arithmetic on them is not the answer's (a reading does not judge values)
    with launches.listening(recorder), np.errstate(all="ignore"):
        result = call()
    for rec in recorder.records:
        finish(rec)
    return result, recorder.records
