"""Relations: what holds between a wrong result and the right one, for any mistake.

When a check fails and no classic mistake (checks.judging.mistakes) explains the numbers,
:func:`relate` compares what the learner's call returned with the right answer on that
call and says what holds, in a sentence a learner acts on: every value negated; one
constant factor per row, per column or overall (and which quantity of the problem it
equals, from the workshop's :class:`Quantity` list); a constant offset; rows shifted,
swapped, repeated or transposed; wrong only in the last partial tile or in every k-th
block (k a tile size of the call); rows of a softmax that do not sum to 1; where a NaN
or an infinity first appears; only the first rows right.

Each relation function takes float64 arrays (``got``, ``want``: 2D, rows down) and
returns a :class:`Relation` or None.  Standard library at import time: the CPU workshop
runs under ``python -S`` without numpy and uses checks.judging.relations_plain (flat lists of
floats); numpy is imported by :func:`relate` when a GPU workshop's check first fails.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from checks.judging.relations_moved import (
    agree as _ok,
    blocks_said as _blocks_said,
    columns_moved,
    ordinal,
    rows_moved,
)

# The record of a relation and the named quantities: standard library, relations_plain's (used here too).
from checks.judging.relations_plain import ATOL, RTOL, Quantity, Relation, fmt

# -- arrays (numpy, float64) -------------------------------------------------------------


def as_array(value: Any):
    """``value`` (a torch tensor, a numpy array or nested lists) as a float64 numpy array."""
    import numpy as np

    if hasattr(value, "detach"):
        value = value.detach().to("cpu").double().numpy()
    return np.asarray(value, dtype=np.float64)


def not_finite(got, want, atol: float = ATOL, rtol: float = RTOL) -> Optional[Relation]:
    """Where a NaN or an infinity first appears (in row order) where the right value is finite."""
    import numpy as np

    bad = ~np.isfinite(got) & np.isfinite(want)
    if not bad.any():
        return None
    first = [int(i) for i in np.argwhere(bad)[0]]
    rows = np.flatnonzero(bad.any(axis=1))
    value = got[tuple(first)]
    where = f"row {first[0]}, column {first[1]}"
    spread = "only in that row" if rows.size == 1 else f"in {rows.size} of {got.shape[0]} rows"
    cols = np.flatnonzero(bad.any(axis=0))
    tail = ""
    if cols.size and cols.min() > 0 and cols.size < got.shape[1]:
        tail = f", only in columns {int(cols.min())}-{int(cols.max())} of {got.shape[1]}"
    return Relation(
        "not-finite",
        f"Your result first holds {value} at {where} ({int(bad.sum())} non-finite values, {spread}{tail}) "
        f"where the right values are finite: follow that element back to its first 0/0, inf - inf, "
        f"inf * 0 or overflow (a padding value such as -inf that reaches the arithmetic, an exp of "
        f"a large value, an intermediate kept in 16 bits past its dtype's range, a sum whose large "
        f"terms no longer cancel because one was left out or added twice).",
        {"first": first, "count": int(bad.sum()), "rows": int(rows.size)},
    )


def all_zero(got, want, atol: float = ATOL, rtol: float = RTOL) -> Optional[Relation]:
    """Every value 0 where the right values are not."""
    import numpy as np

    if not np.isfinite(got).all() or (np.abs(got) > atol).any() or not (np.abs(want) > atol).any():
        return None
    return Relation(
        "zero",
        "Every value of your result is 0 where the right values are not: follow one element back to "
        "where it becomes 0 (a value that never reaches the store, a factor of 0, a division by an "
        "infinite sum).",
        {},
    )


def negated(got, want, atol: float = ATOL, rtol: float = RTOL) -> Optional[Relation]:
    if not (abs(want) > atol).any() or not _ok(got, -want, atol, rtol).all():
        return None
    return Relation(
        "negated",
        "Every value of your result is the right value with its sign flipped: look for a subtraction "
        "written the other way round (b - a for a - b) or a sign dropped.",
        {},
    )


def _factor_of(got, want, axis: Optional[int]):
    """Least-squares factor c (per row for axis=1, per column for axis=0, one for None)
    with got ~ c * want, NaN where the right values are all 0."""
    import numpy as np

    with np.errstate(invalid="ignore", divide="ignore"):
        num = (got * want).sum(axis=axis, keepdims=axis is not None)
        den = (want * want).sum(axis=axis, keepdims=axis is not None)
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _named(c, quantities: Sequence[Quantity], per: str, rtol: float) -> Optional[tuple]:
    """(quantity, 'times' or 'divided') when the factors ``c`` equal a quantity (or its
    inverse) declared for ``per``."""
    import numpy as np

    c = np.asarray(c, dtype=np.float64).reshape(-1)
    for q in quantities:
        if q.per != per:
            continue
        v = np.asarray(q.values, dtype=np.float64).reshape(-1)
        if v.size not in (1, c.size) or not np.isfinite(v).all():
            continue
        tol = max(rtol, 1e-3)
        with np.errstate(invalid="ignore", divide="ignore"):
            if np.allclose(c, v, rtol=tol, atol=0):
                return q, "times"
            if (v != 0).all() and np.allclose(c, 1 / v, rtol=tol, atol=0):
                return q, "divided"
    return None


def _said_quantity(found: Optional[tuple]) -> str:
    if found is None:
        return ""
    q, how = found
    if how == "times":
        return f", equal to {q.name}" + (f": {q.missing}" if q.missing else "")
    return f", equal to 1 / ({q.name})" + (f": {q.extra}" if q.extra else "")


MIN_EVIDENCE = 3  # elements per fitted constant: fewer and any result fits


def _enough(shape: tuple, per: str) -> bool:
    """Whether one constant per ``per`` ("all", "row", "column") is fitted to enough elements
    to say anything (a one-column result is always "one constant per row")."""
    rows, cols = shape
    return {"all": rows * cols, "row": cols, "column": rows}[per] >= MIN_EVIDENCE


def constant_factor(
    got, want, atol: float = ATOL, rtol: float = RTOL, quantities: Sequence[Quantity] = ()
) -> Optional[Relation]:
    """got = c * want with one c overall, one per row or one per column (c not 1)."""
    import numpy as np

    if not np.isfinite(got).all() or not (abs(want) > atol).any():
        return None
    for axis, per, said in (
        (None, "all", "one constant"),
        (1, "row", "one constant per row"),
        (0, "column", "one constant per column"),
    ):
        if not _enough(got.shape, per) or (np.ptp(want, axis=axis) <= atol).all():
            continue  # want constant along the fit: one value per constant, any result fits
        c = _factor_of(got, want, axis)
        filled = np.where(np.isnan(c), 1.0, c)
        if not _ok(got, filled * want, atol, rtol).all():
            continue
        if np.allclose(filled, 1.0, rtol=rtol, atol=0):
            return None  # right up to the tolerance's spread: nothing to say
        values = filled.reshape(-1)
        if per != "all" and np.allclose(values, values[0], rtol=rtol, atol=0):
            continue  # one constant overall: said by the first pass
        zero = np.isclose(values, 0.0, atol=rtol)
        if per != "all" and zero.any() and (zero | np.isclose(values, 1.0, rtol=rtol, atol=0)).all():
            return _zero_lines(per, int(zero.sum()), values.size)
        found = _named(values, quantities, per, rtol)
        what = {"all": "the right value", "row": "the right row", "column": "the right column"}[per]
        subject = {"all": "Every value", "row": "Every row", "column": "Every column"}[per]
        shown = (
            fmt(float(values[0]))
            if per == "all"
            else f"{fmt(float(values.min()))} to {fmt(float(values.max()))}"
        )
        sentence = f"{subject} of your result is {what} times {said} ({shown}){_said_quantity(found)}"
        if found is None:
            sentence += ": a scale or a normalization is applied one time too many or too few"
            if per == "all" and values[0] > 1.5:
                # a K loop whose mask or pointers do not move on adds the same terms again
                sentence += (
                    ", or a sum adds the same terms more than once (a loop whose loads do not move on)"
                )
            n = got.shape[-1]
            if per == "row" and (values < 1).all() and n & (n - 1):
                # a ragged width (a power-of-two tile has padding lanes): lanes loaded as 0 add exp(0 - max)
                sentence += (
                    ", or each row's sum counts terms it should not (lanes past the row's end "
                    "loaded as 0 rather than -inf add exp(0 - max) to it)"
                )
        return Relation(
            f"factor-per-{per}" if per != "all" else "factor",
            sentence + ".",
            {
                "per": per,
                "factors": [float(v) for v in values[:16]],
                "quantity": found[0].name if found else None,
            },
        )
    return None


def _zero_lines(per: str, zero: int, total: int) -> Relation:
    """Some rows (or columns) all 0 where the right ones are not; the others right."""
    return Relation(
        f"zero-{per}s",
        f"{zero} of {total} {per}s of your result are all 0 where the right ones are not, and the other "
        f"{per}s are right: follow one such {per} back to where it becomes 0 (weights that underflow, "
        f"such as exp(s - m) with a running maximum started at 0 instead of -inf, or a value rounded to "
        f"16 bits; a factor of 0; a value that never reaches the store).",
        {"per": per, "zero": zero},
    )


def constant_offset(got, want, atol: float = ATOL, rtol: float = RTOL) -> Optional[Relation]:
    """got = want + d with one d overall or one per row."""
    import numpy as np

    if not np.isfinite(got).all() or not np.isfinite(want).all():
        return None
    for per, d in (("all", np.median(got - want)), ("row", np.median(got - want, axis=1, keepdims=True))):
        if not _enough(got.shape, per) or not _ok(got, want + d, atol, rtol).all():
            continue
        values = np.asarray(d, dtype=np.float64).reshape(-1)
        if per == "all":
            sentence = (
                f"Every value of your result is the right value plus one constant, {fmt(float(values[0]))}"
            )
        else:
            sentence = (
                f"Every row of your result is the right row plus one constant per row "
                f"({fmt(float(values.min()))} to {fmt(float(values.max()))})"
            )
        return Relation(
            "offset" if per == "all" else "offset-per-row",
            sentence + ": a term is added or subtracted that should not be, or one is missing.",
            {"per": per, "offsets": [float(v) for v in values[:16]]},
        )
    return None


def only_first_rows(
    got, want, atol: float = ATOL, rtol: float = RTOL, trivially_right: int = 0
) -> Optional[Relation]:
    """Rows 0..R-1 right (R the first program's rows), every later row wrong; not when R is
    at most ``trivially_right`` (causal row 0 sees one key: almost any mistake leaves it right)."""
    import numpy as np

    if got.shape[0] < 2:
        return None
    wrong = ~_ok(got, want, atol, rtol).all(axis=1)
    if not wrong.any() or wrong[0]:
        return None
    first = int(np.argmax(wrong))
    if not wrong[first:].all() or first <= trivially_right:
        return None
    head = (
        "Only row 0 of your result is right"
        if first == 1
        else f"Only rows 0-{first - 1} of your result are right"
    )
    return Relation(
        "only-first-rows",
        f"{head}; every later row is wrong: what the first program computes is right, so look at what "
        f"changes from one program to the next: the row offset (program_id times the row stride, each "
        f"tensor with its own stride), or a bound or mask computed from it (a loop over earlier tiles).",
        {"right_rows": first},
    )


def tile_pattern(
    got, want, tiles: Sequence[int] = (), atol: float = ATOL, rtol: float = RTOL
) -> Optional[Relation]:
    """Wrong only in the last, partial tile of columns (or of rows), or only in some
    whole tiles of size k (k one of ``tiles``, the call's tile sizes)."""
    import numpy as np

    bad = ~_ok(got, want, atol, rtol)
    if not bad.any():
        return None
    for axis, name in ((1, "column"), (0, "row")):
        size = bad.shape[axis]
        hit = np.flatnonzero(bad.any(axis=1 - axis))
        for k in sorted({int(t) for t in tiles if isinstance(t, int) and 1 < t}, reverse=True):
            full = (size // k) * k
            if size % k and full and hit.min() >= full:
                return Relation(
                    f"last-partial-{name}-tile",
                    f"Only the last, partial tile of {name}s is wrong ({name}s {full}-{size - 1} of "
                    f"{size}, with a tile of {k}): it is the partial tile and the last one. Either its "
                    f"loads and stores are not masked with the true size (its padding must leave the "
                    f"reduction unchanged: -inf for a maximum, 0 for a sum), or a loop stops before it "
                    f"(a bound one tile short, or rounded down to whole tiles).",
                    {"tile": k, "first": full, "size": size},
                )
            if size <= k:
                continue
            blocks = np.unique(hit // k)
            whole = all(bad.any(axis=1 - axis)[b * k : min(size, (b + 1) * k)].all() for b in blocks)
            n_blocks = -(-size // k)
            if whole and 0 < blocks.size < n_blocks and not (blocks.size == 1 and blocks[0] == n_blocks - 1):
                step = np.unique(np.diff(blocks))
                every = (
                    f" (every {ordinal(int(step[0]))} tile)"
                    if blocks.size > 2 and step.size == 1 and step[0] > 1
                    else ""
                )
                return Relation(
                    f"{name}-tiles",
                    f"Your result is wrong in whole tiles of {k} {name}s: "
                    f"tiles {_blocks_said(blocks.tolist())} of "
                    f"{n_blocks}{every}, right in the others: look at what those tiles do differently (their "
                    f"start offset, the loop's bounds, a mask or a rescale that differs for them).",
                    {"tile": k, "blocks": [int(b) for b in blocks[:16]]},
                )
    return None


def rows_not_normalized(got, want, atol: float = ATOL, rtol: float = RTOL) -> Optional[Relation]:
    """A softmax's rows that do not sum to 1 (``want``'s rows do)."""
    import numpy as np

    if not np.isfinite(got).all() or got.shape[1] == 0:
        return None
    want_sums, sums = want.sum(axis=1), got.sum(axis=1)
    if not np.allclose(want_sums, 1.0, atol=1e-6):
        return None
    off = np.abs(sums - 1.0) > atol * got.shape[1] + rtol
    if not off.any():
        return None
    return Relation(
        "not-normalized",
        f"{int(off.sum())} of {got.shape[0]} rows of your result do not sum to 1 (they sum to "
        f"{fmt(float(sums[off].min()))} to {fmt(float(sums[off].max()))}): every exp must be "
        f"divided by the "
        f"sum over the whole row, each term taken against the same maximum.",
        {"rows": int(off.sum()), "sums": [float(s) for s in sums[off][:8]]},
    )


def relate(
    result: Any,
    expected: Any,
    *,
    atol: float = ATOL,
    rtol: float = RTOL,
    quantities: Sequence[Quantity] = (),
    tiles: Sequence[int] = (),
    softmax: bool = False,
    trivially_right: int = 0,
) -> Optional[Relation]:
    """The first relation that holds between ``result`` and ``expected`` (None when none
    does, or they agree): a NaN first, then the value relations, then the layout ones."""
    import numpy as np

    try:
        got, want = as_array(result), as_array(expected)
    except (TypeError, ValueError, RuntimeError):
        return None
    if got.shape != want.shape or got.size == 0 and want.size == 0:
        if got.ndim == 2 and got.shape == want.T.shape:
            return rows_moved(got, want, atol, rtol)
        return None
    if got.ndim == 1:
        got, want = got[None, :], want[None, :]
    elif got.ndim > 2:
        got, want = got.reshape(-1, got.shape[-1]), want.reshape(-1, want.shape[-1])
    elif got.ndim == 0:
        return None
    if _ok(got, want, atol, rtol).all():
        return None
    order = [
        lambda: not_finite(got, want, atol, rtol),
        lambda: all_zero(got, want, atol, rtol),
        lambda: negated(got, want, atol, rtol),
        lambda: tile_pattern(got, want, tiles, atol, rtol),  # confined to tiles: before a per-column factor
        lambda: constant_factor(got, want, atol, rtol, quantities),
        lambda: constant_offset(got, want, atol, rtol),
        lambda: rows_moved(got, want, atol, rtol),
        lambda: columns_moved(got, want, atol, rtol),
        lambda: only_first_rows(got, want, atol, rtol, trivially_right),
        lambda: rows_not_normalized(got, want, atol, rtol) if softmax else None,
    ]
    with np.errstate(all="ignore"):
        for find in order:
            found = find()
            if found is not None:
                return found
    return None
