"""Choose a workshop: levels, the six workshops, and the learner's progress."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.coordinate import Coordinate
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from checks import workspace as ws
from tui.host import course_app
from tui.screens.documents import DocumentsScreen
from workshops import catalog

# the progress file's standing -> the outcome words the app, the CLI and the export use
STATUS_LOOK = {
    "passed": ("passed", "bold green"),
    "failing": ("failed", "bold red"),
    "todo": ("incomplete", "bold yellow"),
    "unavailable": ("unavailable here", "dim"),
}


def _counts(entry) -> dict:
    best = entry.get("best") if isinstance(entry, dict) else None
    return best if isinstance(best, dict) else {}


def outcome_word(entry) -> str:
    """'passed here' for a pass that left checks which cannot run on this machine
    (the best result counts them), else the standing's own word."""
    status = str(entry.get("status"))
    best = _counts(entry)
    if (
        status == "passed"
        and best.get("status") == "passed"
        and isinstance(best.get("passed"), int)
        and isinstance(best.get("total"), int)
        and best["passed"] < best["total"]
    ):
        return "passed here"
    return STATUS_LOOK.get(status, (status, ""))[0]


def status_text(entry, when: bool = True, file_hash: str | None = None) -> Text:
    """The standing of a workshop; ``file_hash``: the learner's file now, when the
    standing is of another content it says so (the file changed since it was checked)."""
    if not isinstance(entry, dict) or "status" not in entry:
        return Text("not started", style="dim")
    style = STATUS_LOOK.get(str(entry["status"]), ("", ""))[1]
    text = Text(outcome_word(entry), style=style)
    checked = entry.get("content_hash")
    if file_hash and isinstance(checked, str) and checked and checked != file_hash:
        text.append(" (of an older file)" if when else " (older file)", style="yellow")
    if when and entry.get("when"):
        text.append(f"  {entry['when']}", style="dim")
    best = _counts(entry)
    if best.get("status") == "passed" and entry["status"] != "passed":
        text.append("  (passed before", style="green")
        text.append(
            f", {str(best.get('when', ''))[:10]})" if when and best.get("when") else ")", style="green"
        )
    return text


def best_text(entry) -> str:
    best = _counts(entry)
    if not best:
        return ""
    word = STATUS_LOOK.get(str(best.get("status")), (str(best.get("status", "?")), ""))[0]
    counts = ""
    if "passed" in best and "total" in best:
        if word == "passed" and best["passed"] < best["total"]:
            word = "passed here"
        counts = f" {best['passed']}/{best['total']}"
    return f"{word}{counts} ({best.get('when', '?')})"


def course_line(progress: dict) -> Text:
    """'Course progress: Intermediate 1 of 3 passed · Advanced 0 of 3 passed'."""
    text = Text("Course progress: ", style="bold")
    for i, (level, n, total) in enumerate(ws.level_progress(catalog.workshops(), progress)):
        if i:
            text.append(" · ")
        text.append(f"{level.capitalize()} ")
        text.append(f"{n} of {total}", style="bold green" if n == total else "bold")
        text.append(" passed")
    return text


# The list's layouts, widest first: the first whose cells fit the screen is shown (the
# details below the table always name the prerequisite, sessions, device and times).
# (columns left out, status with its time, the device's form: where a GPU workshop
# runs on this machine, "long", "short" or "tiny"; the note under the table says it too)
# Before the Device column goes, the Level column does (the code, I1 or A1, names the
# level) and the device takes its tiny form: at 80 columns without a GPU, "failed
# (passed before)" kept Level and lost Device.
LAYOUTS: tuple[tuple[frozenset[str], bool, str], ...] = (
    (frozenset(), True, "long"),
    (frozenset(), False, "long"),
    (frozenset(), False, "short"),
    (frozenset({"sessions"}), True, "long"),
    (frozenset({"sessions"}), False, "long"),
    (frozenset({"sessions"}), False, "short"),
    (frozenset({"prerequisite", "sessions"}), True, "long"),
    (frozenset({"prerequisite", "sessions"}), False, "long"),
    (frozenset({"prerequisite", "sessions"}), False, "short"),
    (frozenset({"prerequisite", "sessions", "level"}), False, "short"),
    (frozenset({"prerequisite", "sessions", "level"}), False, "tiny"),
    (frozenset({"prerequisite", "sessions", "level", "device"}), False, "short"),
)
# Without a CUDA GPU the GPU workshops run in Triton's interpreter: the list says so.
NO_GPU_NOTE = "No CUDA GPU here: the GPU workshops run in Triton's interpreter, untimed."


def device_text(workshop, gpu: bool, form: str = "long") -> str:
    """Where ``workshop`` runs on this machine: CPU, GPU, or the interpreter."""
    if not workshop.gpu or gpu:
        return workshop.device
    forms = {"long": "GPU (interpreted here)", "short": "GPU (interp.)", "tiny": "interp."}
    return forms.get(form, "GPU, interpreted here")


DEVICE_CELL = {"long": "device", "short": "device_short", "tiny": "device_tiny"}  # a row's cell by form

COLUMNS = (
    ("Level", "level"),
    ("Code", "code"),
    ("Workshop", "title"),
    ("Device", "device"),
    ("Prerequisite", "prerequisite"),
    ("Sessions", "sessions"),
    ("Your status", "status"),
)


class BrowseScreen(Screen[None]):
    DEFAULT_CSS = """
    #intro { padding: 0 1; color: $text-muted; height: auto; }
    #progress-warning { padding: 0 1; height: auto; background: $warning 20%; color: $text; }
    #course-progress { padding: 0 1; height: auto; margin: 1 0 0 0; overflow: hidden hidden; }
    #workshops { height: auto; max-height: 16; margin: 1 1 0 1; }
    #device-note { padding: 0 2; height: auto; color: $text-muted; }
    #workshop-details { padding: 1 2; height: auto; }
    """
    BINDINGS = [
        Binding("enter", "open_selected", "Open", id="open", show=True),
        Binding("q", "app.quit", "Quit", id="quit"),
        Binding("d", "documents", "Documents", id="documents", tooltip="glossary, worksheet, capstones"),
        Binding("escape", "close_keys", "Close keys", id="close-keys", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.progress: dict = {}
        self.file_hashes: dict = {}  # workshop id -> the content hash of the learner's file now
        self.warning = None
        self.list_layout = LAYOUTS[0]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            "Intermediate and advanced kernel workshops. Choose one with the arrow "
            "keys or the mouse and press Enter. Budget 2-4 sessions of 60-90 minutes "
            "for an intermediate workshop, 3-5 for an advanced one.",
            id="intro",
        )
        yield Static("", id="progress-warning")
        yield Static("", id="course-progress")
        yield DataTable(id="workshops", cursor_type="row", zebra_stripes=True)
        yield Static(NO_GPU_NOTE, id="device-note")
        yield Static("", id="workshop-details")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "choose a workshop"
        self.query_one("#device-note").display = not course_app(self).gpu
        self.refresh_progress()
        self.query_one("#workshops", DataTable).focus()

    def on_resize(self, event) -> None:
        if self.query("#workshops"):
            self._fill_table()  # the same progress, laid out for the new width

    def on_screen_suspend(self) -> None:
        self.query("HelpPanel").remove()  # the Keys panel does not follow to a workshop

    def action_close_keys(self) -> None:
        self.query("HelpPanel").remove()

    def on_screen_resume(self) -> None:
        if self.is_mounted and self.query("#workshops"):
            self.refresh_progress()

    def refresh_progress(self) -> None:
        workspace = course_app(self).workspace
        self.progress, warning = ws.load_progress(workspace)
        self.file_hashes = {}
        for w in catalog.workshops():
            try:
                self.file_hashes[w.id] = ws.content_hash(ws.exercise_path(w, workspace).read_bytes())
            except OSError:
                pass  # not created yet, or deleted: nothing to compare
        if warning:  # keep it visible: the file was set aside, not lost
            self.warning = warning
        warn = self.query_one("#progress-warning", Static)
        warn.update(f"Warning: {self.warning}" if self.warning else "")
        warn.display = bool(self.warning)
        self.query_one("#course-progress", Static).update(course_line(self.progress))
        self._fill_table()

    def _fill_table(self) -> None:
        t = self.query_one("#workshops", DataTable)
        row = t.cursor_row
        rows: list[dict[str, Text]] = []
        level, gpu = None, course_app(self).gpu
        for w in catalog.workshops():
            entry = self.progress.get(w.id)
            rows.append(
                {
                    "level": Text(w.level.capitalize() if w.level != level else "", style="bold"),
                    "code": Text(w.code),
                    "title": Text(w.title),
                    "device": Text(device_text(w, gpu)),
                    "device_short": Text(device_text(w, gpu, "short")),
                    "device_tiny": Text(device_text(w, gpu, "tiny")),
                    "prerequisite": Text(w.prerequisite),
                    "sessions": Text(w.sessions),
                    "status": status_text(entry, file_hash=self.file_hashes.get(w.id)),
                    "status_short": status_text(entry, when=False, file_hash=self.file_hashes.get(w.id)),
                }
            )
            level = w.level
        layout = self._fitting(rows, self.size.width or self.app.size.width)
        if layout != self.list_layout or not t.columns:
            t.clear(columns=True)
            for label, key in COLUMNS:
                if key not in layout[0]:
                    t.add_column(label, key=key)
        else:
            t.clear()
        self.list_layout = layout
        for w, cells in zip(catalog.workshops(), rows):
            cells["status"] = cells["status" if layout[1] else "status_short"]
            cells["device"] = cells[DEVICE_CELL[layout[2]]]
            t.add_row(*(cells[k] for _, k in COLUMNS if k not in layout[0]), key=w.id)
        if t.row_count:
            t.move_cursor(row=min(row, t.row_count - 1))
            self._details(self._selected_id())

    @staticmethod
    def _fitting(rows: list, width: int) -> tuple:
        """The widest layout whose columns (each as wide as its widest cell, one space
        of padding either side, the table's margins) fit ``width``; "Your status" is
        never cut or scrolled off."""
        for left_out, when, device in LAYOUTS:
            need = 2 + 2  # the table's margins, and room for a scroll bar
            shown = {"status": "status" if when else "status_short"}
            shown["device"] = DEVICE_CELL[device]
            for label, key in COLUMNS:
                if key in left_out:
                    continue
                cells = [r[shown.get(key, key)] for r in rows]
                need += 2 + max(len(label), *(c.cell_len for c in cells))
            if need <= width:
                return left_out, when, device
        return LAYOUTS[-1]

    def _selected_id(self):
        t = self.query_one("#workshops", DataTable)
        if not t.row_count:
            return None
        return t.coordinate_to_cell_key(Coordinate(t.cursor_row, 0)).row_key.value

    def _details(self, workshop_id) -> None:
        if not workshop_id:
            return
        w = catalog.get(workshop_id)
        entry = self.progress.get(w.id)
        text = Text.assemble(
            (f"{w.code} {w.title}", "bold"),
            f"  ({w.level}; {device_text(w, course_app(self).gpu, 'details')})\n",
            ("Deliverable: ", "bold"),
            f"{w.deliverable}\n",
            ("Prerequisite: ", "bold"),
            f"{w.prerequisite}   ",
            ("Suggested sessions: ", "bold"),
            f"{w.sessions}   ",
            ("Status: ", "bold"),
            status_text(entry, file_hash=self.file_hashes.get(w.id)),
        )
        best, hints = best_text(entry), ws.hints_shown(self.progress, w.id)
        if best:
            text.append("\n")
            text.append("Best result: ", style="bold")
            text.append(best)
        if hints:  # a line of its own: never "4 of" at the end of one line and "4" below
            text.append("\n")
            text.append("Hints revealed: ", style="bold")
            text.append(f"{hints} of {len(w.hints)}")
        self.query_one("#workshop-details", Static).update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None:
            self._details(event.row_key.value)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key is not None and event.row_key.value is not None:  # rows are keyed by id
            course_app(self).open_workshop(event.row_key.value)

    def action_documents(self) -> None:
        """The glossary, the experiment worksheet and the capstones (d)."""
        self.app.push_screen(DocumentsScreen())

    def action_open_selected(self) -> None:
        wid = self._selected_id()
        if wid:
            course_app(self).open_workshop(wid)
