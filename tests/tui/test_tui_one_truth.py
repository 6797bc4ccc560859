"""One truth per screen: export refuses while a re-check runs (it would export the
older file's result), the list marks a result of an older file as such, a timeout's
count of checks that ran agrees with its tally, and "now stale" is said only for
another content."""

from __future__ import annotations

import asyncio

from checks import workspace as ws
from checks.judging import Record
from workshops import catalog

from readable_helpers import Toasts
from tui_helpers import digest_of, save, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")
SOLUTION = A1.solution.read_text(encoding="utf-8")
HANG = SOLUTION + "\ndef merge(left, right):\n    while True:\n        pass\n"


def run(coro):
    return asyncio.run(coro)


def panel_app():
    from textual.app import App, ComposeResult

    from tui.widgets.results import ResultsPanel

    class One(App):
        def compose(self) -> ComposeResult:
            yield ResultsPanel()

    return One()


def test_export_refuses_while_a_recheck_runs(make_app, workspace, tmp_path):
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(SOLUTION, encoding="utf-8")

    async def body():
        app = make_app(open_workshop="A1", check_timeout=30)
        toasts = Toasts(app)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot, digest_of(path))
            await save(pilot, path, HANG)
            hung = digest_of(path)
            status = app.screen.query_one("#run-status")
            await wait_for(pilot, lambda: hung[:8] in str(status.render()), 10, "the re-check")
            await pilot.press("o")
            await pilot.pause(0.5)
            assert "being checked" in toasts.said()
            assert not list((tmp_path / "exports").glob("*.json"))  # the older result not written
            await save(pilot, path, SOLUTION)
            await wait_for_run(pilot, digest_of(path), 40)
            await pilot.press("o")
            await wait_for(pilot, lambda: list((tmp_path / "exports").glob("*.json")), 10, "the export")
            # --export-dir (the fixture's): the notice names that folder, not "beside your workspace"
            said = await wait_for(
                pilot, lambda: "Exported" in toasts.said() and toasts.said(), 5, "the notice"
            )
            assert "written to" in said and "beside your workspace" not in said
            assert "exports" in said.replace("\n", "")

    run(body())


def test_the_list_marks_a_result_of_an_older_file(make_app, workspace):
    workspace.mkdir(parents=True)
    path = ws.exercise_path(A1, workspace)
    path.write_text(SOLUTION, encoding="utf-8")
    ws.record_progress(A1.id, "passed", digest_of(path), workspace=workspace)
    other = catalog.get("strided_softmax")
    ws.exercise_path(other, workspace).write_text("# mine\n", encoding="utf-8")
    ws.record_progress(other.id, "failing", ws.content_hash(b"# older\n"), workspace=workspace)

    async def body():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.3)
            table = app.screen.query_one("#workshops")
            cell = lambda wid: str(table.get_cell(wid, "status"))
            assert cell(A1.id).startswith("passed") and "older" not in cell(A1.id)
            assert cell(other.id).startswith("failed") and "older file" in cell(other.id)
            assert "of an older file" in str(app.screen.query_one("#workshop-details").render())

    run(body())


def test_a_timeouts_checks_that_never_ran_are_not_counted_as_ran():
    async def body():
        from tui.widgets.results import ResultsPanel

        app = panel_app()
        async with app.run_test(size=(100, 30)) as pilot:
            panel = app.query_one(ResultsPanel)
            plan = [{"id": f"check-{i}", "label": "x"} for i in range(5)]
            panel.start(plan, "c" * 64)
            panel.add(Record("w", "check-0", "x", "pass"))
            panel.add(Record("w", "check-1", "x", "error", "timed out after 3 s"))
            records = list(panel.records.values()) + [
                Record("w", f"check-{i}", "x", "not run") for i in (2, 3, 4)
            ]
            panel.finish("timeout", records, "c" * 64)
            await pilot.pause()
            assert str(panel.query_one("#run-count").render()) == "2/5 ran"
            line = str(panel.status_line.render())
            assert "1/5 passed" in line and "3 not run" in line

    run(body())


def test_now_stale_only_for_another_content():
    async def body():
        from tui.widgets.results import ResultsPanel

        app = panel_app()
        async with app.run_test(size=(100, 30)) as pilot:
            panel = app.query_one(ResultsPanel)
            same, other = "a" * 64, "b" * 64
            panel.start([{"id": "one", "label": "x"}], same)
            panel.finish("done", [Record("w", "one", "x", "pass")], same)
            panel.mark_stale(same)  # space on the same content
            await pilot.pause()
            line = str(panel.status_line.render())
            assert line.startswith("re-checking aaaaaaaa") and "stale" not in line, line
            panel.mark_stale(other)
            await pilot.pause()
            assert "results below are for aaaaaaaa, now stale" in str(panel.status_line.render())

    run(body())


def test_the_export_notice_says_beside_your_workspace_only_there(make_app, workspace):
    from tui.export import default_export_dir

    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(SOLUTION, encoding="utf-8")

    async def body():
        app = make_app(open_workshop="A1", results_dir=default_export_dir(workspace))
        toasts = Toasts(app)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot, digest_of(path))
            await pilot.press("o")
            said = await wait_for(
                pilot, lambda: "Exported" in toasts.said() and toasts.said(), 10, "the notice"
            )
            assert "written beside your workspace to" in said

    run(body())


def test_a_long_workspace_path_keeps_the_file_name_at_80_columns(make_app, tmp_path):
    from tui.layout import file_line

    deep = tmp_path / ("a-rather-long-folder-name-" * 4) / "my-course-workspace"
    assert file_line(deep / A1.exercise_name, 40) == f"Your file: {A1.exercise_name}"
    line = file_line(deep / A1.exercise_name, 70)
    assert len(line) <= 70 and f"/{A1.exercise_name} (checks re-run on every save)" in line
    assert line.startswith("Your file: …")
    assert file_line(deep / A1.exercise_name, 0).startswith(f"Your file: {deep}")  # width unknown: whole

    async def body():
        app = make_app(open_workshop="A1", workspace=deep)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for_run(pilot)
            await pilot.pause(0.3)
            info = app.screen.query_one("#file-info")
            shown = str(info.render())
            assert A1.exercise_name in shown and len(shown) <= info.content_size.width, shown

    run(body())


def test_a_re_run_during_a_run_clears_the_cancelled_rows_and_counts_from_0():
    """Space while checks run: the rows that were running no longer tick ("RUN 0s"), the
    rows that ran go back to not yet run (not left dimmed until the new run plans), and the
    count starts again at 0 rather than going on from the cancelled run's."""

    async def body():
        from tui.widgets.results import ResultsPanel

        app = panel_app()
        async with app.run_test(size=(80, 24)) as pilot:  # no Time column: the status ticks
            panel = app.query_one(ResultsPanel)
            plan = [{"id": f"check-{i}", "label": "x"} for i in range(4)]
            panel.start(plan, "a" * 64)
            panel.add(Record("w", "check-0", "x", "pass"))
            panel.started("check-1")
            await pilot.pause()
            assert "RUN" in str(panel.table.get_cell("check-1", "status"))
            assert str(panel.query_one("#run-count").render()) == "1/4 ran"
            panel.mark_stale("a" * 64)  # space on the same content, mid-run
            # at once: every row as before a run (the pending dot), none dimmed
            assert [str(panel.table.get_cell(f"check-{i}", "status")) for i in range(4)] == ["·"] * 4
            assert set(panel.statuses()) == {"pending"} and not panel.stale
            assert str(panel.query_one("#run-count").render()) == "0/4 ran"
            await pilot.pause(1.2)  # a tick of the clock
            assert "RUN" not in str(panel.table.get_cell("check-1", "status"))
            assert str(panel.query_one("#run-count").render()) == "0/4 ran"
            # the new run's plan: the previous run compared with is still the last finished one
            panel.start(plan, "a" * 64)
            assert panel.previous == {}

    run(body())


def test_the_line_under_the_table_ends_in_an_ellipsis_and_keeps_enters_hint():
    """A summary longer than the two lines under the table is cut with an ellipsis (Enter
    shows all of it), never mid-sentence without notice."""

    async def body():
        from tui.widgets.results import DETAIL_LINES, ResultsPanel

        app = panel_app()
        async with app.run_test(size=(80, 24)) as pilot:
            panel = app.query_one(ResultsPanel)
            panel.start([{"id": "long", "label": "x"}], "a" * 64)
            words = " ".join(f"word{i}" for i in range(80))
            panel.add(Record("w", "long", "x", "fail", f"output: 3 of 9 elements wrong; {words}"))
            panel.table.focus()
            await pilot.pause()
            panel.show_detail("long")
            await pilot.pause()
            shown = str(panel.query_one("#record-detail").render())
            lines = [line for line in shown.splitlines() if line.strip()]
            assert len(lines) <= DETAIL_LINES, shown
            assert "…" in lines[-1] and lines[-1].rstrip().endswith("(Enter: details)"), shown
            assert "word79" not in shown

    run(body())
