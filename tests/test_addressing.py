"""An addressing bug is an addressing bug: in Triton's interpreter, elements of an output
that no program of the learner's kernels stored, and that nothing else wrote, are reported
as a grid/mask/stride bug (checks.judging.provenance.Unwritten) with the launches' grids and
a map, never as "not your kernel".  What something else produced stays NotOwnKernel."""

import textwrap
from pathlib import Path

import pytest
import torch

from checks.judging import provenance
from checks.judging.engine import load_exercise, run_checks

REPO = Path(__file__).resolve().parent.parent

HEADER = """
import torch
import triton
import triton.language as tl
"""

ROWS = (
    HEADER
    + """

@triton.jit
def softmax_rows_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, out_row, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_row + cols * stride_col, num / tl.sum(num, axis=0), mask=mask)


def launch(x, out, programs, out_row):
    softmax_rows_kernel[(programs,)](
        x, out, x.shape[1], x.stride(0), x.stride(1), out_row, BLOCK_C=triton.next_power_of_2(x.shape[1])
    )
"""
)

GEMM = (
    HEADER
    + """

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_rows
    pid_n = (pid % in_group) // group_rows
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=torch.float32)
    BM = BN = BK = 16
    GROUP_M = 2
    groups = triton.cdiv(M, BM) // GROUP_M          # "whole groups": the last, partial one is dropped
    grid = (groups * GROUP_M * triton.cdiv(N, BN),)
    matmul_kernel[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, GROUP_M=GROUP_M)
    return c
"""
)


def _module(tmp_path, source, body, name="mine.py"):
    path = tmp_path / name
    path.write_text(source + textwrap.dedent(body))
    return load_exercise(path), path


def _unwritten(path, fn, *args):
    with pytest.raises(provenance.CheckFailed) as caught:
        provenance.witnessed_call(path, fn, *args, fn_name=fn.__name__)
    e = caught.value
    assert isinstance(e, provenance.Unwritten) and not isinstance(e, provenance.NotOwnKernel), e.message
    assert e.details["verdict"] == "unwritten"
    for not_said in ("kernel of yours", "Your kernel, not PyTorch", "not a kernel defined in your file"):
        assert not_said not in e.message
    return e


def test_a_grid_capped_below_the_rows_is_reported_with_the_grid_and_a_map(tmp_path):
    mod, path = _module(
        tmp_path,
        ROWS,
        """
        def softmax(x):
            out = torch.empty_like(x)
            launch(x, out, min(x.shape[0], 256), x.shape[1])   # "256 programs are plenty"
            return out
        """,
    )
    x = torch.randn(300, 3)
    e = _unwritten(path, mod.softmax, x)
    assert "with 132 of 900 elements that no program of your kernels stored" in e.message
    assert "rows 256-299 (44 of 300); all 3 columns" in e.message
    assert "The output has 300 rows and 3 columns" in e.message
    assert "softmax_rows_kernel on grid (256,) = 256 programs" in e.message
    assert "triton.cdiv" in e.message and "already stored" not in e.message
    assert e.details["launches"] == [{"kernel": "softmax_rows_kernel", "grid": [256]}]
    assert e.details["rows_affected"] == "256-299" and e.details["cols_affected"] == "0-2"
    # 300 rows in 8 bands of about 38: rows 256-299 are the last two bands
    assert e.details["map"] == ["..."] * 6 + ["###"] * 2
    # with a grid that covers every row, the same kernel passes
    fixed, _ = _module(
        tmp_path,
        ROWS,
        """
        def softmax(x):
            out = torch.empty_like(x)
            launch(x, out, x.shape[0], x.shape[1])
            return out
        """,
        name="fixed.py",
    )
    got = provenance.witnessed_call(tmp_path / "fixed.py", fixed.softmax, x)
    torch.testing.assert_close(got, torch.softmax(x, dim=1))


def test_a_store_that_uses_the_input_strides_is_an_addressing_bug(tmp_path):
    mod, path = _module(
        tmp_path,
        ROWS,
        """
        def softmax(x):
            out = torch.empty(x.shape, dtype=x.dtype)
            launch(x, out, x.shape[0], x.stride(0))   # the output's row stride taken from the input
            return out
        """,
    )
    x = torch.randn(1, 77).expand(9, 77)  # one row broadcast to 9: row stride 0
    e = _unwritten(path, mod.softmax, x)
    assert "with 616 of 693 elements that no program of your kernels stored" in e.message
    assert "rows 1-8 (8 of 9); all 77 columns" in e.message
    assert "softmax_rows_kernel on grid (9,) = 9 programs" in e.message
    # every program stored row 0: the repeated addresses are named
    assert "616 of their stores landed on elements already stored" in e.message
    assert e.details["stores_repeated"] == 616 and e.details["map"][0] == "." * 32


def test_a_skipped_last_gemm_group_is_an_addressing_bug(tmp_path):
    mod, path = _module(tmp_path, GEMM, "")
    a, b = torch.randn(40, 16), torch.randn(16, 32)
    e = _unwritten(path, mod.matmul, a, b)
    # 3 row tiles in groups of 2: the grid counts 1 whole group, 2 x 2 tiles; rows 32-39 are left
    assert "with 256 of 1280 elements that no program of your kernels stored" in e.message
    assert "rows 32-39 (8 of 40); all 32 columns" in e.message
    assert "matmul_kernel on grid (4,) = 4 programs" in e.message
    assert e.details["map"][-1] == "#" * 32 and e.details["map"][0] == "." * 32
    # the tiles that were stored are right: the kernel did its own work
    c = mod.matmul(a, b)
    torch.testing.assert_close(c[:32], a[:32] @ b)


def test_a_grid_function_and_an_autotuned_kernel_report_the_grid_they_ran(tmp_path):
    mod, path = _module(
        tmp_path,
        HEADER,
        """
        @triton.jit
        def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


        @triton.autotune(configs=[triton.Config({"BLOCK": 32})], key=["n"])
        @triton.jit
        def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


        def double(x):
            out = torch.zeros_like(x)                 # zero-filled, then partly missed
            n = x.numel()
            double_kernel[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]) - 1,)](x, out, n, BLOCK=16)
            return out


        def tuned(x):
            out = torch.empty_like(x)
            n = x.numel()
            tuned_kernel[lambda meta: (min(triton.cdiv(n, meta["BLOCK"]), 2),)](x, out, n)
            return out
        """,
    )
    x = torch.arange(100, dtype=torch.float32)
    e = _unwritten(path, mod.double, x)
    assert "elements 96-99" in e.message and "double_kernel on grid (6,) = 6 programs" in e.message
    e = _unwritten(path, mod.tuned, x)
    assert "elements 64-99" in e.message and "tuned_kernel on grid (2,) = 2 programs" in e.message


def test_what_something_else_wrote_is_still_not_the_learners_kernel(tmp_path):
    mod, path = _module(
        tmp_path,
        ROWS,
        """
        def copied_in(x):
            out = torch.empty_like(x)
            launch(x, out, 256, x.shape[1])
            out[256:].copy_(x[256:])                  # the rest copied in: not stored by a kernel
            return out


        def numpy_rest(x):
            out = torch.empty_like(x)
            launch(x, out, 256, x.shape[1])
            out.numpy()[256:] = 0.5                   # the rest written through a NumPy view
            return out


        def host_read(x):
            out = torch.empty_like(x)
            programs = int(len(x.tolist()) * 0.9)     # values read on the host during the call
            launch(x, out, programs, x.shape[1])
            return out
        """,
    )
    x = torch.randn(300, 3)
    for fn, said in [
        (mod.copied_in, "aten::copy_ (your file, line"),
        (mod.numpy_rest, ".numpy() (your file, line"),
        (mod.host_read, "were never stored by a kernel of yours"),
    ]:
        with pytest.raises(provenance.NotOwnKernel) as caught:
            provenance.witnessed_call(path, fn, x, fn_name=fn.__name__)
        assert said in caught.value.message and caught.value.details["verdict"] == "not-own-kernel"


def test_the_checks_report_a_capped_grid_as_unwritten_and_own_kernel_passes():
    path = REPO / "workshops" / "strided_softmax" / "wrong" / "capped_grid.py"
    only = ["own-kernel", "many-rows"]
    records = {r.id: r for r in run_checks("strided_softmax", path, interpret=True, only=only)}
    assert records["own-kernel"].status == "pass", records["own-kernel"].message
    many = records["many-rows"]
    assert many.status == "fail" and many.details["verdict"] == "unwritten"
    assert "rows 256-299 (44 of 300)" in many.message and "grid (256,) = 256 programs" in many.message
    assert "Your kernel, not PyTorch" not in many.message and many.details["map"][-1] == "###"


def test_the_checks_still_name_a_numpy_view_write_not_own_kernel():
    path = REPO / "workshops" / "strided_softmax" / "wrong" / "numpy_view_write.py"
    (record,) = run_checks("strided_softmax", path, interpret=True, only=["own-kernel"])
    assert record.status == "fail" and record.details["verdict"] == "not-own-kernel"
    assert "Your kernel, not PyTorch" in record.message


@pytest.mark.parametrize(
    "workshop, wrong, value_check",
    [
        ("streaming_attention", "grid_misses_tail.py", "ragged-lengths"),  # n // BLOCK_M programs
        ("split_softmax", "floor_tile_count.py", "width-chunk-plus-1"),  # the last chunk dropped
    ],
)
def test_own_kernel_passes_an_addressing_bug_its_small_call_shows(workshop, wrong, value_check):
    # own-kernel's one small call already misses elements here; it says so and passes,
    # and the check that compares values fails with the addressing report
    path = REPO / "workshops" / workshop / "wrong" / wrong
    records = {r.id: r for r in run_checks(workshop, path, interpret=True, only=["own-kernel", value_check])}
    own = records["own-kernel"]
    assert own.status == "pass" and "were stored by no program" in own.message, own.message
    assert records[value_check].status == "fail"
    assert records[value_check].details.get("verdict") == "unwritten", records[value_check].message


def test_where_stores_are_not_seen_the_witness_keeps_to_launches(tmp_path):
    # On a GPU the witness sees launches, not stores: a launch given the output suffices
    # there, and the value checks find unwritten elements by the poison left in them.
    mod, path = _module(
        tmp_path,
        ROWS,
        """
        def softmax(x):
            out = torch.empty_like(x)
            launch(x, out, min(x.shape[0], 256), x.shape[1])
            return out
        """,
    )
    out = provenance.witnessed_call(path, mod.softmax, torch.randn(300, 3), interpret=False)
    assert out.shape == (300, 3)
