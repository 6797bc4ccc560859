"""The live results of a check run: a row per named check, filled in as records arrive."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, ProgressBar, Static

from checks.records import Record

STATUS_STYLE = {
    "pass": ("PASS", "bold green"),
    "fail": ("FAIL", "bold red"),
    "todo": ("TODO", "bold yellow"),
    "error": ("ERROR", "bold magenta"),
    "skipped": ("SKIP", "dim"),
    "pending": ("·", "dim"),
    "running": ("RUN", "bold cyan"),
    "not run": ("—", "dim"),
}
LABEL_WIDTH, MESSAGE_WIDTH = 32, 72


def status_cell(status: str) -> Text:
    word, style = STATUS_STYLE.get(status, (status.upper(), ""))
    return Text(word, style=style)


def first_line(text: str, width: int) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def tally_line(records: list) -> str:
    """'9/11 passed, 2 failed' -- the counts of one run, worst news included."""
    n = len(records)
    count = lambda *s: sum(r.status in s for r in records)
    parts = [f"{count('pass')}/{n} passed"]
    for label, statuses in (("failed", ("fail",)), ("errors", ("error",)), ("TODO", ("todo",)),
                            ("skipped", ("skipped",))):
        k = count(*statuses)
        if k:
            parts.append(f"{k} {label}")
    return ", ".join(parts)


class ResultsPanel(Vertical):
    """Status line, progress, the table, and the highlighted check's full message."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.records: dict = {}          # check id -> Record of the displayed run
        self.planned: list = []          # [{"id", "label", ...}] in order
        self.digest: str = ""            # content hash the displayed rows belong to
        self.outcome: str = ""           # "" while running or before any run
        self.previous: dict = {}         # check id -> status in the previous finished run

    def compose(self) -> ComposeResult:
        yield Static("waiting for the first run…", id="run-status")
        with Horizontal(id="run-line"):
            yield ProgressBar(total=1, show_eta=False, show_percentage=False, id="run-progress")
            yield Static("", id="run-count")
        yield DataTable(id="results", cursor_type="row", zebra_stripes=True)
        yield Static("", id="record-detail")

    def on_mount(self) -> None:
        table = self.query_one("#results", DataTable)
        table.add_column("Status", key="status", width=6)
        table.add_column("Check", key="label")
        table.add_column("Time", key="time", width=6)
        table.add_column("Message", key="message")

    # --- queries, for the screen and for tests ---
    @property
    def table(self) -> DataTable:
        return self.query_one("#results", DataTable)

    def statuses(self) -> list:
        """The status of every row in order ('pending'/'running' until it has a record)."""
        out = []
        for c in self.planned:
            rec = self.records.get(c["id"])
            out.append(rec.status if rec else c.get("_state", "pending"))
        out += [r.status for k, r in self.records.items() if k not in {c["id"] for c in self.planned}]
        return out

    def done_count(self) -> int:
        return sum(1 for c in self.planned if c["id"] in self.records)

    # --- updates ---
    def mark_stale(self, new_digest: str) -> None:
        why = "re-checking" if self.digest else "checking"
        shown = f" (results below are for {self.digest[:8]}, now stale)" if self.digest else ""
        self._status(f"{why} {new_digest[:8]}…{shown}", "stale")
        self.outcome = ""
        self.add_class("stale")

    def start(self, cases: list, digest: str) -> None:
        self.remove_class("stale")
        if self.records:
            self.previous = {k: r.status for k, r in self.records.items()}
        self.digest, self.outcome = digest, ""
        self.records = {}
        self.planned = [dict(c) for c in cases]
        table = self.table
        table.clear()
        for c in self.planned:
            table.add_row(status_cell("pending"), first_line(c.get("label") or c["id"], LABEL_WIDTH),
                          "", "", key=c["id"])
        self.query_one("#record-detail", Static).update("")
        bar = self.query_one("#run-progress", ProgressBar)
        bar.update(total=max(1, len(self.planned)), progress=0)
        self._count()
        self._status(f"checking {digest[:8]}…", "running")

    def started(self, check_id: str) -> None:
        for c in self.planned:
            if c["id"] == check_id and c["id"] not in self.records:
                c["_state"] = "running"
                self._set(check_id, "status", status_cell("running"))

    def add(self, rec: Record) -> None:
        self.records[rec.id] = rec
        table = self.table
        change = self.change_of(rec)
        message = f"[{change}] {rec.message}" if change else rec.message
        cells = (status_cell(rec.status), first_line(rec.label or rec.id, LABEL_WIDTH),
                 f"{rec.seconds:.2f}s", first_line(message, MESSAGE_WIDTH))
        if rec.id in table.rows:
            for key, value in zip(("status", "label", "time", "message"), cells):
                table.update_cell(rec.id, key, value)
        else:
            table.add_row(*cells, key=rec.id)
        self.query_one("#run-progress", ProgressBar).update(progress=self.done_count())
        self._count()
        if table.cursor_row == table.get_row_index(rec.id):
            self.show_detail(rec.id)

    def finish(self, outcome: str, records: list, digest: str, error: str = "") -> None:
        for rec in records:
            if self.records.get(rec.id) is not rec:
                self.add(rec)
        self.outcome = outcome
        self.digest = digest
        for c in self.planned:              # planned but never run (an import error, a cancel)
            if c["id"] not in self.records:
                c["_state"] = "not run"
                self._set(c["id"], "status", status_cell("not run"))
        bad = [k for k, r in self.records.items() if r.status in ("fail", "error")]
        if bad and bad[0] in self.table.rows:
            self.table.move_cursor(row=self.table.get_row_index(bad[0]))
            self.show_detail(bad[0])
        if outcome == "usage" or (outcome == "error" and not records):
            self._status(f"{digest[:8]}: could not run the checks: {first_line(error, 90)}", "bad")
            return
        line = tally_line(list(self.records.values()))
        extra = {"timeout": " (timed out)", "crashed": " (crashed)", "error": " (app error)"}.get(outcome, "")
        statuses = {r.status for r in self.records.values()}
        cls = "good" if statuses == {"pass"} else ("bad" if statuses & {"fail", "error"} else "todo")
        self._status(f"{digest[:8]}: {line}{extra}", cls)

    def show_detail(self, check_id: str) -> None:
        rec = self.records.get(check_id)
        detail = self.query_one("#record-detail", Static)
        if rec is None:
            plan = next((c for c in self.planned if c["id"] == check_id), None)
            detail.update(Text(f"{check_id}: {plan.get('why', '') if plan else ''}".strip()))
            return
        word, style = STATUS_STYLE.get(rec.status, (rec.status, ""))
        text = Text.assemble((word, style), " ", (rec.id, "bold"), f"  {rec.label}\n")
        if rec.message:
            text.append(rec.message.strip()[:1500] + "\n")
        change = self.change_of(rec)
        if change:
            text.append(f"{change} since the last run\n", style="bold")
        if rec.why:
            text.append(f"why it matters: {rec.why}\n", style="italic")
        if rec.section:
            text.append(f"lesson section: {rec.section}\n", style="dim")
        error_map = rec.details.get("map") if isinstance(rec.details, dict) else None
        if error_map:
            text.append("where the output is wrong (rows down, columns across; # wrong):\n")
            for row in error_map:
                for ch in row:
                    text.append(ch, style="bold red" if ch == "#" else "green")
                text.append("\n")
        detail.update(text)

    def change_of(self, rec: Record) -> str:
        """'newly passing' / 'newly failing' against the previous run of this workshop."""
        old = self.previous.get(rec.id)
        if old is None or old == rec.status or "pass" not in (old, rec.status):
            return ""
        return "newly passing" if rec.status == "pass" else "newly failing"

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value:
            self.show_detail(event.row_key.value)

    # --- helpers ---
    def _set(self, row: str, column: str, value) -> None:
        if row in self.table.rows:
            self.table.update_cell(row, column, value)

    def _count(self) -> None:
        self.query_one("#run-count", Static).update(f"{self.done_count()}/{len(self.planned)}")

    def _status(self, text: str, cls: str) -> None:
        st = self.query_one("#run-status", Static)
        st.set_classes(cls)
        st.update(text)
