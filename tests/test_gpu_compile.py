"""What passes in Triton's interpreter must compile for a GPU too (checks.judging.gpu_compile).

Two real cases pass every interpreted check and are refused by the sm_90 compiler: a
``BLOCK_K`` below 16 reaching ``tl.dot`` (I3), and an fp16 accumulator re-assigned fp32 in
the key loop (A3).  Each is a one-line edit of the reference answer; the check that
launched the refused variant fails with the compiler's words, the kernel and its constexprs.
"""

from pathlib import Path

import torch
import triton
import triton.language as tl

from checks.judging import engine, gpu_compile
from checks.judging.launch_records import INTERPRETED, Launch

REPO = Path(__file__).resolve().parent.parent

BLOCK_K_RIGHT = "block_k = min(widest_k, max(16, next_power_of_2(K)))"
BLOCK_K_TINY = "block_k = min(32, next_power_of_2(max(K, 1)))"
ACC_RIGHT = "acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)"
ACC_FP16 = "acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float16)"


def edited(tmp_path: Path, workshop: str, old: str, new: str) -> Path:
    text = (REPO / "workshops" / workshop / "solution.py").read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the reference answer of {workshop} changed: {old!r}"
    path = tmp_path / f"{workshop}_edited.py"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def run(workshop: str, path: Path, only: list) -> dict:
    return {r.id: r for r in engine.run_checks(workshop, path, interpret=True, only=only)}


def test_a_block_k_below_16_fails_the_checks_that_launch_it(tmp_path):
    path = edited(tmp_path, "fused_gemm", BLOCK_K_RIGHT, BLOCK_K_TINY)
    records = run("fused_gemm", path, ["k-zero", "tiny-shapes", "long-k"])
    for check, block_k in (("k-zero", 1), ("tiny-shapes", 1)):
        r = records[check]
        assert r.status == "fail", (check, r.status, r.message)
        assert "Input shapes should have M >= 1, N >= 1 and K >= 16" in r.message  # the compiler's words
        assert "_matmul_bias_relu_kernel" in r.message and f"BLOCK_K={block_k}" in r.message
        assert "sm_90" in r.message and "at least 16" in r.message  # what to change
        assert f"{path.name}, line " in r.message  # the tl.dot line of the learner's file
        assert r.details["verdict"] == gpu_compile.VERDICT
        assert r.details["constexprs"]["BLOCK_K"] == block_k
        assert r.why == gpu_compile.WHY
    # K = 700 gives BLOCK_K = 32: every variant it launched compiles
    assert records["long-k"].status == "pass", records["long-k"].message


def test_an_fp16_accumulator_fails_with_the_loop_carried_type(tmp_path):
    path = edited(tmp_path, "streaming_attention", ACC_RIGHT, ACC_FP16)
    records = run("streaming_attention", path, ["basic", "causal-basic"])
    for r in records.values():
        assert r.status == "fail", (r.id, r.status, r.message)
        assert "Loop-carried variable acc has initial type" in r.message
        assert "fp16" in r.message and "fp32" in r.message
        assert "_attention_kernel" in r.message and "HEAD_DIM=32" in r.message
        assert "tl.zeros(..., tl.float32)" in r.message  # what to change


def test_the_command_line_says_it(tmp_path):
    """``python -m checks``, Triton's interpreter chosen by the command rather than by the
    environment: the failing check and the compiler's words."""
    import os
    import subprocess
    import sys

    path = edited(tmp_path, "fused_gemm", BLOCK_K_RIGHT, BLOCK_K_TINY)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    args = ["-m", "checks", "fused_gemm", "--file", str(path), "--interpret", "--check", "k-zero"]
    r = subprocess.run(
        [sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=300, env=env
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL" in r.stdout and "k-zero" in r.stdout
    assert "K >= 16" in r.stdout and "sm_90" in r.stdout


def test_the_reference_answers_variants_compile_once(tmp_path):
    path = tmp_path / "gemm.py"  # a copy: outcomes are kept by the file's text, so it is fresh
    path.write_text(
        (REPO / "workshops/fused_gemm/solution.py").read_text(encoding="utf-8") + "\n# a copy\n",
        encoding="utf-8",
    )
    before = gpu_compile.COMPILER.compiles
    first = run("fused_gemm", path, ["tiny-shapes", "k-zero"])
    assert all(r.status == "pass" for r in first.values()), [r.message for r in first.values()]
    compiled = gpu_compile.COMPILER.compiles - before
    assert compiled >= 2  # tiny-shapes launches several variants, k-zero at least one
    answered = list(gpu_compile.COMPILER.done.values())[-compiled:]
    assert {o["status"] for o in answered} == {"ok"}, answered  # compiled, not skipped for a broken setup
    again = run("fused_gemm", path, ["tiny-shapes", "k-zero"])
    assert all(r.status == "pass" for r in again.values())
    assert gpu_compile.COMPILER.compiles - before == compiled  # nothing compiled twice


def test_the_switch_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv(gpu_compile.ENV, "0")
    path = edited(tmp_path, "fused_gemm", BLOCK_K_RIGHT, BLOCK_K_TINY)
    assert run("fused_gemm", path, ["k-zero"])["k-zero"].status == "pass"  # the interpreter alone


def test_a_lost_compiler_never_fails_a_check(tmp_path):
    """A compiler process that dies is not the learner's fault: the variant it held is
    unknown, the check keeps its verdict, and a new process compiles what follows."""
    import os
    import signal

    path = tmp_path / "gemm.py"
    path.write_text(
        (REPO / "workshops/fused_gemm/solution.py").read_text(encoding="utf-8") + "\n# lost\n",
        encoding="utf-8",
    )
    gpu_compile.COMPILER.start()
    os.kill(gpu_compile.COMPILER.pid, signal.SIGKILL)
    assert run("fused_gemm", path, ["k-zero"])["k-zero"].status == "pass"
    tiny = edited(tmp_path, "fused_gemm", BLOCK_K_RIGHT, BLOCK_K_TINY)
    assert run("fused_gemm", tiny, ["k-zero"])["k-zero"].status == "fail"


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr, DTYPE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs * stride, tl.load(x_ptr + offs, mask=offs < n).to(DTYPE), mask=offs < n)


def test_a_launch_is_described_as_triton_specializes_it():
    x = torch.zeros(64, dtype=torch.float16)
    y = torch.zeros(65, dtype=torch.float32)
    launch = Launch(
        _copy_kernel,
        INTERPRETED,
        (x, y[1:], 32, 1),
        {"BLOCK": 64, "DTYPE": tl.float32, "num_warps": 2},
        (1,),
        0,
    )
    job = gpu_compile.describe(launch)
    assert job is not None
    assert job["signature"] == {
        "x_ptr": "*fp16",
        "y_ptr": "*fp32",
        "n": "i32",
        "stride": "constexpr",  # an integer 1 is specialized into a constant
        "BLOCK": "constexpr",
        "DTYPE": "constexpr",
    }
    assert job["constexprs"] == {"stride": 1, "BLOCK": 64, "DTYPE": {"dtype": "fp32"}}
    # x is 16-byte aligned, y[1:] is not; n = 32 is a multiple of 16
    assert job["attrs"] == [[[0], [["tt.divisibility", 16]]], [[2], [["tt.divisibility", 16]]]]
    assert job["options"] == {"num_warps": 2}
    assert job["named"] == {"BLOCK": 64, "DTYPE": {"dtype": "fp32"}}
    assert "BLOCK=64, DTYPE=fp32, num_warps=2" == gpu_compile.constexprs_named(job)


def test_a_cpu_workshop_or_a_gpu_run_is_not_watched(tmp_path):
    with gpu_compile.checked(tmp_path / "x.py", False) as judged:
        marker = object()
        assert judged(marker) is marker
