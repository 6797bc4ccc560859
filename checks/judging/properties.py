"""What separates the failing checks from the passing ones.

Each case declares the properties its inputs exercise (``@check(..., properties=(...))``:
ragged or tile-multiple sizes, strided or contiguous inputs, many rows, large magnitudes,
a 16-bit dtype, causal attention).  The engine puts them on every record
(``details["properties"]``); after a run :func:`separating` says the property that every
failing check has and no passing check has, once, as a sentence a learner acts on.
Standard library only.
"""

from __future__ import annotations

from typing import Iterable, Optional

# property -> (where the checks fail, what to look at)
PROPERTIES = {
    "ragged": ("the width is not a multiple of the tile", "look at the masks and the padding value"),
    "tile-multiple": (
        "the width is a whole number of tiles",
        "look at the loop bounds and the last full tile (a bound off by one tile)",
    ),
    "strided": (
        "the input is not contiguous (a transpose, a slice, a step)",
        "look at the strides each address uses: every tensor with its own",
    ),
    "contiguous": (
        "the input is contiguous",
        "look at the address arithmetic on the plain row-major layout",
    ),
    "many-rows": (
        "there are many rows",
        "look at the grid (one program per row or row block, however many) and the row offset",
    ),
    "large-magnitudes": (
        "the values are large",
        "look at the maximum subtraction before exp and at what is accumulated in fp32",
    ),
    "fp16": ("the inputs are fp16", "look at the conversions: load, compute in fp32, cast once at the store"),
    "bf16": ("the inputs are bf16", "look at the conversions: load, compute in fp32, cast once at the store"),
    "causal": ("attention is causal", "look at the causal mask (key j <= query i) and the tiles it skips"),
    "ragged-rows": (
        "the number of rows is not a multiple of the row block",
        "look at the mask on the rows of the last block",
    ),
}
KNOWN = tuple(PROPERTIES)


def check_properties(properties: Iterable[str], case_id: str = "") -> tuple:
    """``properties`` as a tuple, each one of :data:`KNOWN` (ValueError naming the case
    and the property otherwise)."""
    found = tuple(properties)
    unknown = [p for p in found if p not in PROPERTIES]
    if unknown:
        raise ValueError(
            f"properties of check {case_id!r}: unknown {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(KNOWN)}"
        )
    return found


def _of(record) -> Optional[set]:
    details = record.details if isinstance(record.details, dict) else {}
    found = details.get("properties")
    return set(found) if isinstance(found, list) else None


def separating(records: list) -> Optional[str]:
    """'Fails only where the width is not a multiple of the tile: look at the masks and
    the padding value', or None: the property every failing check declares and no passing
    check does (among checks that declare properties; at least one of each)."""
    failing = [_of(r) for r in records if str(r.status) in ("fail", "error")]
    passing = [_of(r) for r in records if str(r.status) == "pass"]
    failing_sets = [p for p in failing if p is not None]
    passing_sets = [p for p in passing if p is not None]
    if not failing_sets or len(failing_sets) != len(failing) or not passing_sets:
        return None
    shared = set.intersection(*failing_sets) - set().union(*passing_sets)
    for prop in KNOWN:  # the first in the table's order: the most specific advice first
        if prop in shared:
            where, advice = PROPERTIES[prop]
            return f"Fails only where {where}: {advice}."
    return None
