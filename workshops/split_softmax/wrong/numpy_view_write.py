"""WRONG on purpose: NumPy computes the softmax and writes it through a view of the output.

The learner's reasoning: "in the interpreter the tensors live on the CPU, so NumPy can
compute the answer and write it into ``out.numpy()``; a kernel of my file is launched
with the output, and no PyTorch op computes anything."  Every value is right, and
scratch_bytes is the reference formula.  But the kernel stores nothing, so no element
of the answer was stored by a kernel: own-kernel and every check that calls the
function name the unstored elements and the ``.numpy()`` line.  On a GPU
``out.numpy()`` is not possible at all.
"""

import numpy as np
import torch
import triton
import triton.language as tl

from workshops.contract import check_tensor

CHUNK_SIZES = (256, 1024, 4096)
MAX_COLS = 131072


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
    _write(out, e / e.sum(axis=1, keepdims=True))
    _peek_kernel[(1,)](x, out, n_cols, BLOCK=16)
    return out
