"""One workshop's check runs on one file, as a session fed saves: the loop the workshop
screen and the latency benchmark both drive (no Textual here, and no watching: the
caller watches the folder and hands each save to :meth:`RunSession.save`).

    session = RunSession(workshop, path, workspace=folder, interpret=False, post=handler)
    session.save()            # hash -> skip if unchanged -> cancel the stale run -> run
    ...                       # handler(event) from the run's thread: Plan, Begin,
    session.close()           # RecordEvent ..., End (checks.running.events)

A GPU workshop's run (on a GPU) has two parts that start the moment a save lands: the
compile pool compiles every kernel variant the last run needed (see compile_ahead.py),
then those the app's last benchmark needed, and one warm check worker runs the checks in
order, finding those variants compiled; a run that passes with benchmarks on leaves the
pool compiling for the benchmark that follows, and that benchmark's worker may hand the
pool the variants it finds it will need (checks/running/handoff.py: its first run has
no list of them).
A newer save cancels both parts of the older run.  Without a GPU a GPU workshop runs in
Triton's interpreter: its checks are sharded over one warm worker per core instead
(checks/running/pool.py), balanced by the seconds each check took in the last run, their
records still posted in check order; a newer save cancels every shard.

Every event posted carries its run's ``generation`` (one per run started) and the
content hash of the file that run checks; a reader drops those of a stale generation.
Each run keeps its records in one :class:`RunRecords` (:meth:`RunSession.records_of`),
which the progress file, the results table and the export read.

Standard library plus the engine's stdlib-only modules: never torch, never triton.
"""

from __future__ import annotations

import functools
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Optional

from checks import workspace as ws
from checks.judging import Progress, progress_of
from checks.running import events, handoff
from checks.running.child import ChildRun, Worker, preload_for
from checks.running.compile_ahead import CompileAhead
from checks.running.compile_pool import CompilePool, compile_workers, env_count
from checks.running.pool import ShardedRun, WorkerPool, pool_size as machine_pool_size, split
from checks.running.run_records import RunRecords

Post = Callable[[events.Event], None]

# the outcomes whose records say how the learner's file does (kept in the progress file)
VERDICTS = (events.RunOutcome.DONE, events.RunOutcome.CRASHED, events.RunOutcome.TIMEOUT)


def progress_status(records: list) -> str:
    """The learner's status in the progress file for a run's records."""
    return str(progress_of(records))


def ignore(event: events.Event) -> None:
    """The ``post`` of a session nobody listens to."""


class RunSession:
    """Owns the runs of one workshop's checks on one file: warm workers, compile-ahead,
    generations, stale-run cancellation, the interpreter's shards."""

    def __init__(
        self,
        workshop: Any,
        path: Path,
        *,
        workspace: Path,
        interpret: bool,
        post: Post = ignore,
        timeout: float = 120.0,
        record: bool = True,
        pool_size: Optional[int] = None,
        compilers: Optional[int] = None,
        compile_pool: Optional[CompilePool] = None,
        **options: Any,
    ) -> None:
        self.workshop = workshop
        self.path = Path(path)
        self.workspace = Path(workspace)
        self.interpret = interpret
        self.post = post
        self.timeout = timeout
        self.record = record
        self.preload = preload_for(workshop.gpu, interpret)
        # Compiling ahead needs a GPU workshop run on a GPU (the interpreter compiles
        # nothing); its size follows the machine (KERNEL_COURSE_COMPILERS sets it).
        gpu_run = workshop.gpu and not interpret
        if compile_pool is not None:
            compilers = compile_pool.size
        elif compilers is None:
            compilers = compile_workers() if gpu_run else 0
        self.compilers = compilers if gpu_run else 0
        self.ahead = CompileAhead(
            workshop.id,
            self.path,
            self.workspace,
            compilers=self.compilers,
            timeout=timeout,
            compile_pool=compile_pool if gpu_run else None,
        )
        # Check workers per run: one beside a compile pool (one CUDA context, every
        # variant compiled once); without one, the checks of a GPU workshop are sharded:
        # interpreted, over every core (KERNEL_COURSE_POOL sets it).  The CPU workshop's
        # checks take milliseconds.
        if pool_size is None:
            chosen = env_count("KERNEL_COURSE_POOL") if workshop.gpu else None
            if chosen is None:
                chosen = 1 if (not workshop.gpu or self.compilers) else machine_pool_size(gpu=not interpret)
            pool_size = chosen
        self.pool_size = max(1, int(pool_size))
        self.pool = WorkerPool(self.pool_size)
        # With benchmarks on (the screen sets it), one more warm GPU worker waits for the
        # timings of a passing run, so they need no new process's imports.
        self.benchmarks = False
        self._gpu_run = gpu_run
        self.bench_pool = WorkerPool(1)
        self.last_ready_s: Optional[float] = None  # its worker's start-up and warm-up
        self.options = dict(options)  # extra run_checks keywords (e.g. seed)
        self.estimates: dict = {}  # check id -> seconds in the last run (for split)
        self.last_timings: dict = {}  # check id -> timing of the last finished run
        self.last_shards = 0
        self.generation = 0
        self.started_hash: Optional[str] = None  # content of the last run started
        self.runs_started = 0
        self.saves_skipped = 0
        self._stores: dict = {}  # generation -> RunRecords, the newest two runs'
        self._lock = threading.Lock()
        self._run: Optional[ShardedRun] = None
        self._closed = False

    # --- what the compile-ahead knows (read by the latency benchmark) ---
    @property
    def compile_pool(self) -> Optional[CompilePool]:
        return self.ahead.pool

    @property
    def target(self) -> Optional[list]:
        return self.ahead.target

    @property
    def variants(self) -> list:
        return self.ahead.variants

    @property
    def last_compile(self) -> dict:
        return self.ahead.last

    def settings(self) -> dict:
        """Check workers and compile workers of this workshop's runs."""
        return {"check_workers": self.pool_size, "compile_workers": self.compilers}

    def workers_note(self) -> str:
        """The status line's words for them ("" for one worker and no compile pool)."""
        parts = []
        if self.compilers:
            parts.append(f"{self.compilers} compile workers")
        if self.pool_size > 1:
            parts.append(f"{self.pool_size} check workers")
        return ", ".join(parts)

    # --- saves ---
    def read_hash(self) -> Optional[str]:
        try:
            return ws.content_hash(self.path.read_bytes())
        except OSError:
            return None  # mid-rename, or deleted

    def wants_run(self, digest: Optional[str], force: bool = False) -> bool:
        """A save whose content did not change since the last run started needs no run."""
        if digest is None or self._closed:
            return False
        return force or digest != self.started_hash

    def save(self, force: bool = False, content: Optional[bytes] = None) -> Optional[str]:
        """A save of the file (``content``: its bytes, else read now): a run of it in a
        thread of its own, unless its content hash did not change since the last run
        started (``force`` runs anyway).  The content hash of the run started, or None
        (unchanged, or no file to read)."""
        digest = ws.content_hash(content) if content is not None else self.read_hash()
        if digest is None:
            return None
        if not self.wants_run(digest, force):
            self.saves_skipped += 1
            return None
        generation = self.begin(digest)
        self.runs_started += 1
        threading.Thread(
            target=self._execute_reporting, args=(generation, digest), name="check-run", daemon=True
        ).start()
        return digest

    def saved_during(self) -> bool:
        """The file changed since the last run started (a save compared with the content
        that run was started for, not the newer one it checked): it wants a run now."""
        now = self.read_hash()
        return now is not None and self.wants_run(now)

    def begin(self, digest: str) -> int:
        """Make a new generation current and cancel the run it makes stale."""
        with self._lock:
            self.generation += 1
            self.started_hash = digest
            stale, self._run = self._run, None
            self._stores = {
                g: s for g, s in self._stores.items() if g == self.generation - 1
            }  # the last run's stay readable until this one's End
            self._stores[self.generation] = RunRecords(self.generation, digest)
        if stale is not None:
            stale.cancel()  # kills its process group at once
        self.ahead.cancel()  # its variants were for the older content
        return self.generation

    def is_current(self, generation: Optional[int]) -> bool:
        return generation == self.generation

    def running(self) -> bool:
        return self._run is not None

    def records_of(self, generation: Optional[int]) -> Optional[RunRecords]:
        """The records of the run ``generation`` (this one or the one before), else None."""
        with self._lock:
            return self._stores.get(generation)

    # --- the warm workers ---
    def prime(self) -> None:
        """Start the warm worker for the next save (imports done before it arrives)."""
        if self._closed:
            return
        workers = self.pool.prime(self.preload, self.workshop.id)
        if self.ahead.pool is not None and self.ahead.target is None and workers:
            workers[0].wait_ready(timeout=self.timeout)  # blocks: call it from a thread
            ready = workers[0].ready_info
            self.ahead.target = ready.target if ready is not None else None
        self.ahead.warm()
        if self.benchmarks and self._gpu_run:
            self.bench_pool.prime("gpu")

    def benchmark_follows(self, outcome: str, records: list) -> bool:
        """Whether the screen times this run next (every check passed, benchmarks on, a
        GPU): then the compile pool goes on compiling the benchmark's variants."""
        return (
            self.benchmarks
            and self._gpu_run
            and outcome == events.RunOutcome.DONE
            and bool(records)
            and progress_of(records) == Progress.PASSED
        )

    def benchmark_worker(self) -> Optional[Worker]:
        """A warm worker for the benchmark of a passing run (None: benchmarks are off,
        or there is no GPU); the caller owns it (the run kills it when it ends)."""
        if not (self.benchmarks and self._gpu_run) or self._closed:
            return None
        try:
            worker = self.bench_pool.take("gpu")[0]
        except OSError:
            return None
        if self.ahead.offers_benchmark():  # the variants it discovers go to the compile pool
            worker.door = handoff.Door(
                functools.partial(self._compile_for_benchmark, self.generation), self.ahead.benchmark_ended
            )
        return worker

    def _compile_for_benchmark(
        self, generation: int, path: str, digest: str, found: list, folder: str
    ) -> list:
        """A benchmark's discovered variants to the compile pool, unless a newer save came
        since it started (the pool then compiles that save's); the identities compiled."""
        with self._lock:
            if generation != self.generation or self._closed:
                return []
            return self.ahead.compile_for_benchmark(path, digest, found, folder)

    @staticmethod
    def _cases(worker: Worker) -> list:
        """The checks a ready worker was warmed for, in run order ([] if none)."""
        ready = worker.ready_info
        return list(ready.cases or []) if ready is not None else []

    def _shards(self, workers: list) -> list:
        """The check ids of each worker's shard (None: the whole suite, one worker),
        balanced by the seconds of the last finished run (before one: the checks' costs)."""
        if len(workers) < 2 or not workers[0].wait_ready(timeout=self.timeout):
            return [None]
        ids = [c["id"] for c in self._cases(workers[0])]
        if len(ids) < 2:
            return [None]
        est = {c["id"]: c.get("cost", 1) for c in self._cases(workers[0])}
        if self.estimates:
            known = [v for v in self.estimates.values() if v > 0] or [1.0]
            typical = sorted(known)[len(known) // 2]
            est = {i: self.estimates.get(i, typical) for i in ids}
        return split(ids, len(workers), est)

    # --- a run, in its own thread ---
    def _execute_reporting(self, generation: int, digest: str) -> None:
        try:
            self.execute(generation, digest)
        except Exception:  # noqa: BLE001 - said to the reader, never a silent thread death
            error = traceback.format_exc(limit=5)
            self.post(
                events.End(
                    outcome=events.RunOutcome.ERROR, error=error, generation=generation, content_hash=digest
                )
            )

    def _start(self, generation: int, digest: str, workers: list, shards: list, predicted: Any) -> Any:
        """The run of ``generation`` on ``workers``, made current (None: it is stale)."""
        with self._lock:
            if generation != self.generation or self._closed:
                return None
            store = self._stores.setdefault(generation, RunRecords(generation, digest))
            runs = []
            for only, worker in zip(shards, workers):
                child = ChildRun(
                    self.workshop.id,
                    self.path,
                    interpret=self.interpret,
                    timeout=self.timeout,
                    worker=worker,
                    only=only,
                    records=store if len(shards) == 1 else RunRecords(generation, digest),
                )
                if predicted is not None:
                    child.options["predicted"] = predicted
                runs.append(child)
            order = [c["id"] for c in self._cases(workers[0])] if len(runs) > 1 else []
            self._run = ShardedRun(runs, order, records=store)
            return self._run

    def execute(self, generation: int, digest: str, post: Optional[Post] = None, **options: Any) -> None:
        """Run the checks of ``generation`` (from :meth:`begin`) here, posting its events
        to ``post`` (else the session's): Plan, Begin, RecordEvent ..., then one End."""
        post = post or self.post
        job, predicted = None, None
        if self.is_current(generation):
            job, predicted = self.ahead.start(digest)  # first: compiling starts at once
        try:  # warm ones, or new ones if they died
            workers = self.pool.take(self.preload, self.workshop.id)
            shards = self._shards(workers)
        except OSError as e:  # could not even start a process
            self.ahead.done(job, predicted, current=False)
            message = f"could not start the check worker: {e}"
            post(
                events.End(
                    outcome=events.RunOutcome.ERROR, error=message, generation=generation, content_hash=digest
                )
            )
            return
        for spare in workers[len(shards) :]:
            spare.kill()
        run = self._start(generation, digest, workers, shards, predicted)
        if run is None:  # a newer save came first
            for worker in workers:
                worker.kill()
            self.ahead.done(job, predicted, current=False)
            return
        for child in run.shards:
            child.options = {**self.options, **options, **child.options}
        outcome, seconds, error, end = self._follow(run, generation, digest, post)
        digest = run.records.content_hash or digest
        with self._lock:
            if self._run is run:
                self._run = None
            current = generation == self.generation and not self._closed
        records = run.records.records
        self._learn(run, workers, job, predicted, outcome, current)
        if current and self.record and outcome in VERDICTS and records:
            warnings: list = []
            try:
                ws.record_progress(
                    self.workshop.id,
                    progress_status(records),
                    digest,
                    workspace=self.workspace,
                    note=outcome,
                    warn=warnings.append,
                )
                error = "; ".join(warnings) or error
            except (OSError, TimeoutError) as e:
                error = f"progress not saved: {e}"
        run.records.outcome = outcome
        post(
            events.End(
                outcome=outcome,
                seconds=seconds,
                error=error,
                generation=generation,
                content_hash=digest,
                shards=end.shards if end is not None else len(run.shards),
                stdout_bytes=end.stdout_bytes if end is not None else 0,
            )
        )
        # The reader primes the next warm worker (see prime): at once, or after the
        # benchmark, so torch's import does not compete with the timing.

    def _follow(self, run: ShardedRun, generation: int, digest: str, post: Post) -> tuple:
        """Post the run's events as they come: (outcome, seconds, error, its End or None)."""
        seconds, error, end = 0.0, "", None
        posted: set = set()  # ids of the checks whose records were posted
        started = time.monotonic()
        try:
            for ev in run.events():
                if isinstance(ev, events.Loaded) and ev.content_hash not in (None, digest):
                    # Saved again between our hash and the worker's import: this run
                    # checks the newer content, so it carries (and is compared by) its hash.
                    digest = ev.content_hash
                    run.records.content_hash = digest
                    with self._lock:
                        if generation == self.generation:
                            self.started_hash = digest
                    post(events.Plan(cases=list(run.plan), generation=generation, content_hash=digest))
                elif isinstance(ev, (events.Plan, events.Begin)):
                    post(ev)
                elif isinstance(ev, events.RecordEvent):
                    posted.add(ev.record.id)
                    post(ev)
                elif isinstance(ev, events.End):
                    seconds, end = ev.seconds, ev
            outcome = run.outcome
            if outcome == events.RunOutcome.USAGE:
                error = run.usage_error
        except Exception:  # noqa: BLE001 - report, never crash the app
            run.cancel()
            outcome, error = events.RunOutcome.ERROR, traceback.format_exc(limit=5)
            seconds = time.monotonic() - started
        for rec in run.records:  # kept by the run without an event (a run that raised)
            if rec.id not in posted:
                post(events.RecordEvent(record=rec, generation=generation, content_hash=digest))
        return outcome, seconds, error, end

    def _learn(
        self, run: ShardedRun, workers: list, job: Any, predicted: Any, outcome: str, current: bool
    ) -> None:
        """What the next run takes from this one: timings, the compile target, variants."""
        timings = run.timings
        self.last_timings, self.last_shards = timings, len(run.shards)
        timed_next = self.benchmark_follows(outcome, run.records.records)
        self.ahead.done(job, predicted, current, benchmark_next=timed_next)
        ready = workers[0].ready_info if workers else None
        target = getattr(ready, "target", None)
        if target:
            self.ahead.target = list(target)
        if current and workers and workers[0].ready_at is not None:
            self.last_ready_s = round(workers[0].ready_at - workers[0].started, 3)
        if outcome == events.RunOutcome.DONE:
            self.estimates = {
                k: v["seconds"] for k, v in timings.items() if isinstance(v.get("seconds"), (int, float))
            }
            self.ahead.keep(run.variants)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.generation += 1
            run, self._run = self._run, None
        if run is not None:
            run.cancel()
        self.pool.close()
        self.bench_pool.close()
        self.ahead.close()
