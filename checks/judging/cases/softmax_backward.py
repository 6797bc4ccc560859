"""Named checks for I2, softmax backward: ``backward(y, grad_output, *, num_warps=4)``.

The oracle is the vector-Jacobian product in float64 on the CPU, computed from the
*supplied* y and g (the contract: no re-softmax), plus two independent oracles:
float64 autograd of torch.softmax and a central difference.  Tolerances come from
checks.judging.tensors (fp32 / fp16 / bf16, explained in the lesson).
"""

import math

import torch

from checks.judging.case import CheckFailed, check, collect
from checks.judging.tensors import (
    POISON,
    assert_close,
    assert_not_alias,
    describe,
    expect_tensor,
    mismatch_report,
    poisoned_allocator,
    randn,
    tolerance,
)

MAX_COLS = 8192


# --- helpers -----------------------------------------------------------------------------


def vjp64(y: torch.Tensor, g: torch.Tensor, device: torch.device | str = "cpu") -> torch.Tensor:
    """The oracle: y * (g - sum(y * g)) per row, in float64 on ``device`` (the benchmark
    passes the inputs' own device), from the given values."""
    y64 = y.detach().to(device, torch.float64)
    g64 = g.detach().to(device, torch.float64)
    dot = (y64 * g64).sum(dim=-1, keepdim=True)
    return y64 * (g64 - dot)


def draw_case(ctx, shape, *, logit_scale=1.0, g_scale=1.0, g_offset=0.0):
    """Float64 CPU draws (seeded from the check id): probabilities y = softmax(logits)
    and an upstream gradient g.  One randn call with a leading axis of 2 gives two
    independent tensors (two calls with the same ctx would repeat the same numbers)."""
    draws = randn((2,) + tuple(shape), ctx=ctx, dtype=torch.float64).cpu()
    y = torch.softmax(draws[0] * logit_scale, dim=-1)
    g = draws[1] * g_scale + g_offset
    return y, g


def backward_inputs(ctx, shape, dtype, **kw):
    """y and g in ``dtype`` on the check's device."""
    y, g = draw_case(ctx, shape, **kw)
    return y.to(dtype).to(ctx.device), g.to(dtype).to(ctx.device)


def call_backward(mod, y, g, **kw):
    """Call the learner's backward after leaving poison where its output will likely go.

    The wrapper allocates the output, so it cannot be pre-filled; instead a block of the
    output's size is filled with POISON and freed first.  The CUDA caching allocator
    usually hands that block straight back, so any element the kernel never writes still
    reads POISON and assert_close reports it as unwritten."""
    poisoned_allocator(y.shape, y.dtype, y.device)
    return mod.backward(y, g, **kw)


def expect_backward(mod, ctx, y, g, what, **kw):
    got = call_backward(mod, y, g, **kw)
    assert_close(got, vjp64(y, g), dtype=y.dtype, name=what, device=ctx.device)
    return got


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


@check(
    "worked-example",
    "y=[.25,.75], g=[2,-1] gives dx=[.5625,-.5625]",
    why=("the lesson's worked example by hand: dot = sum_k y_k g_k = -.25, and dx_j = y_j * (g_j - dot)"),
    section="Worked example",
    cost=1,
)
def worked_example(mod, ctx):
    y = torch.tensor([[0.25, 0.75]], dtype=torch.float32, device=ctx.device)
    g = torch.tensor([[2.0, -1.0]], dtype=torch.float32, device=ctx.device)
    expected = torch.tensor([[0.5625, -0.5625]], dtype=torch.float64)
    got = call_backward(mod, y, g)
    assert_close(got, expected, dtype=torch.float32, name="backward([.25,.75], [2,-1])", device=ctx.device)
    return "dot = .25*2 + .75*(-1) = -.25; dx = [.25*2.25, .75*(-.75)] = [.5625, -.5625]"


@check(
    "constant-gradient",
    "a constant upstream gradient gives dx ~ 0 for normalized y",
    why="softmax is shift-invariant: adding c to every logit changes nothing, so dx must vanish",
    section="Worked example",
    cost=1,
)
def constant_gradient(mod, ctx):
    y, _ = backward_inputs(ctx, (4, 37), torch.float32)
    g = torch.full((4, 37), 3.0, dtype=torch.float32, device=ctx.device)
    got = expect_backward(mod, ctx, y, g, "backward(y, 3.0 everywhere)")
    worst = float(got.detach().abs().max())
    atol = tolerance(torch.float32)["atol"]
    if worst > atol:
        raise CheckFailed(f"constant gradient 3.0: max |dx| = {worst:.3g}, expected ~0 (<= {atol:g})")
    return f"max |dx| = {worst:.2g}"


@check(
    "matches-autograd",
    "matches float64 autograd of torch.softmax (fp32, 6x77)",
    why="an independent oracle: the formula, the sign and which sum is subtracted all show here",
    section="Deriving the vector-Jacobian product",
    cost=2,
    properties=("ragged",),
)
def matches_autograd(mod, ctx):
    draws = randn((2, 6, 77), ctx=ctx, dtype=torch.float64).cpu()
    logits = draws[0].clone().requires_grad_(True)
    g64 = draws[1]
    y64 = torch.softmax(logits, dim=-1)
    (expected,) = torch.autograd.grad(y64, logits, g64)
    y = y64.detach().to(torch.float32).to(ctx.device)
    g = g64.to(torch.float32).to(ctx.device)
    got = call_backward(mod, y, g)
    # The supplied y is y64 rounded to fp32 (relative 6e-8): far inside the fp32 tolerance.
    assert_close(got, expected, dtype=torch.float32, name="backward vs autograd", device=ctx.device)


@check(
    "central-difference",
    "matches a central difference of sum(g * softmax(x)) (2x5)",
    why="checks the derivative itself, with no formula shared with the kernel",
    section="Deriving the vector-Jacobian product",
    cost=2,
)
def central_difference(mod, ctx):
    draws = randn((2, 2, 5), ctx=ctx, dtype=torch.float64).cpu()
    x, g64 = draws[0], draws[1]
    h = 1e-5  # float64: truncation ~h^2, rounding ~1e-16/h

    def f(z):
        return (g64 * torch.softmax(z, dim=-1)).sum(dim=-1)

    numeric = torch.zeros_like(x)
    for j in range(x.shape[1]):
        e = torch.zeros_like(x)
        e[:, j] = h
        numeric[:, j] = (f(x + e) - f(x - e)) / (2 * h)
    y = torch.softmax(x, dim=-1).to(torch.float32).to(ctx.device)
    g = g64.to(torch.float32).to(ctx.device)
    got = call_backward(mod, y, g)
    assert_close(got, numeric, dtype=torch.float32, name="backward vs central difference", device=ctx.device)


@check(
    "rows-sum-to-zero",
    "every row of dx sums to ~0 when y is normalized (fp32, 8x300)",
    why="sum_j dx_j = dot * (1 - sum_j y_j), which is 0 when y's rows sum to 1",
    section="Deriving the vector-Jacobian product",
    cost=2,
    properties=("ragged",),
)
def rows_sum_to_zero(mod, ctx):
    y, g = backward_inputs(ctx, (8, 300), torch.float32)
    got = expect_backward(mod, ctx, y, g, "backward(y, g)")
    sums = got.detach().to("cpu", torch.float64).sum(dim=-1)
    # Each element may be off by up to the fp32 atol, so a row of n may drift by n * atol.
    bound = 300 * tolerance(torch.float32)["atol"]
    worst = float(sums.abs().max())
    if worst > bound:
        raise CheckFailed(
            f"row sums of dx reach {worst:.3g}; expected ~0 (<= {bound:g})", {"row_sums": sums.tolist()}
        )
    return f"largest |row sum| = {worst:.2g}"


@check(
    "supplied-y",
    "uses the y it is given, even when its rows do not sum to 1",
    why=("the formula uses y as given: rows that do not sum to 1 show whether anything assumes they do"),
    section="Deriving the vector-Jacobian product",
    cost=2,
)
def supplied_y(mod, ctx):
    draws = randn((2, 4, 50), ctx=ctx, dtype=torch.float64).cpu()
    y = (draws[0].abs() * 0.1).to(torch.float32).to(ctx.device)  # rows sum to ~4, not 1
    g = draws[1].to(torch.float32).to(ctx.device)
    expect_backward(mod, ctx, y, g, "backward(unnormalized y, g)")


# --- edge shapes ---------------------------------------------------------------------------


@check(
    "one-by-one",
    "a 1x1 input: dx = y * (g - y*g)",
    why="a one-column row has BLOCK = 1; with y = 1 the answer is exactly 0",
    section="Edge cases and the contract",
    cost=1,
)
def one_by_one(mod, ctx):
    for yv, gv, want in ((1.0, 5.0, 0.0), (0.3, 2.0, 0.3 * (2.0 - 0.3 * 2.0))):
        y = torch.tensor([[yv]], dtype=torch.float32, device=ctx.device)
        g = torch.tensor([[gv]], dtype=torch.float32, device=ctx.device)
        got = call_backward(mod, y, g)
        assert_close(
            got,
            torch.tensor([[want]], dtype=torch.float64),
            dtype=torch.float32,
            name=f"backward([[{yv}]], [[{gv}]])",
            device=ctx.device,
        )


@check(
    "zero-rows",
    "zero rows give an empty [0, N] output of the input dtype",
    why="a launch grid of zero programs is an error; empty inputs must still return a tensor",
    section="Edge cases and the contract",
    cost=1,
)
def zero_rows(mod, ctx):
    for cols, dtype in ((17, torch.float32), (MAX_COLS, torch.float16), (1, torch.bfloat16)):
        y = torch.empty((0, cols), dtype=dtype, device=ctx.device)
        g = torch.empty((0, cols), dtype=dtype, device=ctx.device)
        got = mod.backward(y, g)
        expect_tensor(
            got,
            shape=(0, cols),
            dtype=dtype,
            device=ctx.device,
            name=f"backward of a [0, {cols}] {dtype_name(dtype)} input",
        )


@check(
    "ragged-tails",
    "widths that are not a multiple of any block: 1, 3, 17, 129, 1023, 1025",
    why="the last lanes of a block lie past the row: they must be masked on load and store",
    section="Tile ownership and addresses",
    cost=3,
    properties=("ragged",),
)
def ragged_tails(mod, ctx):
    for shape in ((3, 1), (3, 3), (5, 17), (7, 129), (3, 1023), (2, 1025)):
        y, g = backward_inputs(ctx, shape, torch.float32)
        expect_backward(mod, ctx, y, g, f"backward of {shape[0]}x{shape[1]}")


@check(
    "every-element-written",
    "every output element is written (output allocated over poison)",
    why="a grid or row mapping that skips rows leaves whatever memory the allocator returned",
    section="Tile ownership and addresses",
    cost=3,
)
def every_element_written(mod, ctx):
    for shape, dtype in (((33, 40), torch.float16), ((9, 700), torch.float32)):
        y, g = backward_inputs(ctx, shape, dtype)
        got = call_backward(mod, y, g)
        if isinstance(got, torch.Tensor) and tuple(got.shape) == shape:
            # POISON as stored in this dtype (-12345 rounds to -12344 in fp16).
            poison = torch.tensor(POISON, dtype=dtype).float()
            unwritten = int((got.detach().cpu().float() == poison).sum())
            if unwritten:
                raise CheckFailed(
                    f"{unwritten} of {got.numel()} elements of a {shape[0]}x{shape[1]} "
                    f"output still hold the poison {POISON:g}: never written",
                    {"unwritten": unwritten},
                )
        assert_close(
            got,
            vjp64(y, g),
            dtype=dtype,
            name=f"backward of {shape[0]}x{shape[1]} {dtype_name(dtype)}",
            device=ctx.device,
        )


@check(
    "widest-8192",
    "the widest supported rows: 8192 columns (fp32 and bf16)",
    why="the whole row must fit one program; BLOCK = 8192 exactly, no tail",
    section="Edge cases and the contract",
    cost=4,
    properties=("tile-multiple",),
)
def widest(mod, ctx):
    for rows, dtype in ((2, torch.float32), (1, torch.bfloat16)):
        y, g = backward_inputs(ctx, (rows, MAX_COLS), dtype)
        expect_backward(mod, ctx, y, g, f"backward of {rows}x{MAX_COLS} {dtype_name(dtype)}")


# --- dtypes and options --------------------------------------------------------------------


@check(
    "dtype-fp16",
    "fp16 inputs (6x200): an fp16 output within one fp16 rounding of the exact answer",
    why="the output must be fp16, within one fp16 rounding of the exact product",
    section="Precision: one fp32 reduction, one cast",
    cost=3,
    properties=("fp16", "ragged"),
)
def dtype_fp16(mod, ctx):
    y, g = backward_inputs(ctx, (6, 200), torch.float16)
    expect_backward(mod, ctx, y, g, "backward fp16")


@check(
    "dtype-bf16",
    "bf16 inputs (6x200): a bf16 output within one bf16 rounding of the exact answer",
    why="bf16 keeps 8 significant bits; anything but one final rounding shows up here",
    section="Precision: one fp32 reduction, one cast",
    cost=3,
    properties=("bf16", "ragged"),
)
def dtype_bf16(mod, ctx):
    y, g = backward_inputs(ctx, (6, 200), torch.bfloat16)
    expect_backward(mod, ctx, y, g, "backward bf16")


@check(
    "num-warps",
    "num_warps=4 and num_warps=8 both give the right answer",
    why="every contract option value must work, not only the default",
    section="Edge cases and the contract",
    cost=3,
)
def num_warps(mod, ctx):
    for shape, dtype in (((5, 300), torch.float32), ((3, 2000), torch.float16)):
        y, g = backward_inputs(ctx, shape, dtype)
        for w in (4, 8):
            expect_backward(
                mod,
                ctx,
                y,
                g,
                f"backward {shape[0]}x{shape[1]} {dtype_name(dtype)} num_warps={w}",
                num_warps=w,
            )


# --- numeric hazards -----------------------------------------------------------------------


@check(
    "large-gradient-offset",
    "g = +/-1000 + noise: the common offset cancels in g - dot",
    why=(
        "the common offset of 1000 cancels in g - dot: the small remainder survives only if the "
        "dot is summed in fp32"
    ),
    section="Precision: one fp32 reduction, one cast",
    cost=3,
    properties=("large-magnitudes",),
)
def large_gradient_offset(mod, ctx):
    for shape, dtype, offset in (
        ((4, 16), torch.float16, 1000.0),
        ((3, 300), torch.float16, -1000.0),
        ((4, 16), torch.float32, 1000.0),
    ):
        y, g = backward_inputs(ctx, shape, dtype, g_offset=offset)
        what = f"backward {shape[0]}x{shape[1]} {dtype_name(dtype)}, g near {offset:g}"
        got = call_backward(mod, y, g)
        expect_tensor(got, shape=y.shape, dtype=dtype, device=ctx.device, name=what)
        tol = tolerance(dtype)
        atol = tol["atol"] + _fp32_dot_rounding(y, g)
        facts = mismatch_report(got, vjp64(y, g), atol=atol, rtol=tol["rtol"])
        if facts is not None:
            raise CheckFailed(f"{what}: {describe(facts)}", facts)


def _fp32_dot_rounding(y, g) -> float:
    """The most a right fp32 reduction can be off in dx = y * (g - dot) when g is large.

    dot = sum(y * g) near 1000 is rounded at fp32's spacing there, and the cancellation
    in g - dot leaves that error whole in the small answer: each product and each level
    of a tree sum over N columns rounds by at most 2^-24 of sum(|y * g|), and y_i carries
    it into dx_i.  For g near 1000 that is about 1e-4 (the fp32 atol alone is 1e-5); a
    dot summed in fp16 is off by about 0.5 * y_i, far beyond it."""
    y64 = y.detach().to("cpu", torch.float64)
    g64 = g.detach().to("cpu", torch.float64)
    levels = math.ceil(math.log2(max(y64.shape[-1], 2))) + 1
    row_bound = levels * 2.0**-24 * (y64 * g64).abs().sum(dim=-1, keepdim=True)
    return float((y64 * row_bound).max())


@check(
    "peaked-probabilities",
    "one isolated maximum (one-hot y) and mass that grows toward the row's end",
    why=(
        "with y one-hot, dx = 0 exactly; with the mass in the last columns, the dot must cover the whole row"
    ),
    section="Tile ownership and addresses",
    cost=3,
)
def peaked_probabilities(mod, ctx):
    # Logits of +/-1000 with one isolated maximum: softmax is exactly one-hot in float64.
    rows, cols = 3, 257
    logits = torch.full((rows, cols), -1000.0, dtype=torch.float64)
    for r, c in enumerate((0, 128, 256)):
        logits[r, c] = 1000.0
    y = torch.softmax(logits, dim=-1).to(torch.float32).to(ctx.device)
    g = randn((rows, cols), ctx=ctx, dtype=torch.float32)
    got = expect_backward(mod, ctx, y, g, "backward with one-hot y")
    # Logits rising along the row: almost all probability mass sits in the last columns.
    rows, cols = 2, 3000
    ramp = torch.linspace(0.0, 30.0, cols, dtype=torch.float64).expand(rows, cols)
    y = torch.softmax(ramp, dim=-1).to(torch.float32).to(ctx.device)
    g = randn((rows, cols), ctx=ctx, dtype=torch.float32, scale=3.0)
    expect_backward(mod, ctx, y, g, "backward with the mass in the last columns")
    return f"one-hot rows: max |dx| = {float(got.detach().abs().max()):.2g}"


# --- the contract: fresh output, inputs unchanged, rejections ------------------------------


@check(
    "inputs-unchanged",
    "y and grad_output are unchanged after the call",
    why="writing dx into grad_output's memory (it looks dead) corrupts the caller's tensors",
    section="Edge cases and the contract",
    cost=2,
)
def inputs_unchanged(mod, ctx):
    y, g = backward_inputs(ctx, (4, 100), torch.float16)
    y0, g0 = y.clone(), g.clone()
    call_backward(mod, y, g)
    if not torch.equal(y, y0):
        raise CheckFailed("backward modified y")
    if not torch.equal(g, g0):
        raise CheckFailed("backward modified grad_output (dx must go to a fresh tensor)")


@check(
    "fresh-output",
    "the output is a fresh contiguous tensor that aliases neither input",
    why="returning or writing into an input breaks callers that keep y or grad_output",
    section="Edge cases and the contract",
    cost=2,
)
def fresh_output(mod, ctx):
    y, g = backward_inputs(ctx, (3, 20), torch.float32)
    y_t = y.t().contiguous().t()
    for yy in (y, y_t):
        got = call_backward(mod, yy, g)
        expect_tensor(got, shape=(3, 20), dtype=torch.float32, device=ctx.device)
        assert_not_alias(got, yy, g, names=("y", "grad_output"))
    again = mod.backward(y, g)
    if again.data_ptr() == got.data_ptr() and again.numel():
        raise CheckFailed("two calls returned the same memory; each call must allocate its output")


# --- GPU only ------------------------------------------------------------------------------


CASES = collect(globals())
