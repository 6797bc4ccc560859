"""The checks of softmax_backward that need a CUDA GPU (bf16 tl.dot, CUDA streams): skipped,
with the reason, in Triton's interpreter.  The engine finds this module beside
checks/judging/cases/softmax_backward.py."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.softmax_backward import backward_inputs, vjp64
from checks.judging.tensors import assert_close


@check(
    "nondefault-stream",
    "runs on the caller's current CUDA stream",
    why="a kernel launched on the default stream races with work queued on the caller's stream",
    section="Edge cases and the contract",
    cost=3,
    interpreter=False,
    interpreter_reason="needs a real GPU: the interpreter has no CUDA streams",
)
def nondefault_stream(mod, ctx):
    ctx.require_gpu("needs a CUDA GPU for a non-default stream")
    rows, cols = 512, 4097
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        # Produce the inputs on the side stream, then call at once: a launch on the
        # default stream would not wait for them.
        y, g = backward_inputs(ctx, (rows, cols), torch.float16)
        y = y * 1.0
        g = g * 1.0
        got = mod.backward(y, g)
        got = got * 1.0  # consume on the same stream before syncing
    stream.synchronize()
    assert_close(got, vjp64(y, g), dtype=torch.float16, name="backward on a side stream", device=ctx.device)


CASES = collect(globals())
