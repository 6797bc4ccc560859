"""The change the repair search found (key f): the sentence that names the mistake, the
line before and after, and the whole change as a diff; scrollable, readable at 80x24.
The learner's file is not changed: they make the change in their editor."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.host import closed, once_open
from tui.widgets.repair import found_sentence


def diff_text(diff: str) -> Text:
    """A unified diff, its removed lines red, its added lines green, its hunks marked."""
    text = Text()
    for line in diff.rstrip("\n").splitlines():
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = ""
        text.append(line + "\n", style=style)
    text.rstrip()
    return text


def change_text(repair: dict) -> Text:
    """Everything the screen says of ``repair`` (a found one)."""
    text = Text(found_sentence(repair), style="bold")
    line = repair.get("line")
    before, after = repair.get("before") or "", repair.get("after") or ""
    if before or after:
        where = f"Line {line}" if isinstance(line, int) else "The line"
        text.append(f"\n\n{where} of your file, now:\n", style="dim")
        for row in before.splitlines() or [""]:
            text.append(f"- {row}\n", style="red")
        text.append("With the change:", style="dim")
        for row in after.splitlines() or [""]:
            text.append(f"\n+ {row}", style="green")
    if repair.get("diff"):
        text.append("\n\nThe whole change:\n", style="dim")
        text.append_text(diff_text(repair["diff"]))
    tried, seconds = repair.get("tried"), repair.get("seconds")
    found = []
    if isinstance(tried, int):
        found.append(f"tried {tried} change{'' if tried == 1 else 's'}")
    if isinstance(seconds, (int, float)):
        found.append(f"in {seconds:.1f} s")
    text.append(
        "\n\nEvery check passes with this change"
        + (f" (the search {' '.join(found)})" if found else "")
        + ". Your file is not changed: make the change in your editor, and save.",
        style="dim",
    )
    return text


class RepairScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    RepairScreen { align: center middle; }
    #repair-box { width: 90%; max-width: 110; height: 90%; border: thick $accent; background: $surface; }
    #repair-scroll { height: 1fr; padding: 0 1; }
    #repair-text { width: 100%; }  /* wrapped: long code lines continue on the next line */
    #repair-footer { color: $text-muted; padding: 0 1; height: auto; }
    """

    BINDINGS = [Binding("escape,f,q", "close", "Close", id="repair-close")]

    def __init__(self, repair: dict, **kwargs) -> None:
        super().__init__(**kwargs)
        self.repair = repair

    def compose(self) -> ComposeResult:
        with Vertical(id="repair-box"):
            with VerticalScroll(id="repair-scroll"):
                yield Static(change_text(self.repair), id="repair-text")
            yield Static("escape/f close · arrows/pgup/pgdn scroll", id="repair-footer")

    def on_mount(self) -> None:
        if not closed(self):  # closed before it opened (keys at a quick pace)
            self.query_one("#repair-box").border_title = "The smallest change that makes every check pass"
            self.query_one("#repair-scroll").focus()

    def action_close(self) -> None:
        once_open(self, lambda: self.dismiss(None))
