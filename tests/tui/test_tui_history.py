"""The timings panel against the learner's history of timed saves: the vs-last and
vs-best columns after two saves, the chart line, the app recording a finished benchmark,
and the export carrying the history."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable

import pytest

from checks import workspace as ws
from checks.benchmark import history
from workshops import catalog

from tui_helpers import wait_for, wait_for_run

I1 = catalog.get("strided_softmax")


def row(
    median: float, variant: str = "num_warps=4", role: str = "candidate", shape: str = "16384x8192"
) -> dict:
    return {
        "op": I1.id,
        "shape": shape,
        "shape_role": "roofline" if shape.startswith("16384") else "comparison",
        "dtype": "fp32",
        "variant": variant,
        "role": role,
        "status": "ok",
        "median_us": median,
        "p20_us": median - 0.5,
        "p80_us": median + 0.5,
        "device_us": median,
        "per_call_us": median + 4.0,
        "bytes": 1 << 29,
    }


FIRST = [row(100.0), row(50.0, "num_warps=8"), row(300.0, "torch.softmax", "baseline")]
SECOND = [row(88.0), row(50.4, "num_warps=8"), row(299.0, "torch.softmax", "baseline"), row(9.0, "new")]


def table_text(panel) -> list:
    table = panel.query_one("#timings")
    keys = [str(k.value) for k in table.columns]
    return [{k: str(v) for k, v in zip(keys, table.get_row_at(i))} for i in range(table.row_count)]


@pytest.mark.parametrize("width", [80, 200])
def test_the_change_columns_after_two_saves(tmp_path: Path, width: int) -> None:
    """Wide: both changes in words; at 80 columns the change against the last save stays,
    in its short words (beyond noise is the bare number, coloured)."""
    from textual.app import App

    from tui.widgets.timings import CHANGE_COLUMNS, COLUMNS, TimingsPanel

    history.record_save(tmp_path, I1.id, "first", FIRST)

    class One(App):
        def compose(self):
            yield TimingsPanel()

    async def body() -> None:
        app = One()
        async with app.run_test(size=(width, 24)) as pilot:
            panel = app.query_one(TimingsPanel)
            panel.set_results(SECOND)
            await pilot.pause()
            assert "vs_last" not in [r for r in table_text(panel)[0]]  # not yet a save
            panel.record_save(tmp_path, I1.id, "second")
            await wait_for(pilot, lambda: "vs_last" in table_text(panel)[0], 10, "the change column")
            rows = table_text(panel)
            keys = list(rows[0])
            assert keys == [k for _, k, _ in COLUMNS[:5] + CHANGE_COLUMNS + COLUMNS[5:] if k in keys]
            table = panel.query_one("#timings")
            assert sum(c.get_render_width(table) for c in table.columns.values()) <= width
            wide = width >= 200
            assert rows[0]["vs_last"] == ("-12 % (beyond noise)" if wide else "-12 %")
            assert rows[1]["vs_last"] == ("+1 % (noise)" if wide else "+1 % noise")
            assert rows[2]["vs_last"] == ""  # the baseline is not the learner's kernel
            assert rows[3]["vs_last"] == "—"  # a new variant: nothing earlier to compare with
            if wide:
                assert rows[0]["vs_best"] == "-12 % (beyond noise)"
            cell = table.get_row_at(0)[keys.index("vs_last")]
            assert "green" in str(cell.style)  # faster beyond the noise
            chart = str(panel.query_one("#timings-chart").render())
            assert (
                panel.has_class("charted")
                and chart == "yours at 16384x8192 fp32, last 2 saves: █▁ 50.0 → 9.0 µs"
            )
            assert len(chart) <= width - 2
            # the save was kept: a third benchmark of other content compares with it
            saves = history.load(tmp_path, I1.id)
            assert [s.content_hash for s in saves] == ["first", "second"]
            panel.set_results([row(95.0)])
            await pilot.pause()
            assert "vs_last" not in table_text(panel)[0] and not panel.has_class("charted")
            panel.set_history(saves + [history.Save("t", "third", [history.reduce_row(row(95.0))])], "third")
            await pilot.pause()
            got = table_text(panel)[0]
            slower = "+8 % (beyond noise)" if wide else "+8 %"
            assert got["vs_last"] == slower  # against 88 µs, the previous save
            if wide:
                assert got["vs_best"] == slower  # 88 µs is also the best so far
            cell = table.get_row_at(0)[list(got).index("vs_last")]
            assert "red" in str(cell.style)

    asyncio.run(body())


def test_a_finished_benchmark_is_recorded_and_exported(make_app, workspace: Path) -> None:
    """The app's path: a BenchmarkFinished of the open workshop goes into its history, the
    table shows the change against the earlier save, and the export carries both saves."""
    from tui.messages import BenchmarkFinished
    from tui.run_loop import RunUpdate
    from tui.widgets.timings import TimingsPanel

    state = ws.state_dir(workspace)
    history.record_save(state, I1.id, "an-earlier-file", FIRST)

    async def body() -> None:
        app = make_app(open_workshop=I1.id)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await wait_for(
                pilot, lambda: getattr(app.screen, "controller", None) and app.screen, 10, "the workshop"
            )
            await wait_for_run(pilot, timeout=90)
            digest = screen.last.content_hash
            panel = screen.query_one(TimingsPanel)
            screen.post_message(RunUpdate(BenchmarkFinished(screen.controller.generation, digest, SECOND)))
            await wait_for(pilot, lambda: panel.saves_hash == digest, 15, "the save recorded")
            rows = table_text(panel)
            words = [history.fmt_delta(c.last, short=True) if c else "" for c in panel.changes()]
            assert words == ["-12 %", "+1 % noise", "", "—"]
            shown = [r["vs_last"] for r in rows if r["run"] == "yours"]
            assert shown in (words, ["-12 % (beyond noise)", "+1 % (noise)", "", "—"])  # as it fits
            saves = history.load(state, I1.id)
            assert [s.content_hash for s in saves] == ["an-earlier-file", digest]
            data = screen.export_payload()
            assert data is not None
            assert [s["content_hash"] for s in data["history"]] == ["an-earlier-file", digest]
            assert data["history"][1]["rows"][0]["median_us"] == 88.0

    asyncio.run(body())


def test_the_export_reads_the_history_of_its_state_folder(tmp_path: Path) -> None:
    from checks.judging.records import Record
    from checks.running import RunRecords
    from tui import export

    last = RunRecords(content_hash="d" * 64)
    last.add(Record(workshop=I1.id, id="a", label="a", status="pass"))
    last.outcome = "done"
    data = export.payload(I1, tmp_path / "workspace" / I1.exercise_name, last, {}, False)
    assert data is not None and data["history"] == []
    history.record_save(ws.state_dir(tmp_path / "workspace"), I1.id, "d" * 64, FIRST)
    data = export.payload(I1, tmp_path / "workspace" / I1.exercise_name, last, {}, False)
    assert data is not None and len(data["history"]) == 1 and data["history"][0]["content_hash"] == "d" * 64
    other = tmp_path / "elsewhere"
    history.record_save(other, I1.id, "e", FIRST)
    data = export.payload(I1, tmp_path / "x.py", last, {}, False, state_dir=other)
    assert data is not None and [s["content_hash"] for s in data["history"]] == ["e"]


def test_opening_a_workshop_shows_the_last_timed_save(
    make_app: Callable, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before any benchmark in this session: the last of two timed saves, its rows
    labelled as that save (not the file's current timings), with the chart line; the
    first row of a new benchmark replaces them."""
    from tui.messages import BenchmarkRow
    from tui.run_loop import RunUpdate
    from tui.widgets.timings import PAST, TimingsPanel

    monkeypatch.setenv("KERNEL_COURSE_COMPILERS", "0")  # no compile workers for this look
    state = ws.state_dir(workspace)
    history.record_save(state, I1.id, "first", FIRST, when="2026-11-30T10:00:00+0000")
    history.record_save(state, I1.id, "second", SECOND, when="2026-12-01T11:22:33+0000")

    async def body() -> None:
        app = make_app(open_workshop=I1.id, gpu=True, bench=False)
        async with app.run_test(size=(200, 50)) as pilot:
            panel = await wait_for(
                pilot,
                lambda: app.screen.query(TimingsPanel) and app.screen.query_one(TimingsPanel),
                10,
                "the workshop",
            )
            await wait_for(pilot, lambda: panel.has_class("charted"), 15, "the chart line")
            chart = str(panel.query_one("#timings-chart").render())
            assert chart == "yours at 16384x8192 fp32, last 2 saves: █▁ 50.0 → 9.0 µs"
            rows = table_text(panel)
            mine = [r for r in rows if r["run"] == PAST]
            assert [r["variant"] for r in mine] == [
                "num_warps=4 (candidate)",
                "num_warps=8 (candidate)",
                "torch.softmax (baseline)",
                "new (candidate)",
            ]
            assert not [r for r in rows if r["run"] == "yours"] and panel.results == []
            assert mine[0]["vs_last"] == "-12 % (beyond noise)"  # the last save against the one before
            legend = str(panel.query_one("#timings-legend").render())
            assert legend.startswith(f"{PAST}: your last timed save (2026-12-01 11:22), not yet this file's")
            screen = app.screen
            generation = screen.controller.generation
            screen.post_message(RunUpdate(BenchmarkRow(generation, "now", row(70.0))))
            await wait_for(pilot, lambda: panel.results, 10, "the new benchmark's row")
            rows = table_text(panel)
            assert [r["run"] for r in rows if r["run"] != "reference"] == ["yours"]
            assert not panel.has_class("charted")  # compared with the history once it is kept
            assert not str(panel.query_one("#timings-legend").render()).startswith(PAST)

    asyncio.run(body())


def test_a_workshop_without_timed_saves_shows_no_past_rows(tmp_path: Path) -> None:
    from textual.app import App

    from tui.widgets.timings import TimingsPanel

    class One(App):
        def compose(self):
            yield TimingsPanel()

    async def body() -> None:
        app = One()
        async with app.run_test(size=(120, 24)) as pilot:
            panel = app.query_one(TimingsPanel)
            panel.load_past(tmp_path, I1.id)  # no history file
            await pilot.pause(0.5)
            assert panel.past is None and panel.has_class("empty") and not panel.has_class("charted")
            panel.set_results([row(95.0)])  # a benchmark came before the history was read
            panel.show_past(
                history.load(tmp_path, I1.id) or [history.Save("t", "old", [history.reduce_row(row(1.0))])]
            )
            await pilot.pause()
            assert panel.past is None and [r["run"] for r in table_text(panel)] == ["yours"]

    asyncio.run(body())


def test_a_run_that_fails_takes_its_content_out_of_the_best(make_app, workspace: Path) -> None:
    """A content timed earlier (its checks passed then) whose run now fails: the app keeps
    the verdict in the history, so that save's time is no longer anyone's best."""
    import hashlib

    state = ws.state_dir(workspace)
    digest = hashlib.sha256(I1.starter.read_bytes()).hexdigest()  # the learner's copy is the starter
    history.record_save(state, I1.id, digest, [row(10.0)])
    assert history.load(state, I1.id)[0].passed

    async def body() -> None:
        app = make_app(open_workshop=I1.id)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await wait_for(
                pilot, lambda: getattr(app.screen, "controller", None) and app.screen, 10, "the workshop"
            )
            await wait_for_run(pilot, timeout=90)
            assert screen.last.content_hash == digest and not screen.passed  # the starter is TODO
            await wait_for(
                pilot, lambda: not history.load(state, I1.id)[0].passed, 15, "the verdict in the history"
            )
            assert history.compare(row(50.0), history.load(state, I1.id)).best is None

    asyncio.run(body())
