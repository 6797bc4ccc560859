"""The line under the results about the repair search (tui.repair_child): while it runs,
how far it got; when it found the smallest change that makes every check pass, the
sentence that names the mistake (the lesson of it) and the key that shows the change;
when it found none, why, dimmed.  It belongs to one run: a new run hides it.

Every state is wrapped to the line's width and to a number of lines; text that would not
fit ends in an ellipsis, never cut mid-sentence without one."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text
from textual.widgets import Static

LOOKING = "Looking for the smallest change that makes every check pass"
LOOKING_SHORT = "Looking for a fix"  # where the whole sentence and its count do not fit
# lines of text: the sentence of a found repair (the line under it says the key), a note,
# the progress; in a compact terminal while the lesson has the focus, two lines in all
SAYS_LINES, NOTE_LINES, STRIP_LINES = 3, 3, 2
ELLIPSIS = "…"


def fit(text: Text, width: int, lines: int, console: Console | None = None) -> Text:
    """``text`` wrapped to ``width`` columns in at most ``lines`` lines; the last line
    shown ends in an ellipsis when some was left out."""
    width, lines = max(width, 2), max(lines, 1)
    console = console or Console(width=width, color_system=None)
    wrapped = list(text.wrap(console, width, overflow="fold"))
    for row in wrapped:
        row.rstrip()
    if len(wrapped) > lines:
        wrapped = wrapped[:lines]
        last = wrapped[-1]
        last.truncate(width - len(ELLIPSIS))
        last.rstrip()
        last.append(ELLIPSIS)
    return Text("\n").join(wrapped)


def searching_text(tried: int | None, candidates: int | None, width: int = 0, lines: int = 0) -> Text:
    """How far the search got; the count on a line of its own where the line would not
    hold both (a count is never split), and the short sentence where the whole one would
    leave the count no room in ``lines`` lines of ``width``."""
    if not candidates:
        return Text(f"{LOOKING} ...")
    counted = f"... tried {tried or 0} of {candidates}"
    for looking in (LOOKING, LOOKING_SHORT):
        apart = width and len(looking) + 1 + len(counted) > width
        text = Text(looking + ("\n" if apart else " ") + counted)
        if not (width and lines) or len(Text(looking).wrap(Console(width=width), width)) + apart <= lines:
            return text
    return text


def found_sentence(repair: dict) -> str:
    """The teaching sentence of a found repair (the search's own ``says``)."""
    says = repair.get("says") or ""
    if says:
        return says
    line, kind = repair.get("line"), repair.get("kind") or "one"
    where = f"line {line}: " if isinstance(line, int) else ""
    return f"{where}a change of kind {kind} makes every check pass"


def note_of(repair: dict | None, error: str = "") -> str:
    """What a search that found nothing says (its note), or why it said nothing."""
    if repair is not None and repair.get("status") == "reproduced":  # no edit of the file
        return f"{repair.get('says') or ''}. {repair.get('note') or ''}".strip(" .") + "."
    if repair is not None:
        note = repair.get("note") or ""
        if note:
            return note
        return (
            "the search ran out of time before it found a change that makes every check pass"
            if repair.get("status") == "budget"
            else "no small change made every check pass"
        )
    return f"No fix suggested: {error}" if error else ""


class RepairLine(Static):
    """Hidden until a search starts.  ``searching(tried, candidates)``, ``found(repair)``,
    ``nothing(repair, error)`` and ``hide()`` set what it says; ``refit()`` again for a new
    width or a new share of the height (the screen's layout calls it)."""

    DEFAULT_CSS = """
    RepairLine {
        height: auto;
        padding: 0 1;
        border-top: solid $accent 40%;
        display: none;
    }
    RepairLine.searching { color: $text-muted; }
    RepairLine.found { background: $accent 12%; }
    RepairLine.nothing { color: $text-muted; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.state = ""  # "", "searching", "found", "nothing"
        self.said: tuple = ()

    def _set(self, state: str, *said) -> None:
        self.state, self.said = state, said
        for name in ("searching", "found", "nothing"):
            self.set_class(name == state, name)
        self.display = bool(state)
        self.refit()

    def searching(self, tried: int | None = None, candidates: int | None = None) -> None:
        self._set("searching", tried, candidates)

    def found(self, repair: dict) -> None:
        self._set("found", repair)

    def nothing(self, repair: dict | None, error: str = "") -> None:
        if not note_of(repair, error):
            self.hide()
            return
        self._set("nothing", repair, error)

    def hide(self) -> None:
        self._set("")

    @property
    def strip(self) -> bool:
        """A compact terminal while the lesson has the focus: a strip of the results side."""
        screen = self.screen if self.is_attached else None
        return bool(screen and screen.has_class("-compact") and not screen.has_class("-results-focus"))

    def text(self, width: int) -> Text:
        """What it says at ``width`` columns of text."""
        console = self.app.console if self.is_attached else None
        strip = self.strip
        if self.state == "searching":
            tried, candidates = self.said
            lines = STRIP_LINES if strip else NOTE_LINES
            return fit(searching_text(tried, candidates, width, lines), width, lines, console)
        if self.state == "found":
            says = fit(
                Text(found_sentence(self.said[0]), style="bold"), width, 1 if strip else SAYS_LINES, console
            )
            return Text.assemble(says, "\n", "press ", ("f", "bold reverse"), " to see the change")
        if self.state == "nothing":
            return fit(Text(note_of(*self.said)), width, STRIP_LINES if strip else NOTE_LINES, console)
        return Text("")

    def refit(self) -> None:
        if not self.is_attached:
            return
        width = self.content_size.width or max(self.size.width - 2, 0) or self.app.size.width - 2
        self.update(self.text(width))

    def on_resize(self, event) -> None:
        self.refit()
