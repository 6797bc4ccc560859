"""WRONG on purpose: NumPy computes the answer and writes it through a view of the output.

The learner's reasoning: "in the interpreter the tensors live on the CPU, so I can
compute the softmax with NumPy, write it into ``out.numpy()`` and launch a kernel of my
file; no PyTorch op computes anything."  Every value is right, the kernel is launched
with the output, and no op is dispatched that computes.  But the kernel stores nothing
(its one store is masked off on every lane), so no element of the answer was stored by
a kernel: own-kernel and every check that calls softmax name the unstored elements.
On a GPU ``out.numpy()`` is not possible at all.
"""

import numpy as np
import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor

MAX_COLS = 8192
NUM_WARPS = (4, 8)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_C: tl.constexpr):
    cols = tl.arange(0, BLOCK_C)
    x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + cols, x, mask=cols < 0)  # every lane masked off: stores nothing


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
        out.numpy()[...] = values


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
    _write(out, e / e.sum(axis=1, keepdims=True))
    softmax_kernel[(1,)](x, out, n_cols, BLOCK_C=triton.next_power_of_2(n_cols), num_warps=num_warps)
    return out
