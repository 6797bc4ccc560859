"""A yes/no question in a modal dialog; dismisses with True or False."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tui.host import closed, once_open


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    #dialog { width: 64; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    #question { height: auto; margin-bottom: 1; }
    #buttons { height: auto; align-horizontal: right; }
    #buttons Button { margin-left: 2; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm-yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm-no"),
    ]

    def __init__(self, question: str, yes: str = "Yes", no: str = "Cancel", **kwargs) -> None:
        super().__init__(**kwargs)
        self.question, self.yes, self.no = question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.question, id="question")
            with Horizontal(id="buttons"):
                yield Button(f"{self.yes} (y)", variant="warning", id="yes")
                yield Button(f"{self.no} (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        if not closed(self):  # closed before it opened
            self.query_one("#no", Button).focus()  # the safe answer is the default

    def on_button_pressed(self, event: Button.Pressed) -> None:
        yes = event.button.id == "yes"
        once_open(self, lambda: self.dismiss(yes))

    def action_answer(self, value: bool) -> None:
        once_open(self, lambda: self.dismiss(value))
