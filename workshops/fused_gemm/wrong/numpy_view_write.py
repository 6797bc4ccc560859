"""WRONG on purpose: NumPy computes relu(a @ b + bias) and writes it through a view of the output.

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

HALF = (torch.float16, torch.bfloat16)


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


def matmul_bias_relu(a, b, bias, *, group_m=4, tile_m=32):
    for name, t, ndim in (("a", a, 2), ("b", b, 2), ("bias", bias, 1)):
        check_tensor(t, name, ndim=ndim, dtypes=HALF, contiguous=True)
    if b.shape[0] != a.shape[1] or bias.shape[0] != b.shape[1]:
        raise ValueError(f"b: shapes {tuple(a.shape)}, {tuple(b.shape)}, {tuple(bias.shape)} do not chain")
    M, N = a.shape[0], b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    acc = _as_float32(a) @ _as_float32(b) + _as_float32(bias)[None, :]
    _write(c, np.maximum(acc, 0.0))
    _peek_kernel[(1,)](bias, c, N, BLOCK=16)
    return c
