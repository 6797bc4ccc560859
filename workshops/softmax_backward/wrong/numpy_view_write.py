"""WRONG on purpose: NumPy computes y * (g - sum(y * g)), written through a view of dx.

The learner's reasoning: "in the interpreter the tensors live on the CPU, so NumPy can
compute the answer and write it into ``out.numpy()``; a kernel of my file is launched
with the output, and no PyTorch op computes anything."  Every value is right.  But
the kernel stores nothing, so no element of the answer was stored by a kernel:
own-kernel and every check that calls the function name the unstored elements and the
``.numpy()`` line.  On a GPU ``out.numpy()`` is not possible at all.
"""

import numpy as np
import torch
import triton
import triton.language as tl

from workshops.contract import check_tensor

MAX_COLS = 8192


@triton.jit
def _peek_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n, other=0.0)  # reads; never stores to out_ptr


def _as_float32(t):
    """The tensor's values as a float32 NumPy array, read through a view (no torch op)."""
    if t.dtype == torch.bfloat16:
        bits = t.view(torch.int16).numpy().astype(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32)
    return t.numpy().astype(np.float32)


def _write(out, values):
    """Write float32 ``values`` into ``out`` through a NumPy view, rounding to its dtype."""
    if out.dtype == torch.bfloat16:
        bits = values.astype(np.float32).view(np.uint32)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        out.view(torch.int16).numpy()[...] = rounded.astype(np.uint16).view(np.int16)
    else:
        out.numpy()[...] = values.astype(out.numpy().dtype)


def backward(y, grad_output, *, num_warps=4):
    check_tensor(y, "y", ndim=2)
    check_tensor(grad_output, "grad_output", ndim=2)
    if grad_output.shape != y.shape:
        raise ValueError(f"grad_output: shape {tuple(grad_output.shape)} differs from y's {tuple(y.shape)}")
    n_rows, n_cols = y.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"y: {n_cols} columns; this kernel supports 1 to {MAX_COLS}")
    dx = torch.empty((n_rows, n_cols), dtype=y.dtype, device=y.device)
    if n_rows == 0:
        return dx
    yv, gv = _as_float32(y), _as_float32(grad_output)
    _write(dx, yv * (gv - (yv * gv).sum(axis=1, keepdims=True)))
    _peek_kernel[(1,)](y, dx, n_cols, BLOCK=16)
    return dx
