"""Headless journeys through the app with a pilot, on a temporary workspace."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from checks import workspace as ws
from checks.judging.records import Record
from workshops import catalog

from readable_helpers import Toasts
from tui_helpers import digest_of, ready_workers, save, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")
SEED_CODES = {"I1", "I2", "I3", "A1", "A2", "A3"}


def run(coro):
    return asyncio.run(coro)


async def open_from_list(pilot, workshop_id: str):
    """Pick a workshop on the browse screen with the keyboard."""
    from tui.screens.workshop import WorkshopScreen

    table = pilot.app.screen.query_one("#workshops")
    table.focus()
    ids = [k.value for k in table.rows]
    await pilot.press("home")
    for _ in range(ids.index(workshop_id)):
        await pilot.press("down")
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, WorkshopScreen), 10, "the workshop")
    return pilot.app.screen


# --- browse -----------------------------------------------------------------------


def test_browse_lists_every_catalogued_workshop(make_app):
    async def body():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            table = app.screen.query_one("#workshops")
            ids = [k.value for k in table.rows]
            assert ids == [w.id for w in catalog.workshops()]
            text = " ".join(str(table.get_row(i)) for i in ids)
            for w in catalog.workshops():
                assert w.code in text and w.title in text and w.prerequisite in text
            assert "not started" in text
            levels = [str(table.get_row(i)[0]) for i in ids]
            assert "Intermediate" in levels or not any(w.level == "intermediate" for w in catalog.workshops())
            assert "Advanced" in levels

    run(body())


def test_browse_shows_the_six_workshops(make_app):
    assert {w.code for w in catalog.workshops()} == SEED_CODES

    async def body():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert app.screen.query_one("#workshops").row_count == 6

    run(body())


def test_corrupt_progress_file_warns_and_does_not_crash(make_app, workspace):
    p = ws.progress_path(workspace)
    p.parent.mkdir(parents=True)
    p.write_text("{not json", encoding="utf-8")

    async def body():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            warn = app.screen.query_one("#progress-warning")
            assert warn.display and "progress file was unreadable" in str(warn.render())
            assert app.screen.query_one("#workshops").row_count == len(catalog.workshops())

    run(body())


# --- one workshop: lesson, hints, TODO, wrong, right, unchanged save, export ------


def test_online_normalizer_journey(make_app, workspace, tmp_path):
    from textual.widgets import MarkdownViewer

    from tui.screens.workshop import WorkshopScreen

    async def body():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await open_from_list(pilot, "online_normalizer")
            assert isinstance(screen, WorkshopScreen) and screen.workshop.id == A1.id
            path = workspace / A1.exercise_name
            assert path.read_bytes() == A1.starter.read_bytes()  # created from the starter

            # the lesson, with its headings in a table of contents
            viewer = screen.query_one("#lesson", MarkdownViewer)
            headings = [line.lstrip("#").strip() for line in A1.lesson.splitlines() if line.startswith("## ")]
            assert headings
            await wait_for(pilot, lambda: viewer.document.table_of_contents, 10, "the contents")
            toc = [label for _level, label, _id in viewer.document.table_of_contents]
            for h in headings:
                assert any(h in label for label in toc), (h, toc)

            # hints, one tier at a time
            hints = screen.query_one("#hints")
            n = len(A1.hints)
            assert n >= 2
            await pilot.press("h")
            assert f"hint 1 of {n}" in str(hints.query_one("#hint-counter").render())
            shown = hints.shown_text()
            assert A1.hints[0].splitlines()[0].lstrip("# ") in shown
            assert A1.hints[1].splitlines()[0].lstrip("# ") not in shown
            await pilot.press("h")
            assert f"hint 2 of {n}" in str(hints.query_one("#hint-counter").render())
            assert A1.hints[1].splitlines()[0].lstrip("# ") in hints.shown_text()

            # the starter: every check is TODO
            panel = await wait_for_run(pilot, digest_of(path))
            assert panel.statuses() and set(panel.statuses()) == {"todo"}
            cells = [str(panel.table.get_cell_at((i, 0))) for i in range(panel.table.row_count)]
            assert set(cells) == {"TODO"}
            assert digest_of(path)[:8] in str(screen.query_one("#run-status").render())

            # a wrong answer: FAIL rows
            await save(pilot, path, (A1.folder / "wrong" / "raw_denominator.py").read_text())
            wrong = digest_of(path)
            panel = await wait_for_run(pilot, wrong)
            assert "fail" in panel.statuses()
            assert "FAIL" in [str(panel.table.get_cell_at((i, 0))) for i in range(panel.table.row_count)]
            assert wrong[:8] in str(screen.query_one("#run-status").render())

            # the reference answer: all PASS, recorded as progress
            await save(pilot, path, A1.solution.read_text())
            right = digest_of(path)
            panel = await wait_for_run(pilot, right)
            assert set(panel.statuses()) == {"pass"} and len(panel.statuses()) >= 5
            assert right[:8] in str(screen.query_one("#run-status").render())
            progress, _ = ws.load_progress(workspace)
            assert progress[A1.id]["status"] == "passed"
            assert progress[A1.id]["content_hash"] == right

            # a save that changes nothing starts no run
            started, skipped = screen.runs_started, screen.saves_skipped
            await save(pilot, path, A1.solution.read_text())
            await wait_for(pilot, lambda: screen.saves_skipped > skipped, 15, "the unchanged save")
            await pilot.pause(0.5)
            assert screen.runs_started == started

            # export: the JSON matches the table
            await pilot.press("o")
            out = tmp_path / "exports"
            files = await wait_for(
                pilot, lambda: sorted(out.glob("online_normalizer-*.json")), 10, "the export"
            )
            data = json.loads(files[0].read_text())
            assert data["schema"] == "kernel-course/export" and data["version"] == 2
            assert data["workshop"] == A1.id and data["content_hash"] == right
            assert Path(data["file"]) == path and data["created"]
            recs = [Record.from_dict(r) for r in data["records"]]
            assert [(r.id, r.status) for r in recs] == [(k, r.status) for k, r in panel.records.items()]
            assert data["benchmarks"] == []

        # progress persists across restarts
        app2 = make_app()
        async with app2.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            row = app2.screen.query_one("#workshops").get_row(A1.id)
            assert "passed" in str(row[-1])

    run(body())


def test_newer_save_cancels_a_stale_run_and_keys_stay_responsive(make_app, workspace):
    """A run stuck in the learner's code is cancelled by the next save; its result never
    shows; keys are answered within 100 ms meanwhile."""
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text("import time\ntime.sleep(60)\n" + A1.solution.read_text())

    async def body():
        app = make_app(open_workshop="online_normalizer")
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await wait_for(
                pilot, lambda: getattr(app.screen, "controller", None) and app.screen, 10, "the workshop"
            )
            await wait_for(pilot, lambda: screen.controller.running(), 10, "the slow run")
            slow = screen.controller._run
            # keys are answered while the run goes on (the run is in a thread and a child):
            # the time from the key event to its action starting
            handled = []
            action = screen.action_hint
            screen.action_hint = lambda: (handled.append(time.perf_counter()), action())
            delays = []
            for _ in range(5):
                before = screen.query_one("#hints").shown
                t0 = time.perf_counter()
                await pilot.press("h")
                delays.append(handled[-1] - t0)
                assert screen.query_one("#hints").shown == min(before + 1, len(A1.hints))
            assert slow.outcome == "running"
            # answered while the run still goes on, not after it (a run takes seconds)
            assert max(delays) < 1.0, delays
            # a newer save cancels it
            await save(pilot, path, A1.solution.read_text())
            panel = await wait_for_run(pilot, digest_of(path), 30)
            assert set(panel.statuses()) == {"pass"}
            # (ChildRun may call a cancel that races the pipe's EOF "crashed"; either way it
            # is stale: its records are not the ones shown)
            assert slow.outcome in ("cancelled", "crashed")
            assert all(r.status == "pass" for r in panel.records.values())
            assert slow.worker.proc.poll() is not None  # the process group is gone

    run(body())


def test_infinite_loop_ends_as_timeout_error(make_app, workspace):
    """A hang looks like a hang: a RUN row whose time ticks, a "still running" line,
    then a timeout that shows the real elapsed time (never 0.00s)."""
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(A1.solution.read_text() + "\ndef merge(left, right):\n    while True:\n        pass\n")

    async def body():
        from tui.widgets.results import ResultsPanel

        # the "still running" line shows from 1 s after the check's start reached the
        # screen until the timeout: 6 s leaves room for a start that arrives late on a
        # busy machine (the tests run in parallel)
        app = make_app(open_workshop="A1", check_timeout=6)
        async with app.run_test(size=(120, 40)) as pilot:
            panel = await wait_for(
                pilot,
                lambda: app.screen.query(ResultsPanel) and app.screen.query_one(ResultsPanel),
                10,
                "the results",
            )
            panel.still_after = 1.0
            status = app.screen.query_one("#run-status")
            seen = await wait_for(
                pilot,
                lambda: "still running" in str(status.render()) and str(status.render()),
                30,
                "the still-running line",
            )
            assert "stops at 6 s" in seen
            hung = next(iter(panel.running_since))
            # no Time column in a 60-column panel: the status cell ticks
            assert "time" not in panel.table.columns
            ticking = str(panel.table.get_cell(hung, "status"))
            assert ticking.startswith("RUN ") and ticking[4:].rstrip("s").isdigit(), ticking
            panel = await wait_for_run(pilot, digest_of(path), 30)
            assert panel.outcome == "timeout"
            assert "pass" not in panel.statuses() or "error" in panel.statuses()
            rec = panel.records[hung]
            assert rec.status == "error" and rec.message.startswith("timed out")
            assert rec.seconds >= 3.0  # the real time (less the worker's start), not 0.00s
            assert str(panel.table.get_cell(hung, "status")) == "ERROR"
            message = str(panel.table.get_cell(hung, "message"))
            assert message.startswith("timed out") and f"{rec.seconds:.1f} s" in (
                message + rec.message + str(app.screen.query_one("#record-detail").render())
            )

    run(body())


def test_reset_asks_first_and_keeps_a_backup(make_app, workspace):
    from tui.screens.confirm import ConfirmScreen

    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    mine = A1.solution.read_text() + "\n# mine\n"
    path.write_text(mine)

    async def body():
        app = make_app(open_workshop="A1")
        toasts = Toasts(app)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot)
            await pilot.press("r")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")
            assert path.read_text() == mine
            await pilot.press("r")
            await pilot.press("y")
            await wait_for(pilot, lambda: path.read_bytes() == A1.starter.read_bytes(), 5, "reset")
            backups = list((ws.state_dir(workspace) / "backups").glob("online_normalizer.*.py"))
            assert len(backups) == 1 and backups[0].read_text() == mine
            # named beside the workspace: its state folder, then the backup's name on its own line
            said = toasts.said()
            assert f"{workspace.name}-state/backups/\n{backups[0].name}" in said, said
            panel = await wait_for_run(pilot, digest_of(path))
            assert set(panel.statuses()) == {"todo"}
            await pilot.press("h")
            await pilot.press("h")
            await wait_for(
                pilot,
                lambda: ws.load_progress(workspace)[0][A1.id].get("hints_shown") == 2,
                5,
                "the hints recorded",
            )
        # the reset left a trace: the best result stays, the history names the backup
        entry = ws.load_progress(workspace)[0][A1.id]
        assert entry["status"] == "todo" and entry["best"]["status"] == "passed"
        assert entry["best"]["passed"] == entry["best"]["total"] > 0
        assert entry["history"][-1]["event"] == "reset"
        assert entry["history"][-1]["backup"] == backups[0].name
        # a restart: the list says it passed before; the hints come back as revealed
        app2 = make_app()
        async with app2.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            row = app2.screen.query_one("#workshops").get_row(A1.id)
            assert "incomplete" in str(row[-1]) and "passed before" in str(row[-1])
            app2.open_workshop(A1.id)
            await wait_for(pilot, lambda: app2.screen.query("#hints"), 10, "the workshop")
            hints = app2.screen.query_one("#hints")
            assert hints.shown == 2 and hints.query("#hint-2")
            assert "hint 2 of" in str(hints.query_one("#hint-counter").render())

    run(body())


def test_explanation_needs_confirmation_until_the_checks_pass(make_app, workspace):
    from tui.screens.confirm import ConfirmScreen
    from tui.screens.explanation import ExplanationScreen
    from tui.screens.workshop import WorkshopScreen

    path = workspace / A1.exercise_name

    async def body():
        app = make_app(open_workshop="A1")
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot)
            await pilot.press("x")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")
            assert isinstance(app.screen, WorkshopScreen)
            await save(pilot, path, A1.solution.read_text())
            await wait_for_run(pilot, digest_of(path))
            await pilot.press("x")
            assert isinstance(app.screen, ExplanationScreen)
            await pilot.press("escape")
            assert isinstance(app.screen, WorkshopScreen)

    run(body())


def test_editor_unset_says_so_and_shows_the_path(make_app, workspace, monkeypatch):
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)

    async def body():
        app = make_app(open_workshop="A1")
        toasts = Toasts(app)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot)
            await pilot.press("e")
            await pilot.pause()
            msgs = [m for _, m in toasts.live]
            # the whole path, broken after its slashes to the toast's width
            path = str(workspace / A1.exercise_name)
            assert any("$EDITOR is not set" in m and path in m.replace("\n", "") for m in msgs), msgs

    run(body())


def test_command_palette_exports(make_app, tmp_path):
    async def body():
        app = make_app(open_workshop="A1")
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot)
            await pilot.press("ctrl+p")
            await pilot.pause(0.2)
            await pilot.press(*"Export results as JSON")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await wait_for(pilot, lambda: list((tmp_path / "exports").glob("*.json")), 10, "export")

    run(body())


def test_help_and_back(make_app):
    """Every overlay closes with escape (help, the Keys panel, the contents), and focus
    is never left on nothing."""
    from textual.widgets import HelpPanel, MarkdownViewer

    from tui.screens.browse import BrowseScreen
    from tui.screens.help import HelpScreen
    from tui.screens.workshop import WorkshopScreen

    async def body():
        app = make_app(open_workshop="A1")
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot)
            screen = app.screen
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            assert app.screen is screen
            # the Keys panel: escape closes it and stays on the workshop
            app.action_show_help_panel()
            await pilot.pause()
            assert screen.query(HelpPanel)
            await pilot.press("escape")
            await pilot.pause()
            assert not screen.query(HelpPanel) and app.screen is screen
            # t with the focus in the contents: hiding them moves the focus, not loses it
            viewer = screen.query_one("#lesson", MarkdownViewer)
            await pilot.press("t")
            await pilot.pause()
            assert viewer.show_table_of_contents
            viewer.table_of_contents.query_one("Tree").focus()
            await pilot.pause()
            await pilot.press("t")
            await pilot.pause()
            assert not viewer.show_table_of_contents
            assert app.focused is not None and app.focused.display
            # zoom and back
            await pilot.press("z")
            assert screen.maximized is not None
            await pilot.press("escape")
            assert screen.maximized is None and isinstance(app.screen, WorkshopScreen)
            await pilot.press("escape")
            assert isinstance(app.screen, BrowseScreen)
            # a Keys panel opened on the list does not follow into a workshop
            app.action_show_help_panel()
            await pilot.pause()
            app.open_workshop("A1")
            await wait_for(pilot, lambda: isinstance(app.screen, WorkshopScreen), 10, "A1")
            assert not app.screen.query(HelpPanel)
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, BrowseScreen) and not app.screen.query(HelpPanel)

    run(body())


# --- a GPU workshop without a GPU ---------------------------------------------------


def test_gpu_workshop_runs_interpreted_with_a_banner(make_app, workspace):
    w = catalog.get("strided_softmax")

    async def body():
        from tui.screens.workshop import BANNER_SHORT

        app = make_app(open_workshop="strided_softmax", gpu=False)
        async with app.run_test(size=(80, 24)) as pilot:  # the smallest usual terminal
            banner = await wait_for(pilot, lambda: app.screen.query("#banner"), 10, "banner")
            assert str(banner.first().render()) == BANNER_SHORT  # the one that fits 80 columns
            assert app.screen.interpret and app.screen.controller.preload == "interpret"
            panel = await wait_for_run(pilot, digest_of(workspace / w.exercise_name), 90)
            assert "todo" in panel.statuses()  # the starter, interpreted
            # at 80x24 the results stay on screen (the timings fold to their status line)
            table = panel.table
            await pilot.pause()
            assert table.region.height >= 5 and table.region.y + table.region.height <= 24
            assert not app.screen.query_one("#timings").display
            status = str(app.screen.query_one("#timings-status").render())
            assert "unavailable" in status

    run(body())


def test_warm_worker_is_used_and_a_dead_one_replaced(make_app, workspace):
    path = workspace / A1.exercise_name

    async def body():
        app = make_app(open_workshop="A1")
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_run(pilot)
            pool = app.screen.controller.pool
            first = lambda: (ready_workers(pool) or [None])[0]
            warm = await wait_for(pilot, first, 10, "a warm worker")
            assert warm.alive()
            await save(pilot, path, A1.solution.read_text())
            await wait_for_run(pilot, digest_of(path))
            assert not warm.alive()  # it ran that job, then exited
            warm2 = await wait_for(pilot, lambda: first() is not warm and first(), 10, "the next warm worker")
            warm2.kill()  # a worker that died
            await save(pilot, path, (A1.folder / "wrong" / "raw_denominator.py").read_text())
            panel = await wait_for_run(pilot, digest_of(path))
            assert "fail" in panel.statuses()

    run(body())


def test_mouse_palette_switch_and_bench_toggle(make_app):
    from tui.screens.workshop import WorkshopScreen

    async def body():
        app = make_app(bench=True)
        toasts = Toasts(app)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            table = app.screen.query_one("#workshops")
            row = [k.value for k in table.rows].index(A1.id)
            # one click highlights a row (its details show below), a second click opens it
            await pilot.click("#workshops", offset=(3, 1 + row))  # header is line 0
            assert table.cursor_row == row
            assert A1.deliverable in str(app.screen.query_one("#workshop-details").render())
            await pilot.click("#workshops", offset=(3, 1 + row))
            await wait_for(pilot, lambda: isinstance(app.screen, WorkshopScreen), 10, "A1")
            first = app.screen
            assert first.workshop.id == A1.id
            await wait_for_run(pilot)
            # a CPU workshop has no kernel to time: no b in the footer, and b changes nothing
            assert "toggle_bench" not in {
                b.binding.action for b in app.screen.active_bindings.values() if b.binding.show and b.enabled
            }
            await pilot.press("b")
            assert app.bench_enabled is True
            assert "Benchmarks" not in toasts.said()
            assert "A1 is a CPU workshop: there is no kernel to time" in toasts.said()  # b says why
            # the palette opens another workshop in place of this one
            other = next(w for w in catalog.workshops() if w.id != A1.id)
            app.open_workshop(other.id)
            await wait_for(
                pilot,
                lambda: isinstance(app.screen, WorkshopScreen) and app.screen.workshop.id == other.id,
                10,
                other.id,
            )
            assert [type(s).__name__ for s in app.screen_stack] == ["BrowseScreen", "WorkshopScreen"]
            assert first.controller._closed

    run(body())
