"""A newcomer's first session in an 80x24 terminal, in one app run: open the workshop
from the list, read the lesson (its place kept across tabbing), reveal a hint (scrolled
into view), save a wrong answer, read the failure in full and jump to its lesson
section, fix it, see the completion, and go on to the suggested next workshop."""

from __future__ import annotations

import asyncio

from checks import workspace as ws
from workshops import catalog

from readable_helpers import Toasts
from tui_helpers import digest_of, save, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")
SIZE = (80, 24)


def visible(widget, screen_height: int = SIZE[1]) -> bool:
    r = widget.region
    return r.height > 0 and r.y >= 0 and r.y + r.height <= screen_height


def test_newcomer_journey_at_80x24(make_app, workspace):
    from textual.widgets import MarkdownViewer

    from tui.screens.failure import FailureScreen
    from tui.screens.workshop import WorkshopScreen
    from tui.widgets.completion import CompletionPanel
    from tui.widgets.results import ResultsPanel

    path = workspace / A1.exercise_name

    async def body():
        app = make_app()
        toasts = Toasts(app)
        async with app.run_test(size=SIZE) as pilot:
            # the list: course progress per level, nothing passed yet
            course = str(app.screen.query_one("#course-progress").render())
            assert "Advanced 0 of 3 passed" in course and "Intermediate 0 of 3" in course
            table = app.screen.query_one("#workshops")
            table.focus()
            ids = [k.value for k in table.rows]
            for _ in range(ids.index(A1.id)):
                await pilot.press("down")
            await pilot.press("enter")
            screen = await wait_for(
                pilot, lambda: isinstance(app.screen, WorkshopScreen) and app.screen, 10, "the workshop"
            )
            assert screen.has_class("-compact")
            panel = await wait_for_run(pilot, digest_of(path))
            assert set(panel.statuses()) == {"todo"}
            # the results are on screen at 80x24, with rows
            table = panel.table
            assert visible(panel) and visible(table) and table.region.height >= 5

            # read: scroll the lesson, tab away and back; it keeps its place
            viewer = screen.query_one("#lesson", MarkdownViewer)
            viewer.document.focus()
            await pilot.pause()
            for _ in range(3):
                await pilot.press("pagedown")
            await pilot.pause(0.2)
            place = viewer.scroll_y
            assert place > 0
            await pilot.press("tab")
            await pilot.press("shift+tab")
            await pilot.pause(0.2)
            assert app.focused is viewer.document and viewer.scroll_y == place

            # a hint: the new tier is on screen
            await pilot.press("h")
            hints = screen.query_one("#hints")
            await wait_for(pilot, lambda: hints.query("#hint-1"), 5, "hint 1")
            await pilot.press("h")
            second = await wait_for(
                pilot, lambda: hints.query("#hint-2") and hints.query_one("#hint-2"), 5, "hint 2"
            )
            await pilot.pause(0.3)
            top = hints.content_region.y
            assert top <= second.region.y < top + hints.content_region.height, (
                "the newly revealed hint is not in view"
            )
            assert ws.load_progress(workspace)[0][A1.id]["hints_shown"] == 2

            # a wrong answer: read the failure in full, then go to its lesson section
            await save(pilot, path, (A1.folder / "wrong" / "raw_denominator.py").read_text())
            panel = await wait_for_run(pilot, digest_of(path))
            assert "fail" in panel.statuses()
            rec = panel.cursor_record()  # the cursor sits on the first failure
            assert rec is not None and rec.status == "fail" and rec.section
            panel.table.focus()
            await pilot.press("enter")
            failure = await wait_for(
                pilot, lambda: isinstance(app.screen, FailureScreen) and app.screen, 5, "the failure view"
            )
            text = str(failure.query_one("#failure-text").render())
            assert rec.message.strip().splitlines()[-1].strip() in text  # the whole message
            assert "Why it matters" in text and rec.why.split()[0] in text
            assert rec.section in str(failure.query_one("#failure-footer").render())
            await pilot.press("l")
            await wait_for(pilot, lambda: app.screen is screen, 5, "back from the failure view")
            assert screen.query_one("#left").active == "lesson-tab"
            await pilot.pause(0.5)
            heading = next(b for lvl, label, b in viewer.document.table_of_contents if label == rec.section)
            block = viewer.document.query_one(f"#{heading}")
            assert abs(block.virtual_region.y - viewer.scroll_y) <= 2, (
                "the lesson is not at the failing check's section"
            )

            # the fix: all pass, the completion moment names the next workshop
            assert not screen.query_one(CompletionPanel).display
            await save(pilot, path, A1.solution.read_text())
            panel = await wait_for_run(pilot, digest_of(path))
            assert set(panel.statuses()) == {"pass"}
            done = screen.query_one(CompletionPanel)
            await wait_for(pilot, lambda: done.display, 5, "the completion panel")
            said = str(done.render())
            nxt = screen.next_up[0]
            assert said.startswith("Passed: A1: all 11 checks ran and passed.")
            assert nxt.code in said and A1.code in nxt.prerequisite
            assert [title for title, _ in toasts.live] == ["Passed"]
            assert isinstance(screen.query_one(ResultsPanel), ResultsPanel)

            # the next workshop, then back to the list: course progress has moved
            await pilot.press("n")
            await wait_for(
                pilot,
                lambda: isinstance(app.screen, WorkshopScreen) and app.screen.workshop.id == nxt.id,
                10,
                nxt.id,
            )
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen.query("#course-progress"), 5, "the list")
            await pilot.pause(0.2)
            assert "Advanced 1 of 3 passed" in str(app.screen.query_one("#course-progress").render())

    asyncio.run(body())
