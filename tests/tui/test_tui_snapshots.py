"""Snapshots of the main screens (pytest-textual-snapshot).  Deterministic: a fixed
terminal size, a fresh temporary workspace, and the parts that vary between machines
(the workspace path, the per-check times) masked before the screenshot.

Update after an intended change:  pytest tests/tui --snapshot-update
"""
from __future__ import annotations

from tui_helpers import digest_of, wait_for_run
from workshops import catalog

SIZE = (120, 40)


def test_browse_screen(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=SIZE)


def test_workshop_screen_with_results(snap_compare, make_app, workspace):
    w = catalog.get("online_normalizer")
    path = workspace / w.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(w.solution.read_text(encoding="utf-8"), encoding="utf-8")

    async def run_before(pilot):
        panel = await wait_for_run(pilot, digest_of(path))
        assert set(panel.statuses()) == {"pass"}
        screen = pilot.app.screen
        screen.query_one("#file-info").update(
            f"Your file: <workspace>/{w.exercise_name}\n"
            "e edit in $EDITOR · r reset to the starter · checks re-run on every save")
        for key in list(panel.table.rows):
            panel.table.update_cell(key, "time", "-")
        await pilot.pause()

    assert snap_compare(make_app(open_workshop=w.id), terminal_size=SIZE, run_before=run_before)
