"""WRONG on purpose: NumPy computes y * (g - sum(y * g)); a kernel of the file only copies it.

The learner's reasoning: "every element I return must be stored by a kernel of my
file, so NumPy computes the answer into a scratch tensor and a copy kernel stores it
into the output."  Every value is right, the kernel stores every element, and no
PyTorch op computes anything.  But the arithmetic happened on the host, in NumPy:
own-kernel and every check that calls backward name the ``.numpy()`` line.  (On a GPU
``.numpy()`` of a CUDA tensor is not possible at all.)
"""

import numpy as np
import torch
import triton
import triton.language as tl

from workshops.contract import check_tensor

MAX_COLS = 8192


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    values = tl.load(src_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, values.to(out_ptr.dtype.element_ty), mask=offs < n)


def _as_float32(t):
    """The tensor's values as a float32 NumPy array, read through a view (no torch op)."""
    if t.dtype == torch.bfloat16:
        bits = t.view(torch.int16).numpy().astype(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32)
    return t.numpy().astype(np.float32)


def _staged(values, like):
    """``values`` in a float32 scratch tensor of ``like``'s shape, written through a NumPy
    view (no torch op computes anything)."""
    scratch = torch.empty(tuple(like.shape), dtype=torch.float32, device=like.device)
    scratch.numpy()[...] = values
    return scratch


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
    scratch = _staged(yv * (gv - (yv * gv).sum(axis=1, keepdims=True)), dx)
    _copy_kernel[(triton.cdiv(dx.numel(), 1024),)](scratch, dx, dx.numel(), BLOCK=1024)
    return dx
