"""The checks of streaming_attention that need a CUDA GPU (bf16 tl.dot, CUDA streams, tensors
past 2^31 elements): skipped, with the reason, in Triton's interpreter.  The engine finds
this module beside checks/judging/cases/streaming_attention.py."""

import torch

from checks.judging.case import CheckFailed, Unavailable, check, collect
from checks.judging.cases.streaming_attention import (
    BF16,
    BF16_REASON,
    FP16,
    STREAM_REASON,
    attention_oracle,
    extreme_inputs,
    growing_max_inputs,
    make_qkv,
    run_attention,
)
from checks.judging.tensors import assert_close


@check(
    "bf16-basic",
    "bf16: ragged N, D=16/64, both causal, both block_n (each once)",
    why="every supported dtype; P is converted to bf16 before the P@V dot",
    section="Precision: P in the input dtype",
    cost=3,
    interpreter=False,
    interpreter_reason=BF16_REASON,
    properties=("bf16", "ragged"),
)
def bf16_basic(mod, ctx):
    ctx.require_gpu(BF16_REASON)
    # The bf16 hazards check crosses causal and block_n at N=160, D=64; here each length,
    # head dim, mask and block_n comes once with the others (each combination is one more
    # kernel to compile), and N=2048 (divisible by 16, like 160) reuses the hazards' kernels.
    for n, d, causal, block_n in (
        (1, 16, True, 32),
        (100, 64, True, 64),
        (129, 16, False, 64),
        (2048, 64, False, 32),
        (2048, 64, True, 64),
    ):
        q, k, v = make_qkv(ctx, n, d, BF16)
        run_attention(mod, q, k, v, causal=causal, block_n=block_n)


@check(
    "bf16-hazards",
    "bf16: scores rising tile by tile, and logits near +/-1000",
    why="the numeric hazards again at bf16's 8-bit mantissa",
    section="Precision: P in the input dtype",
    cost=3,
    interpreter=False,
    interpreter_reason=BF16_REASON,
    properties=("bf16", "large-magnitudes"),
)
def bf16_hazards(mod, ctx):
    ctx.require_gpu(BF16_REASON)
    for make in (growing_max_inputs, extreme_inputs):
        q, k, v = make(ctx, 160, 64, BF16)
        for causal in (False, True):
            for block_n in (32, 64):
                run_attention(mod, q, k, v, causal=causal, block_n=block_n)


@check(
    "non-default-stream",
    "a call inside torch.cuda.stream(s) runs on s and is correct after s syncs",
    why="a kernel launched on the wrong stream races with the caller's work",
    section="The contract",
    cost=3,
    interpreter=False,
    interpreter_reason=STREAM_REASON,
)
def non_default_stream(mod, ctx):
    ctx.require_gpu(STREAM_REASON)
    q, k, v = make_qkv(ctx, 300, 64)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        busy = torch.full((4096, 4096), 1.0, device="cuda")  # queue work ahead of the kernel on s
        for _ in range(4):
            busy = busy @ busy * 1e-4
        got = mod.attention(q, k, v, causal=True, block_n=64)
    side.synchronize()
    del busy
    assert_close(got, attention_oracle(q, k, v, True), dtype=FP16, name="attention on a side stream")


INT32_LIMIT = 2**31  # elements: the first offset a signed 32-bit int cannot hold
BIG_REASON = (
    "needs a CUDA GPU: tensors past 2^31 elements (4.3 GB each in fp16) are far too large "
    "for Triton's interpreter"
)
BIG_GIB = 20  # q, k, v and the output at 4.3 GB each (then one 6.4 GB tensor alone)


def _right_or_refused(what, call, compare) -> tuple:
    """``call()`` must either raise ValueError naming q, k or v (the contract's refusal) or
    return a result that ``compare`` accepts: (refused, a note).  A CUDA fault fails."""
    try:
        got = call()
        torch.cuda.synchronize()
    except ValueError as e:
        if not any(f"{name}:" in str(e) or f"{name} " in str(e) for name in "qkv"):
            raise CheckFailed(
                f"{what}: raised ValueError ({e}) but the message does not name q, k or v"
            ) from None
        return True, f"{what}: refused ({e})"
    except NotImplementedError:  # a RuntimeError too: the learner's TODO, not a fault
        raise
    except RuntimeError as e:  # an illegal address surfaces here (and spoils later CUDA work)
        raise CheckFailed(
            f"{what}: the kernel faulted ({str(e).splitlines()[0][:160]}): an offset past 2^31 "
            f"elements computed in 32 bits wraps to a negative address; compute the head offsets "
            f"from tl.program_id(0).to(tl.int64)"
        ) from None
    compare(got)
    return False, f"{what}: right"


def many_heads_shape() -> tuple:
    """[B, H, N, D] with the fewest heads whose elements pass 2^31: N = 2048 and D = 64 (the
    longest batched sequence the benchmark uses) make a head of 2^17 elements, so 2^14 + 1
    = 16,385 heads, the last one starting exactly at element 2^31.  B = 5 and H = 3,277
    (5 x 3,277 = 16,385) make both b * stride_b and h * stride_h large: a 32-bit sum of the
    two wraps as a 32-bit product does.  Few heads keep a right design that launches one
    kernel per head (the contract allows it) to 2 x 16,385 launches, a few seconds."""
    n, d = 2048, 64
    heads = INT32_LIMIT // (n * d) + 1
    return (5, heads // 5, n, d)


def _many_heads(mod, ctx, gen) -> list:
    """[5, 3277, 2048, 64] fp16 (2^31 + 131,072 elements): heads on both sides of element
    2^31 compared with the float64 oracle, or the call refused."""
    shape = batch, heads, n, d = many_heads_shape()
    per_head = n * d
    q, k, v = (torch.randn(shape, generator=gen, device="cuda", dtype=FP16) for _ in range(3))
    first_past = INT32_LIMIT // per_head  # the first head whose elements start at 2^31
    sampled = sorted({0, heads - 1, heads, first_past - 1, first_past, batch * heads - 1})
    # The oracle first, from inputs no kernel has run on (a wrapped store may land in them).
    # One call, non-causal: where a head starts does not depend on the mask (the causal mask is
    # checked at every other scale), and a second call would double the 16,385 launches of a
    # design that launches one kernel per head.
    modes = (False,)
    expected = {
        (g, causal): attention_oracle(
            q[divmod(g, heads)], k[divmod(g, heads)], v[divmod(g, heads)], causal, device="cpu"
        )
        for g in sampled
        for causal in modes
    }
    notes = []
    for causal in modes:

        def compare(got, causal=causal):
            if not isinstance(got, torch.Tensor) or tuple(got.shape) != shape:
                raise CheckFailed(f"expected a tensor of shape {shape}, got {getattr(got, 'shape', got)!r}")
            for g in sampled:
                b, h = divmod(g, heads)
                assert_close(
                    got[b, h],
                    expected[g, causal],
                    dtype=FP16,
                    name=f"head (b={b}, h={h}) of attention{shape} (its elements start at "
                    f"{g * per_head:,}), causal={causal}",
                )

        what = f"[B, H, N, D] = {list(shape)} ({q.numel():,} elements), causal={causal}"
        refused, note = _right_or_refused(what, lambda c=causal: mod.attention(q, k, v, causal=c), compare)
        notes.append(note)
        if refused:
            break
    return notes


def _wide_head(mod, ctx, gen) -> str:
    """One head whose own rows span past 2^31 elements: the contract refuses it (offsets
    within a head are 32-bit); a kernel that addresses rows in 64 bits may compute it."""
    rows, d, stride = 3, 64, 2**30 + 64  # (3 - 1) * stride = 2^31 + 128
    base = torch.zeros((rows, stride), device="cuda", dtype=FP16)
    base[:, :d] = torch.randn((rows, d), generator=gen, device="cuda", dtype=FP16)
    wide = base[:, :d][None, None]  # [1, 1, 3, 64], row stride 2^30 + 64
    expected = attention_oracle(wide[0, 0], wide[0, 0], wide[0, 0], False, device="cpu")  # before the call

    def compare(got):
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(wide.shape):
            raise CheckFailed(
                f"expected a tensor of shape {tuple(wide.shape)}, got {getattr(got, 'shape', got)!r}"
            )
        assert_close(got[0, 0], expected, dtype=FP16, name=f"one head with row stride {stride:,}")

    what = f"one head with row stride {stride:,} (its rows span {2 * stride + d - 1:,} elements)"
    return _right_or_refused(what, lambda: mod.attention(wide, wide, wide), compare)[1]


@check(
    "heads-past-int32",
    "[B, H, N, D] past 2^31 elements: sampled heads on both sides of 2^31 match the oracle",
    why="the contract allows any B x H: head * N * D passes 2^31 there, and an offset computed "
    "in 32 bits wraps, so heads past the boundary read and write the wrong memory",
    section="Offsets past 2^31",
    cost=9,  # last: a kernel that faults here spoils every later CUDA call of the process
    interpreter=False,
    interpreter_reason=BIG_REASON,
)
def heads_past_int32(mod, ctx):
    ctx.require_gpu(BIG_REASON)
    free, _ = torch.cuda.mem_get_info()
    if free < BIG_GIB * 2**30:
        raise Unavailable(f"needs {BIG_GIB} GiB of free GPU memory; {free / 2**30:.0f} GiB are free")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(ctx.seed)
    try:
        notes = _many_heads(mod, ctx, gen)
    finally:
        _release()  # the four 4.3 GB tensors are gone once _many_heads returns
    try:
        notes.append(_wide_head(mod, ctx, gen))
    finally:
        _release()
    return "; ".join(notes)


def _release() -> None:
    """Hand the cached blocks back to the driver; after a fault that fails too, and the
    fault is what the check reports."""
    try:
        torch.cuda.empty_cache()
    except RuntimeError:
        pass


CASES = collect(globals())
