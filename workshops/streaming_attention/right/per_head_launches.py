"""RIGHT, another design: one launch per head.

The kernel knows one [N, D] head: its grid is the query blocks of that head, and it
reads q, k and v through their row and column strides.  The wrapper loops over B and H
and launches the kernel once per head on the views q[b, h], k[b, h], v[b, h], so every
head's base address is computed in Python (64-bit) and no program ever multiplies a
head index.  It costs B * H launches per call, which the contract allows; a single
launch over every head is faster when heads are many and short.
"""

import math

import torch
import triton
import triton.language as tl

from workshops.contract import (
    HALF_DTYPES,
    INT32_MAX,
    cdiv,
    check_bool,
    check_option,
    check_tensor,
    same_device,
    same_dtype,
)

MAX_SEQ_LEN = 2048
MAX_SEQ_LEN_BATCHED = 16384
HEAD_DIMS = (16, 32, 64)
BLOCK_N_CHOICES = (32, 64)
BLOCK_M = 64


@triton.jit
def _one_head_kernel(
    Q,
    K,
    V,
    Out,
    N,
    scale,
    stride_qn,
    stride_qd,
    stride_kn,
    stride_kd,
    stride_vn,
    stride_vd,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    SKIP_FUTURE_TILES: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    row_ok = rows < N
    q = tl.load(Q + rows[:, None] * stride_qn + dims[None, :] * stride_qd, mask=row_ok[:, None], other=0.0)
    m = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    end = N
    if CAUSAL and SKIP_FUTURE_TILES:
        end = tl.minimum(N, (tl.program_id(0) + 1) * BLOCK_M)  # no key after the last row here
    for start in range(0, end, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        key_ok = keys < N
        k = tl.load(
            K + keys[:, None] * stride_kn + dims[None, :] * stride_kd, mask=key_ok[:, None], other=0.0
        )
        v = tl.load(
            V + keys[:, None] * stride_vn + dims[None, :] * stride_vd, mask=key_ok[:, None], other=0.0
        )
        s = tl.dot(q, tl.trans(k)) * scale
        visible = key_ok[None, :]
        if CAUSAL:
            visible = visible & (keys[None, :] <= rows[:, None])
        s = tl.where(visible, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        l = l * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m = m_new
    out = acc / l[:, None]
    tl.store(
        Out + rows[:, None] * HEAD_DIM + dims[None, :], out.to(Out.dtype.element_ty), mask=row_ok[:, None]
    )


def _check_inputs(q, k, v, causal, block_n, skip_future_tiles):
    batched = isinstance(q, torch.Tensor) and q.dim() == 4
    ndim = 4 if batched else 2
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(
            t, name, ndim=ndim, dtypes=HALF_DTYPES, contiguous=not batched, int32_offsets=not batched
        )
    same_dtype("k", k, "q", q)
    same_dtype("v", v, "q", q)
    same_device("k", k, "q", q)
    same_device("v", v, "q", q)
    check_bool(causal, "causal")
    check_option(block_n, "block_n", BLOCK_N_CHOICES)
    check_bool(skip_future_tiles, "skip_future_tiles")
    n, d = q.shape[-2], q.shape[-1]
    if d not in HEAD_DIMS:
        raise ValueError(f"q: head dimension {d} is not supported; use one of {list(HEAD_DIMS)}")
    limit = MAX_SEQ_LEN_BATCHED if batched else MAX_SEQ_LEN
    if n > limit:
        raise ValueError(f"q: sequence length {n} exceeds the limit of {limit}")
    for name, t in (("k", k), ("v", v)):
        if t.shape != q.shape:
            raise ValueError(f"{name}: shape {tuple(t.shape)} differs from q's {tuple(q.shape)}")
    if batched and n > 0:
        for name, t in (("q", q), ("k", k), ("v", v)):
            if (n - 1) * t.stride(2) + (d - 1) * t.stride(3) > INT32_MAX:
                raise ValueError(f"{name}: one head's rows span more than {INT32_MAX} elements")
    return batched


def _launch_one_head(q, k, v, out, causal, block_n, skip_future_tiles):
    n, d = q.shape
    _one_head_kernel[(cdiv(n, BLOCK_M),)](
        q, k, v, out, n, 1.0 / math.sqrt(d),
        *q.stride(), *k.stride(), *v.stride(),
        HEAD_DIM=d, BLOCK_M=BLOCK_M, BLOCK_N=block_n, CAUSAL=causal,
        SKIP_FUTURE_TILES=skip_future_tiles, num_warps=4,
    )  # fmt: skip


def attention(q, k, v, *, causal=False, block_n=32, skip_future_tiles=True):
    """softmax(q k^T / sqrt(D)) v for fp16/bf16 [N, D] (contiguous) or [B, H, N, D] (any
    nonnegative strides) inputs; a fresh contiguous output of q's shape and dtype."""
    batched = _check_inputs(q, k, v, causal, block_n, skip_future_tiles)
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out
    if not batched:
        _launch_one_head(q, k, v, out, causal, block_n, skip_future_tiles)
        return out
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            _launch_one_head(q[b, h], k[b, h], v[b, h], out[b, h], causal, block_n, skip_future_tiles)
    return out
