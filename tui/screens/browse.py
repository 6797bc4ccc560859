"""Choose a workshop: levels, the six workshops, and the learner's progress."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from checks import workspace as ws
from workshops import catalog

STATUS_LOOK = {
    "passed": ("passed", "bold green"),
    "failing": ("failing", "bold red"),
    "todo": ("TODO", "bold yellow"),
    "unavailable": ("unavailable here", "dim"),
}


def status_text(entry) -> Text:
    if not isinstance(entry, dict) or "status" not in entry:
        return Text("not started", style="dim")
    word, style = STATUS_LOOK.get(str(entry["status"]), (str(entry["status"]), ""))
    text = Text(word, style=style)
    if entry.get("when"):
        text.append(f"  {entry['when']}", style="dim")
    return text


class BrowseScreen(Screen[None]):
    BINDINGS = [
        Binding("enter", "open_selected", "Open", id="open", show=True),
        Binding("q", "app.quit", "Quit", id="quit"),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.progress: dict = {}
        self.warning = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Intermediate and advanced kernel workshops. Choose one with the arrow "
                     "keys or the mouse and press Enter. Budget 2-4 sessions of 60-90 minutes "
                     "for an intermediate workshop, 3-5 for an advanced one.", id="intro")
        yield Static("", id="progress-warning")
        yield DataTable(id="workshops", cursor_type="row", zebra_stripes=True)
        yield Static("", id="workshop-details")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "choose a workshop"
        t = self.query_one("#workshops", DataTable)
        for label, key in (("Level", "level"), ("Code", "code"), ("Workshop", "title"),
                           ("Device", "device"), ("Prerequisite", "prerequisite"),
                           ("Sessions", "sessions"), ("Your status", "status")):
            t.add_column(label, key=key)
        self.refresh_progress()
        t.focus()

    def on_screen_resume(self) -> None:
        if self.is_mounted and self.query("#workshops"):
            self.refresh_progress()

    def refresh_progress(self) -> None:
        self.progress, warning = ws.load_progress(self.app.workspace)
        if warning:                  # keep it visible: the file was set aside, not lost
            self.warning = warning
        warn = self.query_one("#progress-warning", Static)
        warn.update(f"Warning: {self.warning}" if self.warning else "")
        warn.display = bool(self.warning)
        t = self.query_one("#workshops", DataTable)
        row = t.cursor_row
        t.clear()
        level = None
        for w in catalog.workshops():
            shown = w.level.capitalize() if w.level != level else ""
            level = w.level
            t.add_row(Text(shown, style="bold"), w.code, w.title, w.device, w.prerequisite,
                      w.sessions, status_text(self.progress.get(w.id)), key=w.id)
        if t.row_count:
            t.move_cursor(row=min(row, t.row_count - 1))
            self._details(self._selected_id())

    def _selected_id(self):
        t = self.query_one("#workshops", DataTable)
        if not t.row_count:
            return None
        return t.coordinate_to_cell_key((t.cursor_row, 0)).row_key.value

    def _details(self, workshop_id) -> None:
        if not workshop_id:
            return
        w = catalog.get(workshop_id)
        entry = self.progress.get(w.id)
        text = Text.assemble((f"{w.code} {w.title}", "bold"), f"  ({w.level}, {w.device})\n",
                             ("Deliverable: ", "bold"), f"{w.deliverable}\n",
                             ("Prerequisite: ", "bold"), f"{w.prerequisite}   ",
                             ("Suggested sessions: ", "bold"), f"{w.sessions}   ",
                             ("Status: ", "bold"), status_text(entry))
        self.query_one("#workshop-details", Static).update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None:
            self._details(event.row_key.value)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key is not None:
            self.app.open_workshop(event.row_key.value)

    def action_open_selected(self) -> None:
        wid = self._selected_id()
        if wid:
            self.app.open_workshop(wid)
