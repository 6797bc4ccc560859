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


def test_failing_check_shows_where_the_output_is_wrong(snap_compare):
    """The map of a failing numeric check (checks/tensors.py error_map) beside the table."""
    import torch
    from textual.app import App, ComposeResult

    from checks.records import Record
    from checks.tensors import mismatch_report
    from tui.widgets.results import ResultsPanel

    expected = torch.arange(12 * 40, dtype=torch.float64).reshape(12, 40) / 100
    got = expected.clone()
    got[:, 1:] += 1.0             # a column-stride bug: every column past 0 is wrong
    facts = mismatch_report(got, expected, atol=1e-5, rtol=1e-4)

    class MapApp(App):
        def compose(self) -> ComposeResult:
            yield ResultsPanel()

        def on_mount(self) -> None:
            panel = self.query_one(ResultsPanel)
            panel.start([{"id": "transpose", "label": "a transposed view"}], "0123456789abcdef")
            panel.add(Record(workshop="strided_softmax", id="transpose", label="a transposed view",
                             status="fail", message="output: 468 of 480 elements wrong", seconds=0.0,
                             why="assuming a unit column stride reads the wrong elements",
                             section="Address tables", details=facts))
            panel.finish("done", [], "0123456789abcdef")

    assert facts["map"][0].startswith(".#")
    assert snap_compare(MapApp(), terminal_size=(100, 30))
