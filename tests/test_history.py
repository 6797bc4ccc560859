"""The learner's history of timed saves (checks.benchmark.history): the store and the
comparison of a new timing with the previous save and the best."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from checks.benchmark import history

OP = "strided_softmax"


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def row(median: float, variant: str = "num_warps=4", role: str = "candidate", **more: object) -> dict:
    """A benchmark row as checks.benchmark writes it (graph timing: it has a device time)."""
    out = {
        "op": OP,
        "shape": "16384x8192",
        "shape_role": "roofline",
        "params": {"rows": 16384, "cols": 8192},
        "dtype": "fp32",
        "variant": variant,
        "role": role,
        "status": "ok",
        "median_us": median,
        "p20_us": median - 1.0,
        "p80_us": median + 1.0,
        "device_us": median,
        "per_call_us": median + 5.0,
        "samples_us": [median] * 3,
        "bytes": 1 << 29,
    }
    out.update(more)
    return out


# --- the store ---


def test_a_save_is_written_atomically_with_its_rows_reduced(tmp_path: Path) -> None:
    rows = [row(100.0), row(300.0, "torch.softmax", "baseline"), row(5.0, "todo", status="todo")]
    path = history.record_save(tmp_path, OP, "a" * 64, rows, when="2026-12-04T09:00:00+0000")
    assert path == tmp_path / "history" / f"{OP}.json"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    assert os.stat(path).st_mode & 0o777 == 0o644 & ~umask()
    data = json.loads(path.read_text())
    assert data["schema"] == history.SCHEMA and data["workshop"] == OP
    (save,) = history.load(tmp_path, OP)
    assert save.content_hash == "a" * 64 and save.when == "2026-12-04T09:00:00+0000"
    # the TODO row was not timed: it is not kept; the others keep their key and noise only
    assert save.rows == [
        {
            "op": OP,
            "shape": "16384x8192",
            "dtype": "fp32",
            "variant": "num_warps=4",
            "role": "candidate",
            "timing": "graph",
            "median_us": 100.0,
            "p20_us": 99.0,
            "p80_us": 101.0,
        },
        {
            "op": OP,
            "shape": "16384x8192",
            "dtype": "fp32",
            "variant": "torch.softmax",
            "role": "baseline",
            "timing": "graph",
            "median_us": 300.0,
            "p20_us": 299.0,
            "p80_us": 301.0,
        },
    ]


def test_the_interval_of_the_median_is_kept_when_a_row_has_one(tmp_path: Path) -> None:
    history.record_save(tmp_path, OP, "a", [row(100.0, median_low_us=99.5, median_high_us=100.4)])
    (save,) = history.load(tmp_path, OP)
    assert save.rows[0]["median_low_us"] == 99.5 and save.rows[0]["median_high_us"] == 100.4


def test_the_timing_mode_is_part_of_the_row_key() -> None:
    graph, events = row(10.0), row(10.0, device_us=None)
    assert history.timing_mode(graph) == "graph" and history.timing_mode(events) == "events"
    assert history.timing_mode(row(10.0, timing="events")) == "events"
    assert history.row_key(graph) != history.row_key(events)
    # a per-call time is never compared with a device time of the same kernel
    saves = [history.Save("t", "a", [history.reduce_row(events)])]
    assert history.compare(graph, saves).last is None


def test_the_history_keeps_the_last_50_saves(tmp_path: Path) -> None:
    for i in range(history.KEEP + 7):
        history.record_save(tmp_path, OP, f"hash{i}", [row(100.0 + i)])
    saves = history.load(tmp_path, OP)
    assert len(saves) == history.KEEP == 50
    assert saves[0].content_hash == "hash7" and saves[-1].content_hash == f"hash{history.KEEP + 6}"
    assert [s.rows[0]["median_us"] for s in saves] == [100.0 + i for i in range(7, history.KEEP + 7)]


def test_the_same_content_replaces_the_previous_save(tmp_path: Path) -> None:
    history.record_save(tmp_path, OP, "a", [row(100.0)])
    history.record_save(tmp_path, OP, "b", [row(90.0)])
    history.record_save(tmp_path, OP, "b", [row(80.0)])  # timed again, unchanged file
    saves = history.load(tmp_path, OP)
    assert [(s.content_hash, s.rows[0]["median_us"]) for s in saves] == [("a", 100.0), ("b", 80.0)]
    # the content of an older save, saved again later, is a new point
    history.record_save(tmp_path, OP, "a", [row(101.0)])
    assert [s.content_hash for s in history.load(tmp_path, OP)] == ["a", "b", "a"]


def test_a_benchmark_without_a_timed_row_adds_nothing(tmp_path: Path) -> None:
    path = history.record_save(tmp_path, OP, "a", [row(1.0, status="failed"), {"median_us": None}])
    assert not path.exists() and history.load(tmp_path, OP) == []


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[1, 2]",
        json.dumps({"schema": "something else", "saves": []}),
        json.dumps({"schema": history.SCHEMA, "saves": [{"when": "t", "content_hash": "a", "rows": [{}]}]}),
    ],
    ids=["not-json", "not-an-object", "other-schema", "row-without-median"],
)
def test_a_corrupt_history_is_set_aside_and_a_new_one_starts(tmp_path: Path, text: str) -> None:
    path = history.history_path(tmp_path, OP)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert history.load(tmp_path, OP) == []
    (aside,) = path.parent.glob("*.corrupt")
    assert aside.read_text() == text and aside.name.startswith(f"{OP}.") and not path.exists()
    history.record_save(tmp_path, OP, "a", [row(100.0)])
    assert [s.content_hash for s in history.load(tmp_path, OP)] == ["a"]
    # a second corrupt file is kept too, never over the first
    path.write_text(text)
    assert history.load(tmp_path, OP) == [] and len(list(path.parent.glob("*.corrupt"))) == 2


def test_a_missing_history_is_empty(tmp_path: Path) -> None:
    assert history.load(tmp_path / "nowhere", OP) == []


# --- comparing ---


def saves_of(*medians_and_rows: tuple) -> list:
    return [
        history.Save(f"t{i}", f"h{i}", [history.reduce_row(r) for r in rows])
        for i, rows in enumerate(medians_and_rows)
    ]


def test_compare_against_the_previous_save_and_the_best() -> None:
    saves = saves_of([row(100.0)], [row(80.0)], [row(90.0)])
    change = history.compare(row(88.0), saves)
    assert change.now_us == 88.0
    assert change.last is not None and change.best is not None
    assert change.last.then_us == 90.0 and change.last.content_hash == "h2"
    assert change.last.ratio == pytest.approx(88.0 / 90.0 - 1)
    assert change.best.then_us == 80.0 and change.best.content_hash == "h1"
    assert change.best.ratio == pytest.approx(0.1)
    # p20/p80 1 us either side: the combined spread is 2 us; 2 us faster than the last
    # save is within it, 8 us slower than the best is beyond it
    assert change.last.beyond_noise is False and change.best.beyond_noise is True


def test_the_previous_save_is_the_latest_that_timed_the_same_row() -> None:
    saves = saves_of([row(100.0)], [row(50.0, variant="num_warps=8")])
    change = history.compare(row(70.0), saves)
    assert change.last is not None and change.last.then_us == 100.0
    assert history.compare(row(70.0, variant="new"), saves).last is None  # nothing earlier
    assert history.compare(row(70.0), []) == history.Change(history.row_key(row(70.0)), 70.0, None, None)


def test_without_intervals_the_combined_spread_decides() -> None:
    a = row(100.0, p20_us=98.0, p80_us=102.0)  # half width 2
    assert history.beyond_noise(a, row(105.0, p20_us=104.0, p80_us=106.0)) is True  # 5 > 2 + 1
    assert history.beyond_noise(a, row(103.5, p20_us=101.0, p80_us=106.0)) is False  # 3.5 < 2 + 2.5
    assert history.beyond_noise(a, row(110.0, p20_us=100.0, p80_us=106.0)) is True  # 10 > 5
    assert history.beyond_noise(a, row(95.0, p20_us=94.0, p80_us=96.0)) is True  # 5 > 3, faster too
    assert history.beyond_noise(a, row(99.0, p20_us=None, p80_us=None)) is None  # nothing to judge by


def test_with_intervals_on_both_only_their_overlap_decides() -> None:
    # wide sample spreads, narrow intervals of the median: the intervals decide
    a = row(100.0, p20_us=80.0, p80_us=120.0, median_low_us=99.0, median_high_us=101.0)
    b = row(103.0, p20_us=80.0, p80_us=120.0, median_low_us=102.0, median_high_us=104.0)
    c = row(101.5, p20_us=100.0, p80_us=103.0, median_low_us=100.5, median_high_us=102.5)
    assert history.beyond_noise(a, b) is True and history.beyond_noise(b, a) is True
    assert history.beyond_noise(a, c) is False  # 100.5..101 overlaps
    # one side without an interval: back to the spreads (40 us wide: 3 us is noise)
    assert history.beyond_noise(a, row(103.0, p20_us=80.0, p80_us=120.0)) is False
    saves = saves_of([a])
    change = history.compare(b, saves)
    assert change.last is not None and change.last.beyond_noise is True


def test_the_change_in_words() -> None:
    delta = history.Delta(100.0, -0.12, True, "t", "h")
    assert history.fmt_delta(delta) == "-12 % (beyond noise)"
    assert history.fmt_delta(history.Delta(100.0, 0.011, False, "t", "h")) == "+1 % (noise)"
    assert history.fmt_delta(history.Delta(100.0, 0.002, None, "t", "h")) == "±0 % (noise unknown)"
    assert history.fmt_delta(None, "—") == "—"
    # the narrow table's words
    assert history.fmt_delta(delta, short=True) == "-12 %"
    assert history.fmt_delta(history.Delta(100.0, 0.011, False, "t", "h"), short=True) == "+1 % noise"
    assert history.fmt_delta(history.Delta(100.0, 0.03, None, "t", "h"), short=True) == "+3 % ?"


def test_earlier_is_what_a_save_is_compared_with() -> None:
    saves = saves_of([row(1.0)], [row(2.0)], [row(3.0)])
    assert [s.content_hash for s in history.earlier(saves, "h2")] == ["h0", "h1"]
    assert [s.content_hash for s in history.earlier(saves, "h0")] == []
    assert [s.content_hash for s in history.earlier(saves, "new")] == ["h0", "h1", "h2"]


# --- the main variant's chart ---


def test_the_main_case_is_the_largest_roofline_shape() -> None:
    small = dict(
        shape="1024x1024", shape_role="comparison", params={"rows": 1024, "cols": 1024}, bytes=1 << 23
    )
    big_other = dict(
        shape="9999x9999", shape_role="comparison", params={"rows": 9999, "cols": 9999}, bytes=1 << 30
    )
    rows = [
        row(1.0, **small),
        row(2.0, **big_other),  # larger, but not a shape the spec marks
        row(3.0, dtype="fp16"),
        row(4.0),
        row(5.0, variant="torch", role="baseline", shape="b-only", bytes=1 << 40),
    ]
    assert history.main_case(rows) == ("16384x8192", "fp16")  # the first dtype timed there
    assert history.main_case([row(1.0, **small), row(2.0, **big_other)]) == ("9999x9999", "fp32")
    assert history.main_case([row(1.0, role="baseline")]) is None


def test_the_chart_follows_the_fastest_candidate_at_the_main_case() -> None:
    saves = saves_of(
        [row(100.0), row(120.0, variant="b"), row(50.0, role="baseline")],
        [row(90.0), row(70.0, variant="b")],
        [row(60.0)],
    )
    case = ("16384x8192", "fp32")
    assert [t for _, t in history.series(saves, case)] == [100.0, 70.0, 60.0]
    line = history.chart_line(saves, case, 80)
    assert line == "yours at 16384x8192 fp32, last 3 saves: █▃▁ 100.0 → 60.0 µs"
    assert history.chart_line(saves[:1], case, 80) == ""  # one save: nothing to chart
    assert history.sparkline([5.0, 5.0]) == "▁▁"


def test_the_chart_fits_its_width() -> None:
    saves = saves_of(*[[row(100.0 + (i % 7))] for i in range(50)])
    case = ("16384x8192", "fp32")
    for width in (40, 60, 80, 120):
        line = history.chart_line(saves, case, width)
        assert 0 < len(line) <= width
    assert "last 50 saves" in history.chart_line(saves, case, 120)
    assert "last 50 saves" not in history.chart_line(saves, case, 80)


def test_the_best_is_a_save_whose_checks_passed(tmp_path: Path) -> None:
    """A save timed when its checks passed that fails them later (the checks grew, or
    another machine ran them) stays the previous save but is no longer the best."""
    history.record_save(tmp_path, OP, "right", [row(100.0)])
    history.record_save(tmp_path, OP, "fast-and-wrong", [row(60.0)])
    saves = history.load(tmp_path, OP)
    assert [s.passed for s in saves] == [True, True]
    assert history.compare(row(90.0), saves).best.content_hash == "fast-and-wrong"

    saves = history.record_checks(tmp_path, OP, "fast-and-wrong", passed=False)
    assert saves == history.load(tmp_path, OP)  # kept in the file
    assert [s.passed for s in saves] == [True, False]
    change = history.compare(row(90.0), saves)
    assert change.last.content_hash == "fast-and-wrong"  # still the save before this one
    assert change.best.content_hash == "right" and change.best.then_us == 100.0

    # fixed again (same content passing): the best again
    history.record_checks(tmp_path, OP, "fast-and-wrong", passed=True)
    assert history.compare(row(90.0), history.load(tmp_path, OP)).best.content_hash == "fast-and-wrong"


def test_a_save_recorded_as_failing_is_never_the_best_and_no_best_is_none(tmp_path: Path) -> None:
    history.record_save(tmp_path, OP, "wrong", [row(50.0)], passed=False)
    (save,) = history.load(tmp_path, OP)
    assert save.passed is False
    change = history.compare(row(90.0), [save])
    assert change.last is not None and change.best is None


def test_a_verdict_that_changes_nothing_leaves_the_file_alone(tmp_path: Path) -> None:
    path = history.record_save(tmp_path, OP, "a", [row(100.0)])
    before = path.stat().st_mtime_ns
    assert history.record_checks(tmp_path, OP, "a", passed=True)[0].passed
    assert history.record_checks(tmp_path, OP, "never-timed", passed=False)[0].content_hash == "a"
    assert path.stat().st_mtime_ns == before


def test_a_history_written_before_verdicts_were_kept_counts_its_saves_as_passing(tmp_path: Path) -> None:
    path = history.record_save(tmp_path, OP, "a", [row(100.0)])
    data = json.loads(path.read_text())
    for s in data["saves"]:
        del s["passed"]
    path.write_text(json.dumps(data))
    (save,) = history.load(tmp_path, OP)
    assert save.passed is True
    data["saves"][0]["passed"] = "yes"
    path.write_text(json.dumps(data))
    assert history.load(tmp_path, OP) == []  # malformed: set aside
