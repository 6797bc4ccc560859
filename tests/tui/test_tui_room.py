"""What fits where: the footer shows whole entries only (the least important left out
first), the results get the room their messages want while they have the focus, nothing
draws a scrollbar's stray block where there is nothing to scroll, and n says in plain
words why the next workshop does not open yet."""

from __future__ import annotations

import asyncio

import pytest

from workshops import catalog

from readable_helpers import Toasts
from tui_helpers import digest_of, save, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")
I2 = catalog.get("softmax_backward")
WRONG = (A1.folder / "wrong" / "raw_denominator.py").read_text(encoding="utf-8")
# the longest check id of I2, where the learner found the messages cut to 17 columns
I2_LONGEST = "rejects-device-and-grad"


def _footer_entries(screen) -> tuple:
    """(entries left to right as (text, region), the palette key's region)."""
    footer = screen.query_one("Footer")
    keys = [w for w in footer.query("*") if hasattr(w, "key_display") and w.display]
    palette = [k for k in keys if k.has_class("-command-palette")]
    entries = [(f"{k.key_display} {k.description}", k.region) for k in keys if k not in palette]
    return footer, sorted(entries, key=lambda e: e[1].x), palette[0].region


@pytest.mark.parametrize("width", [80, 100, 120, 160])
def test_the_footer_shows_whole_entries_only(make_app, width):
    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(width, 30)) as pilot:
            await wait_for_run(pilot)
            await pilot.pause(0.3)
            footer, entries, palette = _footer_entries(app.screen)
            texts = [t for t, _ in entries]
            for text, region in entries:  # each one whole, left of the palette's key
                assert region.width == len(text) + 2 and region.right <= palette.x, (text, region, palette)
            assert palette.right <= footer.region.right
            # what goes first: Reset, Export, Zoom; Back and Help stay
            assert "esc Back" in texts and "? Help" in texts and "space Re-run" in texts
            if width <= 100:
                assert "r Reset" not in texts and "o Export" not in texts
            if width >= 120:
                assert len(texts) == 10, texts  # every entry fits

    asyncio.run(body())


def test_keys_that_fit_leaves_out_the_named_entries_first_then_from_the_right():
    from tui.widgets.footer import keys_that_fit

    assert keys_that_fit([5, 5, 5], 15, [1]) == {0, 1, 2}
    assert keys_that_fit([5, 5, 5], 14, [1]) == {0, 2}
    assert keys_that_fit([5, 5, 5], 9, [1]) == {0}
    assert keys_that_fit([5, 5, 5], 4, [1]) == set()


@pytest.mark.parametrize("width, least", [(100, 28), (120, 40), (159, 50)])
def test_the_results_side_gives_the_longest_id_whole_and_the_message_its_goal(width, least):
    """The layout's arithmetic for I2's longest id: the side the results get with the
    focus, then the table's columns in it (tui.widgets.results.column_widths)."""
    from tui import layout
    from tui.screens.workshop_layout import RIGHT_EDGE
    from tui.widgets.results import column_widths, table_columns

    size = layout.size_class(width, 40)
    need = RIGHT_EDGE + table_columns(len(I2_LONGEST), layout.message_goal(width))
    side = layout.results_columns(width, size, need)
    check_w, message_w, _ = column_widths(side - RIGHT_EDGE, len(I2_LONGEST))
    assert check_w == len(I2_LONGEST) and message_w >= least, (side, check_w, message_w)
    assert width - side >= width // 3  # the lesson keeps a third


@pytest.mark.parametrize("size, least", [((100, 30), 28), ((120, 40), 40)], ids=["100x30", "120x40"])
def test_the_results_get_room_for_their_messages_while_they_have_the_focus(make_app, workspace, size, least):
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(A1.solution.read_text(encoding="utf-8"), encoding="utf-8")

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=size) as pilot:
            await wait_for_run(pilot, digest_of(path))
            await save(pilot, path, WRONG)
            panel = await wait_for_run(pilot, digest_of(path))
            await wait_for(pilot, lambda: panel.table.has_focus, 5, "the results' focus")
            table = panel.table
            # the layout follows the focus a refresh later (later still on a busy machine)
            await wait_for(pilot, lambda: table.columns["message"].width >= least, 5, "the results' room")
            for rec in panel.records.values():
                assert str(table.get_cell(rec.id, "check")) == rec.id  # whole
            focused_width = app.screen.query_one("#right").size.width
            app.screen.query_one("#lesson").document.focus()
            narrower = lambda: app.screen.query_one("#right").size.width < focused_width
            await wait_for(pilot, narrower, 5, "the lesson's turn: the results give their room back")

    asyncio.run(body())


def test_the_contents_shown_in_the_lessons_place_draw_no_scrollbar():
    """I2's longest heading is wider than the contents at 100 columns: its tree
    and drew a horizontal scrollbar whose thumb ended in a stray block (▋)."""
    from textual.app import App, ComposeResult

    from tui.widgets.markdown import CourseViewer

    class One(App):
        CSS = "CourseViewer MarkdownTableOfContents Tree { width: 1fr; }"  # as the workshop's

        def compose(self) -> ComposeResult:
            yield CourseViewer(I2.lesson, show_table_of_contents=False)

    async def body():
        app = One()
        async with app.run_test(size=(40, 30)) as pilot:
            viewer = app.query_one(CourseViewer)
            await pilot.pause(0.3)
            viewer.show_contents(True, alone=True)
            await pilot.pause(0.3)
            tree = viewer.table_of_contents.query_one("Tree")
            assert tree.virtual_size.width > tree.size.width  # an entry wider than the column
            assert not tree.show_horizontal_scrollbar

    asyncio.run(body())


def test_n_after_a_failing_run_says_how_many_checks_the_file_fails(make_app, workspace):
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(WRONG, encoding="utf-8")

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(120, 40)) as pilot:
            panel = await wait_for_run(pilot, digest_of(path))
            toasts = Toasts(app)
            await pilot.press("n")
            await pilot.pause()
            failed = sum(r.status == "fail" for r in panel.records.values())
            said = toasts.said()
            assert f"your file fails {failed} of {len(panel.records)} checks." in said, said
            assert "is failed" not in said

    asyncio.run(body())
