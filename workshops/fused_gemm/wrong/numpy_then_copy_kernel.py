"""WRONG on purpose: NumPy computes relu(a @ b + bias); a kernel of the file only copies it.

The learner's reasoning: "every element I return must be stored by a kernel of my
file, so NumPy computes the answer into a scratch tensor and a copy kernel stores it
into the output."  Every value is right, the kernel stores every element, and no
PyTorch op computes anything.  But the arithmetic happened on the host, in NumPy:
own-kernel and every check that calls matmul_bias_relu name the ``.numpy()`` line.  (On a GPU
``.numpy()`` of a CUDA tensor is not possible at all.)
"""

import numpy as np
import torch
import triton
import triton.language as tl

from workshops.contract import check_tensor

HALF = (torch.float16, torch.bfloat16)


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
    scratch = _staged(np.maximum(acc, 0.0), c)
    _copy_kernel[(triton.cdiv(c.numel(), 1024),)](scratch, c, c.numel(), BLOCK=1024)
    return c
