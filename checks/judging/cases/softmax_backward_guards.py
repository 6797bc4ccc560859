"""Guard checks for I2, softmax backward: the learner's own kernel did the work, at
hundreds or tens of thousands of row programs, and in the value ranges where fp16 and
bf16 differ (see checks.judging.cases.guards)."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.guards import (
    FP16_SMALLEST_NORMAL,
    assert_close_relative,
    beyond_fp16,
    fp16_fine_steps,
    many,
    own_kernel_check,
)
from checks.judging.cases.softmax_backward import (
    backward_inputs,
    call_backward,
    draw_case,
    expect_backward,
    vjp64,
)

SECTION_PRECISION = "Precision: one fp32 reduction, one cast"
SECTION_TILES = "Tile ownership and addresses"


@own_kernel_check("dx is written by a @triton.jit kernel of your file")
def own_kernel(mod, ctx):
    # One small call, so the first verdict comes at once; every other check's calls
    # are witnessed the same way.
    y, g = backward_inputs(ctx, (4, 33), torch.float32)
    expect_backward(mod, ctx, y, g, "backward(y, g) fp32 4x33")
    # fp16 too: a cast such as .float() before the launch is a no-op on fp32 inputs
    y, g = backward_inputs(ctx, (4, 33), torch.float16)
    expect_backward(mod, ctx, y, g, "backward(y, g) fp16 4x33")


@check(
    "many-rows",
    "more row programs than a grid could be capped at (300x129 interpreted; 70,000x3 and 4,000x513 on a GPU)",
    why="a grid capped at a constant (min(rows, 256), a fixed count without a loop) leaves "
    "the later rows unwritten; 70,000 rows also pass 65,535, the limit of a CUDA "
    "grid's second and third axes",
    section=SECTION_TILES,
    cost=3,
    properties=("many-rows",),
)
def many_rows(mod, ctx):
    # Narrow rows (a kernel may pack several per program) and wider rows (fewer per
    # program), so the grid is large whichever design the kernel chose.  Interpreted,
    # 300x129 is 75 programs of the reference's four rows each (seconds, not minutes).
    if ctx.device == "cuda":
        y, g = backward_inputs(ctx, (many(ctx), 3), torch.float32)
        expect_backward(mod, ctx, y, g, f"backward {many(ctx)}x3 fp32")
    rows, cols = (4000, 513) if ctx.device == "cuda" else (many(ctx), 129)
    y, g = backward_inputs(ctx, (rows, cols), torch.float32)
    expect_backward(mod, ctx, y, g, f"backward {rows}x{cols} fp32")


@check(
    "bf16-beyond-fp16",
    "bf16 gradients near 70,000 and probabilities below 6e-5",
    why=(
        "bf16 reaches 3e38 and keeps 8 bits down to 1e-38, while fp16 stops at 65,504 and loses "
        "bits below 6.1e-5: every step must keep bf16's range, the arithmetic in fp32"
    ),
    section=SECTION_PRECISION,
    cost=2,
    properties=("bf16", "large-magnitudes"),
)
def bf16_beyond_fp16(mod, ctx):
    g = beyond_fp16((6, 40), ctx=ctx)
    g = g * torch.where(torch.arange(40, device=g.device) % 2 == 0, 1.0, -1.0).to(g.dtype)
    y, _ = draw_case(ctx, (6, 40), logit_scale=6.0)
    y = y.to(torch.bfloat16).to(ctx.device)
    expect_backward(mod, ctx, y, g, "backward(y, g ~ +/-70,000) bf16 6x40")
    # probabilities from 1e-7 to 6e-6 (below fp16's smallest normal), compared relatively
    tiny = torch.linspace(1e-7, 0.1 * FP16_SMALLEST_NORMAL, 40, dtype=torch.float64)
    y = tiny.repeat(3, 1).to(torch.bfloat16).to(ctx.device)
    _, g = backward_inputs(ctx, (3, 40), torch.bfloat16, g_scale=3.0, g_offset=5.0)
    assert_close_relative(
        call_backward(mod, y, g),
        vjp64(y, g),
        dtype=torch.bfloat16,
        name="backward(y below 6e-5, g ~ 5) bf16 3x40, relative",
        device=ctx.device,
    )


@check(
    "fp16-fine-steps",
    "fp16 gradients near 1,500 one apart (bf16 cannot tell them apart)",
    why=(
        "fp16 keeps 11 bits of mantissa, bf16 8: gradients one apart stay apart only if every "
        "intermediate keeps at least fp16's precision"
    ),
    section=SECTION_PRECISION,
    cost=2,
    properties=("fp16", "large-magnitudes"),
)
def fp16_fine(mod, ctx):
    y, _ = backward_inputs(ctx, (5, 48), torch.float16)
    expect_backward(mod, ctx, y, fp16_fine_steps((5, 48), ctx=ctx), "backward(y, g ~ 1500) fp16 5x48")


CASES = collect(globals())
