"""WRONG on purpose: the grid is capped at 16 query blocks.

The learner's reasoning: "16 programs of 64 query rows is 1,024 rows, and the long
sequences are rare."  Query rows past 1,024 are never written.  Every check up to
N=1,024 passes; widest-length (N=2,048: 32 query blocks) finds the unwritten rows.
"""

import math

import torch
import triton
import triton.language as tl

from workshops.contract import HALF_DTYPES, check_bool, check_option, check_tensor, same_device, same_dtype

MAX_SEQ_LEN = 2048
HEAD_DIMS = (16, 32, 64)
BLOCK_N_CHOICES = (32, 64)

# Query rows per program.  A multiple of every block_n, so the diagonal of a query block
# starts on a key-tile boundary.  At N <= 2048 there are at most 32 query blocks, fewer
# than the GPU's SMs, so a larger BLOCK_M (128, 8 warps) would only halve the programs.
BLOCK_M = 64
NUM_WARPS = 4

LOG2_E = 1.4426950408889634  # exp(x) == exp2(x * log2(e)); exp2 is the cheaper instruction


@triton.jit
def _attend_to_key_tile(
    acc,
    l_i,
    m_i,
    q,
    K,
    V,
    start_n,
    offs_m,
    N,
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    MASK_TAIL: tl.constexpr,
    MASK_CAUSAL: tl.constexpr,
):
    """Fold keys start_n .. start_n + BLOCK_N - 1 into the running (m, l, acc) state."""
    offs_n = start_n + tl.arange(0, BLOCK_N)  # which keys this tile holds
    offs_d = tl.arange(0, HEAD_DIM)
    key_exists = offs_n < N  # the last tile can hang past N
    k = tl.load(K + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=key_exists[:, None], other=0.0)
    v = tl.load(V + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=key_exists[:, None], other=0.0)

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
    qk_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    SKIP_FUTURE_TILES: tl.constexpr,
):
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # the query rows this program owns
    offs_d = tl.arange(0, HEAD_DIM)
    row_exists = offs_m < N
    q = tl.load(Q + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=row_exists[:, None], other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # nothing seen yet: the empty state
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    if CAUSAL and SKIP_FUTURE_TILES:
        # Keys before this block's first row: visible to every row here, no mask needed.
        diagonal_start = start_m * BLOCK_M  # a multiple of BLOCK_N, < N
        for start_n in range(0, diagonal_start, BLOCK_N):
            acc, l_i, m_i = _attend_to_key_tile(
                acc, l_i, m_i, q, K, V, start_n, offs_m, N, qk_scale, HEAD_DIM, BLOCK_N, False, False
            )
        # The diagonal tiles: mask future keys (and keys past N). Nothing after them.
        diagonal_end = tl.minimum(N, diagonal_start + BLOCK_M)
        for start_n in range(diagonal_start, diagonal_end, BLOCK_N):
            acc, l_i, m_i = _attend_to_key_tile(
                acc, l_i, m_i, q, K, V, start_n, offs_m, N, qk_scale, HEAD_DIM, BLOCK_N, True, True
            )
    elif CAUSAL:
        # The starting point: visit every tile and mask each, future tiles included.
        for start_n in range(0, N, BLOCK_N):
            acc, l_i, m_i = _attend_to_key_tile(
                acc, l_i, m_i, q, K, V, start_n, offs_m, N, qk_scale, HEAD_DIM, BLOCK_N, True, True
            )
    else:
        # Full attention: whole tiles unmasked, then the ragged tail (if any) masked.
        full_tiles_end = (N // BLOCK_N) * BLOCK_N
        for start_n in range(0, full_tiles_end, BLOCK_N):
            acc, l_i, m_i = _attend_to_key_tile(
                acc, l_i, m_i, q, K, V, start_n, offs_m, N, qk_scale, HEAD_DIM, BLOCK_N, False, False
            )
        for start_n in range(full_tiles_end, N, BLOCK_N):  # zero or one iteration
            acc, l_i, m_i = _attend_to_key_tile(
                acc, l_i, m_i, q, K, V, start_n, offs_m, N, qk_scale, HEAD_DIM, BLOCK_N, True, False
            )

    out = acc / l_i[:, None]  # divide once, after the last tile
    tl.store(
        Out + offs_m[:, None] * HEAD_DIM + offs_d[None, :],
        out.to(Out.dtype.element_ty),
        mask=row_exists[:, None],
    )


def attention(q, k, v, *, causal=False, block_n=32, skip_future_tiles=True):
    """softmax(q k^T / sqrt(D)) v for contiguous fp16/bf16 q, k, v of shape [N, D].

    causal: row i attends to keys 0..i.  block_n: keys per tile (32 or 64).
    skip_future_tiles (beyond the contract; causal only): stop each query block's loop
    at its diagonal instead of visiting and masking every key tile."""
    # 1. Validate metadata (never values): types and dtypes first, then shapes and options.
    check_tensor(q, "q", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    check_tensor(k, "k", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    check_tensor(v, "v", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    same_dtype("k", k, "q", q)
    same_dtype("v", v, "q", q)
    same_device("k", k, "q", q)
    same_device("v", v, "q", q)
    check_bool(causal, "causal")
    check_option(block_n, "block_n", BLOCK_N_CHOICES)
    check_bool(skip_future_tiles, "skip_future_tiles")
    n, d = q.shape
    if d not in HEAD_DIMS:
        raise ValueError(f"q: head dimension {d} is not supported; use one of {list(HEAD_DIMS)}")
    if n > MAX_SEQ_LEN:
        raise ValueError(f"q: sequence length {n} exceeds the limit of {MAX_SEQ_LEN}")
    if tuple(k.shape) != (n, d):
        raise ValueError(f"k: shape {tuple(k.shape)} differs from q's {(n, d)}")
    if tuple(v.shape) != (n, d):
        raise ValueError(f"v: shape {tuple(v.shape)} differs from q's {(n, d)}")

    # 2. A fresh contiguous output on the input's device.
    out = torch.empty((n, d), dtype=q.dtype, device=q.device)
    if n == 0:
        return out  # nothing to compute; a 0-program grid is not launched

    # 3. One program per BLOCK_M query rows.
    qk_scale = (1.0 / math.sqrt(d)) * LOG2_E
    grid = (min(triton.cdiv(n, BLOCK_M), 16),)  # "16 query blocks fill a GPU"
    _attention_kernel[grid](
        q,
        k,
        v,
        out,
        n,
        qk_scale,
        HEAD_DIM=d,
        BLOCK_M=BLOCK_M,
        BLOCK_N=block_n,
        CAUSAL=causal,
        SKIP_FUTURE_TILES=skip_future_tiles,
        num_warps=NUM_WARPS,
    )
    return out
