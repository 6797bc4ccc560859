""" "Why it matters" is the record's: a failure diagnosed as a known mistake shows that
mistake's why, section and where to look; a timeout, a crash or an error shows what it
means (never the check's paragraph about correct answers, and no lesson link that the
record does not point at)."""

from __future__ import annotations

import asyncio

from checks.judging.records import Record

OWN_WHY = "a numeric check only says the answer is right; this one says your @triton.jit kernel computed it"
OWN_SECTION = "Your kernel, not PyTorch"
MISTAKE = {
    "id": "strict-causal-mask",
    "sentence": "The causal mask keeps j < i: each query skips its own key.",
    "where": "the mask of the diagonal tile: keep key j where j <= i",
    "section": "Causal masking",
    "why": "a query attends to itself; a strict mask drops the diagonal and row 0 divides by zero",
}


def _record(**kw) -> Record:
    base = dict(workshop="streaming_attention", id="own-kernel", label="own kernel", status="fail")
    return Record(**{**base, **kw})


def _failure_view(rec: Record):
    """(the failure view's text, its footer, whether l works) for ``rec``."""
    from textual.app import App

    from tui.screens.failure import FailureScreen

    out: dict = {}

    async def body():
        app = App()
        async with app.run_test(size=(100, 40)) as pilot:
            app.push_screen(FailureScreen(rec))
            await pilot.pause()
            screen = app.screen
            out["text"] = str(screen.query_one("#failure-text").render())
            out["footer"] = str(screen.query_one("#failure-footer").render())
            out["l"] = screen.check_action("lesson", ())

    asyncio.run(body())
    return out["text"], out["footer"], out["l"]


def test_a_diagnosed_mistake_shows_its_own_why_section_and_where():
    rec = _record(
        id="causal",
        status="fail",
        message=f"{MISTAKE['sentence']} — attention(N=40, causal=True): 40 of 1280 elements wrong",
        why=MISTAKE["why"],
        section=MISTAKE["section"],
        details={"mistake": dict(MISTAKE), "mismatched": 40, "total": 1280},
    )
    text, footer, lesson = _failure_view(rec)
    assert "Where to look: " + MISTAKE["where"] in text
    assert "Why it matters: " + MISTAKE["why"] in text
    assert "Lesson section: " + MISTAKE["section"] in text
    assert MISTAKE["section"] in footer and lesson


def test_the_mistake_wins_over_a_why_the_record_kept_from_its_check():
    """A record whose why and section are still its check's, with the mistake in its
    details: the mistake's are shown."""
    rec = _record(
        id="worked-answer",
        why="rescaling l but not acc when the running maximum rises: the lesson's worked answer",
        section="Worked example: logits [0, 0, log 2]",
        details={"mistake": dict(MISTAKE)},
    )
    text, footer, _ = _failure_view(rec)
    assert "rescaling l but not acc" not in text and "Worked example" not in footer
    assert MISTAKE["why"] in text and MISTAKE["section"] in footer


def test_a_timeout_says_what_a_timeout_means_and_where_it_was_stuck():
    rec = _record(
        status="error",
        message=(
            "timed out: stopped after 120 s (an infinite loop, or far too slow); "
            "stuck at streaming_attention.py, line 41, in attention_kernel"
        ),
        why=OWN_WHY,
        section=OWN_SECTION,
        seconds=120.0,
    )
    text, footer, lesson = _failure_view(rec)
    assert OWN_WHY not in text and "PyTorch" not in text
    assert "time limit" in text
    assert "stuck at streaming_attention.py:41 in attention_kernel" in text
    assert OWN_SECTION not in footer and not lesson  # no link the timeout does not point at


def test_a_crash_and_an_exception_do_not_borrow_the_checks_paragraph():
    crash = _record(status="error", message="crashed: the process running your code died (SIGSEGV)")
    crash.why, crash.section = OWN_WHY, OWN_SECTION
    raised = _record(
        id="basic", status="error", message="IndexError: list index out of range", why=OWN_WHY, section="x"
    )
    for rec, words in ((crash, "process running your code died"), (raised, "raised an exception")):
        text, footer, lesson = _failure_view(rec)
        assert OWN_WHY not in text and words in text
        assert "lesson section" not in footer and not lesson


def test_the_own_kernel_link_only_where_the_record_points_at_it():
    failed = _record(
        message="attention computed values with PyTorch: aten::bmm", why=OWN_WHY, section=OWN_SECTION
    )
    text, footer, lesson = _failure_view(failed)
    assert OWN_WHY in text and OWN_SECTION in footer and lesson


def test_a_timeout_row_names_the_kernel_that_was_launching():
    from tui.widgets.record_text import summary

    rec = _record(
        status="error",
        message="timed out: stopped after 120 s; by then it had launched _head_kernel on grid (32,) "
        "at least 40,000 times",
        seconds=120.0,
        details={"launches": {"kernel": "_head_kernel", "count": 40000, "total": 40000, "grid": [32]}},
    )
    assert summary(rec) == "timed out after 120.0 s: 40,000 launches of _head_kernel"
    text, _, _ = _failure_view(rec)
    assert "at least 40,000 times" in text
