"""WRONG on purpose: NumPy computes softmax(q k^T / sqrt(D)) v and writes it through a view of the output.

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
    _write(out, (p / p.sum(axis=-1, keepdims=True)) @ _as_float32(v))
    _peek_kernel[(1,)](q, out, d, BLOCK=16)
    return out
