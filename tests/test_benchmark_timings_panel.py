"""The app's timings panel (tui/widgets/timings.py, fed by tui/benchmark_child.py): bars drawn
against the reference, the baseline and the ceiling, host overhead and kernel facts,
and a panel that stays within 8 lines of an 80x24 terminal.  No GPU, no benchmark run:
synthetic rows."""

import asyncio

import pytest

from tui import benchmark_child

pytest.importorskip("textual")
from textual.app import App

from tui.widgets.timings import MAX_LINES, MarkedBar, TimingsPanel


def mine(variant="num_warps=4", median=10.0, role="candidate", **kw):
    row = dict(
        op="strided_softmax",
        shape="1024x1024",
        dtype="fp32",
        variant=variant,
        role=role,
        median_us=median,
        status="ok",
    )
    row.update(kw)
    return row


def test_marks_are_the_reference_the_baseline_and_the_ceiling():
    rows = [mine(ceiling_us=2.5), mine("torch.softmax", 13.0, "baseline")]
    reference = [mine(median=5.7), mine("num_warps=8", 5.5), mine(shape="other", median=1.0)]
    assert benchmark_child.markers(rows[0], rows, reference) == {
        "reference": 5.7,
        "baseline": 13.0,
        "ceiling": 2.5,
    }
    other = mine("copy-then-kernel", 11.0, fraction_of_ceiling=0.5)  # no ceiling_us: from the fraction
    assert benchmark_child.markers(other, rows, reference) == {
        "reference": 5.5,
        "baseline": 13.0,
        "ceiling": 5.5,
    }
    assert "baseline" not in benchmark_child.markers(rows[1], rows, [])  # not against itself


def test_bar_cells_put_each_mark_where_its_time_falls():
    bar = MarkedBar(size=20.0, end=10.0, marks={"reference": 5.0, "baseline": 20.0, "ceiling": 1.0})
    text = bar.plain(20)
    assert len(text) == 20 and text[0] == "|" and text[4] == "R" and text[19] == "B"
    assert text.count("█") == 10 - 2 and text[10:19] == "·" * 9  # filled up to 10 of 20 us
    assert (bar.end, bar.size) == (10.0, 20.0)


def test_host_overhead_per_call_and_kernel_cells():
    r = mine(
        device_us=3.0,
        per_call_us=11.0,
        host_us=8.0,
        launch_bound=True,
        kernels=[
            {
                "name": "_softmax",
                "n_regs": 40,
                "n_spills": 0,
                "shared_bytes": 2048,
                "num_warps": 4,
                "num_stages": 3,
                "launches": 1,
            },
            {"name": "_other"},
        ],
    )
    assert benchmark_child.fmt_host(r) == "8.00 launch-bound" and benchmark_child.fmt_per_call(r) == "11.00"
    assert benchmark_child.fmt_kernel(r) == "40r 0sp 4w 3st 2K +1"
    old = mine()  # a file from before these fields
    assert (
        benchmark_child.fmt_host(old)
        == benchmark_child.fmt_per_call(old)
        == benchmark_child.fmt_kernel(old)
        == benchmark_child.MISSING
    )
    assert benchmark_child.fmt_kernel(mine(kernels=[])) == "no triton"
    assert benchmark_child.fmt_host(mine(host_us=0.4, launch_bound=False)) == "0.40"


class PanelApp(App):
    def compose(self):
        yield TimingsPanel()


def test_the_panel_stays_within_eight_lines_and_scrolls_inside():
    async def body():
        app = PanelApp()
        async with app.run_test(size=(80, 24)) as pilot:
            panel = app.query_one(TimingsPanel)
            panel.set_status("timed abc12345")
            panel.set_results(
                [
                    mine(
                        f"v{i}",
                        10.0 + i,
                        device_us=10.0 + i,
                        per_call_us=20.0,
                        host_us=10.0 - i,
                        launch_bound=i < 2,
                    )
                    for i in range(12)
                ]
            )
            panel.set_reference([mine("v0", 8.0)])
            await pilot.pause()
            table = panel.query_one("#timings")
            assert table.row_count == 13
            assert panel.size.height <= MAX_LINES
            assert table.max_scroll_y > 0  # the rest is a scroll away
            cells = dict(zip((str(k.value) for k in table.columns), table.get_row_at(0)))
            assert isinstance(cells["bar"], MarkedBar) and cells["bar"].marks["reference"] == 8.0
            assert "launch-bound" in str(cells["host"])  # kept at 80 columns: it says the most

    asyncio.run(body())
