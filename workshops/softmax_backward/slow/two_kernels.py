"""Right but slow: the row sums sum(y * g) come from one kernel, dx from a second, so y
and g cross from memory to the GPU twice.  The first kernel reads both whole rows to
reduce them to one number each; the second reloads the same rows to form
dx = y * (g - sum).  One kernel that keeps the row in registers between the reduction
and the update moves each byte once."""

import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor, next_power_of_2, same_device, same_dtype

MAX_COLS = 8192


@triton.jit
def row_dot_kernel(y_ptr, g_ptr, dot_ptr, n_cols, ys_r, ys_c, gs_r, gs_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    y = tl.load(y_ptr + row * ys_r + cols * ys_c, mask=ok, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + row * gs_r + cols * gs_c, mask=ok, other=0.0).to(tl.float32)
    tl.store(dot_ptr + row, tl.sum(y * g, axis=0))


@triton.jit
def dx_kernel(y_ptr, g_ptr, dot_ptr, dx_ptr, n_cols, ys_r, ys_c, gs_r, gs_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    y = tl.load(y_ptr + row * ys_r + cols * ys_c, mask=ok, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + row * gs_r + cols * gs_c, mask=ok, other=0.0).to(tl.float32)
    dx = y * (g - tl.load(dot_ptr + row))
    tl.store(dx_ptr + row * n_cols + cols, dx.to(dx_ptr.dtype.element_ty), mask=ok)


def backward(y, grad_output, *, num_warps=4):
    check_tensor(y, "y", ndim=2)
    check_tensor(grad_output, "grad_output", ndim=2)
    same_dtype("grad_output", grad_output, "y", y)
    same_device("grad_output", grad_output, "y", y)
    if grad_output.shape != y.shape:
        raise ValueError(f"grad_output: shape {tuple(grad_output.shape)} differs from y's {tuple(y.shape)}")
    check_option(num_warps, "num_warps", (4, 8))
    n_rows, n_cols = y.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"y: {n_cols} columns is outside the supported 1..{MAX_COLS}")
    dx = torch.empty((n_rows, n_cols), dtype=y.dtype, device=y.device)
    if n_rows == 0:
        return dx
    dot = torch.empty(n_rows, dtype=torch.float32, device=y.device)
    strides = (*y.stride(), *grad_output.stride())
    block = next_power_of_2(n_cols)
    row_dot_kernel[(n_rows,)](y, grad_output, dot, n_cols, *strides, BLOCK=block, num_warps=num_warps)
    dx_kernel[(n_rows,)](y, grad_output, dot, dx, n_cols, *strides, BLOCK=block, num_warps=num_warps)
    return dx
