"""Hints revealed one tier at a time, from a nudge to nearly the answer.  Each tier is
its own Markdown block; a newly revealed tier is scrolled into view."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widget import Widget

from tui.widgets.markdown import CourseMarkdown


class HintCounter(Widget):
    """How many tiers are on show, and what h does next."""

    DEFAULT_CSS = """
    HintCounter {
        height: auto;
        dock: top;
        text-style: bold;
        color: $accent;
        background: $surface;
        padding: 0 0 1 0;
    }
    """

    shown: reactive[int] = reactive(0, layout=True)

    def __init__(self, total: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.total = total

    def render(self) -> str:
        n = self.total
        if not n:
            return "This workshop has no hints."
        if not self.shown:
            return f"{n} hints, from a nudge to nearly the answer. Press h for the first."
        more = "press h for the next" if self.shown < n else "that was the last one"
        return f"hint {self.shown} of {n} ({more})"


class HintsPanel(VerticalScroll):
    DEFAULT_CSS = """
    HintsPanel { padding: 0 1; }
    """

    shown: reactive[int] = reactive(0)  # tiers on show

    def __init__(self, tiers: list, shown: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.tiers = list(tiers)
        self.set_reactive(HintsPanel.shown, max(0, min(int(shown), len(self.tiers))))  # revealed before

    def compose(self) -> ComposeResult:
        yield HintCounter(len(self.tiers), id="hint-counter").data_bind(HintsPanel.shown)
        for i in range(self.shown):
            yield CourseMarkdown(self.tiers[i], id=f"hint-{i + 1}", classes="hint")

    def shown_text(self) -> str:
        """The markdown of every tier on show, in order."""
        return "\n\n".join(self.tiers[: self.shown])

    def reveal_next(self) -> bool:
        """Show one more tier and scroll it into view; False when all are shown."""
        if self.shown >= len(self.tiers):
            return False
        self.shown += 1
        block = CourseMarkdown(self.tiers[self.shown - 1], id=f"hint-{self.shown}", classes="hint")
        self.mount(block)
        # once laid out: the new tier's top at the top of the panel
        self.call_after_refresh(lambda: self.call_after_refresh(self._scroll_to_tier, block))
        return True

    def _scroll_to_tier(self, block: CourseMarkdown) -> None:
        if self.is_attached and block.is_attached:  # the screen may have closed meanwhile
            self.scroll_to_widget(block, top=True, animate=False)
