"""I2 softmax backward: the classic mistakes, each a float64 oracle of the wrong computation."""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from checks.judging.mistakes import Call, Mistake, Variants
from checks.judging.mistakes.compare import (
    Partial,
    agrees as _agrees,
    as64,
    gathered_within,
    rounded,
    rows_known,
    unwritten_suffix,
)

DERIVING = "Deriving the vector-Jacobian product"
WORKED = "Worked example"
ADDRESSES = "Tile ownership and addresses"
PRECISION = "Precision: one fp32 reduction, one cast"

MAX_ELEMENTS = 1 << 22  # a larger call is not diagnosed (its oracles would take too long)
HALF = (torch.float16, torch.bfloat16)


def _inputs(call: Call) -> Optional[tuple]:
    y, g = call.argument(0, "y"), call.argument(1, "grad_output")
    if not (isinstance(y, torch.Tensor) and isinstance(g, torch.Tensor)):
        return None
    if y.dim() != 2 or y.shape != g.shape or y.numel() > MAX_ELEMENTS:
        return None
    return y, g


def vjp(y64: torch.Tensor, g64: torch.Tensor) -> torch.Tensor:
    return y64 * (g64 - (y64 * g64).sum(dim=-1, keepdim=True))


def right(call: Call):
    found = _inputs(call)
    return None if found is None else vjp(as64(found[0]), as64(found[1]))


def agrees(call: Call, expected) -> bool:
    return _agrees(call.result, expected)


def _reduce_g_alone(call: Call):
    found = _inputs(call)
    if found is None:
        return None
    y64, g64 = as64(found[0]), as64(found[1])
    return y64 * (g64 - g64.sum(dim=-1, keepdim=True))


def _dot_not_weighted(call: Call):
    found = _inputs(call)
    if found is None:
        return None
    y64, g64 = as64(found[0]), as64(found[1])
    return y64 * g64 - (y64 * g64).sum(dim=-1, keepdim=True)


def _y_factor_left_out(call: Call):
    found = _inputs(call)
    if found is None:
        return None
    y64, g64 = as64(found[0]), as64(found[1])
    return g64 - (y64 * g64).sum(dim=-1, keepdim=True)


def _dot_across_rows(call: Call):
    """A kernel that holds several rows per program and reduces over axis 0: each column's
    sum over the program's block of rows (padding rows add 0) stands in for each row's dot.
    One candidate per power-of-two block height (the learner's rows per program)."""
    found = _inputs(call)
    if found is None:
        return None
    y64, g64 = as64(found[0]), as64(found[1])
    rows, cols = y64.shape
    products = y64 * g64
    candidates, height = Variants(), 2
    while height <= min(256, max(2, 1 << max(rows - 1, 0).bit_length())):
        blocks = -(-rows // height)
        padded = products.new_zeros((blocks * height, cols))
        padded[:rows] = products
        dots = padded.view(blocks, height, cols).sum(dim=1).repeat_interleave(height, dim=0)[:rows]
        candidates.append(y64 * (g64 - dots))
        height *= 2
    return candidates or None


def _unit_column_stride(call: Call):
    found = _inputs(call)
    if found is None or found[0].shape[1] < 2 or (found[0].stride(1) == 1 and found[1].stride(1) == 1):
        return None
    y, g = found
    y_read, g_read = gathered_within(y, (y.stride(0), 1)), gathered_within(g, (g.stride(0), 1))
    if y_read is None or g_read is None:
        return None  # reads past the storage: unknown values, nothing to predict
    predicted = vjp(y_read, g_read)
    # every lane read a poisoned gap (NaN): so would any other wrong address, no evidence
    return None if bool(torch.isnan(predicted).all()) else predicted


def _half_precision_dot(call: Call):
    """dot = sum(y * g) accumulated in the input's 16-bit dtype: off by up to a few
    roundings of the running sum.  The dot each row's result implies is fitted (least
    squares on dx = y * (g - dot)); the mistake matches when that dot is within 16-bit
    rounding of the true one and reproduces every element."""
    found = _inputs(call)
    got = call.result
    if found is None or found[0].dtype not in HALF or not isinstance(got, torch.Tensor):
        return None
    if got.shape != found[0].shape or found[0].shape[1] == 0:
        return None
    y64, g64, dx = as64(found[0]), as64(found[1]), as64(got)
    weight = (y64 * y64).sum(dim=-1, keepdim=True)
    implied = (y64 * (y64 * g64 - dx)).sum(dim=-1, keepdim=True) / weight.clamp_min(1e-300)
    implied = rounded(implied, found[0].dtype)  # the dot itself is a 16-bit value
    true_dot = (y64 * g64).sum(dim=-1, keepdim=True)
    eps = torch.finfo(found[0].dtype).eps
    bound = eps * (y64 * g64).abs().sum(dim=-1, keepdim=True) * max(1, found[0].shape[1]).bit_length()
    if not bool(((implied - true_dot).abs() <= bound + eps).all()):
        return None
    return rounded(y64 * (g64 - implied), found[0].dtype)


def _half_through_fp16(call: Call):
    found = _inputs(call)
    if found is None or found[0].dtype != torch.bfloat16:
        return None
    return vjp(rounded(as64(found[0]), torch.float16), rounded(as64(found[1]), torch.float16))


def _output_with_input_strides(call: Call):
    """dx stored at row * s_row + col * s_col with an input's strides (its column stride, or
    1): rows land on each other (the later row wins, as in a row-by-row kernel) and the
    elements no address reaches are never written."""
    found = _inputs(call)
    if found is None or found[0].numel() == 0:
        return None
    y, g = found
    n_rows, n_cols = y.shape
    dx = vjp(as64(y), as64(g)).reshape(-1)
    candidates = Variants()
    for s_row, s_col in dict.fromkeys((t.stride(0), s) for t in (y, g) for s in (t.stride(1), 1)):
        if (s_row, s_col) == (n_cols, 1) or min(s_row, s_col) < 0:
            continue
        at = (torch.arange(n_rows)[:, None] * s_row + torch.arange(n_cols)[None, :] * s_col).reshape(-1)
        last = at.numel() - 1 - np.unique(at.numpy()[::-1], return_index=True)[1]  # the last store to each
        last = torch.from_numpy(last)[at[last] < dx.numel()]
        out, known = torch.zeros(dx.numel(), dtype=dx.dtype), torch.zeros(dx.numel(), dtype=torch.bool)
        out[at[last]], known[at[last]] = dx[last], True
        if not bool(
            torch.allclose(out[known], dx[known])
        ):  # misplaced values that differ from the right ones
            candidates.append(Partial(out.reshape(n_rows, n_cols), known.reshape(n_rows, n_cols)))
    return candidates or None


def _capped_grid(call: Call):
    found, got = _inputs(call), call.result
    if found is None or not isinstance(got, torch.Tensor) or got.shape != found[0].shape:
        return None
    expected = vjp(as64(found[0]), as64(found[1]))
    first = unwritten_suffix(got, expected)
    if first is None or first % 16:
        return None
    return Partial(expected, rows_known(tuple(got.shape), first))


MISTAKES = [
    Mistake(
        id="reduce-g-alone",
        function="backward",
        sentence=(
            "Your kernel subtracts the row sum of g alone; the reduction must be the dot product sum(y * g)."
        ),
        where="the row reduction: dot = tl.sum(y * g) over the row's columns, not tl.sum(g)",
        section=WORKED,
        why=(
            "dx_j = y_j * (g_j - sum_k y_k g_k): the subtracted term is the gradient's mean under the "
            "probabilities y; without the weighting a constant gradient no longer gives 0 and rows no "
            "longer sum to 0"
        ),
        oracle=_reduce_g_alone,
    ),
    Mistake(
        id="dot-not-weighted",
        function="backward",
        sentence="Your kernel subtracts the dot without the factor y: dx = y * (g - dot), not y * g - dot.",
        where="the result: dx = y * (g - dot[:, None]), the factor y on both terms",
        section=DERIVING,
        why="the Jacobian of softmax is diag(y) - y y^T: both terms of dx carry the factor y_j",
        oracle=_dot_not_weighted,
    ),
    Mistake(
        id="y-factor-left-out",
        function="backward",
        sentence="Your kernel leaves out the factor y: dx = y * (g - dot), not g - dot.",
        where="the result: dx = y * (g - dot[:, None])",
        section=DERIVING,
        why="the Jacobian of softmax is diag(y) - y y^T: every element of dx is y_j times (g_j - dot)",
        oracle=_y_factor_left_out,
    ),
    Mistake(
        id="dot-across-rows",
        function="backward",
        sentence=(
            "Your kernel sums y * g across the rows of its block (axis 0) instead of along each row "
            "(axis 1): each row's dot must be its own."
        ),
        where="the row reduction: with a [rows, columns] block, dot = tl.sum(y * g, axis=1)",
        section=DERIVING,
        why=(
            "dx_j = y_j * (g_j - sum_k y_k g_k) sums over the columns k of one row; a sum down a column "
            "mixes the rows a program holds, so one-row blocks hide the mistake and packed rows show it"
        ),
        oracle=_dot_across_rows,
    ),
    Mistake(
        id="unit-column-stride",
        function="backward",
        sentence="Your kernel reads y and grad_output as if their column stride were 1.",
        where="the load addresses: row * stride_row + col * stride_col, each tensor with its own two strides",
        section=ADDRESSES,
        why=(
            "on contiguous inputs the column stride is 1, so the mistake hides; on a transpose, a column "
            "step or a broadcast gradient each lane reads an element of another row"
        ),
        oracle=_unit_column_stride,
    ),
    Mistake(
        id="half-through-fp16",
        function="backward",
        sentence="Your kernel converts bf16 inputs through fp16 on their way to fp32.",
        where="the loads: convert y and g straight to fp32 (.to(tl.float32))",
        section=PRECISION,
        why="bf16 values past 65,504 become inf in fp16 and probabilities below 6e-5 lose their bits",
        oracle=_half_through_fp16,
    ),
    Mistake(
        id="half-precision-dot",
        function="backward",
        sentence="Your kernel accumulates the dot product sum(y * g) in 16 bits instead of fp32.",
        where="the loads: convert y and g to fp32 before the reduction, so tl.sum accumulates in fp32",
        section=PRECISION,
        why=(
            "tl.sum keeps its input's dtype; a dot near 1000 is rounded to 0.5 in fp16 (4 in bf16), and "
            "when g carries a common offset that rounding is as large as the whole answer g - dot"
        ),
        oracle=_half_precision_dot,
    ),
    Mistake(
        id="output-with-input-strides",
        function="backward",
        sentence=(
            "Your kernel stores dx at addresses built with an input's strides (y's or grad_output's) "
            "where the output's own are meant."
        ),
        where="the store: dx_ptr + row * n_cols + col (the output is fresh and contiguous), whatever the "
        "inputs' strides",
        section=ADDRESSES,
        why=(
            "on contiguous inputs the strides agree, so the mistake hides; with a transposed input (row "
            "stride 1) or a broadcast one (row stride 0) the rows land on each other and the rest of the "
            "output is never written"
        ),
        oracle=_output_with_input_strides,
    ),
    Mistake(
        id="capped-grid",
        function="backward",
        sentence=(
            "Your launch grid has fewer programs than the rows need, so the last rows are never written."
        ),
        where="the grid: cdiv(n_rows, rows_per_program) programs, however many rows there are",
        section=ADDRESSES,
        why=(
            "a capped grid covers only the first rows; every row past the cap keeps whatever memory held "
            "(rows before it are right)"
        ),
        oracle=_capped_grid,
    ),
]
