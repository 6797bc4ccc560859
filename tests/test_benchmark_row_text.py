"""One typed row (checks.benchmark.rows.BenchRow) and one formatter for its cells
(checks.benchmark.row_text), used by the command's table, results/SUMMARY.md and the app."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from checks.benchmark import row_text, rows as rowlib, tables
from tui import benchmark_child

REPO = Path(__file__).resolve().parent.parent


def timed(**kw) -> dict:
    r = dict(rowlib.new_row("op", {"name": "1024x1024", "role": "comparison"}, "fp16", "mine", "candidate"))
    r.update(
        median_us=5.8512,
        p20_us=5.8,
        p80_us=5.93,
        device_us=5.8512,
        per_call_us=60.0,
        harness_us=0.42,
        host_us=54.15,
        launch_bound=True,
        speedup=2.2222,
        gbps=1422.4,
        fraction_of_ceiling=0.3412,
        rel_error=8.6e-8,
        kernels=[{"n_regs": 80, "n_spills": 0, "num_warps": 4, "num_stages": 3, "shared_bytes": 16384}],
    )
    r.update(kw)
    return r


def test_new_row_fills_every_field_of_the_typed_row_and_nothing_else():
    row = rowlib.new_row("op", {"name": "s", "role": "roofline", "rows": 4}, "bf16", "v", "nobody")
    declared = rowlib.BenchRow.__required_keys__ | rowlib.BenchRow.__optional_keys__
    assert set(row) == declared
    assert set(rowlib.RowIdentity.__required_keys__) == {"op", "shape", "dtype", "variant", "role", "status"}
    assert row["role"] == "candidate" and row["params"] == {"rows": 4} and row["status"] == "ok"
    for later in ("median_low_us", "median_high_us", "rounds", "converged", "working_set_bytes"):
        assert row[later] is None  # measured by the timers, None until then
    assert row["tolerance"] == rowlib.REL_TOL["bf16"]


def test_each_column_of_a_timed_row():
    r = timed()
    cells = dict(zip(row_text.CLI_COLUMNS, row_text.cells(r, row_text.CLI_COLUMNS)))
    assert cells == {
        "variant": "mine",
        "role": "candidate",
        "shape": "1024x1024",
        "dtype": "fp16",
        "median": "5.85",
        "spread": "5.80-5.93",
        "per_call": "60.00",
        "harness": "0.42",
        "host": "54.15 launch-bound",
        "speedup": "2.22x",
        "throughput": "1422 GB/s",
        "fraction": "34%",
        "kernel": "80r 0sp 4w 3st 16K",
        "status": "ok",
    }
    assert row_text.rel_error(r) == "8.6e-08"


def test_the_median_shows_its_interval_when_the_run_measured_one():
    assert row_text.median(timed(median_low_us=5.80, median_high_us=5.88)) == "5.85 ±0.05"
    assert row_text.median(timed(median_low_us=5.84, median_high_us=5.95)) == "5.85 ±0.10"  # the farther end
    assert row_text.median(timed(median_low_us=None, median_high_us=5.9)) == "5.85"  # half an interval: none
    assert not row_text.has_interval([timed()]) and row_text.has_interval(
        [timed(median_low_us=5.8, median_high_us=5.9)]
    )


def test_missing_and_malformed_values_are_missing_never_zero():
    old = {"op": "op", "variant": "v", "median_us": "fast", "speedup": float("nan"), "launch_bound": True}
    for col in row_text.CLI_COLUMNS:
        if col not in ("variant", "status"):
            assert row_text.COLUMNS[col][1](old, "?") == "?", col
    assert row_text.per_call({"per_call_us": 9.0}) == "-"  # alone it is the median already
    assert row_text.kernel(timed(kernels=[])) == "no triton"
    assert row_text.host(timed(launch_bound=None)) == "54.15"


@pytest.mark.parametrize(
    "status, message, refused, shown",
    [
        ("ok", "", None, "ok"),
        ("todo", "TODO: write the kernel", None, "TODO: write the kernel"),
        ("skipped", "TODO: write the kernel", None, "TODO: write the kernel"),  # before 2026-12-03
        ("failed", "wrong result: relative error 3\nmore", None, "FAILED: wrong result: relative error 3"),
        (
            "failed",
            "refused: skips-work: no kernel of yours ran",
            "skips-work",
            "REFUSED skips-work: no kernel of yours ran",
        ),
        (
            "failed",
            "not timed: torch wrote it",
            "not-own-kernel",
            "REFUSED not-own-kernel: not timed: torch wrote it",
        ),
        ("failed", "", None, "FAILED"),
    ],
)
def test_status_says_the_verdict_and_why(status, message, refused, shown):
    assert row_text.status({"status": status, "message": message, "refused": refused}) == shown


def test_a_long_message_is_cut():
    assert (
        len(row_text.status({"status": "failed", "message": "x" * 500}))
        == len("FAILED: ") + row_text.STATUS_WIDTH
    )


def test_the_app_shows_the_same_text_with_its_own_missing_mark():
    r = timed(median_low_us=5.8, median_high_us=5.9, p20_us=None)
    app = {
        "median": benchmark_child.fmt_median(r),
        "spread": benchmark_child.fmt_spread(r),
        "speedup": benchmark_child.fmt_speedup(r["speedup"]),
        "throughput": benchmark_child.fmt_rate(r),
        "fraction": benchmark_child.fmt_fraction(r["fraction_of_ceiling"]),
        "per_call": benchmark_child.fmt_per_call(r),
        "host": benchmark_child.fmt_host(r),
        "kernel": benchmark_child.fmt_kernel(r),
    }
    assert set(app) == set(row_text.APP_COLUMNS)
    assert app == dict(
        zip(row_text.APP_COLUMNS, row_text.cells(r, row_text.APP_COLUMNS, benchmark_child.MISSING))
    )
    assert app["spread"] == benchmark_child.MISSING and app["median"] == "5.85 ±0.05"
    failed = {"status": "failed", "message": "boom", "median_us": None}
    assert benchmark_child.fmt_median(failed) == "failed" and row_text.median(failed) == "-"
    assert benchmark_child.fmt_median(dict(failed, refused="impossible")) == "refused"


def test_the_cli_and_the_summary_print_the_same_cells(tmp_path):
    rows = [timed(median_low_us=5.8, median_high_us=5.9), timed(status="todo", message="TODO: write it")]
    shared = [c for c in row_text.CLI_COLUMNS if c in row_text.SUMMARY_COLUMNS]
    for x, printed in zip(rows, tables.table_rows(rows)):
        in_cli = dict(zip(row_text.CLI_COLUMNS, printed))
        in_summary = dict(zip(row_text.SUMMARY_COLUMNS, row_text.cells(x, row_text.SUMMARY_COLUMNS)))
        assert {c: in_cli[c] for c in shared} == {c: in_summary[c] for c in shared}
    payload = {
        "schema": "kernel-course/benchmark",
        "version": 1,
        "created": "2026-12-04T10:00:00+0000",
        "timing": "both",
        "cache": "warm",
        "target": "learner",
        "results": rows,
    }
    (tmp_path / "run.json").write_text(json.dumps(payload))
    out = tmp_path / "SUMMARY.md"
    r = subprocess.run(
        [
            sys.executable,
            str(REPO / "results" / "summarize.py"),
            "--results",
            str(tmp_path),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    header = "| " + " | ".join(row_text.headers(row_text.SUMMARY_COLUMNS)) + " |"
    assert header in text
    for line in (" | ".join(row_text.cells(x, row_text.SUMMARY_COLUMNS)) for x in rows):
        assert line in text
    assert "| 5.85 ±0.05 |" in text and "| 54.15 launch-bound |" in text
    assert row_text.INTERVAL_NOTE in text and "TODO: write it" in text


def test_the_printed_table_explains_the_interval_only_when_it_shows_one(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "rich.console", None)  # plain text
    tables.print_table("t", [timed()])
    assert row_text.INTERVAL_NOTE not in capsys.readouterr().out
    tables.print_table("t", [timed(median_low_us=5.8, median_high_us=5.9)])
    out = capsys.readouterr().out
    assert "5.85 ±0.05" in out and row_text.INTERVAL_NOTE in out
    tables.print_table("empty", [])
    assert "median us" in capsys.readouterr().out


def test_the_harness_cost_shows_only_beside_a_per_call_time():
    assert row_text.harness(timed()) == "0.42"
    assert row_text.harness(timed(per_call_us=None)) == "-"
    assert row_text.harness(timed(harness_us=None)) == "-"
