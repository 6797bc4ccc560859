"""The argument checks of fused_gemm's contract: what the wrapper must reject (TypeError or
ValueError naming the argument) or accept, before any kernel runs.  The engine
finds this module beside checks/judging/cases/fused_gemm.py."""

from typing import Any

import torch

from checks.judging.case import check, collect
from checks.judging.cases.fused_gemm import (
    BF16,
    FP16,
    expect_matmul,
    expect_rejection,
    gemm_operands,
    half_tensor,
)
from checks.judging.tensors import expect_rejects


@check(
    "no-grad-accepted",
    "inputs that require grad are accepted under torch.no_grad()",
    why="the rejection is about autograd being on, not about the flag itself",
    section="The wrapper",
    cost=1,
)
def no_grad_accepted(mod, ctx):
    a, b, bias = gemm_operands(ctx, 10, 20, 8)
    a.requires_grad_(True)
    with torch.no_grad():
        got = mod.matmul_bias_relu(a, b, bias)
    expect_matmul(ctx, got, a, b, bias, "a.requires_grad under torch.no_grad()")


@check(
    "rejects-dtype",
    "fp32, integer, mixed dtypes and non-tensors raise TypeError naming the argument",
    why="the kernel is fp16/bf16 only; an fp32 input would silently change the rounding contract",
    section="The wrapper",
    cost=1,
)
def rejects_dtype(mod, ctx):
    f = mod.matmul_bias_relu
    a, b, bias = half_tensor(ctx, 4, 8), half_tensor(ctx, 8, 6), half_tensor(ctx, 6)
    expect_rejection(lambda: f(a.float(), b.float(), bias.float()), TypeError, "a", "fp32 inputs")
    expect_rejection(lambda: f(a.to(torch.int32), b, bias), TypeError, "a", "an int32 a")
    expect_rejection(lambda: f(a, b.to(BF16), bias), TypeError, "b", "fp16 a with bf16 b")
    expect_rejection(lambda: f(a, b, bias.float()), TypeError, "bias", "fp16 a and b with fp32 bias")
    expect_rejection(lambda: f(a, b, bias.to(BF16)), TypeError, "bias", "fp16 a and b with bf16 bias")
    expect_rejection(lambda: f(a.tolist(), b, bias), TypeError, "a", "a nested list for a")
    expect_rejection(lambda: f(a, b, None), TypeError, "bias", "bias=None")


@check(
    "rejects-shape",
    "wrong ranks, mismatched K and a wrong bias length raise ValueError",
    why="a shape mismatch that reaches the kernel reads past the end of a tensor",
    section="The wrapper",
    cost=1,
)
def rejects_shape(mod, ctx):
    f = mod.matmul_bias_relu
    a, b, bias = half_tensor(ctx, 4, 8), half_tensor(ctx, 8, 6), half_tensor(ctx, 6)
    expect_rejection(lambda: f(half_tensor(ctx, 8), b, bias), ValueError, "a", "a 1D a")
    expect_rejection(lambda: f(half_tensor(ctx, 2, 4, 8), b, bias), ValueError, "a", "a 3D a")
    expect_rejection(
        lambda: f(a, half_tensor(ctx, 9, 6), bias), ValueError, "b", "b with 9 rows for a with K=8"
    )
    expect_rejection(
        lambda: f(a, half_tensor(ctx, 7, 6), bias), ValueError, "b", "b with 7 rows for a with K=8"
    )
    expect_rejection(lambda: f(a, b, half_tensor(ctx, 7)), ValueError, "bias", "bias of length 7 for N=6")
    expect_rejection(lambda: f(a, b, half_tensor(ctx, 1, 6)), ValueError, "bias", "a 2D bias [1, 6]")
    expect_rejection(
        lambda: f(a, b, half_tensor(ctx, 1)), ValueError, "bias", "a one-element bias (no broadcasting)"
    )


@check(
    "rejects-options",
    "group_m outside 1/4/8 or tile_m outside 16/32/64 is rejected",
    why="an unsupported block size compiles a kernel the contract never promised (or tl.dot cannot build)",
    section="The wrapper",
    cost=1,
)
def rejects_options(mod, ctx):
    f = mod.matmul_bias_relu
    a, b, bias = half_tensor(ctx, 4, 8), half_tensor(ctx, 8, 6), half_tensor(ctx, 6)
    for g in (0, 2, 3, 16, -4):
        expect_rejection(lambda: f(a, b, bias, group_m=g), ValueError, "group_m", f"group_m={g}")
    for t in (0, 8, 24, 256, 1024):
        expect_rejection(lambda: f(a, b, bias, tile_m=t), ValueError, "tile_m", f"tile_m={t}")
    for bad in (4.0, "4", None, True):
        expect_rejection(lambda: f(a, b, bias, group_m=bad), TypeError, "group_m", f"group_m={bad!r}")
    for bad in (32.0, "32", None, False):
        expect_rejection(lambda: f(a, b, bias, tile_m=bad), TypeError, "tile_m", f"tile_m={bad!r}")


@check(
    "layout-rejected",
    "transposes, column slices and expanded (stride-0) views raise ValueError",
    why="the kernel assumes contiguous rows; a strided view would be read as the wrong elements",
    section="The wrapper",
    cost=1,
)
def layout_rejected(mod, ctx):
    f = mod.matmul_bias_relu
    a, b, bias = half_tensor(ctx, 4, 8), half_tensor(ctx, 8, 6), half_tensor(ctx, 6)
    expect_rejection(lambda: f(half_tensor(ctx, 8, 4).t(), b, bias), ValueError, "a", "a transposed a")
    expect_rejection(
        lambda: f(half_tensor(ctx, 4, 10)[:, 1:9], b, bias),
        ValueError,
        "a",
        "a column slice of a (offset pointer, row stride 10)",
    )
    expect_rejection(
        lambda: f(a, half_tensor(ctx, 8, 12)[:, ::2], bias), ValueError, "b", "a b with column stride 2"
    )
    expect_rejection(lambda: f(a, half_tensor(ctx, 6, 8).t(), bias), ValueError, "b", "a transposed b")
    expect_rejection(
        lambda: f(a, b, half_tensor(ctx, 1).expand(6)), ValueError, "bias", "a bias expanded from one value"
    )
    expect_rejection(lambda: f(a, b, half_tensor(ctx, 12)[::2]), ValueError, "bias", "a bias with stride 2")


@check(
    "rejects-device",
    "a tensor on another device raises ValueError naming it",
    why="a pointer from another device is not addressable by the kernel",
    section="The wrapper",
    cost=1,
)
def rejects_device(mod, ctx):
    f = mod.matmul_bias_relu
    a, b, bias = half_tensor(ctx, 4, 8), half_tensor(ctx, 8, 6), half_tensor(ctx, 6)
    meta: dict[str, Any] = dict(dtype=FP16, device="meta")
    expect_rejection(lambda: f(torch.empty(4, 8, **meta), b, bias), ValueError, "a", "a on the meta device")
    expect_rejection(lambda: f(a, torch.empty(8, 6, **meta), bias), ValueError, "b", "b on the meta device")
    expect_rejection(lambda: f(a, b, torch.empty(6, **meta)), ValueError, "bias", "bias on the meta device")
    if ctx.device == "cuda":
        expect_rejection(lambda: f(a, b.cpu(), bias), ValueError, "b", "b on the CPU, a on the GPU")
        expect_rejection(lambda: f(a, b, bias.cpu()), ValueError, "bias", "bias on the CPU, a on the GPU")


@check(
    "rejects-requires-grad",
    "inputs that require grad raise ValueError while autograd is on",
    why="these kernels register no backward: a silent result would break training code later",
    section="The wrapper",
    cost=1,
)
def rejects_requires_grad(mod, ctx):
    f = mod.matmul_bias_relu
    a, b, bias = half_tensor(ctx, 4, 8), half_tensor(ctx, 8, 6), half_tensor(ctx, 6)
    with torch.enable_grad():
        expect_rejection(
            lambda: f(a.clone().requires_grad_(True), b, bias), ValueError, "a", "a.requires_grad"
        )
        expect_rejection(
            lambda: f(a, b, bias.clone().requires_grad_(True)), ValueError, "bias", "bias.requires_grad"
        )


@check(
    "output-too-large",
    "an output past signed 32-bit indexing (46341 x 46341, K=0) is rejected",
    why="offsets past 2^31 - 1 wrap negative in int32 pointer arithmetic and write outside the output",
    section="The wrapper",
    cost=9,
    interpreter=False,
    interpreter_reason="without the size check this would run ~10^6 interpreted programs over a 4 GiB output",
)
def output_too_large(mod, ctx):
    n = 46341  # 46341^2 = 2^31 + 4281 elements
    a, b, bias = half_tensor(ctx, n, 0), half_tensor(ctx, 0, n), half_tensor(ctx, n)
    expect_rejects(
        lambda: mod.matmul_bias_relu(a, b, bias),
        (ValueError,),
        ["a:", "b:", "a, b", "output", "32-bit", "int32"],
        "a 46341 x 46341 output",
    )


CASES = collect(globals())
