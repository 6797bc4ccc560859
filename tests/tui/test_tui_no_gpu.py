"""Honest without a GPU: the workshop list says where each GPU workshop runs on this
machine (Triton's interpreter) at every width; a GPU workshop's screen has no "Toggle
benchmarks" in the palette and no timings panel, only one line saying why (timings need a
CUDA GPU); its b reads the performance of a passing run instead (test_tui_perf_reading)."""

from __future__ import annotations

import asyncio

import pytest

from workshops import catalog

from readable_helpers import Toasts
from tui_helpers import wait_for, wait_for_run

I1 = catalog.get("strided_softmax")
WIDTHS = [(80, 24), (100, 30), (120, 40), (200, 60)]
size_ids = lambda s: f"{s[0]}x{s[1]}"


def footer_label(screen, key: str) -> str:
    """The footer's words for ``key`` on ``screen`` (its one shown, enabled binding)."""
    (label,) = [
        b.binding.description
        for b in screen.active_bindings.values()
        if b.binding.key == key and b.binding.show and b.enabled
    ]
    return label


@pytest.mark.parametrize("size", WIDTHS, ids=size_ids)
def test_the_list_says_gpu_workshops_are_interpreted_here(make_app, size):
    from tui.screens.browse import NO_GPU_NOTE

    async def body():
        app = make_app(gpu=False)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            table = app.screen.query_one("#workshops")
            assert "device" in {str(k.value) for k in table.columns}  # kept at every width
            for w in catalog.workshops():
                cell = str(table.get_cell(w.id, "device"))
                assert ("interp" in cell) == w.gpu, (w.id, cell)
            note = app.screen.query_one("#device-note")
            assert note.display and str(note.render()) == NO_GPU_NOTE
            assert note.region.height == 1  # one line, at 80 columns too
            details = str(app.screen.query_one("#workshop-details").render())
            assert "interpreted here" in details  # the first row, I1, is a GPU workshop

    asyncio.run(body())


def test_with_a_gpu_the_list_says_gpu_and_no_note(make_app):
    async def body():
        app = make_app(gpu=True)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            table = app.screen.query_one("#workshops")
            assert {str(table.get_cell(w.id, "device")) for w in catalog.workshops()} == {"GPU", "CPU"}
            assert not app.screen.query_one("#device-note").display

    asyncio.run(body())


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=size_ids)  # the smallest and a roomy one
def test_an_interpreted_workshop_offers_no_timings(make_app, size):
    from tui.commands import CourseCommands
    from tui.screens.workshop import BANNER, BANNER_SHORT
    from tui.widgets.timings import TimingsPanel

    async def body():
        app = make_app(open_workshop=I1.id, gpu=False, bench=True)
        async with app.run_test(size=size) as pilot:
            await wait_for_run(pilot, timeout=120)
            screen = app.screen
            shown = {b.binding.key for b in screen.active_bindings.values() if b.binding.show and b.enabled}
            assert "b" in shown and "n" in shown  # b reads the performance of a passing run
            assert footer_label(screen, "b") == "Perf read"  # what it does here, not "Bench"
            toasts = Toasts(app)
            timings = screen.query_one(TimingsPanel)
            assert not timings.display and not timings.region.height
            await pilot.press("b")
            await pilot.pause()
            assert app.bench_enabled is True  # nothing to time; the starter does not pass: nothing read
            said = toasts.said()
            assert "there is no CUDA GPU here" in said and "once every check passes" in said
            assert timings.display and "once every check passes" in str(
                screen.query_one("#timings-status").render()
            )
            assert timings.reading is None
            await pilot.press("b")  # b again: the promise is taken back, the panel goes
            await pilot.pause()
            assert not timings.display and not timings.region.height
            titles = [title for title, _, _ in CourseCommands(screen)._commands()]
            assert "Run checks" in titles and not any("enchmark" in t for t in titles)
            assert "Read performance" in titles
            assert not timings.reference  # no reference rows unrelated to the learner's file
            banner = str(screen.query_one("#banner").render())
            assert banner in (BANNER, BANNER_SHORT) and "timings need" in banner
            assert screen.query_one("#banner").region.height == 1

    asyncio.run(body())


def test_a_gpu_workshop_with_a_gpu_keeps_its_timings(make_app, monkeypatch):
    """The control: where the app finds a GPU, the key, the palette entry and the panel
    are there (inspected at once; the run itself cannot succeed on this machine)."""
    from tui.commands import CourseCommands
    from tui.widgets.timings import TimingsPanel

    monkeypatch.setenv("KERNEL_COURSE_COMPILERS", "0")  # no compile workers for this look

    async def body():
        app = make_app(open_workshop=I1.id, gpu=True, bench=True)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.screen.query(TimingsPanel), 10, "the workshop")
            screen = app.screen
            assert screen.timeable and not screen.query("#banner")
            shown = {b.binding.key for b in screen.active_bindings.values() if b.binding.show and b.enabled}
            assert "b" in shown and footer_label(screen, "b") == "Bench"
            titles = [title for title, _, _ in CourseCommands(screen)._commands()]
            assert "Toggle benchmarks" in titles
            assert screen.query_one(TimingsPanel).display

    asyncio.run(body())


def _done_when(lesson: str) -> list:
    """The items of a lesson's "Done when" list, each as one line."""
    part = lesson.split("## Done when", 1)[1].split("\n## ", 1)[0]
    return [" ".join(item.split()) for item in part.split("\n- ")[1:]]


def test_every_done_when_that_needs_a_gpu_has_a_task_without_one():
    """A learner without a GPU can finish every lesson: an item that asks for timings
    (a benchmark, a measurement) also says what to do without a GPU."""
    needs_gpu = ("benchmark", "measure")
    for w in catalog.workshops():
        items = _done_when(w.lesson)
        assert items, w.id
        for item in items:
            if any(word in item.lower() for word in needs_gpu):
                assert "without one" in item.lower() or "without a gpu" in item.lower(), (w.id, item)
