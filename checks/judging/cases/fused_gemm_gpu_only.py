"""The checks of fused_gemm that need a CUDA GPU (bf16 tl.dot, CUDA streams): skipped,
with the reason, in Triton's interpreter.  The engine finds this module beside
checks/judging/cases/fused_gemm.py."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.fused_gemm import (
    BF16,
    BF16_REASON,
    GROUPS,
    TILES,
    check_exact_epilogue,
    expect_matmul,
    gemm_operands,
    run_gemm,
)
from checks.judging.tensors import keep_stream_busy


@check(
    "bf16-basic",
    "bf16: ragged shapes and every tile_m",
    why="bf16 has 8 significant bits: a tolerance or cast tuned only on fp16 hides bugs",
    section="The operation and its contract",
    cost=3,
    interpreter=False,
    interpreter_reason=BF16_REASON,
    properties=("bf16", "ragged"),
)
def bf16_basic(mod, ctx):
    ctx.require_gpu(BF16_REASON)
    for M, N, K in ((127, 65, 33), (1, 1, 1), (33, 17, 70), (5, 40, 0)):
        run_gemm(ctx, mod, M, N, K, BF16)
    # A bf16 bias beyond fp16's range (65,504): a bias cast through fp16 turns it into inf.
    a, b, bias = gemm_operands(ctx, 33, 17, 70, BF16, bias_scale=1.0e5)
    expect_matmul(ctx, mod.matmul_bias_relu(a, b, bias), a, b, bias, "33x17x70 bf16, bias of about 1e5")
    # Every tile_m in bf16 (its dot takes another instruction shape per tile); group_m only
    # orders the programs, whatever the dtype: options-sweep crosses it with every tile in
    # fp16, and here each group value comes once (each pair is one more kernel to compile).
    for tile_m, group_m in zip(TILES, GROUPS):
        run_gemm(ctx, mod, 91, 150, 24, BF16, tile_m=tile_m, group_m=group_m)


@check(
    "bf16-epilogue-one-rounding",
    "bf16: bias added in fp32, ONE cast at the end (exact)",
    why=(
        "the answer here is exact only with one rounding: the bias added to the fp32 accumulator, "
        "the sum cast once to bf16"
    ),
    section="The epilogue: one rounding",
    cost=1,
    interpreter=False,
    interpreter_reason=BF16_REASON,
    properties=("bf16",),
)
def bf16_epilogue_one_rounding(mod, ctx):
    ctx.require_gpu(BF16_REASON)
    check_exact_epilogue(ctx, mod, BF16)


@check(
    "bf16-wide-tiles",
    "bf16: 1024x768x1000 with the widest tile, group 8, and a partial group",
    why="the wide Hopper tile (wgmma) path must mask the K tail and the last super-row too",
    section="Measure it",
    cost=4,
    interpreter=False,
    interpreter_reason=BF16_REASON,
    properties=("bf16",),
)
def bf16_wide_tiles(mod, ctx):
    ctx.require_gpu(BF16_REASON)
    tile_m = 64
    try:
        mod.matmul_bias_relu(*gemm_operands(ctx, 1, 1, 1, BF16), tile_m=128)
        tile_m = 128
    except (TypeError, ValueError):
        pass
    run_gemm(ctx, mod, 1024, 768, 1000, BF16, tile_m=tile_m, group_m=8)
    run_gemm(
        ctx, mod, 1100, 700, 520, BF16, tile_m=tile_m, group_m=4
    )  # 9 tile rows of 128: a short last group


@check(
    "cuda-stream",
    "runs on the caller's current (non-default) CUDA stream",
    why="a launch on the default stream races with inputs still being produced on the caller's stream",
    section="The wrapper",
    cost=2,
    interpreter=False,
    interpreter_reason="needs a CUDA GPU: the interpreter has no streams",
)
def cuda_stream(mod, ctx):
    ctx.require_gpu("needs a CUDA GPU: the interpreter has no streams")
    M, N, K = 256, 192, 320
    a0, b0, bias0 = gemm_operands(ctx, M, N, K)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        keep_stream_busy()
        a, b, bias = a0 * 1, b0 * 1, bias0 * 1  # produced on the side stream, after the busy work
        got = mod.matmul_bias_relu(a, b, bias)
    side.synchronize()  # wait for the side stream only
    expect_matmul(ctx, got, a0, b0, bias0, "inputs produced and consumed on a side stream")


CASES = collect(globals())
