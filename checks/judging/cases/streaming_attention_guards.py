"""Guard checks for A3, streaming attention: the learner's own kernel did the work, and
the value ranges where fp16 and bf16 differ (see checks.judging.cases.guards).  Many query
blocks are reached by "widest-length" (N=2048: 32 query blocks, in the interpreter too)."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.guards import beyond_fp16, own_kernel_check
from checks.judging.cases.streaming_attention import BF16, BF16_REASON, FP16, make_qkv, run_attention

SECTION_PRECISION = "Precision: P in the input dtype"
SECTION_RECURRENCE = "The recurrence: (m, l, acc) across key tiles"


@own_kernel_check("the output is written by a @triton.jit kernel of your file")
def own_kernel(mod, ctx):
    # One small call, so the first verdict comes at once; every other check's calls
    # (causal, batched heads) are witnessed the same way.
    q, k, v = make_qkv(ctx, 40, 16)
    run_attention(mod, q, k, v, causal=False, block_n=32)


def within(relative):
    """``hint_when`` for a mistake that leaves every output within ``relative`` of the oracle's."""
    return lambda got, expected: bool(
        not torch.isnan(got).any()
        and ((got - expected).abs() / expected.abs().clamp_min(1.0)).max() <= relative
    )


@check(
    "fp16-large-scores",
    "fp16 q.k products past 65,504 (logits near 31,000 after the 1/sqrt(D) scale)",
    why=(
        "q.k here reaches 125,000, past fp16's 65,504: the scores of fp16 inputs must be "
        "accumulated and kept in fp32"
    ),
    section=SECTION_RECURRENCE,
    cost=2,
    properties=("large-magnitudes",),
)
def fp16_large_scores(mod, ctx):
    n, d = 70, 16
    q, k, v = make_qkv(ctx, n, d, torch.float64)
    g = ctx.torch_generator()
    rank = torch.randint(0, 16, (n,), generator=g).to(torch.float64)
    q.zero_()
    k.zero_()
    q[:, :2] = 250.0
    k[:, :2] = (250.0 - 0.125 * rank)[:, None].to(k.device)  # exact in fp16
    q, k, v = (t.to(FP16) for t in (q, k, v))
    for causal in (False, True):
        run_attention(mod, q, k, v, causal=causal, block_n=32, what="scores near 31,000: ")


@check(
    "fp32-accumulator",
    "equal scores and values near 3000: acc sums 32 x 3000 = 96,000 per tile",
    why=(
        "acc holds a sum of weighted values, not their average: with equal scores it grows by |v| "
        "per key, to 96,000 per tile here, past fp16's 65,504"
    ),
    section=SECTION_RECURRENCE,
    cost=2,
    properties=("large-magnitudes",),
)
def fp32_accumulator(mod, ctx):
    n, d = 65, 16  # not a multiple of 16: the variants of the other D=16 checks
    q, _, v = make_qkv(ctx, n, d, torch.float64)
    k = torch.zeros_like(q)  # every score 0: every weight exp(0 - m) = 1
    v = 3000.0 + 200.0 * v.clamp(-2.0, 2.0)  # 2600..3400, all one sign
    q, k, v = (t.to(FP16) for t in (q, k, v))
    hint = (
        "the running numerator acc must be fp32: with these inputs it reaches "
        f"{n} x 3000 before the division by l"
    )
    for causal, block_n in ((False, 32), (True, 64)):  # causal: rows past 21 overflow
        # an fp16 acc overflows to inf where every right output is finite, near 3000
        run_attention(
            mod,
            q,
            k,
            v,
            causal=causal,
            block_n=block_n,
            what="values near 3000: ",
            hint=hint,
            hint_when=lambda got, expected: bool(torch.isinf(got).any()),
        )


# exp(-FAINT_LOGIT) ~ 1.45e-5: a tile of 32 such weights adds 4.6e-4 to l = 1, under half of
# fp16's spacing at 1 (2^-11 ~ 4.9e-4), so an fp16 l rounds every tile's share away.
FAINT_LOGIT = 11.140625  # exact in fp16


@check(
    "fp32-denominator",
    "one dominant key, then 1022 faint keys whose weights each tile sums to under 2^-11",
    why="l must be fp32: in fp16 it keeps 11 significant bits, so once l = 1 a tile whose weights "
    "add up to less than half of fp16's spacing adds nothing, and after 31 such tiles every "
    "output is 1.4% too large",
    section=SECTION_RECURRENCE,
    cost=3,
)
def fp32_denominator(mod, ctx):
    # Causal with block_n=32 (with 64 keys a tile's share is over half a spacing and rounds
    # up instead): the last rows see 32 tiles, and the loop stops at the diagonal.
    n, d = 1023, 16  # not a multiple of 16: the variant of the other causal D=16 checks
    _, _, v = make_qkv(ctx, n, d, torch.float64)
    q = torch.zeros(n, d, dtype=torch.float64)
    k = torch.zeros(n, d, dtype=torch.float64)
    q[:, 0] = 4.0  # scale 1/4: key j scores k[j, 0]
    k[0, 0] = FAINT_LOGIT  # key 0 outweighs each other key by exp(11.14) ~ 69,000
    # The faint keys' values are all near 100, so their share of acc (about 1.5 in the last
    # rows) shows: a kernel that drops the faint keys from acc as well (one that forgets the
    # 1/sqrt(D) scale, say: then key 0 outweighs them all) gives a different wrong answer.
    v = 100.0 + 10.0 * v.cpu()
    v[0] = 50.0 * torch.where(torch.arange(d) % 2 == 0, 1.0, -1.0)  # most of every row's answer
    q, k, v = (t.to(FP16).to(ctx.device) for t in (q, k, v))
    hint = (
        "the running denominator l must be fp32: here each tile adds about 4.6e-4 to l = 1, "
        "which fp16 rounds away"
    )
    # an fp16 l leaves every output within a few percent (1.4 % too large at the last rows)
    run_attention(
        mod, q, k, v, causal=True, block_n=32, what="faint keys: ", hint=hint, hint_when=within(0.1)
    )


@check(
    "bf16-beyond-fp16",
    "bf16 values near +/-70,000, past fp16's largest value (65,504)",
    why=(
        "bf16 reaches 3e38 while fp16 stops at 65,504: every intermediate (the P@V product, its "
        "accumulator, the store) must hold these values"
    ),
    section=SECTION_PRECISION,
    interpreter=False,
    interpreter_reason=BF16_REASON,
    cost=2,
    properties=("bf16", "large-magnitudes"),
)
def bf16_beyond_fp16(mod, ctx):
    n, d = 100, 64
    q, k, _ = make_qkv(ctx, n, d, BF16)
    v = beyond_fp16((n, d), ctx=ctx)
    v = v * torch.where(torch.arange(d, device=v.device) % 2 == 0, 1.0, -1.0).to(BF16)
    for causal in (False, True):
        run_attention(mod, q, k, v, causal=causal, block_n=64, what="v near +/-70,000: ")


CASES = collect(globals())
