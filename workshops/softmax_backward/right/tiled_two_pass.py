"""RIGHT, another design: one row per program, in column tiles, two passes.

Pass 1 walks the row BLOCK_C columns at a time and adds up dot = sum(y * g) in fp32;
pass 2 walks it again and stores dx = y * (g - dot).  No tile ever holds the whole row,
so any width up to the contract's limit fits one tile size.  y and g are each read with
their own strides.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor, next_power_of_2, same_device, same_dtype

MAX_COLS = 8192
NUM_WARPS = (4, 8)
TILE_COLS = 512


@triton.jit
def _tiled_backward_kernel(
    y_ptr,
    g_ptr,
    dx_ptr,
    n_cols,
    y_stride_row,
    y_stride_col,
    g_stride_row,
    g_stride_col,
    BLOCK_C: tl.constexpr,
):
    row = tl.program_id(0)
    y_row = y_ptr + row * y_stride_row
    g_row = g_ptr + row * g_stride_row
    offs = tl.arange(0, BLOCK_C)
    partial = tl.zeros([BLOCK_C], tl.float32)
    for start in range(0, n_cols, BLOCK_C):
        cols = start + offs
        inside = cols < n_cols
        y = tl.load(y_row + cols * y_stride_col, mask=inside, other=0.0).to(tl.float32)
        g = tl.load(g_row + cols * g_stride_col, mask=inside, other=0.0).to(tl.float32)
        partial += y * g
    dot = tl.sum(partial, axis=0)
    for start in range(0, n_cols, BLOCK_C):
        cols = start + offs
        inside = cols < n_cols
        y = tl.load(y_row + cols * y_stride_col, mask=inside, other=0.0).to(tl.float32)
        g = tl.load(g_row + cols * g_stride_col, mask=inside, other=0.0).to(tl.float32)
        dx = y * (g - dot)
        tl.store(dx_ptr + row * n_cols + cols, dx.to(dx_ptr.dtype.element_ty), mask=inside)


def backward(y, grad_output, *, num_warps=4):
    """dL/dx of a row softmax from its output y and dL/dy; a fresh contiguous tensor of
    y's shape and dtype."""
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
    dx = torch.empty((n_rows, n_cols), dtype=y.dtype, device=y.device)
    if n_rows == 0:
        return dx
    _tiled_backward_kernel[(n_rows,)](
        y,
        grad_output,
        dx,
        n_cols,
        *y.stride(),
        *grad_output.stride(),
        BLOCK_C=min(TILE_COLS, next_power_of_2(n_cols)),
        num_warps=num_warps,
    )
    return dx
