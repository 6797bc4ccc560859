"""WRONG on purpose: the inputs are cast to fp32 with PyTorch before the launch.

The learner's reasoning: "the lesson says do the arithmetic in fp32, so I'll hand the
kernel fp32 copies of y and g."  The kernel is the learner's own and its values are
right, but the casts are PyTorch computing new tensors outside the kernel (an extra read
and write of both inputs); the kernel should load the 16-bit values and convert them with
``.to(tl.float32)``.  On fp32 inputs ``.float()`` is a no-op, so own-kernel calls fp16 too
and names ``aten::_to_copy`` and the line.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor, same_device, same_dtype

MAX_COLS = 8192
NUM_WARPS = (4, 8)


@triton.jit
def _softmax_backward_kernel(
    y_ptr,
    g_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_stride_row,
    y_stride_col,
    g_stride_row,
    g_stride_col,
    BLOCK_COLS: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_COLS)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * y_stride_row + cols * y_stride_col, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + row * g_stride_row + cols * g_stride_col, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * g, axis=0)
    dx = y * (g - dot)
    tl.store(dx_ptr + row * n_cols + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)


def backward(y, grad_output, *, num_warps=4):
    """dL/dx of softmax along the last dim from y = softmax(x) and grad_output = dL/dy."""
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

    dx = torch.empty(y.shape, dtype=y.dtype, device=y.device)
    if n_rows == 0:
        return dx
    BLOCK_COLS = triton.next_power_of_2(n_cols)
    grid = (n_rows,)
    _softmax_backward_kernel[grid](
        y.float(),
        grad_output.float(),
        dx,
        n_rows,
        n_cols,
        y.stride(0),
        y.stride(1),
        grad_output.stride(0),
        grad_output.stride(1),
        BLOCK_COLS=BLOCK_COLS,
        num_warps=num_warps,
    )
    return dx
