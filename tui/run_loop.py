"""The check loop of a workshop screen, as a mixin of WorkshopScreen: watch the
workspace folder -> filter to this exercise -> hand each save to the run session
(checks.running.RunSession: skip it if its content hash did not change, cancel the
stale run, run the checks in a warm worker in its own thread) -> stream records into
the table -> benchmark when the checks pass on a GPU (if enabled) -> keep the last
run's records (its RunRecords, with their hash).

The run's events (checks.running: Plan, Begin, RecordEvent, End) and the benchmark's
BenchmarkFinished reach the screen each wrapped once in a :class:`RunUpdate`; the screen
dispatches on the event's class."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from textual import work
from textual.message import Message
from textual.worker import Worker, WorkerState

from checks import workspace as ws
from checks.command_line import exit_code
from checks.judging import ran_any
from checks.running import Begin, End, Event, Plan, RecordEvent, RunRecords, RunSession, progress_status
from tui import benchmark_child
from tui.host import course_app
from tui.messages import BenchmarkFinished, BenchmarkRow
from tui.widgets.results import ResultsPanel
from tui.widgets.timings import TimingsPanel

READING_IS = (
    "b reads your passing run's performance: what an H200 would make of your kernel, "
    "predicted, not timed (there is no CUDA GPU here)."
)
READING_WAITS = "Performance reading: it shows here once every check passes (b hides it)."

if TYPE_CHECKING:
    from textual.screen import Screen

    from workshops.catalog import Workshop

    _Host = Screen[None]  # mypy checks the mixin as the screen it is mixed into
else:
    _Host = object


RunEvent = Union[Event, BenchmarkRow, BenchmarkFinished]


class RunUpdate(Message):
    """One event of a run (or the benchmark's message), posted from a thread to the screen."""

    def __init__(self, event: RunEvent) -> None:
        super().__init__()
        self.event = event


class RunLoop(_Host):
    """Needs from the screen: workshop, path, controller (the run session, whose
    ``post`` is :meth:`_post`), interpret, passed, last, bench_rows, watching,
    run_toasts, _bench_run, and the hooks run_finished(message, records) (completion,
    progress), run_replaced() (a new run makes the last one's notices stale),
    repair_standby(content_hash, generation) (a run began) and notify.
    ``last``: the records of the last finished run (None before one)."""

    # the screen's attributes (annotations only: WorkshopScreen sets them)
    workshop: Workshop
    path: Path
    controller: Optional[RunSession]
    interpret: bool
    passed: bool
    reading_wanted = False  # without a GPU: b asked for the performance reading
    last: Optional[RunRecords]
    bench_rows: dict
    watching: bool
    file_missing: bool
    cannot_create: bool
    run_toasts: bool
    _bench_run: Optional[benchmark_child.BenchmarkRun]

    if TYPE_CHECKING:  # the screen's hooks

        def run_finished(self, message: End, records: list) -> None: ...

        def run_replaced(self) -> None: ...

        def repair_standby(self, content_hash: Optional[str], generation: Optional[int]) -> None: ...

        def file_info_changed(self) -> None: ...

    @property
    def runs_started(self) -> int:
        return self.controller.runs_started if self.controller is not None else 0

    @property
    def saves_skipped(self) -> int:
        return self.controller.saves_skipped if self.controller is not None else 0

    # --- the loop ---
    @work(exclusive=True, group="watch", exit_on_error=False)
    async def _watch(self) -> None:
        from tui.watch import saves

        try:
            async for changes in saves(self.path.parent, self.path.name, poll=course_app(self).poll):
                first = not self.watching
                self.watching = True  # the watch is in place
                # On the first report, catch up with a save made before the watch was in
                # place (a polling watcher takes its baseline late on a loaded machine).
                if changes or first:
                    self.request_run()
                await self._say_if_missing()
        except Exception as e:  # noqa: BLE001 - the app keeps working; space still re-runs
            self.notify(
                f"file watcher stopped ({e}); press space to re-run the checks", severity="error", timeout=10
            )

    async def _say_if_missing(self) -> None:
        """The watched file deleted: said at once (the watch reports every half second
        at the least), with the key that brings it back; said again once it is back."""
        if self.cannot_create:
            return  # the line already says the file could not be made
        gone = not self.path.exists()
        if gone:
            await asyncio.sleep(0.2)  # an editor that deletes, then writes
            gone = not self.path.exists()
        if gone == self.file_missing:
            return
        self.file_missing = gone
        self.file_info_changed()
        if gone:
            self.notify(
                f"Your file {self.path.name} was deleted; r restores the starter "
                "(your best result is kept), or save it again from your editor.",
                title="File missing",
                severity="warning",
                timeout=15,
            )

    def request_run(self, force: bool = False) -> bool:
        """Start a run if the file's content changed since the last run started (or force)."""
        c = self.controller
        if c is None:
            return False
        digest = c.save(force)  # the run, if any, in the session's thread
        if digest is None:
            if force and c.read_hash() is None:
                self.notify(f"{self.path} is missing; press r to restore the starter", severity="error")
            return False
        self._cancel_bench()
        self.passed = False
        self.run_replaced()
        self.query_one(ResultsPanel).mark_stale(digest)
        return True

    def _post(self, event: RunEvent) -> None:
        self.post_message(RunUpdate(event))

    def _current(self, event: RunEvent) -> bool:
        return self.controller is not None and self.controller.is_current(event.generation)

    def on_run_update(self, update: RunUpdate) -> None:
        event = update.event
        if not self._current(event):
            return  # a stale run: never shown as current
        if isinstance(event, Plan):
            self._planned(event)
        elif isinstance(event, Begin):
            self.query_one(ResultsPanel).started(event.id)
        elif isinstance(event, RecordEvent):
            self._record_arrived(event)
        elif isinstance(event, End):
            self._run_done(event)
        elif isinstance(event, BenchmarkRow):
            self.query_one(TimingsPanel).add_result(event.row, event.generation)
        elif isinstance(event, BenchmarkFinished):
            self._benchmark_finished(event)

    def _planned(self, event: Plan) -> None:
        assert self.controller is not None  # _current() says so
        panel = self.query_one(ResultsPanel)
        panel.workers_note = self.controller.workers_note()
        panel.start(event.cases, event.content_hash or "")
        self.repair_standby(event.content_hash, event.generation)

    def _record_arrived(self, event: RecordEvent) -> None:
        panel = self.query_one(ResultsPanel)
        if panel.digest != event.content_hash:  # no plan came (the import failed)
            panel.start([], event.content_hash or "")
        panel.add(event.record)

    def _run_done(self, event: End) -> None:
        assert self.controller is not None  # _current() said so
        digest = event.content_hash or ""
        run = self.controller.records_of(event.generation)
        if run is None:  # nothing kept for it (cannot happen for a current run)
            run = RunRecords(event.generation, digest)
            run.outcome = event.outcome
        records = run.records
        panel = self.query_one(ResultsPanel)
        if panel.digest != digest:
            panel.start([], digest)
        panel.finish(event.outcome, records, digest, event.error)
        self.last = run
        self.passed = event.outcome == "done" and bool(records) and exit_code(records) == 0
        if self.workshop.gpu and event.outcome in ("done", "crashed", "timeout") and records:
            self.query_one(TimingsPanel).record_checks(
                ws.state_dir(course_app(self).workspace), self.workshop.id, digest, self.passed
            )
        if event.error and event.outcome != "usage":
            self.notify(event.error.splitlines()[-1], severity="error")
            self.run_toasts = True
        self.run_finished(event, records)
        if self.controller.saved_during():
            # Saved while this run went on, and that save was compared with the content
            # this run was started for, not the newer one it checked: check the file now.
            self.request_run()
            return
        if self.passed and self.workshop.gpu and self._maybe_bench(self.controller.generation, digest):
            return  # the next worker is primed after the benchmark
        self._timings_idle()
        self._refresh_reading(digest)
        self._prime()

    def _refresh_reading(self, digest: str) -> None:
        """A performance reading is of one save.  While the learner wants readings (b),
        a newer passing save is read again and a failing one takes the reading away
        until the next pass, which brings it back without b."""
        t = self.query_one(TimingsPanel)
        if not self.interpret or not self.reading_wanted or t.reading_digest == digest:
            return
        if self.passed:
            self.read_performance()
        else:
            t.clear_reading()
            t.set_status(READING_WAITS, "dim")

    @work(thread=True, group="best", exit_on_error=False)
    def _record_result(self, records: list, digest: str) -> None:
        """Offer this run's counts as the best result so far (kept across resets)."""
        try:
            ws.record_result(
                self.workshop.id,
                progress_status(records),
                sum(r.status == "pass" for r in records),
                len(records),
                digest,
                workspace=course_app(self).workspace,
            )
            if ran_any(records):  # the statuses the command line's next run compares with
                ws.record_last_run(course_app(self).workspace, self.workshop.id, records)
        except (OSError, TimeoutError):
            pass  # the latest status is saved by the run session anyway

    @work(thread=True, group="prime", exit_on_error=False)
    def _prime(self) -> None:
        """Start the warm worker for the next save now (imports done before it arrives)."""
        if self.controller is not None:
            self.controller.prime()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Workers run with exit_on_error=False: an unexpected error is reported here
        instead of taking the app down."""
        if event.state == WorkerState.ERROR:
            err = event.worker.error
            self.notify(
                f"{event.worker.group} failed: {type(err).__name__}: {err}", severity="error", timeout=15
            )

    # --- timings ---
    def _timings_idle(self) -> None:
        t = self.query_one(TimingsPanel)
        w = self.workshop
        # compact folds the table away: no promise of rows that are not shown
        ref = (
            f" Reference results ({t.reference_source.name}) below."
            if t.reference and t.reference_source and not self.has_class("-compact")
            else ""
        )
        if not w.gpu:
            t.set_status("Timings: this is a CPU workshop; there is no kernel to time.", "dim")
        elif self.interpret:
            t.set_status(f"Timings unavailable: no CUDA GPU (interpreted runs are not timed).{ref}", "dim")
        elif not course_app(self).bench_enabled:
            t.set_status(f"Benchmarks are off (b turns them on).{ref}", "dim")
        elif not benchmark_child.available():
            t.set_status(f"benchmarks unavailable (the engine has no checks.benchmark).{ref}", "dim")
        elif (
            self.bench_rows
            and self.last is not None
            and self.bench_rows.get("digest") == self.last.content_hash
        ):
            pass
        else:
            t.set_status(f"Timings run when every check passes.{ref}", "dim")

    @work(thread=True, group="reference", exit_on_error=False)
    def _load_reference(self) -> None:
        rows, source = benchmark_child.load_reference(self.workshop.id)  # big files: not on the loop
        if rows:
            self.app.call_from_thread(self._show_reference, rows, source)

    def _show_reference(self, rows: list, source) -> None:
        self.query_one(TimingsPanel).set_reference(rows, source)
        if not self.query_one(TimingsPanel).results:
            self._timings_idle()

    def _maybe_bench(self, generation: int, digest: str, shapes: str = benchmark_child.COMPARISON) -> bool:
        """Start the benchmark if it can and should run; whether it started.  ``shapes``:
        the comparison shapes (after every pass) or every shape and dtype (when asked)."""
        if self.interpret or not course_app(self).bench_enabled or not benchmark_child.available():
            self._timings_idle()
            return False
        what = (
            "every shape and dtype" if shapes == benchmark_child.EVERYTHING else "python -m checks.benchmark"
        )
        self.query_one(TimingsPanel).set_status(f"timing {digest[:8]}… ({what})", "running")
        self._bench_worker(generation, digest, shapes)
        return True

    @work(thread=True, exclusive=True, group="bench", exit_on_error=False)
    def _bench_worker(self, generation: int, digest: str, shapes: str = benchmark_child.COMPARISON) -> None:
        warm = self.controller.benchmark_worker() if self.controller is not None else None
        run = benchmark_child.BenchmarkRun(
            self.workshop.id,
            course_app(self).workspace,
            file=self.path,
            worker=warm,
            on_row=lambda row: self._post(BenchmarkRow(generation, digest, row)),
            shapes=shapes,
        )
        self._bench_run = run
        try:
            rows, error, output = run.run()
        finally:
            if self.controller is not None and self.controller.is_current(generation):
                self.controller.prime()
        self._post(BenchmarkFinished(generation, digest, rows, error, output))

    def toggle_reading(self) -> None:
        """Without a GPU, b: show the performance reading (now if the last run passed,
        else once a run passes); b again hides it."""
        self.reading_wanted = not self.reading_wanted
        if not self.reading_wanted:
            self.workers.cancel_group(self, "reading")
            self.query_one(TimingsPanel).clear_reading()
            self.remove_class("-perf-read")
            self._timings_idle()
            self.notify("Performance reading hidden; b shows it again.")
            return
        self.add_class("-perf-read")
        if self.passed and self.last is not None and self.last.content_hash:
            self.notify(f"{READING_IS} b again hides it.", title="Performance reading")
            self.read_performance()
        else:
            self.query_one(TimingsPanel).set_status(READING_WAITS, "dim")
            self.notify(
                f"{READING_IS} It shows here once every check passes; b again cancels.",
                title="Performance reading",
            )

    def read_performance(self) -> None:
        """The performance reading of the last passing run, in the timings panel; it runs
        the answer in the interpreter in a child (seconds)."""
        if not (self.passed and self.last is not None and self.last.content_hash):
            return
        self.add_class("-perf-read")
        self.query_one(TimingsPanel).set_status(
            f"reading the performance of {self.last.content_hash[:8]}… (interpreter, sm_90 compile)",
            "running",
        )
        self._reading_worker(self.last.content_hash)

    @work(thread=True, exclusive=True, group="reading", exit_on_error=False)
    def _reading_worker(self, digest: str) -> None:
        payload, error = benchmark_child.read_performance(self.workshop.id, Path(self.path))
        self.app.call_from_thread(self._show_reading, digest, payload, error)

    def _show_reading(self, digest: str, payload: Optional[dict], error: str) -> None:
        if not self.reading_wanted:  # hidden (b) while it was read
            return
        t = self.query_one(TimingsPanel)
        if payload is None:
            t.set_status(f"no performance reading: {error}", "bad")
            return
        t.set_reading(payload, digest)
        t.set_status(f"performance of {digest[:8]} (no GPU: predicted for an H200, not timed)", "good")

    def _cancel_bench(self) -> None:
        if self._bench_run is not None:
            self._bench_run.cancel()
            self._bench_run = None

    def _benchmark_finished(self, message: BenchmarkFinished) -> None:
        if message.error == "cancelled":
            return
        t = self.query_one(TimingsPanel)
        if message.results:
            self.bench_rows = {"digest": message.content_hash, "rows": list(message.results)}
            t.set_results(message.results)
            t.record_save(ws.state_dir(course_app(self).workspace), self.workshop.id, message.content_hash)
        if message.error:
            t.set_status(message.error, "bad")
            return
        ref = f"; reference from {t.reference_source.name}" if t.reference_source else ""
        t.set_status(f"timings of {message.content_hash[:8]} (yours){ref}", "good")
