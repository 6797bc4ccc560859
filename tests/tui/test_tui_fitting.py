"""Smaller things that did not fit: toasts that break a path inside a name or cover the
results, a contents column that leaves the lesson a strip (120x40) or does not show
where it fits (200x60), "Hints revealed: 4 of" / "4" in the workshop list, lesson
tables that split "(4, 6)" over two lines at 80x24."""

from __future__ import annotations

import asyncio

import pytest

from checks import workspace as ws
from workshops import catalog

from readable_helpers import drawn
from tui_helpers import digest_of, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")
I1 = catalog.get("strided_softmax")
WRONG = (A1.folder / "wrong" / "raw_denominator.py").read_text(encoding="utf-8")


def _toasts(app) -> list:
    return list(app.screen.query("Toast"))


def test_path_lines_break_after_a_slash_and_keep_names_whole():
    from tui.layout import path_lines

    text = path_lines(
        "/home/u/course/.workspace-state/exports/strided_softmax-20261203-075852.json", 30, "/home/u/course"
    )
    # a name longer than the line: broken after a hyphen, not wherever the toast's edge falls
    assert text == ".workspace-state/exports/\nstrided_softmax-20261203-\n075852.json"
    text = path_lines(
        "/home/u/course/.workspace-state/exports/strided_softmax-20261203-075852.json", 40, "/home/u/course"
    )
    assert text == ".workspace-state/exports/\nstrided_softmax-20261203-075852.json"
    assert path_lines("/elsewhere/a/b.py", 40, "/home/u/course") == "/elsewhere/a/b.py"


# A1's export name (38 characters) is never exactly as long as a toast's line; I1's (36) is
# at 120x40 with the results focused: a toast one column narrower than its text was broken
# to split it mid-word ("…172300.jso" / "n").
# the toast's width at every size is test_a_toasts_text_is_as_wide_as_the_paths_are_broken_to's;
# here the whole export at the smallest and the largest size, and a name exactly that wide
EXPORTS = [(A1, WRONG, size) for size in [(80, 24), (200, 60)]] + [
    (I1, (I1.folder / "wrong" / "max_not_subtracted.py").read_text(encoding="utf-8"), (120, 40))
]


@pytest.mark.parametrize(
    "w, text, size", EXPORTS, ids=[f"{w.code}-{size[0]}x{size[1]}" for w, _, size in EXPORTS]
)
def test_the_export_toast_keeps_names_whole_and_covers_no_result_row(make_app, workspace, w, text, size):
    path = workspace / w.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    exports = ws.state_dir(workspace) / "exports"  # the default: beside the workspace

    async def body():
        app = make_app(open_workshop=w.id, results_dir=exports)
        async with app.run_test(size=size, notifications=True) as pilot:
            panel = await wait_for_run(pilot, digest_of(path))
            await wait_for(pilot, lambda: panel.table.has_focus, 5, "the first failure's focus")
            await pilot.press("o")
            written = await wait_for(pilot, lambda: list(exports.glob("*.json")), 10, "the export")
            toast = await wait_for(pilot, lambda: _toasts(app), 5, "the toast")
            await pilot.pause(0.3)
            lines = [line.strip("▌ ") for line in drawn(toast[0])]
            # the file's name whole on a line of its own, or (side by side while the results
            # have the focus, the toast as narrow as the lesson) on lines broken after a -
            name = written[0].name
            broken = [i for i in range(len(lines)) if name.startswith(lines[i]) and lines[i].endswith("-")]
            assert name in lines or any(name in "".join(lines[i : i + 3]) for i in broken), lines
            assert any(line.startswith(f".{workspace.name}-state/") for line in lines), lines
            # the results table's rows stay readable
            assert not toast[0].region.overlaps(panel.table.region), (toast[0].region, panel.table.region)
            assert not toast[0].region.overlaps(panel.status_line.region)

    asyncio.run(body())


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_toasts_text_is_as_wide_as_the_paths_are_broken_to(make_app, size):
    """layout.toast_columns, the width path_lines breaks a toast's path to, is the
    columns of text a toast really has (with the lesson or the results focused): one
    more, and a name as long as a line was split mid-word by the toast itself."""
    from textual.widgets import DataTable

    from tui import layout
    from tui.screens.workshop import WorkshopScreen

    async def body():
        app = make_app()
        async with app.run_test(size=size, notifications=True) as pilot:
            screen = WorkshopScreen(A1)
            screen.request_run = lambda force=False: False  # the layout only, no checks
            app.push_screen(screen)
            await wait_for(pilot, lambda: app.screen is screen, 5, "the workshop")
            for results_focus in (False, True):
                if results_focus:
                    screen.query_one("#results", DataTable).focus()
                await pilot.pause(0.2)
                app.clear_notifications()
                app.notify("x")
                toast = await wait_for(pilot, lambda: _toasts(app), 5, "the toast")
                await pilot.pause(0.2)
                want = layout.toast_columns(size[0], layout.size_class(*size), results_focus)
                assert toast[0].content_region.width == want, (results_focus, toast[0].region)

    asyncio.run(body())


def test_contents_at_120x40_leave_the_lesson_room_or_take_its_place(make_app):
    from tui import layout
    from tui.widgets.markdown import CourseViewer

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot)
            screen = app.screen
            viewer = screen.query_one("#lesson", CourseViewer)
            assert not viewer.show_table_of_contents  # the normal layout: the lesson alone
            await pilot.press("t")
            await pilot.pause(0.3)
            toc, doc = viewer.table_of_contents, viewer.document
            assert viewer.show_table_of_contents and toc.region.width
            if doc.display:
                assert doc.region.width >= layout.TEXT_MIN, doc.region.width
            else:  # in the lesson's place, as wide as the lesson was
                assert toc.region.width >= layout.contents_width(A1.lesson)
                assert app.focused is not None and toc in app.focused.ancestors_with_self
                # choosing an entry shows the lesson there
                entry = next(label for level, label, _ in doc.table_of_contents if level == 2)
                await pilot.press("down", "down")
                await pilot.press("enter")
                await pilot.pause(0.5)
                assert doc.display and not viewer.show_table_of_contents
                assert app.focused is doc
                assert viewer.scroll_y > 0, entry

    asyncio.run(body())


def test_contents_show_on_their_own_at_200x60_for_every_lesson(make_app, monkeypatch):
    from tui import layout
    from tui.screens.workshop import WorkshopScreen
    from tui.widgets.markdown import CourseViewer

    async def body():
        app = make_app()
        async with app.run_test(size=(200, 60)) as pilot:
            for w in catalog.workshops():
                screen = WorkshopScreen(w)
                screen.request_run = lambda force=False: False  # the layout only, no checks
                app.push_screen(screen)
                await wait_for(pilot, lambda: app.screen is screen, 5, w.id)
                await pilot.pause(0.3)
                viewer = screen.query_one("#lesson", CourseViewer)
                assert viewer.show_table_of_contents and not viewer.contents_alone, w.id
                assert viewer.table_of_contents.region.width >= layout.contents_width(w.lesson) - 1
                assert viewer.document.region.width >= layout.TEXT_MIN, (w.id, viewer.document.region)
                app.pop_screen()
                await pilot.pause(0.2)

    asyncio.run(body())


@pytest.mark.parametrize("width", [80, 100])
def test_hints_revealed_stays_on_one_line(make_app, workspace, width):
    ws.record_hints(I1.id, len(I1.hints), workspace)
    ws.record_result(I1.id, "passed", 34, 36, "f" * 64, workspace=workspace)  # passed here

    async def body():
        app = make_app()
        async with app.run_test(size=(width, 30)) as pilot:
            await pilot.pause()
            table = app.screen.query_one("#workshops")
            table.move_cursor(row=[k.value for k in table.rows].index(I1.id))
            await pilot.pause()
            lines = drawn(app.screen.query_one("#workshop-details"))
            assert any("Best result: passed here 34/36" in line for line in lines), lines
            said = f"Hints revealed: {len(I1.hints)} of {len(I1.hints)}"
            assert any(said in line for line in lines), lines

    asyncio.run(body())


def test_lesson_tables_keep_short_cells_whole_at_80x24(make_app, workspace):
    from textual.widgets import MarkdownViewer

    async def body():
        app = make_app(open_workshop=I1.id)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await wait_for(pilot, lambda: app.screen.query("#lesson") and app.screen, 10, "I1")
            screen.request_run = lambda force=False: False
            viewer = screen.query_one("#lesson", MarkdownViewer)
            await pilot.press("z")  # the lesson zoomed: the whole screen, as wide as 80x24 allows
            await pilot.pause(0.5)
            tables = list(viewer.document.query("MarkdownTableContent"))
            assert tables
            short = 0
            for table in tables:
                for cell in table.query(".cell"):
                    text = str(cell.render()).strip()
                    if 0 < len(text) <= 12:
                        lines = [line.strip(" │") for line in drawn(cell)]
                        assert text in lines[0], (text, lines)  # never "(4," then "6)"
                        short += 1
            assert short > 20

    asyncio.run(body())
