"""Right but slow: every input, transposed or not, goes through the one-row-per-program
kernel.  On a transposed view (column stride larger than row stride) the lanes of one
row read elements a whole column apart in memory, so each warp-wide load touches 32
sectors of 32 bytes where 4 would hold its data: a column-major walk of memory."""

import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor, next_power_of_2

MAX_COLS = 8192


@triton.jit
def softmax_rows_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    in_row = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=in_row, other=-float("inf")).to(tl.float32)
    numerators = tl.exp(x - tl.max(x, axis=0))
    probs = numerators / tl.sum(numerators, axis=0)
    tl.store(out_ptr + row * n_cols + cols, probs.to(out_ptr.dtype.element_ty), mask=in_row)


def softmax(x, *, num_warps=4):
    check_tensor(x, "x", ndim=2)
    check_option(num_warps, "num_warps", (4, 8))
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x: {n_cols} columns; this kernel supports 1 to {MAX_COLS}")
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out
    softmax_rows_kernel[(n_rows,)](
        x, out, n_cols, x.stride(0), x.stride(1), BLOCK_C=next_power_of_2(n_cols), num_warps=num_warps
    )
    return out
