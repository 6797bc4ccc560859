"""Each pane keeps its place through a change of layout: the highlighted result row stays
in view when the table's size changes (the line under the table speaks of it), and the
lesson stays at the section the learner was reading when its contents show or hide
(beside it, or in its place) and when the results take room from it."""

from __future__ import annotations

import asyncio

import pytest

from checks.judging.records import Record
from workshops import catalog

from tui_helpers import digest_of, save, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")
WRONG = (A1.folder / "wrong" / "raw_denominator.py").read_text(encoding="utf-8")


def _cursor_in_view(table) -> bool:
    """The cursor's row lies among the rows the table shows (below its header)."""
    first = round(table.scroll_y)
    shown = table.scrollable_content_region.height - table.header_height
    return first <= table.cursor_row < first + shown


def test_the_highlighted_row_stays_in_view_when_the_table_gets_shorter():
    from textual.app import App, ComposeResult

    from tui.widgets.results import ResultsPanel

    class One(App):
        def compose(self) -> ComposeResult:
            yield ResultsPanel()

    async def body():
        app = One()
        async with app.run_test(size=(100, 40)) as pilot:
            panel = app.query_one(ResultsPanel)
            plan = [{"id": f"check-{i:02}", "label": "x"} for i in range(31)]
            panel.start(plan, "c" * 64)
            for i, c in enumerate(plan):
                status = "fail" if i == 26 else "pass"
                panel.add(Record(workshop="w", id=c["id"], label="x", status=status, message="m"))
            panel.finish("done", list(panel.records.values()), "c" * 64)
            panel.table.focus()
            await pilot.pause()
            assert panel.cursor_record().id == "check-26" and _cursor_in_view(panel.table)
            for size in [(80, 24), (80, 14), (120, 40), (80, 12)]:
                await pilot.resize_terminal(*size)
                await pilot.pause(0.3)
                assert _cursor_in_view(panel.table), (size, panel.table.scroll_y)
                assert "check-26" in str(panel.query_one("#record-detail").render())

    asyncio.run(body())


def _top_block(viewer):
    """The lesson's block at the top of its view (None at the very top)."""
    if viewer.scroll_y < 1:
        return None
    return next((b for b in viewer.document.children if b.virtual_region.bottom > viewer.scroll_y), None)


@pytest.mark.parametrize("size", [(100, 30), (200, 60)], ids=["contents-in-its-place", "contents-beside"])
def test_the_lesson_keeps_its_section_when_the_contents_show_and_hide(make_app, workspace, size):
    """100x30: t shows the contents in the lesson's place, t again shows the lesson;
    200x60: the contents sit beside the lesson and t hides then shows them (the text
    reflows).  Either way the section the learner went to stays at the top."""

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=size) as pilot:
            await wait_for_run(pilot)
            screen = app.screen
            viewer = screen.query_one("#lesson")
            headings = viewer.document.table_of_contents
            assert screen.goto_section(str(headings[len(headings) // 3][1]))
            # the section is settled after a refresh, later on a busy machine
            heading = await wait_for(pilot, lambda: _top_block(viewer), 10, "the section at the top")
            assert viewer.scroll_y == heading.virtual_region.y > 10
            for _ in range(2):
                await pilot.press("t")
                await pilot.pause(0.3)
                if viewer.document.display:  # beside the contents, or alone again
                    await wait_for(pilot, lambda: _top_block(viewer) is heading, 10, "that section on top")
            assert viewer.document.display and _top_block(viewer) is heading

    asyncio.run(body())


def test_the_lesson_keeps_its_place_while_the_results_take_room_from_it(make_app, workspace):
    """120x40: a failing run gives the results the focus and the width their messages
    want; the lesson, narrower, shows the same section at its top, and again when it
    gets the focus (and its width) back."""
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(A1.solution.read_text(encoding="utf-8"), encoding="utf-8")

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot, digest_of(path))
            screen = app.screen
            viewer = screen.query_one("#lesson")
            headings = viewer.document.table_of_contents
            screen.goto_section(str(headings[len(headings) // 3][1]))
            await wait_for(  # the scroll lands in the layout's own time (slower on a busy machine)
                pilot,
                lambda: (
                    (top := _top_block(viewer)) is not None and viewer.scroll_y == top.virtual_region.y > 10
                ),
                5,
                "the lesson at the section",
            )
            heading, wide = _top_block(viewer), viewer.document.size.width
            await save(pilot, path, WRONG)
            panel = await wait_for_run(pilot, digest_of(path))
            await wait_for(pilot, lambda: panel.table.has_focus, 5, "the results' focus")
            await wait_for(  # the results took room; the layout settles in its own time
                pilot,
                lambda: viewer.document.size.width < wide and _top_block(viewer) is heading,
                5,
                "the lesson narrower at its place",
            )
            viewer.document.focus(scroll_visible=False)
            await wait_for(
                pilot,
                lambda: viewer.document.size.width == wide and _top_block(viewer) is heading,
                5,
                "the lesson's width and place back",
            )

    asyncio.run(body())


def test_l_from_a_failure_shows_its_section_at_the_top_once_the_lesson_is_wide_again(make_app, workspace):
    """100x30: a failing run gives the results the focus and width; Enter on the failure,
    then l, gives the lesson the focus (and its width back: the text reflows over more than
    one refresh) and the failing check's section stays at the top once it has settled."""
    from tui.screens.failure import FailureScreen

    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(WRONG, encoding="utf-8")

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(100, 30)) as pilot:
            panel = await wait_for_run(pilot, digest_of(path))
            screen = app.screen
            viewer = screen.query_one("#lesson")
            rec = panel.cursor_record()
            assert rec is not None and rec.status == "fail" and rec.section
            await wait_for(pilot, lambda: panel.table.has_focus, 5, "the results' focus")
            narrow = viewer.document.size.width
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, FailureScreen), 5, "the failure view")
            await pilot.press("l")
            await wait_for(pilot, lambda: app.screen is screen, 5, "back from the failure view")
            heading = next(b for _, label, b in viewer.document.table_of_contents if label == rec.section)
            block = viewer.document.query_one(f"#{heading}")

            def at_section() -> bool:
                return (
                    viewer.document.size.width > narrow and abs(block.virtual_region.y - viewer.scroll_y) <= 1
                )

            await wait_for(pilot, at_section, 15, "the section at the top of the wider lesson")
            await pilot.pause(1.0)  # and it stays there once the layout has settled
            assert at_section(), (viewer.scroll_y, block.virtual_region.y)

    asyncio.run(body())
