"""Measuring one timed callable for the runner: each timer's samples (a
:class:`~checks.benchmark.statistics.RoundTimer` in rounds until it is sure enough, a plain
timer once), the timing loop's own cost per call, the bytes the timed calls rotate
through, and :class:`Timing`, how the runner times a row (with A/A, the L2 state).

No torch import: tensors are only asked for their storage.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Callable, Iterator, Optional

from checks.benchmark.statistics import RoundTimer, aa_row, add_timings, cache_state, quantile, until_sure
from checks.benchmark.timed_calls import TimedCall


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while timing, as timeit does: a collection
    inside a timed loop of Python calls adds milliseconds to one sample and widens the
    per-call interval; put back as it was.  No full collection first: with torch and
    Triton loaded one takes 40-80 ms, and one per measurement was a third of the app's
    benchmark time (garbage left uncollected costs a timed loop nothing)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def measure(timer: Callable, fn: Callable, clock: Callable[[], float]) -> tuple:
    """(samples in ms, {"rounds", "converged"}) of one timer on ``fn``, the garbage
    collector paused; a plain timer (``timer(fn) -> samples``) is one round with no
    target (converged None)."""
    with collector_paused():
        if isinstance(timer, RoundTimer):
            got = until_sure(
                timer.sampler(fn),
                rel_target=timer.rel_target,
                cap_s=timer.cap_s,
                clock=clock,
                max_samples=timer.max_samples,
                by_round=timer.by_round,
                min_span_s=timer.min_span_s,
            )
            sampling = {"rounds": got["rounds"], "converged": got["converged"]}
            if timer.by_round and got["rounds"]:
                sampling["round_size"] = len(got["samples"]) // got["rounds"]
            return got["samples"], sampling
        return list(timer(fn)), {"rounds": 1, "converged": None}


def measure_all(timers: dict, fn: Callable, clock: Callable[[], float]) -> tuple:
    """({kind: samples}, {kind: sampling}) of every timer on ``fn``, in order."""
    samples, sampling = {}, {}
    for kind, timer in timers.items():
        samples[kind], sampling[kind] = measure(timer, fn, clock)
    return samples, sampling


def harness_cost(timers: dict, timed: TimedCall, clock: Callable[[], float], seen: dict) -> Optional[float]:
    """The per-call timer's own cost per call in us: the median of the same timer on an
    empty candidate that rotates the same input sets (:meth:`TimedCall.empty`).  None
    when the events timer does not time a loop of calls.  ``seen`` keeps it per
    rotation (how many sets, how many tensors each), so one shape measures it once."""
    timer = timers.get("events")
    if not (isinstance(timer, RoundTimer) and timer.harness):
        return None
    key = (len(timed.fns), tuple(len(ts) for ts in timed.tensors))
    if key not in seen:
        samples, _ = measure(timer, timed.empty(), clock)
        seen[key] = quantile(samples, 0.5) * 1e3
    return seen[key]


def one_set_device_us(timers: dict, timed: TimedCall, clock: Callable[[], float]) -> Optional[float]:
    """Device time in us of the first input set alone (no rotation: its data stay in the L2
    from one call to the next), as a harness that times one set measures it; None without
    a device-time timer or a second set."""
    timer = timers.get("graph")
    if timer is None or len(timed.fns) < 2:
        return None
    samples, _ = measure(timer, TimedCall(timed.fns[:1], timed.tensors[:1]), clock)
    return quantile(samples, 0.5) * 1e3


def _flat(x) -> list:
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _flat(item)]
    if isinstance(x, dict):
        return [t for item in x.values() for t in _flat(item)]
    return [x] if hasattr(x, "untyped_storage") else []


def working_set_bytes(timed: TimedCall) -> Optional[int]:
    """Bytes of every input set the timed calls rotate through and of the last output
    of each set, each storage counted once (a view reads from its storage; an expanded
    input holds only its few real bytes).  None when there is nothing to count."""
    storages: dict = {}
    for t in _flat(list(timed.tensors)) + _flat(list(timed.outputs)):
        try:
            s = t.untyped_storage()
            storages[(s.device.type, s.data_ptr())] = int(s.nbytes())
        except (RuntimeError, AttributeError):  # e.g. a tensor without storage
            continue
    return sum(storages.values()) if storages else None


class Timing:
    """How the runner times: the timers, the clock of their caps, the L2 and cache label
    a working set is measured against, A/A, and the harness cost per rotation."""

    def __init__(
        self, timers: dict, clock: Callable[[], float], l2_bytes: Optional[int], cache: str, aa: bool
    ) -> None:
        self.timers, self.clock, self.l2_bytes, self.cache, self.aa = timers, clock, l2_bytes, cache, aa
        self.harness_seen: dict = {}

    def harness(self, timed: TimedCall) -> Optional[float]:
        return harness_cost(self.timers, timed, self.clock, self.harness_seen)

    def measure(self, timed: TimedCall) -> list:
        """[(samples, sampling)]: once, or twice with A/A (the second right after)."""
        return [measure_all(self.timers, timed, self.clock) for _ in range(2 if self.aa else 1)]

    def fill(self, row: dict, measured: list, harness_us: Optional[float], timed: TimedCall) -> None:
        (samples, sampling), *again = measured
        add_timings(
            row, samples.get("graph"), samples.get("events"), harness_us=harness_us, sampling=sampling
        )
        row.update(cache_state(working_set_bytes(timed), self.l2_bytes, self.cache))
        if row.get("colder_than_label"):  # measured both ways: the rotation's L2 and one set's
            row["one_set_device_us"] = one_set_device_us(self.timers, timed, self.clock)
        for samples2, sampling2 in again:
            second = add_timings(
                {}, samples2.get("graph"), samples2.get("events"), harness_us=harness_us, sampling=sampling2
            )
            row["aa"] = aa_row(row, second)
