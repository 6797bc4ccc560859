"""What separates the failing checks from the passing ones.

Each case declares the properties its inputs exercise (``@check(..., properties=(...))``:
ragged or tile-multiple sizes, strided or contiguous inputs, many rows, large magnitudes,
a 16-bit dtype, causal attention).  The engine puts them on every record
(``details["properties"]``); after a run :func:`separating` says the property that every
failing check has and no passing check has, once, as a sentence a learner acts on.

A check that declares nothing is still evidence: :func:`observed` reads the properties
off the tensors it handed to the learner's functions (a size that is not a power of two,
a view that is not contiguous, a 16-bit dtype), the failing call's for a failing check,
every call's for a passing one that compared values (``details["observed"]``).  A declared property wins over
an observed opposite.  When no property separates, :mod:`checks.judging.call_parameters` reads the
numbers of the same calls (sizes, strides, scalar arguments) for a predicate that does: "Fails
only where K (a's columns) > 32".  Standard library only (tensors are read by duck typing).
"""

from __future__ import annotations

from typing import Iterable, Optional

from checks.judging import call_parameters

# property -> (where the checks fail, what to look at)
PROPERTIES = {
    "ragged": (
        "the width is not a multiple of the tile",
        "look at the last, partial tile: its masks, its padding value, and whether a program or a "
        "loop step reaches it at all",
    ),
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
    "full": ("attention is full (not causal)", "look at the loop over every key tile and the tail's mask"),
    "ragged-rows": (
        "the number of rows is not a multiple of the row block",
        "look at the mask on the rows of the last block",
    ),
}
KNOWN = tuple(PROPERTIES)
OPPOSITES = {
    "ragged": "tile-multiple",
    "tile-multiple": "ragged",
    "strided": "contiguous",
    "contiguous": "strided",
    "causal": "full",
    "full": "causal",
}
LOOSE = ("ragged", "strided", "causal")  # said though some passing check has them (see separating)


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


def _tensors(call) -> list:
    values = list(getattr(call, "args", ())) + list(getattr(call, "kwargs", {}).values())
    return [v for v in values if hasattr(v, "shape") and hasattr(v, "is_contiguous") and hasattr(v, "dtype")]


def observed(calls: Iterable) -> list:
    """The properties the tensors of ``calls`` exercise: 'ragged' when some size (above
    1) is not a power of two, else 'tile-multiple'; 'strided' when some view is not
    contiguous, else 'contiguous'; 'fp16' / 'bf16' by dtype; 'causal' / 'full' by a
    ``causal`` keyword of True / False.  Empty tensors and calls
    without tensors say nothing ([] when no call handed a non-empty tensor)."""
    found: set = set()
    sizes, contiguous, any_tensor = [], True, False
    for call in calls:
        causal = getattr(call, "kwargs", {}).get("causal")
        if isinstance(causal, bool):  # an attention call says which kind it is
            found.add("causal" if causal else "full")
        for t in _tensors(call):
            if 0 in tuple(t.shape):
                continue
            any_tensor = True
            sizes += [int(n) for n in t.shape if int(n) > 1]
            contiguous = contiguous and bool(t.is_contiguous())
            dtype = str(t.dtype)
            found |= {"fp16"} if dtype.endswith("float16") and "bfloat" not in dtype else set()
            found |= {"bf16"} if dtype.endswith("bfloat16") else set()
    if not any_tensor:
        return []
    if sizes:  # a 1x1 call pads nothing and fills no tile: neither
        found.add("ragged" if any(n & (n - 1) for n in sizes) else "tile-multiple")
    found.add("contiguous" if contiguous else "strided")
    return [p for p in KNOWN if p in found]


def _of(record) -> Optional[set]:
    details = record.details if isinstance(record.details, dict) else {}
    declared, seen = details.get("properties"), details.get("observed")
    if not isinstance(declared, list) and not isinstance(seen, list):
        return None
    mine = set(declared) if isinstance(declared, list) else set()
    said_dtype = bool(mine & {"fp16", "bf16"})
    for p in seen if isinstance(seen, list) else []:
        if OPPOSITES.get(p) in mine or (p in ("fp16", "bf16") and said_dtype):
            continue  # the check's own declaration wins
        mine.add(p)
    return mine


def separating(records: list) -> Optional[str]:
    """'Fails only where the width is not a multiple of the tile: look at the last, partial
    tile ...', or None: the property every failing check has and no passing check
    has, else a ragged width or a strided view that every failing check has while some
    passing check has the opposite (among checks with properties; at least one of each).
    When no property separates: a predicate over the numbers of the checks' calls,
    'Fails only where K (a's columns) > 32: ...' (see checks.judging.call_parameters)."""
    return _by_property(records) or call_parameters.separating(records)


def _by_property(records: list) -> Optional[str]:
    failing = [_of(r) for r in records if str(r.status) in ("fail", "error")]
    passing = [_of(r) for r in records if str(r.status) == "pass"]
    failing_sets = [p for p in failing if p is not None]
    passing_sets = [p for p in passing if p is not None]
    if not failing_sets or len(failing_sets) != len(failing) or not passing_sets:
        return None
    shared = set.intersection(*failing_sets)
    passed = set().union(*passing_sets)
    # first what no passing check has, in the table's order (the most specific advice
    # first); then a ragged width or a strided view that every failure has while some
    # pass has the opposite (one that happened to pass does not hide the pattern; one
    # failure alone is too little to call it a pattern)
    strict = [p for p in KNOWN if p in shared and p not in passed]
    loose = [p for p in LOOSE if p in shared and OPPOSITES[p] in passed and len(failing_sets) > 1]
    for prop in strict + loose:
        where, advice = PROPERTIES[prop]
        return f"Fails only where {where}: {advice}."
    return None
