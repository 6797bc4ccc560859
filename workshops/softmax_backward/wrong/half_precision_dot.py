"""WRONG on purpose: the row reduction runs in the input precision (fp16/bf16).

The loads are not converted to fp32, and tl.sum keeps the dtype of its input, so
for half inputs sum(y * g) is accumulated in fp16 or bf16.  When g carries a large
common offset (g = 1000 + noise) the offset cancels in g - dot, and the rounding of
dot near 1000 (0.5 in fp16, 4 in bf16) is as large as the whole answer.  fp32
inputs are unaffected, which is why it survives a fp32-only test.
Caught by large-gradient-offset.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor, same_device, same_dtype

MAX_COLS = 8192  # a whole row of y and g fits in one program's registers
NUM_WARPS = (4, 8)
TILE_ELEMENTS = 1024  # narrow rows: pack rows into a tile of about this many elements
MAX_ROWS_PER_PROGRAM = 16


@triton.jit
def _softmax_backward_kernel(
    y_ptr,
    g_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_stride_row,
    y_stride_col,  # y's own strides (any nonnegative values)
    g_stride_row,
    g_stride_col,  # grad_output's own strides, independent of y's
    BLOCK_COLS: tl.constexpr,  # next power of two >= n_cols: the whole row
    ROWS_PER_PROGRAM: tl.constexpr,  # > 1 only for narrow rows
):
    pid = tl.program_id(0)
    rows = pid * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)  # [R]
    cols = tl.arange(0, BLOCK_COLS)  # [C]
    row_ok = rows < n_rows
    col_ok = cols < n_cols
    mask = row_ok[:, None] & col_ok[None, :]  # [R, C]

    # Each input is addressed with its own strides: y may be a transpose while g is a
    # broadcast (stride 0), and neither says anything about the other.
    y_offsets = rows[:, None] * y_stride_row + cols[None, :] * y_stride_col
    g_offsets = rows[:, None] * g_stride_row + cols[None, :] * g_stride_col
    # Masked lanes read 0, so they add nothing to the row sum and produce dx = 0.
    y = tl.load(y_ptr + y_offsets, mask=mask, other=0.0)
    g = tl.load(g_ptr + g_offsets, mask=mask, other=0.0)

    # The one reduction: the probability-weighted mean of the upstream gradient.
    dot = tl.sum(y * g, axis=1)  # [R]
    dx = y * (g - dot[:, None])

    # The output is a fresh contiguous [n_rows, n_cols] tensor: its row stride is n_cols.
    dx_offsets = rows[:, None] * n_cols + cols[None, :]
    tl.store(dx_ptr + dx_offsets, dx.to(dx_ptr.dtype.element_ty), mask=mask)


def backward(y, grad_output, *, num_warps=4):
    """dL/dx of softmax along the last dim, from the softmax output ``y`` and
    ``grad_output`` = dL/dy.  Returns a fresh contiguous tensor of y's shape and dtype.
    No autograd graph is recorded."""
    # --- metadata validation (never scans values) ---
    check_tensor(y, "y", ndim=2)
    check_tensor(grad_output, "grad_output", ndim=2)
    same_dtype("grad_output", grad_output, "y", y)
    same_device("grad_output", grad_output, "y", y)
    if grad_output.shape != y.shape:
        raise ValueError(f"grad_output: shape {tuple(grad_output.shape)} differs from y's {tuple(y.shape)}")
    check_option(num_warps, "num_warps", NUM_WARPS)
    n_rows, n_cols = y.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"y: {n_cols} columns is outside the supported 1..{MAX_COLS}")

    # --- launch ---
    dx = torch.empty((n_rows, n_cols), dtype=y.dtype, device=y.device)
    if n_rows == 0:
        return dx  # nothing to compute (a grid of zero programs launches nothing)
    block_cols = triton.next_power_of_2(n_cols)
    # Narrow rows leave most lanes of a program idle; pack several rows per program so
    # each one still moves a tile of about TILE_ELEMENTS elements.
    rows_per_program = max(1, min(MAX_ROWS_PER_PROGRAM, TILE_ELEMENTS // block_cols))
    grid = (triton.cdiv(n_rows, rows_per_program),)
    _softmax_backward_kernel[grid](
        y,
        grad_output,
        dx,
        n_rows,
        n_cols,
        y.stride(0),
        y.stride(1),
        grad_output.stride(0),
        grad_output.stride(1),
        BLOCK_COLS=block_cols,
        ROWS_PER_PROGRAM=rows_per_program,
        num_warps=num_warps,
    )
    return dx
