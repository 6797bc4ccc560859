"""Hints revealed one tier at a time, from a nudge to nearly the answer."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown, Static


class HintsPanel(VerticalScroll):
    def __init__(self, tiers: list, **kwargs) -> None:
        super().__init__(**kwargs)
        self.tiers = list(tiers)
        self.shown = 0

    def compose(self) -> ComposeResult:
        yield Static(self._counter(), id="hint-counter")
        yield Markdown("", id="hint-text")

    def _counter(self) -> str:
        n = len(self.tiers)
        if not n:
            return "This workshop has no hints."
        if not self.shown:
            return f"{n} hints, from a nudge to nearly the answer. Press h for the first."
        more = "press h for the next" if self.shown < n else "that was the last one"
        return f"hint {self.shown} of {n} ({more})"

    def reveal_next(self) -> bool:
        """Show one more tier; False when every tier is already shown."""
        if self.shown >= len(self.tiers):
            return False
        self.shown += 1
        self.query_one("#hint-counter", Static).update(self._counter())
        self.query_one("#hint-text", Markdown).update("\n\n".join(self.tiers[: self.shown]))
        self.scroll_end(animate=False)
        return True
