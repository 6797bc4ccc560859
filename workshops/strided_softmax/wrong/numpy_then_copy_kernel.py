"""WRONG on purpose: NumPy computes the answer; a kernel of the file only copies it.

The learner's reasoning: "every element I return must be stored by a kernel of my
file, so I compute the softmax with NumPy into a scratch tensor and launch a copy
kernel that stores it into the output."  Every value is right, the kernel stores every
element, and no PyTorch op computes anything.  But the arithmetic happened on the host:
the values were read through ``x.numpy()`` and written through a NumPy view of the
scratch tensor.  own-kernel and every check that calls softmax name the ``.numpy()``
line.  (On a GPU ``x.numpy()`` is not possible at all.)
"""

import numpy as np
import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor

MAX_COLS = 8192
NUM_WARPS = (4, 8)
BLOCK = 1024


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    values = tl.load(src_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, values.to(out_ptr.dtype.element_ty), mask=offs < n)


def _as_float32(t):
    """The tensor's values as a float32 NumPy array, read through a view (no torch op)."""
    if t.dtype == torch.bfloat16:
        bits = t.view(torch.int16).numpy().astype(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32)
    return t.numpy().astype(np.float32)


def softmax(x, *, num_warps=4):
    check_tensor(x, "x", ndim=2)
    check_option(num_warps, "num_warps", NUM_WARPS)
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x: {n_cols} columns; this kernel supports 1 to {MAX_COLS}")
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out
    v = _as_float32(x)
    e = np.exp(v - v.max(axis=1, keepdims=True))
    scratch = torch.empty((n_rows, n_cols), dtype=torch.float32, device=x.device)
    scratch.numpy()[...] = e / e.sum(axis=1, keepdims=True)
    n = n_rows * n_cols
    copy_kernel[(triton.cdiv(n, BLOCK),)](scratch, out, n, BLOCK=BLOCK, num_warps=num_warps)
    return out
