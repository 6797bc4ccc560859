"""WRONG on purpose: NumPy computes softmax(q k^T / sqrt(D)) v; a kernel of the file only copies it.

The learner's reasoning: "every element I return must be stored by a kernel of my
file, so NumPy computes the answer into a scratch tensor and a copy kernel stores it
into the output."  Every value is right, the kernel stores every element, and no
PyTorch op computes anything.  But the arithmetic happened on the host, in NumPy:
own-kernel and every check that calls attention name the ``.numpy()`` line.  (On a GPU
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


def attention(q, k, v, *, causal=False, block_n=32, skip_future_tiles=True):
    batched = isinstance(q, torch.Tensor) and q.dim() == 4
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(t, name, ndim=4 if batched else 2, dtypes=HALF, contiguous=not batched)
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"k: shapes {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)} differ")
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out
    n, d = q.shape[-2], q.shape[-1]
    s = _as_float32(q) @ np.swapaxes(_as_float32(k), -1, -2) / np.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    scratch = _staged((p / p.sum(axis=-1, keepdims=True)) @ _as_float32(v), out)
    _copy_kernel[(triton.cdiv(out.numel(), 1024),)](scratch, out, out.numel(), BLOCK=1024)
    return out
