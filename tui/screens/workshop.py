"""One workshop: the lesson, hints, the learner's file, live checks and timings.

The check loop lives in tui.run_loop (a mixin), the export in
tui.export, the layout by terminal size in tui.layout, the keys e, r and o
(edit, reset, export) in tui.screens.workshop_file_keys (a mixin), the repair search
after a failing run and its key f in tui.screens.workshop_repair (a mixin); this module
composes the screen and answers the other keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import (
    DataTable,
    Header,
    Static,
    TabbedContent,
    TabPane,
)

from checks import workspace as ws
from checks.judging import Outcome, outcome_line, outcome_of, plural
from checks.running import RunRecords, RunSession
from tui import benchmark_child, export, layout
from tui.host import closed, course_app, once_open
from tui.run_loop import RunLoop
from tui.screens.confirm import ConfirmScreen
from tui.screens.explanation import ExplanationScreen
from tui.screens.failure import FailureScreen
from tui.screens.workshop_file_keys import WorkshopFileKeys
from tui.screens.workshop_layout import BANNER, BANNER_SHORT, WorkshopLayout
from tui.screens.workshop_repair import WorkshopRepair
from tui.widgets.completion import CompletionPanel
from tui.widgets.footer import CourseFooter
from tui.widgets.hints import HintsPanel
from tui.widgets.markdown import CourseViewer
from tui.widgets.record_text import lesson_section
from tui.widgets.repair import RepairLine
from tui.widgets.results import ResultsPanel
from tui.widgets.timings import TimingsPanel
from workshops import catalog

__all__ = ["BANNER", "BANNER_SHORT", "EXPORT_SCHEMA", "EXPORT_VERSION", "WorkshopScreen", "not_yet"]

# Where the footer cannot show every key: the entries it leaves out first (all still work)
FOOTER_DROP_FIRST = (
    "reset",
    "export",
    "zoom",
    "toggle_bench",
    "perf_read",
    "explain",
    "edit",
    "next_workshop",
    "hint",
    "app.help",
    "run_checks",
)
EXPORT_SCHEMA, EXPORT_VERSION = export.EXPORT_SCHEMA, export.EXPORT_VERSION
# A screen still open this long after it opened renders its lesson and starts its checks;
# Enter and Escape 0.25 s apart pass through it without either.
SETTLE_SECONDS = 0.3


def not_yet(records: list) -> str:
    """Why a run that did not pass opens no next workshop, as the end of a sentence:
    'your file fails 23 of 31 checks'."""
    outcome, n = outcome_of(records), len(records)
    count = lambda *statuses: sum(r.status in statuses for r in records)
    if outcome is Outcome.FAILED:
        errors, never = count("error"), count("not run")
        return (
            f"your file fails {count('fail', 'error')} of {plural(n, 'check')}"
            + (f" ({plural(errors, 'error')})" if errors else "")
            + (f"; {never} never ran (the run ended first)" if never else "")
        )
    if outcome is Outcome.INCOMPLETE:
        todo = count("todo")
        return f"{todo} of {plural(n, 'check')} {'is' if todo == 1 else 'are'} still TODO in your file"
    if outcome is Outcome.NOT_RUN:
        return f"the last run ended before its checks did ({count('not run')} of {n} never ran)"
    _, _, rest = outcome_line(records).partition(": ")
    return rest  # unavailable: none of the checks can run on this machine


class WorkshopScreen(RunLoop, WorkshopLayout, WorkshopFileKeys, WorkshopRepair, Screen[None]):
    DEFAULT_CSS = (
        """
    #banner { background: $warning; color: $text; text-style: bold; padding: 0 1; height: auto; }
    #banner, #file-info { overflow: hidden hidden; }
    #body { height: 1fr; }
    #left { width: 3fr; height: 1fr; }
    #left TabPane { padding: 0; }
    #lesson { height: 1fr; }
    #lesson MarkdownTableOfContents { max-width: 50%; }
    #lesson MarkdownTableOfContents Tree { width: 1fr; }
    #right { width: 2fr; height: 1fr; border-left: tall $primary 30%; }
    #file-info { padding: 0 1; height: auto; color: $text-muted; }
    /* the timings panel here: a rule above it, its status indented like the results' */
    TimingsPanel { border-top: solid $primary 30%; }
    #timings-status { padding: 0 1; }
    """
        + layout.SIZE_CSS
    )
    AUTO_FOCUS = "#lesson CourseMarkdown"  # arrows scroll the lesson from the start
    BINDINGS = [
        Binding("h", "hint", "Hint", id="hint"),
        Binding("e", "edit", "Edit", id="edit"),
        Binding("space,ctrl+r", "run_checks", "Re-run", id="run", key_display="space", priority=True),
        # shown only while the repair search has found a change (WorkshopRepair)
        Binding("f", "show_repair", "Fix", id="fix"),
        Binding("n", "next_workshop", "Next workshop", id="next"),
        Binding("b", "toggle_bench", "Bench", id="bench"),
        # without a CUDA GPU, b shows the performance reading of a passing run instead
        Binding("b", "perf_read", "Perf read", id="perf-read"),
        Binding("B", "bench_everything", "Time all shapes", id="bench-all", show=False),
        # where nothing can be timed, b says why (toggle_bench is off then)
        Binding("b", "bench_why", "Why no timings", id="bench-why", show=False),
        Binding("o", "export", "Export", id="export"),
        Binding("x", "explain", "Explain", id="explain"),
        Binding("r", "reset", "Reset", id="reset"),
        Binding("z", "zoom", "Zoom", id="zoom"),
        Binding("t", "toggle_contents", "Contents", id="contents", show=False),
        Binding("d", "documents", "Documents", id="documents", show=False),
        Binding("escape", "back", "Back", id="back"),
    ]

    def __init__(self, workshop: catalog.Workshop, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.workshop = workshop
        self.path: Path = Path()
        self.controller: RunSession | None = None  # the runs of this workshop's file
        self.interpret = False
        self.passed = False  # the current results are all PASS
        self.last: RunRecords | None = None  # the records of the last finished run
        self.bench_rows: dict = {}  # {"digest", "rows"} of the last benchmark
        self.watching = False  # True once the folder watch is in place
        self.file_missing = False  # the watch found the file deleted
        self.cannot_create = False  # the workspace is not writable: the line says so
        self._bench_run = None
        self.toc_choice: bool | None = None  # the learner's t, over the size's default
        self.results_width: int | None = None  # columns of the results side given the focus
        self.next_up: list = []  # workshops suggested once every check passes
        self.last_export: Path | None = None
        self.run_toasts = False  # this run's toasts are on show (a new run clears them)
        self.was_passed = False  # the last finished run passed (its toast was shown)
        self.settled = False  # it stayed open SETTLE_SECONDS: it runs the checks
        self.lesson_ready = False  # the lesson is rendered (once the screen settled)

    # --- layout ---
    def compose(self) -> ComposeResult:
        app = course_app(self)
        w = self.workshop
        self.interpret = w.gpu and not app.gpu
        progress, _ = ws.load_progress(app.workspace)
        yield Header()
        if self.interpret:
            yield Static(BANNER, id="banner")
        with Horizontal(id="body"):
            with TabbedContent(id="left", initial="lesson-tab"):
                with TabPane("Lesson", id="lesson-tab"):
                    # empty until the screen has stayed open a moment (settled)
                    yield CourseViewer("", show_table_of_contents=False, id="lesson")
                with TabPane("Hints", id="hints-tab"):
                    yield HintsPanel(w.hints, shown=ws.hints_shown(progress, w.id), id="hints")
            with Vertical(id="right"):
                yield Static("", id="file-info")
                yield CompletionPanel(id="completion")
                yield ResultsPanel(id="results-panel")
                yield RepairLine(id="repair-line")
        yield TimingsPanel(id="timings-panel")
        yield CourseFooter(drop_first=FOOTER_DROP_FIRST)

    def on_mount(self) -> None:
        if closed(self):  # escape before it opened: no file, no run, no watch
            return
        app, w = course_app(self), self.workshop
        self.sub_title = f"{w.code} {w.title} ({w.device}{', interpreted' if self.interpret else ''})"
        try:
            self.path = ws.ensure_exercise(w, app.workspace)
            info = self.file_info()
        except OSError as e:  # an unwritable workspace: say so, keep the lesson usable
            self.path = ws.exercise_path(w, app.workspace)
            info = f"Cannot create your file {self.path}: {e}"
            self.cannot_create = True
            self.notify(
                f"Cannot create your file\n{self.toast_path(self.path)}\n{e}", severity="error", timeout=15
            )
        self.query_one("#file-info", Static).update(info)
        self.query_one(ResultsPanel).timeout = app.check_timeout
        # newly passing / newly failing: against the last run, the command line's too
        self.query_one(ResultsPanel).previous = ws.last_statuses(app.workspace, w.id)
        self.set_class(not w.gpu, "cpu")
        self.set_class(self.interpret, "interpreted")
        viewer = self.query_one("#lesson", CourseViewer)
        viewer.contents_columns = layout.contents_width(w.lesson)
        viewer.table_of_contents.styles.width = viewer.contents_columns
        self.apply_size(self.app.size.width, self.app.size.height)
        self.controller = RunSession(
            w,
            self.path,
            workspace=app.workspace,
            interpret=self.interpret,
            post=self._post,
            timeout=app.check_timeout,
            compile_pool=app.compile_pool() if (w.gpu and not self.interpret) else None,
        )
        self.controller.benchmarks = app.bench_enabled
        if self.timeable:
            self._load_reference()
            # the last timed save until this session times the file (read off the loop)
            self.query_one(TimingsPanel).load_past(ws.state_dir(app.workspace), w.id)
        self._timings_idle()
        self.set_timer(SETTLE_SECONDS, self._settled)

    def _settled(self) -> None:
        """The screen stayed open: watch the file, run the checks, render the lesson.  A
        screen opened and closed at once (keys at a quick pace) starts no check worker and
        renders nothing, so a burst of keys costs what its last screen costs."""
        if closed(self):
            return
        self.settled = True
        self._watch()
        self.request_run(force=True)
        self._render_lesson()

    @work(exclusive=True, group="lesson", exit_on_error=False)
    async def _render_lesson(self) -> None:
        """The lesson, rendered beside the screen's messages, not in one of its handlers:
        a key that reaches the screen's bindings (Escape) while it renders (seconds on a
        loaded machine) is handled at once, not queued behind the render and replayed
        after it (the screen switched between the list and the workshop for seconds
        after the last key)."""
        w = self.workshop
        await self.lesson.document.update(w.lesson or f"# {w.title}\n\n_No lesson yet._")
        self.lesson_ready = True

    def file_info(self) -> str:
        width = self.query_one("#file-info", Static).content_size.width
        return layout.file_line(self.path, width, self.file_missing)

    def file_info_changed(self) -> None:
        """The line about the file, again: it went missing or came back, or its width changed."""
        if not closed(self) and self.path.name and not self.cannot_create:
            self.query_one("#file-info", Static).update(self.file_info())

    def on_unmount(self) -> None:
        self.shutdown()

    def on_screen_suspend(self) -> None:
        self.query("HelpPanel").remove()  # the Keys panel belongs to this screen
        if self.run_toasts:  # they speak of this workshop's run, not of what comes next
            self.app.clear_notifications()
            self.run_toasts = False

    def shutdown(self) -> None:
        self.cancel_repair()
        if self._bench_run is not None:
            self._bench_run.cancel()
        if self.controller is not None:
            self.controller.close()

    @property
    def timeable(self) -> bool:
        """A kernel to time and a CUDA GPU to time it on (else no b, no timings panel)."""
        return self.workshop.gpu and not self.interpret

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "toggle_bench":
            return self.timeable
        if action == "perf_read":  # without a GPU, b reads the performance
            return self.workshop.gpu and not self.timeable
        if action == "bench_everything":
            return self.timeable
        if action == "bench_why":  # a CPU workshop: nothing to time or read
            return not self.timeable and not self.workshop.gpu
        if action == "show_repair":  # f: only once a change was found for this run
            return self.repair_found is not None
        return True

    # --- a finished run (called by RunLoop with the run's records) ---
    def run_finished(self, message, records: list) -> None:
        if message.outcome in ("done", "crashed", "timeout") and records:
            self._record_result(records, message.content_hash)
        panel = self.query_one(CompletionPanel)
        if self.passed:
            self.cancel_repair()  # a search started with the run (standby) has nothing to do
            app = course_app(self)
            progress, _ = ws.load_progress(app.workspace)
            self.next_up = ws.next_workshops(self.workshop, catalog.workshops(), progress)
            panel.show(self.workshop, records, self.next_up, interpreted=self.interpret, gpu=app.gpu)
            if not self.was_passed:
                nxt = (
                    f" Next: n opens {self.next_up[0].code} {self.next_up[0].title}." if self.next_up else ""
                )
                word, _, rest = outcome_line(records).partition(": ")
                self.notify(f"{rest[0].upper()}{rest[1:]}.{nxt}", title=word.capitalize(), timeout=8)
                self.run_toasts = True
        else:
            panel.hide()
            self._focus_first_failure()
            self.repair_after(message, records)
        self.was_passed = self.passed
        self.refresh_bindings()

    def _focus_first_failure(self) -> None:
        """After a run with a failure: the results table has the focus, on the first
        failure (ResultsPanel.finish moved the cursor there), so Enter opens it."""
        table = self.query_one(ResultsPanel).table
        bad = {"fail", "error"} & set(self.query_one(ResultsPanel).statuses())
        if bad and self.app.screen is self and self.maximized is None:
            table.focus(scroll_visible=False)

    def run_replaced(self) -> None:
        """A new run starts: what the last one said (the completion panel, its toasts)
        no longer holds."""
        self.query_one(CompletionPanel).hide()
        self.cancel_repair()
        if self.run_toasts:
            self.app.clear_notifications()
            self.run_toasts = False

    # --- actions ---
    def action_hint(self) -> None:
        hints = self.query_one(HintsPanel)
        self.query_one(TabbedContent).active = "hints-tab"
        hints.focus(scroll_visible=False)  # the arrows scroll what is shown
        if not hints.reveal_next():
            self.notify("All hints are shown." if hints.tiers else "This workshop has no hints.")
            return
        self._record_hints(hints.shown)

    @work(thread=True, group="hints", exit_on_error=False)
    def _record_hints(self, shown: int) -> None:
        try:
            ws.record_hints(self.workshop.id, shown, course_app(self).workspace)
        except (OSError, TimeoutError):
            pass  # the hint is shown; remembering it is a nicety

    def action_run_checks(self) -> None:
        self.request_run(force=True)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "results":
            self.action_failure()

    def action_failure(self) -> None:
        """The failure view of the highlighted row: everything the check said."""
        panel = self.query_one(ResultsPanel)
        rec = panel.cursor_record()
        if rec is None:
            return

        def closed(choice: str | None) -> None:
            if choice == "lesson":
                self.goto_section(lesson_section(rec))

        self.app.push_screen(FailureScreen(rec, panel.change_of(rec)), closed)

    def action_next_workshop(self) -> None:
        if self.passed and self.next_up:
            course_app(self).open_workshop(self.next_up[0].id)
            return
        last = self.last.records if self.last is not None else None
        if self.passed:
            why = "no further workshop is ready yet: the list (escape) shows the course."
        elif not last:
            why = "the checks have not finished yet."
        else:
            why = f"{not_yet(last)}."
        self.notify(
            f"n opens the next workshop once every check that can run here passes; {why}",
            title="Not yet",
            severity="warning",
        )
        self.run_toasts = True

    def _passed_before(self) -> bool:
        progress, _ = ws.load_progress(course_app(self).workspace)
        entry = progress.get(self.workshop.id) or {}
        return entry.get("status") == "passed" and entry.get("content_hash") == (
            self.controller.read_hash() if self.controller else None
        )

    def action_explain(self) -> None:
        if self.passed or self._passed_before():
            self.app.push_screen(ExplanationScreen(self.workshop))
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.push_screen(ExplanationScreen(self.workshop))

        self.app.push_screen(
            ConfirmScreen(
                "Your checks have not passed yet. The explanation gives the answer away.\nShow it anyway?",
                yes="Show it",
            ),
            answered,
        )

    def action_toggle_bench(self) -> None:
        app = course_app(self)
        if self.workshop.gpu and not self.timeable:  # no GPU: the reading of a passing run
            self.toggle_reading()
            return
        if not self.timeable:  # b is bench_why then, but the palette or a test may ask
            self.action_bench_why()
            return
        app.bench_enabled = not app.bench_enabled
        if self.controller is not None:
            self.controller.benchmarks = app.bench_enabled
        self.notify(f"Benchmarks {'on' if app.bench_enabled else 'off'}")
        if not app.bench_enabled:
            self._cancel_bench()
            self._timings_idle()
        elif self.passed and self.last is not None and self.last.content_hash:
            assert self.controller is not None  # a run passed: the screen is mounted
            self._maybe_bench(self.controller.generation, self.last.content_hash)
        else:
            self._timings_idle()

    def action_perf_read(self) -> None:
        self.action_toggle_bench()  # no GPU: it shows (or hides) the performance reading

    def action_bench_everything(self) -> None:
        """Time every shape and dtype of the passing file (the roofline rows too), not only the
        comparison shapes the app times after each pass."""
        if not self.timeable:
            self.notify("Benchmarks do not apply here.")
            return
        if not (self.passed and self.last is not None and self.last.content_hash):
            self.notify("Every shape is timed once every check passes.")
            return
        assert self.controller is not None  # a run passed: the screen is mounted
        if not course_app(self).bench_enabled:
            self.notify("Benchmarks are off (b turns them on).")
            return
        self._maybe_bench(self.controller.generation, self.last.content_hash, benchmark_child.EVERYTHING)

    def action_bench_why(self) -> None:
        if self.workshop.gpu:
            why = (
                "b times your kernel on a CUDA GPU, and there is none here: "
                "Triton's interpreter runs your checks, untimed."
            )
        else:
            why = f"{self.workshop.code} is a CPU workshop: there is no kernel to time."
        self.notify(why, title="No timings here")

    def action_back(self) -> None:
        if self.query("HelpPanel"):
            self.query("HelpPanel").remove()  # escape closes the Keys panel first
            return
        if self.maximized is not None:
            self.minimize()
            return
        once_open(self, self.app.pop_screen)

    def toast_path(self, path, inside: bool = True) -> str:
        """``path`` for a toast: beside the workspace when ``inside``, else whole (~)."""
        base = course_app(self).workspace.parent if inside else None
        return layout.toast_path(path, self.app.size, base, self.has_class("-results-focus"))

    def action_documents(self) -> None:
        """The glossary (this lesson's terms first), the worksheet and the capstones (d)."""
        from tui.screens.documents import DocumentsScreen

        self.app.push_screen(DocumentsScreen(workshop=self.workshop))
