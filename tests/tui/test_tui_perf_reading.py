"""Without a GPU, b reads the performance of a passing run into the timings panel: the
lesson's performance step (met or not) and each variant's biggest loss, readable at
80x24 and 120x40."""

from __future__ import annotations

import asyncio
import html

import pytest

from workshops import catalog

from tui_helpers import wait_for, wait_for_run

I1 = catalog.get("strided_softmax")

PAYLOAD = {
    "workshop": I1.id,
    "step_met": False,
    "step": "bring the loads of x to the ideal sectors per request (4 for fp32)",
    "step_evidence": "accesses to x touch 32 sectors of 32 bytes per warp-wide request, 4 is ideal",
    "shape": "1024x1024-t",
    "dtype": "fp32",
    "readings": [
        {
            "variant": "num_warps=4",
            "predicted_us": 9.4,
            "headline": "biggest loss (78% of the predicted time): accesses to x touch 32 sectors",
            "traffic": "moves each byte once (8.0 MiB, the minimum the problem needs)",
        }
    ],
}


def fake_reading(monkeypatch, payload: dict = PAYLOAD) -> list:
    """The interpreter's reading replaced by ``payload``; the list of the workshops asked."""
    from tui import benchmark_child

    asked: list = []
    monkeypatch.setattr(
        benchmark_child,
        "read_performance",
        lambda op, file, timeout=600: (asked.append(op), (payload, ""))[1],
    )
    return asked


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_b_shows_the_reading_of_a_passing_run_without_a_gpu(make_app, size, monkeypatch):
    from tui import benchmark_child
    from tui.widgets.timings import TimingsPanel

    asked = []

    def fake_reading(op, file, timeout=600):
        asked.append((op, file))
        return PAYLOAD, ""

    monkeypatch.setattr(benchmark_child, "read_performance", fake_reading)

    async def body():
        app = make_app(open_workshop=I1.id, gpu=False)
        async with app.run_test(size=size) as pilot:
            await wait_for_run(pilot, timeout=120)
            screen = app.screen
            screen.passed = True  # as after a passing run of this file
            await pilot.press("b")
            timings = screen.query_one(TimingsPanel)
            await wait_for(pilot, lambda: timings.reading is not None, timeout=30)
            if size == (80, 24):  # compact: the reading has the room with the results
                screen.query_one("#timings-reading-box").focus()
            await pilot.pause()
            assert asked and asked[0][0] == I1.id
            assert timings.display and timings.region.height >= 3
            reading = screen.query_one("#timings-reading")
            assert reading.region.height >= 4 and reading.region.width >= 60  # the step and a variant
            shown = str(reading.render())
            assert shown.startswith("not met · performance step: bring the loads of x")
            assert "biggest loss" in shown
            status = str(screen.query_one("#timings-status").render())
            assert "predicted for an H200" in status

    asyncio.run(body())


def test_the_step_and_each_variant_are_in_the_reading_text():
    from tui.widgets.timings import reading_text

    text = reading_text(dict(PAYLOAD, step_met=True)).plain
    lines = text.splitlines()
    assert lines[0].startswith("met · performance step")
    assert lines[1].startswith("num_warps=4 (predicted 9.4 µs on an H200): biggest loss")
    assert "predicted, not timed" in lines[-1]


def test_a_reading_follows_the_saves_read_again_after_a_pass_and_gone_after_a_failure(make_app, monkeypatch):
    from tui.widgets.timings import TimingsPanel

    asked = fake_reading(monkeypatch)

    async def body():
        app = make_app(open_workshop=I1.id, gpu=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for_run(pilot, timeout=120)
            screen = app.screen
            screen.passed = True
            await pilot.press("b")
            timings = screen.query_one(TimingsPanel)
            await wait_for(pilot, lambda: timings.reading is not None, timeout=30)
            first = timings.reading_digest
            assert first == screen.last.content_hash and len(asked) == 1
            screen._refresh_reading(first)  # the same save: nothing to do
            assert len(asked) == 1
            screen._refresh_reading("a newer passing save")  # read again, without b
            await wait_for(pilot, lambda: len(asked) == 2, timeout=30)
            await wait_for(pilot, lambda: timings.reading is not None, timeout=30)
            screen.passed = False
            screen._refresh_reading("a newer failing save")
            await pilot.pause()
            assert timings.reading is None and not timings.has_class("read")
            assert str(screen.query_one("#timings-reading").render()) == ""

    asyncio.run(body())


def test_a_step_not_judged_is_said_so_with_the_compilers_words():
    """A reading whose kernel the GPU compiler refused judges no step: the panel says 'not
    judged' (never 'not met' nor 'met') and shows the compiler's words."""
    from tui.widgets.timings import reading_text

    refused = {
        "variant": "num_warps=4",
        "compile_errors": [{"kernel": "_k", "error": "Loop-carried variable acc"}],
    }
    text = reading_text(dict(PAYLOAD, step_met=None, readings=[], not_compiled=[refused])).plain
    assert text.startswith("not judged")
    assert "num_warps=4 does not compile for the GPU: _k: Loop-carried variable acc" in text


def test_b_before_a_pass_says_when_it_comes_brings_it_then_and_b_again_hides_it(make_app, monkeypatch):
    from tui import run_loop
    from tui.widgets.timings import TimingsPanel

    asked = fake_reading(monkeypatch)

    async def body():
        app = make_app(open_workshop=I1.id, gpu=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for_run(pilot, timeout=120)  # the starter: not a pass
            screen = app.screen
            assert not screen.passed
            await pilot.press("b")
            await pilot.pause()
            timings = screen.query_one(TimingsPanel)
            status = str(screen.query_one("#timings-status").render())
            assert status == run_loop.READING_WAITS and timings.display
            assert not asked and timings.reading is None
            screen.passed = True  # a passing save arrives: the reading comes without b
            screen._refresh_reading("a passing save")
            await wait_for(pilot, lambda: timings.reading is not None, timeout=30)
            assert asked == [I1.id]
            await pilot.press("b")  # b again hides it
            await pilot.pause()
            assert timings.reading is None and not screen.has_class("-perf-read")
            screen._refresh_reading("another passing save")  # not wanted now: not read
            await pilot.pause()
            assert asked == [I1.id]

    asyncio.run(body())


def test_at_80x24_the_focused_part_gets_the_room_and_the_reading_scrolls(make_app, monkeypatch):
    """With the reading shown: the lesson (and a revealed hint) get the room while they have
    the focus, the results side a strip with the reading's status line; Tab gives the
    results and the reading the room, and the reading takes the focus to scroll."""
    from tui.widgets.hints import HintsPanel
    from tui.widgets.timings import TimingsPanel

    long_payload = dict(PAYLOAD, readings=PAYLOAD["readings"] * 6)  # taller than its room
    fake_reading(monkeypatch, long_payload)

    async def body():
        app = make_app(open_workshop=I1.id, gpu=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for_run(pilot, timeout=120)
            screen = app.screen
            screen.passed = True
            screen.lesson.document.focus()
            await pilot.press("b")
            timings = screen.query_one(TimingsPanel)
            await wait_for(pilot, lambda: timings.reading is not None, timeout=30)
            await pilot.pause()
            assert screen.lesson.region.height >= 8, screen.lesson.region  # it was 1
            assert "performance of" in str(screen.query_one("#timings-status").render())
            await pilot.press("h")
            await pilot.pause()
            hints = screen.query_one(HintsPanel)
            assert hints.has_focus and hints.region.height >= 8, hints.region
            shown = html.unescape(app.export_screenshot()).replace("\xa0", " ")
            assert "Hint 1: two layouts" in shown  # the revealed hint itself, at once
            reading = screen.query_one("#timings-reading-box")
            while not reading.has_focus:  # Tab: the results table, then the reading
                await pilot.press("tab")
                await pilot.pause()
                assert screen.has_class("-results-focus")
            assert reading.region.height >= 5 and screen.lesson.region.height <= 3
            assert reading.max_scroll_y > 0  # it scrolls: the rest is reachable
            await pilot.press("pagedown")
            await pilot.pause()
            assert reading.scroll_y > 0

    asyncio.run(body())


def test_at_80x24_after_a_pass_the_table_keeps_rows_and_the_whole_reading_scrolls_into_view(
    make_app, workspace, monkeypatch
):
    """After a real pass (the completion lines shown too), with the reading: the focused
    results table keeps check rows (the reading a strip that scrolls), and the reading,
    focused and scrolled to its end, shows its last words: its box is never taller than
    the room its panel leaves it."""
    from tui.widgets.timings import TimingsPanel

    fake_reading(monkeypatch)
    workspace.mkdir(parents=True)
    (workspace / I1.exercise_name).write_text(I1.solution.read_text(encoding="utf-8"), encoding="utf-8")

    async def body():
        app = make_app(open_workshop=I1.id, gpu=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for_run(pilot, timeout=120)
            screen = app.screen
            assert screen.passed
            await pilot.press("b")
            timings = screen.query_one(TimingsPanel)
            await wait_for(pilot, lambda: timings.reading is not None, timeout=30)
            table = screen.query_one("#results")
            table.focus()
            await pilot.pause()
            assert table.region.height - 1 >= 3, table.region  # its header and 3 check rows at least
            box = screen.query_one("#timings-reading-box")
            assert 1 <= box.region.height <= 3 and box.max_scroll_y > 0, box.region  # a strip: it scrolls
            box.focus()
            await pilot.pause()
            assert box.region.height >= 5, box.region
            box.scroll_end(animate=False)
            await pilot.pause()
            assert box.region.bottom <= timings.region.bottom  # nothing of it cut off below
            app.clear_notifications()  # the toast of b says "predicted, not timed" too
            await pilot.pause()
            shown = html.unescape(app.export_screenshot()).replace("\xa0", " ")
            assert "predicted, not timed" in shown

    asyncio.run(body())
