"""The app's side of a check run: warm workers, run generations, stale-run cancellation.

A run is sharded over ``pool_size`` warm workers (see checks/pool.py: one per two
cores, 1 on a 2-core machine), so the kernel variants a suite needs compile in
parallel; the records still arrive in check order, and a newer save cancels every
shard of the older run.

No widgets here (only the typed messages it posts): the screen calls
:meth:`CheckController.begin` on the event loop when a run should start, then
:meth:`CheckController.execute` in a thread worker, which streams the run's events to
``post`` as typed messages.  Blocking work (starting processes, reading the record
pipe, writing the progress file) happens in that thread.

Standard library plus the engine's stdlib-only modules: never torch, never triton.
"""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path
from typing import Callable, Optional

from checks import events
from checks import workspace as ws
from checks.child import ChildRun, preload_for
from checks.pool import ShardedRun, WorkerPool, pool_size as machine_pool_size, split
from checks.records import progress_of

try:
    from tui.messages import CheckPlanned, CheckStarted, RecordArrived, RunFinished
except ImportError:  # headless, without Textual (the latency benchmark on a GPU box)
    from tui.plain_messages import CheckPlanned, CheckStarted, RecordArrived, RunFinished


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
        **options,
    ):
        self.workshop = workshop
        self.path = Path(path)
        self.workspace = Path(workspace)
        self.interpret = interpret
        self.timeout = timeout
        self.record = record
        self.preload = preload_for(workshop.gpu, interpret)
        # Workers a run is sharded over: the machine's size for GPU workshops; the CPU
        # workshop's checks take milliseconds, so more processes would only cost.
        if pool_size is None:
            pool_size = machine_pool_size(gpu=not interpret) if workshop.gpu else 1
        self.pool_size = max(1, int(pool_size))
        self.pool = WorkerPool(self.pool_size)
        self.options = dict(options)  # extra run_checks keywords (e.g. seed)
        self.estimates: dict = {}  # check id -> seconds in the last run (for split)
        self.last_timings: dict = {}  # check id -> timing of the last finished run
        self.last_shards = 0
        self.generation = 0
        self.started_hash: Optional[str] = None  # content of the last run started
        self._lock = threading.Lock()
        self._run: Optional[ChildRun] = None
        self._closed = False

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
        return self.generation

    def is_current(self, generation: int) -> bool:
        return generation == self.generation

    def running(self) -> bool:
        return self._run is not None

    # --- in a thread worker ---
    def prime(self) -> None:
        """Start the warm worker for the next save (imports done before it arrives)."""
        if not self._closed:
            self.pool.prime(self.preload, self.workshop.id)

    def _shards(self, workers: list) -> list:
        """The check ids of each worker's shard (None: the whole suite, one worker)."""
        if len(workers) < 2 or not workers[0].wait_ready(timeout=self.timeout):
            return [None]
        ids = [c["id"] for c in workers[0].ready_info.get("cases") or []]
        if len(ids) < 2:
            return [None]
        est = {c["id"]: c.get("cost", 1) for c in workers[0].ready_info["cases"]}
        if self.estimates:
            known = [v for v in self.estimates.values() if v > 0] or [1.0]
            typical = sorted(known)[len(known) // 2]
            est = {i: self.estimates.get(i, typical) for i in ids}
        return split(ids, len(workers), est)

    def execute(self, generation: int, digest: str, post: Callable, **options) -> None:
        try:  # warm ones, or new ones if they died
            workers = self.pool.take(self.preload, self.workshop.id)
            shards = self._shards(workers)
        except OSError as e:  # could not even start a process
            post(RunFinished(generation, digest, "error", [], 0.0, f"could not start the check worker: {e}"))
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
                    runs.append(child)
                order = [c["id"] for c in workers[0].ready_info.get("cases") or []] if len(runs) > 1 else []
                run = ShardedRun(runs, order)
                self._run = run
        if stale:
            for worker in workers:
                worker.kill()
            return
        seconds, error = 0.0, ""
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
                    post(RecordArrived(generation, digest, ev.record))
                elif isinstance(ev, events.End):
                    seconds = ev.seconds
            outcome = run.outcome
            if outcome == "usage":
                error = run.usage_error
        except Exception:  # noqa: BLE001 - report, never crash the app
            run.cancel()
            outcome, error = "error", traceback.format_exc(limit=5)
            seconds = time.monotonic() - started
        with self._lock:
            if self._run is run:
                self._run = None
            current = generation == self.generation and not self._closed
        records = list(run.records)
        timings = run.timings
        self.last_timings, self.last_shards = timings, len(run.shards)
        if outcome == "done":
            self.estimates = {
                k: v["seconds"] for k, v in timings.items() if isinstance(v.get("seconds"), (int, float))
            }
        if current and self.record and outcome in ("done", "crashed", "timeout") and records:
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
        post(RunFinished(generation, digest, outcome, records, seconds, error))
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
