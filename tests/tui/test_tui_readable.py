"""Everything the app shows is readable at 80x24 and 120x40: the explanation, code in
lessons and hints, the results table, the lesson's room, the focus where the eye is,
one word per outcome, notices that belong to their run, the timings panel, one-line
panels that fit, and Help that opens on the keys."""

from __future__ import annotations

import asyncio

import pytest

from checks import workspace as ws
from workshops import catalog

from readable_helpers import SIZE_IDS, SIZES, drawn, lost_text
from tui_helpers import digest_of, save, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")
WRONG = (A1.folder / "wrong" / "raw_denominator.py").read_text(encoding="utf-8")
sizes = pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)


def start_with(workspace, text: str):
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- the explanation: its contents column folds away where the text needs the room ---


@sizes
def test_the_explanation_keeps_the_width_for_its_text(make_app, size):
    from tui import layout
    from tui.screens.explanation import ExplanationScreen

    w = max(catalog.workshops(), key=lambda w: layout.contents_width(w.explanation))

    async def body():
        app = make_app()
        async with app.run_test(size=size) as pilot:
            app.push_screen(ExplanationScreen(w))
            screen = await wait_for(
                pilot, lambda: isinstance(app.screen, ExplanationScreen) and app.screen, 5, "it"
            )
            await pilot.pause(0.3)
            viewer = screen.viewer
            shown = viewer.show_table_of_contents
            assert shown == layout.contents_fits(size[0], screen.toc_width)
            assert viewer.document.size.width >= min(layout.TEXT_MIN, size[0] - 6)
            assert app.focused is viewer.document  # the arrows scroll the text
            await pilot.press("down", "down")
            await pilot.pause()
            assert viewer.scroll_y > 0
            await pilot.press("t")  # the contents at any size, and away again
            await pilot.pause()
            assert viewer.show_table_of_contents is not shown
            await pilot.press("t")
            await pilot.pause()
            assert viewer.show_table_of_contents is shown
            assert not lost_text(viewer.document)

    asyncio.run(body())


# --- long code lines: folded with a mark, never cut ---


def test_fold_code_keeps_every_character_and_marks_the_fold():
    from textual.content import Content

    from tui.widgets.markdown import MORE, fold_code

    original = [
        "def f():",
        "    return (m, l_left * math.exp(m_left - m) + l_right * math.exp(m_right - m))",
        "x" * 70,
    ]
    for width in (20, 33, 60, 200):
        lines = [line.plain for line in fold_code(Content("\n".join(original)), width)]
        assert all(len(line) <= width for line in lines), (width, lines)
        glued = []
        for line in lines:
            if line.lstrip(" ").startswith(MORE):
                glued[-1] += line.split(MORE, 1)[1]  # a continuation, under its indentation
            else:
                glued.append(line)
        assert glued == original, width
        assert any(MORE in line for line in lines) == (width < len(original[1]))
        assert all(
            line.startswith("    " + MORE) for line in lines[1:] if MORE in line and not line.startswith(MORE)
        )


@sizes
def test_the_hint_with_a_long_code_line_shows_all_of_it(make_app, workspace, size):
    """A1's last hint ends in `... + l_right * math.exp(m_right - m))`: the whole line is
    on screen, zoomed or not."""
    from tui.widgets.markdown import MORE, FoldedCode

    last = len(A1.hints)
    tail = "l_right * math.exp(m_right - m))"
    assert tail in A1.hints[-1]
    ws.record_hints(A1.id, last, workspace)

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=size) as pilot:
            await wait_for_run(pilot)
            screen = app.screen
            await pilot.press("h")  # all shown: the hints tab, with the focus
            for zoomed in (False, True):
                if zoomed:
                    await pilot.press("z")
                hint = screen.query_one(f"#hint-{last}")
                await pilot.pause(0.3)
                codes = [
                    c
                    for c in hint.query(FoldedCode)
                    if tail.replace(" ", "") in c.code.plain.replace(" ", "")
                ]
                assert codes, "the hint's code block"
                lines = drawn(codes[0])
                text = "".join(lines).replace(MORE, "").replace(" ", "")
                assert tail.replace(" ", "") in text
                assert all(len(line.rstrip()) <= codes[0].outer_size.width for line in lines)
                assert not lost_text(hint)
                width = codes[0].content_size.width
                longest = max(len(line) for line in codes[0].code.plain.splitlines())
                assert any(MORE in line for line in lines) == (longest > width)

    asyncio.run(body())


def test_no_lesson_hint_or_explanation_loses_text_at_80_columns():
    """Every workshop's lesson, hints and explanation, drawn 80 columns wide: every leaf
    (paragraph, heading, table cell, code block) draws every character it holds."""
    from textual.app import App

    from tui.widgets.markdown import CourseViewer

    class Doc(App):
        def __init__(self, markdown: str):
            super().__init__()
            self.markdown = markdown

        def compose(self):
            yield CourseViewer(self.markdown, show_table_of_contents=False)

    async def lost(markdown: str) -> list:
        app = Doc(markdown)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.2)
            return lost_text(app.query_one(CourseViewer).document)

    async def body():
        problems = {}
        for w in catalog.workshops():
            for name, text in (
                ("lesson", w.lesson),
                ("hints", "\n\n".join(w.hints)),
                ("explanation", w.explanation),
            ):
                if text:
                    bad = await lost(text)
                    if bad:
                        problems[f"{w.id} {name}"] = bad
        assert not problems, problems

    asyncio.run(body())


# --- focus where the eye is; the status line names only keys that work there ---


@sizes
def test_focus_starts_on_the_lesson_and_goes_to_the_first_failure(make_app, workspace, size):
    from textual.widgets import MarkdownViewer

    from tui.screens.failure import FailureScreen

    path = start_with(workspace, A1.starter.read_text(encoding="utf-8"))

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=size) as pilot:
            panel = await wait_for_run(pilot, digest_of(path))
            screen = app.screen
            viewer = screen.query_one("#lesson", MarkdownViewer)
            assert app.focused is viewer.document  # a TODO run leaves the focus on the lesson
            await pilot.press("down", "down", "down")
            await pilot.pause()
            assert viewer.scroll_y > 0  # the arrows scroll the lesson
            assert "Enter" not in str(screen.query_one("#run-status").render())
            await save(pilot, path, WRONG)
            panel = await wait_for_run(pilot, digest_of(path))
            await pilot.pause()
            first = next(k for k in panel.planned if panel.records[k["id"]].status == "fail")
            assert app.focused is panel.table and panel.cursor_record().id == first["id"]
            status = str(screen.query_one("#run-status").render())
            assert status.startswith(f"{panel.digest[:8]} failed") and "Enter on a row" in status
            await pilot.press("enter")
            failure = await wait_for(
                pilot, lambda: isinstance(app.screen, FailureScreen) and app.screen, 5, "it"
            )
            assert failure.record.id == first["id"]
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is screen, 5, "back")
            viewer.document.focus()  # elsewhere, Enter does not open a row: not named
            await pilot.pause()
            assert "Enter" not in str(screen.query_one("#run-status").render())

    asyncio.run(body())


# --- the results table keeps its Message column; the lesson gets room at 80x24 ---


@sizes
def test_the_results_table_keeps_the_message_column(make_app, workspace, size):
    from tui.widgets.results import MESSAGE_MIN

    path = start_with(workspace, WRONG)

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=size) as pilot:
            panel = await wait_for_run(pilot, digest_of(path))
            screen = app.screen
            await pilot.pause()
            before = 0
            for zoomed in (False, True):
                table = panel.table
                widths = {str(k.value): c.width for k, c in table.columns.items()}
                assert "message" in widths and widths["message"] >= MESSAGE_MIN, widths
                assert sum(widths.values()) + 2 * len(widths) <= panel.size.width  # nothing off the side
                cell = str(table.get_cell(panel.cursor_record().id, "message"))
                assert cell.rstrip("…") in panel.cursor_record().message.replace("\n", " ")
                if zoomed:
                    # compact already gives the results the whole width
                    assert widths["message"] > before or (size[0] < 100 and widths["message"] == before)
                    assert table.region.height >= 12  # most of the 11 rows, zoomed
                before = widths["message"]
                if not zoomed:
                    await pilot.press("z")
                    await pilot.pause(0.3)
            await pilot.press("escape")
            await pilot.pause(0.3)
            if size == (80, 24):
                # the results have the focus: they get the room, the lesson a strip
                assert screen.has_class("-results-focus") and panel.table.region.height >= 9
                screen.query_one("#lesson").document.focus()
                lesson = screen.query_one("#lesson")
                # the layout follows the focus after a refresh or two (later on a busy machine)
                await wait_for(
                    pilot,
                    lambda: lesson.region.height >= 10 and not screen.has_class("-results-focus"),
                    10,
                    "the lesson's room once it has the focus",
                )
                assert panel.table.region.height >= 3  # the results keep a strip

    asyncio.run(body())
