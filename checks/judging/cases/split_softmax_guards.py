"""Guard checks for A2, wide-row split softmax: the learner's own kernels did the work,
with many programs on both grid axes (rows and chunks), and in the value ranges where
fp16 and bf16 differ (see checks.judging.cases.guards)."""

from typing import Any

import torch

from checks.judging.case import CheckFailed, Context, check, collect
from checks.judging.cases.guards import MANY_PROGRAMS_GPU, beyond_fp16, fp16_fine_steps, own_kernel_check
from checks.judging.cases.split_softmax import expect_split_softmax
from checks.judging.tensors import randn

SECTION_TILES = "Tile ownership and masks"
SECTION_NUMERICS = "Kernel 2: the rescaled merge"
SECTION_STATS = "Kernel 1: partial statistics"


@own_kernel_check("the output is written by @triton.jit kernels of your file")
def own_kernel(mod, ctx):
    expect_split_softmax(mod, randn((2, 600), ctx=ctx), ctx, chunk_size=256)  # all three kernels
    # fp16 too: a cast such as .float() before the launch is a no-op on fp32 inputs
    expect_split_softmax(mod, randn((2, 600), ctx=ctx, dtype=torch.float16), ctx, chunk_size=256)


@check(
    "many-programs",
    "many programs on both grid axes: hundreds of rows, and hundreds of chunks in one row",
    why="a grid capped at a constant on either axis (rows or chunks) leaves rows or chunks "
    "unwritten and merges too few partial results; on a GPU 70,000 rows also pass "
    "65,535, the limit of a CUDA grid's second and third axes",
    section=SECTION_TILES,
    cost=4,
    properties=("many-rows",),
)
def many_programs(mod: Any, ctx: Context) -> None:
    for rows, cols, chunk in many_programs_shapes(ctx.interpret):
        expect_split_softmax(mod, randn((rows, cols), ctx=ctx), ctx, chunk_size=chunk)


def many_programs_shapes(interpret: bool) -> list[tuple[int, int, int]]:
    """(rows, columns, chunk_size) of each call of many-programs.

    The interpreter runs one program at a time, at a cost per program; the store record
    names every element a missing program leaves unwritten, so one program past a cap of
    256 on each axis shows it: 257 rows (3 programs each), then one row of 257 chunks."""
    if interpret:
        return [(257, 40, 256), (1, 256 * 256 + 7, 256)]
    return [(MANY_PROGRAMS_GPU, 40, 256), (3, 131072, 256)]  # 512 chunks


@check(
    "bf16-beyond-fp16",
    "bf16 logits near +/-70,000, past fp16's largest value (65,504)",
    why=(
        "bf16 reaches 3e38 while fp16 stops at 65,504: every intermediate (the loads, the "
        "scratch) must hold these logits, or the row becomes NaN"
    ),
    section=SECTION_NUMERICS,
    cost=2,
    properties=("bf16", "large-magnitudes"),
)
def bf16_beyond_fp16(mod, ctx):
    x = beyond_fp16((3, 1300), ctx=ctx)
    expect_split_softmax(mod, x, ctx, chunk_size=256)
    expect_split_softmax(mod, -x, ctx, chunk_size=1024)


@check(
    "fp16-fine-steps",
    "fp16 logits near 1,500 one apart (bf16 cannot tell them apart)",
    why=(
        "fp16 keeps 11 bits of mantissa, bf16 8: logits one apart stay apart only if every "
        "intermediate keeps at least fp16's precision"
    ),
    section=SECTION_NUMERICS,
    cost=2,
    properties=("fp16", "large-magnitudes"),
)
def fp16_fine(mod, ctx):
    expect_split_softmax(mod, fp16_fine_steps((3, 1300), ctx=ctx), ctx, chunk_size=256)


@check(
    "fp32-statistics",
    "fp32 logits near 1000 whose chunk maxima fall between fp16 values, and near +/-70,000",
    why="kernel 1's (m, l) pairs must be stored in fp32: an fp16 m near 1000 moves by up to "
    "0.25 (fp16's spacing there is 0.5), so the merge weighs the chunk by up to exp(0.25) "
    "wrongly, and an m past 65,504 becomes inf",
    section=SECTION_STATS,
    cost=2,
    properties=("large-magnitudes",),
)
def fp32_statistics(mod, ctx):
    # Each 256-column chunk's logits sit a different fraction above 1000: between fp16's
    # values 1000 and 1000.5, so a rounded maximum moves the chunk against the others.
    g = ctx.torch_generator()
    rows, cols, chunk = 2, 1300, 256
    noise = torch.rand((rows, cols), generator=g, dtype=torch.float64) - 1.0  # in [-1, 0)
    lift = 0.05 + 0.4 * torch.rand((rows, cols // chunk + 1), generator=g, dtype=torch.float64)
    x = 1000.0 + noise + lift.repeat_interleave(chunk, dim=1)[:, :cols]
    x = x.to(torch.float32).to(ctx.device)
    hint = "store kernel 1's (m, l) pairs in fp32 scratch: these maxima are not fp16 values"
    for sign, offset in ((1.0, 0.0), (1.0, 69_000.0), (-1.0, -69_000.0)):
        try:
            expect_split_softmax(mod, sign * (x + offset), ctx, chunk_size=chunk)
        except CheckFailed as e:
            raise CheckFailed(f"{e.message}; {hint}", e.details) from None


CASES = collect(globals())
