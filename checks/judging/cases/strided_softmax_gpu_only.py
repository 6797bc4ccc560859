"""The checks of strided_softmax that need a CUDA GPU (CUDA streams, tens of thousands of
rows): skipped, with the reason, in Triton's interpreter.  The engine finds this module
beside checks/judging/cases/strided_softmax.py."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.strided_softmax import (
    SECTION_CONTRACT,
    SECTION_TILES,
    expect_softmax,
    softmax_oracle,
    transposed_input,
)
from checks.judging.tensors import assert_close, keep_stream_busy, randn


@check(
    "non-default-stream",
    "runs on the caller's current CUDA stream",
    why="a launch on the default stream races with the producer of x on another stream",
    section=SECTION_CONTRACT,
    cost=3,
    interpreter=False,
    interpreter_reason="CUDA streams exist only on a GPU",
)
def non_default_stream(mod, ctx):
    ctx.require_gpu("a non-default CUDA stream needs a GPU")
    base = randn((512, 64), ctx=ctx)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        keep_stream_busy()  # so a race would show
        x = (base * 2.0).t()  # produced on `stream`, (64, 512) transposed
        got = mod.softmax(x)
        got2 = mod.softmax(x.contiguous())
    stream.synchronize()
    assert_close(got, softmax_oracle(x), dtype=torch.float32, name="softmax(x.t()) on a side stream")
    assert_close(got2, softmax_oracle(x), dtype=torch.float32, name="softmax(x) on a side stream")


@check(
    "large-row-blocks",
    "enough rows for full-cache-line row blocks (32 fp32 / 64 16-bit rows)",
    why="large row counts select the tiled path's biggest row blocks, with a partial last block",
    section=SECTION_TILES,
    cost=5,
    interpreter=False,
    interpreter_reason="~42,000 rows: minutes in the interpreter for a one-row-per-program "
    "kernel (one program at a time); the tests run those tile shapes on "
    "small inputs",
    properties=("many-rows", "ragged-rows", "ragged"),
)
def large_row_blocks(mod, ctx):
    ctx.require_gpu("large row counts are checked on a GPU")
    # 8500 fp32 rows and 16900 / 16897 half rows: the reference then owns 32 / 64 rows per
    # program (a 128-byte column segment); the last row block is partial in every case.
    expect_softmax(mod, transposed_input(8500, 70, ctx=ctx, scale=3.0), "x.t()")
    expect_softmax(
        mod, transposed_input(16900, 40, ctx=ctx, dtype=torch.float16, scale=3.0), "x.t()", num_warps=8
    )
    expect_softmax(mod, transposed_input(16897, 33, ctx=ctx, dtype=torch.bfloat16, scale=3.0), "x.t()")


CASES = collect(globals())
