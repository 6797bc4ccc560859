"""Relations over flat lists of floats: the subset the CPU workshop uses (standard library
only; it runs under ``python -S``).  See checks.judging.relations, which re-exports the
record of a relation (:class:`Relation`) and the named quantities (:class:`Quantity`)
defined here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

ATOL, RTOL = 1e-5, 1e-4  # fp32's elementwise tolerance (checks/judging/tolerances.py)


@dataclass(frozen=True)
class Relation:
    """``id`` names the relation; ``sentence`` is what the learner reads; ``evidence``
    the numbers it rests on (JSON-able)."""

    id: str
    sentence: str
    evidence: dict = field(default_factory=dict)

    def details(self) -> dict:
        return {"id": self.id, "sentence": self.sentence, "evidence": self.evidence}


@dataclass(frozen=True)
class Quantity:
    """A named quantity of the problem, declared by a workshop as data: ``per`` is "row"
    (one value per row), "column" or "all" (one value); ``values`` a sequence (or one
    float for "all").  ``missing``: what a factor equal to it means (e.g. "the division
    by l is missing"); ``extra``: what a factor equal to its inverse means."""

    name: str
    per: str
    values: Any
    missing: str = ""
    extra: str = ""


def fmt(v: float) -> str:
    return f"{v:.4g}"


def _close(a: float, b: float, atol: float, rtol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def relate_lists(
    got: Sequence[float],
    want: Sequence[float],
    *,
    atol: float = ATOL,
    rtol: float = RTOL,
    sums_to_one: bool = False,
    quantities: Sequence[Quantity] = (),
) -> Optional[Relation]:
    """The relations that hold between two flat lists of floats (None: none, or equal);
    a factor equal to one of ``quantities`` (those ``per`` "all") is named."""
    try:
        g, w = [float(v) for v in got], [float(v) for v in want]
    except (TypeError, ValueError):
        return None
    if len(g) != len(w) or not g or all(_close(a, b, atol, rtol) for a, b in zip(g, w)):
        return None
    bad = [i for i, (a, b) in enumerate(zip(g, w)) if not math.isfinite(a) and math.isfinite(b)]
    if bad:
        return Relation(
            "not-finite",
            f"Your result first holds {g[bad[0]]} at index {bad[0]} (of {len(g)}) where the right value is "
            f"{fmt(w[bad[0]])}: follow that element back to its first 0/0, inf - inf, inf * 0 "
            f"or exp of a large value",
            {"first": [bad[0]], "count": len(bad)},
        )
    if all(_close(a, -b, atol, rtol) for a, b in zip(g, w)):
        return Relation("negated", "Every value of your result is the right value with its sign flipped.", {})
    scale = max(abs(b) for b in w)
    if scale > 0:
        pivot = max(range(len(w)), key=lambda i: abs(w[i]))
        c = g[pivot] / w[pivot]
        if (
            math.isfinite(c)
            and not _close(c, 1.0, 0, rtol)
            and all(_close(a, c * b, atol, rtol) for a, b in zip(g, w))
        ):
            named = next(
                (q for q in quantities if q.per == "all" and _close(c, float(q.values), 0, max(rtol, 1e-3))),
                None,
            )
            said = (
                f"equal to {named.name}" + (f": {named.missing}" if named.missing else "")
                if named
                else "a scale or a normalization is applied one time too many or too few"
            )
            return Relation(
                "factor",
                f"Every value of your result is the right value times one constant, {fmt(c)}: {said}.",
                {"factor": c, "quantity": named.name if named else None},
            )
    d = g[0] - w[0]
    if all(_close(a, b + d, atol, rtol) for a, b in zip(g, w)):
        return Relation(
            "offset",
            f"Every value of your result is the right value plus one constant, {fmt(d)}.",
            {"offset": d},
        )
    if sums_to_one and all(math.isfinite(a) for a in g):
        total = math.fsum(g)
        if not _close(total, 1.0, atol * len(g), rtol):
            return Relation(
                "not-normalized",
                f"Your probabilities sum to {fmt(total)}, not 1: the division by the total is missing "
                f"or uses a total of only part of the values.",
                {"sum": total},
            )
    return None
