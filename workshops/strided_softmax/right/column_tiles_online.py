"""RIGHT, another design: one row per program, walked in column tiles with an online max.

The program never holds its whole row: pass 1 reads the row BLOCK_C columns at a time
and keeps a running maximum m and a running sum l of exp(x - m) (when a tile raises the
maximum, l is rescaled by exp(m_old - m_new)); pass 2 reads the row again and stores
exp(x - m) / l.  The last tile of a row whose width is not a multiple of BLOCK_C is
masked, its padding read as -inf.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor, next_power_of_2

MAX_COLS = 8192
NUM_WARPS = (4, 8)
TILE_COLS = 256


@triton.jit
def _column_tiles_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_row
    offs = tl.arange(0, BLOCK_C)
    m = -float("inf")
    l = 0.0
    for start in range(0, n_cols, BLOCK_C):
        cols = start + offs
        x = tl.load(x_row + cols * stride_col, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_C):
        cols = start + offs
        x = tl.load(x_row + cols * stride_col, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m) / l
        tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=cols < n_cols)


def softmax(x, *, num_warps=4):
    """Row softmax of a 2D fp32/fp16/bf16 tensor with any nonnegative strides; a fresh
    contiguous output of x's shape and dtype."""
    check_tensor(x, "x", ndim=2)
    check_option(num_warps, "num_warps", NUM_WARPS)
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x: {n_cols} columns; this kernel supports 1 to {MAX_COLS}")
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out
    block_c = min(TILE_COLS, next_power_of_2(n_cols))
    _column_tiles_kernel[(n_rows,)](x, out, n_cols, *x.stride(), BLOCK_C=block_c, num_warps=num_warps)
    return out
