"""WRONG on purpose: the [N, D] form materializes the N x N score matrix in scratch.

The textbook attention, written in Triton: a first kernel computes every score tile
q k^T / sqrt(D) (the causal future set to -inf) and stores it into an fp32 [N, N]
buffer; a second kernel sweeps each row block's scores twice, once for (m, l) and once
for p = exp(s - m) / l and p @ v.  Every number is right, and no PyTorch op computed
anything: every numeric check passes.  But the workshop's deliverable is attention
*without* a full score tensor: at N = 2048 the buffer is 16 MiB written and read back,
N^2 traffic where the streaming kernel keeps one [BLOCK_M, block_n] tile in registers.
(The batched [B, H, N, D] form still streams, as the reference does.)
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

MAX_SEQ_LEN = 2048  # the [N, D] form (one head)
MAX_SEQ_LEN_BATCHED = 16384  # the [B, H, N, D] form
HEAD_DIMS = (16, 32, 64)
BLOCK_N_CHOICES = (32, 64)

# Query rows per program.  A multiple of every block_n, so the diagonal of a query block
# starts on a key-tile boundary.  One head at N <= 2048 has at most 32 query blocks of 64
# rows, fewer than the GPU's SMs, so larger blocks would only halve the programs; with
# many heads there are programs to spare, and 128-row blocks on 8 warps reuse each key
# and value tile for twice the rows (measured in the worksheet).
BLOCK_M = 64
NUM_WARPS = 4
BATCHED_BLOCK_M = 128
BATCHED_NUM_WARPS = 8
NUM_STAGES = 3

LOG2_E = 1.4426950408889634  # exp(x) == exp2(x * log2(e)); exp2 is the cheaper instruction


@triton.jit
def _attend_to_key_tile(
    acc,
    l_i,
    m_i,
    q,
    k_ptrs,
    v_ptrs,
    start_n,
    offs_m,
    N,
    qk_scale,
    stride_kn,
    stride_vn,
    BLOCK_N: tl.constexpr,
    MASK_TAIL: tl.constexpr,
    MASK_CAUSAL: tl.constexpr,
):
    """Fold keys start_n .. start_n + BLOCK_N - 1 into the running (m, l, acc) state.
    k_ptrs / v_ptrs address key/value rows 0 .. BLOCK_N - 1 of this head."""
    offs_n = start_n + tl.arange(0, BLOCK_N)  # which keys this tile holds
    if MASK_TAIL:
        key_exists = offs_n < N  # the last tile can hang past N
        k = tl.load(k_ptrs + start_n * stride_kn, mask=key_exists[:, None], other=0.0)
        v = tl.load(v_ptrs + start_n * stride_vn, mask=key_exists[:, None], other=0.0)
    else:
        k = tl.load(k_ptrs + start_n * stride_kn)  # a whole tile: no mask needed
        v = tl.load(v_ptrs + start_n * stride_vn)

    # Scores in fp32, in base-2 units: s = (q . k) * scale * log2(e).
    s = tl.dot(q, tl.trans(k)) * qk_scale  # [BLOCK_M, BLOCK_N]
    if MASK_TAIL:
        # A key past N was loaded as zeros, which would score 0, not "absent": give it -inf.
        s = tl.where(key_exists[None, :], s, float("-inf"))
    if MASK_CAUSAL:
        # Row i sees key j only when j <= i (the diagonal included).
        s = tl.where(offs_n[None, :] <= offs_m[:, None], s, float("-inf"))

    m_new = tl.maximum(m_i, tl.max(s, axis=1))  # finite: every row saw key 0 already
    alpha = tl.exp2(m_i - m_new)  # <= 1; 0 on the first tile (m_i = -inf)
    p = tl.exp2(s - m_new[:, None])  # this tile's weights, relative to m_new
    l_i = l_i * alpha + tl.sum(p, axis=1)  # old denominator re-expressed, plus new
    acc = acc * alpha[:, None]  # ...and the old numerator, the same way
    acc = tl.dot(p.to(v.dtype), v, acc)  # P in the input dtype, as FlashAttention
    return acc, l_i, m_new


@triton.jit
def _attention_kernel(
    Q,
    K,
    V,
    Out,
    N,
    H,
    qk_scale,
    stride_qb,
    stride_qh,
    stride_qn,
    stride_qd,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_kd,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_vd,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    SKIP_FUTURE_TILES: tl.constexpr,
):
    # Axis 0: the head, b * H + h.  Axis 1: query blocks, last block first.  Blocks start
    # in launch order, axis 0 fastest: every head's longest causal block starts first and
    # the short ones fill the SMs at the end, instead of a few long blocks running alone.
    # The head's offsets pass 2^31 elements in a large batch (head * N * HEAD_DIM, and
    # b * stride_qb + h * stride_qh): computed in 64 bits from the program id on.  Offsets
    # within one head stay 32-bit (the wrapper checks that they fit).
    head = tl.program_id(0).to(tl.int64)
    start_m = tl.num_programs(1) - 1 - tl.program_id(1)
    b = head // H
    h = head % H
    Q += b * stride_qb + h * stride_qh  # this head's [N, D] matrices
    K += b * stride_kb + h * stride_kh
    V += b * stride_vb + h * stride_vh
    Out += head * N * HEAD_DIM  # the output is fresh and contiguous

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # the query rows this program owns
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    row_exists = offs_m < N
    q = tl.load(
        Q + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd, mask=row_exists[:, None], other=0.0
    )
    k_ptrs = K + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd
    v_ptrs = V + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # nothing seen yet: the empty state
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    if CAUSAL and SKIP_FUTURE_TILES:
        # Keys before this block's first row: visible to every row here, no mask needed.
        diagonal_start = start_m * BLOCK_M  # a multiple of BLOCK_N, < N
        for start_n in range(0, diagonal_start, BLOCK_N):
            acc, l_i, m_i = _attend_to_key_tile(
                acc,
                l_i,
                m_i,
                q,
                k_ptrs,
                v_ptrs,
                start_n,
                offs_m,
                N,
                qk_scale,
                stride_kn,
                stride_vn,
                BLOCK_N,
                False,
                False,
            )
        # The diagonal tiles: mask future keys (and keys past N). Nothing after them.
        diagonal_end = tl.minimum(N, diagonal_start + BLOCK_M)
        for start_n in range(diagonal_start, diagonal_end, BLOCK_N):
            acc, l_i, m_i = _attend_to_key_tile(
                acc,
                l_i,
                m_i,
                q,
                k_ptrs,
                v_ptrs,
                start_n,
                offs_m,
                N,
                qk_scale,
                stride_kn,
                stride_vn,
                BLOCK_N,
                True,
                True,
            )
    elif CAUSAL:
        # The starting point: visit every tile and mask each, future tiles included.
        for start_n in range(0, N, BLOCK_N):
            acc, l_i, m_i = _attend_to_key_tile(
                acc,
                l_i,
                m_i,
                q,
                k_ptrs,
                v_ptrs,
                start_n,
                offs_m,
                N,
                qk_scale,
                stride_kn,
                stride_vn,
                BLOCK_N,
                True,
                True,
            )
    else:
        # Full attention: whole tiles unmasked, then the ragged tail (if any) masked.
        full_tiles_end = (N // BLOCK_N) * BLOCK_N
        for start_n in range(0, full_tiles_end, BLOCK_N):
            acc, l_i, m_i = _attend_to_key_tile(
                acc,
                l_i,
                m_i,
                q,
                k_ptrs,
                v_ptrs,
                start_n,
                offs_m,
                N,
                qk_scale,
                stride_kn,
                stride_vn,
                BLOCK_N,
                False,
                False,
            )
        for start_n in range(full_tiles_end, N, BLOCK_N):  # zero or one iteration
            acc, l_i, m_i = _attend_to_key_tile(
                acc,
                l_i,
                m_i,
                q,
                k_ptrs,
                v_ptrs,
                start_n,
                offs_m,
                N,
                qk_scale,
                stride_kn,
                stride_vn,
                BLOCK_N,
                True,
                False,
            )

    out = acc / l_i[:, None]  # divide once, after the last tile
    tl.store(
        Out + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
        out.to(Out.dtype.element_ty),
        mask=row_exists[:, None],
    )


@triton.jit
def _scores_kernel(
    Q,
    K,
    S,
    N,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    """One [BLOCK_M, BLOCK_N] tile of the scores, base-2 units, stored into S[N, N]."""
    start_m = tl.program_id(0)
    start_n = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m < N
    keys = offs_n < N
    if CAUSAL:  # a tile wholly after the block's last row is never read: neither computed
        visible = start_n * BLOCK_N <= start_m * BLOCK_M + BLOCK_M - 1
        rows = rows & visible
        keys = keys & visible
    q = tl.load(Q + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=rows[:, None], other=0.0)
    k = tl.load(K + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=keys[:, None], other=0.0)
    s = tl.dot(q, tl.trans(k)) * qk_scale
    if CAUSAL:
        s = tl.where(offs_n[None, :] <= offs_m[:, None], s, float("-inf"))
    tl.store(S + offs_m[:, None] * N + offs_n[None, :], s, mask=rows[:, None] & keys[None, :])


@triton.jit
def _softmax_pv_kernel(
    S, V, Out, N, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr
):
    """Rows of S: (m, l) in one sweep, then p = exp2(s - m) / l and p @ v in a second."""
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_safe = tl.minimum(offs_m, N - 1)  # rows past N re-read the last one, never stored
    end = N
    if CAUSAL:
        end = tl.minimum(N, start_m * BLOCK_M + BLOCK_M)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keys = offs_n < end
        s = tl.load(S + rows_safe[:, None] * N + offs_n[None, :], mask=keys[None, :], other=float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        l_i = l_i * tl.exp2(m_i - m_new) + tl.sum(tl.exp2(s - m_new[:, None]), axis=1)
        m_i = m_new
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keys = offs_n < end
        s = tl.load(S + rows_safe[:, None] * N + offs_n[None, :], mask=keys[None, :], other=float("-inf"))
        p = tl.exp2(s - m_i[:, None]) / l_i[:, None]
        v = tl.load(V + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=keys[:, None], other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
    tl.store(
        Out + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
        acc.to(Out.dtype.element_ty),
        mask=(offs_m < N)[:, None],
    )


def _check_inputs(q, k, v, causal, block_n, skip_future_tiles):
    """Metadata only.  Returns (batched, shape): [N, D] contiguous, or [B, H, N, D] with
    any nonnegative strides; k and v must match q's shape, dtype and device.  The batched
    form may pass 2^31 elements (the kernel's head offsets are 64-bit); one head's rows
    must not (offsets within a head are 32-bit)."""
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
    shape = q.shape
    n, d = shape[-2], shape[-1]
    if d not in HEAD_DIMS:
        raise ValueError(f"q: head dimension {d} is not supported; use one of {list(HEAD_DIMS)}")
    limit = MAX_SEQ_LEN_BATCHED if batched else MAX_SEQ_LEN
    if n > limit:
        raise ValueError(
            f"q: sequence length {n} exceeds the limit of {limit}"
            + ("" if batched else " for one [N, D] head")
        )
    if k.shape != shape:
        raise ValueError(f"k: shape {tuple(k.shape)} differs from q's {tuple(shape)}")
    if v.shape != shape:
        raise ValueError(f"v: shape {tuple(v.shape)} differs from q's {tuple(shape)}")
    if batched and n > 0:
        for name, t in (("q", q), ("k", k), ("v", v)):
            head_span = (n - 1) * t.stride(2) + (d - 1) * t.stride(3)
            if head_span > INT32_MAX:
                raise ValueError(
                    f"{name}: one head's rows span {head_span} elements (row stride {t.stride(2)}); "
                    f"offsets within a head are 32-bit, at most {INT32_MAX}"
                )
    return batched, shape


def attention(q, k, v, *, causal=False, block_n=32, skip_future_tiles=True):
    """softmax(q k^T / sqrt(D)) v for fp16/bf16 q, k, v of one shape: contiguous [N, D]
    (one head), or [B, H, N, D] with any nonnegative strides (independent heads).

    causal: row i attends to keys 0..i, in every head.  block_n: keys per tile (32 or
    64).  skip_future_tiles (beyond the contract; causal only): stop each query block's
    loop at its diagonal instead of visiting and masking every key tile.  Returns a fresh
    contiguous tensor of q's shape and dtype."""
    # 1. Validate metadata (never values): types and dtypes first, then shapes and options.
    batched, shape = _check_inputs(q, k, v, causal, block_n, skip_future_tiles)

    # 2. A fresh contiguous output on the input's device.
    out = torch.empty(shape, dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out  # nothing to compute; a 0-program grid is not launched

    # 3. One program per BLOCK_M query rows of one head.
    n, d = shape[-2], shape[-1]
    qk_scale = (1.0 / math.sqrt(d)) * LOG2_E
    if batched:
        heads = shape[0] * shape[1]
        sq, sk, sv = q.stride(), k.stride(), v.stride()
        block_m, num_warps = BATCHED_BLOCK_M, BATCHED_NUM_WARPS
        if heads * cdiv(n, BATCHED_BLOCK_M) < 264:  # too few programs for 132 SMs
            block_m, num_warps = BLOCK_M, NUM_WARPS
        # kernel[grid](...): axis 0 the head, axis 1 the query block.
        _attention_kernel[(heads, cdiv(n, block_m))](
            q,
            k,
            v,
            out,
            n,
            shape[1],
            qk_scale,
            *sq,
            *sk,
            *sv,
            HEAD_DIM=d,
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            CAUSAL=causal,
            SKIP_FUTURE_TILES=skip_future_tiles,
            num_warps=num_warps,
            num_stages=NUM_STAGES,
        )
    else:
        # The N x N scores, materialized (the bug): one kernel stores them, the next reads them.
        scores = torch.empty((n, n), dtype=torch.float32, device=q.device)
        _scores_kernel[(cdiv(n, BLOCK_M), cdiv(n, block_n))](
            q, k, scores, n, qk_scale, HEAD_DIM=d, BLOCK_M=BLOCK_M, BLOCK_N=block_n, CAUSAL=causal,
            num_warps=NUM_WARPS,
        )  # fmt: skip
        _softmax_pv_kernel[(cdiv(n, BLOCK_M),)](
            scores,
            v,
            out,
            n,
            HEAD_DIM=d,
            BLOCK_M=BLOCK_M,
            BLOCK_N=block_n,
            CAUSAL=causal,
            num_warps=NUM_WARPS,
        )
    return out
