"""A3: streaming attention -- your exercise file.

    out = softmax(q k^T * scale [causal mask]) v,   q, k, v: contiguous [N, D], scale = 1/sqrt(D)

and, per head, for q, k, v of shape [B, H, N, D] with any nonnegative strides.

Outline (use it as scaffolding, or delete it for more challenge):

    @triton.jit
    def _attention_kernel(Q, K, V, Out,          # pointers to contiguous [N, D] tensors
                          N,                     # sequence length (runtime int)
                          qk_scale,              # 1/sqrt(D), times log2(e) if you use exp2
                          HEAD_DIM: tl.constexpr,          # D: 16, 32 or 64 (row i starts at i*D)
                          BLOCK_M: tl.constexpr,           # query rows per program, e.g. 64
                          BLOCK_N: tl.constexpr,           # keys per tile: block_n (32 or 64)
                          CAUSAL: tl.constexpr,            # the causal flag
                          SKIP_FUTURE_TILES: tl.constexpr) # stop the key loop at the diagonal
        program id -> the BLOCK_M query rows it owns; load that q tile once (mask rows >= N)
        m = -inf, l = 0, acc = 0 (fp32) for each of those rows
        for each key tile start_n (0, BLOCK_N, 2*BLOCK_N, ...):
            load the k and v tiles (mask keys >= N)
            s = q . k^T * scale                          [BLOCK_M, BLOCK_N], fp32
            keys >= N and (causal) keys j > i must get -inf, not 0
            m_new = max(m, row max of s); alpha = exp(m - m_new); p = exp(s - m_new)
            l and acc were measured relative to m: both must be rescaled by alpha
            add this tile's row sums of p to l, and p @ v to acc (convert p to v's dtype first)
        store acc / l (converted to the output dtype), masking rows >= N

    Batched heads (the lesson's "Batched heads" section): add the strides of q, k and v
    (batch, head, row, column: four each) and the head count H as arguments; make the
    grid 2D, program_id(0) = the head b * H + h and program_id(1) = the query block; move
    Q, K, V by b * stride_b + h * stride_h and Out by head * N * D; address rows and
    columns with the row and column strides.  The [N, D] form is then one head.
    Sizes: B * H * N * D may pass 2^31 elements, where head * N * D no longer fits 32 bits:
    compute the head offsets in 64 bits, head = tl.program_id(0).to(tl.int64) (the
    lesson's "Offsets past 2^31").  Offsets within one head stay 32-bit; the validation
    below refuses a head whose rows span more.

    attention(q, k, v, *, causal=False, block_n=32, skip_future_tiles=True):
        1. validate metadata (already written below; it returns whether q is batched)
        2. allocate the output: torch.empty(q.shape, dtype=q.dtype, device=q.device)
        3. an empty output (N, B or H == 0): return it without launching
        4. launch one program per BLOCK_M query rows of each head:
           grid = (B * H, triton.cdiv(N, BLOCK_M))   ([N, D]: B * H = 1)
        5. return the output

Start by visiting every key tile (masking future keys when causal); once the checks
pass, make skip_future_tiles=True stop each query block's loop after its diagonal.

Check your work:   python -m checks streaming_attention --interpret     (no GPU needed)
Hints, one tier at a time:   python -m checks streaming_attention --hint
"""

import math

import torch

from workshops.contract import (
    HALF_DTYPES,
    INT32_MAX,
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
BLOCK_M = 64  # query rows per program: a multiple of every block_n


# Your kernel goes here (see the outline above).


def _check_inputs(q, k, v, causal, block_n, skip_future_tiles):
    """Metadata only.  [N, D] contiguous, or [B, H, N, D] with any nonnegative strides;
    k and v must match q's shape, dtype and device.  Returns True for the batched form,
    which may pass 2^31 elements as long as one head's rows fit 32-bit offsets."""
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
    if k.shape != q.shape:
        raise ValueError(f"k: shape {tuple(k.shape)} differs from q's {tuple(q.shape)}")
    if v.shape != q.shape:
        raise ValueError(f"v: shape {tuple(v.shape)} differs from q's {tuple(q.shape)}")
    if batched and n > 0:
        for name, t in (("q", q), ("k", k), ("v", v)):
            head_span = (n - 1) * t.stride(2) + (d - 1) * t.stride(3)
            if head_span > INT32_MAX:
                raise ValueError(
                    f"{name}: one head's rows span {head_span} elements (row stride {t.stride(2)}); "
                    f"offsets within a head are 32-bit, at most {INT32_MAX}"
                )
    return batched


def attention(q, k, v, *, causal=False, block_n=32, skip_future_tiles=True):
    """softmax(q k^T / sqrt(D)) v for fp16/bf16 q, k, v of one shape: contiguous [N, D],
    or [B, H, N, D] with any nonnegative strides (every head independent)."""
    # 1. Validate metadata (never values).  Done for you: the rejection checks pass already.
    batched = _check_inputs(q, k, v, causal, block_n, skip_future_tiles)  # noqa: F841

    scale = 1.0 / math.sqrt(q.shape[-1])  # noqa: F841 - for your kernel launch

    # 2-5. Allocate the output, handle empty shapes, launch your kernel, return the output.
    raise NotImplementedError(
        "attention: write a kernel where each program owns BLOCK_M query rows of one head and "
        "walks the key tiles carrying (m, l, acc); then allocate the output and launch "
        "B * H x triton.cdiv(N, BLOCK_M) programs"
    )
