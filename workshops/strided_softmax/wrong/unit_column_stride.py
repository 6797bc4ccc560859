"""WRONG on purpose: the kernel assumes the column stride is 1.

The load address is ``row * stride_row + col``: the row stride is honoured but the
column stride is dropped.  That is exactly right for a contiguous tensor and for a slice
of rows, so a test on ``torch.randn(m, n)`` passes.  On a transpose (strides (1, m)) or a
column step ``x[:, ::3]`` it silently reads the wrong elements: every value is finite,
every row still sums to 1, and the answer is simply the softmax of other numbers.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor

MAX_COLS = 8192
NUM_WARPS = (4, 8)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


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
        x, out, n_cols, x.stride(0), BLOCK_C=triton.next_power_of_2(n_cols), num_warps=num_warps
    )
    return out
