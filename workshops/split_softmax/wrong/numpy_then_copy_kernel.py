"""WRONG on purpose: NumPy computes the softmax of every row; a kernel of the file only copies it.

The learner's reasoning: "every element I return must be stored by a kernel of my
file, so NumPy computes the answer into a scratch tensor and a copy kernel stores it
into the output."  Every value is right, the kernel stores every element, and no
PyTorch op computes anything.  But the arithmetic happened on the host, in NumPy:
own-kernel and every check that calls softmax name the ``.numpy()`` line.  (On a GPU
``.numpy()`` of a CUDA tensor is not possible at all.)
"""

import numpy as np
import torch
import triton
import triton.language as tl

from workshops.contract import check_tensor

CHUNK_SIZES = (256, 1024, 4096)
MAX_COLS = 131072


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


def scratch_bytes(M, N, chunk_size):
    return 2 * 4 * M * (triton.cdiv(N, chunk_size) + 1)


def softmax(x, *, chunk_size=1024):
    check_tensor(x, "x", ndim=2, contiguous=True)
    if chunk_size not in CHUNK_SIZES:
        raise ValueError(f"chunk_size: {chunk_size!r} is not one of {CHUNK_SIZES}")
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x: {n_cols} columns is outside the supported 1 to {MAX_COLS}")
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out
    v = _as_float32(x)
    e = np.exp(v - v.max(axis=1, keepdims=True))
    scratch = _staged(e / e.sum(axis=1, keepdims=True), out)
    _copy_kernel[(triton.cdiv(out.numel(), 1024),)](scratch, out, out.numel(), BLOCK=1024)
    return out
