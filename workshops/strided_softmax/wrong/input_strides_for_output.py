"""WRONG on purpose: the store reuses the input's strides.

Loads are right (``row * stride_row + col * stride_col``), but the same address
arithmetic is used for the output: ``out_ptr + row * stride_row + col * stride_col``.
The output is a fresh contiguous tensor, so its strides are (n_cols, 1), not the
input's.  For a contiguous input the two agree and every test on ``torch.randn(m, n)``
passes.  For a transpose the values land transposed in memory; for a column slice
(row stride wider than the width) the stores run past the end of the output; for a
zero-stride broadcast every row is written on top of row 0 and the others stay unwritten.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor

MAX_COLS = 8192
NUM_WARPS = (4, 8)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    mask = cols < n_cols
    offsets = row * stride_row + cols * stride_col
    x = tl.load(x_ptr + offsets, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x, *, num_warps=4):
    check_tensor(x, "x", ndim=2)
    check_option(num_warps, "num_warps", NUM_WARPS)
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x: {n_cols} columns; this kernel supports 1 to {MAX_COLS}")
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out
    softmax_kernel[(n_rows,)](
        x, out, n_cols, x.stride(0), x.stride(1), BLOCK_C=triton.next_power_of_2(n_cols), num_warps=num_warps
    )
    return out
