"""A line of state in words, set from outside: ``text`` says it, ``look`` is a CSS class
(good, bad, running, ...) that the panel holding the line colours, and ``keys`` (what a
key does now) shows after the text only while ``keys_shown``."""

from __future__ import annotations

from textual.reactive import reactive
from textual.widget import Widget


class StatusLine(Widget):
    DEFAULT_CSS = """
    StatusLine { height: auto; }
    """

    text: reactive[str] = reactive("", layout=True)
    look: reactive[str] = reactive("")
    keys: reactive[str] = reactive("", layout=True)
    keys_shown: reactive[bool] = reactive(False, layout=True)

    def __init__(self, text: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.set_reactive(StatusLine.text, text)

    def watch_look(self, look: str) -> None:
        self.set_classes(look)

    def render(self) -> str:
        return self.text + (self.keys if self.keys_shown else "")
