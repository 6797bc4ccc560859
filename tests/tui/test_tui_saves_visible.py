"""Every save visible: a save during a long check marks the old run stale at once,
whatever its age; a file stuck at import says so, with its time; a deleted file is said
at once, with the key that restores it."""

from __future__ import annotations

import asyncio

from workshops import catalog

from readable_helpers import Toasts
from tui_helpers import digest_of, save, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")
SOLUTION = A1.solution.read_text(encoding="utf-8")
HANG = SOLUTION + "\ndef merge(left, right):\n    while True:\n        pass\n"


def run(coro):
    return asyncio.run(coro)


def status_of(app) -> str:
    return str(app.screen.query_one("#run-status").render())


async def panel_of(pilot):
    from tui.widgets.results import ResultsPanel

    app = pilot.app
    return await wait_for(
        pilot,
        lambda: app.screen.query(ResultsPanel) and app.screen.query_one(ResultsPanel),
        20,
        "the results",
    )


def test_a_save_after_the_still_running_mark_is_shown_at_once(make_app, workspace):
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(HANG, encoding="utf-8")

    async def body():
        app = make_app(open_workshop="A1", check_timeout=40)
        async with app.run_test(size=(120, 40)) as pilot:
            panel = await panel_of(pilot)
            panel.still_after = 1.0
            await wait_for(pilot, lambda: "still running" in status_of(app), 30, "the still-running line")
            await pilot.pause(1.5)  # well past the mark
            hung = digest_of(path)
            await save(pilot, path, SOLUTION)
            fixed = digest_of(path)
            seen = await wait_for(
                pilot, lambda: fixed[:8] in status_of(app) and status_of(app), 3, "the new save on the line"
            )
            assert f"the run of {hung[:8]} was cancelled" in seen
            if panel.digest == hung:  # the new run has not planned yet: the old rows cleared
                assert set(panel.statuses()) <= {"pending"} and not panel.stale
            # and it stays said until the new run plans (the old run's clock does not take it back)
            for _ in range(5):
                await pilot.pause(0.2)
                assert "still running" not in status_of(app) or panel.digest == fixed, status_of(app)
            panel = await wait_for_run(pilot, fixed, 40)
            assert set(panel.statuses()) == {"pass"}

    run(body())


def test_a_file_stuck_at_import_says_so_with_its_time(make_app, workspace):
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text("import time\nwhile True:\n    time.sleep(0.05)\n", encoding="utf-8")

    async def body():
        app = make_app(open_workshop="A1", check_timeout=40)
        async with app.run_test(size=(120, 40)) as pilot:
            panel = await panel_of(pilot)
            panel.still_after = 1.0
            seen = await wait_for(
                pilot,
                lambda: "importing your file" in status_of(app) and status_of(app),
                30,
                "the importing line",
            )
            assert seen.startswith("still running: importing your file for ") and "stops at 40 s" in seen
            seconds = int(seen.split(" for ")[1].split(" s")[0])
            await pilot.pause(1.6)
            later = status_of(app)
            assert int(later.split(" for ")[1].split(" s")[0]) > seconds, later  # it counts
            await save(pilot, path, SOLUTION)
            panel = await wait_for_run(pilot, digest_of(path), 40)
            assert set(panel.statuses()) == {"pass"}

    run(body())


def test_a_deleted_file_is_said_at_once_with_the_key_that_restores_it(make_app, workspace):
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(SOLUTION, encoding="utf-8")

    async def body():
        app = make_app(open_workshop="A1")
        toasts = Toasts(app)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot, digest_of(path))
            info = app.screen.query_one("#file-info")
            path.unlink()
            await wait_for(
                pilot, lambda: "r restores the starter" in toasts.said(), 3, "the deleted file's toast"
            )
            assert "was deleted" in toasts.said()
            assert "is missing: r restores the starter" in str(info.render())
            await pilot.press("r")
            await pilot.press("y")
            await wait_for(pilot, lambda: path.exists(), 5, "the starter back")
            await wait_for(pilot, lambda: "missing" not in str(info.render()), 5, "the file line")
            assert A1.exercise_name in str(info.render())

    run(body())
