"""I1 strided softmax: the classic mistakes, each a float64 oracle of the wrong computation."""

from __future__ import annotations

from typing import Optional

import torch

from checks.judging.mistakes import Call, Mistake, Variants, quantities as named
from checks.judging.mistakes.compare import (
    F64,
    Partial,
    agrees as _agrees,
    as64,
    gathered_within,
    rounded,
    rows_known,
    unwritten_suffix,
)

ADDRESSES = "Address tables: where each lane reads and writes"
LAYOUT_AWARE = "The layout-aware path"
NUMERICS = "Numerics: a stable fp32 softmax"
CONTRACT = "The contract"
ROW_KERNEL = "The row kernel"

MAX_ELEMENTS = 1 << 22  # a larger call is not diagnosed (its oracles would take too long)


def _x(call: Call) -> Optional[torch.Tensor]:
    x = call.argument(0, "x")
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.numel() > MAX_ELEMENTS:
        return None
    return x


def right(call: Call):
    x = _x(call)
    return None if x is None else torch.softmax(as64(x), dim=-1)


def agrees(call: Call, expected) -> bool:
    return _agrees(call.result, expected)


SOFTMAX_FUNCTIONS = ("softmax",)


def quantities(call: Call) -> list:
    x = _x(call)
    return [] if x is None else named.softmax_rows(as64(x))


def _unit_column_stride(call: Call):
    x = _x(call)
    if x is None or x.stride(1) == 1 or x.shape[1] < 2:
        return None
    read = gathered_within(x, (x.stride(0), 1))
    if read is None or bool(torch.isnan(read).all()):
        return None  # reads past the storage, or only poisoned gaps: any wrong address would match
    return torch.softmax(read, dim=-1)


def _input_strides_for_output(call: Call):
    x = _x(call)
    if x is None or x.numel() == 0:
        return None
    n_rows, n_cols = x.shape
    stride_row, stride_col = x.stride()
    if (stride_row, stride_col) == (n_cols, 1):
        return None
    probs = torch.softmax(as64(x), dim=-1)
    at = (torch.arange(n_rows)[:, None] * stride_row + torch.arange(n_cols)[None, :] * stride_col).reshape(-1)
    inside = at < x.numel()
    out = torch.zeros(x.numel(), dtype=F64)
    known = torch.zeros(x.numel(), dtype=torch.bool)
    out[at[inside]] = probs.reshape(-1)[inside]  # later writes win, as in the row-by-row kernel
    known[at[inside]] = True
    out, known = out.reshape(n_rows, n_cols), known.reshape(n_rows, n_cols)
    if torch.allclose(out[known], probs[known], rtol=1e-6, atol=1e-12):
        return None  # the misplaced values equal the right ones (a uniform row): nothing to see
    return Partial(out, known)


def stale_running_sum(x64: torch.Tensor, block: int) -> torch.Tensor:
    """Softmax whose running sum over column tiles of ``block`` is never rescaled when the
    running maximum grows: l += sum(exp(tile - m_new)), the old l kept as it was."""
    n_rows, n_cols = x64.shape
    tiles = -(-n_cols // block)
    padded = torch.full((n_rows, tiles * block), float("-inf"), dtype=F64)
    padded[:, :n_cols] = x64
    padded = padded.reshape(n_rows, tiles, block)
    running_max = padded.amax(dim=2).cummax(dim=1).values  # m after each tile
    l = torch.exp(padded - running_max[:, :, None]).sum(dim=(1, 2))
    return torch.exp(x64 - running_max[:, -1:]) / l[:, None]


def _stale_denominator(call: Call):
    x = _x(call)
    if x is None or x.numel() == 0:
        return None
    x64 = as64(x)
    n_cols = x.shape[1]
    blocks = [1 << k for k in range(4, 13) if (1 << k) < n_cols]  # a tile narrower than the row
    return Variants(stale_running_sum(x64, b) for b in blocks)


def _max_not_subtracted(call: Call):
    x = _x(call)
    if x is None:
        return None
    e = torch.exp(as64(x).to(torch.float32)).to(F64)  # fp32: exp overflows past 88.7
    return e / e.sum(dim=-1, keepdim=True)


def _half_through_fp16(call: Call):
    x = _x(call)
    if x is None or x.dtype != torch.bfloat16:
        return None
    return torch.softmax(rounded(as64(x), torch.float16), dim=-1)


def _capped_grid(call: Call):
    x, got = _x(call), call.result
    if x is None or not isinstance(got, torch.Tensor) or got.shape != x.shape:
        return None
    expected = torch.softmax(as64(x), dim=-1)
    first = unwritten_suffix(got, expected)
    if first is None or first % 16:
        return None
    return Partial(expected, rows_known(tuple(x.shape), first))


MISTAKES = [
    Mistake(
        id="unit-column-stride",
        function="softmax",
        sentence="Your kernel reads x as if its column stride were 1 (it reads row * stride_row + col).",
        where="the load address of x: it must use both strides, row * stride_row + col * stride_col",
        section=ADDRESSES,
        why=(
            "on a contiguous tensor the column stride is 1, so the mistake hides; on a transpose or a "
            "column step each lane reads an element of another row, and the result is the softmax of "
            "the wrong numbers"
        ),
        oracle=_unit_column_stride,
    ),
    Mistake(
        id="input-strides-for-output",
        function="softmax",
        sentence="Your kernel stores the output with the input's strides instead of the output's own.",
        where="the store address: the fresh output is contiguous, so (r, c) goes to out_ptr + r * n_cols + c",
        section=ADDRESSES,
        why=(
            "the right values land in the wrong places: transposed for a transpose, past the end for a "
            "column slice, on top of row 0 for a broadcast row"
        ),
        oracle=_input_strides_for_output,
    ),
    Mistake(
        id="stale-running-sum",
        function="softmax",
        sentence=(
            "Your tiled pass keeps the running sum l without rescaling it when the running maximum grows."
        ),
        where="pass 1 of the tiled kernel: l = l * exp(m - m_new) + sum(exp(tile - m_new))",
        section=LAYOUT_AWARE,
        why=(
            "the old sum was measured relative to the old maximum; added as it is, it counts the earlier "
            "tiles too large, so the row sums to less than 1 whenever the maximum rises after the first tile"
        ),
        oracle=_stale_denominator,
    ),
    Mistake(
        id="half-through-fp16",
        function="softmax",
        sentence="Your kernel converts bf16 input through fp16 on its way to fp32.",
        where="the load: convert the loaded values straight to fp32 (x.to(tl.float32))",
        section=CONTRACT,
        why="bf16 values past 65,504 become inf in fp16, and the row turns into NaN",
        oracle=_half_through_fp16,
    ),
    Mistake(
        id="max-not-subtracted",
        function="softmax",
        sentence="Your kernel computes exp(x) without first subtracting the row maximum.",
        where="before the exponential: numerators = exp(x - row_max)",
        section=NUMERICS,
        why=(
            "exp overflows fp32 past 88.7 (inf / inf is NaN) and underflows to 0 far below it (0 / 0 is "
            "NaN); softmax(x - max) is the same function with every term at most 1"
        ),
        oracle=_max_not_subtracted,
    ),
    Mistake(
        id="capped-grid",
        function="softmax",
        sentence=(
            "Your launch grid has fewer programs than the rows need, so the last rows are never written."
        ),
        where="the grid: one program per row (or per row block), however many rows there are",
        section=ROW_KERNEL,
        why=(
            "a capped grid covers only the first rows; every row past the cap keeps whatever memory held "
            "(rows before it are right)"
        ),
        oracle=_capped_grid,
    ),
]
