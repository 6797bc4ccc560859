"""WRONG on purpose: rescales the denominator l by alpha = exp(m_old - m_new) when a key
tile raises the running maximum, but not the accumulator acc.

Both l and acc are sums of exp(score - m_old) terms; after the maximum rises, the new
tile's terms are exp(score - m_new), so the old ones must shrink by alpha too.  Here
acc mixes the two scales, and every output row whose maximum ever increased after the
first tile is wrong.  The lesson's worked example: logits [0, 0, log 2] on values
[1, 3, 10], one key per tile, gives (1 + 3 + 10) / 2 = 7 instead of 6.

The mistake is easy to make because l and acc look different (a vector and a matrix)
and the A1 merge only had l.  It survives a test with a single key tile (N <= block_n).
"""

import math

import torch
import triton
import triton.language as tl

from workshops.contract import HALF_DTYPES, check_bool, check_option, check_tensor, same_device, same_dtype

BLOCK_M = 64


@triton.jit
def _attention_kernel(
    Q,
    K,
    V,
    Out,
    N,
    sm_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    SKIP_FUTURE_TILES: tl.constexpr,
):
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < N, other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    hi = N
    if CAUSAL and SKIP_FUTURE_TILES:
        hi = tl.minimum(N, (start_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(K + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_n[:, None] < N, other=0.0)
        v = tl.load(V + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_n[:, None] < N, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where(offs_n[None, :] < N, s, float("-inf"))
        if CAUSAL:
            s = tl.where(offs_n[None, :] <= offs_m[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc + tl.dot(p.to(v.dtype), v)  # BUG: acc is still in units of the old maximum
        m_i = m_new

    out = acc / l_i[:, None]
    tl.store(
        Out + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
        out.to(Out.dtype.element_ty),
        mask=offs_m[:, None] < N,
    )


def attention(q, k, v, *, causal=False, block_n=32, skip_future_tiles=True):
    check_tensor(q, "q", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    check_tensor(k, "k", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    check_tensor(v, "v", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    same_dtype("k", k, "q", q)
    same_dtype("v", v, "q", q)
    same_device("k", k, "q", q)
    same_device("v", v, "q", q)
    check_bool(causal, "causal")
    check_option(block_n, "block_n", (32, 64))
    check_bool(skip_future_tiles, "skip_future_tiles")
    n, d = q.shape
    if d not in (16, 32, 64):
        raise ValueError(f"q: head dimension {d} is not supported; use 16, 32 or 64")
    if n > 2048:
        raise ValueError(f"q: sequence length {n} exceeds 2048")
    if tuple(k.shape) != (n, d):
        raise ValueError(f"k: shape {tuple(k.shape)} differs from q's {(n, d)}")
    if tuple(v.shape) != (n, d):
        raise ValueError(f"v: shape {tuple(v.shape)} differs from q's {(n, d)}")
    out = torch.empty((n, d), dtype=q.dtype, device=q.device)
    if n == 0:
        return out
    grid = (triton.cdiv(n, BLOCK_M),)
    _attention_kernel[grid](
        q,
        k,
        v,
        out,
        n,
        1.0 / math.sqrt(d),
        HEAD_DIM=d,
        BLOCK_M=BLOCK_M,
        BLOCK_N=block_n,
        CAUSAL=causal,
        SKIP_FUTURE_TILES=skip_future_tiles,
        num_warps=4,
    )
    return out
