"""The failure view (Enter on a result row): everything one check said, scrollable --
the whole message, where a hang was stuck, the map of wrong elements, why it matters --
and a key that jumps to the lesson section it points at."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.host import closed, once_open
from tui.widgets.record_text import lesson_section, story


class FailureScreen(ModalScreen[str]):
    """Dismisses with "lesson" when the learner asks for the lesson section, else ""."""

    DEFAULT_CSS = """
    FailureScreen { align: center middle; }
    #failure-box { width: 90%; max-width: 110; height: 90%; border: thick $error; background: $surface; }
    #failure-scroll { height: 1fr; padding: 0 1; }
    #failure-text { width: 100%; }  /* wrapped: the whole message is readable */
    #failure-footer { color: $text-muted; padding: 0 1; height: auto; }
    """

    BINDINGS = [
        Binding("escape,q,enter", "close", "Close", id="failure-close"),
        Binding("l", "lesson", "Lesson section", id="failure-lesson"),
    ]

    def __init__(self, record, change: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.record = record
        self.change = change
        self.section = lesson_section(record)  # the record's own ("" for a timeout, a crash)

    def compose(self) -> ComposeResult:
        with Vertical(id="failure-box"):
            with VerticalScroll(id="failure-scroll"):
                yield Static(story(self.record, self.change), id="failure-text")
            keys = "escape close · arrows/pgup/pgdn scroll"
            if self.section:
                keys = f'l go to the lesson section "{self.section}" · ' + keys
            yield Static(keys, id="failure-footer")

    def on_mount(self) -> None:
        if not closed(self):  # closed before it opened (keys at a quick pace)
            self.query_one("#failure-scroll").focus()

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "lesson":
            return bool(self.section)
        return True

    def action_close(self) -> None:
        once_open(self, lambda: self.dismiss(""))

    def action_lesson(self) -> None:
        once_open(self, lambda: self.dismiss("lesson"))
