"""The results table shows what matters at every size from 80 columns: each check's id
whole, the Message column given the room that is left (no empty columns at the right),
a mark for a row newly failing or newly passing that costs no message text, and a
running row's clock whole."""

from __future__ import annotations

import asyncio
import time

import pytest

from checks.judging.records import Record
from workshops import catalog

from tui_helpers import digest_of, save, wait_for_run

A1 = catalog.get("online_normalizer")
WRONG = (A1.folder / "wrong" / "raw_denominator.py").read_text(encoding="utf-8")
SIZES = [(80, 24), (100, 30), (120, 40), (200, 60)]
# the longest check id of the course (fused_gemm, streaming_attention)
LONGEST_ID = "causal-future-independence"


def _widths(table) -> dict:
    return {str(k.value): c.width for k, c in table.columns.items()}


def _fills_the_width(table) -> bool:
    """Every column (its width and its padding of 1 on either side) and the scrollbar's
    column add up to the table's width: nothing empty at the right, nothing off it."""
    from tui.widgets.results import PAD, SCROLLBAR

    widths = _widths(table)
    return sum(widths.values()) + PAD * len(widths) + SCROLLBAR == table.size.width


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_ids_whole_messages_fill_the_rest_and_newly_failing_is_marked(make_app, workspace, size):
    from tui.widgets.record_text import first_line, summary

    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(A1.solution.read_text(encoding="utf-8"), encoding="utf-8")

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=size) as pilot:
            await wait_for_run(pilot, digest_of(path))
            await save(pilot, path, WRONG)
            panel = await wait_for_run(pilot, digest_of(path))
            await pilot.pause(0.3)
            table = panel.table
            assert _fills_the_width(table), (_widths(table), table.size.width)
            widths = _widths(table)
            assert widths["message"] >= 20, widths
            newly_failing = 0
            for rec in panel.records.values():
                assert str(table.get_cell(rec.id, "check")) == rec.id  # whole
                message = str(table.get_cell(rec.id, "message"))
                status = str(table.get_cell(rec.id, "status"))
                if rec.status == "fail":
                    # pass -> fail: the mark is in the Status cell; the message is as long
                    # as a row's that did not change
                    assert panel.change_of(rec) == "newly failing"
                    assert status == "FAIL ▼"
                    assert message == first_line(summary(rec), widths["message"])
                    assert len(message) == min(len(summary(rec)), widths["message"])
                    newly_failing += 1
                else:
                    assert status == "PASS"
            assert newly_failing >= 2
            # the row under the cursor says it in words below the table
            detail = str(panel.query_one("#record-detail").render())
            assert "newly failing" in detail and panel.cursor_record().id in detail

    asyncio.run(body())


@pytest.mark.parametrize("width", [55, 80, 100, 120, 200])
def test_the_longest_check_id_of_the_course_is_whole(width):
    """55: the results side of a 100-column terminal (its least width, tui.layout)."""
    from textual.app import App, ComposeResult

    from tui.widgets.results import MESSAGE_MIN, ResultsPanel

    class One(App):
        def compose(self) -> ComposeResult:
            yield ResultsPanel()

    async def body():
        app = One()
        async with app.run_test(size=(width, 20)) as pilot:
            panel = app.query_one(ResultsPanel)
            plan = [{"id": LONGEST_ID, "label": "a long description " * 6}, {"id": "basic", "label": "b"}]
            panel.start(plan, "a" * 64)
            panel.add(
                Record(workshop="w", id=LONGEST_ID, label="l", status="fail", message="wrong values " * 20)
            )
            await pilot.pause()
            table = panel.table
            assert str(table.get_cell(LONGEST_ID, "check")) == LONGEST_ID
            assert _fills_the_width(table), (_widths(table), table.size.width)
            assert _widths(table)["message"] >= MESSAGE_MIN
            # a row with nothing said yet shows what its check is about, dim
            assert str(table.get_cell("basic", "message")) == "b"

    asyncio.run(body())


def test_a_running_row_shows_its_time_whole_without_a_time_column():
    from textual.app import App, ComposeResult

    from tui.widgets.results import ResultsPanel

    class One(App):
        def compose(self) -> ComposeResult:
            yield ResultsPanel()

    async def body():
        app = One()
        async with app.run_test(size=(60, 20)) as pilot:
            panel = app.query_one(ResultsPanel)
            panel.start([{"id": "worked-merge", "label": "x"}], "b" * 64)
            await pilot.pause()
            assert "time" not in panel.table.columns  # 60 columns: no room for it
            panel.started("worked-merge")
            panel.running_since["worked-merge"] = time.monotonic() - 120.2
            panel._tick()
            assert str(panel.table.get_cell("worked-merge", "status")) == "RUN 120s"

    asyncio.run(body())
