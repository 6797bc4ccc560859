"""The course's documents in the app (``d``): the glossary, the experiment worksheet and
the capstones open from the list and from a workshop, readable at 80x24 (wrapped,
nothing cut, scrolled with the keys), 1/2/3 switch between them, escape closes; opened
from a workshop, the glossary shows the terms its lesson uses first; the key is in the
list's footer, the help (tui/USAGE.md) and the README."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tui.widgets.footer import is_key
from workshops import catalog

from readable_helpers import drawn, lost_text, source_text
from tui_helpers import wait_for

A1 = catalog.get("online_normalizer")
REPO = Path(__file__).resolve().parents[2]
# (key, a phrase of the document's first lines, one from near its end)
DOCUMENTS = [
    ("1", "The fixed-size piece of a tensor", "The independent reference the checks compare with"),
    ("2", "Copy this block for every change you measure", "Worked example: fp16 strided softmax"),
    ("3", "Each capstone extends a reference answer", "Per-call cost at the floor"),
]


def run(coro):
    return asyncio.run(coro)


def shown_text(screen) -> str:
    """Every leaf of the open document's text, in order, as one string."""
    leaves = (source_text(w) for w in screen.viewer.document.walk_children() if not w.children)
    return " ".join(" ".join(t.split()) for t in leaves if t)


async def documents_screen(pilot):
    from tui.screens.documents import DocumentsScreen

    return await wait_for(
        pilot, lambda: isinstance(pilot.app.screen, DocumentsScreen) and pilot.app.screen, 5, "the documents"
    )


async def read_each_document(pilot, screen) -> None:
    """1, 2, 3 show each document, whole and readable at the app's size; the arrows and
    pgdn scroll it; the tabs name the three with their keys."""
    from textual.widgets import Tab

    box = screen.query_one("#documents-box").content_region
    tabs = [(t.label.plain, t.region) for t in screen.query(Tab)]
    assert [label for label, _ in tabs] == ["1 Glossary", "2 Experiment worksheet", "3 Capstones"]
    assert all(box.contains_region(region) for _, region in tabs), (box, tabs)  # none cut
    assert "escape close" in " ".join(drawn(screen.query_one("#documents-footer")))
    for key, first, last in DOCUMENTS:
        await pilot.press(key)
        await wait_for(pilot, lambda: first in shown_text(screen) and last in shown_text(screen), 5, key)
        await pilot.pause(0.3)
        viewer = screen.viewer
        assert pilot.app.focused is viewer.document  # the keys scroll the text
        # the text gets the box's room (the tabs and the line of keys take 3 rows)
        assert viewer.region.height >= box.height - 3 and box.height >= pilot.app.size.height - 6
        assert viewer.document.size.width <= pilot.app.size.width - 4 and viewer.max_scroll_x == 0
        assert not lost_text(viewer.document)  # every paragraph and code line whole
        assert viewer.scroll_y == 0 and viewer.max_scroll_y > 0
        await pilot.press("pagedown", "down")
        await pilot.pause()
        assert viewer.scroll_y > 0


def test_d_opens_the_documents_from_the_list_at_80x24(make_app):
    from tui.screens.browse import BrowseScreen

    async def body():
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            # the list says they exist: its footer shows the key, whole, on the screen
            keys = [w for w in app.screen.query_one("Footer").walk_children() if is_key(w)]
            shown = {(k.key_display, k.description): k.region for k in keys}
            assert ("d", "Documents") in shown, list(shown)
            assert app.screen.region.contains_region(shown["d", "Documents"])
            await pilot.press("d")
            screen = await documents_screen(pilot)
            assert screen.workshop is None
            await read_each_document(pilot, screen)
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, BrowseScreen), 5, "the list")
            await pilot.press("d")  # again, and d closes it too
            await documents_screen(pilot)
            await pilot.press("d")
            await wait_for(pilot, lambda: isinstance(app.screen, BrowseScreen), 5, "the list")

    run(body())


def test_d_opens_the_documents_from_a_workshop_its_terms_first(make_app):
    from tui.screens.workshop import WorkshopScreen

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(80, 24)) as pilot:
            workshop = await wait_for(
                pilot, lambda: isinstance(app.screen, WorkshopScreen) and app.screen, 10, "A1"
            )
            await pilot.pause(0.5)
            await pilot.press("d")
            screen = await documents_screen(pilot)
            assert screen.workshop is A1
            text = shown_text(screen)
            # A1's lesson uses three of the terms: they come first, under a heading that
            # names the workshop, then every other term (Grid is second in the file)
            order = [
                f"In the lesson of {A1.code} {A1.title}",
                "Block / tile.",
                "Program / program id.",
                "Online (streaming) normalization.",
                "Every other term",
                "Grid.",
                "Oracle.",
            ]
            at = [text.find(phrase) for phrase in order]
            assert -1 not in at and at == sorted(at), list(zip(order, at))
            await read_each_document(pilot, screen)
            await pilot.press("1")  # back to the glossary: still this lesson's terms first
            await wait_for(pilot, lambda: "In the lesson of" in shown_text(screen), 5, "the glossary")
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is workshop, 5, "the workshop")

    run(body())


def test_the_glossary_terms_and_a_lessons_terms():
    from tui.screens.documents import glossary_entries, glossary_for, lesson_terms, read_document

    glossary = read_document("glossary")
    head, entries = glossary_entries(glossary)
    terms = [t for t, _ in entries]
    assert head == "# Glossary" and len(terms) == glossary.count("\n**") == 19
    assert terms[:3] == ["Block / tile", "Program / program id", "Grid"] and terms[-1] == "Oracle"
    assert lesson_terms(glossary, A1.lesson) == [
        "Block / tile",
        "Program / program id",
        "Online (streaming) normalization",
    ]
    # a closing parenthesis names the term too; a name counts in the plural or a new line
    assert lesson_terms(glossary, "the vector-Jacobian\nproduct; strided loads") == [
        "Stride",
        "VJP (vector-Jacobian product)",
    ]
    assert lesson_terms(glossary, "nothing here") == []
    # every entry once, whatever the workshop; as written where a lesson uses none
    for w in catalog.workshops():
        reordered = glossary_for(glossary, w)
        assert sorted(p for _, p in glossary_entries(reordered)[1]) == sorted(p for _, p in entries)
    plain = type("W", (), {"lesson": "no terms", "code": "X", "title": "x"})()
    assert glossary_for(glossary, plain) == glossary


def test_the_key_is_in_the_help_and_the_readme(make_app):
    from tui.screens.help import HelpScreen

    for doc in (REPO / "tui" / "USAGE.md", REPO / "README.md"):
        rows = [r for r in doc.read_text(encoding="utf-8").splitlines() if r.startswith("| `d` |")]
        assert len(rows) == 1, doc
        assert all(word in rows[0] for word in ("glossary", "worksheet", "capstones", "workshop list"))

    async def body():
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "help")
            await pilot.pause(0.3)
            cells = [source_text(w) for w in app.screen.query("MarkdownTableContent *")]
            assert "d" in [c.strip() for c in cells if c], cells[:40]

    run(body())
