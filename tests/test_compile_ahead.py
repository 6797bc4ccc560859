"""Compiling ahead what the app's benchmark compiled, on the CPU.

The benchmark's worker hears the variants of the learner's kernels it compiles (through
Triton's public ``jit_cache_hook``, called here as Triton calls it) and keeps them in the
state folder; a new save hands the compile pool the checks' variants, then the
benchmark's.  The compile pool is a stand-in that records what it is given (the real
pool is exercised in test_compile_pool.py)."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any, Callable, cast

import pytest

from checks.running import RECORD_VARIANTS, benchmark_variants_file, variants
from checks.running.compile_ahead import CompileAhead, read_variants, variants_file, write_variants
from checks.running.worker import recording_benchmark_variants

TARGET = ["cuda", 90, 32]


def _data(block: int, module: str = "some_module") -> str:
    return json.dumps({"name": f"{module}.double_kernel", "constant_vals": [block], "options": {}})


def _v(block: int) -> dict:
    return {"qualname": "double_kernel", "data": _data(block)}


def _ident(v: dict) -> str:
    return variants.identity(v["qualname"], v["data"])


class StandInPool:
    """What CompileAhead asks of the compile pool, recorded; its job never finishes by itself."""

    size = 2

    def __init__(self) -> None:
        self.submitted: list = []
        self.cancels = 0
        self.job: object = None

    def submit(self, path: Path, digest: str, target: list, wanted: list, folder: str) -> Any:
        ids: list = []
        for v in wanted:
            if _ident(v) not in ids:
                ids.append(_ident(v))
        self.submitted.append((list(target), [dict(v) for v in wanted]))
        self.job = types.SimpleNamespace(
            ids=ids, finished_at=None, summary=lambda: {"variants": len(ids), "compiled": 0}
        )
        return self.job

    def cancel(self) -> None:
        self.cancels += 1

    def warm(self, target: list) -> None:
        pass

    def close(self) -> None:
        pass


def _hook(path: Path, qualname: str, data: str) -> None:
    """Triton's call of its ``jit_cache_hook`` for a variant about to be compiled."""
    import triton

    fn = types.SimpleNamespace(
        name=qualname,
        jit_function=types.SimpleNamespace(
            fn=types.SimpleNamespace(__code__=types.SimpleNamespace(co_filename=str(path)))
        ),
    )
    hook = triton.knobs.runtime.jit_cache_hook
    assert hook is not None, "nobody listens to Triton's compiles"
    hook(key="k", repr="r", fn=fn, compile={"specialization_data": data}, is_manual_warmup=False)


def test_the_benchmarks_worker_keeps_the_variants_it_compiled(tmp_path: Path) -> None:
    mine, other = tmp_path / "strided_softmax.py", tmp_path / "reference.py"
    mine.write_text("", encoding="utf-8")
    other.write_text("", encoding="utf-8")
    to = benchmark_variants_file(tmp_path, "strided_softmax")
    assert to == variants_file(tmp_path, "strided_softmax", benchmark=True)
    assert to.name == "strided_softmax-benchmark.json" and to.parent.name == "variants"
    argv = ["--op", "strided_softmax", "--file", str(mine), f"{RECORD_VARIANTS}={to}", "--stream-rows=x"]
    with recording_benchmark_variants(argv, TARGET) as rest:
        assert rest == ["--op", "strided_softmax", "--file", str(mine), "--stream-rows=x"]
        _hook(mine, "double_kernel", _data(64, "bench_module_1"))
        _hook(other, "reference_kernel", _data(64))  # not the learner's kernel
        _hook(mine, "double_kernel", _data(128, "bench_module_1"))
        _hook(mine, "double_kernel", _data(64, "bench_module_2"))  # the same variant again
    data = json.loads(to.read_text(encoding="utf-8"))
    assert data["workshop"] == "strided_softmax" and data["target"] == TARGET
    assert [json.loads(v["data"])["constant_vals"] for v in data["variants"]] == [[64], [128]]
    assert {v["qualname"] for v in data["variants"]} == {"double_kernel"}
    assert read_variants(to) == (data["variants"], TARGET)  # the format the checks' file has


def test_a_benchmark_that_compiled_nothing_keeps_the_last_list(tmp_path: Path) -> None:
    mine = tmp_path / "strided_softmax.py"
    mine.write_text("", encoding="utf-8")
    to = benchmark_variants_file(tmp_path, "strided_softmax")
    write_variants(to, "strided_softmax", TARGET, [_v(64)])
    before = to.read_text(encoding="utf-8")
    argv = ["--op", "strided_softmax", "--file", str(mine), RECORD_VARIANTS, str(to)]
    with recording_benchmark_variants(argv, TARGET) as rest:
        assert rest == ["--op", "strided_softmax", "--file", str(mine)]
    assert to.read_text(encoding="utf-8") == before
    with recording_benchmark_variants(["--list"], TARGET) as rest:  # nothing asked: nothing heard
        assert rest == ["--list"]


def test_the_warm_worker_takes_the_option_out(tmp_path: Path) -> None:
    """Through a real warm worker: the benchmark never sees ``--record-variants`` (else it
    would stop with a usage error), and a run that compiled nothing writes nothing."""
    from checks.running.child import Worker, run_benchmark

    mine = tmp_path / "strided_softmax.py"
    mine.write_text("", encoding="utf-8")
    to = benchmark_variants_file(tmp_path, "strided_softmax")
    w = Worker(preload="none")
    assert w.wait_ready(120)
    code, tail = run_benchmark(w, ["--list", "--file", str(mine), f"{RECORD_VARIANTS}={to}"], timeout=120)
    assert code == 0 and "strided_softmax" in tail, tail
    assert not to.exists()


@pytest.fixture
def ahead(tmp_path: Path) -> tuple[Callable[[], CompileAhead], StandInPool, Path]:
    exercise = tmp_path / "workspace" / "strided_softmax.py"
    exercise.parent.mkdir()
    exercise.write_text("", encoding="utf-8")
    pool = StandInPool()

    def make() -> CompileAhead:
        return CompileAhead(
            "strided_softmax",
            exercise,
            exercise.parent,
            compilers=2,
            timeout=30.0,
            compile_pool=cast(Any, pool),
        )

    return make, pool, exercise.parent


def test_a_save_compiles_the_checks_variants_then_the_benchmarks(ahead: tuple) -> None:
    make, pool, workspace = ahead
    checks, bench = [_v(64), _v(128)], [_v(128), _v(256), _v(512)]
    write_variants(variants_file(workspace, "strided_softmax"), "strided_softmax", TARGET, checks)
    write_variants(benchmark_variants_file(workspace, "strided_softmax"), "strided_softmax", TARGET, bench)
    a = make()  # as after a restart: both lists from the state folder
    job, predicted = a.start("digest")
    assert pool.submitted == [(TARGET, checks + bench)]  # the checks' first: the verdict comes first
    assert job.ids == [_ident(v) for v in (_v(64), _v(128), _v(256), _v(512))]
    assert predicted is not None and predicted["ids"] == [_ident(_v(64)), _ident(_v(128))]
    assert Path(predicted["folder"]).is_dir()
    a.done(job, predicted, current=True)
    assert a.last["benchmark_variants"] == 2
    assert pool.cancels == 1 and not Path(predicted["folder"]).exists()  # no benchmark follows


def test_a_passing_run_leaves_the_benchmarks_variants_compiling(ahead: tuple) -> None:
    make, pool, workspace = ahead
    write_variants(variants_file(workspace, "strided_softmax"), "strided_softmax", TARGET, [_v(64)])
    a = make()
    job, predicted = a.start("one")
    assert pool.submitted[-1][1] == [_v(64)]  # no benchmark yet
    # the benchmark of the passing run keeps its variants; the next save compiles them too
    write_variants(benchmark_variants_file(workspace, "strided_softmax"), "strided_softmax", TARGET, [_v(32)])
    a.done(job, predicted, current=True, benchmark_next=True)
    assert pool.cancels == 0 and Path(predicted["folder"]).is_dir()  # still compiling
    a.cancel()  # the next save
    assert pool.cancels == 1 and not Path(predicted["folder"]).exists()
    job2, predicted2 = a.start("two")
    assert pool.submitted[-1][1] == [_v(64), _v(32)]
    assert predicted2 is not None and predicted2["ids"] == [_ident(_v(64))]
    a.done(job2, predicted2, current=True)
    a.close()


def test_another_gpus_benchmark_variants_are_not_compiled(ahead: tuple) -> None:
    make, pool, workspace = ahead
    write_variants(variants_file(workspace, "strided_softmax"), "strided_softmax", TARGET, [_v(64)])
    other = ["cuda", 80, 32]
    write_variants(benchmark_variants_file(workspace, "strided_softmax"), "strided_softmax", other, [_v(32)])
    a = make()
    job, predicted = a.start("digest")
    assert pool.submitted == [(TARGET, [_v(64)])]
    a.done(job, predicted, current=False)


def test_only_a_passing_run_with_benchmarks_on_is_timed_next(tmp_path: Path) -> None:
    from checks.judging.records import Record
    from checks.running import RunSession, events
    from workshops import catalog

    path = tmp_path / "strided_softmax.py"
    path.write_text("", encoding="utf-8")
    passing = [Record(workshop="strided_softmax", id="a", label="a", status="pass")]
    failing = passing + [Record(workshop="strided_softmax", id="b", label="b", status="fail")]
    done = events.RunOutcome.DONE
    s = RunSession(
        catalog.get("strided_softmax"),
        path,
        workspace=tmp_path,
        interpret=False,
        compile_pool=cast(Any, StandInPool()),
    )
    try:
        assert not s.benchmark_follows(done, passing)  # benchmarks off
        s.benchmarks = True
        assert s.benchmark_follows(done, passing)
        assert not s.benchmark_follows(done, failing)
        assert not s.benchmark_follows(events.RunOutcome.CRASHED, passing)
        assert not s.benchmark_follows(done, [])
    finally:
        s.close()
    interpreted = RunSession(catalog.get("strided_softmax"), path, workspace=tmp_path, interpret=True)
    interpreted.benchmarks = True
    try:
        assert not interpreted.benchmark_follows(done, passing)  # no GPU: never timed
    finally:
        interpreted.close()
