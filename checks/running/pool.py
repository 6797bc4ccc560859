"""Checks sharded over several warm workers, so the kernel variants a suite needs
compile in parallel after a save.

Standard library only, and no torch: the app imports this module.

Each worker is a ``python -m checks.running.worker`` process (torch and triton imported,
CUDA initialised, the workshop's checks listed); a run gives each of ``n`` workers a
subset of the check ids (``run_checks(only=...)``).  The workers share Triton's disk
cache.  :class:`ShardedRun` merges their events: one plan in check order, every
record released in check order (a later check that finishes first waits for the
earlier ones), and :meth:`ShardedRun.cancel` stops every shard at once.

    pool = WorkerPool(pool_size(gpu=True))
    workers = pool.take("gpu", "strided_softmax")
    shards = split(ids, len(workers), estimates)
    run = ShardedRun([ChildRun(..., only=s, worker=w) for s, w in zip(shards, workers)], ids)
    for event in run.events(): ...

The app shards where it has no compile pool (see checks/running/compile_pool.py: with one,
a single worker runs the checks and every variant is compiled once): above all in Triton's
interpreter, where every program of every launch runs in Python on one core, so a suite
spread over every core ends that many times sooner.  The size follows the machine: in
the interpreter one worker per core (it needs no GPU context), at most 16 and at most one
per GiB of memory; on a GPU about one worker per two cores, at most 8, and at most one
per 8 GiB of GPU memory.  ``KERNEL_COURSE_POOL=N`` overrides both.
"""

from __future__ import annotations

import dataclasses
import queue
import shutil
import subprocess
import threading
from typing import Any, Iterator, Optional

from checks.running import events
from checks.running.child import Worker
from checks.running.compile_pool import env_count, machine_cores, machine_memory_gib
from checks.running.events import RecordEvent
from checks.running.run_records import RunRecords

MAX_POOL = 8
GPU_GIB_PER_WORKER = 8
# Interpreted: one worker per core.  A ready worker holds about 0.4 GiB (torch, triton,
# numpy), a few hundred MiB more while a check runs.
MAX_INTERPRETERS = 16
GIB_PER_INTERPRETER = 1.0


def gpu_memory_gib() -> Optional[float]:
    """Total memory of the first GPU in GiB (nvidia-smi; no torch), or None."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        r = subprocess.run(
            [smi, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        return float(r.stdout.split()[0]) / 1024 if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def pool_size(
    gpu: bool = False,
    cores: Optional[int] = None,
    gpu_gib: Optional[float] = None,
    memory_gib: Optional[float] = None,
) -> int:
    """How many workers a run is sharded over on this machine (where it is sharded:
    without a compile pool).  ``gpu``: checks on a GPU, else in Triton's interpreter.
    ``KERNEL_COURSE_POOL=N`` sets it; anything but a positive whole number there is a
    :class:`checks.running.compile_pool.SettingError`."""
    env = env_count("KERNEL_COURSE_POOL")
    if env is not None:
        return env
    cores = machine_cores() if cores is None else cores
    if not gpu:
        # The interpreter is pure Python on the CPU: every core runs a worker.
        n = max(1, min(MAX_INTERPRETERS, cores))
        mem = machine_memory_gib() if memory_gib is None else memory_gib
        if mem is not None:
            n = max(1, min(n, int(mem // GIB_PER_INTERPRETER)))
        return n
    n = max(1, min(MAX_POOL, cores // 2))
    mem = gpu_gib if gpu_gib is not None else gpu_memory_gib()
    if mem is not None:
        n = max(1, min(n, int(mem // GPU_GIB_PER_WORKER)))
    return n


def split(ids: list, n: int, estimates: Optional[dict] = None) -> list:
    """Split check ids (in run order) into at most ``n`` shards, each in run order, that
    end together.

    Longest first: the checks by estimated seconds (the last run's where known, else
    1), the longest first, each to the shard with the least work so far; a shard then
    runs its checks in run order, so the first check is the first of its shard and the
    first verdict comes as soon as without shards.  Equal estimates keep run order, so
    the first ``n`` checks start at once on different workers.  Empty shards are dropped."""
    n = max(1, min(n, len(ids)))
    est = estimates or {}
    seconds = {i: max(0.001, float(est.get(i, 1.0))) for i in ids}
    rank = {i: k for k, i in enumerate(ids)}
    load = [0.0] * n
    shards: list[list] = [[] for _ in range(n)]
    for i in sorted(ids, key=lambda i: (-seconds[i], rank[i])):
        k = min(range(n), key=lambda j: (load[j], j))
        shards[k].append(i)
        load[k] += seconds[i]
    return [sorted(s, key=rank.__getitem__) for s in shards if s]


class WorkerPool:
    """Keeps ``size`` started workers per (preload, workshop), ready for the next save.

    ``take`` hands out ``n`` workers (the ready ones first, new ones for the rest);
    ``prime`` tops the pool up.  Call ``prime`` after a run finishes rather than
    during it: the workers' imports would compete with the run for the CPU."""

    def __init__(self, size: int = 1):
        self.size = max(1, int(size))
        self._ready: dict = {}
        self._lock = threading.Lock()

    def prime(self, preload: str, workshop: str = "") -> list:
        with self._lock:
            ws = [w for w in self._ready.get((preload, workshop), []) if w.alive()]
            while len(ws) < self.size:
                ws.append(Worker(preload=preload, warm=workshop))
            self._ready[(preload, workshop)] = ws
            return list(ws)

    def take(self, preload: str, workshop: str = "", n: Optional[int] = None) -> list:
        n = self.size if n is None else max(1, n)
        with self._lock:
            ws = [w for w in self._ready.pop((preload, workshop), []) if w.alive()]
        out, spare = ws[:n], ws[n:]
        try:
            while len(out) < n:
                out.append(Worker(preload=preload, warm=workshop))
        except OSError:
            if not out:
                raise
        if spare:
            with self._lock:
                self._ready.setdefault((preload, workshop), []).extend(spare)
        return out

    def wait_ready(self, preload: str, workshop: str = "", timeout: float = 300.0) -> bool:
        with self._lock:
            ws = list(self._ready.get((preload, workshop), []))
        return all(w.wait_ready(timeout) for w in ws)

    def close(self) -> None:
        with self._lock:
            workers = [w for ws in self._ready.values() for w in ws]
            self._ready = {}
        for w in workers:
            w.kill()


OUTCOME_RANK = (
    events.RunOutcome.USAGE,
    events.RunOutcome.CRASHED,
    events.RunOutcome.TIMEOUT,
    events.RunOutcome.CANCELLED,
    events.RunOutcome.DONE,
)


class ShardedRun:
    """Several :class:`ChildRun` shards of one run, seen as one run (same interface:
    ``events()``, ``cancel()``, ``records``, ``plan``, ``outcome``, ``usage_error``,
    ``content_hash``).  ``order``: every check id of the run, in run order.

    One shard is passed through as it is: its events, and its records (a
    :class:`RunRecords`) are this run's.  Over several, ``records`` (one for the run,
    apart from the shards' own) names the run: its generation and content hash stamp
    the events this run makes itself."""

    def __init__(
        self, shards: list, order: Optional[list] = None, records: Optional[RunRecords] = None
    ) -> None:
        self.shards = list(shards)
        self.order = list(order or [])
        found = getattr(self.shards[0], "records", None) if len(self.shards) == 1 else None
        if isinstance(found, RunRecords):
            self.records = found
        else:
            self.records = records if records is not None else RunRecords()
        self.plan: list = []
        self.outcome = events.RunOutcome.RUNNING
        self.usage_error = ""
        self.content_hash: Optional[str] = None
        self.mixed_content = False  # shards imported different saves
        self._cancel = threading.Event()

    @property
    def worker(self):
        return self.shards[0].worker if self.shards else None

    @property
    def variants(self) -> list:
        """The kernel variants every shard compiled, in check order, each once."""
        rank = {cid: k for k, cid in enumerate(self.order)}
        found = sorted(
            (v for s in self.shards for v in getattr(s, "variants", [])),
            key=lambda v: rank.get(v.get("check"), len(rank)),
        )
        seen, out = set(), []
        for v in found:
            key = (v["qualname"], v["data"])
            if key not in seen:
                seen.add(key)
                out.append(v)
        return out

    @property
    def timings(self) -> dict:
        out: dict = {}
        for s in self.shards:
            for k, v in getattr(s, "timings", {}).items():
                out[k] = dict(v, shard=self.shards.index(s))
        return out

    def cancel(self) -> None:
        self._cancel.set()
        for s in self.shards:
            s.cancel()

    def _pump(self, i: int, shard, q: "queue.Queue") -> None:
        try:
            for ev in shard.events():
                q.put((i, ev))
        except BaseException as e:  # noqa: BLE001 - reported by events() below
            q.put((i, events.Failure(error=e)))
        finally:
            q.put((i, None))

    def _stamp(self) -> dict:
        return {"generation": self.records.generation, "content_hash": self.records.content_hash}

    def _one(self) -> Iterator[events.Event]:
        """One shard: its events as they are (no thread, exactly one ChildRun)."""
        shard = self.shards[0]
        for ev in shard.events():
            if isinstance(ev, events.Plan):
                self.plan = list(ev.cases)
            elif isinstance(ev, events.Loaded) and self.content_hash is None:
                self.content_hash = ev.content_hash
            elif isinstance(ev, events.End):
                self.outcome = events.RunOutcome.CANCELLED if self._cancel.is_set() else shard.outcome
                self.usage_error = shard.usage_error
            yield ev

    def _stream(self) -> Iterator:
        q: "queue.Queue" = queue.Queue()
        for i, s in enumerate(self.shards):
            threading.Thread(target=self._pump, args=(i, s, q), daemon=True).start()
        left = len(self.shards)
        while left:
            i, ev = q.get()
            left -= ev is None
            yield i, ev

    def events(self) -> Iterator[events.Event]:
        if len(self.shards) == 1:
            yield from self._one()
            return
        n = len(self.shards)
        plans: dict = {}  # shard -> its plan (or [] when it ended without one)
        pending: dict = {}  # check id -> record that waits for earlier checks
        released: set = set()
        extra_seen: set = set()  # (id, message) of records outside the plan (load, run)
        early: list = []  # begin / loaded / record events before the whole plan
        st: dict[str, Any] = {"planned": False, "seconds": 0.0, "error": None}

        def release() -> Iterator[events.Event]:
            for c in self.plan:
                cid = c["id"]
                if cid in released:
                    continue
                if cid not in pending:
                    return
                released.add(cid)
                ev = pending.pop(cid)
                if self.records.add(ev.record):
                    yield self.as_ours(ev)

        def handle(ev: events.Event) -> Iterator[events.Event]:
            if isinstance(ev, events.Loaded):
                h = ev.content_hash
                if self.content_hash is None:
                    self.content_hash = h
                    if h is not None:
                        self.records.content_hash = h
                    yield ev
                elif h != self.content_hash and not self.mixed_content:
                    # Saved between two shards' imports: their verdicts would mix two
                    # versions of the file.  Stop; the caller re-checks the newer one.
                    self.mixed_content = True
                    self.cancel()
            elif isinstance(ev, events.Begin):
                yield ev
            elif isinstance(ev, events.RecordEvent):
                rec = ev.record
                if any(rec.id == c["id"] for c in self.plan):
                    pending[rec.id] = ev
                    yield from release()
                elif (rec.id, rec.message) not in extra_seen:
                    extra_seen.add((rec.id, rec.message))
                    if self.records.add(rec):
                        yield self.as_ours(ev)
            elif isinstance(ev, events.End):
                st["seconds"] = max(st["seconds"], ev.seconds)
            elif isinstance(ev, events.Failure):
                st["error"] = ev.error

        for i, ev in self._stream():
            if ev is None:
                plans.setdefault(i, [])
            elif isinstance(ev, events.Plan):
                plans[i] = ev.cases
            elif not st["planned"]:
                early.append(ev)
                continue
            else:
                yield from handle(ev)
            if not st["planned"] and len(plans) == n:
                st["planned"] = True
                cases = {c["id"]: c for p in plans.values() for c in p}
                rank = {cid: k for k, cid in enumerate(self.order)}
                self.plan = sorted(cases.values(), key=lambda c: rank.get(c["id"], len(rank)))
                self.records.set_plan(self.plan)
                if self.plan or any(p for p in plans.values()) or isinstance(ev, events.Plan):
                    yield events.Plan(cases=list(self.plan), **self._stamp())
                for e in early:
                    yield from handle(e)
                early = []
        yield from release()
        for cid in list(pending):  # after a check that never reported (cannot happen
            self.records.add(pending.pop(cid).record)  # with ChildRun; kept safe)
        if st["error"] is not None:
            raise st["error"]
        if self.mixed_content or self._cancel.is_set():
            self.outcome = events.RunOutcome.CANCELLED
        else:
            self.outcome = min(
                (s.outcome for s in self.shards),
                key=lambda o: OUTCOME_RANK.index(o) if o in OUTCOME_RANK else 0,
            )
        self.usage_error = next((s.usage_error for s in self.shards if s.usage_error), "")
        self.records.outcome = self.outcome
        yield events.End(
            outcome=self.outcome,
            seconds=round(st["seconds"], 3),
            shards=n,
            stdout_bytes=sum(s.worker.stdout.total for s in self.shards if s.worker),
            **self._stamp(),
        )

    def as_ours(self, ev: RecordEvent) -> RecordEvent:
        """A shard's record event as it is, unless that shard imported other content than
        the first (a save between their imports: the run is cancelled) -- then relabelled."""
        if ev.content_hash == self.records.content_hash:
            return ev
        return dataclasses.replace(ev, **self._stamp())

    def run(self) -> list:
        for _ in self.events():
            pass
        return self.records.records
