"""The argument checks of strided_softmax's contract: what the wrapper must reject (TypeError or
ValueError naming the argument) or accept, before any kernel runs.  The engine
finds this module beside checks/judging/cases/strided_softmax.py."""

import torch

from checks.judging.case import check, collect
from checks.judging.cases.strided_softmax import SECTION_CONTRACT, SECTION_EDGES, expect_softmax
from checks.judging.tensors import expect_rejects, randn


@check(
    "rejects-width",
    "0 columns and 8193 columns raise ValueError naming x",
    why="past the limit one program cannot hold a row; 0 columns has no softmax",
    section=SECTION_EDGES,
    cost=1,
)
def rejects_width(mod, ctx):
    expect_rejects(
        lambda: mod.softmax(torch.empty((2, 8193), device=ctx.device)),
        (ValueError,),
        ["x"],
        "a (2, 8193) input",
    )
    expect_rejects(
        lambda: mod.softmax(torch.empty((8193, 2), device=ctx.device).t()),
        (ValueError,),
        ["x"],
        "a (2, 8193) transposed input",
    )
    expect_rejects(
        lambda: mod.softmax(torch.empty((3, 0), device=ctx.device)), (ValueError,), ["x"], "a (3, 0) input"
    )


@check(
    "requires-grad-no-grad",
    "a requires_grad input is accepted under torch.no_grad()",
    why="the rejection is about autograd being on, not about the flag itself",
    section=SECTION_CONTRACT,
    cost=2,
)
def requires_grad_no_grad(mod, ctx):
    x = randn((3, 40), ctx=ctx).requires_grad_(True)
    with torch.no_grad():
        expect_softmax(mod, x, "x (requires_grad, under no_grad)")


@check(
    "rejects-type",
    "a non-tensor or a wrong dtype raises TypeError naming x",
    why="float64 or integer inputs would be silently reinterpreted by a float kernel",
    section=SECTION_CONTRACT,
    cost=1,
)
def rejects_type(mod, ctx):
    expect_rejects(lambda: mod.softmax([[1.0, 2.0]]), (TypeError,), ["x"], "a list")
    for dtype in (torch.float64, torch.int32):
        expect_rejects(
            lambda: mod.softmax(torch.zeros((2, 8), dtype=dtype, device=ctx.device)),
            (TypeError,),
            ["x"],
            f"a {dtype} tensor",
        )


@check(
    "rejects-rank",
    "1D and 3D inputs raise ValueError naming x",
    why="the kernel reads exactly two strides",
    section=SECTION_CONTRACT,
    cost=1,
)
def rejects_rank(mod, ctx):
    expect_rejects(
        lambda: mod.softmax(torch.zeros(8, device=ctx.device)), (ValueError,), ["x"], "a 1D tensor"
    )
    expect_rejects(
        lambda: mod.softmax(torch.zeros((2, 3, 4), device=ctx.device)), (ValueError,), ["x"], "a 3D tensor"
    )


@check(
    "rejects-num-warps",
    "num_warps other than 4/8 raises ValueError; non-int TypeError",
    why="an unchecked option compiles a variant nobody tested",
    section=SECTION_CONTRACT,
    cost=1,
)
def rejects_num_warps(mod, ctx):
    x = torch.zeros((2, 8), device=ctx.device)
    w: object  # values of the right type first, then of wrong types
    for w in (2, 16, 0):
        expect_rejects(lambda: mod.softmax(x, num_warps=w), (ValueError,), ["num_warps"], f"num_warps={w}")
    for w in (4.0, "4", True, None):
        expect_rejects(lambda: mod.softmax(x, num_warps=w), (TypeError,), ["num_warps"], f"num_warps={w!r}")


@check(
    "rejects-requires-grad",
    "requires_grad while autograd is on raises ValueError naming x",
    why="these kernels register no backward; a silent result would break training",
    section=SECTION_CONTRACT,
    cost=1,
)
def rejects_requires_grad(mod, ctx):
    x = torch.zeros((2, 8), device=ctx.device, requires_grad=True)
    with torch.enable_grad():
        expect_rejects(lambda: mod.softmax(x), (ValueError,), ["x"], "a requires_grad input")


@check(
    "rejects-device",
    "a tensor on the wrong device raises ValueError naming x",
    why="a kernel launched on the wrong device's memory faults or reads garbage",
    section=SECTION_CONTRACT,
    cost=1,
)
def rejects_device(mod, ctx):
    if ctx.device == "cuda":
        x, what = torch.zeros((2, 8)), "a CPU tensor"
    else:
        x, what = torch.empty((2, 8), device="meta"), "a meta tensor"
    expect_rejects(lambda: mod.softmax(x), (ValueError,), ["x"], what)


CASES = collect(globals())
