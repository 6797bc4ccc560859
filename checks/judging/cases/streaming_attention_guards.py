"""Guard checks for A3, streaming attention: the learner's own kernel did the work, and
the value ranges where fp16 and bf16 differ (see checks.judging.cases.guards).  Many query
blocks are reached by "widest-length" (N=2048: 32 query blocks, in the interpreter too)."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.guards import OWN_KERNEL_WHY, SECTION_OWN, beyond_fp16, own_work
from checks.judging.cases.streaming_attention import BF16, BF16_REASON, FP16, _qkv, _run

SECTION_PRECISION = "Precision: P in the input dtype"
SECTION_RECURRENCE = "The recurrence: (m, l, acc) across key tiles"


@check(
    "own-kernel",
    "the output is written by a @triton.jit kernel of your file",
    why=OWN_KERNEL_WHY,
    section=SECTION_OWN,
    cost=0,
)
@own_work
def own_kernel(mod, ctx):
    # One small call, so the first verdict comes at once; every other check's calls
    # (causal, batched heads) are witnessed the same way.
    q, k, v = _qkv(ctx, 40, 16)
    _run(mod, q, k, v, causal=False, block_n=32)


@check(
    "fp16-large-scores",
    "fp16 q.k products past 65,504 (logits near 31,000 after the 1/sqrt(D) scale)",
    why="the scores of fp16 inputs must be accumulated and kept in fp32: q.k here reaches "
    "125,000, which an fp16 dot or an fp16 copy of the scores turns into inf and the "
    "output into NaN",
    section=SECTION_RECURRENCE,
    cost=2,
)
def fp16_large_scores(mod, ctx):
    n, d = 70, 16
    q, k, v = _qkv(ctx, n, d, torch.float64)
    g = ctx.torch_generator()
    rank = torch.randint(0, 16, (n,), generator=g).to(torch.float64)
    q.zero_()
    k.zero_()
    q[:, :2] = 250.0
    k[:, :2] = (250.0 - 0.125 * rank)[:, None].to(k.device)  # exact in fp16
    q, k, v = (t.to(FP16) for t in (q, k, v))
    for causal in (False, True):
        _run(mod, q, k, v, causal=causal, block_n=32, what="scores near 31,000: ")


@check(
    "bf16-beyond-fp16",
    "bf16 values near +/-70,000, past fp16's largest value (65,504)",
    why="bf16 reaches 3e38 while fp16 stops at 65,504: a kernel that converts bf16 through "
    "fp16 (the P@V product, its accumulator or the store) returns inf",
    section=SECTION_PRECISION,
    interpreter=False,
    interpreter_reason=BF16_REASON,
    cost=2,
)
def bf16_beyond_fp16(mod, ctx):
    n, d = 100, 64
    q, k, _ = _qkv(ctx, n, d, BF16)
    v = beyond_fp16((n, d), ctx=ctx)
    v = v * torch.where(torch.arange(d, device=v.device) % 2 == 0, 1.0, -1.0).to(BF16)
    for causal in (False, True):
        _run(mod, q, k, v, causal=causal, block_n=64, what="v near +/-70,000: ")


CASES = collect(globals())
