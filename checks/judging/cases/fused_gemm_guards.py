"""Guard checks for I3, GEMM with bias and ReLU: the learner's own kernel did the work,
with several tiles in every dimension, and in the value ranges where fp16 and bf16
differ (see checks.judging.cases.guards)."""

from typing import Any

import torch

from checks.judging.case import Context, check, collect
from checks.judging.cases.fused_gemm import BF16, BF16_REASON, FP16, gemm_oracle, run_gemm
from checks.judging.cases.guards import FP16_MAX, assert_close_relative, own_kernel_check
from checks.judging.tensors import assert_close

SECTION_TILES = "Who owns which tile"
SECTION_EPILOGUE = "The epilogue: one rounding"
SECTION_K = "The K loop and its masks"


@own_kernel_check("the output is written by a @triton.jit kernel of your file")
def own_kernel(mod, ctx):
    # One small call, so the first verdict comes at once; every other check's calls
    # are witnessed the same way.
    run_gemm(ctx, mod, 20, 24, 16)


@check(
    "many-tiles",
    "many tiles in every dimension, with tails (interpreted 681x330x24, 258 tiles; GPU 4100x4000x72)",
    why="a grid capped at a constant number of programs, or a grouped order that assumes "
    "few tiles, leaves tiles unwritten; tails in M, N and K at once catch a mask "
    "missing from any one of them",
    section=SECTION_TILES,
    cost=4,
    properties=("many-rows", "ragged"),
)
def many_tiles(mod: Any, ctx: Context) -> None:
    for M, N, K, options in many_tiles_shapes(ctx.interpret):
        run_gemm(ctx, mod, M, N, K, **options)


def many_tiles_shapes(interpret: bool) -> list[tuple[int, int, int, dict]]:
    """(M, N, K, options) of each call of many-tiles.

    The interpreter runs every program in Python at a cost per program and per K step,
    whatever its tile holds: just past 256 programs (43 x 6 tiles of the smallest tile_m,
    the last group of 4 short), tails in M and N, and K = 24 that is all tail in one K
    step of 32 (a second step adds a fifth of the time; long-k and ragged-tails step K);
    the store record names any tile never written."""
    if interpret:
        return [(681, 330, 24, dict(group_m=4, tile_m=16))]
    return [(4100, 4000, 72, dict(group_m=8, tile_m=64)), (4100, 4000, 72, dict(group_m=1, tile_m=16))]


@check(
    "fp16-partial-sums",
    "fp16 partial sums past 65,504 that cancel to a small answer",
    why=(
        "products of 250 x 250 summed over 32 steps reach 2,000,000 before the second half of K "
        "cancels them: only an fp32 accumulator holds the partial sums"
    ),
    section=SECTION_K,
    cost=2,
    properties=("large-magnitudes",),
)
def fp16_partial_sums(mod, ctx):
    M, N, K = 24, 20, 64
    sign = torch.where(torch.arange(K) < K // 2, 1.0, -1.0).to(torch.float64)
    a = torch.full((M, K), 250.0, dtype=torch.float64)
    b = 250.0 * sign[:, None].expand(K, N).clone()
    b[K // 2 - 1, :] += 2.0  # leaves 500 after the cancellation
    bias = torch.linspace(-1.0, 1.0, N, dtype=torch.float64)
    a, b, bias = (t.to(FP16).to(ctx.device) for t in (a, b, bias))
    got = mod.matmul_bias_relu(a, b, bias)
    assert_close(got, gemm_oracle(a, b, bias), dtype=FP16, name="24x20x64 fp16, partial sums of 2e6")


@check(
    "bf16-beyond-fp16",
    "bf16 outputs past fp16's largest value, and outputs below 6e-5",
    why=(
        "bf16 reaches 3e38 and keeps 8 bits far below 6.1e-5, fp16 does neither: every step up to "
        "the store must keep bf16's range"
    ),
    section=SECTION_EPILOGUE,
    interpreter=False,
    interpreter_reason=BF16_REASON,
    cost=2,
    properties=("bf16", "large-magnitudes"),
)
def bf16_beyond_fp16(mod, ctx):
    M, N, K = 40, 48, 32
    g = ctx.torch_generator()
    a = torch.rand(M, K, generator=g, dtype=torch.float64) * 100 + 20
    b = torch.rand(K, N, generator=g, dtype=torch.float64) * 100 + 20
    bias = torch.rand(N, generator=g, dtype=torch.float64) * 1000
    a, b, bias = (t.to(BF16).to(ctx.device) for t in (a, b, bias))
    got = mod.matmul_bias_relu(a, b, bias)
    expected = gemm_oracle(a, b, bias)
    if float(expected.min()) <= FP16_MAX:
        raise RuntimeError("the large-output operands do not exceed fp16's range")
    assert_close(got, expected, dtype=BF16, name=f"{M}x{N}x{K} bf16, outputs 3e4..3e5")
    small_a, small_b = (t * 2.0**-16 for t in (a, b))  # outputs about 3e-6 to 1e-4
    small_bias = torch.zeros_like(bias)
    got = mod.matmul_bias_relu(small_a, small_b, small_bias)
    assert_close_relative(
        got,
        gemm_oracle(small_a, small_b, small_bias),
        dtype=BF16,
        name=f"{M}x{N}x{K} bf16, outputs below 6e-5, relative",
        device=ctx.device,
    )


CASES = collect(globals())
