"""The course's documents (``d``): the glossary, the experiment worksheet and the
capstones, read from workshops/*.md, one at a time over the screen it was opened from
(1, 2, 3 switch; escape closes).  Opened from a workshop, the glossary shows first the
terms that workshop's lesson uses (glossary_for)."""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static, Tab, Tabs

from tui.host import closed, once_open
from tui.widgets.markdown import CourseViewer
from workshops import catalog

# (name, tab label, file under workshops/); the keys 1, 2, 3 in this order
DOCUMENTS = (
    ("glossary", "Glossary", "glossary.md"),
    ("worksheet", "Experiment worksheet", "worksheet.md"),
    ("capstones", "Capstones", "capstones.md"),
)
KEYS_LINE = "1 2 3 switch · arrows/pgup/pgdn scroll · escape close"
ENTRY = re.compile(r"\*\*(?P<term>[^*\n]+?)\.\*\*")  # a glossary paragraph: **Term.** text


def read_document(name: str) -> str:
    file = next(f for n, _, f in DOCUMENTS if n == name)
    try:
        return (catalog.ROOT / file).read_text(encoding="utf-8")
    except OSError:
        return f"# {file}\n\n_workshops/{file} is missing._"


# --- the glossary's terms ---
def glossary_entries(markdown: str) -> tuple:
    """(the text before the first term, [(term, its paragraphs)]): a term's paragraph
    starts with ``**Term.**``; a paragraph that does not belongs to the term above,
    unless a heading came between (a heading and what follows it belong to no term)."""
    head, entries, inside = [], [], False
    for paragraph in re.split(r"\n[ \t]*\n", markdown.strip()):
        found = ENTRY.match(paragraph)
        if found:
            entries.append((found["term"].strip(), paragraph))
            inside = True
        elif paragraph.startswith("#") or not inside:
            inside = False
            if not entries:
                head.append(paragraph)
        else:
            term, text = entries[-1]
            entries[-1] = (term, f"{text}\n\n{paragraph}")
    return "\n\n".join(head), entries


def term_forms(term: str) -> list:
    """The words a text may use for ``term``: each of its names ("Block / tile": block,
    tile), without a modifier in parentheses ("Online (streaming) normalization":
    online normalization), and a closing one's words ("VJP (vector-Jacobian product)":
    VJP, vector-Jacobian product)."""
    forms = []
    for name in term.split(" / "):
        forms.append(re.sub(r"\s*\([^)]*\)", "", name).strip())
        closing = re.search(r"\(([^)]+)\)\s*$", name)
        if closing:
            forms.append(closing[1].strip())
    return [f for f in forms if f]


def uses_term(text: str, term: str) -> bool:
    """``text`` names ``term`` in one of its forms, in any case, at the start of a word
    (a plural, "masked" or a line break inside the words count)."""
    for form in term_forms(term):
        words = r"\s+".join(re.escape(w) for w in form.split())
        if re.search(rf"(?<!\w){words}", text, re.IGNORECASE):
            return True
    return False


def lesson_terms(glossary: str, lesson: str) -> list:
    """The glossary's terms that ``lesson`` uses, in the glossary's order."""
    return [term for term, _ in glossary_entries(glossary)[1] if uses_term(lesson, term)]


def glossary_for(glossary: str, workshop) -> str:
    """The glossary with the terms ``workshop``'s lesson uses first, under a heading
    that names the workshop, then every other term; as written where it uses none."""
    head, entries = glossary_entries(glossary)
    used = set(lesson_terms(glossary, workshop.lesson or ""))
    if not used:
        return glossary
    first = [text for term, text in entries if term in used]
    rest = [text for term, text in entries if term not in used]
    parts = [
        head,
        f"## In the lesson of {workshop.code} {workshop.title}",
        f"_The terms its lesson uses ({len(first)}); every other term follows._",
        *first,
    ]
    if rest:
        parts += ["## Every other term", *rest]
    return "\n\n".join(parts) + "\n"


class DocumentsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    DocumentsScreen { align: center middle; }
    #documents-box { width: 90%; height: 90%; border: thick $primary; background: $surface; }
    #documents-text { height: 1fr; }
    #documents-footer { color: $text-muted; padding: 0 1; height: auto; }
    """
    AUTO_FOCUS = "#documents-text CourseMarkdown"  # the arrows scroll the text
    BINDINGS = [
        Binding("escape,q,d", "close", "Close", id="documents-close"),
        Binding("1", "show('glossary')", "Glossary", id="documents-glossary"),
        Binding("2", "show('worksheet')", "Worksheet", id="documents-worksheet"),
        Binding("3", "show('capstones')", "Capstones", id="documents-capstones"),
    ]

    def __init__(self, start: str = "glossary", workshop=None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.workshop = workshop  # opened from this workshop: its lesson's terms first
        self.shown = start if start in {n for n, _, _ in DOCUMENTS} else DOCUMENTS[0][0]

    def text_of(self, name: str) -> str:
        text = read_document(name)
        if name == "glossary" and self.workshop is not None:
            return glossary_for(text, self.workshop)
        return text

    def compose(self) -> ComposeResult:
        with Vertical(id="documents-box") as box:
            box.border_title = "Course documents"
            tabs = Tabs(
                *(Tab(f"{i} {label}", id=name) for i, (name, label, _) in enumerate(DOCUMENTS, 1)),
                active=self.shown,
                id="documents-tabs",
            )
            tabs.can_focus = False  # the focus stays on the text: the arrows scroll it
            yield tabs
            yield CourseViewer(self.text_of(self.shown), show_table_of_contents=False, id="documents-text")
            yield Static(KEYS_LINE, id="documents-footer")

    @property
    def viewer(self) -> CourseViewer:
        return self.query_one("#documents-text", CourseViewer)

    async def action_show(self, name: str) -> None:
        if closed(self) or name == self.shown:
            return
        self.shown = name
        self.query_one(Tabs).active = name
        viewer = self.viewer
        await viewer.document.update(self.text_of(name))
        if not closed(self):
            viewer.scroll_home(animate=False)
            viewer.document.focus(scroll_visible=False)

    async def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        if event.tab.id:  # a click on a tab
            await self.action_show(event.tab.id)

    def action_close(self) -> None:
        once_open(self, lambda: self.dismiss(None))
