"""The argument checks of split_softmax's contract: what the wrapper must reject (TypeError or
ValueError naming the argument) or accept, before any kernel runs.  The engine
finds this module beside checks/judging/cases/split_softmax.py."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.split_softmax import MAX_COLS, call_split, split_oracle
from checks.judging.tensors import assert_close, expect_rejects, randn


@check(
    "rejects-bad-type-or-dtype",
    "a non-tensor or a float64/int input is a TypeError naming x",
    why="a silent cast hides a caller's mistake and doubles the traffic",
    section="The contract",
    cost=1,
)
def rejects_bad_type_or_dtype(mod, ctx):
    expect_rejects(lambda: mod.softmax([[1.0, 2.0]]), (TypeError,), ["x"], "a list")
    for dtype in (torch.float64, torch.int32, torch.int64):
        x = torch.zeros((2, 8), dtype=dtype, device=ctx.device)
        expect_rejects(lambda: mod.softmax(x), (TypeError,), ["x"], f"a {dtype} input")


@check(
    "rejects-bad-shape",
    "1D and 3D inputs are a ValueError naming x",
    why="the kernel indexes row * n_cols + col: it is written for exactly two dimensions",
    section="The contract",
    cost=1,
)
def rejects_bad_shape(mod, ctx):
    for shape in ((8,), (2, 3, 8)):
        x = torch.zeros(shape, device=ctx.device)
        expect_rejects(lambda: mod.softmax(x), (ValueError,), ["x"], f"a {len(shape)}D input")


@check(
    "rejects-widths",
    "0 and 131073 columns are a ValueError naming x",
    why="the contract stops at 131072; zero columns has no maximum to normalize by",
    section="The contract",
    cost=1,
)
def rejects_widths(mod, ctx):
    for cols in (0, MAX_COLS + 1):
        x = torch.zeros((1, cols), device=ctx.device)
        expect_rejects(lambda: mod.softmax(x), (ValueError,), ["x"], f"{cols} columns")


@check(
    "rejects-non-contiguous",
    "transposes, column slices and expanded rows are a ValueError naming x",
    why="the kernels assume row stride n_cols and column stride 1 (the contract asks for contiguous x)",
    section="The contract",
    cost=1,
)
def rejects_non_contiguous(mod, ctx):
    base = torch.zeros((8, 6), device=ctx.device)
    layouts = {
        "a transpose": base.t(),
        "a column slice": base[:, 1:4],
        "every other column": base[:, ::2],
        "an expanded row (stride 0)": torch.zeros((1, 6), device=ctx.device).expand(3, 6),
    }
    for what, x in layouts.items():
        expect_rejects(lambda: mod.softmax(x), (ValueError,), ["x"], what)


@check(
    "rejects-bad-chunk-size",
    "chunk_size outside 256/1024/4096 is a ValueError; a non-int a TypeError",
    why="the launch grid and the constexpr CHUNK come from chunk_size: only three are supported",
    section="The contract",
    cost=1,
)
def rejects_bad_chunk_size(mod, ctx):
    x = torch.zeros((2, 8), device=ctx.device)
    bad: object  # values of the right type first, then of wrong types
    for bad in (0, -1024, 512, 2048, 8192):
        expect_rejects(
            lambda: mod.softmax(x, chunk_size=bad), (ValueError,), ["chunk_size"], f"chunk_size={bad}"
        )
    for bad in (1024.0, "1024", None, True):
        expect_rejects(
            lambda: mod.softmax(x, chunk_size=bad), (TypeError,), ["chunk_size"], f"chunk_size={bad!r}"
        )
    expect_rejects(
        lambda: mod.scratch_bytes(4, 32769, 512),
        (ValueError,),
        ["chunk_size"],
        "scratch_bytes(..., chunk_size=512)",
    )


@check(
    "rejects-device-and-grad",
    "a tensor on the wrong device or requiring grad is a ValueError naming x",
    why="kernels register no backward, and a pointer from the wrong device faults",
    section="The contract",
    cost=1,
)
def rejects_device_and_grad(mod, ctx):
    meta = torch.zeros((2, 8), device="meta")
    expect_rejects(lambda: mod.softmax(meta), (ValueError,), ["x"], "a meta-device tensor")
    if ctx.device == "cuda":
        cpu = torch.zeros((2, 8))
        expect_rejects(lambda: mod.softmax(cpu), (ValueError,), ["x"], "a CPU tensor")
    x = randn((2, 300), ctx=ctx).requires_grad_()
    expect_rejects(lambda: mod.softmax(x), (ValueError,), ["x"], "requires_grad with autograd on")


@check(
    "no-grad-accepted",
    "an x that requires grad is accepted under torch.no_grad()",
    why="the contract rejects requires_grad only while autograd is enabled",
    section="The contract",
    cost=1,
)
def no_grad_accepted(mod, ctx):
    x = randn((2, 300), ctx=ctx).requires_grad_()
    with torch.no_grad():  # no graph is being recorded, so nothing is lost
        got = call_split(mod, x)
    assert_close(got, split_oracle(x), dtype=x.dtype, name="softmax of a requires_grad x under no_grad")


CASES = collect(globals())
