"""WRONG on purpose: the launch grid uses floor division, n // BLOCK_M programs.

When N is not a multiple of BLOCK_M (64) the rows of the last, partial query block
belong to no program and are never written: the output keeps whatever the allocator
handed back (the checks pre-fill it with a poison value), and for N < 64 nothing is
launched at all.  The kernel itself is right; the ownership table is not.  Use
triton.cdiv(n, BLOCK_M).
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
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
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
    grid = (n // BLOCK_M,)  # BUG: floor division drops the last partial query block
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
