"""The argument checks of softmax_backward's contract: what the wrapper must reject (TypeError or
ValueError naming the argument) or accept, before any kernel runs.  The engine
finds this module beside checks/judging/cases/softmax_backward.py."""

import torch

from checks.judging.case import CheckFailed, check, collect
from checks.judging.cases.softmax_backward import MAX_COLS, backward_inputs, dtype_name, vjp64
from checks.judging.tensors import assert_close, expect_rejects


@check(
    "no-autograd-graph",
    "under torch.no_grad, requires_grad inputs work and no graph is recorded",
    why="the contract registers no backward: the output must not claim a grad_fn",
    section="Edge cases and the contract",
    cost=1,
)
def no_autograd_graph(mod, ctx):
    y, g = backward_inputs(ctx, (2, 9), torch.float32)
    yr, gr = y.clone().requires_grad_(True), g.clone().requires_grad_(True)
    with torch.no_grad():
        got = mod.backward(yr, gr)
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"backward returned {type(got).__name__}, not a tensor")
    if got.requires_grad or got.grad_fn is not None:
        for name, given in (("y", yr), ("grad_output", gr)):
            if got.numel() and got.untyped_storage().data_ptr() == given.untyped_storage().data_ptr():
                raise CheckFailed(
                    f"the output is {name} itself (or a view of it), which requires grad: dx must go "
                    f"to a fresh tensor (torch.empty_like), not into an input"
                )
        raise CheckFailed("the output requires grad / has a grad_fn; no autograd registration is expected")
    assert_close(got, vjp64(y, g), dtype=torch.float32, name="backward under no_grad", device=ctx.device)


@check(
    "rejects-types",
    "non-tensors and unsupported or mismatched dtypes raise TypeError",
    why="float64 or int inputs would be reinterpreted by the kernel's loads",
    section="Edge cases and the contract",
    cost=1,
)
def rejects_types(mod, ctx):
    d = ctx.device
    y = torch.rand(2, 8, device=d)
    g = torch.randn(2, 8, device=d)
    expect_rejects(lambda: mod.backward([[0.5, 0.5]], g), (TypeError,), ["y"], "a list as y")
    expect_rejects(lambda: mod.backward(y, None), (TypeError,), ["grad_output"], "None as grad_output")
    for bad in (torch.float64, torch.int32):
        expect_rejects(
            lambda: mod.backward(y.to(bad), g.to(bad)), (TypeError,), ["y"], f"{dtype_name(bad)} inputs"
        )
    expect_rejects(
        lambda: mod.backward(y, g.to(torch.float16)),
        (TypeError,),
        ["grad_output"],
        "y fp32 with grad_output fp16",
    )
    expect_rejects(
        lambda: mod.backward(y.to(torch.bfloat16), g.to(torch.float16)),
        (TypeError,),
        ["grad_output"],
        "y bf16 with grad_output fp16",
    )


@check(
    "rejects-shapes",
    "wrong rank, mismatched shapes, 0 or 8193 columns raise ValueError",
    why="a width past 8192 does not fit one program; a shape mismatch would read past grad_output",
    section="Edge cases and the contract",
    cost=1,
)
def rejects_shapes(mod, ctx):
    d = ctx.device
    expect_rejects(
        lambda: mod.backward(torch.rand(8, device=d), torch.rand(8, device=d)),
        (ValueError,),
        ["y"],
        "1D inputs",
    )
    expect_rejects(
        lambda: mod.backward(torch.rand(2, 2, 8, device=d), torch.rand(2, 2, 8, device=d)),
        (ValueError,),
        ["y"],
        "3D inputs",
    )
    expect_rejects(
        lambda: mod.backward(torch.rand(2, 8, device=d), torch.rand(2, 9, device=d)),
        (ValueError,),
        ["grad_output"],
        "grad_output 2x9 for y 2x8",
    )
    expect_rejects(
        lambda: mod.backward(torch.rand(2, 8, device=d), torch.rand(3, 8, device=d)),
        (ValueError,),
        ["grad_output"],
        "grad_output 3x8 for y 2x8",
    )
    expect_rejects(
        lambda: mod.backward(torch.rand(2, MAX_COLS + 1, device=d), torch.rand(2, MAX_COLS + 1, device=d)),
        (ValueError,),
        ["y"],
        f"{MAX_COLS + 1} columns",
    )
    expect_rejects(
        lambda: mod.backward(torch.rand(2, 0, device=d), torch.rand(2, 0, device=d)),
        (ValueError,),
        ["y"],
        "0 columns",
    )


@check(
    "rejects-options",
    "num_warps other than 4 or 8 is rejected (ValueError; TypeError if not an int)",
    why="an unchecked option compiles a variant nobody tested",
    section="Edge cases and the contract",
    cost=1,
)
def rejects_options(mod, ctx):
    y = torch.rand(2, 8, device=ctx.device)
    g = torch.randn(2, 8, device=ctx.device)
    bad: object  # values of the right type first, then of wrong types
    for bad in (1, 2, 16, 0, -4):
        expect_rejects(
            lambda: mod.backward(y, g, num_warps=bad), (ValueError,), ["num_warps"], f"num_warps={bad}"
        )
    for bad in (4.0, "4", True, None):
        expect_rejects(
            lambda: mod.backward(y, g, num_warps=bad), (TypeError,), ["num_warps"], f"num_warps={bad!r}"
        )


@check(
    "rejects-device-and-grad",
    "wrong device, mismatched devices and requires_grad raise ValueError",
    why="the kernel cannot read another device's memory, and no backward is registered",
    section="Edge cases and the contract",
    cost=1,
)
def rejects_device_and_grad(mod, ctx):
    d = ctx.device
    y = torch.rand(2, 8, device=d)
    g = torch.randn(2, 8, device=d)
    meta = torch.empty(2, 8, device="meta")
    expect_rejects(lambda: mod.backward(meta, g), (ValueError,), ["y"], "y on the meta device")
    expect_rejects(
        lambda: mod.backward(y, meta), (ValueError,), ["grad_output"], "grad_output on another device"
    )
    if d == "cuda":
        expect_rejects(
            lambda: mod.backward(y, g.cpu()),
            (ValueError,),
            ["grad_output"],
            "grad_output on the CPU, y on the GPU",
        )
    with torch.enable_grad():
        yr = y.clone().requires_grad_(True)
        gr = g.clone().requires_grad_(True)
        expect_rejects(lambda: mod.backward(yr, g), (ValueError,), ["y"], "y requiring grad")
        expect_rejects(
            lambda: mod.backward(y, gr), (ValueError,), ["grad_output"], "grad_output requiring grad"
        )


CASES = collect(globals())
