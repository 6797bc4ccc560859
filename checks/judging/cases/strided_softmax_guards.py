"""Guard checks for I1, strided softmax: the learner's own kernel did the work, at
hundreds or tens of thousands of row programs, and in the value ranges where fp16 and
bf16 differ (see checks.judging.cases.guards)."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.guards import beyond_fp16, fp16_fine_steps, many, own_kernel_check
from checks.judging.cases.strided_softmax import (
    SECTION_EDGES,
    SECTION_NUMERICS,
    expect_softmax,
    transposed_input,
)
from checks.judging.tensors import randn


@own_kernel_check("the output is written by a @triton.jit kernel of your file")
def own_kernel(mod, ctx):
    # One small call, so the first verdict comes at once.  Every call of every other
    # check is witnessed the same way (other layouts, dtypes and paths included).
    expect_softmax(mod, randn((5, 33), ctx=ctx), "x")
    # fp16 too: a cast such as .float() before the launch is a no-op on fp32 inputs
    expect_softmax(mod, randn((5, 33), ctx=ctx, dtype=torch.float16), "x (fp16)")


@check(
    "many-rows",
    "more row programs than a grid could be capped at (300 interpreted; 70,000 on a GPU)",
    why="a grid capped at a constant (min(rows, 256), or a fixed persistent count that "
    "forgets its loop) leaves the later rows unwritten; 70,000 rows also pass 65,535, "
    "the limit of a CUDA grid's second and third axes",
    section=SECTION_EDGES,
    cost=3,
    properties=("many-rows", "ragged"),
)
def many_rows(mod, ctx):
    rows = many(ctx)
    expect_softmax(mod, randn((rows, 3), ctx=ctx), "x")
    expect_softmax(mod, transposed_input(rows, 5, ctx=ctx), "x.t()")


@check(
    "bf16-beyond-fp16",
    "bf16 logits near +/-70,000, past fp16's largest value (65,504)",
    why=(
        "bf16 reaches 3e38 while fp16 stops at 65,504: every intermediate must hold these logits "
        "(fp32), or the row becomes NaN"
    ),
    section=SECTION_NUMERICS,
    cost=2,
    properties=("bf16", "large-magnitudes", "ragged"),
)
def bf16_beyond_fp16(mod, ctx):
    x = beyond_fp16((6, 40), ctx=ctx)
    expect_softmax(mod, x, "x")
    expect_softmax(mod, -x, "-x")
    expect_softmax(mod, beyond_fp16((40, 6), ctx=ctx).t(), "x.t()")


@check(
    "fp16-fine-steps",
    "fp16 logits near 1,500 one apart (bf16 cannot tell them apart)",
    why=(
        "fp16 keeps 11 bits of mantissa, bf16 8: logits one apart stay apart only if every "
        "intermediate keeps at least fp16's precision"
    ),
    section=SECTION_NUMERICS,
    cost=2,
    properties=("fp16", "large-magnitudes", "ragged"),
)
def fp16_fine(mod, ctx):
    expect_softmax(mod, fp16_fine_steps((6, 50), ctx=ctx), "x")
    expect_softmax(mod, fp16_fine_steps((50, 6), ctx=ctx).t(), "x.t()")


CASES = collect(globals())
