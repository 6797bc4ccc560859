"""What the benchmark explains beyond a median, on a CPU: device vs per-call time, host
overhead and the launch-bound mark, the resources of the compiled Triton kernels a call
launched, the provenance refusal of a learner's candidate, the ops derived from the
catalog, and the payload's new fields against the schema.  No GPU: fake timers, a fake
compiled kernel and a fake provenance module."""

import importlib
import json
import sys
import types
from pathlib import Path

import pytest
import torch

from checks.benchmark import (
    evidence,
    kernels,
    row_text,
    rows as rowlib,
    runner,
    specs,
    statistics,
    targets,
)

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "results" / "schema" / "benchmark.schema.json").read_text())
CEILINGS = {"copy_gbps": 4000.0, "bf16_matmul_tflops": 700.0, "errors": []}
ENV = {
    "gpu_name": "Fake GPU",
    "sm_count": 132,
    "l2_bytes": None,
    "driver": None,
    "cuda": None,
    "torch": "x",
    "triton": "3.6.0",
    "python": "3.11",
    "platform": "Linux",
}


def validate(payload):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(SCHEMA).validate(payload)


def row(**kw):
    r = rowlib.new_row("op", dict(name="8x8", role="comparison"), "fp32", "v", "candidate")
    r.update(kw)
    return r


# --- device time, per-call time, host overhead ------------------------------------------


def test_both_timings_give_device_per_call_and_host_time():
    r = statistics.add_timings(row(), graph_ms=[0.002, 0.002, 0.002], events_ms=[0.010, 0.011, 0.009])
    assert r["median_us"] == pytest.approx(2.0) and r["device_us"] == pytest.approx(2.0)
    assert r["per_call_us"] == pytest.approx(10.0) and r["per_call"]["median_us"] == pytest.approx(10.0)
    assert r["host_us"] == pytest.approx(8.0) and r["host_fraction"] == pytest.approx(0.8)
    assert r["launch_bound"] is True
    r = statistics.add_timings(row(), graph_ms=[0.009], events_ms=[0.010])
    assert r["host_us"] == pytest.approx(1.0) and r["launch_bound"] is False


def test_one_timing_has_no_host_overhead_and_noise_never_goes_below_zero():
    g = statistics.add_timings(row(), graph_ms=[0.004])
    assert g["device_us"] == pytest.approx(4.0) and g["per_call_us"] is None
    assert g["host_us"] is None and g["launch_bound"] is None and g["per_call"] is None
    e = statistics.add_timings(row(), events_ms=[0.004])
    assert e["median_us"] == pytest.approx(4.0) and e["per_call_us"] == pytest.approx(4.0)
    assert e["device_us"] is None and e["host_us"] is None
    r = statistics.add_timings(row(), graph_ms=[0.0050], events_ms=[0.0049])  # replay noise
    assert r["host_us"] == 0.0 and r["launch_bound"] is False
    with pytest.raises(ValueError):
        statistics.add_timings(row())


def test_ceiling_time_is_the_roofline_floor():
    r = row(median_us=200.0)
    statistics.add_throughput(r, {"bytes": 400_000_000, "flops": None}, CEILINGS)
    assert r["ceiling_us"] == pytest.approx(100.0) and r["fraction_of_ceiling"] == pytest.approx(0.5)
    r = row(median_us=200.0)
    statistics.add_throughput(r, {"bytes": 400_000_000, "flops": None}, {})
    assert r["ceiling_us"] is None and r["fraction_of_ceiling"] is None


# --- the compiled kernels a call launched --------------------------------------------------


def fake_compiled(regs=40, spills=0, shared=2048, warps=4, stages=3):
    return types.SimpleNamespace(
        n_regs=regs,
        n_spills=spills,
        name="k_mangled",
        metadata=types.SimpleNamespace(shared=shared, num_warps=warps, num_stages=stages),
    )


def test_kernel_facts_from_a_compiled_kernel():
    f = kernels.kernel_facts(fake_compiled(), "_softmax")
    assert f == {
        "name": "_softmax",
        "n_regs": 40,
        "n_spills": 0,
        "shared_bytes": 2048,
        "num_warps": 4,
        "num_stages": 3,
        "launches": 1,
    }
    unloaded = types.SimpleNamespace(metadata=types.SimpleNamespace(shared=0, num_warps=8, num_stages=2))
    f = kernels.kernel_facts(unloaded)  # binary never loaded: no register count
    assert f["n_regs"] is None and f["n_spills"] is None and f["num_warps"] == 8


def test_launches_are_grouped_per_compiled_kernel():
    a, b = fake_compiled(), fake_compiled(regs=96, spills=12, warps=8)
    stats = types.SimpleNamespace(__name__="_stats")
    norm = types.SimpleNamespace(fn=types.SimpleNamespace(__name__="_normalize"))
    out = kernels.summarize_launches([(stats, a), (norm, b), (stats, a)])
    assert [(k["name"], k["launches"], k["n_regs"]) for k in out] == [
        ("_stats", 2, 40),
        ("_normalize", 1, 96),
    ]
    assert kernels.brief(out) == "40r 0sp 4w 3st 2K +1"
    assert "96 regs, 12 spills" in kernels.describe(out)
    assert kernels.brief([]) == "no triton" and kernels.brief(None) == "-"


def test_recording_launches_wraps_jitfunction_run_for_one_call_only(monkeypatch):
    from triton.runtime.jit import JITFunction

    compiled = fake_compiled()

    def fake_run(self, *args, grid, warmup, **kwargs):  # stands in for a real launch
        return None if warmup else compiled

    monkeypatch.setattr(JITFunction, "run", fake_run)
    jit = types.SimpleNamespace(__name__="_double")

    def call():
        JITFunction.run(jit, 1, 2, grid=(1,), warmup=False)
        JITFunction.run(jit, 1, 2, grid=(1,), warmup=True)  # a warmup compiles, launches nothing
        return JITFunction.run(jit, 1, 2, grid=(1,), warmup=False)

    facts = kernels.capture_kernels(call)
    assert facts == [dict(kernels.kernel_facts(compiled, "_double"), launches=2)]
    assert JITFunction.__dict__["run"] is fake_run  # unwrapped afterwards
    assert kernels.capture_kernels(lambda: torch.ones(2) * 2) == []


# --- the runner: both timers, kernel facts, provenance --------------------------------------

LEARNER = """
import torch

def softmax(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
"""


def spec_module():
    spec = types.ModuleType("fake_spec")
    spec.SHAPES = [dict(name="4x8", role="comparison", rows=4, cols=8)]
    spec.DTYPES = ["fp32"]
    spec.make_inputs = lambda s, d, dev, seed: {"x": torch.randn(s["rows"], s["cols"]).to(d)}
    spec.oracle = lambda i, s: torch.softmax(i["x"].double(), -1)
    spec.work = lambda s, d: {"bytes": s["rows"] * s["cols"] * 8, "flops": None}
    spec.variants = lambda mod, i, s: [
        dict(name="mine", role="candidate", config={}, fn=lambda: mod.softmax(i["x"])),
        dict(name="torch.softmax", role="baseline", config={}, fn=lambda: torch.softmax(i["x"], -1)),
    ]
    return spec


@pytest.fixture
def learner(tmp_path):
    p = tmp_path / "strided_softmax.py"
    p.write_text(LEARNER)
    return p


def run(path, **kw):
    from checks.judging.engine import load_exercise

    timers = {"graph": lambda fn: [0.002, 0.002], "events": lambda fn: [0.010, 0.012]}
    return runner.run_op(
        "fake",
        spec_module(),
        load_exercise(path),
        path,
        dtypes=["fp32"],
        timers=timers,
        ceilings=CEILINGS,
        device="cpu",
        **kw,
    )


def test_runner_with_both_timers_and_kernel_facts(learner):
    seen = []
    facts = [kernels.kernel_facts(fake_compiled(), "_softmax")]

    def inspect(fn):
        seen.append(fn)
        fn()
        return facts

    rows = {r["variant"]: r for r in run(learner, inspect_kernels=inspect)}
    mine = rows["mine"]
    assert mine["status"] == "ok" and mine["device_us"] == pytest.approx(2.0)
    assert mine["per_call_us"] == pytest.approx(11.0) and mine["host_us"] == pytest.approx(9.0)
    assert mine["launch_bound"] is True and mine["kernels"] == facts
    assert len(seen) == 2  # one recorded call per variant
    assert "launch-bound" in row_text.host(mine)
    validate(
        evidence.build_payload(
            command=["x"],
            timing="both",
            cache="warm",
            target="learner",
            environment=ENV,
            hashes={"a": "0" * 64},
            ceilings=CEILINGS,
            results=list(rows.values()),
        )
    )


def test_a_timing_that_fails_once_is_retried_and_one_that_always_fails_is_reported(learner):
    # On a GPU, a capture that an earlier variant left invalidated can fail the next
    # variant's first capture; the retry times it, while an uncapturable variant fails twice.
    from checks.judging.engine import load_exercise

    calls = []  # the variants are timed in order: "mine" twice, then the baseline

    def graph(fn):
        calls.append(fn)
        if len(calls) <= 3:
            raise RuntimeError("operation failed due to a previous error during capture")
        return [0.002, 0.002]

    rows = {
        r["variant"]: r
        for r in runner.run_op(
            "fake",
            spec_module(),
            load_exercise(learner),
            learner,
            dtypes=["fp32"],
            timers={"graph": graph},
            ceilings=CEILINGS,
            device="cpu",
        )
    }
    assert len(calls) == 4 and calls[0] is calls[1] and calls[2] is calls[3] and calls[1] is not calls[2]
    assert rows["torch.softmax"]["status"] == "ok"
    mine = rows["mine"]
    assert mine["status"] == "failed"
    assert mine["message"].startswith("timing failed:") and "previous error during capture" in mine["message"]


def fake_provenance(monkeypatch, refuse: bool):
    from checks.judging.case import CheckFailed

    mod = types.ModuleType("checks.judging.provenance")
    calls = []

    class NotOwnKernel(CheckFailed):
        pass

    def witnessed_call(path, fn, *args, **kwargs):
        calls.append(path)
        out = fn(*args)
        if refuse:
            raise NotOwnKernel("softmax computed values with PyTorch: softmax (your file, line 5)")
        return out

    mod.NotOwnKernel, mod.witnessed_call = NotOwnKernel, witnessed_call
    monkeypatch.setitem(sys.modules, "checks.judging.provenance", mod)
    import checks.judging

    # `from checks.judging import provenance` reads the package's attribute first
    monkeypatch.setattr(checks.judging, "provenance", mod, raising=False)
    return calls


def test_a_learner_candidate_that_is_not_its_own_kernel_is_refused_and_not_timed(learner, monkeypatch):
    calls = fake_provenance(monkeypatch, refuse=True)
    timed = []
    rows = {
        r["variant"]: r
        for r in runner.run_op(
            "fake",
            spec_module(),
            importlib.import_module("checks.judging.engine").load_exercise(learner),
            learner,
            dtypes=["fp32"],
            timers={"graph": lambda fn: timed.append(fn) or [0.001]},
            ceilings=CEILINGS,
            device="cpu",
            learner=True,
        )
    }
    mine = rows["mine"]
    assert mine["status"] == "failed" and mine["refused"] == "not-own-kernel"
    assert "computed values with PyTorch" in mine["message"] and mine["median_us"] is None
    assert calls == [str(learner)]  # only the candidate is witnessed
    assert rows["torch.softmax"]["status"] == "ok" and rows["torch.softmax"]["refused"] is None
    assert len(timed) == 1  # the baseline alone was timed
    assert rowlib.exit_code(list(rows.values())) == 1
    validate(
        evidence.build_payload(
            command=["x"],
            timing="graph",
            cache="warm",
            target="learner",
            environment=ENV,
            hashes={"a": "0" * 64},
            ceilings=CEILINGS,
            results=list(rows.values()),
        )
    )


def test_the_solution_and_an_accepted_candidate_are_timed(learner, monkeypatch):
    calls = fake_provenance(monkeypatch, refuse=False)
    rows = run(learner, learner=True)
    assert calls == [str(learner)] and all(r["status"] == "ok" for r in rows)
    calls.clear()
    run(learner, learner=False)  # --solution: no provenance call
    assert calls == []


# --- targets on a "both" run -------------------------------------------------------------


def test_both_run_judges_device_targets_on_graph_and_per_call_targets_on_events():
    defs = {
        "op": {
            "targets": [
                dict(
                    shape="8x8",
                    dtype="fp32",
                    kind="vs_baseline",
                    target=1.0,
                    what="no slower than the baseline",
                )
            ],
            "reference_course": {"8x8": (9.0, 3.0)},
            "reference_course_causal": None,
            "default_dtype": "fp32",
            "events_factor": 1.5,
        }
    }
    cand = row(median_us=2.0, device_us=2.0, per_call_us=12.0)
    base = row(variant="torch", role="baseline", median_us=4.0, device_us=4.0, per_call_us=6.0)
    got = {t["what"]: t for t in targets.evaluate_targets([cand, base], "both", defs)}
    assert got["no slower than the baseline"]["measured"] == pytest.approx(2.0)
    course = next(t for w, t in got.items() if "triton-cuda-lab" in w)
    assert course["met"] and course["timing"] == "graph"
    per_call = next(t for w, t in got.items() if "per-call" in w)
    assert per_call["timing"] == "events" and per_call["measured"] == pytest.approx(2.0)
    assert not per_call["met"]


# --- the ops come from the catalog --------------------------------------------------------


def test_benchmarked_ops_are_the_gpu_workshops_with_a_spec(tmp_path):
    from workshops import catalog

    gpu = [w.id for w in catalog.workshops() if w.gpu]
    assert specs.benchmarked_ops() == [op for op in gpu if (specs.FOLDER / f"{op}.py").is_file()]
    assert "online_normalizer" not in specs.benchmarked_ops()  # a CPU workshop
    (tmp_path / f"{gpu[-1]}.py").write_text("")
    assert specs.benchmarked_ops(tmp_path) == [gpu[-1]]  # only those with a spec


def test_every_spec_defines_its_targets_on_its_own_shapes():
    for op in specs.benchmarked_ops():
        spec = specs.load_spec(op)
        d = targets.definitions(spec)
        names = {s["name"] for s in spec.SHAPES}
        for t in d["targets"]:
            assert t["kind"] in targets.KINDS and t["dtype"] in spec.DTYPES
            assert any(n == t["shape"] or n.startswith(t["shape"] + "-") for n in names), (op, t)
        for shape in d["reference_course"]:
            assert any(n == shape or n.startswith(shape + "-") for n in names), (op, shape)
