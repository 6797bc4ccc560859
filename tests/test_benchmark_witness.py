"""The benchmark times only calls that do the work: kept wrong answers for the benchmark.

Each learner file below passes the correctness call and then skips the work while it is
timed; the benchmark refuses it by name.  The kernels run in Triton's interpreter
(tests/conftest.py sets TRITON_INTERPRET) with a fake timer that calls the timed
callable as a timer does; what needs CUDA streams or a real timer runs on a GPU only.
"""

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from checks.benchmark import runner, statistics
from checks.judging.engine import load_exercise

REPO = Path(__file__).resolve().parent.parent

KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


@triton.jit
def _nothing(x_ptr, BLOCK: tl.constexpr):
    tl.load(x_ptr + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < 0)


def double(x):
    out = torch.empty_like(x)
    _double[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out
"""

# A kept wrong answer: the output of an input it has seen is returned, nothing launched.
MEMO_NO_LAUNCH = """
_memo = {}


def memo(x):
    key = x.data_ptr()
    if key not in _memo:
        _memo[key] = double(x)
    return _memo[key]
"""

# A kept wrong answer: the same memo, hiding behind a launch of a kernel of its file.
MEMO_WITH_A_LAUNCH = """
_memo = {}


def memo(x):
    key = x.data_ptr()
    if key in _memo:
        _nothing[(1,)](x, BLOCK=16)  # a launch of its own file's kernel: does no work
        return _memo[key]
    _memo[key] = double(x)
    return _memo[key]
"""

# Legal: a memo keyed on the storage and its version misses whenever the input changed,
# so its timed calls do the work (the benchmark marks every timed call's inputs changed).
MEMO_BY_VERSION = """
_memo = {}


def memo(x):
    key = (x.data_ptr(), x._version)
    if key not in _memo:
        _memo[key] = double(x)
    return _memo[key]
"""


def _spec():
    spec = types.ModuleType("witness_spec")
    spec.SHAPES = [dict(name="300", role="comparison", n=300)]
    spec.DTYPES = ["fp32"]

    def make_inputs(shape, dtype, device, seed):
        g = torch.Generator().manual_seed(seed)
        return {"x": torch.randn(shape["n"], generator=g).to(device, dtype)}

    spec.make_inputs = make_inputs
    spec.oracle = lambda inputs, shape: inputs["x"].double() * 2
    spec.work = lambda shape, dtype: {"bytes": shape["n"] * 8, "flops": None}

    def variants(mod, inputs, shape):
        x = inputs["x"]
        return [
            dict(name="mine", role="candidate", config={}, fn=lambda: mod.memo(x)),
            dict(name="torch", role="baseline", config={}, fn=lambda: x * 2),
        ]

    spec.variants = variants
    return spec


def _timer(samples_ms=(0.01, 0.011, 0.009)):
    def timer(fn):
        for _ in range(6):  # warm-up and timed calls, as triton.testing makes them
            fn()
        return list(samples_ms)

    return timer


def _bench(tmp_path, body, **kw):
    path = tmp_path / "mine.py"
    path.write_text(KERNEL + body)
    rows = runner.run_op(
        "witness_test",
        _spec(),
        load_exercise(path),
        path,
        dtypes=["fp32"],
        timers={"events": kw.pop("timer", _timer())},
        ceilings={"copy_gbps": 4000.0, "bf16_matmul_tflops": 700.0},
        device="cpu",
        warm_calls=1,
        learner=True,
        **kw,
    )
    return {r["variant"]: r for r in rows}


def test_a_memo_that_launches_nothing_on_a_hit_is_refused_as_skipping_work(tmp_path):
    rows = _bench(tmp_path, MEMO_NO_LAUNCH)
    mine = rows["mine"]
    assert mine["status"] == "failed" and mine["refused"] == "skips-work", mine
    assert mine["message"].startswith("refused: skips-work: ")
    assert "timed calls launched no kernel of your file" in mine["message"]
    assert rows["torch"]["status"] == "ok" and rows["torch"]["refused"] is None


def test_a_memo_that_launches_a_token_kernel_is_refused_as_a_cached_output(tmp_path):
    rows = _bench(tmp_path, MEMO_WITH_A_LAUNCH)
    mine = rows["mine"]
    assert mine["status"] == "failed" and mine["refused"] == "cached-output", mine
    assert "after its inputs' values changed in place" in mine["message"]
    assert "wrong result" in mine["message"]


def test_a_memo_keyed_on_the_inputs_version_does_the_work_and_is_timed(tmp_path):
    rows = _bench(tmp_path, MEMO_BY_VERSION)
    assert rows["mine"]["status"] == "ok" and rows["mine"]["refused"] is None, rows["mine"]


def test_honest_timed_calls_rotate_input_sets_and_are_compared_with_the_oracle(tmp_path):
    seen = []

    def timer(fn):
        for _ in range(4):
            seen.append(fn().clone())
        return [0.01]

    rows = _bench(tmp_path, "\n\ndef memo(x):\n    return double(x)\n", timer=timer)
    assert rows["mine"]["status"] == "ok", rows["mine"]
    # two input sets with different values, alternating; each answer right for its set
    assert not torch.equal(seen[0], seen[1]) and torch.equal(seen[0], seen[2])


def test_a_row_past_a_measured_ceiling_is_refused_as_impossible(tmp_path):
    # 2,400 bytes in 0.1 ns: 24,000 GB/s against a 4,000 GB/s copy
    rows = _bench(tmp_path, "\n\ndef memo(x):\n    return double(x)\n", timer=_timer([1e-7, 1e-7, 1e-7]))
    for name in ("mine", "torch"):
        r = rows[name]
        assert r["status"] == "failed" and r["refused"] == "impossible", r
        assert (
            "of the copy bandwidth measured on this card" in r["message"] and "memory limit" in r["message"]
        )
        assert r["speedup"] is None and r["gbps"] > 4000


def test_the_ceiling_margin_says_which_limit():
    row = {"gbps": None, "tflops": 900.0}
    said = statistics.impossible(row, {"copy_gbps": 4000.0, "bf16_matmul_tflops": 700.0})
    assert said and "compute limit" in said and "129%" in said
    # within measurement noise of a ceiling (the reference reaches 103 % of the copy): taken
    assert statistics.impossible({"gbps": 4120.0}, {"copy_gbps": 4000.0}) is None


def test_a_warm_row_whose_working_set_fits_the_l2_may_pass_the_memorys_copy_bandwidth():
    # 8 MiB read and written warm: the L2 serves it, faster than the memory's copy
    fits = {"gbps": 4640.0, "colder_than_label": False}
    assert statistics.impossible(fits, {"copy_gbps": 4000.0}) is None
    assert "116%" in statistics.impossible(dict(fits, colder_than_label=True), {"copy_gbps": 4000.0})
    assert "116%" in statistics.impossible(dict(fits, colder_than_label=None), {"copy_gbps": 4000.0})
    said = statistics.impossible(dict(fits, gbps=24000.0), {"copy_gbps": 4000.0})
    assert said and "600%" in said and "even with every byte in the L2" in said


# --- on a CUDA GPU only ------------------------------------------------------------------------

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# A kept wrong answer (GPU): every call launches its kernel on a side stream and returns
# at once; the timer's events, on the current stream, wait for nothing.
SIDE_STREAM = """
_side = torch.cuda.Stream() if torch.cuda.is_available() else None


def memo(x):
    out = torch.empty_like(x)
    with torch.cuda.stream(_side):
        _double[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
"""

GPU_SCRIPT = """
import json, sys, types, torch
sys.path.insert(0, sys.argv[1])
from checks.benchmark import runner, timing
from checks.judging.engine import load_exercise
path, mode = sys.argv[2], sys.argv[3]
spec = types.ModuleType("s")
spec.SHAPES = [dict(name="4M", role="comparison", n=1 << 22)]
def make_inputs(s, d, dev, seed):
    return {"x": torch.randn(s["n"], device=dev, generator=torch.Generator(dev).manual_seed(seed))}
spec.make_inputs = make_inputs
spec.oracle = lambda i, s: i["x"].double() * 2
spec.work = lambda s, d: {"bytes": s["n"] * 8, "flops": None}
spec.variants = lambda mod, i, s: [
    dict(name="mine", role="candidate", config={}, fn=lambda: mod.memo(i["x"]))]
timers, _ = timing.make_timers(mode, "warm", True)
rows = runner.run_op("t", spec, load_exercise(path), path, dtypes=["fp32"], timers=timers,
                     ceilings=timing.measure_ceilings(True), device="cuda",
                     sync=torch.cuda.synchronize, learner=True)
print("ROWS" + json.dumps([{k: r[k] for k in ("variant", "status", "refused", "message")} for r in rows]))
"""


def _gpu_bench(tmp_path, body, mode):
    path = tmp_path / "mine.py"
    path.write_text(KERNEL + body)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run(
        [sys.executable, "-c", GPU_SCRIPT, str(REPO), str(path), mode],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = next((l for l in r.stdout.splitlines() if l.startswith("ROWS")), None)
    assert line, r.stdout[-1500:] + r.stderr[-1500:]
    return json.loads(line[4:])[0]


@needs_gpu
@pytest.mark.parametrize("mode", ["graph", "events", "both"])
@pytest.mark.parametrize(
    "body, refused",
    [(MEMO_NO_LAUNCH, "skips-work"), (MEMO_WITH_A_LAUNCH, "cached-output"), (SIDE_STREAM, "skips-work")],
    ids=["memo", "memo-with-a-launch", "side-stream"],
)
def test_gpu_the_benchmark_refuses_timed_calls_that_skip_the_work(tmp_path, mode, body, refused):
    row = _gpu_bench(tmp_path, body, mode)
    assert row["status"] == "failed" and row["refused"] == refused, row


@needs_gpu
def test_gpu_a_version_keyed_memo_and_a_plain_kernel_are_timed(tmp_path):
    for body in (MEMO_BY_VERSION, "\n\ndef memo(x):\n    return double(x)\n"):
        row = _gpu_bench(tmp_path, body, "both")
        assert row["status"] == "ok" and row["refused"] is None, row


@needs_gpu
def test_gpu_the_memoized_reference_answer_is_refused_by_the_command(tmp_path):
    # The case: the reference strided softmax, wrapped so that an input it has
    # seen returns the earlier output without launching anything.
    src = (REPO / "workshops" / "strided_softmax" / "solution.py").read_text()
    src = src.replace("def softmax(x, *, num_warps=4):", "def _softmax(x, *, num_warps=4):")
    src += (
        "\n\n_memo = {}\n\n\ndef softmax(x, *, num_warps=4):\n"
        "    key = (x.data_ptr(), tuple(x.shape), x.stride(), num_warps)\n"
        "    if key not in _memo:\n        _memo[key] = _softmax(x, num_warps=num_warps)\n"
        "    return _memo[key]\n"
    )
    f = tmp_path / "memo_softmax.py"
    f.write_text(src)
    out = tmp_path / "run.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    cmd = [sys.executable, "-m", "checks.benchmark", "--op", "strided_softmax", "--file", str(f)]
    cmd += ["--timing", "both", "--shapes", "comparison", "--quick", "--output", str(out)]
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    rows = [x for x in json.loads(out.read_text())["results"] if x["role"] == "candidate"]
    # Which guard trips first depends on the allocator: a call that launches nothing is
    # skips-work; a memo hit on changed values is cached-output; a memo hit on a freed and
    # reused address returns a tensor no launch of this call wrote, refused before timing
    # as not-own-kernel. Every row must be refused by one of them, none timed.
    memo_refusals = {"skips-work", "cached-output", "not-own-kernel"}
    refused = [(x["shape"], x["variant"], x["status"], x.get("refused")) for x in rows]
    assert rows and all(s == "failed" and r in memo_refusals for _, _, s, r in refused), refused
    assert "refused:" in r.stdout
