"""Named checks for A3, streaming attention: ``attention(q, k, v, *, causal=False, block_n=32)``.

The oracle is float64 softmax(Q K^T / sqrt(D) [causal mask]) V, materialized here from
the very fp16/bf16 values the kernel read (the kernel itself never forms the N x N
scores), on the inputs' device; an oracle computed before a learner's call stays on the
CPU, where a stray store of theirs cannot reach it.  Outputs are compared with
``checks.judging.tensors.assert_close`` at the input dtype's tolerance.

Interpreter budget: Triton's interpreter runs one program at a time with numpy, so
lengths stay <= 160 except the single widest-length check (N=2048 at D=16).  bf16
``tl.dot`` is silently wrong in the interpreter, so every bf16 run is GPU-only.
"""

import inspect
import math

import torch

from checks.judging.case import CheckFailed, check, collect
from checks.judging.tensors import (
    POISON,
    assert_close,
    assert_not_alias,
    poisoned_allocator as _fill_with_poison,
    randn,
)

FP16, BF16 = torch.float16, torch.bfloat16
BF16_REASON = "bf16 tl.dot is unsupported in Triton's interpreter (silently wrong)"
STREAM_REASON = "needs a CUDA GPU: a non-default CUDA stream"


# --- helpers -------------------------------------------------------------------------


def attention_oracle(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    device: "torch.device | str | None" = None,
) -> torch.Tensor:
    """float64 softmax(q k^T / sqrt(D) [masked]) v of one head ([N, D] each) on ``device``
    (default: the inputs' own), from the stored values."""
    device = q.device if device is None else device
    q64, k64, v64 = (t.detach().to(device, torch.float64) for t in (q, k, v))
    return attention64(q64, k64, v64, causal)


def attention64(q64: torch.Tensor, k64: torch.Tensor, v64: torch.Tensor, causal: bool) -> torch.Tensor:
    """softmax(q k^T / sqrt(D) [masked]) v over the last two dimensions of float64 tensors
    ([N, D] for one head, [heads, N, D] for a batch of them): the one formula of the oracles."""
    n, d = q64.shape[-2], q64.shape[-1]
    scores = q64 @ k64.transpose(-1, -2) / math.sqrt(d)
    if causal:
        future = torch.ones(n, n, dtype=torch.bool, device=q64.device).triu(1)  # key j > query i
        scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v64


def make_qkv(ctx, n, d, dtype=FP16, scale=1.0):
    """Three independent [n, d] tensors, each its own contiguous allocation."""
    x = randn((3, n, d), ctx=ctx, dtype=torch.float64, scale=scale)
    return tuple(x[i].to(dtype).clone() for i in range(3))


def _poison_allocator(n, d, dtype, device):
    """Fill (then free) a block the output's size with POISON: the allocator tends to hand
    it back for the output, so rows the kernel never writes show up as POISON."""
    _fill_with_poison((max(n, 1), d), dtype, device)


def _call(mod, q, k, v, causal, block_n, **extra):
    _poison_allocator(q.shape[0], q.shape[1], q.dtype, q.device)
    return mod.attention(q, k, v, causal=causal, block_n=block_n, **extra)


def run_attention(mod, q, k, v, *, causal, block_n, what="", hint="", hint_when=None, **extra):
    """Call the learner's attention and compare with the float64 oracle.  ``hint`` (the
    mistake this check is built to catch) joins a failure's message only where
    ``hint_when(got, expected)`` holds: a result unlike that mistake's is another mistake,
    which the hint would misname."""
    n, d = q.shape
    got = _call(mod, q, k, v, causal, block_n, **extra)
    name = f"attention(N={n}, D={d}, {str(q.dtype).replace('torch.', '')}, causal={causal}, block_n={block_n}"
    name += "".join(f", {key}={val}" for key, val in extra.items()) + ")"
    expected = attention_oracle(q, k, v, causal)
    try:
        assert_close(got, expected, dtype=q.dtype, name=f"{what}{name}")
    except CheckFailed as e:
        if hint and hint_when is not None and hint_when(got.double(), expected.double()):
            raise CheckFailed(f"{e.message}; {hint}", e.details) from None
        raise
    return got


def has_option(mod, name):
    try:
        return name in inspect.signature(mod.attention).parameters
    except (TypeError, ValueError):
        return False


def growing_max_inputs(ctx, n, d, dtype):
    """Scores that rise with the key index: every key tile raises the running maximum.
    q[:, 0] = 2 and k[j, 0] += 0.15 j add 0.15 j * 2 / sqrt(D) to every score."""
    q, k, v = make_qkv(ctx, n, d, torch.float64)
    q[:, 0] = 2.0
    k[:, 0] += 0.15 * torch.arange(n, dtype=torch.float64, device=k.device)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def extreme_inputs(ctx, n, d, dtype):
    """Rows of logits near +1000 and -1000 whose maximum still rises tile by tile.

    Other dimensions are zero; q[i, 0] = +/-2.5 sqrt(D) and k[j, 0] = +/-(400 - 0.25 r_j)
    (exact in fp16 and bf16), so a logit is +/-(1000 - 0.625 r_j).  r_j falls from 15 to 0
    along the sequence, so later keys of the row's preferred sign score higher."""
    q, k, v = make_qkv(ctx, n, d, torch.float64)
    gen = ctx.torch_generator()
    sign_q = torch.where(torch.arange(n) % 2 == 0, 1.0, -1.0).to(torch.float64)
    sign_k = torch.randint(0, 2, (n,), generator=gen).to(torch.float64) * 2 - 1
    r = 15 - (torch.arange(n) * 16 // n).to(torch.float64)
    q.zero_()
    k.zero_()
    q[:, 0] = (sign_q * 2.5 * math.sqrt(d)).to(q.device)  # logit = +/-2.5 * k[j, 0]
    k[:, 0] = (sign_k * (400.0 - 0.25 * r)).to(k.device)  # |logit| up to 1000
    return q.to(dtype), k.to(dtype), v.to(dtype)


# --- a first verdict -----------------------------------------------------------------


@check(
    "basic",
    "N=40, D=32, fp16, full attention, block_n=32 (one whole key tile + a ragged one)",
    why="the first thing to get right: one query block, two key tiles, the recurrence across them",
    section="The recurrence: (m, l, acc) across key tiles",
    cost=1,
    properties=("ragged",),
)
def basic(mod, ctx):
    q, k, v = make_qkv(ctx, 40, 32)
    run_attention(mod, q, k, v, causal=False, block_n=32)


@check(
    "worked-answer",
    "logits [0, 0, log 2] on values [1, 3, 10] in three key tiles give 6, not 7",
    why=(
        "the lesson's worked answer: when the running maximum rises, the numerator and the "
        "denominator both shrink by exp(m_old - m_new)"
    ),
    section="Worked example: logits [0, 0, log 2]",
    cost=1,
)
def worked_answer(mod, ctx):
    d = 16  # scale = 1/sqrt(16) = 1/4, q = [4, 0, ...]
    for block_n in (32, 64):
        n = 2 * block_n + 1  # the three keys sit at 0, block_n, 2*block_n
        q = torch.zeros(n, d, dtype=torch.float64)
        q[:, 0] = 4.0  # so the logit of key j is k[j, 0]
        k = torch.zeros(n, d, dtype=torch.float64)
        k[:, 0] = -30.0  # filler keys: weight exp(-30) ~ 1e-13, i.e. none
        v = randn((n, d), ctx=ctx, dtype=torch.float64).cpu()
        for pos, logit, value in ((0, 0.0, 1.0), (block_n, 0.0, 3.0), (2 * block_n, math.log(2.0), 10.0)):
            k[pos, 0] = logit
            v[pos] = value
        q, k, v = (t.to(FP16).to(ctx.device) for t in (q, k, v))
        for causal in (False, True):
            got = _call(mod, q, k, v, causal, block_n)
            last = float(got[n - 1, 0]) if isinstance(got, torch.Tensor) and got.shape == (n, d) else None
            if last is not None and abs(last - 6.0) > 0.05:
                hint = (
                    " -- 7 is what you get when l is rescaled by exp(m_old - m_new) but the "
                    f"accumulator is not, and also when the tile of keys holding key {block_n} "
                    "never reaches either: (1*1 + 2*10) / (1 + 2)"
                    if abs(last - 7.0) < 0.05
                    else ""
                )
                raise CheckFailed(
                    f"block_n={block_n}, causal={causal}: the last query row is {last:.4f}; "
                    f"(1*1 + 1*3 + 2*10) / (1 + 1 + 2) = 6{hint}",
                    {"got": last, "expected": 6.0, "block_n": block_n, "causal": causal},
                )
            assert_close(
                got,
                attention_oracle(q, k, v, causal),
                dtype=FP16,
                name=f"worked example (N={n}, block_n={block_n}, causal={causal})",
            )
            ctx.details[f"last_row block_n={block_n} causal={causal}"] = last


@check(
    "causal-basic",
    "N=40, D=32, fp16, causal, both block_n",
    why="the causal mask: row i sees keys 0..i, the diagonal included",
    section="Causal attention and the diagonal",
    cost=1,
    properties=("causal", "ragged"),
)
def causal_basic(mod, ctx):
    q, k, v = make_qkv(ctx, 40, 32)
    for block_n in (32, 64):
        run_attention(mod, q, k, v, causal=True, block_n=block_n)


@check(
    "causal-row-zero",
    "causal row 0 sees only key 0, so out[0] = v[0]",
    why="row 0 of a causal attention sees exactly one key, its own: the mask keeps the diagonal",
    section="Causal attention and the diagonal",
    cost=1,
    properties=("causal",),
)
def causal_row_zero(mod, ctx):
    q, k, v = make_qkv(ctx, 20, 16, scale=3.0)
    got = _call(mod, q, k, v, True, 32)
    if not (isinstance(got, torch.Tensor) and got.shape == q.shape):
        raise CheckFailed(f"expected a tensor of shape {tuple(q.shape)}, got {getattr(got, 'shape', got)!r}")
    assert_close(got[0:1], v[0:1].double().cpu(), dtype=FP16, name="causal out[0] (should be v[0])")
    assert_close(got, attention_oracle(q, k, v, True), dtype=FP16, name="causal attention(N=20, D=16)")


@check(
    "tiny-lengths",
    "N=0 returns an empty [0, D] output; N=1 returns v",
    why="an empty grid must not be launched; one key means weight 1",
    section="Ragged lengths and masks",
    cost=1,
)
def tiny_lengths(mod, ctx):
    for d in (16, 64):
        q, k, v = make_qkv(ctx, 0, d)
        for causal in (False, True):
            run_attention(mod, q, k, v, causal=causal, block_n=32)
    q, k, v = make_qkv(ctx, 1, 32)
    for causal, block_n in ((False, 32), (True, 64)):  # N=1 compiles its own variants: two suffice
        run_attention(mod, q, k, v, causal=causal, block_n=block_n)


# --- rejections (validation runs before any kernel) ---------------------------------


# --- shapes and options --------------------------------------------------------------


@check(
    "ragged-lengths",
    "N = 33, 63, 65, 100 (not multiples of a tile), both block_n, both causal",
    why="the last key tile hangs past N: keys loaded as zeros must score -inf, not 0",
    section="Ragged lengths and masks",
    cost=2,
    properties=("ragged",),
)
def ragged_lengths(mod, ctx):
    for n in (33, 63, 65, 100):
        q, k, v = make_qkv(ctx, n, 32)
        for causal in (False, True):
            for block_n in (32, 64):
                run_attention(mod, q, k, v, causal=causal, block_n=block_n)


@check(
    "head-dims",
    "D = 16, 32 and 64 at N=70, both causal, both block_n",
    why="every supported head dimension, and scale = 1/sqrt(D) for each",
    section="The contract",
    cost=2,
    properties=("ragged",),
)
def head_dims(mod, ctx):
    for d in (16, 32, 64):
        q, k, v = make_qkv(ctx, 70, d)
        for causal in (False, True):
            for block_n in (32, 64):
                run_attention(mod, q, k, v, causal=causal, block_n=block_n)


@check(
    "growing-maximum",
    "scores that rise tile by tile (the running maximum grows at every tile)",
    why="the old numerator and denominator must both shrink by exp(m_old - m_new)",
    section="The recurrence: (m, l, acc) across key tiles",
    cost=2,
)
def growing_maximum(mod, ctx):
    # 161 keys (not a multiple of 16) share compiled variants with the other D=16 checks
    q, k, v = growing_max_inputs(ctx, 161, 16, FP16)
    for causal in (False, True):
        for block_n in (32, 64):
            run_attention(mod, q, k, v, causal=causal, block_n=block_n, what="rising scores: ")


@check(
    "isolated-maximum",
    "one key 40 above every other score, in the middle of a tile",
    why="the output must be that key's value, whichever tile it is in",
    section="The recurrence: (m, l, acc) across key tiles",
    cost=2,
)
def isolated_maximum(mod, ctx):
    n, d, star = 150, 16, 77
    q, k, v = make_qkv(ctx, n, d, torch.float64)
    q[:, 0] = 4.0  # logit of key j gains k[j, 0]; others stay ~N(0, 1)
    k[star, 0] = 40.0
    q, k, v = q.to(FP16), k.to(FP16), v.to(FP16)
    for causal in (False, True):
        for block_n in (32, 64):
            got = run_attention(mod, q, k, v, causal=causal, block_n=block_n, what="isolated maximum: ")
            assert_close(
                got[star:],
                v[star : star + 1].double().cpu().expand(n - star, d),
                dtype=FP16,
                name=f"rows >= {star} (should equal v[{star}], causal={causal}, block_n={block_n})",
            )


@check(
    "extreme-logits",
    "rows of logits near +1000 and -1000, rising along the sequence",
    why="exp of a raw score overflows fp32 past ~88; scores must be shifted by the running max",
    section="The recurrence: (m, l, acc) across key tiles",
    cost=2,
    properties=("large-magnitudes",),
)
def extreme_logits(mod, ctx):
    q, k, v = extreme_inputs(ctx, 130, 32, FP16)
    for causal in (False, True):
        for block_n in (32, 64):
            run_attention(mod, q, k, v, causal=causal, block_n=block_n, what="logits near +/-1000: ")


@check(
    "uniform-causal",
    "equal scores: causal row i is the average of v[0..i]; full rows the average of all v",
    why="a wrong mask or a wrong denominator shows as a wrong prefix average",
    section="Causal attention and the diagonal",
    cost=2,
)
def uniform_causal(mod, ctx):
    n, d = 100, 32
    q, k, v = make_qkv(ctx, n, d)
    k = k[:1].expand(n, d).contiguous()  # every key the same: q_i . k_j equal for all j
    v64 = v.double().cpu()
    prefix_mean = v64.cumsum(0) / torch.arange(1, n + 1, dtype=torch.float64)[:, None]
    for block_n in (32, 64):
        got = _call(mod, q, k, v, True, block_n)
        assert_close(
            got,
            prefix_mean,
            dtype=FP16,
            name=f"causal, equal scores, block_n={block_n} (row i should be mean(v[0..i]))",
        )
        got = _call(mod, q, k, v, False, block_n)
        assert_close(
            got,
            v64.mean(0).expand(n, d),
            dtype=FP16,
            name=f"full, equal scores, block_n={block_n} (every row should be mean(v))",
        )


@check(
    "causal-future-independence",
    "causal rows 0..70 are bit-for-bit unchanged when keys/values 71.. change",
    why="a causal row must not read the future: not even a tiny leak through a masked tile",
    section="Causal attention and the diagonal",
    cost=2,
    properties=("causal",),
)
def causal_future_independence(mod, ctx):
    n, d, cut = 150, 32, 70  # 70 is mid-tile for block_n 32 and 64
    q, k, v = make_qkv(ctx, n, d)
    k2, v2 = k.clone(), v.clone()
    k2[cut + 1 :] = (k2[cut + 1 :] * 8).to(FP16)  # future keys that would dominate if they leaked
    v2[cut + 1 :] = -v2[cut + 1 :] * 100
    for block_n in (32, 64):
        a = _call(mod, q, k, v, True, block_n)
        b = _call(mod, q, k2, v2, True, block_n)
        assert_close(a, attention_oracle(q, k, v, True), dtype=FP16, name=f"causal, block_n={block_n}")
        if not torch.equal(a[: cut + 1], b[: cut + 1]):
            rows = (a[: cut + 1] != b[: cut + 1]).any(dim=1).nonzero().flatten().tolist()
            raise CheckFailed(
                f"block_n={block_n}: rows {rows[:8]}{'...' if len(rows) > 8 else ''} changed "
                f"when only keys/values after row {cut} changed; a causal row must not "
                f"depend on future keys",
                {"rows_changed": rows},
            )


@check(
    "offset-views",
    "q, k, v as contiguous row slices (nonzero storage offset) of larger buffers",
    why="a view's data starts at data_ptr(), not at the start of its storage",
    section="The contract",
    cost=2,
)
def offset_views(mod, ctx):
    n, d = 50, 16
    buf = randn((3 * n + 7, d), ctx=ctx, dtype=FP16)
    q, k, v = buf[2 : 2 + n], buf[n + 3 : 2 * n + 3], buf[2 * n + 5 : 3 * n + 5]
    assert q.is_contiguous() and q.storage_offset() > 0
    for causal in (False, True):
        run_attention(mod, q, k, v, causal=causal, block_n=32, what="offset views: ")


@check(
    "inputs-unchanged",
    "q, k, v are unchanged after the call",
    why="the caller keeps using q, k and v; the kernel must only read them",
    section="The contract",
    cost=2,
)
def inputs_unchanged(mod, ctx):
    q, k, v = make_qkv(ctx, 70, 32)
    before = [t.clone() for t in (q, k, v)]
    for causal in (False, True):
        _call(mod, q, k, v, causal, 32)
    for name, t, b in zip("qkv", (q, k, v), before):
        if not torch.equal(t, b):
            raise CheckFailed(f"{name} was modified by attention()")


@check(
    "fresh-output",
    "the output is a fresh contiguous [N, D] tensor that aliases no input",
    why="writing into q (or returning a cached buffer) corrupts the caller's data",
    section="The contract",
    cost=2,
)
def fresh_output(mod, ctx):
    q, k, v = make_qkv(ctx, 40, 16)
    a = _call(mod, q, k, v, False, 32)
    b = _call(mod, q, k, v, False, 32)
    for out in (a, b):
        assert_close(out, attention_oracle(q, k, v, False), dtype=FP16)
        assert_not_alias(out, q, k, v, names=("q", "k", "v"))
    if a.data_ptr() == b.data_ptr():
        raise CheckFailed("two calls returned the same buffer; allocate a fresh output per call")


@check(
    "poisoned-allocator",
    "N=100 after the allocator was filled with poison: every row written",
    why="a grid that misses the last partial query block leaves rows unwritten",
    section="Who owns what: programs, tiles and the state",
    cost=2,
    properties=("ragged",),
)
def poisoned_allocator(mod, ctx):
    for n in (100, 129):
        q, k, v = make_qkv(ctx, n, 16)
        for causal in (False, True):
            got = run_attention(
                mod, q, k, v, causal=causal, block_n=64, what="after poisoning the allocator: "
            )
            if bool((got == POISON).any()):
                raise CheckFailed(f"N={n}: {int((got == POISON).sum())} elements still hold the poison")


@check(
    "widest-length",
    "N=2048, the longest supported sequence (interpreter: causal, D=16, block_n=64; GPU: causal and "
    "full, D=16/64, both block_n)",
    why="the loop bounds and masks must hold at the contract's limit",
    section="The contract",
    cost=8,
    properties=("tile-multiple", "causal"),
)
def widest_length(mod, ctx):
    # The interpreter runs the programs one at a time, at a cost per key tile visited: 32
    # query blocks of a causal run visit 528 tiles, a full run 1,024.  The causal run alone
    # reaches every query block (the store record names any row never written), walks the
    # last block's keys to N=2048 and masks every diagonal tile; full runs are covered at
    # smaller N, and at N=2048 on a GPU.
    dims: tuple[int, ...]
    block_sizes: tuple[int, ...]
    modes: tuple[bool, ...]
    if ctx.interpret:
        dims, block_sizes, modes = (16,), (64,), (True,)
    else:
        dims, block_sizes, modes = (16, 64), (32, 64), (True, False)
    for d in dims:
        q, k, v = make_qkv(ctx, 2048, d)
        for causal in modes:
            for block_n in block_sizes:
                run_attention(mod, q, k, v, causal=causal, block_n=block_n)


# --- GPU only ------------------------------------------------------------------------


# The batched-heads checks live in checks/judging/cases/streaming_attention_heads.py, found by
# the engine beside this module.
CASES = collect(globals())
