"""The checks of streaming_attention that need a CUDA GPU (bf16 tl.dot, CUDA streams): skipped,
with the reason, in Triton's interpreter.  The engine finds this module beside
checks/judging/cases/streaming_attention.py."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.streaming_attention import (
    BF16,
    BF16_REASON,
    FP16,
    STREAM_REASON,
    _extreme_inputs,
    _growing_max_inputs,
    _oracle,
    _qkv,
    _run,
)
from checks.judging.tensors import assert_close


@check(
    "bf16-basic",
    "bf16: ragged N, D=16/64, both causal, both block_n",
    why="every supported dtype; P is converted to bf16 before the P@V dot",
    section="Precision: P in the input dtype",
    cost=3,
    interpreter=False,
    interpreter_reason=BF16_REASON,
)
def bf16_basic(mod, ctx):
    ctx.require_gpu(BF16_REASON)
    for n, d in ((1, 16), (100, 64), (129, 16), (2048, 64)):
        q, k, v = _qkv(ctx, n, d, BF16)
        for causal in (False, True):
            for block_n in (32, 64):
                _run(mod, q, k, v, causal=causal, block_n=block_n)


@check(
    "bf16-hazards",
    "bf16: scores rising tile by tile, and logits near +/-1000",
    why="the numeric hazards again at bf16's 8-bit mantissa",
    section="Precision: P in the input dtype",
    cost=3,
    interpreter=False,
    interpreter_reason=BF16_REASON,
)
def bf16_hazards(mod, ctx):
    ctx.require_gpu(BF16_REASON)
    for make in (_growing_max_inputs, _extreme_inputs):
        q, k, v = make(ctx, 160, 64, BF16)
        for causal in (False, True):
            for block_n in (32, 64):
                _run(mod, q, k, v, causal=causal, block_n=block_n)


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
    q, k, v = _qkv(ctx, 300, 64)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        busy = torch.full((4096, 4096), 1.0, device="cuda")  # queue work ahead of the kernel on s
        for _ in range(4):
            busy = busy @ busy * 1e-4
        got = mod.attention(q, k, v, causal=True, block_n=64)
    side.synchronize()
    del busy
    assert_close(got, _oracle(q, k, v, True), dtype=FP16, name="attention on a side stream")


CASES = collect(globals())
