"""The answer's explanation, on its own screen (escape goes back)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, MarkdownViewer


class ExplanationScreen(Screen[None]):
    BINDINGS = [Binding("escape,x", "close", "Back", id="explanation-close")]

    def __init__(self, workshop, **kwargs) -> None:
        super().__init__(**kwargs)
        self.workshop = workshop

    def compose(self) -> ComposeResult:
        yield Header()
        text = self.workshop.explanation or "_This workshop has no explanation yet._"
        yield MarkdownViewer(text, show_table_of_contents=True, id="explanation")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.workshop.code} {self.workshop.title}: the answer explained"

    def action_close(self) -> None:
        self.dismiss(None)
