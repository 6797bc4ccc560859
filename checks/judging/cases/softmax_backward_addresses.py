"""I2's checks of addresses over physical layouts: transposed, sliced (offset start, row and column steps)
and broadcast (zero-stride) inputs.  A kernel that assumes contiguous rows reads the wrong
elements of each."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.softmax_backward import backward_inputs, expect_backward


def _parked(values, rows, cols, *, row_step, col_step, pad, device):
    """A strided view with a nonzero storage offset whose elements equal ``values``; the
    rest of the buffer holds NaN, so reading outside the view poisons the answer."""
    buf = torch.full(
        (pad + rows * row_step, pad + cols * col_step), float("nan"), dtype=values.dtype, device=device
    )
    view = buf[pad::row_step, pad::col_step][:rows, :cols]
    view.copy_(values)
    return view


# --- the worked answer and the invariants -----------------------------------------------


# --- physical layouts ----------------------------------------------------------------------


@check(
    "transposed-inputs",
    "y transposed with g contiguous, g transposed with y contiguous, both",
    why=(
        "a transpose's column stride is not 1: each load uses its own tensor's strides, and "
        "the store the fresh output's"
    ),
    section="Tile ownership and addresses",
    cost=3,
    properties=("strided",),
)
def transposed_inputs(mod, ctx):
    rows, cols = 6, 45
    y, g = backward_inputs(ctx, (rows, cols), torch.float32)
    y_t = y.t().contiguous().t()  # same values, strides (1, rows)
    g_t = g.t().contiguous().t()
    for yy, gg, what in (
        (y_t, g, "y transposed, g contiguous"),
        (y, g_t, "y contiguous, g transposed"),
        (y_t, g_t, "both transposed"),
    ):
        expect_backward(
            mod, ctx, yy, gg, f"backward ({what}; y strides {yy.stride()}, g strides {gg.stride()})"
        )


@check(
    "strided-slices",
    "sliced views with an offset start and row/column steps",
    why="a view starts inside its storage and may skip columns: both strides and the offset pointer matter",
    section="Tile ownership and addresses",
    cost=3,
    properties=("strided",),
)
def strided_slices(mod, ctx):
    rows, cols = 5, 70
    y, g = backward_inputs(ctx, (rows, cols), torch.float16)
    y_v = _parked(y, rows, cols, row_step=2, col_step=1, pad=3, device=ctx.device)
    g_v = _parked(g, rows, cols, row_step=1, col_step=2, pad=1, device=ctx.device)
    expect_backward(
        mod, ctx, y_v, g_v, f"backward (y strides {y_v.stride()}, g strides {g_v.stride()}, both offset)"
    )
    y_w = _parked(y, rows, cols, row_step=1, col_step=3, pad=2, device=ctx.device)
    g_w = _parked(g, rows, cols, row_step=3, col_step=1, pad=5, device=ctx.device)
    expect_backward(
        mod, ctx, y_w, g_w, f"backward (y strides {y_w.stride()}, g strides {g_w.stride()}, both offset)"
    )


@check(
    "broadcast-inputs",
    "zero-stride inputs from expand: g shared by all rows, g per row, y shared",
    why="a stride of 0 is legal: every row reads the same memory, and nothing may be written there",
    section="Tile ownership and addresses",
    cost=3,
    properties=("strided",),
)
def broadcast_inputs(mod, ctx):
    rows, cols = 7, 33
    y, g = backward_inputs(ctx, (rows, cols), torch.float32)
    g_row = g[:1].clone().expand(rows, cols)  # strides (0, 1)
    g_col = g[:, :1].clone().expand(rows, cols)  # strides (1, 0): constant within a row
    y_row = y[:1].clone().expand(rows, cols)  # strides (0, 1)
    expect_backward(mod, ctx, y, g_row, f"backward (g strides {g_row.stride()})")
    got = expect_backward(mod, ctx, y, g_col, f"backward (g strides {g_col.stride()})")
    expect_backward(mod, ctx, y_row, g, f"backward (y strides {y_row.stride()})")
    return f"per-row constant g gives max |dx| = {float(got.detach().abs().max()):.2g}"


CASES = collect(globals())
