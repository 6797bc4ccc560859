"""The live results of a check run: a row per named check, filled in as records arrive.

A running row shows its elapsed time, ticking; after STILL_RUNNING seconds the status
line says the check is still running and what ends it.  A load error (the file does
not import) is one row, not a row per check that never ran.  Enter on a row opens the
failure view (tui.screens.failure)."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import DataTable, ProgressBar, Static

from checks.judging import Record, change_since
from tui.widgets.record_text import (
    STATUS_STYLE,
    first_line,
    is_timeout,
    source_line,
    status_cell,
    summary,
    tally_line,
)
from tui.widgets.status import StatusLine

STILL_RUNNING = 10.0  # seconds on one check before the status line says so
STATUS_W, TIME_W = 7, 7
TIME_FROM = 100  # columns of the panel from which the table shows its Time column
MESSAGE_MIN = 16  # the Message column never gets less: it says what went wrong


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
    #results { height: 1fr; }
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
        self.timeout = 120.0  # the run's limit, for the "still running" line
        self.still_after = STILL_RUNNING
        self.workers_note = ""  # the processes a run uses, when more than one
        self.label_w, self.message_w = 32, 60
        self.show_time = True

    def compose(self) -> ComposeResult:
        yield StatusLine("waiting for the first run…", id="run-status")
        with Horizontal(id="run-line"):
            yield ProgressBar(total=1, show_eta=False, show_percentage=False, id="run-progress")
            yield Static("", id="run-count")
        yield DataTable(id="results", cursor_type="row", zebra_stripes=True)
        yield Static("", id="record-detail")

    def on_mount(self) -> None:
        self._columns()
        self.set_interval(0.5, self._tick)

    def _columns(self) -> None:
        table = self.query_one("#results", DataTable)
        table.add_column("Status", key="status", width=STATUS_W)
        table.add_column("Check", key="label", width=self.label_w)
        if self.show_time:
            table.add_column("Time", key="time", width=TIME_W)
        table.add_column("Message", key="message", width=self.message_w)

    # --- queries, for the screen and for tests ---
    @property
    def table(self) -> DataTable:
        return self.query_one("#results", DataTable)

    @property
    def status_line(self) -> StatusLine:
        return self.query_one("#run-status", StatusLine)

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
        return sum(1 for c in self.planned if c["id"] in self.records)

    def cursor_record(self):
        t = self.table
        if not t.row_count:
            return None
        key = t.coordinate_to_cell_key((t.cursor_row, 0)).row_key.value
        return self.records.get(key)

    # --- layout: the columns follow the panel's width ---
    def on_resize(self, event) -> None:
        self.size_columns(event.size.width)

    def size_columns(self, width: int) -> None:
        """Status (and, from TIME_FROM columns, Time) keep their width; the check's
        label gets what it needs up to about 40% of the rest, the Message column always
        keeps at least MESSAGE_MIN and gets the remaining room."""
        show_time = width >= TIME_FROM
        inner = max(width - STATUS_W - (TIME_W if show_time else 0) - 2 * (3 + show_time) - 2, 24)
        labels = [len(c.get("label") or c["id"]) for c in self.planned]
        labels += [len(r.label or r.id) for r in self.records.values()]
        want = max(labels, default=20)
        messages = [len(summary(r)) + 16 * bool(self.change_of(r)) for r in self.records.values()]
        said = max(messages, default=0) if self.outcome or self.records else 30
        if want + said <= inner:
            label_w = want  # room for both, whole
        else:
            label_w = max(10, min(want, max(int(inner * 0.4), inner - said)))
        label_w = min(label_w, inner - (MESSAGE_MIN if said else len("Message") + 2))
        message_w = inner - label_w
        if (label_w, message_w, show_time) == (self.label_w, self.message_w, self.show_time):
            return
        rebuild = show_time != self.show_time
        self.label_w, self.message_w, self.show_time = label_w, message_w, show_time
        t = self.table
        if rebuild:
            row = t.cursor_row
            t.clear(columns=True)
            self._columns()
            for key in self._row_keys():
                self._add_row(key)
            if t.row_count:
                t.move_cursor(row=min(row, t.row_count - 1))
        for key, w in (("label", label_w), ("message", message_w)):
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
            self._set(c["id"], "label", first_line(c.get("label") or c["id"], self.label_w))
            if c["id"] not in self.records:
                self._set(c["id"], "status", status_cell(c.get("_state", "pending")))
        for rec in self.records.values():
            self._cells(rec)
        self.table.refresh()

    # --- updates ---
    def watch_stale(self, stale: bool) -> None:
        self.set_class(stale, "stale")

    def mark_stale(self, new_digest: str) -> None:
        why = "re-checking" if self.digest else "checking"
        shown = f" (results below are for {self.digest[:8]}, now stale)" if self.digest else ""
        self._status(f"{why} {new_digest[:8]}…{shown}", "stale")
        self.outcome = ""
        self.stale = True

    def start(self, cases: list, digest: str) -> None:
        self.stale = False
        if self.records:
            self.previous = {k: r.status for k, r in self.records.items()}
        self.digest, self.outcome = digest, ""
        self.records, self.running_since, self.load_error = {}, {}, None
        self.planned = [dict(c) for c in cases]
        table = self.table
        table.clear()
        self.size_columns(self.size.width or 80)
        for c in self.planned:
            self._add_row(
                c["id"], status_cell("pending"), first_line(c.get("label") or c["id"], self.label_w)
            )
        self._detail("")
        self._progress()
        shared = f" ({self.workers_note})" if self.workers_note else ""
        self._status(f"checking {digest[:8]}…{shared}", "running")

    def started(self, check_id: str) -> None:
        for c in self.planned:
            if c["id"] == check_id and c["id"] not in self.records:
                c["_state"] = "running"
                self.running_since[check_id] = time.monotonic()
                self._set(check_id, "status", status_cell("running"))
                self._set(check_id, "time", "0s")

    def add(self, rec: Record) -> None:
        began = self.running_since.pop(rec.id, None)
        if is_timeout(rec) and not rec.seconds and began is not None:
            rec.seconds = round(time.monotonic() - began, 2)  # the real time it ran
        self.records[rec.id] = rec
        if self.size.width:
            self.size_columns(self.size.width)  # a longer message may want more room
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

    def _cells(self, rec: Record) -> None:
        if rec.id not in self.table.rows:
            return
        change = self.change_of(rec)
        message = summary(rec)
        if rec.id == "load" and rec is self.load_error:
            message = first_line(rec.message, 10_000)
        message = f"[{change}] {message}" if change else message
        self._set(rec.id, "status", status_cell(rec.status))
        self._set(rec.id, "label", first_line(rec.label or rec.id, self.label_w))
        self._set(rec.id, "time", f"{rec.seconds:.2f}s")
        self._set(rec.id, "message", first_line(message, self.message_w))

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
        self.running_since = {}
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
        self._status(f"{digest[:8]} {line}{extra}", cls, tail)

    # --- the status line names Enter only while Enter works: the table has the focus ---
    def on_descendant_focus(self, event) -> None:
        self._show_keys()

    def on_descendant_blur(self, event) -> None:
        self.call_after_refresh(self._show_keys)

    def _show_keys(self) -> None:
        self.status_line.keys_shown = self.table.has_focus

    def show_detail(self, check_id: str) -> None:
        """One line under the table about the highlighted row (Enter shows everything)."""
        rec = self.records.get(check_id)
        if rec is None:
            plan = next((c for c in self.planned if c["id"] == check_id), None)
            self._detail(Text(f"{check_id}: {plan.get('why', '') if plan else ''}".strip()))
            return
        word, style = STATUS_STYLE.get(rec.status, (rec.status, ""))
        text = Text.assemble((word, style), " ", (rec.label or rec.id, "bold"), "  ")
        text.append(summary(rec))
        if rec.status != "pass" and self.table.has_focus:
            text.append("  (Enter: details)", style="dim")
        self._detail(text)

    def change_of(self, rec: Record) -> str:
        """'newly passing' / 'newly failing' against the previous run of this workshop."""
        return change_since(self.previous.get(rec.id), rec.status)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value:
            self.show_detail(event.row_key.value)

    # --- the ticking clock of running rows ---
    def _tick(self) -> None:
        if not self.running_since or self.outcome:
            return
        now = time.monotonic()
        longest_id, longest = None, 0.0
        for check_id, began in self.running_since.items():
            elapsed = now - began
            self._set(check_id, "time", f"{elapsed:.0f}s")
            if not self.show_time:  # no Time column: the status cell ticks ("RUN 12s")
                self._set(check_id, "status", Text(f"RUN {elapsed:.0f}s"[:STATUS_W], style="bold cyan"))
            if elapsed >= longest:
                longest_id, longest = check_id, elapsed
        if longest >= self.still_after and longest_id is not None:
            label = next(
                (c.get("label") or c["id"] for c in self.planned if c["id"] == longest_id), longest_id
            )
            self._status(
                f"still running: {label} for {longest:.0f} s (it stops at {self.timeout:g} s; "
                "a save or space restarts the checks)",
                "running",
            )

    # --- helpers ---
    def _add_row(self, key: str, status="", label="") -> None:
        if key in self.table.rows:  # already there (a rebuild of the columns added it)
            for column, value in (("status", status), ("label", label)):
                if value:
                    self._set(key, column, value)
            return
        cells = [status, label] + ([""] if self.show_time else []) + [""]
        self.table.add_row(*cells, key=key)

    def _set(self, row: str, column: str, value) -> None:
        if row in self.table.rows and column in self.table.columns:
            self.table.update_cell(row, column, value)

    def _progress(self) -> None:
        n, done = len(self.planned), self.done_count()
        self.query_one("#run-progress", ProgressBar).update(total=max(1, n), progress=done)
        count = f"{done}/{n}" if n or not self.load_error else "0/0"
        self.query_one("#run-count", Static).update(count)

    def _detail(self, text) -> None:
        self.query_one("#record-detail", Static).update(text)

    def _status(self, text: str, look: str, keys: str = "") -> None:
        """The status line; ``keys`` (what Enter does) only while the table has the focus."""
        line = self.status_line
        line.text, line.look, line.keys = text, look, keys
        line.keys_shown = self.table.has_focus
