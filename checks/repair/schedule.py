"""How the search's tries share the workers: the candidates drained in order on several
threads, the gate that gives every worker to a likely fix, and a suite split in slices of
about equal seconds.  Standard library only."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from typing import Callable, Iterator, Optional


def slices(checks: list, seconds: dict, k: int) -> list:
    """``checks`` in at most ``k`` slices of about equal expected seconds (the longest
    first into the lightest slice), each slice in the checks' own order."""
    k = max(1, min(k, len(checks)))
    slices: list = [[] for _ in range(k)]
    load = [0.0] * k
    for c in sorted(checks, key=lambda c: -seconds.get(c, 0.05)):
        i = load.index(min(load))
        slices[i].append(c)
        load[i] += seconds.get(c, 0.05)
    rank = {c: i for i, c in enumerate(checks)}
    return [sorted(s, key=rank.__getitem__) for s in slices if s]


class Gate:
    """Held while a change that passed the failing checks runs the others (or its
    verification) on the screening workers: no new change starts meanwhile, so the workers
    go to the likeliest fix first."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.holders = 0

    @contextlib.contextmanager
    def held(self, hold: bool = True) -> Iterator[None]:
        with self.changed:
            self.holders += hold
        try:
            yield
        finally:
            with self.changed:
                self.holders -= hold
                self.changed.notify_all()

    def wait_open(self, stop: Callable[[], bool]) -> None:
        with self.changed:
            while self.holders and not stop():
                self.changed.wait(0.05)


def drain(
    variants: list,
    attempt: Callable,
    n_workers: int,
    stop: Callable[[], bool],
    gate: Optional[Gate] = None,
    wait_in_flight: bool = True,
) -> None:
    """Try the variants in order on ``n_workers`` threads until every one is tried or
    ``stop()`` (each new try waits while ``gate`` is held).  ``wait_in_flight=False``: once
    ``stop()``, return at once; the tries in flight end when their caller stops its pools."""
    jobs: queue.Queue = queue.Queue()
    for v in variants:
        jobs.put(v)

    def loop() -> None:
        while not stop():
            if gate is not None:
                gate.wait_open(stop)
            try:
                cand, text = jobs.get_nowait()
            except queue.Empty:
                return
            attempt(cand, text)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(n_workers)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads) and (wait_in_flight or not stop()):
        time.sleep(0.02)
