"""The completion moment: every check that can run here passes -- say so in the
outcome's own words (passed, or passed here and what runs elsewhere), suggest the next
workshop by its prerequisites, and point at the benchmark where there is a GPU to time on.
It belongs to the run that made it: a new run hides it (WorkshopScreen.run_replaced)."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from checks.judging import outcome_line


def completion_text(workshop, records: list, next_up: list, interpreted: bool, gpu: bool) -> Text:
    """Most important first: a small terminal shows the first two lines only."""
    word, _, rest = outcome_line(records).partition(": ")
    text = Text.assemble((f"{word.capitalize()}: ", "bold green"), f"{workshop.code}: {rest}.")
    if next_up:
        first = next_up[0]
        text.append("\nNext: ")
        text.append("n", style="bold reverse")
        text.append(f" opens {first.code} {first.title} (needs {first.prerequisite}).")
        if len(next_up) > 1:
            text.append(
                "\nAlso ready: " + ", ".join(f"{w.code} {w.title}" for w in next_up[1:]) + ".", style="dim"
            )
    else:
        text.append("\nNo further workshop is ready yet: the list (escape) shows the course.")
    if workshop.gpu:
        if interpreted or not gpu:
            text.append(
                f"\nOn a machine with a CUDA GPU, time it: python -m checks.benchmark "
                f"--op {workshop.id} (or b in this app).",
                style="dim",
            )
        else:
            text.append("\nTimings run below while benchmarks are on (b).", style="dim")
    text.append("\nx: the answer explained, to compare with yours.", style="dim")
    return text


class CompletionPanel(Static):
    """Shown whole; a compact terminal gives it two lines, so there it shows the first
    two lines only (the outcome and the next step), never a cut third."""

    DEFAULT_CSS = """
    CompletionPanel {
        height: auto;
        padding: 0 1;
        background: $success 15%;
        border-top: solid $success;
        border-bottom: solid $success;
        overflow: hidden hidden;
    }
    """

    # completion_text's arguments; () hides the panel
    said: reactive[tuple] = reactive((), always_update=True)

    def show(self, workshop, records: list, next_up: list, interpreted: bool, gpu: bool) -> None:
        self.said = (workshop, records, next_up, interpreted, gpu)

    def hide(self) -> None:
        self.said = ()

    def watch_said(self, said: tuple) -> None:
        self.display = bool(said)
        self._render_said()

    def _render_said(self) -> None:
        if not self.said:
            self.update("")
            return
        text = completion_text(*self.said)
        if self.screen.has_class("-compact"):
            text = Text("\n").join(text.split("\n")[:2])
        self.update(text)

    def on_resize(self, event) -> None:
        self._render_said()
