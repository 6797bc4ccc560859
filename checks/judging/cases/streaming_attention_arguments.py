"""The argument checks of streaming_attention's contract: what the wrapper must reject (TypeError or
ValueError naming the argument) or accept, before any kernel runs.  The engine
finds this module beside checks/judging/cases/streaming_attention.py."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.streaming_attention import BF16, FP16, make_qkv
from checks.judging.tensors import expect_rejects


@check(
    "rejects-dtype",
    "fp32 inputs, mixed fp16/bf16 and non-tensors raise TypeError naming the argument",
    why="the contract is fp16/bf16 with one dtype for q, k and v; fp32 would need another kernel",
    section="The contract",
    cost=1,
)
def rejects_dtype(mod, ctx):
    q, k, v = make_qkv(ctx, 8, 16)
    expect_rejects(
        lambda: mod.attention(q.float(), k.float(), v.float()), (TypeError,), ["q"], "fp32 q, k, v"
    )
    expect_rejects(lambda: mod.attention(q, k.to(BF16), v), (TypeError,), ["k"], "fp16 q with bf16 k")
    expect_rejects(lambda: mod.attention(q, k, v.to(BF16)), (TypeError,), ["v"], "fp16 q with bf16 v")
    expect_rejects(lambda: mod.attention(q, k, v.double()), (TypeError,), ["v"], "fp64 v")
    expect_rejects(lambda: mod.attention(q.tolist(), k, v), (TypeError,), ["q"], "q given as a list")
    expect_rejects(lambda: mod.attention(q, None, v), (TypeError,), ["k"], "k=None")


@check(
    "rejects-shape",
    "mismatched shapes and non-2D inputs raise ValueError naming the argument",
    why="single-head self-attention: q, k, v are all [N, D]",
    section="The contract",
    cost=1,
)
def rejects_shape(mod, ctx):
    q, k, v = make_qkv(ctx, 12, 16)
    expect_rejects(lambda: mod.attention(q, k[:8].contiguous(), v), (ValueError,), ["k"], "k with fewer rows")
    expect_rejects(lambda: mod.attention(q, k, v[:8].contiguous()), (ValueError,), ["v"], "v with fewer rows")
    k32 = torch.zeros(12, 32, dtype=FP16, device=ctx.device)
    expect_rejects(lambda: mod.attention(q, k32, v), (ValueError,), ["k"], "k with a different D")
    expect_rejects(lambda: mod.attention(q[0], k[0], v[0]), (ValueError,), ["q"], "1D q, k, v")
    expect_rejects(
        lambda: mod.attention(q[None], k[None], v[None]),
        (ValueError,),
        ["q"],
        "3D q, k, v (batches are not part of the contract)",
    )


@check(
    "rejects-head-dim",
    "D outside 16/32/64 raises ValueError naming q",
    why="the kernel's D is a compile-time block; other widths are outside the contract",
    section="The contract",
    cost=1,
)
def rejects_head_dim(mod, ctx):
    for d in (8, 48, 128):
        q, k, v = (torch.zeros(4, d, dtype=FP16, device=ctx.device) for _ in range(3))
        expect_rejects(lambda: mod.attention(q, k, v), (ValueError,), ["q"], f"D={d}")


@check(
    "rejects-long-sequence",
    "N=2049, one past the longest supported length, raises ValueError naming q",
    why="the contract stops at N=2048",
    section="The contract",
    cost=1,
)
def rejects_long_sequence(mod, ctx):
    q = torch.zeros(2049, 16, dtype=FP16, device=ctx.device)
    expect_rejects(lambda: mod.attention(q, q.clone(), q.clone()), (ValueError,), ["q"], "N=2049")
    expect_rejects(
        lambda: mod.attention(q, q.clone(), q.clone(), causal=True), (ValueError,), ["q"], "N=2049, causal"
    )


@check(
    "rejects-causal",
    "causal that is not a bool (1, 'yes', None) raises TypeError naming causal",
    why="causal=1 or 'yes' silently meaning True hides bugs in the caller",
    section="The contract",
    cost=1,
)
def rejects_causal(mod, ctx):
    q, k, v = make_qkv(ctx, 4, 16)
    for bad in (1, 0, "yes", None, 1.0):
        expect_rejects(
            lambda: mod.attention(q, k, v, causal=bad), (TypeError,), ["causal"], f"causal={bad!r}"
        )


@check(
    "rejects-block-n",
    "block_n outside 32/64 raises ValueError; a non-int raises TypeError",
    why="block_n is a compile-time tile size; the contract allows 32 and 64",
    section="The contract",
    cost=1,
)
def rejects_block_n(mod, ctx):
    q, k, v = make_qkv(ctx, 4, 16)
    bad: object  # values of the right type first, then of wrong types
    for bad in (16, 48, 128, 0):
        expect_rejects(
            lambda: mod.attention(q, k, v, block_n=bad), (ValueError,), ["block_n"], f"block_n={bad}"
        )
    for bad in (32.0, "32", True, None):
        expect_rejects(
            lambda: mod.attention(q, k, v, block_n=bad), (TypeError,), ["block_n"], f"block_n={bad!r}"
        )


@check(
    "rejects-layout",
    "non-contiguous q, k or v (transpose, column slice, expand) raises ValueError",
    why="the kernel addresses row i at i*D: any other layout would be read wrongly",
    section="The contract",
    cost=1,
)
def rejects_layout(mod, ctx):
    q, k, v = make_qkv(ctx, 16, 16)
    wide = torch.zeros(16, 48, dtype=FP16, device=ctx.device)
    expect_rejects(lambda: mod.attention(q.t(), k, v), (ValueError,), ["q"], "transposed q")
    expect_rejects(
        lambda: mod.attention(q, wide[:, 16:32], v),
        (ValueError,),
        ["k"],
        "k as a column slice of a packed [N, 3D] tensor",
    )
    expect_rejects(
        lambda: mod.attention(q, k, v[:1].expand(16, 16)),
        (ValueError,),
        ["v"],
        "v broadcast with a zero row stride (expand)",
    )


@check(
    "rejects-device",
    "q, k, v on the wrong device raise ValueError naming the argument",
    why="a kernel cannot read host memory (or another device's)",
    section="The contract",
    cost=1,
)
def rejects_device(mod, ctx):
    other = "cpu" if ctx.device == "cuda" else "meta"
    q, k, v = make_qkv(ctx, 8, 16)
    expect_rejects(lambda: mod.attention(q.to(other), k, v), (ValueError,), ["q"], f"q on {other}")
    expect_rejects(lambda: mod.attention(q, k.to(other), v), (ValueError,), ["k"], f"k on {other}")
    expect_rejects(lambda: mod.attention(q, k, v.to(other)), (ValueError,), ["v"], f"v on {other}")


@check(
    "rejects-requires-grad",
    "an input that requires grad (autograd on) raises ValueError naming it",
    why="forward only: no backward is registered, so gradients would silently be missing",
    section="The contract",
    cost=1,
)
def rejects_requires_grad(mod, ctx):
    q, k, v = make_qkv(ctx, 8, 16)
    qg = q.clone().requires_grad_(True)
    with torch.enable_grad():
        expect_rejects(lambda: mod.attention(qg, k, v), (ValueError,), ["q"], "q.requires_grad")


CASES = collect(globals())
