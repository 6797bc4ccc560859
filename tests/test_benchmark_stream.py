"""Rows streamed as they are measured, on the CPU.

``python -m checks.benchmark --stream-rows`` writes each row as one JSON line as soon as
the runner has it (the command driven with a fake spec and timer, as in
test_benchmark.py); the app's BenchmarkRun hands each row to its caller before the
benchmark ends (a stand-in benchmark, tests/tui/fake_benchmark.py, prints rows with
pauses); the timings panel appends the rows as they come.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_benchmark import CEILINGS, ENV, fake_timer, make_spec, run_fake

from checks.benchmark import cli as bench_cli, timing
from checks.benchmark.rows import ROW_LINE_TYPE
from tui import benchmark_child

TUI_TESTS = Path(__file__).resolve().parent / "tui"
IDENTITY = ("shape", "dtype", "variant", "role")


@pytest.fixture
def fake_command(monkeypatch):
    """The whole command on the CPU: spec loader, timer, ceilings and environment faked."""
    spec = make_spec()
    monkeypatch.setattr(bench_cli, "DEVICE", "cpu")
    monkeypatch.setattr(bench_cli, "cuda_problem", lambda: None)
    monkeypatch.setattr(bench_cli, "load_spec", lambda op: spec)
    monkeypatch.setattr(
        timing, "make_timers", lambda timing, cache, quick, cap_s=None: ({"graph": fake_timer(spec)}, "fake")
    )
    monkeypatch.setattr(timing, "measure_ceilings", lambda quick: dict(CEILINGS))
    monkeypatch.setattr(timing, "environment", lambda: dict(ENV))
    return spec


@pytest.fixture
def learner(tmp_path):
    from test_benchmark import LEARNER

    p = tmp_path / "strided_softmax.py"
    p.write_text(LEARNER)
    return p


def _key(row: dict) -> tuple:
    return tuple(row[k] for k in IDENTITY)


def test_runner_hands_each_row_over_before_it_times_the_next(learner):
    """on_row sees a row as soon as it is final: before the next variant is timed."""
    events: list = []
    spec = make_spec()
    timer = fake_timer(spec)

    def recording_timer(fn):
        events.append(("timed", spec.registry[fn.fns[0]]))
        return timer(fn)

    from checks.benchmark import runner
    from checks.judging.engine import load_exercise

    rows = runner.run_op(
        "strided_softmax",
        spec,
        load_exercise(learner),
        learner,
        dtypes=["fp32"],
        timers={"graph": recording_timer},
        ceilings=CEILINGS,
        device="cpu",
        on_row=lambda row: events.append(("row", row["variant"])),
    )
    handed = [name for what, name in events if what == "row"]
    assert handed == [r["variant"] for r in rows]  # every row, once, in order
    timed = [i for i, (what, _) in enumerate(events) if what == "timed"]
    for i in timed[1:]:  # the row timed before is handed over before the next is timed
        assert events[i - 1][0] == "row", events
    assert ("row", "triton num_warps=4") in events and len(timed) >= 2


def test_a_load_error_row_is_handed_over_too(learner):
    seen: list = []
    rows, _ = run_fake(learner, load_error="SyntaxError: bad", on_row=seen.append)
    assert seen == rows and rows[0]["variant"] == "(load)"


def test_stream_rows_on_stdout_one_json_line_each_and_the_report_on_stderr(
    tmp_path, learner, fake_command, capsys
):
    out = tmp_path / "run.json"
    code = bench_cli.main(
        ["--op", "strided_softmax", "--file", str(learner), "--output", str(out), "--stream-rows"]
    )
    printed = capsys.readouterr()
    assert code == 1  # wrong and crashing variants failed, as without the option
    lines = printed.out.splitlines()
    messages = [json.loads(line) for line in lines]  # every stdout line is one JSON object
    assert lines and all(m["type"] == ROW_LINE_TYPE and set(m) == {"type", "row"} for m in messages)
    streamed = [m["row"] for m in messages]
    payload = json.loads(out.read_text())  # the full payload still comes at the end
    assert [_key(r) for r in streamed] == [_key(r) for r in payload["results"]]
    for mine, final in zip(streamed, payload["results"]):
        assert {k: v for k, v in mine.items() if k != "speedup"} == {
            k: v for k, v in final.items() if k != "speedup"
        }  # the same rows; speedups need every row, so only the payload has them
    assert "median us" in printed.err and "results written to" in printed.err


def test_stream_rows_to_a_file_appends_lines_and_keeps_the_report_on_stdout(
    tmp_path, learner, fake_command, capsys
):
    out, rows_file = tmp_path / "run.json", tmp_path / "rows.jsonl"
    code = bench_cli.main(
        [
            "--op",
            "strided_softmax",
            "--file",
            str(learner),
            "--output",
            str(out),
            f"--stream-rows={rows_file}",
        ]
    )
    printed = capsys.readouterr()
    assert code == 1 and "results written to" in printed.out and ROW_LINE_TYPE not in printed.out
    streamed = [json.loads(line)["row"] for line in rows_file.read_text().splitlines()]
    assert [_key(r) for r in streamed] == [_key(r) for r in json.loads(out.read_text())["results"]]


def test_without_the_option_nothing_is_streamed(tmp_path, learner, fake_command, capsys):
    out = tmp_path / "run.json"
    bench_cli.main(["--op", "strided_softmax", "--file", str(learner), "--output", str(out)])
    printed = capsys.readouterr()
    assert ROW_LINE_TYPE not in printed.out and "results written to" in printed.out


def test_a_row_line_is_one_line_of_strict_json():
    row = {"op": "x", "message": "two\nlines", "median_us": float("nan"), "path": Path("/a")}
    line = bench_cli.row_line(row)
    assert "\n" not in line and "NaN" not in line
    assert benchmark_child.read_row_line(line) == {
        "op": "x",
        "message": "two\nlines",
        "median_us": None,
        "path": "/a",
    }


@pytest.mark.parametrize(
    "line",
    [
        "",
        "timed 2 variants",
        "{broken",
        '{"type": "other", "row": {}}',
        '{"type": "bench_row", "row": 3}',
        "[1]",
    ],
)
def test_lines_that_are_not_rows_are_not_rows(line):
    assert benchmark_child.read_row_line(line) is None


# --- the app's side: BenchmarkRun --------------------------------------------------------


def _stand_in(monkeypatch, delay: float) -> None:
    monkeypatch.setattr(benchmark_child, "BENCH_MODULE", "fake_benchmark")
    monkeypatch.syspath_prepend(str(TUI_TESTS))  # benchmark_child.available() looks for it here
    monkeypatch.setenv("PYTHONPATH", str(TUI_TESTS))
    monkeypatch.setenv("FAKE_BENCH_DELAY", str(delay))


def test_benchmark_run_hands_over_each_row_while_the_benchmark_still_runs(monkeypatch, tmp_path):
    _stand_in(monkeypatch, delay=1.0)
    seen: list = []
    run = benchmark_child.BenchmarkRun(
        "strided_softmax",
        tmp_path,
        on_row=lambda r: seen.append((r["variant"], run.proc.poll(), time.monotonic())),
    )
    rows, error, out = run.run()
    assert [variant for variant, _, _ in seen] == ["torch", "triton"]  # one by one, in order
    assert all(code is None for _, code, _ in seen)  # the benchmark had not ended
    assert seen[1][2] - seen[0][2] > 0.3  # each when it was printed, a pause apart
    assert error == "" and [r["variant"] for r in rows] == ["torch", "triton"]  # then the payload
    assert "measured torch" in out and "timed 2 variants" in out  # its text, from stderr


def test_a_failing_callback_does_not_stop_the_run(monkeypatch, tmp_path):
    _stand_in(monkeypatch, delay=0)

    def broken(row):
        raise RuntimeError("no screen")

    rows, error, out = benchmark_child.BenchmarkRun("strided_softmax", tmp_path, on_row=broken).run()
    assert error == "" and len(rows) == 2 and "no screen" in out


def test_in_a_warm_worker_the_rows_come_through_a_file(monkeypatch, tmp_path):
    """The warm worker's stdout is its own; there the benchmark appends rows to a file
    that BenchmarkRun follows.  The worker is a stand-in running the stand-in benchmark."""
    import checks.running

    _stand_in(monkeypatch, delay=1.0)
    seen: list = []

    def fake_run_benchmark(worker, argv, timeout, cancelled):
        assert any(a.startswith("--stream-rows=") for a in argv)
        # the worker's own option (it keeps the variants compiled): taken out before the benchmark
        kept_in = checks.running.benchmark_variants_file(tmp_path, "strided_softmax")
        keep = f"{checks.running.RECORD_VARIANTS}={kept_in}"
        assert keep in argv
        argv = [a for a in argv if a != keep]
        r = subprocess.run(
            [sys.executable, "-m", "fake_benchmark", *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        seen.append(("ended", None))
        return r.returncode, r.stdout + r.stderr

    monkeypatch.setattr(checks.running, "run_benchmark", fake_run_benchmark)
    exercise = tmp_path / "strided_softmax.py"
    exercise.write_text("")
    run = benchmark_child.BenchmarkRun("strided_softmax", tmp_path, file=exercise, worker=object())
    run.on_row = lambda r: seen.append(("row", r["variant"]))
    rows, error, _ = run.run()
    assert error == "" and [r["variant"] for r in rows] == ["torch", "triton"]
    assert seen == [("row", "torch"), ("row", "triton"), ("ended", None)]


def test_the_file_follower_waits_for_whole_lines(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("")
    got: list = []
    arrived = threading.Event()

    def on_row(row):
        got.append(row["n"])
        arrived.set()

    run = benchmark_child.BenchmarkRun("x", tmp_path, on_row=on_row)
    stop = threading.Event()
    follower = threading.Thread(target=run._follow, args=(str(path), stop, benchmark_child._Output()))
    follower.start()
    line = bench_cli.row_line({"n": 1})
    with open(path, "a", encoding="utf-8") as f:
        f.write(line[:10])
        f.flush()
        time.sleep(0.2)
        assert got == []  # half a line is not a row yet
        f.write(line[10:] + "\nnot a row\n")
        f.flush()
    assert arrived.wait(5) and got == [1]  # delivered while the writer is still going
    with open(path, "a", encoding="utf-8") as f:
        f.write(bench_cli.row_line({"n": 2}) + "\n")
    stop.set()
    follower.join(5)
    assert got == [1, 2] and not follower.is_alive()  # the last rows are read after stop


def test_a_cancelled_run_hands_over_no_more_rows(monkeypatch, tmp_path):
    _stand_in(monkeypatch, delay=1.0)
    seen: list = []

    def first_then_cancel(row):
        seen.append(row["variant"])
        run.cancel()

    run = benchmark_child.BenchmarkRun("strided_softmax", tmp_path, on_row=first_then_cancel)
    rows, error, _ = run.run()
    assert seen == ["torch"] and error == "cancelled" and rows == []


# --- the panel -----------------------------------------------------------------------------


def _row(variant: str, role: str, median: float, **kw) -> dict:
    base = {
        "op": "strided_softmax",
        "shape": "1024x1024",
        "dtype": "fp16",
        "variant": variant,
        "role": role,
        "status": "ok",
        "median_us": median,
    }
    return dict(base, **kw)


def test_with_row_fills_speedups_once_the_baseline_has_come():
    mine = _row("mine", "candidate", 5.0)
    rows = benchmark_child.with_row([], mine)
    assert rows[0]["speedup"] is None  # no baseline yet
    rows = benchmark_child.with_row(rows, _row("torch", "baseline", 10.0))
    assert [r["speedup"] for r in rows] == [2.0, 1.0] and "speedup" not in mine
    old = benchmark_child.with_row(rows, {"variant": "from an old file"})  # no fields for a speedup
    assert len(old) == 3 and old[-1] == {"variant": "from an old file"}


def test_the_panel_appends_streamed_rows_and_a_new_run_starts_afresh():
    from textual.app import App

    from tui.widgets.timings import TimingsPanel

    class PanelApp(App):
        def compose(self):
            yield TimingsPanel()

    async def body():
        app = PanelApp()
        async with app.run_test(size=(120, 24)) as pilot:
            panel = app.query_one(TimingsPanel)
            panel.add_result(_row("mine", "candidate", 5.0), run=1)
            await pilot.pause()
            table = panel.query_one("#timings")
            assert table.row_count == 1
            panel.add_result(_row("torch", "baseline", 10.0), run=1)
            await pilot.pause()
            assert table.row_count == 2 and [r["variant"] for r in panel.results] == ["mine", "torch"]
            cells = dict(zip((str(k.value) for k in table.columns), table.get_row_at(0)))
            assert str(cells["speedup"]) == "2.00x"  # the baseline came after it
            panel.add_result(_row("again", "candidate", 4.0), run=2)
            await pilot.pause()
            assert table.row_count == 1 and panel.results[0]["variant"] == "again"

    asyncio.run(body())


def test_after_a_pass_the_app_times_the_comparison_shapes_with_a_short_cap_and_everything_on_request(
    monkeypatch, tmp_path
):
    _stand_in(monkeypatch, delay=0)
    said = tmp_path / "args.jsonl"
    monkeypatch.setenv("FAKE_BENCH_ARGS", str(said))
    benchmark_child.BenchmarkRun("strided_softmax", tmp_path).run()
    benchmark_child.BenchmarkRun("strided_softmax", tmp_path, shapes=benchmark_child.EVERYTHING).run()
    after_pass, asked = (json.loads(line) for line in said.read_text().splitlines())
    assert after_pass[after_pass.index("--shapes") + 1] == "comparison"
    assert f"--cap-s={benchmark_child.APP_CAP_S:g}" in after_pass and "--dtype" not in after_pass
    assert "--quick" in after_pass and "--quick" not in asked
    # after a pass: the learner's defaults and PyTorch's rows; the sweep of options on request
    assert after_pass[after_pass.index("--variants") + 1] == "defaults" and "--variants" not in asked
    assert asked[asked.index("--shapes") + 1] == "all" and asked[asked.index("--dtype") + 1] == "all"
    assert not any(a.startswith("--cap-s") for a in asked)  # every row sampled as long as the command's own
    with pytest.raises(ValueError, match="shapes: 'roofline'"):
        benchmark_child.BenchmarkRun("strided_softmax", tmp_path, shapes="roofline")
