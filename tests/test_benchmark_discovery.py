"""The first benchmark's kernel variants, found before it times anything and compiled by the
app's compile pool (checks/benchmark/planned.py, checks/running/discovery.py and
checks/running/handoff.py).

On a CPU Triton's interpreter never calls its ``jit_cache_hook``, so the learner's file
here stands in for ``JITFunction.run``: it calls the hook as Triton does for a variant
that is not in memory, and launches only when the hook does not say skip.  The compile
pool is a stand-in that writes markers (the real one is exercised in
test_compile_pool.py); test_benchmark_discovery_gpu.py runs a real first benchmark."""

from __future__ import annotations

import json
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any, cast

import pytest
import torch

from checks.benchmark import cli as bench_cli, kernels
from checks.benchmark.calls_ahead import planned_calls
from checks.benchmark.planned import planned_shapes
from checks.judging import launches
from checks.running import discovery, handoff, variants
from checks.running.compile_ahead import CompileAhead, benchmark_variants_file, write_variants
from checks.running.compile_pool import CompilePool

REPO = Path(__file__).resolve().parent.parent
TARGET = ["cuda", 90, 32]

LEARNER = '''
import json
import types

import torch
import triton

import discovery_probe as probe


def _kernel(x_ptr, BLOCK):  # stands for a @triton.jit function of this file
    pass


_INFO = types.SimpleNamespace(name="_kernel", jit_function=types.SimpleNamespace(fn=_kernel))


def _launch(block):
    """What JITFunction.run does for a variant not in memory: Triton's jit_cache_hook,
    then (unless it says skip) compile and launch."""
    hook = triton.knobs.runtime.jit_cache_hook
    data = json.dumps({"name": __name__ + "._kernel", "constant_vals": [block], "options": {}})
    info = {"specialization_data": data}
    if hook is not None and hook(key=block, repr="r", fn=_INFO, compile=info, is_manual_warmup=False):
        probe.skipped.append(block)
        return
    probe.launched.append(block)


def softmax(x, *, num_warps=4):
    _launch(64 * num_warps)
    probe.calls.append(num_warps)
    return torch.empty_like(x)


def crash(x):
    _launch(1)
    raise RuntimeError("a value read from a skipped launch's output")
'''


def _data(block: int) -> str:
    return json.dumps({"name": "any_module._kernel", "constant_vals": [block], "options": {}})


def _ident(block: int) -> str:
    return variants.identity("_kernel", _data(block))


def make_spec() -> types.ModuleType:
    spec = types.ModuleType("fake_discovery_spec")
    spec.__file__ = __file__
    spec.SHAPES = [
        dict(name="big", role="roofline", rows=16, cols=8),
        dict(name="small", role="comparison", rows=4, cols=8),
    ]
    spec.DTYPES = ["fp32", "fp16"]
    made: list = []

    def make_inputs(shape, dtype, device, seed):
        made.append((shape["name"], dtype))
        return {"x": torch.zeros(shape["rows"], shape["cols"], dtype=dtype, device=device)}

    def variants_of(mod, inputs, shape):
        x = inputs["x"]
        out = [
            dict(
                name="w4", role="candidate", config={"num_warps": 4}, fn=lambda: mod.softmax(x, num_warps=4)
            ),
            dict(
                name="w8", role="candidate", config={"num_warps": 8}, fn=lambda: mod.softmax(x, num_warps=8)
            ),
            dict(name="crash", role="candidate", config={}, fn=lambda: mod.crash(x)),
            dict(name="torch", role="baseline", config={}, fn=lambda: spec.baseline.append(1)),
        ]
        return kernels.with_cached_handle(out, {"num_warps": 8})

    spec.make_inputs, spec.variants = make_inputs, variants_of
    spec.oracle = lambda inputs, shape: inputs["x"].double()
    spec.work = lambda shape, dtype: {"bytes": 1, "flops": None}
    spec.made, spec.baseline = made, []
    return spec


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A learner's file, a fake spec the benchmark's command line loads, and the probe the
    learner's file reports to; the command believes it has a GPU (its device is the CPU)."""
    spec = make_spec()
    monkeypatch.setattr(bench_cli, "DEVICE", "cpu")
    monkeypatch.setattr(bench_cli, "cuda_problem", lambda: None)
    monkeypatch.setattr(bench_cli, "load_spec", lambda op: spec)
    probe = types.SimpleNamespace(calls=[], skipped=[], launched=[])
    monkeypatch.setitem(sys.modules, "discovery_probe", probe)
    learner = tmp_path / "strided_softmax.py"
    learner.write_text(LEARNER, encoding="utf-8")
    folder = tmp_path / "handoff"
    folder.mkdir()
    record = benchmark_variants_file(tmp_path, "strided_softmax")
    argv = ["--op", "strided_softmax", "--file", str(learner), "--shapes", "comparison", "--dtype", "all"]
    return types.SimpleNamespace(
        spec=spec, probe=probe, learner=learner, folder=folder, record=record, argv=argv, tmp=tmp_path
    )


# --- the benchmark's planned calls ---------------------------------------------------------------


def test_the_planned_calls_are_the_candidates_the_run_will_time(bench: Any) -> None:
    quick = bench.argv + ["--variants", "defaults"]
    labels = [label for label, _ in planned_calls(quick)]
    # the wrapper with its defaults (w8, marked by with_cached_handle), once per dtype; no
    # baseline, no cached-handle twin, no roofline shape
    assert labels == ["strided_softmax small fp32 w8", "strided_softmax small fp16 w8"]
    assert bench.spec.made == [("small", torch.float32), ("small", torch.float16)]
    every = [label.split()[-1] for label, _ in planned_calls(bench.argv + ["--shapes", "all"])]
    assert every == ["w4", "w8", "crash"] * 4  # the comparison shape first, as the runner does
    assert [s["name"] for s in planned_shapes(bench.spec, "all")] == ["small", "big"]
    for _, call in planned_calls(quick):
        call()
    assert bench.probe.calls == [8, 8] and bench.spec.baseline == []


def test_nothing_is_planned_without_a_gpu_or_for_a_listing(
    bench: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert list(planned_calls(["--list"])) == []
    monkeypatch.setattr(bench_cli, "cuda_problem", lambda: "no CUDA GPU here")
    assert list(planned_calls(bench.argv)) == []
    with pytest.raises(SystemExit):  # the benchmark itself reports a usage error
        list(planned_calls(["--op", "strided_softmax", "--no-such-option"]))


# --- the pass: every compile skipped, every variant heard ---------------------------------------


def test_discovery_hears_every_variant_and_nothing_compiles_or_launches(bench: Any) -> None:
    found, stats = discovery.discover(bench.argv, bench.learner)
    assert [json.loads(v["data"])["constant_vals"] for v in found] == [[256], [512], [1]]
    assert {v["qualname"] for v in found} == {"_kernel"}
    assert bench.probe.launched == [] and len(bench.probe.skipped) == 6  # 3 calls x 2 dtypes
    assert stats["calls"] == 6 and stats["raised"] == 2 and stats["discovered"] == 3
    assert stats["skipped"] == 6 and stats["autotuned"] == 0 and not stats["stopped"]
    assert triton_hook() is None  # the hook is Triton's own again
    bench.probe.skipped.clear()
    made = len(bench.spec.made)
    found, stats = discovery.discover(bench.argv, bench.learner, limit_s=0.0)
    assert found == [] and stats["stopped"] and stats["calls"] == 0  # bounded: it stops calling
    assert len(bench.spec.made) == made  # and makes no more inputs


def triton_hook() -> Any:
    import triton

    return triton.knobs.runtime.jit_cache_hook


def test_an_autotuner_is_never_run_in_the_pass_and_other_threads_compile() -> None:
    heard = discovery.Discovering(__file__)
    proceeded: list = []

    def launch(kind: str) -> Any:
        return launches.Launch(object(), kind, (), {}, (1,), 0)

    assert heard.around_launch(launch(launches.AUTOTUNER), lambda: proceeded.append(1)) is None
    assert proceeded == [] and heard.autotuned == 1
    heard.around_launch(launch(launches.JIT), lambda: proceeded.append(1))
    assert proceeded == [1]
    said: list = []
    other = threading.Thread(target=lambda: said.append(heard.compiling(fn=None, compile={})))
    other.start()
    other.join()
    assert said == [None]  # another thread's compile is not skipped
    assert heard.compiling(fn=None, compile={}) is True


# --- the offer: written whole, only when something is new ---------------------------------------


def test_the_offer_holds_the_variants_when_one_is_new(bench: Any) -> None:
    offer = discovery.offer(bench.argv, str(bench.folder), bench.learner, str(bench.record), TARGET)
    assert offer is not None and offer.ids == [_ident(256), _ident(512), _ident(1)]
    written = handoff.read_offer(bench.folder)
    assert written is not None and written["file"] == str(bench.learner) and len(written["variants"]) == 3
    assert written["digest"] == __import__("hashlib").sha256(bench.learner.read_bytes()).hexdigest()
    assert offer.stats["new"] == 3


def test_no_offer_when_the_last_benchmark_listed_them_all(bench: Any) -> None:
    known = [{"qualname": "_kernel", "data": _data(b)} for b in (1, 256, 512, 1024)]
    write_variants(bench.record, "strided_softmax", TARGET, known)
    offer = discovery.offer(bench.argv, str(bench.folder), bench.learner, str(bench.record), TARGET)
    assert offer is not None and offer.ids == [] and offer.stats["new"] == 0
    assert handoff.read_offer(bench.folder) == {
        "file": str(bench.learner),
        "digest": offer_digest(bench),
        "variants": [],
    }
    # the same list kept for another GPU predicts nothing here
    again = discovery.offer(bench.argv, str(bench.folder), bench.learner, str(bench.record), ["cuda", 80, 32])
    assert again is not None and len(again.ids) == 3


def offer_digest(bench: Any) -> str:
    import hashlib

    return hashlib.sha256(bench.learner.read_bytes()).hexdigest()


def test_a_discovery_that_fails_is_no_discovery(bench: Any, capsys: pytest.CaptureFixture) -> None:
    assert discovery.offer(bench.argv, None, bench.learner, None, TARGET) is None  # not offered
    assert discovery.offer(bench.argv, str(bench.tmp / "gone"), bench.learner, None, TARGET) is None
    bad = ["--op", "strided_softmax", "--no-such-option"]
    assert discovery.offer(bad, str(bench.folder), bench.learner, None, TARGET) is None
    assert handoff.read_offer(bench.folder) == {"file": str(bench.learner), "digest": "", "variants": []}
    assert "not discovered (SystemExit" in capsys.readouterr().err


# --- the handshake: answered, waited for, bounded, cancelled ------------------------------------


class MarkingPool:
    """The compile pool's part in the handshake: it 'compiles' each variant after
    ``delay`` seconds by dropping its marker, unless cancelled first."""

    size = 2

    def __init__(self, delay: float = 0.05, never: tuple = ()) -> None:
        self.delay = delay
        self.never = set(never)  # identities it is still compiling when the benchmark ends
        self.submitted: list = []
        self.job: Any = None

    def submit(self, path: Path, digest: str, target: Any, wanted: list, folder: str) -> Any:
        ids = list(dict.fromkeys(variants.identity(v["qualname"], v["data"]) for v in wanted))
        job = types.SimpleNamespace(ids=ids, finished_at=None, cancelled=False, folder=folder)
        self.submitted.append((str(path), digest, list(target), wanted, folder))
        self.job = job

        def compile_all() -> None:
            for i in ids:
                time.sleep(self.delay)
                while i in self.never and not job.cancelled:
                    time.sleep(0.01)
                if job.cancelled:
                    return
                variants.write_marker(folder, i, True)
            job.finished_at = time.monotonic()

        threading.Thread(target=compile_all, daemon=True).start()
        return job

    def cancel(self, job: Any = None) -> None:
        if self.job is not None and (job is None or job is self.job) and self.job.finished_at is None:
            self.job.cancelled = True
            (Path(self.job.folder) / variants.ABANDONED).touch()

    def warm(self, target: Any) -> None:
        pass

    def close(self) -> None:
        pass


def _ahead(bench: Any, pool: Any) -> CompileAhead:
    a = CompileAhead(
        "strided_softmax", bench.learner, bench.tmp, compilers=2, timeout=30.0, compile_pool=cast(Any, pool)
    )
    a.target = list(TARGET)
    return a


def _benchmark_compiles(recorder: variants.Recorder, path: Path, blocks: list) -> None:
    """The benchmark asking Triton for these variants, as the learner's file does."""
    fn = types.SimpleNamespace(
        name="_kernel",
        jit_function=types.SimpleNamespace(
            fn=types.SimpleNamespace(__code__=types.SimpleNamespace(co_filename=str(path)))
        ),
    )
    for b in blocks:
        assert recorder.compiling(fn=fn, compile={"specialization_data": _data(b)}) is None


def test_the_pool_compiles_what_the_benchmark_then_waits_for(bench: Any) -> None:
    pool = MarkingPool(never=(_ident(1),))
    ahead = _ahead(bench, pool)
    door = handoff.Door(ahead.compile_for_benchmark, ahead.benchmark_ended)
    app = handoff.Handoff(door, str(bench.folder))
    offer = discovery.offer(bench.argv, app.folder, bench.learner, None, TARGET)
    assert offer is not None
    app.poll()  # the app: the offer goes to the pool, the answer to the worker
    assert app.answered and app.ids == offer.ids
    [(path, digest, target, wanted, folder)] = pool.submitted
    assert path == str(bench.learner) and digest == offer_digest(bench) and target == TARGET
    assert folder == app.folder and len(wanted) == 3
    recorder = offer.recorder(bench.learner)
    _benchmark_compiles(recorder, bench.learner, [256, 512, 2048])  # 2048: never offered
    assert recorder.waits == 2 and recorder.hits == 2
    summary = json.loads(offer.line().split(": ", 1)[1])
    assert summary["offered"] == 3 and summary["pool_hits"] == 2 and summary["answered"] == 3
    app.close()
    assert not Path(app.folder).exists()
    assert pool.job.cancelled  # what the benchmark never needed is not compiled on


def test_without_an_answer_the_benchmark_compiles_for_itself(
    bench: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handoff, "ANSWER_WAIT_S", 0.2)
    offer = discovery.offer(bench.argv, str(bench.folder), bench.learner, None, TARGET)
    assert offer is not None and offer.ids
    recorder = offer.recorder(bench.learner)
    t0 = time.monotonic()
    _benchmark_compiles(recorder, bench.learner, [256, 512])
    took = time.monotonic() - t0
    assert recorder.waits == 0 and recorder.answer == [] and took < 1.0  # only the answer's bound
    # a declined offer (no pool) is read at once
    folder2 = bench.tmp / "declined"
    folder2.mkdir()
    offer2 = discovery.offer(bench.argv, str(folder2), bench.learner, None, TARGET)
    assert offer2 is not None
    app = handoff.Handoff(handoff.Door(lambda *a: [], lambda: None), str(folder2))
    app.poll()
    recorder2 = offer2.recorder(bench.learner)
    t0 = time.monotonic()
    _benchmark_compiles(recorder2, bench.learner, [256])
    assert recorder2.answer == [] and recorder2.waits == 0 and time.monotonic() - t0 < 0.15


def test_a_newer_save_makes_the_benchmark_compile_for_itself(bench: Any) -> None:
    """The real pool's cancel (no workers: nothing is ever compiled) drops the abandoned
    marker; the waiting benchmark goes on at once."""
    pool = CompilePool(0)
    ahead = _ahead(bench, pool)  # its job waits in the queue: nothing compiles it
    app = handoff.Handoff(handoff.Door(ahead.compile_for_benchmark, ahead.benchmark_ended), str(bench.folder))
    offer = discovery.offer(bench.argv, app.folder, bench.learner, None, TARGET)
    assert offer is not None
    app.poll()
    assert app.ids == offer.ids
    recorder = offer.recorder(bench.learner)
    threading.Timer(0.2, ahead.cancel).start()  # the newer save
    t0 = time.monotonic()
    _benchmark_compiles(recorder, bench.learner, [256, 512])
    assert 0.15 < time.monotonic() - t0 < 5.0
    assert recorder.hits == 0 and (Path(app.folder) / variants.ABANDONED).exists()
    app.close()
    pool.close()


def test_a_pool_that_never_answers_is_waited_for_once(bench: Any) -> None:
    offer = discovery.offer(bench.argv, str(bench.folder), bench.learner, None, TARGET)
    assert offer is not None
    handoff.write_answer(bench.folder, offer.ids)  # accepted, but no marker ever comes
    heard = discovery.AnsweredRecorder(bench.learner, bench.folder, offer.ids, offer.deadline, wait_limit=0.2)
    t0 = time.monotonic()
    _benchmark_compiles(heard, bench.learner, [256, 512, 1])
    assert heard.waits == 1 and heard.gave_up and time.monotonic() - t0 < 1.0


# --- the app's side: the session lends its pool, a newer save takes it back -----------------------


def test_the_session_lends_the_pool_to_its_benchmark_until_a_newer_save(bench: Any) -> None:
    from checks.running import RunSession
    from workshops import catalog

    pool = MarkingPool()
    s = RunSession(
        catalog.get("strided_softmax"),
        bench.learner,
        workspace=bench.tmp,
        interpret=False,
        compile_pool=cast(Any, pool),
    )
    taken: list = []
    s.bench_pool = cast(
        Any,
        types.SimpleNamespace(
            take=lambda preload: taken.append(preload) or [types.SimpleNamespace(door=None)],
            close=lambda: None,
            prime=lambda p: None,
        ),
    )
    try:
        s.benchmarks = True
        assert s.benchmark_worker().door is None  # no compile target known yet
        s.ahead.target = list(TARGET)
        door = s.benchmark_worker().door
        assert isinstance(door, handoff.Door)
        found = [{"qualname": "_kernel", "data": _data(64)}]
        assert door.submit(str(bench.learner), "d", found, str(bench.folder)) == [_ident(64)]
        door.finish()
        stale = s.benchmark_worker().door
        s.begin("newer")  # a newer save: its runs get the pool, not the old benchmark
        assert stale.submit(str(bench.learner), "d", found, str(bench.folder)) == []
        assert len(pool.submitted) == 1
    finally:
        s.close()
    none = RunSession(
        catalog.get("strided_softmax"), bench.learner, workspace=bench.tmp, interpret=False, compilers=0
    )
    none.ahead.target = list(TARGET)
    assert not none.ahead.offers_benchmark()  # KERNEL_COURSE_COMPILERS=0: nothing to lend
    none.close()


def test_a_warm_worker_without_a_gpu_is_offered_the_folder_and_finds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through a real warm worker: the job's folder is there while it runs, its offer is
    answered (nothing: no GPU here), and the folder is gone afterwards."""
    from checks.running import RECORD_VARIANTS
    from checks.running.child import Worker, run_benchmark

    mine = tmp_path / "strided_softmax.py"
    mine.write_text((REPO / "workshops/strided_softmax/solution.py").read_text(), encoding="utf-8")
    to = benchmark_variants_file(tmp_path, "strided_softmax")
    submitted: list = []
    finished: list = []
    opened: list = []
    real_open = handoff.Handoff.open
    monkeypatch.setattr(handoff.Handoff, "open", lambda door: opened.append(real_open(door)) or opened[-1])
    w = Worker(preload="none")
    w.door = handoff.Door(lambda *a: submitted.append(a) or [], lambda: finished.append(1))
    assert w.wait_ready(120)
    argv = [
        "--op",
        "strided_softmax",
        "--file",
        str(mine),
        f"{RECORD_VARIANTS}={to}",
        "--output",
        str(tmp_path / "o.json"),
    ]
    code, tail = run_benchmark(w, argv, timeout=180)
    assert code == 3, tail  # unavailable here: no CUDA GPU
    assert submitted == [] and finished == [1]
    said = [l for l in tail.splitlines() if l.startswith("benchmark variants: ")]
    assert said and json.loads(said[-1].split(": ", 1)[1])["discovered"] == 0, tail
    assert len(opened) == 1 and opened[0].answered and not Path(opened[0].folder).exists()
    assert not to.exists()


def test_the_workers_word_is_read_back_and_never_taken_for_the_benchmarks_last(tmp_path: Path) -> None:
    from tui import benchmark_child

    said = {"discovered": 4, "offered": 4, "pool_hits": 4}
    tail = "Traceback ...\nRuntimeError: the kernel broke\n" + handoff.SAID + json.dumps(said) + "\n"
    assert handoff.said_in(tail) == said
    assert handoff.said_in("nothing said") is None and handoff.said_in(handoff.SAID + "{not json") is None
    run = benchmark_child.BenchmarkRun("strided_softmax", tmp_path)
    rows, error, _ = run._result(str(tmp_path / "none.json"), 1, tail)
    assert rows == [] and error.endswith("-- RuntimeError: the kernel broke"), error
