"""The live results of a check run: a row per named check, filled in as records arrive.

Columns: Status (with a mark for a row newly failing or newly passing since the last
run), the check's id (whole), Time where there is room, and the Message, which gets
the rest of the width (a row with nothing to say shows its check's description, dim).
A running row shows its elapsed time, ticking; after STILL_RUNNING seconds the status
line says the check is still running and what ends it.  A load error (the file does
not import) is one row, not a row per check that never ran.  Enter on a row opens the
failure view (tui.screens.failure)."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.reactive import reactive
from textual.widgets import DataTable, ProgressBar, Static

from checks.judging import Record, change_since, separating_property
from tui.widgets.record_text import (
    CHANGE_MARK,
    STATUS_STYLE,
    first_line,
    is_timeout,
    source_line,
    status_cell,
    summary,
    tally_line,
)
from tui.widgets.repair import fit
from tui.widgets.status import StatusLine

DETAIL_LINES = 2  # the line under the table: the highlighted row's summary (Enter: all of it)
STILL_RUNNING = 10.0  # seconds on one check before the status line says so
# The Status column holds the longest word ("NOT RUN") and a change mark, or a running
# row's clock when there is no Time column ("RUN 120s").
STATUS_W, TIME_W = 8, 7
PAD = 2  # a DataTable column's cell padding, both sides together
SCROLLBAR = 1  # the table's vertical scrollbar, always reserved (scrollbar-gutter: stable)
MESSAGE_MIN = 14  # the Message column never gets less: it says what went wrong
TIME_MESSAGE_MIN = 40  # the Time column shows only while Message keeps this much


class ResultsTable(DataTable):
    """The rows of a run.  The highlighted row stays in view when the table's size
    changes (a resize of the terminal, the compact layout's focus, the completion panel):
    the line under the table speaks of that row."""

    def on_resize(self, event) -> None:
        self.call_after_refresh(self.show_cursor_row)

    def show_cursor_row(self) -> None:
        if self.row_count and self.is_attached:
            self.move_cursor(row=self.cursor_row, scroll=True)


def column_widths(width: int, check_w: int) -> tuple:
    """(check id width, message width, show the Time column) for a table ``width``
    columns wide whose longest check id is ``check_w``: Status and the id keep their
    width (the id is cut only where the Message column would get less than MESSAGE_MIN),
    Time shows where Message keeps TIME_MESSAGE_MIN, and Message takes what is left:
    no empty columns at the right."""
    room = width - SCROLLBAR - (STATUS_W + PAD) - PAD  # the check id and the message
    check_w = max(4, min(check_w, room - PAD - MESSAGE_MIN))
    message_w = room - PAD - check_w
    show_time = message_w - (TIME_W + PAD) >= TIME_MESSAGE_MIN
    if show_time:
        message_w -= TIME_W + PAD
    return check_w, max(message_w, 1), show_time


def table_columns(check_w: int, message_w: int) -> int:
    """The table's width that gives the check ids ``check_w`` columns and the Message
    column ``message_w`` (no Time column): column_widths the other way round."""
    return SCROLLBAR + (STATUS_W + PAD) + (check_w + PAD) + (message_w + PAD)


class ResultsPanel(Vertical):
    """Status line, progress, the table, and a one-line pointer to the failure view."""

    stale: reactive[bool] = reactive(False)  # the rows are of an earlier save (dimmed)

    DEFAULT_CSS = """
    ResultsPanel { height: 2fr; min-height: 8; }
    #run-status { width: 1fr; height: auto; padding: 0 1; overflow: hidden hidden; }
    #run-status.good { color: $success; text-style: bold; }
    #run-status.bad { color: $error; text-style: bold; }
    #run-status.todo { color: $warning; text-style: bold; }
    #run-status.stale, #run-status.running { color: $accent; }
    #run-line { height: 1; padding: 0 1; }
    #run-progress { width: 1fr; }
    #run-progress Bar { width: 1fr; }
    #run-count { width: auto; min-width: 7; padding: 0 0 0 1; }
    /* the columns fill the width exactly (column_widths): the scrollbar's room is kept */
    #results { height: 1fr; scrollbar-gutter: stable; scrollbar-size-vertical: 1; }
    /* the columns are sized to fit it; should they overflow it for a moment (a resize
       settling), no horizontal scrollbar: its thumb would show as a stray block */
    #results { overflow-x: hidden; }
    ResultsPanel.stale #results { opacity: 60%; }
    #record-detail {
        height: auto;
        max-height: 3;
        padding: 0 1;
        border-top: solid $primary 30%;
        overflow: hidden hidden;
    }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.records: dict = {}  # check id -> Record of the displayed run
        self.planned: list = []  # [{"id", "label", ...}] in order
        self.digest: str = ""  # content hash the displayed rows belong to
        self.outcome: str = ""  # "" while running or before any run
        self.previous: dict = {}  # check id -> status in the previous finished run
        self.running_since: dict = {}  # check id -> time.monotonic() it began
        self.load_error: Record | None = None  # the record of a file that did not import
        self.planned_at: float | None = None  # the plan came, no check began yet: importing
        self.timeout = 120.0  # the run's limit, for the "still running" line
        self.still_after = STILL_RUNNING
        self.workers_note = ""  # the processes a run uses, when more than one
        self.check_w, self.message_w = 20, 40
        self.show_time = True
        # The parts, held here: a callback that runs after they are unmounted (a blur
        # handled while the screen closes) must find them, not query for them.
        self._status_line = StatusLine("waiting for the first run…", id="run-status")
        self._table: DataTable = ResultsTable(id="results", cursor_type="row", zebra_stripes=True)
        self._progress_bar = ProgressBar(total=1, show_eta=False, show_percentage=False, id="run-progress")
        self._count = Static("", id="run-count")
        self._detail_line = Static("", id="record-detail")

    def compose(self) -> ComposeResult:
        yield self._status_line
        with Horizontal(id="run-line"):
            yield self._progress_bar
            yield self._count
        yield self._table
        yield self._detail_line

    def on_mount(self) -> None:
        self._columns()
        self.set_interval(0.5, self._tick)

    def _columns(self) -> None:
        table = self.table
        table.add_column("Status", key="status", width=STATUS_W)
        table.add_column("Check", key="check", width=self.check_w)
        if self.show_time:
            table.add_column("Time", key="time", width=TIME_W)
        table.add_column("Message", key="message", width=self.message_w)

    # --- queries, for the screen and for tests ---
    @property
    def table(self) -> DataTable:
        return self._table

    @property
    def status_line(self) -> StatusLine:
        return self._status_line

    @property
    def alive(self) -> bool:
        """The parts are mounted (False while the screen that holds them closes)."""
        return self.is_attached and self._table.is_attached

    def statuses(self) -> list:
        """The status of every row in order ('pending'/'running' until it has a record)."""
        out = []
        for c in self.planned:
            rec = self.records.get(c["id"])
            out.append(rec.status if rec else c.get("_state", "pending"))
        planned = {c["id"] for c in self.planned}
        out += [r.status for k, r in self.records.items() if k not in planned]
        return out

    def done_count(self) -> int:
        """Checks of the plan that ran (a timeout's or a crash's "not run" did not)."""
        return sum(
            1 for c in self.planned if c["id"] in self.records and self.records[c["id"]].status != "not run"
        )

    def longest_id(self) -> int:
        """The length of the longest check id of this workshop's run (8 before one)."""
        ids = [c["id"] for c in self.planned] + list(self.records)
        return max(map(len, ids), default=8)

    def cursor_record(self):
        t = self.table
        if not t.row_count:
            return None
        key = t.coordinate_to_cell_key(Coordinate(t.cursor_row, 0)).row_key.value
        return self.records.get(key)

    # --- layout: the columns follow the panel's width ---
    def on_resize(self, event) -> None:
        self.size_columns(event.size.width)

    def size_columns(self, width: int) -> None:
        """The widths of column_widths for the rows shown; a change of the Time column
        rebuilds the table's columns (the rows keep their cells and the cursor)."""
        check_w, message_w, show_time = column_widths(width, self.longest_id())
        if (check_w, message_w, show_time) == (self.check_w, self.message_w, self.show_time):
            return
        rebuild = show_time != self.show_time
        self.check_w, self.message_w, self.show_time = check_w, message_w, show_time
        t = self.table
        if rebuild:
            row = t.cursor_row
            t.clear(columns=True)
            self._columns()
            for key in self._row_keys():
                self._add_row(key)
            if t.row_count:
                t.move_cursor(row=min(row, t.row_count - 1))
        for key, w in (("check", check_w), ("message", message_w)):
            col = t.columns.get(key)  # type: ignore[call-overload]
            if col is not None:
                col.width, col.auto_width = w, False
        self._refill()

    def _row_keys(self) -> list:
        """The table's rows in order: the load error alone, else planned then extra."""
        if self.load_error is not None:
            return [self.load_error.id]
        planned = [c["id"] for c in self.planned]
        return planned + [k for k in self.records if k not in planned]

    def _refill(self) -> None:
        for c in self.planned:
            if c["id"] not in self.records:
                self._plan_cells(c)
        for rec in self.records.values():
            self._cells(rec)
        self.table.refresh()

    # --- updates ---
    def watch_stale(self, stale: bool) -> None:
        self.set_class(stale, "stale")

    def mark_stale(self, new_digest: str) -> None:
        why = "re-checking" if self.digest else "checking"
        # stale only for other content: space on the same file re-checks what is shown
        other = self.digest and self.digest != new_digest
        # the rows shown are of a run still going (not of a finished one, dimmed)
        cancelled = not self.outcome and not self.stale and bool(self.planned or self.records)
        if cancelled:  # a run still going: its rows go back to not yet run, counted from 0
            self._clear_rows()
            shown = f" (the run of {self.digest[:8]} was cancelled)" if other else ""
        else:
            shown = f" (results below are for {self.digest[:8]}, now stale)" if other else ""
        self._status(f"{why} {new_digest[:8]}…{shown}", "stale")
        self.outcome = ""
        self.stale = not cancelled  # finished rows stay, dimmed, until the new run's plan
        self.running_since, self.planned_at = {}, None  # the old run is cancelled: no clock

    def _clear_rows(self) -> None:
        """The rows of a cancelled run as before it began: every planned check pending,
        its description dim, no record (the change marks keep comparing with the last
        finished run), the count at 0."""
        self.records, self.load_error = {}, None
        for c in self.planned:
            c.pop("_state", None)
        table = self.table
        row = table.cursor_row
        table.clear()
        for c in self.planned:
            self._add_row(c["id"])
            self._plan_cells(c)
        if table.row_count:
            table.move_cursor(row=min(max(row, 0), table.row_count - 1))
        self._detail("")
        self._progress()

    def start(self, cases: list, digest: str) -> None:
        self.stale = False
        if self.records:
            self.previous = {k: r.status for k, r in self.records.items()}
        self.digest, self.outcome = digest, ""
        self.records, self.running_since, self.load_error = {}, {}, None
        self.planned = [dict(c) for c in cases]
        self.planned_at = time.monotonic()
        table = self.table
        table.clear()
        self.size_columns(self.size.width or 80)
        for c in self.planned:
            self._add_row(c["id"])
            self._plan_cells(c)
        self._detail("")
        self._progress()
        shared = f" ({self.workers_note})" if self.workers_note else ""
        self._status(f"checking {digest[:8]}…{shared}", "running")

    def started(self, check_id: str) -> None:
        self.planned_at = None  # the file imported
        for c in self.planned:
            if c["id"] == check_id and c["id"] not in self.records:
                c["_state"] = "running"
                self.running_since[check_id] = time.monotonic()
                self._set(check_id, "status", status_cell("running"))
                self._set(check_id, "time", "0s")

    def add(self, rec: Record) -> None:
        self.planned_at = None
        began = self.running_since.pop(rec.id, None)
        if is_timeout(rec) and not rec.seconds and began is not None:
            rec.seconds = round(time.monotonic() - began, 2)  # the real time it ran
        self.records[rec.id] = rec
        if self.size.width:
            self.size_columns(self.size.width)  # a new row's id may want more room
        planned = {c["id"] for c in self.planned}
        if rec.id not in planned and rec.status == "error" and rec.id == "load":
            self._show_load_error(rec)
            return
        table = self.table
        if rec.id not in table.rows:
            self._add_row(rec.id)
        self._cells(rec)
        self._progress()
        if table.cursor_row == table.get_row_index(rec.id):
            self.show_detail(rec.id)

    def _plan_cells(self, plan: dict) -> None:
        """A row without a record yet: its state, its id, its description (dim)."""
        self._set(plan["id"], "status", status_cell(plan.get("_state", "pending")))
        self._set(plan["id"], "check", first_line(plan["id"], self.check_w))
        self._set(plan["id"], "message", Text(first_line(plan.get("label", ""), self.message_w), "dim"))

    def _cells(self, rec: Record) -> None:
        if rec.id not in self.table.rows:
            return
        message: str | Text = summary(rec)
        if rec.id == "load" and rec is self.load_error:
            message = first_line(rec.message, 10_000)
        if message:
            message = first_line(str(message), self.message_w)
        else:  # nothing to say (most passes): what the check is about, dim
            message = Text(first_line(rec.label, self.message_w), style="dim")
        self._set(rec.id, "status", status_cell(rec.status, self.change_of(rec)))
        self._set(rec.id, "check", first_line(rec.id, self.check_w))
        self._set(rec.id, "time", f"{rec.seconds:.2f}s")
        self._set(rec.id, "message", message)

    def _show_load_error(self, rec: Record) -> None:
        """The file did not import: one row that says so, not a row per check."""
        self.load_error = rec
        self.running_since = {}
        table = self.table
        table.clear()
        for c in self.planned:
            c["_state"] = "not run"
        self._add_row(rec.id)
        self._cells(rec)
        table.move_cursor(row=0)
        self._progress()
        self.show_detail(rec.id)

    def finish(self, outcome: str, records: list, digest: str, error: str = "") -> None:
        for rec in records:
            if self.records.get(rec.id) is not rec:
                self.add(rec)
        self.outcome = outcome
        self.digest = digest
        self.running_since, self.planned_at = {}, None
        for c in self.planned:  # planned but never run (an import error, a cancel)
            if c["id"] not in self.records:
                c["_state"] = "not run"
                self._set(c["id"], "status", status_cell("not run"))
                self._set(c["id"], "time", "")
        self._progress()
        bad = [k for k, r in self.records.items() if r.status in ("fail", "error")]
        if bad and bad[0] in self.table.rows:
            self.table.move_cursor(row=self.table.get_row_index(bad[0]))
            self.show_detail(bad[0])
        if outcome == "usage" or (outcome == "error" and not records):
            self._status(f"{digest[:8]}: could not run the checks: {first_line(error, 90)}", "bad")
            return
        if self.load_error is not None:
            where = source_line(self.load_error)
            n = len(self.planned)
            self._status(
                f"{digest[:8]}: your file does not import"
                f"{' (' + where + ')' if where else ''}; "
                f"{'none of the ' + str(n) + ' checks ran' if n else 'no check ran'}.",
                "bad",
                " Enter: the whole error",
            )
            return
        line = tally_line(list(self.records.values()))
        extra = {"timeout": " (timed out)", "crashed": " (crashed)", "error": " (app error)"}.get(outcome, "")
        statuses = {r.status for r in self.records.values()}
        cls = "good" if statuses <= {"pass", "skipped"} and "pass" in statuses else "todo"
        cls = "bad" if statuses & {"fail", "error"} else cls
        tail = "  Enter on a row: the whole story" if cls == "bad" else ""
        separated = separating_property(list(self.records.values()))  # what the failing checks share
        self._status(f"{digest[:8]} {line}{extra}" + (f" — {separated}" if separated else ""), cls, tail)

    # --- the status line names Enter only while Enter works: the table has the focus ---
    def on_descendant_focus(self, event) -> None:
        self._show_keys()

    def on_descendant_blur(self, event) -> None:
        self.call_after_refresh(self._show_keys)

    def _show_keys(self) -> None:
        if self.alive:  # a blur while the screen closes: nothing left to update
            self.status_line.keys_shown = self.table.has_focus

    def show_detail(self, check_id: str) -> None:
        """One line under the table about the highlighted row (Enter shows everything)."""
        rec = self.records.get(check_id)
        if rec is None:
            plan = next((c for c in self.planned if c["id"] == check_id), None)
            self._detail(Text(f"{check_id}: {plan.get('label', '') if plan else ''}".strip()))
            return
        word, style = STATUS_STYLE.get(rec.status, (rec.status, ""))
        text = Text.assemble((word, style), " ")
        change = self.change_of(rec)
        if change:
            mark, mark_style = CHANGE_MARK[change]
            text.append(f"{mark} {change} ", style=mark_style)
        text.append(rec.id, style="bold")
        text.append(f" ({rec.label})" if rec.label and rec.label != rec.id else "", style="dim")
        said = summary(rec)
        if said:
            text.append("  " + said)
        hint = "  (Enter: details)" if rec.status != "pass" and self.table.has_focus else ""
        # two lines at most: a longer summary ends in an ellipsis, Enter's hint kept after it
        width = max((self.size.width or self.app.size.width) - 2, 20)  # its padding: one a side
        body = fit(text, width - len(hint), DETAIL_LINES, self.app.console if self.is_attached else None)
        if hint:
            body.append(hint, style="dim")
        self._detail(body)

    def change_of(self, rec: Record) -> str:
        """'newly passing' / 'newly failing' against the previous run of this workshop."""
        return change_since(self.previous.get(rec.id), rec.status)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value:
            self.show_detail(event.row_key.value)

    # --- the ticking clock of running rows ---
    def _tick(self) -> None:
        if self.outcome or self.stale:
            return
        now = time.monotonic()
        if self.planned_at is not None and not self.running_since and not self.records:
            importing = now - self.planned_at  # a file stuck at import (a loop, a sleep)
            if importing >= self.still_after:
                self._status(
                    f"still running: importing your file for {importing:.0f} s (it stops at "
                    f"{self.timeout:g} s; a save or space restarts the checks)",
                    "running",
                )
            return
        longest_id, longest = None, 0.0
        for check_id, began in self.running_since.items():
            elapsed = now - began
            self._set(check_id, "time", f"{elapsed:.0f}s")
            if not self.show_time:  # no Time column: the status cell ticks ("RUN 12s")
                self._set(check_id, "status", Text(f"RUN {elapsed:.0f}s", style="bold cyan"))
            if elapsed >= longest:
                longest_id, longest = check_id, elapsed
        if longest >= self.still_after and longest_id is not None:
            self._status(
                f"still running: {longest_id} for {longest:.0f} s (it stops at {self.timeout:g} s; "
                "a save or space restarts the checks)",
                "running",
            )

    # --- helpers ---
    def _add_row(self, key: str) -> None:
        if key in self.table.rows:  # already there (a rebuild of the columns added it)
            return
        cells = ["", ""] + ([""] if self.show_time else []) + [""]
        self.table.add_row(*cells, key=key)

    def _set(self, row: str, column: str, value) -> None:
        if row in self.table.rows and column in self.table.columns:
            self.table.update_cell(row, column, value)

    def _progress(self) -> None:
        n, done = len(self.planned), self.done_count()
        self._progress_bar.update(total=max(1, n), progress=done)
        count = f"{done}/{n} ran" if n or not self.load_error else "0/0 ran"  # not a score
        self._count.update(count)

    def _detail(self, text) -> None:
        self._detail_line.update(text)

    def _status(self, text: str, look: str, keys: str = "") -> None:
        """The status line; ``keys`` (what Enter does) only while the table has the focus."""
        line = self.status_line
        line.text, line.look, line.keys = text, look, keys
        line.keys_shown = self.table.has_focus
