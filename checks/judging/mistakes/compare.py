"""Tensor helpers of the GPU workshops' mistake oracles (imports torch).

An oracle's expected value is a float64 tensor, or a :class:`Partial` when the mistake
leaves some elements undetermined (never written: they hold whatever memory held).
Agreement uses the tolerance of the result's dtype (checks.judging.tensors), and a NaN
or an infinity is matched only by the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from checks.judging.mistakes import Undetermined
from checks.judging.tensors import TOLERANCES, tolerance

F64 = torch.float64


@dataclass(frozen=True)
class Partial(Undetermined):
    """An expected tensor of which only the elements where ``known`` is True count."""

    values: torch.Tensor
    known: torch.Tensor


def as64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu", F64)


def rounded(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t`` rounded to ``dtype`` and back to float64 (what a store in dtype keeps)."""
    return t.to(dtype).to(F64)


def agrees(got, expected, *, scale: float = 1.0) -> bool:
    """True when ``got`` equals ``expected`` (a float64 tensor or a :class:`Partial`)
    within the tolerance of ``got``'s dtype, NaN for NaN and infinity for infinity."""
    if not isinstance(got, torch.Tensor) or got.dtype not in TOLERANCES:
        return False
    known: Optional[torch.Tensor] = None
    if isinstance(expected, Partial):
        expected, known = expected.values, expected.known
    if tuple(got.shape) != tuple(expected.shape):
        return False
    tol = tolerance(got.dtype, scale)
    g, e = as64(got), as64(expected)
    # Finite expected values within the tolerance (an infinite one would accept anything).
    ok = torch.isfinite(e) & ((g - e).abs() <= tol["atol"] + tol["rtol"] * e.abs())
    ok |= torch.isnan(g) & torch.isnan(e)
    ok |= torch.isinf(g) & (g == e)
    if known is not None:
        if not bool(known.any()):
            return False  # nothing determined: nothing to recognise
        ok |= ~known.to("cpu")
    return bool(ok.all())


def gathered(t: torch.Tensor, strides: tuple) -> torch.Tensor:
    """The elements a kernel reads when it addresses ``t`` (shape and storage offset as
    given) with ``strides`` instead of its own, as float64; NaN where an address falls
    outside the storage."""
    storage = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())
    flat = as64(storage)
    index = torch.full(tuple(t.shape), int(t.storage_offset()), dtype=torch.long)
    for dim, stride in enumerate(strides):
        shape = [1] * t.dim()
        shape[dim] = t.shape[dim]
        index = index + (torch.arange(t.shape[dim]) * stride).reshape(shape)
    inside = (index >= 0) & (index < flat.numel())
    values = (
        flat[index.clamp(0, max(flat.numel() - 1, 0))]
        if flat.numel()
        else torch.zeros(index.shape, dtype=F64)
    )
    return torch.where(inside, values, torch.full_like(values, float("nan")))


def row_wrong(got: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """Per row of a 2D result (or per query row of the last two dimensions): True where
    the row has an element that differs from ``right`` beyond the tolerance."""
    tol = tolerance(got.dtype)
    g, e = as64(got), as64(right)
    bad = ~((g - e).abs() <= tol["atol"] + tol["rtol"] * e.abs())
    return bad.any(dim=-1)


def unwritten_suffix(got: torch.Tensor, right: torch.Tensor) -> Optional[int]:
    """The first row R when rows 0..R-1 are right and every row from R on is wrong
    (the signature of rows a launch never reached); None otherwise.  For a result with
    leading batch or head dimensions the rows are the second to last dimension."""
    if got.dim() < 2 or got.shape[-2] < 2:
        return None
    wrong = row_wrong(got, right).reshape(-1, got.shape[-2]).any(dim=0)
    if not bool(wrong.any()):
        return None
    first = int(wrong.nonzero()[0])
    if first == 0 or not bool(wrong[first:].all()):
        return None
    return first


def rows_known(shape: tuple, first_unknown: int) -> torch.Tensor:
    """A mask over ``shape`` that is True for rows (second to last dimension) below
    ``first_unknown``."""
    rows = torch.arange(shape[-2]) < first_unknown
    return rows.reshape([1] * (len(shape) - 2) + [shape[-2], 1]).expand(shape)


def gathered_within(t: torch.Tensor, strides: tuple) -> Optional[torch.Tensor]:
    """:func:`gathered`, or None when an address falls outside the storage: what the
    mistake reads there is unknown, and NaN for NaN would match any garbage read."""
    index_max = int(t.storage_offset()) + sum((n - 1) * s for n, s in zip(t.shape, strides) if s > 0)
    index_min = int(t.storage_offset()) + sum((n - 1) * s for n, s in zip(t.shape, strides) if s < 0)
    if t.numel() and (index_min < 0 or index_max >= t.untyped_storage().nbytes() // t.element_size()):
        return None
    return gathered(t, strides)
