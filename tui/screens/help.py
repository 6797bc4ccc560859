"""The help screen (``?``): keys first, then commands and the rest, from tui/USAGE.md."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.host import closed, once_open
from tui.widgets.markdown import CourseMarkdown

USAGE = Path(__file__).resolve().parent.parent / "USAGE.md"


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    #help-box { width: 90%; height: 90%; border: thick $primary; background: $surface; }
    #help-text { height: 1fr; overflow-y: auto; }
    #help-footer { color: $text-muted; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help-close")]

    def compose(self) -> ComposeResult:
        try:
            text = USAGE.read_text(encoding="utf-8")
        except OSError:
            text = "# Help\n\ntui/USAGE.md is missing."
        with Vertical(id="help-box"):
            with VerticalScroll(id="help-text"):
                yield CourseMarkdown(text)
            yield Static("escape close · arrows/pgup/pgdn scroll", id="help-footer")

    def on_mount(self) -> None:
        if not closed(self):  # closed before it opened
            self.query_one("#help-text").focus()  # the arrows scroll it; it opens on the keys

    def action_close(self) -> None:
        once_open(self, lambda: self.dismiss(None))
