"""Snapshots of the main screens (pytest-textual-snapshot): the workshop screen at three
terminal sizes, the failure view, the explanation and a hint with a long code line at
80x24, and the timings panel.  Deterministic: a fixed terminal size, a fresh temporary workspace, and
the parts that vary between machines (the workspace path, the per-check times) masked
before the screenshot.  The README's pictures (tui/screenshots/) are copies of these.

Update after an intended change:  pytest tests/tui --snapshot-update
"""

from __future__ import annotations

import pytest

from workshops import catalog

from tui_helpers import digest_of, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")


def test_browse_screen(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=(120, 40))


async def settled(pilot, timeout: float = 10.0) -> None:
    """Wait until two screenshots 0.3 s apart are the same: whatever the app still does
    after the run (a timer restoring the lesson's place, a late toast) is done, so a
    loaded machine takes the same picture as an idle one."""
    import time

    end, last = time.monotonic() + timeout, None
    while time.monotonic() < end:
        await pilot.pause(0.3)
        now = pilot.app.export_screenshot()
        if now == last:
            return
        last = now


def _mask(screen, panel) -> None:
    screen.query_one("#file-info").update(
        f"Your file: <workspace>/{A1.exercise_name} (checks re-run on every save)"
    )
    if "time" in panel.table.columns:
        for key in list(panel.table.rows):
            panel.table.update_cell(key, "time", "-")


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_workshop_screen_passed(snap_compare, make_app, workspace, size):
    """Every check passes: the completion panel, the results, the lesson; at 200x60 the
    lesson's contents too."""
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(A1.solution.read_text(encoding="utf-8"), encoding="utf-8")

    async def run_before(pilot):
        panel = await wait_for_run(pilot, digest_of(path))
        assert set(panel.statuses()) == {"pass"}
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.query_one("#completion").display, 5, "completion")
        pilot.app.clear_notifications()
        _mask(screen, panel)
        await settled(pilot)

    assert snap_compare(make_app(open_workshop=A1.id), terminal_size=size, run_before=run_before)


def test_failure_view_with_the_map_of_wrong_elements(snap_compare):
    """Enter on a failing row: the whole message, the map of where the output is wrong
    (checks/judging/tensors.py error_map), why it matters, and the lesson section's key."""
    import torch
    from textual.app import App, ComposeResult

    from checks.judging.records import Record
    from checks.judging.tensors import mismatch_report
    from tui.screens.failure import FailureScreen
    from tui.widgets.results import ResultsPanel

    expected = torch.arange(12 * 40, dtype=torch.float64).reshape(12, 40) / 100
    got = expected.clone()
    got[:, 1:] += 1.0  # a column-stride bug: every column past 0 is wrong
    facts = mismatch_report(got, expected, atol=1e-5, rtol=1e-4)
    rec = Record(
        workshop="strided_softmax",
        id="transpose",
        label="a transposed view",
        status="fail",
        message="output: 468 of 480 elements wrong\nrows 0-11; cols 1-39",
        seconds=0.0,
        why="assuming a unit column stride reads the wrong elements",
        section="Address tables",
        details=facts,
    )

    class MapApp(App):
        CSS_PATH = "../../tui/app.tcss"

        def compose(self) -> ComposeResult:
            yield ResultsPanel()

        def on_mount(self) -> None:
            panel = self.query_one(ResultsPanel)
            panel.start([{"id": "transpose", "label": "a transposed view"}], "0123456789abcdef")
            panel.add(rec)
            panel.finish("done", [], "0123456789abcdef")
            self.push_screen(FailureScreen(rec))

    assert facts["map"][0].startswith(".#")
    assert snap_compare(MapApp(), terminal_size=(100, 30))


def test_explanation_at_80x24(snap_compare, make_app):
    """The explanation gets the whole width (its contents column folds away)."""
    from tui.screens.explanation import ExplanationScreen

    async def run_before(pilot):
        pilot.app.push_screen(ExplanationScreen(catalog.get("strided_softmax")))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ExplanationScreen), 5, "it")
        await pilot.pause(0.5)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_hint_with_a_long_code_line_at_80x24(snap_compare, make_app, workspace):
    """A1's last hint, zoomed: its longest code line continues on the next, marked."""
    from checks import workspace as ws

    ws.record_hints(A1.id, len(A1.hints), workspace)

    async def run_before(pilot):
        await wait_for_run(pilot)
        screen = pilot.app.screen
        await pilot.press("h", "z")
        hint = screen.query_one(f"#hint-{len(A1.hints)}")
        await pilot.pause(0.3)
        screen.query_one("#hints").scroll_to_widget(hint, top=True, animate=False)
        pilot.app.clear_notifications()
        await pilot.pause(0.3)

    assert snap_compare(make_app(open_workshop=A1.id), terminal_size=(80, 24), run_before=run_before)


def test_timings_panel_at_120x40(snap_compare):
    """Reference rows of one committed run: bars against the slowest at each shape, the
    baseline's mark where its time falls, the columns that fit 120."""
    import json
    from pathlib import Path

    from textual.app import App

    from tui import benchmark_child
    from tui.widgets.timings import TimingsPanel

    source = Path(__file__).resolve().parents[2] / "results" / "2026-12-03-c5ba5ce-h200-both.json"
    rows = [
        r for r in benchmark_child.rows_of(json.loads(source.read_text())) if r.get("op") == "strided_softmax"
    ]

    class Timings(App):
        CSS = "TimingsPanel { max-height: 40; } TimingsPanel #timings { max-height: 36; }"

        def compose(self):
            yield TimingsPanel()

        def on_mount(self) -> None:
            panel = self.query_one(TimingsPanel)
            panel.set_status(f"reference from {source.name}")
            panel.set_results([r for r in rows if r.get("shape") == "1024x1024"])
            panel.set_reference(rows[:16], source)

    assert snap_compare(Timings(), terminal_size=(120, 40))


def test_readme_screenshots_are_the_snapshots():
    """tui/screenshots/*.svg (the README's pictures) are copies of these snapshots."""
    from pathlib import Path

    here = Path(__file__).resolve().parent
    snaps = here / "__snapshots__" / "test_tui_snapshots"
    copies = {
        "browse.svg": "test_browse_screen.svg",
        "workshop.svg": "test_workshop_screen_passed[120x40].svg",
        "workshop-80x24.svg": "test_workshop_screen_passed[80x24].svg",
        "workshop-200x60.svg": "test_workshop_screen_passed[200x60].svg",
        "failing-check-map.svg": "test_failure_view_with_the_map_of_wrong_elements.svg",
        "explanation-80x24.svg": "test_explanation_at_80x24.svg",
        "hint-long-code-80x24.svg": "test_hint_with_a_long_code_line_at_80x24.svg",
        "timings.svg": "test_timings_panel_at_120x40.svg",
    }
    shots = here.parents[1] / "tui" / "screenshots"
    assert {p.name for p in shots.glob("*.svg")} == set(copies)
    for shot, snap in copies.items():
        assert (shots / shot).read_bytes() == (snaps / snap).read_bytes(), shot
