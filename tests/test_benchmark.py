"""The benchmark harness (`python -m checks.benchmark`) and results/summarize.py, on a CPU.

Timings need a CUDA GPU, so everything below drives the harness with a fake spec, a
fake learner file and a fake timer; the real specs are only checked for their interface
and, where the workshop exists, run once through Triton's interpreter.
"""

import importlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from checks.benchmark import (
    cli as bench_cli,
    evidence,
    rows as rowlib,
    runner,
    specs,
    statistics,
    tables,
    targets,
)
from checks.command_line import EXIT_USAGE

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "results" / "schema" / "benchmark.schema.json").read_text())


def validate(payload):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(payload)


# --- a fake learner file, a fake spec and a fake timer -----------------------------------

LEARNER = """
import torch

def softmax(x, *, num_warps=4):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)

def unfinished(x):
    raise NotImplementedError("write the kernel")

def wrong(x):
    return torch.softmax(x.float(), dim=0).to(x.dtype)     # the wrong axis

def crash(x):
    return x[10**6]

def nan(x):
    return torch.full_like(x, float("nan"))
"""

FAKE_TIMES_MS = {  # variant name -> samples in ms
    "triton num_warps=4": [0.010, 0.011, 0.009, 0.010, 0.012],
    "torch.softmax": [0.020, 0.021, 0.019, 0.020, 0.022],
    "peer": [0.040, 0.040, 0.040],
}


def library_not_implemented(x):
    raise NotImplementedError("a library's missing feature, not the learner's TODO")


def make_spec(todo_variants=False):
    spec = types.ModuleType("fake_spec")
    spec.__file__ = __file__
    spec.SHAPES = [
        dict(name="4x8", role="comparison", rows=4, cols=8),
        dict(name="16x32", role="roofline", rows=16, cols=32),
    ]
    spec.DTYPES = ["fp32", "fp16"]
    spec.registry = {}

    def make_inputs(shape, dtype, device, seed):
        g = torch.Generator().manual_seed(seed)
        return {"x": torch.randn(shape["rows"], shape["cols"], generator=g).to(device, dtype)}

    def oracle(inputs, shape):
        return torch.softmax(inputs["x"].double(), dim=-1)

    def work(shape, dtype):
        return {
            "bytes": shape["rows"] * shape["cols"] * 2 * torch.empty((), dtype=dtype).element_size(),
            "flops": None,
        }

    def variants(mod, inputs, shape):
        x = inputs["x"]
        if todo_variants:
            mod.unfinished(x)
        vs = [
            dict(
                name="triton num_warps=4",
                role="candidate",
                config={"num_warps": 4},
                fn=lambda: mod.softmax(x, num_warps=4),
            ),
            dict(name="todo", role="candidate", config={}, fn=lambda: mod.unfinished(x)),
            dict(name="wrong axis", role="candidate", config={}, fn=lambda: mod.wrong(x)),
            dict(name="crash", role="candidate", config={}, fn=lambda: mod.crash(x)),
            dict(name="nan", role="candidate", config={}, fn=lambda: mod.nan(x)),
            dict(name="library", role="candidate", config={}, fn=lambda: library_not_implemented(x)),
            dict(name="torch.softmax", role="baseline", config={}, fn=lambda: torch.softmax(x, -1)),
            dict(name="peer", role="peer", config={}, fn=lambda: torch.softmax(x.float(), -1).to(x.dtype)),
        ]
        for v in vs:
            spec.registry[v["fn"]] = v["name"]
        return vs

    spec.make_inputs, spec.oracle, spec.work, spec.variants = make_inputs, oracle, work, variants
    return spec


def fake_timer(spec):
    def timer(fn):
        for _ in range(3):  # the timed callable rotates between input sets
            fn()
        return list(FAKE_TIMES_MS[spec.registry[fn.fns[0]]])

    return timer


CEILINGS = {"copy_gbps": 4000.0, "bf16_matmul_tflops": 700.0, "errors": []}
ENV = {
    "gpu_name": "Fake GPU",
    "sm_count": 132,
    "l2_bytes": 62914560,
    "driver": "580.00",
    "cuda": "13.0",
    "torch": torch.__version__,
    "triton": "3.6.0",
    "python": "3.11",
    "platform": "Linux",
}


@pytest.fixture
def learner(tmp_path):
    p = tmp_path / "strided_softmax.py"
    p.write_text(LEARNER)
    return p


def run_fake(learner, spec=None, **kw):
    from checks.judging.engine import load_exercise

    spec = spec or make_spec()
    kw.setdefault("dtypes", ["fp32"])
    return runner.run_op(
        "strided_softmax",
        spec,
        load_exercise(learner),
        learner,
        timers={"graph": fake_timer(spec)},
        ceilings=CEILINGS,
        device="cpu",
        **kw,
    ), spec


def by_name(rows, shape="4x8", dtype="fp32"):
    return {r["variant"]: r for r in rows if r["shape"] == shape and r["dtype"] == dtype}


# --- statistics and throughput -----------------------------------------------------------


def test_sample_stats_are_in_microseconds_with_linear_quantiles():
    s = statistics.sample_stats([0.001, 0.002, 0.003, 0.004, 0.005])
    assert s["samples_us"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert s["median_us"] == pytest.approx(3.0)
    assert s["p20_us"] == pytest.approx(1.8) and s["p80_us"] == pytest.approx(4.2)
    assert (s["min_us"], s["max_us"], s["mean_us"]) == (1.0, 5.0, 3.0)
    with pytest.raises(ValueError):
        statistics.sample_stats([])


def test_throughput_and_roofline_fraction():
    row = rowlib.new_row("x", dict(name="a", role="roofline"), "fp32", "v", "candidate")
    row["median_us"] = 100.0
    statistics.add_throughput(row, {"bytes": 400_000_000, "flops": None}, CEILINGS)
    assert row["gbps"] == pytest.approx(4000.0)  # 400 MB in 100 us
    assert row["fraction_of_ceiling"] == pytest.approx(1.0)
    assert row["tflops"] is None and row["bound"] == "memory"
    # a matmul: the flop term sets the floor
    row2 = rowlib.new_row("x", dict(name="a", role="roofline"), "bf16", "v", "candidate")
    row2["median_us"] = 200.0
    statistics.add_throughput(row2, {"bytes": 4_000_000, "flops": 70_000_000_000}, CEILINGS)
    assert row2["tflops"] == pytest.approx(350.0)
    assert row2["fraction_of_ceiling"] == pytest.approx(0.5) and row2["bound"] == "compute"


# --- the TODO / failed recording logic ------------------------------------------------------


def test_todo_failed_and_ok_variants_are_recorded_and_the_run_continues(learner):
    rows, _ = run_fake(learner)
    assert {r["shape"] for r in rows} == {"4x8", "16x32"}  # both shapes ran
    v = by_name(rows)
    ok = v["triton num_warps=4"]
    assert ok["status"] == "ok" and ok["rel_error"] < 1e-6
    assert ok["samples_us"] == [10.0, 11.0, 9.0, 10.0, 12.0] and ok["median_us"] == pytest.approx(10.0)
    assert ok["speedup"] == pytest.approx(2.0)  # torch.softmax 20 us / 10 us
    assert ok["gbps"] == pytest.approx(4 * 8 * 4 * 2 / 10.0 / 1e3)
    assert v["torch.softmax"]["speedup"] == pytest.approx(1.0)
    assert v["peer"]["speedup"] == pytest.approx(0.5)

    todo = v["todo"]
    assert todo["status"] == "todo" and todo["message"].startswith("TODO")
    assert "write the kernel" in todo["message"] and todo["samples_us"] == []

    wrong = v["wrong axis"]
    assert wrong["status"] == "failed" and "relative error" in wrong["message"]
    assert wrong["rel_error"] > 1e-3 and wrong["median_us"] is None  # never timed

    crash = v["crash"]
    assert crash["status"] == "failed" and "IndexError" in crash["message"]
    assert "strided_softmax.py, line" in crash["message"]  # where, in the learner's file

    assert v["nan"]["status"] == "failed" and "non-finite" in v["nan"]["message"]
    lib = v["library"]
    assert lib["status"] == "failed" and "not your TODO" in lib["message"]
    assert rowlib.exit_code(rows) == 1


def test_only_todo_gives_exit_2_and_all_ok_exit_0(learner):
    rows, spec = run_fake(learner)
    todo_only = [r for r in rows if r["status"] != "failed"]
    assert rowlib.exit_code(todo_only) == 2
    assert rowlib.exit_code([r for r in rows if r["status"] == "ok"]) == 0
    assert rowlib.exit_code([]) == 3


def test_variants_that_need_the_unfinished_function_are_todo(learner):
    rows, _ = run_fake(learner, spec=make_spec(todo_variants=True))
    assert [r["status"] for r in rows] == ["todo", "todo"]
    assert all(r["variant"] == "(variants)" and "TODO" in r["message"] for r in rows)
    assert rowlib.exit_code(rows) == 2


def test_shape_and_dtype_selection(learner):
    rows, _ = run_fake(learner, shapes="roofline", dtypes=["fp32", "fp16"])
    assert {(r["shape"], r["dtype"]) for r in rows} == {("16x32", "fp32"), ("16x32", "fp16")}
    fp16 = by_name(rows, "16x32", "fp16")
    assert fp16["triton num_warps=4"]["status"] == "ok"
    assert fp16["triton num_warps=4"]["tolerance"] == rowlib.REL_TOL["fp16"]


def test_load_error_is_one_failed_row():
    spec = make_spec()
    rows = runner.run_op(
        "strided_softmax",
        spec,
        None,
        None,
        dtypes=["fp32"],
        timers={},
        device="cpu",
        load_error="SyntaxError in x.py, line 3: invalid syntax",
    )
    assert len(rows) == 1 and rows[0]["status"] == "failed" and "SyntaxError" in rows[0]["message"]
    assert rowlib.exit_code(rows) == 1


def test_tolerance_table_and_the_specs_scales():
    assert rowlib.tolerance("fp32") == 1e-5
    assert rowlib.tolerance("fp16") == 2e-3
    assert rowlib.tolerance("bf16") == 1.5e-2
    assert rowlib.tolerance(None) is None
    gemm = specs.tolerance_scale(specs.load_spec("fused_gemm"))
    assert gemm > 1 and rowlib.tolerance("bf16", gemm) > rowlib.REL_TOL["bf16"]
    assert specs.tolerance_scale(specs.load_spec("split_softmax")) == 1.0


def test_one_tolerance_table_read_by_the_checks_and_the_benchmark():
    from checks.judging import tensors, tolerances

    # The benchmark's relative-norm thresholds and the checks' elementwise ones are the
    # one module's, at the values they have always had.
    assert rowlib.REL_TOL is tolerances.RELATIVE_NORM
    assert tolerances.RELATIVE_NORM == {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1.5e-2}
    assert tensors.TOLERANCES == {
        torch.float32: dict(atol=1e-5, rtol=1e-4),
        torch.float16: dict(atol=1e-3, rtol=1e-2),
        torch.bfloat16: dict(atol=8e-3, rtol=2e-2),
        torch.float64: dict(atol=1e-10, rtol=1e-9),
    }
    assert tensors.tolerance(torch.bfloat16, 2.0) == dict(atol=1.6e-2, rtol=4e-2)
    assert tolerances.elementwise("fp16", 3.0) == {"atol": 3e-3, "rtol": 3e-2}
    assert tolerances.relative_norm("fp16", 2.0) == 4e-3 and tolerances.relative_norm(None) is None
    with pytest.raises(KeyError):
        tensors.tolerance(torch.int32)
    # The table and the benchmark's rows load without torch (the payload and tables run on a CPU
    # with neither torch nor a GPU).
    code = (
        "import sys; import checks.judging.tolerances, checks.benchmark.rows; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- payload and schema ---------------------------------------------------------------------


def fake_payload(learner, **kw):
    rows, spec = run_fake(learner, dtypes=["fp32", "fp16"])
    hashes = evidence.source_hashes([learner, *evidence.engine_files()])
    return evidence.build_payload(
        command=["python", "-m", "checks.benchmark", "--op", "strided_softmax"],
        timing="graph",
        cache="warm",
        target="learner",
        environment=ENV,
        hashes=hashes,
        ceilings=CEILINGS,
        results=rows,
        targets=kw.get("targets", []),
        method="fake timer",
        commit=None,
    )


def test_generated_payload_validates_against_the_schema(learner):
    payload = fake_payload(learner)
    validate(payload)
    assert payload["schema"] == "kernel-course/benchmark" and payload["version"] == 1
    assert payload["exit_code"] == 1
    assert "checks/benchmark/runner.py" in payload["source_hashes"]
    json.dumps(payload, allow_nan=False)  # strict JSON: no NaN anywhere


def test_schema_rejects_a_broken_payload(learner):
    jsonschema = pytest.importorskip("jsonschema")
    payload = fake_payload(learner)
    bad = json.loads(json.dumps(payload))
    bad["results"][0]["status"] = "pass"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)
    bad = json.loads(json.dumps(payload))
    ok_row = next(r for r in bad["results"] if r["status"] == "ok")
    ok_row["median_us"] = None  # an ok row must carry its timing
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


def test_nan_becomes_null():
    payload = evidence.clean({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": 2.0}})
    assert payload == {"a": None, "b": [1.0, None], "c": {"d": 2.0}}


# --- targets ----------------------------------------------------------------------------------


def _row(op, shape, dtype, variant, role, median, frac=None, config=None, role_name="roofline"):
    r = rowlib.new_row(op, dict(name=shape, role=role_name), dtype, variant, role, config)
    r.update(median_us=median, fraction_of_ceiling=frac, samples_us=[median])
    return r


def real_definitions(*ops):
    return {op: targets.definitions(specs.load_spec(op)) for op in ops}


def test_targets_met_and_missed():
    rows = [
        _row("strided_softmax", "16384x8192", "fp32", "w4", "candidate", 300.0, frac=0.9),
        _row("strided_softmax", "16384x8192", "fp32", "torch", "baseline", 550.0, frac=0.5),
        _row("strided_softmax", "16384x8192-t", "fp32", "w4", "candidate", 800.0),
        _row("strided_softmax", "16384x8192-t", "fp32", "torch", "baseline", 1489.0),
        _row("streaming_attention", "2048x64", "fp16", "b32", "candidate", 12.0, config={"causal": True}),
        _row("streaming_attention", "2048x64", "fp16", "b32", "candidate", 21.0, config={"causal": False}),
        _row("streaming_attention", "2048x64", "fp16", "sdpa", "baseline", 22.7, config={"causal": True}),
        _row("streaming_attention", "2048x64", "fp16", "sdpa", "baseline", 22.2, config={"causal": False}),
        _row(
            "streaming_attention",
            "129x32",
            "fp16",
            "b32",
            "candidate",
            4.0,
            config={"causal": True},
            role_name="comparison",
        ),
        _row(
            "streaming_attention",
            "129x32",
            "fp16",
            "b32",
            "candidate",
            3.0,
            config={"causal": False},
            role_name="comparison",
        ),
    ]
    t = {
        x["what"]: x
        for x in targets.evaluate_targets(
            rows, "graph", real_definitions("strided_softmax", "streaming_attention")
        )
    }
    frac = next(v for k, v in t.items() if "85% of copy" in k)
    assert frac["met"] and frac["measured"] == pytest.approx(0.9)
    transposed = next(v for k, v in t.items() if "transposed" in k)
    assert not transposed["met"] and transposed["measured"] == pytest.approx(1489 / 800)
    ratio = next(v for k, v in t.items() if "0.6x" in k)
    assert ratio["met"] and ratio["measured"] == pytest.approx(12 / 21)
    assert next(v for k, v in t.items() if "fp16 causal: best" in k)["met"]
    course = next(v for k, v in t.items() if k.startswith("129x32"))
    assert "triton-cuda-lab, the reference course" in course["what"]
    assert course["met"] and course["measured"] == pytest.approx(4.0)  # the causal row, 4.0 <= 4.57
    # shapes that were not run are not reported (no 1024x1024 row, no fused_gemm rows)
    assert not any("1024x1024" in k or "4096^3" in k for k in t)
    jsonschema = pytest.importorskip("jsonschema")
    for x in t.values():
        jsonschema.validate(x, {"$defs": SCHEMA["$defs"], "$ref": "#/$defs/target"})


def test_events_targets_compare_with_the_baseline():
    rows = [
        _row("split_softmax", "4x32769", "fp32", "c1024", "candidate", 30.0, role_name="comparison"),
        _row("split_softmax", "4x32769", "fp32", "torch", "baseline", 14.0, role_name="comparison"),
        _row("split_softmax", "64x131072", "fp32", "c1024", "candidate", 20.0, role_name="comparison"),
        _row("split_softmax", "64x131072", "fp32", "torch", "baseline", 33.0, role_name="comparison"),
    ]
    t = targets.evaluate_targets(rows, "events", real_definitions("split_softmax"))
    assert [(x["shape"], x["met"]) for x in t] == [("4x32769", False), ("64x131072", True)]
    assert t[0]["measured"] == pytest.approx(30 / 14)


# --- the command line ----------------------------------------------------------------------


def cli(*args, env_extra=None, interpret=False):
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "checks.benchmark", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.usefixtures("no_gpu")
@pytest.mark.parametrize("interpret", [False, True])
def test_without_a_gpu_exits_3_and_writes_nothing(tmp_path, interpret):
    out = tmp_path / "bench.json"
    r = cli("--op", "strided_softmax", "--solution", "--output", str(out), interpret=interpret)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "timings need a CUDA GPU" in r.stdout
    assert not out.exists()
    # what it can say without a GPU: the reading, predicted for an H200 instead of timed
    assert "performance readings instead" in r.stdout and "Performance step: " in r.stdout, r.stdout


@pytest.mark.parametrize(
    "args, named",
    [
        (["--op", "nope"], "--op"),
        ([], "--op"),
        (["--op", "all", "--timing", "wall"], "--timing"),
        (["--op", "all", "--dtype", "fp64"], "--dtype"),
        (["--op", "all", "--shapes", "big"], "--shapes"),
        (["--op", "all", "--cache", "hot"], "--cache"),
        (["--op", "all", "--cache", "cold"], "--cache"),  # cold L2 is an events mode
        (["--op", "all", "--file", "x.py"], "--file"),
        (["--op", "fused_gemm", "--file", "/no/such/file.py"], "--file"),
        (["--op", "fused_gemm", "--solution", "--file", __file__], "--file"),
        (["--op", "all", "--bogus"], "--bogus"),
    ],
)
def test_bad_arguments_exit_64_naming_the_argument(args, named, capsys):
    try:
        code = bench_cli.main(args)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert named in err


def test_bad_arguments_exit_64_from_the_shell():
    r = cli("--op", "all", "--timing", "wall")
    assert r.returncode == 64 and "--timing" in r.stderr


def test_output_that_is_a_folder_is_a_usage_error(tmp_path, capsys):
    assert bench_cli.main(["--op", "all", "--output", str(tmp_path)]) == EXIT_USAGE
    assert "--output" in capsys.readouterr().err


def test_tables_print_with_rich_and_without(learner, monkeypatch, capsys):
    rows, _ = run_fake(learner)
    tables.print_table("fake op", rows)
    rich_out = capsys.readouterr().out
    monkeypatch.setitem(sys.modules, "rich.console", None)  # Rich missing: plain text
    tables.print_table("fake op", rows)
    plain = capsys.readouterr().out
    for out in (rich_out, plain):
        assert "fake op" in out and "median us" in out and "p20-p80 us" in out
        assert "2.00x" in out and "TODO: write the kernel" in out and "FAILED: wrong result" in out
    assert "┃" not in plain and "num_warps=4" in plain


def test_list_needs_no_gpu():
    r = cli("--list")
    assert r.returncode == 0, r.stderr
    for op in specs.benchmarked_ops():
        assert op in r.stdout


def test_whole_command_with_a_fake_spec_and_timer(tmp_path, learner, monkeypatch, capsys):
    """The command end to end on the CPU: spec loader, timer, ceilings and environment faked."""
    from checks.benchmark import timing

    spec = make_spec()
    monkeypatch.setattr(bench_cli, "DEVICE", "cpu")
    monkeypatch.setattr(bench_cli, "cuda_problem", lambda: None)
    monkeypatch.setattr(bench_cli, "load_spec", lambda op: spec)
    monkeypatch.setattr(
        timing, "make_timers", lambda timing, cache, quick, cap_s=None: ({"graph": fake_timer(spec)}, "fake")
    )
    monkeypatch.setattr(timing, "measure_ceilings", lambda quick: dict(CEILINGS))
    monkeypatch.setattr(timing, "environment", lambda: dict(ENV))
    out = tmp_path / "run.json"
    code = bench_cli.main(
        ["--op", "strided_softmax", "--file", str(learner), "--dtype", "all", "--output", str(out)]
    )
    printed = capsys.readouterr().out
    assert code == 1  # wrong/crash variants failed
    payload = json.loads(out.read_text())
    validate(payload)
    assert payload["target"] == "file" and payload["timing"] == "both"  # the default
    assert {r["dtype"] for r in payload["results"]} == {"fp32", "fp16"}
    assert str(learner.resolve()) in payload["source_hashes"] or any(
        k.endswith("strided_softmax.py") for k in payload["source_hashes"]
    )
    for col in ("variant", "median us", "speedup", "% ceiling", "status"):
        assert col in printed
    assert "results written to" in printed
    # --file is a learner's file: a candidate computed by PyTorch is refused, not timed
    mine = next(r for r in payload["results"] if r["variant"] == "triton num_warps=4")
    assert mine["status"] == "failed" and mine["refused"] == "not-own-kernel", mine
    assert mine["median_us"] is None and "refused: 12 not-own-kernel)" in printed
    # --dtype outside the spec's list names the argument
    assert (
        bench_cli.main(
            ["--op", "strided_softmax", "--file", str(learner), "--dtype", "bf16", "--output", str(out)]
        )
        == EXIT_USAGE
    )


# --- the real specs: interface, and one small shape through the interpreter -------------------


def _real_spec(op):
    return importlib.import_module(f"checks.benchmark.shapes.{op}")


@pytest.mark.parametrize("op", specs.benchmarked_ops())
def test_real_spec_interface(op):
    spec = _real_spec(op)
    for name in ("SHAPES", "DTYPES", "make_inputs", "oracle", "work", "variants"):
        assert hasattr(spec, name), f"{op} spec lacks {name}"
    assert spec.DTYPES and set(spec.DTYPES) <= set(rowlib.DTYPE_NAMES)
    names = [s["name"] for s in spec.SHAPES]
    assert len(names) == len(set(names))
    assert {s["role"] for s in spec.SHAPES} <= {"comparison", "roofline"}
    for s in spec.SHAPES:
        w = spec.work(
            s, {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[spec.DTYPES[0]]
        )
        assert w["bytes"] > 0 and (w["flops"] is None or w["flops"] > 0)


# Each spec's oracle is its named checks' float64 oracle (one definition per problem).
CASE_ORACLES = {
    "strided_softmax": ("strided_softmax", "softmax_oracle", ("x",)),
    "split_softmax": ("split_softmax", "split_oracle", ("x",)),
    "softmax_backward": ("softmax_backward", "vjp64", ("y", "grad_output")),
    "fused_gemm": ("fused_gemm", "gemm_oracle", ("a", "b", "bias")),
    "streaming_attention": ("streaming_attention", "attention_oracle", ("q", "k", "v")),
}


def _shrunk(shape: dict) -> dict:
    """The shape with every size at most 9 (2 for batch and heads): an oracle on a CPU."""
    return {k: (min(v, 2 if k in ("b", "h") else 9) if type(v) is int else v) for k, v in shape.items()}


@pytest.mark.parametrize("op", sorted(CASE_ORACLES))
def test_real_spec_oracle_is_the_named_checks_oracle(op: str) -> None:
    spec = _real_spec(op)
    module, name, args = CASE_ORACLES[op]
    case_oracle = getattr(importlib.import_module(f"checks.judging.cases.{module}"), name)
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[spec.DTYPES[0]]
    for shape in map(_shrunk, spec.SHAPES):
        inputs = spec.make_inputs(shape, dtype, "cpu", 0)
        got = spec.oracle(inputs, shape)
        assert got.dtype == torch.float64 and got.device.type == "cpu"
        if "b" in shape:  # batched heads: the case oracle on each head
            q = inputs["q"]
            for b in range(q.shape[0]):
                for h in range(q.shape[1]):
                    head = case_oracle(*(inputs[a][b, h] for a in args), shape["causal"])
                    # the same formula in batches of heads: at most the last float64 bits differ
                    torch.testing.assert_close(got[b, h], head, rtol=1e-13, atol=1e-13)
            continue
        extra = (shape["causal"],) if "causal" in shape else ()
        assert torch.equal(got, case_oracle(*(inputs[a] for a in args), *extra)), (op, shape["name"])
    if op == "streaming_attention":  # the mask is the shape's: causal and full differ
        full, causal = (_shrunk(s) for s in spec.SHAPES[:2])
        inputs = spec.make_inputs(full, dtype, "cpu", 0)
        assert not torch.equal(spec.oracle(inputs, full), spec.oracle(inputs, causal))


@pytest.mark.parametrize("op", specs.benchmarked_ops())
def test_real_spec_smallest_shape_with_the_solution_in_the_interpreter(op):
    """The harness, the op's spec and its reference answer agree on the first comparison
    shape (Triton's interpreter on the CPU; fake timer), and the answer passes the
    provenance check a learner's file goes through."""
    spec = _real_spec(op)
    from workshops import catalog

    w = catalog.get(op)
    from checks.judging.engine import load_exercise

    # The interpreter runs one program at a time: fewer rows, and only the first
    # candidate beside the baselines and peers, keep this to a second or two.
    first = dict(next(s for s in spec.SHAPES if s["role"] == "comparison"))
    if isinstance(first.get("rows"), int):
        first["rows"] = min(first["rows"], 8)

    def few_variants(mod, inputs, shape):
        vs = spec.variants(mod, inputs, shape)
        cands = [v for v in vs if v["role"] == "candidate"]
        return cands[:1] + [v for v in vs if v["role"] != "candidate"]

    small = types.SimpleNamespace(
        SHAPES=[first],
        DTYPES=spec.DTYPES,
        make_inputs=spec.make_inputs,
        oracle=spec.oracle,
        work=spec.work,
        variants=few_variants,
    )
    rows = runner.run_op(
        op,
        small,
        load_exercise(w.solution),
        w.solution,
        dtypes=spec.DTYPES[:1],
        timers={"graph": lambda fn: [0.01]},
        ceilings=CEILINGS,
        device="cpu",
        warm_calls=0,
        learner=True,
        allowed_ops=w.allowed_torch_ops,
    )
    bad = [(r["variant"], r["status"], r["message"]) for r in rows if r["status"] != "ok"]
    assert not bad, bad
    assert {r["role"] for r in rows} >= {"candidate", "baseline"}


# --- results/summarize.py -----------------------------------------------------------------------


def test_summarize_writes_tables_and_targets(tmp_path, learner):
    results = tmp_path / "results"
    (results / "local").mkdir(parents=True)
    targets = [
        {
            "op": "strided_softmax",
            "what": "16384x8192 fp32 contiguous: >= 85% of copy bandwidth",
            "target": 0.85,
            "measured": 0.91,
            "met": True,
            "comparison": ">=",
            "unit": "fraction",
        },
        {
            "op": "strided_softmax",
            "what": "transposed view: >= 2x torch.softmax",
            "target": 2.0,
            "measured": 1.4,
            "met": False,
            "comparison": ">=",
            "unit": "x",
        },
    ]
    payload = fake_payload(learner, targets=targets)
    (results / "2026-12-02-abc1234-graph.json").write_text(json.dumps(payload))
    (results / "local" / "ignored.json").write_text(json.dumps(payload))
    (results / "checks-h200.json").write_text(json.dumps({"schema": "kernel-course/check-records"}))
    out = tmp_path / "SUMMARY.md"
    r = subprocess.run(
        [
            sys.executable,
            str(REPO / "results" / "summarize.py"),
            "--results",
            str(results),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "## strided_softmax" in text
    assert "### from `2026-12-02-abc1234-graph.json`" in text
    assert "ignored.json" not in text  # results/local is not evidence
    assert "not benchmark evidence" in text and "checks-h200.json" in text
    assert "| met |" in text and "**MISSED**" in text and "1 of 2 targets met" in text
    assert "triton num_warps=4" in text and "10.00" in text and "2.00x" in text
    assert "TODO: write the kernel" in text and "FAILED" in text
    # a chart per op beside the summary, linked from it, drawn from the rows' fractions
    chart = tmp_path / "charts" / "strided_softmax.svg"
    assert "![strided_softmax: achieved throughput against the ceiling](charts/strided_softmax.svg)" in text
    import xml.etree.ElementTree as ET

    root = ET.parse(chart).getroot()
    tips = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any("triton num_warps=4 [candidate]: 10.00 us" in t for t in tips)
    assert any("[baseline]" in t for t in tips) and "ceiling" in chart.read_text()


def test_summarize_with_no_evidence(tmp_path):
    r = subprocess.run(
        [sys.executable, str(REPO / "results" / "summarize.py"), "--results", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "No benchmark evidence yet" in (tmp_path / "SUMMARY.md").read_text()


# --- on a CUDA GPU only: the timers and the recovery from bad variants -------------------------
# These run in a child process without TRITON_INTERPRET (the test session sets it).

GPU_LEARNER = """
import torch
import triton
import triton.language as tl


@triton.jit
def _wild_store(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK).to(tl.int64) + (1 << 42)      # far outside any allocation
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.float32))


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def double(x):
    out = torch.empty_like(x)
    _double[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024, num_warps=4)
    return out

def host_sync(x):
    if float(x.sum()) > 1e30:                                   # .item(): not graph-capturable
        raise AssertionError
    return x * 2

def unfinished(x):
    raise NotImplementedError("later")

def wild(x):
    out = torch.empty_like(x)
    _wild_store[(1,)](out, x.numel(), BLOCK=128)
    return out
"""

GPU_SCRIPT = """
import json, sys, types, torch
sys.path.insert(0, sys.argv[1])
from checks.benchmark import runner, timing, kernels
from checks.judging.engine import load_exercise
path = sys.argv[2]
timing_mode, cache, with_crash = sys.argv[3], sys.argv[4], sys.argv[5] == "1"
mod = load_exercise(path)
spec = types.ModuleType("gpu_spec")
spec.SHAPES = [dict(name="1024x1024", role="comparison", rows=1024, cols=1024),
               dict(name="8192x8192", role="roofline", rows=8192, cols=8192)]
spec.DTYPES = ["fp32"]
spec.make_inputs = lambda s, d, dev, seed: {"x": torch.randn(s["rows"], s["cols"], device=dev, dtype=d)}
spec.oracle = lambda i, s: i["x"].double() * 2
spec.work = lambda s, d: {"bytes": s["rows"] * s["cols"] * 8, "flops": None}
def variants(mod, inputs, shape):
    x = inputs["x"]
    vs = [dict(name="double", role="candidate", config={}, fn=lambda: mod.double(x)),
          dict(name="host_sync", role="candidate", config={}, fn=lambda: mod.host_sync(x)),
          dict(name="todo", role="candidate", config={}, fn=lambda: mod.unfinished(x)),
          dict(name="torch", role="baseline", config={}, fn=lambda: torch.mul(x, 2))]
    if with_crash:
        vs.insert(3, dict(name="wild", role="candidate", config={}, fn=lambda: mod.wild(x)))
    return vs
spec.variants = variants
timers, method = timing.make_timers(timing_mode, cache, True)
rows = runner.run_op("gpu_test", spec, mod, path, dtypes=["fp32"], timers=timers,
                     ceilings=timing.measure_ceilings(True), device="cuda", cache=cache,
                     sync=torch.cuda.synchronize, inspect_kernels=kernels.capture_kernels)
print("ROWS" + json.dumps([{k: r[k] for k in ("shape", "variant", "status", "message",
                                              "median_us", "samples_us", "fraction_of_ceiling",
                                              "device_us", "per_call_us", "host_us",
                                              "launch_bound", "kernels")}
                           for r in rows]))
"""


def _gpu_run(tmp_path, timing, cache, crash=False):
    learner = tmp_path / "gpu_learner.py"
    learner.write_text(GPU_LEARNER)
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    r = subprocess.run(
        [sys.executable, "-c", GPU_SCRIPT, str(REPO), str(learner), timing, cache, "1" if crash else "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = next((l for l in r.stdout.splitlines() if l.startswith("ROWS")), None)
    assert line, r.stdout[-1500:] + r.stderr[-1500:]
    rows = json.loads(line[4:])
    return {(x["shape"], x["variant"]): x for x in rows}


needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@needs_gpu
@pytest.mark.parametrize(
    "timing, cache", [("graph", "warm"), ("events", "warm"), ("events", "cold"), ("both", "warm")]
)
def test_gpu_timers_and_a_variant_that_cannot_be_captured(tmp_path, timing, cache):
    rows = _gpu_run(tmp_path, timing, cache)
    big = rows[("8192x8192", "double")]
    assert big["status"] == "ok" and big["median_us"] > 0 and big["samples_us"], big
    assert 0.3 < big["fraction_of_ceiling"] < 1.3  # a 256 MB elementwise pass
    [k] = big["kernels"]  # the one Triton kernel it launched
    assert k["name"] == "_double" and k["num_warps"] == 4 and k["n_regs"] > 0
    assert k["n_spills"] == 0 and k["launches"] == 1
    assert rows[("8192x8192", "torch")]["kernels"] == []  # PyTorch's kernels are not Triton's
    if timing == "both":
        assert big["device_us"] == big["median_us"] and big["per_call_us"] > 0
        assert big["host_us"] >= 0 and isinstance(big["launch_bound"], bool)
    else:
        assert big["host_us"] is None and big["launch_bound"] is None
    assert rows[("8192x8192", "todo")]["status"] == "todo", rows[("8192x8192", "todo")]
    sync = rows[("1024x1024", "host_sync")]
    if timing in ("graph", "both"):  # .item() cannot be captured: failed, and the run goes on
        assert sync["status"] == "failed" and "timing failed" in sync["message"], sync
    else:
        assert sync["status"] == "ok"
    assert rows[("1024x1024", "torch")]["status"] == "ok", rows[("1024x1024", "torch")]
    assert rows[("8192x8192", "torch")]["status"] == "ok", rows[("8192x8192", "torch")]


@needs_gpu
def test_gpu_illegal_address_stops_the_rest_with_a_reason(tmp_path):
    rows = _gpu_run(tmp_path, "events", "warm", crash=True)
    assert rows[("1024x1024", "double")]["status"] == "ok"
    assert rows[("1024x1024", "wild")]["status"] == "failed"
    after = rows[("1024x1024", "torch")]
    assert after["status"] == "failed" and "earlier CUDA error" in after["message"], after
    rest = rows[("8192x8192", "(variants)")]  # the next shape is not even set up
    assert rest["status"] == "failed" and "earlier CUDA error" in rest["message"], rest


def test_a_missed_time_colder_than_its_label_says_why_with_the_one_set_time():
    def backward(variant, role, median, one_set=None):
        r = _row("softmax_backward", "1024x4097", "fp16", variant, role, median, role_name="comparison")
        r.update(working_set_bytes=58 * 2**20, l2_bytes=50 * 2**20, colder_than_label=True)
        r["one_set_device_us"] = one_set
        return r

    rows = [backward("w8", "candidate", 12.1, one_set=9.5), backward("torch", "baseline", 80.0)]
    t = targets.evaluate_targets(rows, "graph", real_definitions("softmax_backward"))
    (course,) = [x for x in t if x["what"].startswith("1024x4097")]
    assert not course["met"] and course["measured"] == pytest.approx(12.1)  # judged as measured
    assert course["measured_one_set"] == pytest.approx(9.5)
    assert (
        "58 MiB, more than the 50 MiB L2" in course["note"] and "9.5 us, within the target" in course["note"]
    )
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(course, {"$defs": SCHEMA["$defs"], "$ref": "#/$defs/target"})
    rows[0]["colder_than_label"] = False  # fits the L2: no such note
    (course,) = [
        x
        for x in targets.evaluate_targets(rows, "graph", real_definitions("softmax_backward"))
        if x["what"].startswith("1024x4097")
    ]
    assert "note" not in course and "measured_one_set" not in course


def test_a_target_measured_on_one_card_is_not_judged_on_another(capsys):
    """The reference course's figures were measured on an H200: on an H100 the row says so
    (met is None, 'n/a'), instead of MISSED; on an H200, and with no card named, it is judged."""
    rows = [
        _row("softmax_backward", "1024x4097", "fp16", "w8", "candidate", 13.2, role_name="comparison"),
        _row("softmax_backward", "1024x4097", "fp16", "torch", "baseline", 80.0, role_name="comparison"),
    ]
    defs = real_definitions("softmax_backward")

    def course(card):
        got = targets.evaluate_targets(rows, "graph", defs, card)
        return next(x for x in got if x["what"].startswith("1024x4097"))

    on_h100 = course("NVIDIA H100 80GB HBM3")
    assert on_h100["met"] is None
    assert on_h100["note"] == "measured on an H200; this is an NVIDIA H100 80GB HBM3: not judged here"
    assert course("NVIDIA H200")["met"] is False and course("")["met"] is False
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(on_h100, {"$defs": SCHEMA["$defs"], "$ref": "#/$defs/target"})
    tables.print_targets([on_h100])
    out = capsys.readouterr().out
    assert "n/a" in out and "MISSED" not in out and "measured on an H200; this is an NVIDIA H100" in out
