"""Keys at a learner's quickest pace: a workshop opened and closed again before its
lesson is in place, a failure view closed before it is mounted, keys sent 0.1 to 0.3 s
apart (a seeded random order) through open/escape and run/failure-view cycles.  Each is
a no-op where the screen it speaks of is gone, never a traceback: the app is still
running afterwards and nothing was raised (run_test re-raises an unhandled error)."""

from __future__ import annotations

import asyncio
import random

import pytest
from textual import events

from workshops import catalog

from tui_helpers import wait_for

A1 = catalog.get("online_normalizer")
WRONG = (A1.folder / "wrong" / "raw_denominator.py").read_text(encoding="utf-8")
I1 = catalog.get("strided_softmax")


def run(coro):
    return asyncio.run(coro)


def alive(app) -> bool:
    return app.is_running and app.return_code is None


@pytest.mark.parametrize("workshop", [I1, A1], ids=lambda w: w.code)
def test_a_workshop_closed_while_it_opens(make_app, workshop):
    """The lesson is parsed off the loop and mounted in batches: a screen popped at any
    point of that (from at once to well after) leaves nothing to fail."""
    from tui.screens.browse import BrowseScreen

    async def body():
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.2)
            # before it settles, and while it renders its lesson (SETTLE_SECONDS is 0.3)
            for delay in (None, 0, 0.01, 0.1, 0.35, 0.6):
                app.open_workshop(workshop.id)  # as Enter on the list does
                if delay is not None:
                    await asyncio.sleep(delay)
                app.screen.action_back()  # escape's action, before the screen may have mounted
                await wait_for(pilot, lambda: isinstance(app.screen, BrowseScreen), 20, "the list")
            await pilot.pause(0.5)
            assert isinstance(app.screen, BrowseScreen)
            assert alive(app)

    run(body())


def test_enter_and_escape_at_a_quick_pace_start_no_check_and_render_no_lesson(make_app, workspace):
    """Enter and Escape 0.15 s apart on the list, eight times: no screen of the burst ran a
    check or rendered its lesson, so nothing queues behind the keys; the Enter after them
    opens the workshop, which renders its lesson and finishes its run."""
    from tui.screens.workshop import WorkshopScreen

    workspace.mkdir(parents=True)
    (workspace / A1.exercise_name).write_text(WRONG, encoding="utf-8")

    async def body():
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            await pilot.press("down", "down", "down")  # A1: the CPU workshop
            opened = []
            for _ in range(8):
                send(app, "enter")
                await pilot.pause(0.15)
                if isinstance(app.screen, WorkshopScreen):
                    opened.append(app.screen)
                send(app, "escape")
                await pilot.pause(0.15)
            await pilot.pause(0.5)  # past the settle time of the last one
            assert opened, "no Enter opened the workshop"
            # a screen closed before it settled ran nothing and rendered nothing (on a
            # loaded machine an Escape may come late and a screen settle: it may run)
            quick = [s for s in opened if not s.settled]
            assert quick, "every screen stayed open past its settle time"
            assert [(s.runs_started, s.lesson_ready) for s in quick] == [(0, False)] * len(quick)
            send(app, "enter")
            await wait_for(pilot, lambda: getattr(app.screen, "lesson_ready", False), 30, "the lesson")
            screen = app.screen
            await wait_for(pilot, lambda: screen.runs_started == 1 and screen.last is not None, 60, "a run")

    run(body())


def test_escape_while_the_lesson_renders_is_handled_at_once(make_app, monkeypatch):
    """A screen that settled renders its lesson (seconds on a loaded machine, at 120x40
    most): keys that reach the screen's bindings (Escape) are handled meanwhile, not
    queued behind the render and replayed after it (the screen kept switching between
    the list and the workshop for seconds after the last key)."""
    from textual.widgets import Markdown

    from tui.screens.browse import BrowseScreen
    from tui.screens.workshop import WorkshopScreen

    update = Markdown.update

    async def slow_update(self, markdown):  # the lesson's render takes its time
        if markdown == A1.lesson:
            await asyncio.sleep(3.0)
        return await update(self, markdown)

    monkeypatch.setattr(Markdown, "update", slow_update)

    async def until(predicate, timeout: float) -> bool:
        """Poll without the pilot (its pause waits for the screen to be idle: for the render)."""
        end = asyncio.get_running_loop().time() + timeout
        while not predicate():
            if asyncio.get_running_loop().time() > end:
                return False
            await asyncio.sleep(0.02)
        return True

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(120, 40)) as pilot:
            assert await until(lambda: isinstance(app.screen, WorkshopScreen) and app.screen.settled, 10)
            screen = app.screen
            await asyncio.sleep(0.2)  # the render under way
            assert not screen.lesson_ready
            send(app, "escape")
            assert await until(lambda: isinstance(app.screen, BrowseScreen), 1.5), (
                "Escape waited for the lesson"
            )
            assert not screen.lesson_ready  # closed before its render ended
            await pilot.pause(0.2)
            assert alive(app)

    run(body())


def test_a_failure_view_closed_while_it_opens(make_app):
    """Enter then escape on a result row faster than the view mounts: it closes, the
    workshop screen is back, nothing raised."""
    from checks.judging import Record
    from tui.screens.failure import FailureScreen
    from tui.screens.workshop import WorkshopScreen

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, WorkshopScreen), 20, "the workshop")
            record = Record(A1.id, "basic", "basic", "fail", "wrong value at (0, 1)")
            for delay in (None, 0, 0.01):
                app.push_screen(FailureScreen(record))
                if delay is not None:
                    await asyncio.sleep(delay)
                app.screen.action_close()
                await wait_for(pilot, lambda: isinstance(app.screen, WorkshopScreen), 10, "the workshop")
            assert alive(app)

    run(body())


# the keys of the list and of a workshop that open, close, re-run and look at failures
# (no q: it quits from the list; no e: it hands the terminal to an editor)
KEYS = ["enter"] * 4 + ["escape"] * 4 + ["space"] * 3 + ["tab", "o", "h", "t", "z", "?", "x", "r", "n", "y"]


def send(app, key: str) -> None:
    """A key as a terminal sends it: queued at once, whether the last one is handled yet
    or not (pilot.press would wait until the app is idle)."""
    character = " " if key == "space" else key if len(key) == 1 else None
    app.post_message(events.Key(key, character))


@pytest.mark.parametrize("seed", [2])  # one seeded order; the burst test covers Enter/Escape
def test_keys_at_a_quick_pace(make_app, workspace, seed):
    """Keys 0.1 to 0.3 s apart, a seeded random order, from the list into A1 with a
    failing file (open/escape, re-runs, the failure view) and back: still running."""
    rnd = random.Random(seed)
    workspace.mkdir(parents=True)
    (workspace / A1.exercise_name).write_text(WRONG, encoding="utf-8")

    async def body():
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            await pilot.press("down", "down", "down")  # I1, I2, I3, then A1: the CPU workshop
            pressed = []
            for _ in range(36):
                key = rnd.choice(KEYS)
                pressed.append(key)
                send(app, key)
                await pilot.pause(rnd.uniform(0.1, 0.3))
                assert alive(app), pressed
            await pilot.pause(1.0)  # what the last keys started (a run, a closing screen)
            assert alive(app), pressed

    run(body())


def test_without_a_terminal_it_refuses_in_one_line(tmp_path):
    """stdin from /dev/null, stdout a pipe: a line that names both, exit 2, at once
    (it used to sit at up to 100 % CPU)."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "tui", "--workspace", str(tmp_path / "w")],
        cwd=repo,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a terminal" in lines[0], done.stderr
    assert "its standard input and standard output are not terminals" in lines[0]
    assert not (tmp_path / "w").exists()  # nothing created


def test_the_refusal_says_which_stream_is_not_a_terminal_in_good_grammar():
    from tui.__main__ import no_terminal_line

    assert "its standard output is not one (" in no_terminal_line("standard output")
    both = no_terminal_line("standard input and standard output")
    assert "its standard input and standard output are not terminals (" in both


def test_an_unhandled_error_exits_non_zero(make_app, monkeypatch, tmp_path):
    """Textual ends the app with return code 1 after an error in a handler; the entry
    point passes it on instead of 0."""
    import tui.__main__ as entry
    from tui.screens.browse import BrowseScreen

    async def body():
        app = make_app()
        monkeypatch.setattr(BrowseScreen, "action_close_keys", lambda self: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            async with app.run_test(size=(80, 24)) as pilot:
                await pilot.press("escape")
                await pilot.pause(0.2)
        return app.return_code

    assert run(body()) == 1
    monkeypatch.setattr(entry, "missing_terminal", lambda: "")
    monkeypatch.setattr("tui.app.CourseApp.run", lambda self: self.exit(return_code=1))
    assert entry.main(["--workspace", str(tmp_path / "w")]) == 1
