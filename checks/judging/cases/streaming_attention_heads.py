"""Named checks for A3's batched form: ``attention(q, k, v)`` with q, k, v of shape
[B, H, N, D] (any nonnegative strides) computes every head independently.

The oracle is the single-head float64 oracle of ``checks.judging.cases.streaming_attention``,
applied head by head on the inputs' device.  Shapes stay tiny (B * H <= 65, N <= 160,
D = 16) so that each check takes about a second or less in Triton's interpreter.
"""

import torch

from checks.judging.case import CheckFailed, check, collect
from checks.judging.tensors import assert_close, randn

FP16 = torch.float16
SECTION = "Batched heads"


# The float64 score matrices of one batch of heads the oracle computes at once (bytes).
ORACLE_CHUNK_BYTES = 64 * 2**20


def heads_oracle(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    device: "torch.device | str | None" = None,
) -> torch.Tensor:
    """The single-head float64 oracle's formula (``attention64``) on every [B, H] head of
    [B, H, N, D] inputs, on ``device`` (default: the inputs' own; the checks compute it after
    the learner's call).  Heads go in batches whose N x N float64 scores stay within
    ORACLE_CHUNK_BYTES: a few launches per batch instead of a few per head (65 heads took
    about 0.2 s of launches on a GPU), and never all score matrices at once.  A batched
    product may round the last float64 bit differently from one head's alone."""
    from checks.judging.cases.streaming_attention import attention64

    device = q.device if device is None else device
    b, h, n, d = q.shape
    out = torch.empty((b * h, n, d), dtype=torch.float64, device=device)
    if out.numel() == 0:
        return out.reshape(q.shape)
    q64, k64, v64 = (t.detach().reshape(b * h, n, d) for t in (q, k, v))
    step = max(1, ORACLE_CHUNK_BYTES // max(1, n * n * 8))
    for first in range(0, b * h, step):
        part = slice(first, first + step)
        qs, ks, vs = (t[part].to(device, torch.float64) for t in (q64, k64, v64))
        out[part] = attention64(qs, ks, vs, causal)
    return out.reshape(q.shape)


def _bhnd(ctx, b, h, n, d, dtype=FP16):
    """A contiguous [B, H, N, D] tensor."""
    return randn((b, h, n, d), ctx=ctx, dtype=torch.float64).to(dtype)


def _bnhd_view(ctx, b, h, n, d, dtype=FP16):
    """[B, H, N, D] as a transpose of a contiguous [B, N, H, D] tensor (a projection's layout)."""
    return randn((b, n, h, d), ctx=ctx, dtype=torch.float64).to(dtype).transpose(1, 2)


def _run(mod, q, k, v, *, causal, block_n=32, what=""):
    got = mod.attention(q, k, v, causal=causal, block_n=block_n)
    if tuple(got.shape) != tuple(q.shape) or got.dtype != q.dtype:
        raise CheckFailed(
            f"{what}: expected shape {tuple(q.shape)} {q.dtype}, got {tuple(got.shape)} {got.dtype}"
        )
    if not got.is_contiguous():
        raise CheckFailed(f"{what}: the output must be a fresh contiguous tensor, got strides {got.stride()}")
    assert_close(
        got,
        heads_oracle(q, k, v, causal),
        dtype=q.dtype,
        name=f"{what}attention(B={q.shape[0]}, H={q.shape[1]}, N={q.shape[2]}, "
        f"D={q.shape[3]}, causal={causal}, block_n={block_n})",
    )
    return got


@check(
    "heads-contiguous",
    "[B, H, N, D] contiguous, B=2 H=3 N=40, and B=5 H=13 N=8 (65 heads): every head matches its own oracle",
    why="each program must find its head's rows through the batch and head strides",
    section=SECTION,
    cost=2,
)
def heads_contiguous(mod, ctx):
    q, k, v = (_bhnd(ctx, 2, 3, 40, 16) for _ in range(3))
    for causal in (False, True):
        _run(mod, q, k, v, causal=causal)
    # more heads than 64: a grid axis over heads that is capped or shortened leaves some out
    q, k, v = (_bhnd(ctx, 5, 13, 8, 16) for _ in range(3))
    _run(mod, q, k, v, causal=False)


@check(
    "heads-transposed-view",
    "q, k, v are [B, N, H, D] tensors transposed to [B, H, N, D]",
    why="a view's strides are not those of a contiguous tensor: rows of one head are H*D apart",
    section=SECTION,
    cost=2,
    properties=("strided",),
)
def heads_transposed_view(mod, ctx):
    q, k, v = (_bnhd_view(ctx, 2, 3, 33, 16) for _ in range(3))
    for causal in (False, True):
        _run(mod, q, k, v, causal=causal, block_n=64)


@check(
    "heads-mixed-strides",
    "q contiguous, k a transposed view, v shared by every head (stride 0) with steps of its own "
    "(rows 32 apart, every second column); N=24, and N=160 causal",
    why="each tensor has its own strides; one tensor's strides in another's addresses is a bug",
    section=SECTION,
    cost=2,
    properties=("strided",),
)
def heads_mixed_strides(mod, ctx):
    # N=24 fits one key tile; N=160 causal also walks whole key tiles below the diagonal
    # (the second block of 128 query rows sees four whole key tiles before its own)
    for n, causal in ((24, False), (160, True)):
        q = _bhnd(ctx, 1, 4, n, 16)
        k = _bnhd_view(ctx, 1, 4, n, 16)
        # v's row and column steps (32, 2) are neither q's (16, 1) nor k's (64, 1): an address
        # of v built with either one's strides reads other elements
        v = _bhnd(ctx, 1, 1, n, 32)[..., ::2].expand(1, 4, n, 16)
        _run(mod, q, k, v, causal=causal)


@check(
    "heads-independent",
    "changing one head's keys and values changes only that head's output",
    why="a head offset computed wrongly (b*H + h swapped, or missing) mixes heads",
    section=SECTION,
    cost=2,
)
def heads_independent(mod, ctx):
    q, k, v = (_bhnd(ctx, 2, 2, 24, 16) for _ in range(3))
    a = mod.attention(q, k, v)
    k2, v2 = k.clone(), v.clone()
    k2[1, 0] = -k2[1, 0]
    v2[1, 0] = v2[1, 0] * 3
    b = mod.attention(q, k2, v2)
    for bi in range(2):
        for hi in range(2):
            same = torch.equal(a[bi, hi], b[bi, hi])
            if (bi, hi) == (1, 0) and same:
                raise CheckFailed("head (1, 0) got new keys and values but its output did not change")
            if (bi, hi) != (1, 0) and not same:
                raise CheckFailed(
                    f"head ({bi}, {hi}) changed when only head (1, 0)'s keys and "
                    f"values did: heads are not independent"
                )


@check(
    "heads-causal-per-head",
    "causal with ragged N=65: each head's row i sees its own keys 0..i",
    why="the causal mask and the future-tile skip apply within a head, at every head",
    section=SECTION,
    cost=3,
    properties=("causal", "ragged"),
)
def heads_causal_per_head(mod, ctx):
    q, k, v = (_bnhd_view(ctx, 1, 2, 65, 16) for _ in range(3))
    for block_n in (32, 64):
        a = _run(mod, q, k, v, causal=True, block_n=block_n)
        k2, v2 = k.clone(), v.clone()  # clone keeps the transposed strides
        k2[:, :, 50:] = 7.0  # every head's keys after row 49
        v2[:, :, 50:] = -7.0
        b = mod.attention(q, k2, v2, causal=True, block_n=block_n)
        if not torch.equal(a[:, :, :50], b[:, :, :50]):
            raise CheckFailed(
                f"block_n={block_n}: rows 0..49 changed when only keys 50.. changed: "
                f"a head's row sees future keys"
            )


@check(
    "heads-long-batched",
    "[1, 2, 8320, 16]: more than 64 query blocks in each head, causal and full",
    why="a batched head may be 16,384 tokens long: the grid's query-block axis must reach its last "
    "block however many there are",
    section=SECTION,
    cost=2,
    interpreter=False,
    interpreter_reason="8,320 tokens a head: minutes in the interpreter (one program at a time); the "
    "interpreted checks cover every query block of shorter heads",
    properties=("many-rows", "tile-multiple"),
)
def heads_long_batched(mod, ctx):
    ctx.require_gpu("8,320 tokens a head are checked on a GPU")
    q, k, v = (_bhnd(ctx, 1, 2, 8320, 16) for _ in range(3))
    for causal in (False, True):
        _run(mod, q, k, v, causal=causal)


@check(
    "heads-empty",
    "B=0, H=0 or N=0: an empty output of q's shape, nothing launched",
    why="a grid with zero programs is an error on some launches",
    section=SECTION,
    cost=1,
)
def heads_empty(mod, ctx):
    for shape in ((0, 2, 8, 16), (2, 0, 8, 16), (2, 3, 0, 16)):
        q = torch.empty(shape, dtype=FP16, device=ctx.device)
        got = mod.attention(q, q, q)
        if tuple(got.shape) != shape:
            raise CheckFailed(f"q of shape {shape}: got shape {tuple(got.shape)}")


CASES = collect(globals())
