"""The app's parts: no torch in the app process, the CLI, timings, reference results."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tui import benchmark_child
from workshops import catalog

from tui_helpers import wait_for, wait_for_run

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def test_app_never_imports_torch_or_triton(tmp_path):
    """In a fresh interpreter: import the app, run checks (a GPU workshop interpreted,
    when it exists, so its worker does import torch), and look at sys.modules."""
    gpu = "strided_softmax" if any(w.id == "strided_softmax" for w in catalog.workshops()) else ""
    script = textwrap.dedent(f"""
        import asyncio, json, sys, time
        t0 = time.perf_counter()
        from tui.app import CourseApp
        import_s = time.perf_counter() - t0
        sys.path.insert(0, {str(HERE)!r})
        from tui_helpers import wait_for_run

        async def go(wid):
            app = CourseApp(workspace={str(tmp_path / "ws")!r}, open_workshop=wid, gpu=False,
                            results_dir={str(tmp_path / "out")!r})
            async with app.run_test(size=(120, 40)) as pilot:
                panel = await wait_for_run(pilot, timeout=90)
                return panel.outcome
        outcomes = [asyncio.run(go("online_normalizer"))]
        if {gpu!r}:
            outcomes.append(asyncio.run(go({gpu!r})))
        print(json.dumps({{"torch": "torch" in sys.modules, "triton": "triton" in sys.modules,
                           "import_s": import_s, "outcomes": outcomes}}))
    """)
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=150
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["outcomes"] and set(out["outcomes"]) == {"done"}, out
    assert out["torch"] is False and out["triton"] is False
    # (how fast the app imports is measured by the latency benchmark, not asserted here:
    # a loaded machine takes longer)


def test_cli_help_and_unknown_workshop():
    help_ = subprocess.run(
        [sys.executable, "-m", "tui", "--help"], cwd=REPO, capture_output=True, text=True, timeout=30
    )
    assert help_.returncode == 0
    for flag in ("--workspace", "--open", "--poll", "--no-bench"):
        assert flag in help_.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "tui", "--open", "nope"], cwd=REPO, capture_output=True, text=True, timeout=30
    )
    assert bad.returncode == 64 and "unknown workshop" in bad.stderr


def test_cli_builds_the_app(monkeypatch, tmp_path):
    import tui.__main__ as entry

    seen = {}

    def fake_run(self):
        seen.update(
            workspace=self.workspace, open=self.open_at_start, poll=self.poll, bench=self.bench_enabled
        )

    monkeypatch.setattr(entry, "missing_terminal", lambda: "")  # pytest's stdin is none
    monkeypatch.setattr("tui.app.CourseApp.run", fake_run)
    assert entry.main(["--workspace", str(tmp_path), "--open", "A1", "--poll", "--no-bench"]) == 0
    assert seen == {"workspace": tmp_path.resolve(), "open": "A1", "poll": True, "bench": False}


def test_poll_mode_sees_saves(make_app, workspace):
    from tui_helpers import digest_of, save

    w = catalog.get("online_normalizer")

    async def body():
        app = make_app(open_workshop="A1", poll=True)
        async with app.run_test(size=(120, 40)) as pilot:
            path = workspace / w.exercise_name
            await wait_for_run(pilot, digest_of(w.starter))
            await save(pilot, path, w.solution.read_text())
            panel = await wait_for_run(pilot, digest_of(path), 20)
            assert set(panel.statuses()) == {"pass"}

    asyncio.run(body())


# --- timings -----------------------------------------------------------------------


def test_reference_results_newest_file_and_missing_values(tmp_path):
    rows = lambda v: {
        "results": [
            {"op": "strided_softmax", "variant": v, "median_us": 10.0},
            {"op": "other", "variant": "x", "median_us": 1.0},
        ]
    }
    (tmp_path / "strided_softmax-2026-01-01.json").write_text(json.dumps(rows("old")))
    (tmp_path / "strided_softmax-2026-02-01.json").write_text(json.dumps(rows("new")))
    (tmp_path / "strided_softmax-2026-03-01.json").write_text("{broken")
    got, source = benchmark_child.load_reference("strided_softmax", tmp_path)
    assert [r["variant"] for r in got] == ["new"] and source.name.endswith("02-01.json")
    assert benchmark_child.load_reference("nothing", tmp_path) == ([], None)
    # the lead's layout: one file per run holding every op, named by date and commit
    results, ref = tmp_path / "results", tmp_path / "results" / "reference"
    ref.mkdir(parents=True)
    for name in ("2026-11-01-abc1234-graph.json", "2026-12-01-def5678-graph.json"):
        (results / name).write_text(json.dumps(rows("all-ops")))
    (results / "checks-h200.json").write_text(json.dumps({"records": []}))
    got, source = benchmark_child.load_reference("other", [ref, results])
    assert [r["variant"] for r in got] == ["x"] and source.name.startswith("2026-12-01")
    (ref / "other-2026-10-01.json").write_text(json.dumps(rows("per-op")))
    got, source = benchmark_child.load_reference("other", [ref, results])
    assert source.parent == ref  # results/reference/ comes first
    # unavailable is shown as unavailable, never as zero
    assert (
        benchmark_child.fmt_us(None) == benchmark_child.MISSING
        and benchmark_child.fmt_us(float("nan")) == benchmark_child.MISSING
    )
    assert benchmark_child.fmt_rate({"gbps": None, "tflops": None}) == benchmark_child.MISSING
    assert benchmark_child.fmt_rate({"tflops": 312.25}) == "312.2 TFLOP/s"
    assert (
        benchmark_child.fmt_fraction(0.5) == "50%"
        and benchmark_child.fmt_spread({"p20_us": 1}) == benchmark_child.MISSING
    )


def test_benchmark_subprocess(monkeypatch, tmp_path):
    monkeypatch.setattr(benchmark_child, "BENCH_MODULE", "fake_benchmark")
    monkeypatch.setenv("PYTHONPATH", str(HERE))
    rows, error, out = benchmark_child.BenchmarkRun("strided_softmax", tmp_path).run()
    assert error == "" and [r["variant"] for r in rows] == ["torch", "triton"]
    rows, error, out = benchmark_child.BenchmarkRun("broken", tmp_path).run()
    assert rows == [] and "failed" in error and "kernel exploded" in out
    monkeypatch.setattr(benchmark_child, "BENCH_MODULE", "checks.no_such_benchmark")
    rows, error, _ = benchmark_child.BenchmarkRun("strided_softmax", tmp_path).run()
    assert rows == [] and error.startswith("benchmarks unavailable")


def test_timings_panel_after_a_pass(make_app, monkeypatch, tmp_path):
    """The timings path of a passing GPU run: the benchmark child's rows beside the
    committed reference rows, in the table and as bars.  No GPU here, so the pass on a
    GPU is pretended and the benchmark is a stand-in (tests/tui/fake_benchmark.py)."""
    from tui.widgets.timings import TimingsPanel

    w = catalog.get("strided_softmax")
    monkeypatch.setattr(benchmark_child, "BENCH_MODULE", "fake_benchmark")
    monkeypatch.setenv("PYTHONPATH", str(HERE))
    monkeypatch.setenv("FAKE_BENCH_DELAY", "1.0")  # a pause after each row it prints
    asked = tmp_path / "bench-args.jsonl"
    monkeypatch.setenv("FAKE_BENCH_ARGS", str(asked))  # the stand-in writes its arguments here
    ref = tmp_path / "reference"
    ref.mkdir()
    (ref / f"{w.id}-2026-01-01.json").write_text(
        json.dumps(
            {
                "results": [
                    {
                        "op": w.id,
                        "shape": "4096x4096",
                        "dtype": "fp16",
                        "variant": "triton",
                        "median_us": 90.0,
                        "gbps": None,
                        "tflops": None,
                    }
                ]
            }
        )
    )
    monkeypatch.setattr(benchmark_child, "REFERENCE_DIRS", (ref,))

    async def body():
        app = make_app(open_workshop=w.id)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await wait_for(
                pilot, lambda: getattr(app.screen, "controller", None) and app.screen, 10, "the workshop"
            )
            timings = screen.query_one(TimingsPanel)
            await wait_for_run(pilot, timeout=90)
            assert "unavailable" in str(timings.query_one("#timings-status").render())
            assert not timings.reference  # interpreted: nothing to compare with is loaded
            # pretend the checks passed on a GPU
            screen.interpret, screen.passed = False, True
            screen.set_class(False, "interpreted")
            screen._load_reference()
            await wait_for(pilot, lambda: timings.reference, 10, "the reference rows")
            screen._maybe_bench(screen.controller.generation, screen.last.content_hash)
            # rows show as the benchmark measures them, before it ends
            await wait_for(pilot, lambda: timings.results, 30, "the first row")
            shown = len(timings.results)  # one, or both on a machine too loaded to look sooner
            assert shown >= 1 and (shown == 1) <= (screen._bench_run.proc.poll() is None)
            assert timings.query_one("#timings").row_count == shown + 1  # with the reference row
            await wait_for(pilot, lambda: screen.bench_rows, 30, "the timings")
            table = timings.query_one("#timings")
            keys = [str(k.value) for k in table.columns]
            rows = [dict(zip(keys, table.get_row_at(i))) for i in range(table.row_count)]
            text = [{k: str(v) for k, v in r.items()} for r in rows]
            assert [r["run"] for r in text] == ["yours", "yours", "reference"]
            assert text[1]["median"] == "100.00" and text[1]["speedup"] == "2.00x"
            if "rate" in keys:  # the columns that fit 120
                assert (
                    text[1]["rate"] == "1280 GB/s" and text[2]["rate"] == benchmark_child.MISSING
                )  # not zero
            from rich.bar import Bar

            assert isinstance(rows[1]["bar"], Bar) and rows[1]["bar"].end == 100.0
            assert rows[0]["bar"].size == 200.0  # scaled to the slowest row at its shape
            # export includes the benchmark rows of the same content
            payload = screen.export_payload()
            assert [r["variant"] for r in payload["benchmarks"]] == ["torch", "triton"]
            # after the pass: the comparison shapes; B: every shape and dtype
            await pilot.press("B")
            await wait_for(pilot, lambda: len(asked.read_text().splitlines()) >= 2, 30, "timing everything")
            after_pass, on_request = (json.loads(line) for line in asked.read_text().splitlines())
            assert after_pass[after_pass.index("--shapes") + 1] == "comparison"
            assert on_request[on_request.index("--shapes") + 1] == "all" and "--dtype" in on_request

    asyncio.run(body())
