"""Leaving a workshop screen while one of its parts has the focus: the learner's main
path (fail, fix, pass, then n for the next workshop) and the command palette's "Open
workshop", with the results table focused.  The screen's widgets are unmounted while a
blur is still being handled; a callback deferred to after the refresh must not query
them then (the app used to exit with NoMatches on '#results')."""

from __future__ import annotations

import asyncio

import pytest

from workshops import catalog

from tui_helpers import digest_of, save, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")
WRONG = (A1.folder / "wrong" / "raw_denominator.py").read_text(encoding="utf-8")
SIZES = [(80, 24), (120, 40)]  # the smallest and a roomy one: the layouts in between are theirs


async def _fail_fix_pass(pilot, workspace):
    """A failing save, then the fix: the results table has the focus (the first failure
    took it), every check passes."""
    from tui.screens.workshop import WorkshopScreen
    from tui.widgets.results import ResultsPanel

    path = workspace / A1.exercise_name
    await wait_for_run(pilot, digest_of(path))
    screen = pilot.app.screen
    assert isinstance(screen, WorkshopScreen)
    await save(pilot, path, WRONG)
    await wait_for_run(pilot, digest_of(path))
    table = screen.query_one(ResultsPanel).table
    await wait_for(pilot, lambda: table.has_focus, 5, "the table's focus on the first failure")
    await save(pilot, path, A1.solution.read_text(encoding="utf-8"))
    panel = await wait_for_run(pilot, digest_of(path))
    assert set(panel.statuses()) == {"pass"}
    assert table.has_focus  # still there when n is pressed
    return screen


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_n_after_fail_fix_pass_with_the_table_focused(make_app, size):
    from tui.screens.workshop import WorkshopScreen

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=size) as pilot:
            screen = await _fail_fix_pass(pilot, app.workspace)
            nxt = screen.next_up[0]
            await pilot.press("n")
            await wait_for(
                pilot,
                lambda: isinstance(app.screen, WorkshopScreen) and app.screen.workshop.id == nxt.id,
                10,
                nxt.id,
            )
            await pilot.pause(0.5)  # the deferred callbacks of the screen that left
            # still running (an error in a callback would have ended it; run_test re-raises it)
            assert app.is_running and app.return_code is None

    asyncio.run(body())


def test_palette_open_workshop_with_the_table_focused(make_app):
    from tui.screens.workshop import WorkshopScreen

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(100, 30)) as pilot:
            await _fail_fix_pass(pilot, app.workspace)
            other = catalog.get("strided_softmax")
            await pilot.press("ctrl+p")
            await pilot.pause(0.3)
            await pilot.press(*f"Open workshop {other.code}")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await wait_for(
                pilot,
                lambda: isinstance(app.screen, WorkshopScreen) and app.screen.workshop.id == other.id,
                10,
                other.id,
            )
            await pilot.pause(0.5)
            # still running (an error in a callback would have ended it; run_test re-raises it)
            assert app.is_running and app.return_code is None

    asyncio.run(body())
