"""Warm repair workers (``python -m checks.repair.worker``), and a pool of them.

A worker imports torch and triton once and then runs the checks of one candidate file
after another; the search, its GPU verification and the reference match each ask a pool
of them.  Standard library only.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from pathlib import Path
from typing import Optional

from checks.interpreter import interpreter_env
from checks.running.channel import ChannelProcess

RESTART_EVERY = 150  # candidates per worker process: each leaves a module behind
STARTUP_LIMIT = 180.0  # seconds for a worker to import torch and triton on a busy machine
# Left unset, torch, OpenMP and the BLAS numpy uses each start a thread per core in every
# worker: sixteen workers on sixteen cores would run 256 threads and wait on each other.
THREAD_SETTINGS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class Worker(ChannelProcess):
    """A warm repair worker: ready once torch and triton are in (``wait``: the constructor
    waits for that; else :meth:`wait_ready` does)."""

    def __init__(self, interpret: bool, folders: list, stderr: Path, wait: bool = True):
        args = (["--interpret"] if interpret else []) + [a for f in folders for a in ("--path", f)]
        env = interpreter_env(interpret)
        for name in THREAD_SETTINGS:  # one thread each: the pool has a worker per core
            env.setdefault(name, "1")
        super().__init__("checks.repair.worker", args, env, stderr)
        self.ready = False
        if wait:
            self.wait_ready()

    def wait_ready(self) -> bool:
        # torch and triton imported: a candidate's time limit starts after this
        self.ready = bool(self.next_message(STARTUP_LIMIT))
        return self.ready

    def run(self, job: dict, limit: float) -> Optional[dict]:
        """The worker's answer to ``job`` (its checks' statuses, the kernels launched), or
        None when it ran past ``limit`` seconds or its process died (the worker is then
        stopped)."""
        if not self.ready:
            self.stop()
            return None
        if not self.submit(job):
            return None
        end = time.monotonic() + limit
        while True:
            message = self.next_message(end - time.monotonic())
            if message is None:
                self.stop()
                return None
            if message.get("n") == job["n"]:
                self.done += 1
                return message


class Pool:
    """``n`` warm workers, interpreted or not, started at once in threads (``wait_first``:
    the constructor returns once the first is ready).  ``ask(job, limit)`` is a free
    worker's answer to one job: a worker that died or ran past its limit is replaced, one
    that has answered :data:`RESTART_EVERY` jobs starts afresh.  ``stop()`` ends them all at
    once, those still starting and those still working included: an ``ask`` in flight then
    answers None, and no worker starts after it."""

    def __init__(self, interpret: bool, folder: Path, folders: list, n: int, wait_first: bool = True):
        self.args = (interpret, folders, folder / "stderr.txt")
        self.free: queue.Queue = queue.Queue()
        self.made: list = []
        self.counter = itertools.count()
        self.stopped = threading.Event()
        self.first_ready: Optional[float] = None  # time.monotonic() when a worker was first ready
        self.starting = [threading.Thread(target=self._add, daemon=True) for _ in range(n)]
        for t in self.starting:
            t.start()
        if wait_first:
            self.starting[0].join()  # the others start while the first works

    def _start(self) -> Optional[Worker]:
        """A fresh worker, ready; None once the pool is stopped (the worker is then stopped)."""
        if self.stopped.is_set():
            return None
        w = Worker(*self.args, wait=False)
        self.made.append(w)  # before the check: a stop() from now on sees it
        if self.stopped.is_set() or not w.wait_ready() or self.stopped.is_set():
            w.stop()
            return None if self.stopped.is_set() else w
        if self.first_ready is None:
            self.first_ready = time.monotonic()
        return w

    def _add(self) -> None:
        w = self._start()
        if w is not None:
            self.free.put(w)

    def ask(self, job: dict, limit: float) -> Optional[dict]:
        try:
            w = self.free.get(timeout=STARTUP_LIMIT)
        except queue.Empty:
            return None
        if w is None or self.stopped.is_set():  # stopped: wake the next one waiting too
            self.free.put(None)
            return None
        if w.proc.poll() is not None or w.done >= RESTART_EVERY:
            w.stop()
            w = self._start()
            if w is None:
                return None
        got = w.run({**job, "n": next(self.counter)}, limit)
        if got is None:  # one in its place
            if not self.stopped.is_set():
                self.starting.append(threading.Thread(target=self._add, daemon=True))
                self.starting[-1].start()
        else:
            self.free.put(w)
        return got

    def stop(self) -> None:
        self.stopped.set()
        self.free.put(None)  # an ask waiting for a worker answers None
        for w in list(self.made):
            if w.proc.poll() is None:
                w.stop()
        for t in self.starting:  # each ends at once: its worker was just stopped
            t.join(timeout=10)
