"""The app's side of a check run: warm workers, compile-ahead, run generations,
stale-run cancellation.

A GPU workshop's run (on a GPU) has two parts that start the moment a save lands:

* the compile pool (checks/running/compile_pool.py) compiles every kernel variant the last run
  of this workshop needed, each once, across the machine's cores, first-needed first;
* one warm check worker (torch and triton imported, CUDA and the witness warmed up)
  runs the checks in order and finds those variants compiled, waiting for one that
  is still being compiled instead of compiling it again.

The variants are kept in the state folder (``variants/<workshop>.json``), so the
first save after the app starts is compiled ahead too.  A newer save cancels both
parts of the older run.

Without a GPU, a GPU workshop runs in Triton's interpreter: nothing to compile, and every
program of every launch runs in Python on one core.  Its checks are sharded instead over
one warm worker per core (checks/running/pool.py), balanced by the seconds each check took
in the last run, its records still posted in check order; a newer save cancels every
shard.  ``pool_size`` > 1 shards a GPU run the same way (the design before the compile
pool; the latency benchmark measures both side by side).

No widgets here (only the typed messages of tui.messages it posts): the screen calls
:meth:`CheckController.begin` on the event loop when a run should start, then
:meth:`CheckController.execute` in a thread worker, which streams the run's events to
``post`` as typed messages (every record in its own RecordArrived, before the
RunFinished).  Blocking work (starting processes, reading the record pipe, writing the
progress file) happens in that thread.

Standard library plus the engine's stdlib-only modules: never torch, never triton.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Callable, Optional

from checks import workspace as ws
from checks.json_files import write_json_atomic
from checks.judging import progress_of
from checks.running import (
    ChildRun,
    CompilePool,
    ShardedRun,
    WorkerPool,
    compile_workers,
    env_count,
    events,
    pool_size as machine_pool_size,
    preload_for,
    split,
)
from tui.messages import CheckPlanned, CheckStarted, RecordArrived, RunFinished


# exit code of the records -> the learner's status in the progress file
def progress_status(records: list) -> str:
    return str(progress_of(records))


class CheckController:
    """Owns the runs of one workshop's checks on one file."""

    def __init__(
        self,
        workshop,
        path: Path,
        *,
        workspace: Path,
        interpret: bool,
        timeout: float = 120.0,
        record: bool = True,
        pool_size: Optional[int] = None,
        compilers: Optional[int] = None,
        compile_pool: Optional[CompilePool] = None,
        **options,
    ):
        self.workshop = workshop
        self.path = Path(path)
        self.workspace = Path(workspace)
        self.interpret = interpret
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
        self._own_compile_pool = compile_pool is None and self.compilers > 0
        self.compile_pool = compile_pool if compile_pool is not None else None
        if self._own_compile_pool:
            self.compile_pool = CompilePool(self.compilers)
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
        # the GPU's compile target (from a worker's ready event) and the variants of the
        # last run, in check order; both kept in the state folder across restarts
        self.target: Optional[list] = None
        self.variants: list = self._load_variants()
        self.last_compile: dict = {}  # the compile pool's summary of the last run
        self.last_ready_s: Optional[float] = None  # its worker's start-up and warm-up
        self.options = dict(options)  # extra run_checks keywords (e.g. seed)
        self.estimates: dict = {}  # check id -> seconds in the last run (for split)
        self.last_timings: dict = {}  # check id -> timing of the last finished run
        self.last_shards = 0
        self.generation = 0
        self.started_hash: Optional[str] = None  # content of the last run started
        self._lock = threading.Lock()
        self._run: Optional[ShardedRun] = None
        self._closed = False

    # --- the variants of the last run (what the compile pool compiles ahead) ---
    def _variants_file(self) -> Path:
        return ws.state_dir(self.workspace) / "variants" / f"{self.workshop.id}.json"

    def _load_variants(self) -> list:
        if not self.compilers:
            return []
        try:
            data = json.loads(self._variants_file().read_text(encoding="utf-8"))
            found = data.get("variants") if isinstance(data, dict) else None
        except (OSError, ValueError):
            return []
        if not isinstance(found, list) or not all(
            isinstance(v, dict) and isinstance(v.get("qualname"), str) and isinstance(v.get("data"), str)
            for v in found
        ):
            return []
        target = data.get("target")
        if isinstance(target, list) and len(target) == 3:
            self.target = target
        return found

    def _keep_variants(self, found: list) -> None:
        if not found or not self.compilers:
            return  # a run that compiled nothing (a load error) predicts nothing new
        kept = [{"qualname": v["qualname"], "data": v["data"]} for v in found]
        if kept == self.variants:
            return  # a kernel edit that kept every variant: the file already says so
        self.variants = kept
        try:
            write_json_atomic(
                self._variants_file(),
                {"workshop": self.workshop.id, "target": self.target, "variants": self.variants},
            )
        except OSError:
            pass  # only the first save after a restart is slower

    def _compile_ahead(self, digest: str) -> tuple:
        """Hand the last run's variants to the compile pool: (the job, the ``predicted``
        option for the check worker), or (None, None) when there is nothing to compile."""
        pool = self.compile_pool
        if pool is None or not self.variants or not self.target:
            return None, None
        folder = tempfile.mkdtemp(prefix="kernel-course-variants-")
        job = pool.submit(self.path, digest, self.target, self.variants, folder)
        return job, {"folder": folder, "ids": job.ids, "wait_limit": min(60.0, self.timeout)}

    def _compile_done(self, job, predicted: Optional[dict], current: bool) -> None:
        if job is None:
            if current:
                self.last_compile = {}
            return
        if current:
            self.last_compile = job.summary()
        if job.finished_at is None and self.compile_pool is not None and self.compile_pool.job is job:
            self.compile_pool.cancel()  # what is left was never asked for
        assert predicted is not None  # _compile_ahead gives a job with its folder
        shutil.rmtree(predicted["folder"], ignore_errors=True)

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

    # --- on the event loop ---
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

    def begin(self, digest: str) -> int:
        """Make a new generation current and cancel the run it makes stale."""
        with self._lock:
            self.generation += 1
            self.started_hash = digest
            stale, self._run = self._run, None
        if stale is not None:
            stale.cancel()  # kills its process group at once
        if self.compile_pool is not None:
            self.compile_pool.cancel()  # its variants were for the older content
        return self.generation

    def is_current(self, generation: int) -> bool:
        return generation == self.generation

    def running(self) -> bool:
        return self._run is not None

    # --- in a thread worker ---
    def prime(self) -> None:
        """Start the warm worker for the next save (imports done before it arrives)."""
        if self._closed:
            return
        workers = self.pool.prime(self.preload, self.workshop.id)
        if self.compile_pool is not None and self.target is None and workers:
            workers[0].wait_ready(timeout=self.timeout)  # in a thread: its target
            ready = workers[0].ready_info
            self.target = ready.target if ready is not None else None
        if self.compile_pool is not None and self.target:
            self.compile_pool.warm(self.target)
        if self.benchmarks and self._gpu_run:
            self.bench_pool.prime("gpu")

    def benchmark_worker(self):
        """A warm worker for the benchmark of a passing run (None: benchmarks are off,
        or there is no GPU); the caller owns it (the run kills it when it ends)."""
        if not (self.benchmarks and self._gpu_run) or self._closed:
            return None
        try:
            return self.bench_pool.take("gpu")[0]
        except OSError:
            return None

    @staticmethod
    def _cases(worker) -> list:
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

    def execute(self, generation: int, digest: str, post: Callable, **options) -> None:
        job, predicted = None, None
        if self.is_current(generation):
            job, predicted = self._compile_ahead(digest)  # first: compiling starts at once
        try:  # warm ones, or new ones if they died
            workers = self.pool.take(self.preload, self.workshop.id)
            shards = self._shards(workers)
        except OSError as e:  # could not even start a process
            self._compile_done(job, predicted, current=False)
            message = f"could not start the check worker: {e}"
            post(RunFinished(generation, digest, events.RunOutcome.ERROR, 0.0, message))
            return
        for spare in workers[len(shards) :]:
            spare.kill()
        with self._lock:
            if generation != self.generation or self._closed:
                stale = True
            else:
                stale = False
                runs = []
                for only, worker in zip(shards, workers):
                    child = ChildRun(
                        self.workshop.id,
                        self.path,
                        interpret=self.interpret,
                        timeout=self.timeout,
                        worker=worker,
                        only=only,
                    )
                    child.options = {**self.options, **options}
                    if predicted is not None:
                        child.options["predicted"] = predicted
                    runs.append(child)
                order = [c["id"] for c in self._cases(workers[0])] if len(runs) > 1 else []
                run = ShardedRun(runs, order)
                self._run = run
        if stale:
            for worker in workers:
                worker.kill()
            self._compile_done(job, predicted, current=False)
            return
        seconds, error = 0.0, ""
        posted: set = set()  # id() of the records posted as they arrived
        started = time.monotonic()
        try:
            for ev in run.events():
                if isinstance(ev, events.Plan):
                    post(CheckPlanned(generation, digest, list(ev.cases)))
                elif isinstance(ev, events.Loaded) and ev.content_hash not in (None, digest):
                    # Saved again between our hash and the worker's import: this run
                    # checks the newer content, so it carries (and is compared by) its hash.
                    digest = ev.content_hash
                    with self._lock:
                        if generation == self.generation:
                            self.started_hash = digest
                    post(CheckPlanned(generation, digest, list(run.plan)))
                elif isinstance(ev, events.Begin):
                    post(CheckStarted(generation, digest, ev.id))
                elif isinstance(ev, events.RecordEvent):
                    posted.add(id(ev.record))
                    post(RecordArrived(generation, digest, ev.record))
                elif isinstance(ev, events.End):
                    seconds = ev.seconds
            outcome = run.outcome
            if outcome == events.RunOutcome.USAGE:
                error = run.usage_error
        except Exception:  # noqa: BLE001 - report, never crash the app
            run.cancel()
            outcome, error = events.RunOutcome.ERROR, traceback.format_exc(limit=5)
            seconds = time.monotonic() - started
        with self._lock:
            if self._run is run:
                self._run = None
            current = generation == self.generation and not self._closed
        records = list(run.records)
        for rec in records:  # kept by the run without an event (a run that raised)
            if id(rec) not in posted:
                post(RecordArrived(generation, digest, rec))
        timings = run.timings
        self.last_timings, self.last_shards = timings, len(run.shards)
        self._compile_done(job, predicted, current)
        ready = workers[0].ready_info if workers else None
        target = getattr(ready, "target", None)
        if target:
            self.target = list(target)
        if current and workers and workers[0].ready_at is not None:
            self.last_ready_s = round(workers[0].ready_at - workers[0].started, 3)
        if outcome == events.RunOutcome.DONE:
            self.estimates = {
                k: v["seconds"] for k, v in timings.items() if isinstance(v.get("seconds"), (int, float))
            }
            self._keep_variants(run.variants)
        if (
            current
            and self.record
            and outcome in (events.RunOutcome.DONE, events.RunOutcome.CRASHED, events.RunOutcome.TIMEOUT)
            and records
        ):
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
        post(RunFinished(generation, digest, outcome, seconds, error))
        # The screen primes the next warm worker (see WorkshopScreen._prime): at once,
        # or after the benchmark, so torch's import does not compete with the timing.

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.generation += 1
            run, self._run = self._run, None
        if run is not None:
            run.cancel()
        self.pool.close()
        self.bench_pool.close()
        if self._own_compile_pool and self.compile_pool is not None:
            self.compile_pool.close()
