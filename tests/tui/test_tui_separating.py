"""The app's status line says what the failing checks share (checks/judging/properties.py)."""

import asyncio

from checks.judging.records import Record


def _rec(id, status, props):
    return Record(workshop="w", id=id, label=id, status=status, details={"properties": props})


def test_the_status_line_says_the_property_every_failing_check_shares():
    from textual.app import App, ComposeResult

    from tui.widgets.results import ResultsPanel

    class One(App):
        def compose(self) -> ComposeResult:
            yield ResultsPanel()

    async def body():
        app = One()
        async with app.run_test(size=(160, 20)) as pilot:
            panel = app.query_one(ResultsPanel)
            plan = [{"id": i, "label": i} for i in ("basic", "transpose", "widest")]
            panel.start(plan, "c" * 64)
            records = [
                _rec("basic", "fail", ["ragged"]),
                _rec("transpose", "fail", ["strided", "ragged"]),
                _rec("widest", "pass", ["tile-multiple"]),
            ]
            panel.finish("done", records, "c" * 64)
            await pilot.pause()
            text = panel.status_line.text
            assert "Fails only where the width is not a multiple of the tile" in text
            # a passing check that shares it: nothing is said
            panel.start(plan, "d" * 64)
            panel.finish("done", records[:2] + [_rec("widest", "pass", ["ragged"])], "d" * 64)
            await pilot.pause()
            assert "Fails only where" not in panel.status_line.text

    asyncio.run(body())
