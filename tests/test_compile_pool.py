"""The compile pool and the variant recorder, on the CPU.

Triton compiles for a CUDA target without a GPU (the target is given), so the whole
compile-ahead path but the GPU run itself is exercised here: real compile workers,
real kernels, Triton's real cache."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from checks.running import compile_pool, variants
from checks.running.compile_pool import CompilePool, SettingError, compile_workers, env_count
from checks.running.pool import pool_size

REPO = Path(__file__).resolve().parent.parent
TARGET = ("cuda", 90, 32)

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


print("an exercise that prints while it is imported")
"""


def _variant(block: int, qualname: str = "double_kernel") -> dict:
    from checks.running import warmup

    data = json.loads(warmup.warm_variant(TARGET))
    data["name"] = f"some_module.{qualname}"
    data["constant_vals"] = [block]
    return {"qualname": qualname, "data": json.dumps(data)}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _wait(job, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while job.finished_at is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert job.finished_at is not None, job.summary()


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    cache = tmp_path_factory.mktemp("triton-cache")
    p = CompilePool(2, env=dict(os.environ, TRITON_CACHE_DIR=str(cache)))
    p.cache = cache
    p.warm(TARGET)
    yield p
    p.close()


def test_settings_name_the_variable(monkeypatch):
    for name, bad in (
        ("KERNEL_COURSE_POOL", "eight"),
        ("KERNEL_COURSE_POOL", "0"),
        ("KERNEL_COURSE_POOL", "-2"),
    ):
        monkeypatch.setenv(name, bad)
        with pytest.raises(SettingError, match=name):
            pool_size(gpu=True, cores=16, gpu_gib=140)
    monkeypatch.setenv("KERNEL_COURSE_POOL", " 3 ")
    assert pool_size(cores=16) == 3
    monkeypatch.setenv(compile_pool.COMPILERS_ENV, "many")
    with pytest.raises(SettingError, match=compile_pool.COMPILERS_ENV):
        compile_workers()
    monkeypatch.setenv(compile_pool.COMPILERS_ENV, "0")  # 0 turns compiling ahead off
    assert compile_workers(cores=16) == 0
    monkeypatch.delenv(compile_pool.COMPILERS_ENV)
    assert env_count(compile_pool.COMPILERS_ENV) is None


def test_size_follows_the_machine(monkeypatch):
    monkeypatch.delenv(compile_pool.COMPILERS_ENV, raising=False)
    assert compile_workers(cores=16, memory_gib=128) == 14  # every core but two
    assert compile_workers(cores=64, memory_gib=512) == compile_pool.MAX_COMPILERS
    assert compile_workers(cores=2, memory_gib=24) == 0  # this kind of machine: no pool
    assert compile_workers(cores=16, memory_gib=6) == 4  # memory bounds it too


def test_variants_compile_once_into_tritons_cache(pool, tmp_path):
    exercise = tmp_path / "exercise.py"
    exercise.write_text(KERNEL, encoding="utf-8")
    folder = tmp_path / "markers"
    folder.mkdir()
    wanted = [_variant(64), _variant(128), _variant(64)]  # the repeat is compiled once
    job = pool.submit(exercise, _digest(exercise), TARGET, wanted, folder)
    assert len(job.ids) == 2
    _wait(job)
    summary = job.summary()
    assert summary["compiled"] == 2 and summary["failed"] == 0, summary
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{i}.done" for i in job.ids)
    # The check worker's Triton finds them: the same variant, compiled here, is a cache hit.
    code = (
        "import json, sys, triton.knobs as knobs\n"
        "from checks.judging import engine\n"
        "from checks.running import variants\n"
        "hits = []\n"
        "knobs.compilation.listener = lambda **kw: hits.append(kw['cache_hit'])\n"
        f"mod = engine.load_exercise({str(exercise)!r})\n"
        f"v = json.loads(sys.argv[1])\n"
        "variants.compile_variant(variants.jit_function(mod, v['qualname']), v['data'], ('cuda', 90, 32))\n"
        "print(hits)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, json.dumps(_variant(128))],
        cwd=REPO,
        env={
            **{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"},
            "TRITON_CACHE_DIR": str(pool.cache),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[True]"


def test_what_cannot_compile_is_marked_failed(pool, tmp_path):
    exercise = tmp_path / "exercise.py"
    exercise.write_text(KERNEL, encoding="utf-8")
    folder = tmp_path / "markers"
    folder.mkdir()
    job = pool.submit(exercise, _digest(exercise), TARGET, [_variant(64, "no_such_kernel")], folder)
    _wait(job)
    assert job.summary()["failed"] == 1 and "no_such_kernel" in job.summary()["errors"][0]
    assert (folder / f"{job.ids[0]}.failed").exists()
    # a save after the digest was taken: the pool compiles nothing of the other content
    folder2 = tmp_path / "markers2"
    folder2.mkdir()
    job = pool.submit(exercise, "0" * 64, TARGET, [_variant(64)], folder2)
    _wait(job)
    assert job.summary()["failed"] == 1 and "changed" in job.summary()["errors"][0]
    # a file that does not import: failed, with the import error
    broken = tmp_path / "broken.py"
    broken.write_text("def oops(:\n", encoding="utf-8")
    folder3 = tmp_path / "markers3"
    folder3.mkdir()
    job = pool.submit(broken, _digest(broken), TARGET, [_variant(64)], folder3)
    _wait(job)
    assert "SyntaxError" in job.summary()["errors"][0]


def test_a_newer_save_cancels_the_rest(pool, tmp_path):
    exercise = tmp_path / "exercise.py"
    exercise.write_text(KERNEL, encoding="utf-8")
    folder = tmp_path / "markers"
    folder.mkdir()
    many = [_variant(b) for b in (16, 32, 256, 512, 1024, 2048)]
    job = pool.submit(exercise, _digest(exercise), TARGET, many, folder)
    pool.cancel()
    assert job.cancelled and (folder / variants.ABANDONED).exists()
    time.sleep(3)
    assert job.compiled + job.failed < len(many)  # at most what was already in hand


def _hook_call(recorder, path: Path, qualname: str, data: str):
    fn = types.SimpleNamespace(
        name=qualname,
        jit_function=types.SimpleNamespace(
            fn=types.SimpleNamespace(__code__=types.SimpleNamespace(co_filename=str(path)))
        ),
    )
    return recorder.compiling(
        key="k", repr="r", fn=fn, compile={"specialization_data": data}, is_manual_warmup=False
    )


def test_recorder_keeps_the_learners_variants_and_waits_for_predicted_ones(tmp_path):
    mine, other = tmp_path / "mine.py", tmp_path / "other.py"
    mine.write_text("", encoding="utf-8")
    other.write_text("", encoding="utf-8")
    folder = tmp_path / "markers"
    folder.mkdir()
    v = _variant(64)
    ident = variants.identity(v["qualname"], v["data"])
    rec = variants.Recorder(mine, [ident], folder, wait_limit=10.0)
    variants.write_marker(folder, ident, True)
    assert _hook_call(rec, mine, v["qualname"], v["data"]) is None  # never skips a compile
    assert _hook_call(rec, other, "borrowed_kernel", v["data"]) is None
    took = rec.take()
    assert [x["qualname"] for x in took["variants"]] == ["double_kernel"]  # not the borrowed one
    assert rec.hits == 1 and rec.take()["variants"] == []
    # A predicted variant whose marker never comes: the wait ends when the pool gives up.
    w = _variant(128)
    rec2 = variants.Recorder(mine, [variants.identity(w["qualname"], w["data"])], folder, wait_limit=10.0)
    (folder / variants.ABANDONED).touch()
    t0 = time.monotonic()
    _hook_call(rec2, mine, w["qualname"], w["data"])
    assert time.monotonic() - t0 < 5 and rec2.hits == 0


def test_identity_ignores_the_module_name():
    a = json.loads(_variant(64)["data"])
    b = dict(a, name="_exercise_softmax_7.double_kernel")
    assert variants.identity("double_kernel", json.dumps(a)) == variants.identity(
        "double_kernel", json.dumps(b)
    )
    c = dict(a, constant_vals=[128])
    assert variants.identity("double_kernel", json.dumps(a)) != variants.identity(
        "double_kernel", json.dumps(c)
    )


def test_warm_up_goes_through_the_witness():
    """The interpreter's warm-up launches inside the witness, so the first check's
    witnessed launch finds torch's dispatch-mode support already imported."""
    code = (
        "import os; os.environ['TRITON_INTERPRET'] = '1'\n"
        "import sys\n"
        "from checks.judging import provenance\n"
        "from checks.running import warmup\n"
        "calls = []\n"
        "real = provenance.witnessed_call\n"
        "provenance.witnessed_call = lambda *a, **k: calls.append(a[1].__name__) or real(*a, **k)\n"
        "warmup.warm('cpu', interpret=True)\n"
        "print(calls)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "['_launch']"


def test_a_sharded_runs_variants_come_in_check_order_once():
    from checks.running.pool import ShardedRun

    a = {"qualname": "k", "data": "a"}
    b = {"qualname": "k", "data": "b"}
    c = {"qualname": "k2", "data": "c"}
    shard1 = types.SimpleNamespace(variants=[dict(b, check="second"), dict(a, check="third")])
    shard2 = types.SimpleNamespace(variants=[dict(a, check="first"), dict(c, check="fourth")])
    run = ShardedRun([shard1, shard2], ["first", "second", "third", "fourth"])
    assert [(v["data"], v["check"]) for v in run.variants] == [
        ("a", "first"),
        ("b", "second"),
        ("c", "fourth"),
    ]


@pytest.mark.usefixtures("no_gpu")
def test_a_warm_worker_runs_the_benchmark_in_process(tmp_path):
    """The app's timings run in a warm worker: its exit code and output come back, and
    the worker is gone afterwards (its GPU hidden: no CUDA GPU, exit code 3)."""
    from checks.running.child import Worker, run_benchmark
    from tui import benchmark_child

    w = Worker(preload="none")
    assert w.wait_ready(120)
    code, tail = run_benchmark(w, ["--list"], timeout=120)
    assert code == 0 and "strided_softmax" in tail
    assert not w.alive()
    exercise = tmp_path / "strided_softmax.py"
    exercise.write_text((REPO / "workshops/strided_softmax/solution.py").read_text(), encoding="utf-8")
    w2 = Worker(preload="none")
    rows, error, _ = benchmark_child.BenchmarkRun("strided_softmax", tmp_path, file=exercise, worker=w2).run()
    assert rows == [] and "unavailable here" in error


def test_the_controller_says_which_workers_it_uses(tmp_path, monkeypatch):
    monkeypatch.delenv("KERNEL_COURSE_POOL", raising=False)  # the defaults, whatever the environment sets
    from checks.running import RunSession as CheckController
    from workshops import catalog

    w = catalog.get("strided_softmax")
    path = tmp_path / "strided_softmax.py"
    path.write_text("", encoding="utf-8")
    shared = types.SimpleNamespace(size=5, cancel=lambda: None, close=lambda: None)
    c = CheckController(w, path, workspace=tmp_path, interpret=False, compile_pool=shared)
    assert c.settings() == {"check_workers": 1, "compile_workers": 5}  # one GPU process
    assert c.workers_note() == "5 compile workers"
    c.close()
    sharded = CheckController(w, path, workspace=tmp_path, interpret=False, compilers=0, pool_size=3)
    assert sharded.workers_note() == "3 check workers"
    sharded.close()
    cpu = CheckController(catalog.get("online_normalizer"), path, workspace=tmp_path, interpret=False)
    assert cpu.settings() == {"check_workers": 1, "compile_workers": 0} and cpu.workers_note() == ""
    cpu.close()
