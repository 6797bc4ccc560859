"""Named checks for I1, strided softmax.

The oracle is torch.softmax in float64 on the CPU, computed from the exact values the
kernel was given (so fp16/bf16 inputs are compared against the softmax of their own
rounded values).  Tolerances come from checks.judging.tensors (fp32 a few ulps of summation
order; fp16/bf16 one final rounding).

Layouts are built the way a learner meets them: ``.t()`` of a contiguous tensor,
slices with a storage offset, a column step, and ``expand`` (zero strides).
"""

import torch

from checks.judging.case import CheckFailed, check, collect
from checks.judging.tensors import (
    DTYPE_NAMES,
    POISON,
    assert_close,
    assert_not_alias,
    poisoned_allocator,
    randn,
)

SECTION_IDEA = "Address tables: where each lane reads and writes"
SECTION_WORKED = "Worked example: a transposed 2x3"
SECTION_ROW = "The row kernel"
SECTION_NUMERICS = "Numerics: a stable fp32 softmax"
SECTION_EDGES = "Edge shapes and limits"
SECTION_CONTRACT = "The contract"
SECTION_TILES = "The layout-aware path"


# --- helpers -----------------------------------------------------------------------


def softmax_oracle(x: torch.Tensor, device: torch.device | str = "cpu") -> torch.Tensor:
    """softmax(x) along the last axis in float64 on ``device`` (the benchmark passes the
    input's own device), from the stored values."""
    return torch.softmax(x.detach().to(device, torch.float64), dim=-1)


def _layout(x: torch.Tensor) -> str:
    return f"shape {tuple(x.shape)}, strides {tuple(x.stride())}, offset {x.storage_offset()}"


def expect_softmax(mod, x: torch.Tensor, what: str, **options) -> torch.Tensor:
    """Call mod.softmax(x, **options) after poisoning the allocator; compare with the
    float64 oracle (metadata first: shape, dtype, device, contiguity)."""
    expected = softmax_oracle(x)
    poisoned_allocator(x.shape, x.dtype, x.device)
    got = mod.softmax(x, **options)
    opts = "".join(f", {k}={v}" for k, v in options.items())
    assert_close(
        got,
        expected,
        dtype=x.dtype,
        name=f"softmax({what}{opts}) [{DTYPE_NAMES.get(x.dtype, x.dtype)}, {_layout(x)}]",
    )
    return got


def transposed_input(rows, cols, *, ctx, dtype=torch.float32, scale=1.0, offset=0.0):
    """A (rows, cols) view of a contiguous (cols, rows) tensor: strides (1, rows)."""
    return randn((cols, rows), ctx=ctx, dtype=dtype, scale=scale, offset=offset).t()


# --- the first verdicts ------------------------------------------------------------


@check(
    "basic",
    "contiguous fp32 rows (4x37, 3x64)",
    why="the plain softmax must be right before any layout question matters",
    section=SECTION_ROW,
    cost=1,
    properties=("ragged",),
)
def basic(mod, ctx):
    expect_softmax(mod, randn((4, 37), ctx=ctx), "x")
    expect_softmax(mod, randn((3, 64), ctx=ctx, scale=3.0), "x")


@check(
    "worked-transpose",
    "worked answer: a 2x3 transposed reads storage 5 at (2,1), 3 at (0,1)",
    why="the lesson's worked example: logical (r, c) reads r*stride_row + c*stride_col, writes r*n_cols + c",
    section=SECTION_WORKED,
    cost=1,
)
def worked_transpose(mod, ctx):
    # Storage values v[k] = k^2 / 4, so every logical element is traceable to its index.
    storage = torch.tensor([k * k / 4.0 for k in range(6)], dtype=torch.float64)
    base = storage.reshape(2, 3).to(torch.float32).to(ctx.device)
    x = base.t()  # shape (3, 2), strides (1, 3)
    if tuple(x.stride()) != (1, 3):
        raise RuntimeError(f"unexpected strides {x.stride()}")
    got = mod.softmax(x)
    expected = softmax_oracle(x)
    if isinstance(got, torch.Tensor) and tuple(got.shape) == (3, 2) and got.is_contiguous():
        flat = got.detach().to("cpu", torch.float64).reshape(-1)
        # (2, 1) reads storage 2*1 + 1*3 = 5 and writes output offset 2*2 + 1 = 5;
        # (0, 1) reads storage 0*1 + 1*3 = 3 and writes output offset 0*2 + 1 = 1.
        for r, c in ((2, 1), (0, 1)):
            read_at, write_at = r * 1 + c * 3, r * 2 + c
            want = float(expected[r, c])
            have = float(flat[write_at])
            if abs(have - want) > 1e-5 + 1e-4 * abs(want):
                raise CheckFailed(
                    f"logical ({r}, {c}) of x = base.t() should read storage index "
                    f"{r}*1 + {c}*3 = {read_at} (value {float(storage[read_at]):g}) and write "
                    f"output offset {r}*2 + {c} = {write_at}; output offset {write_at} holds "
                    f"{have:.6g}, expected {want:.6g}",
                    {
                        "row": r,
                        "col": c,
                        "read_at": read_at,
                        "write_at": write_at,
                        "got": have,
                        "expected": want,
                    },
                )
    assert_close(got, expected, dtype=torch.float32, name="softmax(base.t()) for base = 2x3")


# --- layouts -----------------------------------------------------------------------


@check(
    "transpose",
    "a transposed view (strides (1, rows)) of fp32",
    why=(
        "both sides are tested: loads must use x.t()'s strides (1, rows), and stores the fresh "
        "output's (n_cols, 1)"
    ),
    section=SECTION_IDEA,
    cost=2,
    properties=("strided", "ragged"),
)
def transpose(mod, ctx):
    expect_softmax(mod, transposed_input(48, 300, ctx=ctx), "x.t()")
    expect_softmax(mod, transposed_input(5, 7, ctx=ctx), "x.t()")


@check(
    "column-slice",
    "a column slice with a storage offset (row stride wider than the width)",
    why="the output's row stride is n_cols, not the input's row stride; the offset lives in the pointer",
    section=SECTION_IDEA,
    cost=2,
    properties=("strided", "ragged"),
)
def column_slice(mod, ctx):
    base = randn((12, 70), ctx=ctx)
    expect_softmax(mod, base[2:9, 5:61], "base[2:9, 5:61]")
    expect_softmax(mod, base[11:12, 69:70], "base[11:12, 69:70]")


@check(
    "column-step",
    "a column step x[:, 1::3] (column stride 3, row stride 90)",
    why="a column stride other than 1 on a row-major tensor; only both strides address it",
    section=SECTION_IDEA,
    cost=2,
    properties=("strided", "ragged"),
)
def column_step(mod, ctx):
    base = randn((10, 90), ctx=ctx)
    expect_softmax(mod, base[:, 1::3], "base[:, 1::3]")


@check(
    "transpose-slice",
    "a slice of a transpose (strides (1, 40), nonzero storage offset)",
    why="offset, transposed strides and a ragged width together",
    section=SECTION_IDEA,
    cost=2,
    properties=("strided", "ragged"),
)
def transpose_slice(mod, ctx):
    base = randn((200, 40), ctx=ctx)
    expect_softmax(mod, base.t()[3:30, 7:150], "base.t()[3:30, 7:150]")


@check(
    "broadcast-row",
    "zero row stride: one row expanded to 9 rows",
    why="stride 0 is legal; every output row must be written, each equal to softmax(v)",
    section=SECTION_IDEA,
    cost=2,
    properties=("strided", "ragged"),
)
def broadcast_row(mod, ctx):
    v = randn((1, 77), ctx=ctx)
    got = expect_softmax(mod, v.expand(9, 77), "v.expand(9, 77)")
    first = got[:1].expand_as(got)
    if not torch.equal(got, first):
        raise CheckFailed(
            "rows of softmax(v.expand(9, 77)) differ; a broadcast row must give identical output rows"
        )


@check(
    "broadcast-column",
    "zero column stride gives a uniform row (1/n_cols everywhere)",
    why="invariant: a row whose elements all alias one value is uniform",
    section=SECTION_IDEA,
    cost=2,
    properties=("strided", "ragged"),
)
def broadcast_column(mod, ctx):
    c = randn((6, 1), ctx=ctx, scale=50.0)
    expect_softmax(mod, c.expand(6, 50), "c.expand(6, 50)")
    scalar = torch.tensor([[3.0]], device=ctx.device)
    got = expect_softmax(mod, scalar.expand(4, 9), "scalar.expand(4, 9)")
    uniform = torch.full((4, 9), 1.0 / 9.0, dtype=torch.float64)
    assert_close(got, uniform, dtype=torch.float32, name="softmax of a constant row")


# --- edges -------------------------------------------------------------------------


@check(
    "zero-rows",
    "zero rows return an empty (0, n) tensor",
    why="a grid of 0 programs is not a launch; the wrapper must return early",
    section=SECTION_EDGES,
    cost=1,
)
def zero_rows(mod, ctx):
    for dtype in (torch.float32, torch.float16):
        expect_softmax(mod, torch.empty((0, 17), dtype=dtype, device=ctx.device), "empty")
    expect_softmax(mod, torch.empty((17, 0), device=ctx.device).t(), "empty.t()")


@check(
    "one-by-one",
    "a 1x1 input gives [[1.0]]",
    why="the smallest shape: one program, one lane, a block of 1",
    section=SECTION_EDGES,
    cost=1,
)
def one_by_one(mod, ctx):
    x = randn((1, 1), ctx=ctx, scale=100.0)
    expect_softmax(mod, x, "x")
    expect_softmax(mod, x.t(), "x.t()")
    expect_softmax(mod, torch.tensor(2.0, device=ctx.device).expand(1, 1), "scalar.expand(1, 1)")


@check(
    "single-column",
    "one column: every row is [1.0], contiguous and transposed",
    why="a width of 1 masks all but one lane; a size-1 dimension's stride is arbitrary",
    section=SECTION_EDGES,
    cost=1,
)
def single_column(mod, ctx):
    expect_softmax(mod, randn((37, 1), ctx=ctx), "x")
    expect_softmax(mod, transposed_input(37, 1, ctx=ctx), "x.t()")


@check(
    "ragged-widths",
    "widths that are not a multiple of any block (2..1000)",
    why="masking the tail of a row, and of the last column tile of a transpose",
    section=SECTION_EDGES,
    cost=3,
    properties=("ragged",),
)
def ragged_widths(mod, ctx):
    for n in (2, 3, 31, 33, 127, 129, 1000):
        expect_softmax(mod, randn((3, n), ctx=ctx), "x")
        expect_softmax(mod, transposed_input(3, n, ctx=ctx), "x.t()")


@check(
    "many-rows-transposed",
    "70x1100 transposed: partial row block and partial column tile; 600x5 every other row of "
    "a transpose (row stride 2, more than 64 row blocks)",
    why="a program owning several rows must mask the rows past the end on store",
    section=SECTION_TILES,
    cost=3,
    properties=("strided", "many-rows", "ragged", "ragged-rows"),
)
def many_rows_transposed(mod, ctx):
    expect_softmax(mod, transposed_input(70, 1100, ctx=ctx), "x.t()")
    expect_softmax(mod, randn((70, 1100), ctx=ctx), "x")
    # Rows that are neighbours in memory but not adjacent (strides (2, 1200)): the row
    # stride is not 1, and a program per few rows needs more than 64 programs.
    expect_softmax(mod, transposed_input(1200, 5, ctx=ctx)[::2], "x.t()[::2]")


@check(
    "widest",
    "the widest supported width, 8192 columns (contiguous and transposed)",
    why="BLOCK_C = next_power_of_2(8192) must still fit one program",
    section=SECTION_EDGES,
    cost=4,
    properties=("tile-multiple",),
)
def widest(mod, ctx):
    expect_softmax(mod, randn((2, 8192), ctx=ctx), "x")
    expect_softmax(mod, transposed_input(2, 8192, ctx=ctx), "x.t()")


# --- dtypes and options ------------------------------------------------------------


@check(
    "fp16",
    "fp16 inputs: contiguous, transposed, sliced",
    why="load 16-bit, compute in fp32, cast once when storing",
    section=SECTION_CONTRACT,
    cost=3,
    properties=("fp16", "ragged"),
)
def fp16(mod, ctx):
    expect_softmax(mod, randn((5, 129), ctx=ctx, dtype=torch.float16, scale=4.0), "x")
    expect_softmax(mod, transposed_input(40, 300, ctx=ctx, dtype=torch.float16, scale=4.0), "x.t()")
    expect_softmax(mod, randn((9, 80), ctx=ctx, dtype=torch.float16)[1:8, 3::2], "x[1:8, 3::2]")


@check(
    "bf16",
    "bf16 inputs: contiguous, transposed, sliced",
    why="bf16 has 8 significant bits: fp32 math inside, one rounding on the way out",
    section=SECTION_CONTRACT,
    cost=3,
    properties=("bf16", "ragged"),
)
def bf16(mod, ctx):
    expect_softmax(mod, randn((5, 129), ctx=ctx, dtype=torch.bfloat16, scale=4.0), "x")
    expect_softmax(mod, transposed_input(40, 300, ctx=ctx, dtype=torch.bfloat16, scale=4.0), "x.t()")
    expect_softmax(mod, randn((9, 80), ctx=ctx, dtype=torch.bfloat16)[1:8, 3::2], "x[1:8, 3::2]")


@check(
    "num-warps",
    "num_warps=4 and num_warps=8 give the same correct answer",
    why="every option value is part of the contract, on every path",
    section=SECTION_CONTRACT,
    cost=2,
)
def num_warps(mod, ctx):
    for w in (4, 8):
        expect_softmax(mod, randn((6, 200), ctx=ctx), "x", num_warps=w)
        expect_softmax(mod, transposed_input(20, 200, ctx=ctx), "x.t()", num_warps=w)


# --- numeric hazards and invariants -------------------------------------------------


@check(
    "large-logits",
    "rows near +1000 and -1000 neither overflow nor underflow to NaN",
    why="exp(1000) is inf in fp32; the row maximum must be subtracted first",
    section=SECTION_NUMERICS,
    cost=2,
    properties=("large-magnitudes", "ragged"),
)
def large_logits(mod, ctx):
    for offset in (1000.0, -1000.0):
        expect_softmax(mod, randn((4, 100), ctx=ctx, scale=3.0, offset=offset), f"x{offset:+g}")
        expect_softmax(mod, transposed_input(12, 300, ctx=ctx, scale=3.0, offset=offset), f"x.t(){offset:+g}")
    expect_softmax(mod, randn((4, 100), ctx=ctx, dtype=torch.float16, scale=3.0, offset=1000.0), "x+1000")


@check(
    "isolated-max",
    "one element 40 above the rest, in varied columns (incl. a late tile)",
    why="a max taken over the wrong elements, or a masked lane winning the max, shows here",
    section=SECTION_NUMERICS,
    cost=2,
)
def isolated_max(mod, ctx):
    x = randn((6, 700), ctx=ctx)
    for r, c in enumerate((0, 1, 350, 513, 698, 699)):
        x[r, c] = 40.0
    expect_softmax(mod, x, "x")
    xt = randn((700, 6), ctx=ctx).t()  # same pattern on a transpose
    for r, c in enumerate((0, 1, 350, 513, 698, 699)):
        xt[r, c] = 40.0
    expect_softmax(mod, xt, "x.t()")


@check(
    "growing-max",
    "a row maximum that grows tile after tile (transposed 4x3000)",
    why=(
        "the row maximum rises from tile to tile: every partial sum taken against an older "
        "maximum must be rescaled to the newest"
    ),
    section=SECTION_TILES,
    cost=3,
    properties=("strided", "ragged"),
)
def growing_max(mod, ctx):
    ramp = torch.arange(3000, dtype=torch.float64) * 0.01  # 0 .. 30, rising
    noise = randn((3000, 4), ctx=ctx, dtype=torch.float64, scale=0.1).cpu()
    xt = (ramp[:, None] + noise).to(torch.float32).to(ctx.device).t()  # (4, 3000), strides (1, 4)
    expect_softmax(mod, xt, "x.t()")
    expect_softmax(mod, xt.contiguous(), "x")


@check(
    "rows-sum-to-one",
    "every output row sums to 1 (random rows, both layouts)",
    why="invariant of any softmax; a denominator from the wrong elements breaks it",
    section=SECTION_NUMERICS,
    cost=2,
)
def rows_sum_to_one(mod, ctx):
    for x, what in (
        (randn((8, 513), ctx=ctx, scale=5.0), "x"),
        (transposed_input(8, 2100, ctx=ctx, scale=5.0, offset=10.0), "x.t()"),
    ):
        got = mod.softmax(x)
        if not isinstance(got, torch.Tensor):
            raise CheckFailed(f"softmax returned {type(got).__name__}, expected a tensor")
        sums = got.detach().to("cpu", torch.float32).sum(dim=-1, keepdim=True)
        assert_close(
            sums,
            torch.ones_like(sums, dtype=torch.float64),
            dtype=torch.float32,
            name=f"row sums of softmax({what})",
        )


# --- the contract ------------------------------------------------------------------


@check(
    "every-element-written",
    "after the allocator is filled with poison, no output element keeps it",
    why="a grid or mask that misses the last rows or columns leaves stale memory",
    section=SECTION_CONTRACT,
    cost=2,
)
def every_element_written(mod, ctx):
    for shape in ((33, 65), (17, 1)):
        for x, what in ((randn(shape, ctx=ctx), "x"), (transposed_input(*shape, ctx=ctx), "x.t()")):
            got = expect_softmax(mod, x, what)
            left = int((got == POISON).sum())
            if left:
                raise CheckFailed(f"{left} output elements still hold the poison {POISON:g}")


@check(
    "input-unchanged",
    "the input (and the storage it views) is unchanged; the output is fresh",
    why=(
        "the input and the storage it views belong to the caller: every store must land in the fresh output"
    ),
    section=SECTION_CONTRACT,
    cost=2,
)
def input_unchanged(mod, ctx):
    base = randn((30, 20), ctx=ctx)
    before = base.clone()
    for x, what in ((base, "x"), (base.t()[1:, 2:], "base.t()[1:, 2:]"), (base[3:9, ::2], "base[3:9, ::2]")):
        got = mod.softmax(x)
        if not torch.equal(base, before):
            changed = int((base != before).sum())
            raise CheckFailed(f"softmax({what}) changed {changed} elements of the input's storage")
        assert_not_alias(got, x, names=("x",))


# --- GPU only ----------------------------------------------------------------------


CASES = collect(globals())
