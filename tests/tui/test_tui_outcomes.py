"""One word per outcome everywhere (app, list, CLI, export); notices that belong to the
run that made them; `n` says why it cannot move on; the timings panel; one-line panels
that fit 80 columns; Help that opens on the keys."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from checks import workspace as ws
from checks.judging.records import Outcome, Record, outcome_line, outcome_of
from workshops import catalog

from readable_helpers import SIZE_IDS, SIZES, Toasts, drawn
from tui_helpers import digest_of, wait_for, wait_for_run

REPO = Path(__file__).resolve().parents[2]

A1 = catalog.get("online_normalizer")
I1 = catalog.get("strided_softmax")
WRONG = (A1.folder / "wrong" / "raw_denominator.py").read_text(encoding="utf-8")
sizes = pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)


def rec(status, id_="c", **kw):
    return Record(workshop="w", id=id_, label=id_, status=status, **kw)


def start_with(workspace, w, text: str):
    path = workspace / w.exercise_name
    workspace.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_outcome_words():
    gpu = rec("skipped", "bf16", message="needs a CUDA GPU; not run in the interpreter")
    cases = [
        ([rec("pass"), rec("pass", "d")], Outcome.PASSED),
        ([rec("pass"), gpu], Outcome.PASSED_HERE),
        ([rec("pass"), rec("fail", "d"), rec("todo", "e")], Outcome.FAILED),
        ([rec("pass"), rec("error", "d")], Outcome.FAILED),
        ([rec("pass"), rec("todo", "d"), gpu], Outcome.INCOMPLETE),
        ([rec("pass"), rec("not run", "d")], Outcome.NOT_RUN),
        ([gpu], Outcome.UNAVAILABLE),
    ]
    for records, word in cases:
        assert outcome_of(records) is word and outcome_line(records).startswith(f"{word}:"), records
    here = outcome_line([rec("pass"), gpu])
    assert "1 could not run here (bf16)" in here and "a machine with a CUDA GPU" in here  # named, and where
    assert outcome_line([rec("pass"), rec("error", "d")]) == "failed: 1 of 2 checks failed (1 error)"
    assert outcome_line([rec("pass")]) == "passed: the 1 check ran and passed"


def test_the_same_word_in_the_banner_table_list_and_export(tmp_path):
    from tui import export
    from tui.screens import browse
    from tui.widgets.completion import completion_text
    from tui.widgets.record_text import tally_line

    records = [rec("pass", f"p{i}") for i in range(34)] + [
        rec("skipped", f"s{i}", message="needs a CUDA GPU") for i in range(2)
    ]
    banner = completion_text(I1, records, [], interpreted=True, gpu=False).plain
    assert banner.startswith("Passed here: I1: 34 of 36 checks passed; 2 could not run here (s0, s1)")
    assert "complete" not in banner.lower()
    assert tally_line(records) == "passed here · 34/36 passed, 2 unavailable here"
    assert export.outcome_word("done", records) == "passed here"
    entry = {
        "status": "passed",
        "best": {"status": "passed", "passed": 34, "total": 36, "when": "2026-12-03"},
    }
    assert browse.status_text(entry).plain.startswith("passed here")
    assert browse.best_text(entry).startswith("passed here 34/36")
    assert browse.status_text({"status": "todo"}).plain == "incomplete"
    assert browse.status_text({"status": "failing"}).plain == "failed"
    assert export.outcome_word("cancelled", [rec("pass"), rec("not run", "d")]) == "not run"
    assert export.outcome_word("timeout", [rec("error"), rec("not run", "d")]) == "failed"


@sizes
def test_a_run_that_passes_here_says_passed_here_and_names_the_rest(make_app, workspace, size):
    """The banner, the status line and the toast of a run with checks that need a GPU."""
    from checks.running import End, RecordEvent
    from tui.run_loop import RunUpdate
    from tui.widgets.completion import CompletionPanel

    path = start_with(workspace, A1, A1.solution.read_text(encoding="utf-8"))

    async def body():
        app = make_app(open_workshop=A1.id)
        toasts = Toasts(app)
        async with app.run_test(size=size) as pilot:
            panel = await wait_for_run(pilot, digest_of(path))
            screen = app.screen
            records = list(screen.last.records)
            records[-1] = dataclasses.replace(records[-1], status="skipped", message="needs a CUDA GPU")
            app.clear_notifications()
            screen.was_passed = False
            # the same content checked again, its last check unavailable here
            generation = screen.controller.begin(panel.digest)
            run = screen.controller.records_of(generation)  # where a run keeps its records
            for record in records:
                run.add(record)
                screen.post_message(
                    RunUpdate(RecordEvent(record=record, generation=generation, content_hash=panel.digest))
                )
            end = End(outcome="done", generation=generation, content_hash=panel.digest)
            screen.post_message(RunUpdate(end))
            done = screen.query_one(CompletionPanel)
            await wait_for(pilot, lambda: "Passed here" in str(done.render()), 5, "the banner")
            said = str(done.render())
            assert records[-1].id in said and "CUDA GPU" in said
            assert "passed here · 10/11 passed, 1 unavailable here" in str(
                screen.query_one("#run-status").render()
            )
            assert [t for t, _ in toasts.live] == ["Passed here"]

    asyncio.run(body())


# --- notices belong to their run; n says why ---


@sizes
def test_notices_go_with_the_run_that_made_them(make_app, workspace, size):
    from tui.widgets.completion import CompletionPanel

    path = start_with(workspace, A1, A1.solution.read_text(encoding="utf-8"))

    async def body():
        app = make_app(open_workshop=A1.id)
        toasts = Toasts(app)
        async with app.run_test(size=size) as pilot:
            await wait_for_run(pilot, digest_of(path))
            screen = app.screen
            done = screen.query_one(CompletionPanel)
            await wait_for(pilot, lambda: done.display and toasts.live, 5, "the completion")
            assert "Passed" in toasts.said()
            # a re-run: the banner and the toast of the last run go at once
            screen.action_run_checks()  # what space does; the run it starts may be quick
            assert not done.display and not toasts.live
            await wait_for_run(pilot, digest_of(path))
            await wait_for(pilot, lambda: done.display, 5, "the completion again")
            # leaving for the list: the run's toast does not follow
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen.query("#workshops"), 5, "the list")
            assert not toasts.live

    asyncio.run(body())


@sizes
def test_n_says_why_it_cannot_move_on(make_app, workspace, size):
    path = start_with(workspace, A1, WRONG)

    async def body():
        app = make_app(open_workshop=A1.id)
        toasts = Toasts(app)
        async with app.run_test(size=size) as pilot:
            await wait_for_run(pilot, digest_of(path))
            screen = app.screen
            await pilot.press("n")
            await pilot.pause()
            assert app.screen is screen  # stayed
            said = toasts.said()
            assert "once every check that can run here passes" in said and "your file fails" in said, said

    asyncio.run(body())


# --- the timings panel ---


# One committed run, named: the layout tests must not change when newer evidence lands
# (the app itself shows the newest run, tested below).
PINNED_REFERENCE = "2026-12-03-cab4d8f-h200-both.json"


def reference_rows(tmp_path):
    from tui import benchmark_child

    shutil.copy(REPO / "results" / PINNED_REFERENCE, tmp_path / PINNED_REFERENCE)
    rows, source = benchmark_child.load_reference(I1.id, tmp_path)
    assert rows, "a committed reference run for strided_softmax"
    return rows, source


@pytest.mark.parametrize("width", [80, 120, 200])
def test_timings_bars_compare_within_a_shape_and_columns_fit(width, tmp_path):
    from textual.app import App

    from tui.widgets.timings import BAR_WIDTH, COLUMNS, MarkedBar, TimingsPanel

    rows, source = reference_rows(tmp_path)

    class One(App):
        def compose(self):
            yield TimingsPanel()

    async def body():
        app = One()
        async with app.run_test(size=(width, 24)) as pilot:
            panel = app.query_one(TimingsPanel)
            mine = [dict(r) for r in rows if r.get("shape") == rows[0].get("shape")]
            panel.set_results(mine)
            panel.set_reference(rows, source)
            await pilot.pause()
            table = panel.query_one("#timings")
            keys = [str(k.value) for k in table.columns]
            assert {"run", "variant", "median", "bar"} <= set(keys)
            assert keys == [k for _, k, _ in COLUMNS if k in keys]  # in their order
            assert sum(c.get_render_width(table) for c in table.columns.values()) <= width
            if width >= 200:
                assert len(keys) == len(COLUMNS)
            baseline = next(i for i, r in enumerate(mine) if r.get("role") == "baseline")
            cells = {str(k.value): table.get_row_at(baseline)[i] for i, k in enumerate(table.columns)}
            assert (
                isinstance(cells["bar"], MarkedBar) and "·" not in cells["bar"].plain()
            )  # the slowest: full
            fastest = min(range(len(mine)), key=lambda i: mine[i]["median_us"])
            bar = table.get_row_at(fastest)[keys.index("bar")].plain()
            assert 0 < bar.count("█") < BAR_WIDTH - 2  # a difference that shows
            assert bar.rstrip("·").endswith("B") or bar[-1] == "B"  # the slower baseline, at the right

    asyncio.run(body())


def test_reference_results_are_the_newest_run_by_its_recorded_time(tmp_path):
    from tui import benchmark_child

    def write(name, created, variant):
        payload = {
            "created": created,
            "results": [{"op": "strided_softmax", "variant": variant, "median_us": 1.0}],
        }
        (tmp_path / name).write_text(json.dumps(payload))

    # one day, two commits: the name sorts the older run last
    write("2026-12-03-cab4d8f-h200-both.json", "2026-12-03T08:04:03+0000", "older")
    write("2026-12-03-c5ba5ce-h200-both.json", "2026-12-03T08:23:47+0000", "newer")
    got, source = benchmark_child.load_reference("strided_softmax", tmp_path)
    assert [r["variant"] for r in got] == ["newer"] and "c5ba5ce" in source.name


@sizes
def test_no_reference_rows_where_nothing_can_be_timed(make_app, workspace, size):
    """Without a CUDA GPU the committed reference timings (unrelated to the learner's
    file) are neither loaded nor promised; the banner's line says why instead."""

    async def body():
        app = make_app(open_workshop=I1.id, gpu=False)
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: app.screen.query("TimingsPanel"), 10, "the workshop")
            await pilot.pause(1.0)
            panel = app.screen.query_one("TimingsPanel")
            assert not panel.reference and not panel.display
            assert "below" not in str(app.screen.query_one("#timings-status").render())
            assert "timings need" in str(app.screen.query_one("#banner").render())

    asyncio.run(body())


@pytest.mark.parametrize("width", [80, 100, 120, 200])
def test_the_list_keeps_every_status_whole_at_any_width(make_app, workspace, width):
    ws.record_result(I1.id, "passed", 36, 36, "y", workspace=workspace)  # passed before
    ws.record_progress(I1.id, "failing", "x", workspace)  # the longest status there is
    ws.record_progress(A1.id, "todo", "z", workspace)

    async def body():
        app = make_app()
        async with app.run_test(size=(width, 40)) as pilot:
            await pilot.pause(0.3)
            table = app.screen.query_one("#workshops")
            assert table.virtual_size.width <= table.size.width, "the list scrolls sideways"
            columns = [str(c.label) for c in table.columns.values()]
            assert columns[-1] == "Your status" and {"Code", "Workshop", "Device"} <= set(columns)
            assert columns[0] == "Level" or width < 100  # the code names the level too
            status = str(table.get_row(I1.id)[-1])
            assert status.startswith("failed") and "(passed before" in status
            if width >= 200:  # room for everything: every column, and when each result came
                assert "Prerequisite" in columns and "Sessions" in columns
                assert status.count("2") >= 2 and ":" in status, status

    asyncio.run(body())


def test_at_80x24_the_list_keeps_its_device_column_beside_failed_passed_before(make_app, workspace):
    """Without a GPU at 80 columns, "failed (passed before)" took the Device column away
    (where a GPU workshop runs here): the Level column goes instead (the code, I1 or A1,
    names the level), every status still whole."""
    from tui.screens.browse import device_text

    ws.record_result(I1.id, "passed", 36, 36, "y", workspace=workspace)  # passed before
    ws.record_progress(I1.id, "failing", "x", workspace)
    ws.record_result(A1.id, "passed", 31, 31, "y", workspace=workspace)
    ws.record_progress(A1.id, "todo", "z", workspace)  # "incomplete (passed before)": longer

    async def body():
        app = make_app(gpu=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            table = app.screen.query_one("#workshops")
            assert table.virtual_size.width <= table.size.width, "the list scrolls sideways"
            columns = [str(c.label) for c in table.columns.values()]
            assert "Device" in columns and columns[-1] == "Your status", columns
            assert str(table.get_cell(I1.id, "device")) == device_text(I1, False, "short")
            assert str(table.get_cell(I1.id, "status")) == "failed  (passed before)"
            assert str(table.get_cell(A1.id, "status")) == "incomplete  (passed before)"

    asyncio.run(body())


# --- one-line panels fit 80 columns ---


def test_one_line_panels_fit_80_columns(make_app, workspace):
    pytest.importorskip("torch")
    from tui.screens.workshop import BANNER_SHORT

    ws.record_result(I1.id, "passed", 36, 36, "y", workspace=workspace)  # passed before
    ws.record_progress(I1.id, "todo", "x", workspace)  # TODO now

    async def body():
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            table = app.screen.query_one("#workshops")
            assert table.virtual_size.width <= table.size.width, "the list's last column is cut"
            row = [str(c) for c in table.get_row(I1.id)]
            assert row[-1] == "incomplete  (passed before)"
            app.open_workshop(I1.id)
            banner = await wait_for(pilot, lambda: app.screen.query("#banner"), 10, "the workshop")
            await pilot.pause(0.3)
            banner = banner.first()
            assert str(banner.render()) == BANNER_SHORT and len(BANNER_SHORT) <= 78
            info = app.screen.query_one("#file-info")
            line = drawn(info)[0].rstrip()
            shown = str(info.render())
            assert line.strip() == shown or line.endswith("…"), (line, shown)

    asyncio.run(body())


# --- Help opens on the keys ---


@sizes
def test_help_opens_on_the_keys(make_app, size):
    from tui.screens.help import HelpScreen

    async def body():
        app = make_app()
        async with app.run_test(size=size) as pilot:
            await pilot.press("question_mark")
            help_ = await wait_for(
                pilot, lambda: isinstance(app.screen, HelpScreen) and app.screen, 5, "help"
            )
            await pilot.pause(0.3)
            box = help_.query_one("#help-text")
            headings = [h for h in help_.query("MarkdownH2")]
            assert str(headings[0].render()).strip() == "Keys"
            table = help_.query("MarkdownTable").first()
            assert box.region.y <= table.region.y < box.region.bottom  # the keys are on screen
            assert app.focused is box
            await pilot.press("pagedown")
            await pilot.pause()
            assert box.scroll_y > 0

    asyncio.run(body())
