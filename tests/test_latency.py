"""The save-to-verdict latency benchmark: its edits, its headless app path (no Textual,
no watchfiles), its JSON and the README table made from it.  Timings are reported,
never asserted."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from checks.running import RunSession as CheckController
from checks.running.child import ChildRun
from checks.running.pool import pool_size
from tui import latency
from workshops import catalog

REPO = Path(__file__).resolve().parent.parent
GPU_WORKSHOPS = [w for w in catalog.workshops() if w.gpu]


def jit_functions(src: str) -> list:
    return [
        n
        for n in ast.walk(ast.parse(src))
        if isinstance(n, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in n.decorator_list)
    ]


@pytest.mark.parametrize("w", GPU_WORKSHOPS, ids=lambda w: w.id)
def test_every_kernel_gets_its_own_edit(w):
    src = w.solution.read_text()
    kernels = jit_functions(src)
    assert kernels, f"{w.id}: no @triton.jit function found"
    a, b = latency.kernel_edit(src, 1234567, "all"), latency.kernel_edit(src, 7654321, "all")
    assert a != b
    for text, stamp in ((a, 1234567), (b, 7654321)):
        edited = jit_functions(text)
        assert [k.name for k in edited] == [k.name for k in kernels]
        for fn in edited:  # inside the body: the kernel's own source (its cache key) changes
            body = ast.get_source_segment(text, fn)
            assert f"_kc_edit = {stamp}" in body, fn.name
            assert ast.get_docstring(fn) == ast.get_docstring(next(k for k in kernels if k.name == fn.name))
    first = latency.kernel_edit(src, 42, "first")
    assert first.count("_kc_edit = 42") == 1


def test_an_edited_kernel_still_passes_interpreted(tmp_path):
    w = catalog.get("strided_softmax")
    path = tmp_path / w.exercise_name
    path.write_text(latency.kernel_edit(w.solution.read_text(), 99, "all"))
    records = ChildRun(w.id, path, interpret=True, timeout=300, only=["worked-transpose"]).run()
    assert [r.status for r in records] == ["pass"], records


def test_headless_benchmark_without_textual_or_watchfiles(tmp_path, capsys):
    """As on the GPU machine (torch, triton, numpy, rich only): the app's controller
    and watcher run headless, the watch polls; the JSON has the documented shape."""
    out = tmp_path / "lat.json"
    code = (
        "import sys; sys.modules['textual'] = None; sys.modules['watchfiles'] = None\n"
        "from tui import latency\n"
        f"sys.exit(latency.main(['--workshops', 'online_normalizer', '--repeats', '2', "
        f"'--json', {str(out)!r}]))\n"
        ""
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "textual" not in r.stderr
    data = json.loads(out.read_text())
    assert data["schema"] == "kernel-course/latency" and data["version"] == 3
    assert data["machine"]["watcher"] == "stat-poll"
    # the CPU workshop: one check worker, nothing to compile ahead
    assert data["machine"]["pool_size"] == {
        "online_normalizer": {"warm": {"check_workers": 1, "compile_workers": 0}}
    }
    assert data["complete"] is True and data["workshops_done"] == ["online_normalizer"]
    rows = {(s["workshop"], s["scenario"], s["path"]): s for s in data["summary"]}
    for path in ("warm", "fresh"):
        row = rows[("online_normalizer", "edit", path)]
        assert row["runs_started"] == 2
        assert row["first_s"]["min"] <= row["first_s"]["median"] <= row["first_s"]["max"]
        assert row["first_s"]["median"] <= row["last_s"]["median"]
    assert "ratio_fresh_over_warm" in rows[("online_normalizer", "edit", "warm")]
    assert rows[("online_normalizer", "unchanged save", "warm")]["runs_started"] == 0
    for run in data["runs"]:
        if run["path"] == "warm" and run["scenario"] == "edit":
            assert run["in_check_order"] and run["statuses"] == ["pass"] and run["checks"] > 5
            assert run["split"]["shards"] == 1 and run["split"]["notice_s"] is not None
    # the README table is generated from the JSON
    t = subprocess.run(
        [sys.executable, "results/latency_table.py", "--label", "CI", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert t.returncode == 0, t.stderr
    assert "| CI | A1 (online_normalizer), edit | 1 | - |" in t.stdout
    with capsys.disabled():
        print("\n" + r.stdout.strip() + "\n" + t.stdout)


def test_the_warm_path_is_the_apps_path_interpreted(tmp_path, monkeypatch):
    """Without a GPU the benchmark's warm path sizes its workers as the app does: the
    checks sharded over one worker per core, nothing compiled ahead."""
    monkeypatch.delenv("KERNEL_COURSE_POOL", raising=False)
    w = catalog.get("split_softmax")
    path = tmp_path / w.exercise_name
    path.write_text(w.solution.read_text())
    session = latency.HeadlessSession(w, path, workspace=tmp_path, interpret=True)
    app = CheckController(w, path, workspace=tmp_path, interpret=True)
    try:
        assert session.controller.settings() == app.settings()
        assert app.settings() == {"check_workers": pool_size(gpu=False), "compile_workers": 0}
    finally:
        session.close()
        app.close()


def test_gpu_workshop_through_two_shards_interpreted(tmp_path):
    """The benchmark's warm path on a GPU workshop (interpreted here), sharded over two
    workers: every check has its verdict, in check order, with the time split."""
    w = catalog.get("strided_softmax")
    path = tmp_path / w.exercise_name
    path.write_text(w.solution.read_text())
    session = latency.HeadlessSession(w, path, workspace=tmp_path, interpret=True, timeout=300, pool_size=2)
    try:
        session.start()
        r = latency.warm_run(session, latency.edited(w, "all"), 300)
    finally:
        session.close()
    assert r["ran"] and r["outcome"] == "done" and r["in_check_order"], r
    assert "pass" in r["statuses"] and not {"fail", "error"} & set(r["statuses"])
    assert r["split"]["shards"] == 2
    assert r["split"]["checks_s"] >= r["split"]["critical_s"] > 0
    print(
        f"\nstrided_softmax interpreted, 2 shards: first {r['first_s']:.2f} s, "
        f"last {r['last_s']:.2f} s, split {r['split']}"
    )


def test_the_apps_benchmark_is_timed_to_its_first_and_last_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench_after hands the app's BenchmarkRun an on_row, as the screen does: the rows'
    arrivals are timed from the pass (a stand-in benchmark that pauses after each row)."""
    import time
    import types

    from tui import benchmark_child

    tui_tests = REPO / "tests" / "tui"
    monkeypatch.setattr(benchmark_child, "BENCH_MODULE", "fake_benchmark")
    monkeypatch.syspath_prepend(str(tui_tests))
    monkeypatch.setenv("PYTHONPATH", str(tui_tests))
    monkeypatch.setenv("FAKE_BENCH_DELAY", "0.3")
    primed: list = []
    w = catalog.get("strided_softmax")
    session = types.SimpleNamespace(
        workshop=w,
        path=tmp_path / w.exercise_name,
        controller=types.SimpleNamespace(benchmark_worker=lambda: None, prime=lambda: primed.append(1)),
    )
    passed = time.monotonic()
    r = latency.bench_after(session, 60, passed)
    assert r["bench_error"] is None and r["bench_rows"] == 2 and r["bench_streamed_rows"] == 2
    assert 0 <= r["bench_first_row_s"] <= r["bench_last_row_s"] <= r["bench_s"]
    assert r["bench_warm"] is False and primed == [1]  # the next save's workers primed again
    # a benchmark that streams no row: no row times, never zero
    monkeypatch.setenv("FAKE_BENCH_DELAY", "0")
    session.workshop = types.SimpleNamespace(id="broken")
    r = latency.bench_after(session, 60)
    assert r["bench_first_row_s"] is None and r["bench_last_row_s"] is None and r["bench_error"]


def test_the_row_times_are_summarized_and_tabled(tmp_path: Path) -> None:
    import importlib.util

    def run(i: int, first: float, last: float, table: float) -> dict:
        return {
            "workshop": "strided_softmax",
            "scenario": "kernel edit",
            "path": "warm",
            "repeat": i,
            "ran": True,
            "outcome": "done",
            "statuses": ["pass"],
            "first_s": 0.5,
            "last_s": 2.0,
            "bench_s": table,
            "bench_first_row_s": first,
            "bench_last_row_s": last,
            "bench_rows": 4,
        }

    rows = [run(0, 1.5, 4.0, 4.2), run(1, 2.5, 5.0, 5.1), run(2, 9.0, 9.5, 9.6)]
    rows[2]["bench_rows"] = 0  # a benchmark that failed: out of the figures
    summary = latency.summarize(rows, gpu=True)
    warm = summary[0]
    assert warm["bench_first_row_s"] == {"median": 2.0, "min": 1.5, "max": 2.5}
    assert warm["bench_last_row_s"] == {"median": 4.5, "min": 4.0, "max": 5.0}
    assert warm["bench_s"]["max"] == 5.1
    spec = importlib.util.spec_from_file_location("latency_table", REPO / "results" / "latency_table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    payload = {"machine": {"gpu": True, "cpus": 16}, "summary": summary}
    cell = table.rows(payload, "H200")[0][table.HEADER.index("app: benchmark table after")]
    assert cell == "first row 2.00 s (1.50-2.50); last row 4.50 s (4.00-5.00); table 4.65 s (4.20-5.10)"
    assert warm["targets"]["bench_last_row_s"] == {"limit": 3.0, "value": 4.5, "met": False, "missed_by": 1.5}
    assert warm["targets"]["last_s"]["limit"] == 2.0 and warm["targets"]["last_s"]["met"]  # 2.0 s
    said = table.rows(payload, "H200")[0][table.HEADER.index("targets")]
    assert "last row <= 3 s: missed by 1.50 s" in said
    for r in rows:  # JSON from before the row times: the table's cell as it was
        del r["bench_first_row_s"], r["bench_last_row_s"]
    payload["summary"] = latency.summarize(rows, gpu=True)
    cell = table.rows(payload, "H200")[0][table.HEADER.index("app: benchmark table after")]
    assert cell == "4.65 s (4.20-5.10)"
