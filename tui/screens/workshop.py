"""One workshop: the lesson, hints, the learner's file, live checks and timings.

The loop (see DESIGN.md): watch the workspace folder -> filter to this exercise ->
skip saves whose content hash did not change -> cancel the stale run -> run the checks
in a warm worker from a thread worker -> stream records into the table -> benchmark
when the checks pass on a GPU (if enabled) -> keep the last results with their hash.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

from textual import work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.worker import Worker, WorkerState
from textual.widgets import Footer, Header, MarkdownViewer, Static, TabbedContent, TabPane

from checks import workspace as ws
from checks.records import exit_code, write_json_atomic
from tui import bench
from tui.messages import (BenchmarkFinished, CheckPlanned, CheckStarted, RecordArrived,
                          RunFinished)
from tui.runner import CheckController
from tui.screens.confirm import ConfirmScreen
from tui.screens.explanation import ExplanationScreen
from tui.widgets.hints import HintsPanel
from tui.widgets.results import ResultsPanel
from tui.widgets.timings import TimingsPanel

BANNER = "No CUDA GPU: running kernels in Triton's interpreter (slow; timings unavailable)"
EXPORT_SCHEMA, EXPORT_VERSION = "kernel-course/export", 1


class WorkshopScreen(Screen[None]):
    BINDINGS = [
        Binding("h", "hint", "Hint", id="hint"),
        Binding("e", "edit", "Edit", id="edit"),
        Binding("space,ctrl+r", "run_checks", "Re-run", id="run", key_display="space",
                priority=True),
        Binding("b", "toggle_bench", "Bench", id="bench"),
        Binding("o", "export", "Export", id="export"),
        Binding("x", "explain", "Explain", id="explain"),
        Binding("r", "reset", "Reset", id="reset"),
        Binding("t", "toggle_contents", "Contents", id="contents", show=False),
        Binding("escape", "back", "Back", id="back"),
    ]

    def __init__(self, workshop, **kwargs) -> None:
        super().__init__(**kwargs)
        self.workshop = workshop
        self.path: Path = Path()
        self.controller: CheckController | None = None
        self.interpret = False
        self.passed = False            # the current results are all PASS
        self.last: dict = {}           # {"digest", "records", "outcome"} of the last finished run
        self.bench_rows: dict = {}     # {"digest", "rows"} of the last benchmark
        self.runs_started = 0
        self.saves_skipped = 0
        self.watching = False          # True once the folder watch is in place
        self._bench_run = None

    # --- layout ---
    def compose(self) -> ComposeResult:
        app = self.app
        w = self.workshop
        self.interpret = w.gpu and not app.gpu
        yield Header()
        if self.interpret:
            yield Static(BANNER, id="banner")
        with Horizontal(id="body"):
            with TabbedContent(id="left", initial="lesson-tab"):
                with TabPane("Lesson", id="lesson-tab"):
                    yield MarkdownViewer(w.lesson or f"# {w.title}\n\n_No lesson yet._",
                                         show_table_of_contents=True, id="lesson")
                with TabPane("Hints", id="hints-tab"):
                    yield HintsPanel(w.hints, id="hints")
            with Vertical(id="right"):
                yield Static("", id="file-info")
                yield ResultsPanel(id="results-panel")
        yield TimingsPanel(id="timings-panel")
        yield Footer()

    def on_mount(self) -> None:
        app, w = self.app, self.workshop
        self.sub_title = f"{w.code} {w.title} ({w.device}{', interpreted' if self.interpret else ''})"
        try:
            self.path = ws.ensure_exercise(w, app.workspace)
            info = (f"Your file: {self.path}\n"
                    "e edit in $EDITOR · r reset to the starter · checks re-run on every save")
        except OSError as e:         # an unwritable workspace: say so, keep the lesson usable
            self.path = ws.exercise_path(w, app.workspace)
            info = f"Cannot create your file {self.path}: {e}"
            self.notify(info, severity="error", timeout=15)
        self.query_one("#file-info", Static).update(info)
        self.controller = CheckController(w, self.path, workspace=app.workspace,
                                          interpret=self.interpret, timeout=app.check_timeout)
        if w.gpu:
            self._load_reference()
        self._timings_idle()
        self._watch()
        self.request_run(force=True)

    def on_unmount(self) -> None:
        self.shutdown()

    def shutdown(self) -> None:
        if self._bench_run is not None:
            self._bench_run.cancel()
        if self.controller is not None:
            self.controller.close()

    # --- the loop ---
    @work(exclusive=True, group="watch", exit_on_error=False)
    async def _watch(self) -> None:
        from tui.watch import saves
        try:
            async for changes in saves(self.path.parent, self.path.name, poll=self.app.poll):
                first = not self.watching
                self.watching = True        # the watch is in place
                # On the first report, catch up with a save made before the watch was in
                # place (a polling watcher takes its baseline late on a loaded machine).
                if changes or first:
                    self.request_run()
        except Exception as e:      # the app keeps working; space still re-runs
            self.notify(f"file watcher stopped ({e}); press space to re-run the checks",
                        severity="error", timeout=10)

    def request_run(self, force: bool = False) -> bool:
        """Start a run if the file's content changed since the last run started (or force)."""
        c = self.controller
        if c is None:
            return False
        digest = c.read_hash()
        if digest is None:
            if force:
                self.notify(f"{self.path} is missing; press r to restore the starter",
                            severity="error")
            return False
        if not c.wants_run(digest, force):
            self.saves_skipped += 1
            return False
        self._cancel_bench()
        generation = c.begin(digest)
        self.runs_started += 1
        self.passed = False
        self.query_one(ResultsPanel).mark_stale(digest)
        self._run_checks(generation, digest)
        return True

    @work(thread=True, exclusive=True, group="checks", exit_on_error=False)
    def _run_checks(self, generation: int, digest: str) -> None:
        self.controller.execute(generation, digest, self.post_message)

    def _current(self, message) -> bool:
        return self.controller is not None and self.controller.is_current(message.generation)

    def on_check_planned(self, message: CheckPlanned) -> None:
        if self._current(message):
            self.query_one(ResultsPanel).start(message.cases, message.content_hash)

    def on_check_started(self, message: CheckStarted) -> None:
        if self._current(message):
            self.query_one(ResultsPanel).started(message.check_id)

    def on_record_arrived(self, message: RecordArrived) -> None:
        if self._current(message):
            panel = self.query_one(ResultsPanel)
            if panel.digest != message.content_hash:     # no plan came (the import failed)
                panel.start([], message.content_hash)
            panel.add(message.record)

    def on_run_finished(self, message: RunFinished) -> None:
        if not self._current(message):
            return                      # a stale run: never shown as current
        panel = self.query_one(ResultsPanel)
        if panel.digest != message.content_hash:
            panel.start([], message.content_hash)
        panel.finish(message.outcome, message.records, message.content_hash, message.error)
        self.last = {"digest": message.content_hash, "records": list(message.records),
                     "outcome": message.outcome}
        self.passed = (message.outcome == "done" and bool(message.records)
                       and exit_code(message.records) == 0)
        if message.error and message.outcome != "usage":
            self.notify(message.error.splitlines()[-1], severity="error")
        now = self.controller.read_hash()
        if now is not None and self.controller.wants_run(now):
            # Saved while this run went on, and that save was compared with the content
            # this run was started for, not the newer one it checked: check the file now.
            self.request_run()
            return
        if self.passed and self.workshop.gpu and self._maybe_bench(message.generation,
                                                                   message.content_hash):
            return                      # the next worker is primed after the benchmark
        self._timings_idle()
        self._prime()

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
            self.notify(f"{event.worker.group} failed: {type(err).__name__}: {err}",
                        severity="error", timeout=15)

    # --- timings ---
    def _timings_idle(self) -> None:
        t = self.query_one(TimingsPanel)
        w = self.workshop
        ref = (f" Reference results ({t.reference_source.name}) below."
               if t.reference and t.reference_source else "")
        if not w.gpu:
            t.set_status("Timings: this is a CPU workshop; there is no kernel to time.", "dim")
        elif self.interpret:
            t.set_status(f"Timings unavailable: no CUDA GPU (interpreted runs are not timed).{ref}",
                         "dim")
        elif not self.app.bench_enabled:
            t.set_status(f"Benchmarks are off (b turns them on).{ref}", "dim")
        elif not bench.available():
            t.set_status(f"benchmarks unavailable (the engine has no checks.benchmark).{ref}", "dim")
        elif self.bench_rows and self.bench_rows.get("digest") == self.last.get("digest"):
            pass
        else:
            t.set_status(f"Timings run when every check passes.{ref}", "dim")

    @work(thread=True, group="reference", exit_on_error=False)
    def _load_reference(self) -> None:
        rows, source = bench.load_reference(self.workshop.id)   # big files: not on the loop
        if rows:
            self.app.call_from_thread(self._show_reference, rows, source)

    def _show_reference(self, rows: list, source) -> None:
        self.query_one(TimingsPanel).set_reference(rows, source)
        if not self.query_one(TimingsPanel).results:
            self._timings_idle()

    def _maybe_bench(self, generation: int, digest: str) -> bool:
        """Start the benchmark if it can and should run; whether it started."""
        if self.interpret or not self.app.bench_enabled or not bench.available():
            self._timings_idle()
            return False
        self.query_one(TimingsPanel).set_status(f"timing {digest[:8]}… (python -m checks.benchmark)",
                                                "running")
        self._bench_worker(generation, digest)
        return True

    @work(thread=True, exclusive=True, group="bench", exit_on_error=False)
    def _bench_worker(self, generation: int, digest: str) -> None:
        run = bench.BenchmarkRun(self.workshop.id, self.app.workspace, file=self.path)
        self._bench_run = run
        try:
            rows, error, output = run.run()
        finally:
            if self.controller is not None and self.controller.is_current(generation):
                self.controller.prime()
        self.post_message(BenchmarkFinished(generation, digest, rows, error, output))

    def _cancel_bench(self) -> None:
        if self._bench_run is not None:
            self._bench_run.cancel()
            self._bench_run = None

    def on_benchmark_finished(self, message: BenchmarkFinished) -> None:
        if not self._current(message) or message.error == "cancelled":
            return
        t = self.query_one(TimingsPanel)
        if message.results:
            self.bench_rows = {"digest": message.content_hash, "rows": list(message.results)}
            t.set_results(message.results)
        if message.error:
            t.set_status(message.error, "bad")
            return
        ref = f"; reference from {t.reference_source.name}" if t.reference_source else ""
        t.set_status(f"timings of {message.content_hash[:8]} (yours){ref}", "good")

    # --- actions ---
    def action_hint(self) -> None:
        hints = self.query_one(HintsPanel)
        self.query_one(TabbedContent).active = "hints-tab"
        if not hints.reveal_next():
            self.notify("All hints are shown." if hints.tiers else "This workshop has no hints.")

    def action_run_checks(self) -> None:
        self.request_run(force=True)

    def action_edit(self) -> None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            self.notify(f"$EDITOR is not set. Open your file in any editor: {self.path}",
                        title="No editor", severity="warning", timeout=15)
            return
        cmd = shlex.split(editor, posix=os.name != "nt") + [str(self.path)]
        try:
            with self.app.suspend():
                subprocess.run(cmd, check=False)
        except SuspendNotSupported:
            self.notify(f"This terminal cannot hand over to an editor; edit {self.path}",
                        severity="warning", timeout=15)
            return
        except OSError as e:
            self.notify(f"could not start {editor!r}: {e}", severity="error", timeout=15)
            return
        self.request_run()

    def action_reset(self) -> None:
        def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                path, saved = ws.reset(self.workshop, self.app.workspace)
            except OSError as e:
                self.notify(f"reset failed: {e}", severity="error")
                return
            where = f"your previous file is saved as {saved}" if saved else "there was no file to back up"
            self.notify(f"Restored the starter; {where}", title="Reset", timeout=15)
            self.request_run()
        self.app.push_screen(ConfirmScreen(
            f"Reset {self.path.name} to the starter?\nYour current file is backed up first.",
            yes="Reset"), answered)

    def _passed_before(self) -> bool:
        progress, _ = ws.load_progress(self.app.workspace)
        entry = progress.get(self.workshop.id) or {}
        return (entry.get("status") == "passed" and entry.get("content_hash")
                == (self.controller.read_hash() if self.controller else None))

    def action_explain(self) -> None:
        if self.passed or self._passed_before():
            self.app.push_screen(ExplanationScreen(self.workshop))
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.push_screen(ExplanationScreen(self.workshop))
        self.app.push_screen(ConfirmScreen(
            "Your checks have not passed yet. The explanation gives the answer away.\n"
            "Show it anyway?", yes="Show it"), answered)

    def action_toggle_bench(self) -> None:
        app = self.app
        app.bench_enabled = not app.bench_enabled
        self.notify(f"Benchmarks {'on' if app.bench_enabled else 'off'}")
        if not app.bench_enabled:
            self._cancel_bench()
            self._timings_idle()
        elif self.passed and self.workshop.gpu and self.last:
            self._maybe_bench(self.controller.generation, self.last["digest"])
        else:
            self._timings_idle()

    def action_toggle_contents(self) -> None:
        viewer = self.query_one("#lesson", MarkdownViewer)
        viewer.show_table_of_contents = not viewer.show_table_of_contents

    def action_back(self) -> None:
        self.app.pop_screen()

    # --- export ---
    def export_payload(self) -> dict | None:
        if not self.last or not self.last.get("records"):
            return None
        digest = self.last["digest"]
        rows = self.bench_rows.get("rows", []) if self.bench_rows.get("digest") == digest else []
        return {
            "schema": EXPORT_SCHEMA, "version": EXPORT_VERSION,
            "workshop": self.workshop.id, "content_hash": digest, "file": str(self.path),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "outcome": self.last.get("outcome"),
            "interpreted": self.interpret,
            "records": [r.to_dict() for r in self.last["records"]],
            "benchmarks": rows,
        }

    def action_export(self) -> None:
        payload = self.export_payload()
        if payload is None:
            self.notify("Nothing to export yet: wait for the checks to finish.", severity="warning")
            return
        self._export_worker(payload)

    @work(thread=True, group="export", exit_on_error=False)
    def _export_worker(self, payload: dict) -> None:
        folder = Path(self.app.results_dir)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = folder / f"{payload['workshop']}-{stamp}.json"
        n = 2
        while path.exists():
            path = folder / f"{payload['workshop']}-{stamp}-{n}.json"
            n += 1
        try:
            write_json_atomic(path, payload)
        except OSError as e:
            self.app.call_from_thread(self.notify, f"export failed: {e}", severity="error")
            return
        self.last_export = path
        self.app.call_from_thread(self.notify, f"Results written to {path}", title="Exported",
                                  timeout=10)
