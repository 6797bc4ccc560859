"""Relations of place: every row (or column) of a wrong result is some row of the right
one, but not its own -- shifted, repeated, swapped, repeated per block or transposed --
said with the causes each admits.  Arrays are float64 numpy arrays (``got``, ``want``:
2D, rows down), as in checks.judging.relations, which tries these among the others.
"""

from __future__ import annotations

from typing import Optional

from checks.judging.relations_plain import ATOL, RTOL, Relation


def agree(got, want, atol: float, rtol: float):
    """Elementwise agreement, NaN for NaN and infinity for the same infinity."""
    import numpy as np

    with np.errstate(invalid="ignore"):
        ok = np.isfinite(want) & (np.abs(got - want) <= atol + rtol * np.abs(want))
        ok |= np.isnan(got) & np.isnan(want)
        ok |= np.isinf(got) & (got == want)
    return ok


def ordinal(n: int) -> str:
    return {2: "second", 3: "third"}.get(n, f"{n}th")


def blocks_said(idx: list) -> str:
    return ", ".join(str(i) for i in idx[:6]) + (f" (+{len(idx) - 6} more)" if len(idx) > 6 else "")


def _row_matches(got, want, atol: float, rtol: float):
    """match[i, j]: row i of got equals row j of want."""
    import numpy as np

    if got.shape[0] * want.shape[0] * got.shape[1] > (1 << 24):
        return None
    return np.stack([agree(got[i][None, :], want, atol, rtol).all(axis=1) for i in range(got.shape[0])])


def rows_moved(got, want, atol: float = ATOL, rtol: float = RTOL) -> Optional[Relation]:
    """Every row of got is some row of want, but not its own: shifted by k, repeated
    (one row everywhere), swapped (a permutation), or columns the same (transposed)."""
    import numpy as np

    rows = got.shape[0]
    if got.shape == want.T.shape and min(got.shape) > 1 and agree(got, want.T, atol, rtol).all():
        return Relation(
            "transposed",
            "Your result is the right result transposed: rows and columns are swapped in the store's "
            "(or the load's) address: row * stride_row + col * stride_col.",
            {},
        )
    if rows < 2:
        return None
    match = _row_matches(got, want, atol, rtol)
    if match is None or not match.any(axis=1).all() or match[np.arange(rows), np.arange(rows)].all():
        return None
    source = match.argmax(axis=1)
    own = match[np.arange(rows), np.arange(rows)]
    source = np.where(own, np.arange(rows), source)
    starts = _block_starts(match, own)
    if starts is not None and not match[:, 0].all():
        return Relation(
            "rows-repeated",
            f"Every wrong row of your result holds the right answer of the first row of its block (blocks "
            f"starting at row{'s' if len(starts) > 1 else ''} {blocks_said(starts)}): each is computed as "
            f"if it were its block's first row. Look for a per-row quantity taken from the block's start "
            f"instead of each row's own index: a causal mask that compares keys with the block's first "
            f"row, or rows loaded from the block's start without the block's row range (its tl.arange).",
            {"starts": [int(b) for b in starts[:16]]},
        )
    if np.unique(source).size == 1 or match[:, 0].all():
        r = int(source[0]) if np.unique(source).size == 1 else 0
        return Relation(
            "rows-repeated",
            f"Every row of your result is row {r}'s right answer: the row index is the same for every "
            f"row. Look for a row offset that does not use tl.program_id (or multiplies it by 0, or by a "
            f"row stride of 0: a broadcast input's), or a per-row condition taken from one row (a causal "
            f"mask that compares keys with the block's first row instead of each row's own index).",
            {"row": r},
        )
    shift = source - np.arange(rows)
    moved = shift[~own]
    if moved.size and np.unique(moved).size == 1:
        k = int(moved[0])
        return Relation(
            "rows-shifted",
            f"Row i of your result holds the right answer of row i {'+' if k > 0 else '-'} {abs(k)}: the row "
            f"offset is off by {abs(k)} row{'s' if abs(k) > 1 else ''} (program_id {'+' if k > 0 else '-'} "
            f"{abs(k)}, or a start that is not the program's own).",
            {"shift": k},
        )
    if np.unique(source).size == rows:
        return Relation(
            "rows-swapped",
            f"Your result holds the right rows in another order "
            f"(row {int(np.flatnonzero(~own)[0])} holds row "
            f"{int(source[~own][0])}'s answer): the row a program reads is not the row it writes.",
            {"sources": [int(s) for s in source[:16]]},
        )
    return Relation(
        "rows-repeated",
        f"Each row of your result is the right answer of some row, but rows repeat ({np.unique(source).size} "
        f"distinct of {rows}): several rows are computed with the same row index and some rows' answers "
        f"appear nowhere. Look for a row offset that repeats (a program id of the wrong axis, a row "
        f"stride of 0 or less than a row) or a per-row condition taken from another row.",
        {"sources": [int(s) for s in source[:16]]},
    )


def _block_starts(match, own) -> Optional[list]:
    """The first rows of the blocks when each wrong row holds the right answer of the right
    row that starts its block (each block computed as its first row), else None."""
    import numpy as np

    if not own[0]:
        return None
    starts = [0]
    for i in np.flatnonzero(~own):
        if not match[i, starts[-1]]:
            later = [r for r in np.flatnonzero(own[starts[-1] + 1 : i]) + starts[-1] + 1 if match[i, r]]
            if not later:
                return None
            starts.append(int(later[0]))
    return starts if own.size >= 2 * len(starts) else None


def columns_moved(got, want, atol: float = ATOL, rtol: float = RTOL) -> Optional[Relation]:
    """The column version of :func:`rows_moved` (shifted or reversed columns)."""
    found = rows_moved(got.T, want.T, atol, rtol)
    if found is None or found.id == "transposed":
        return None
    if (
        found.id == "rows-repeated"
    ):  # its row candidates (a causal mask, a broadcast row) say nothing of columns
        column = found.evidence.get("row")
        return Relation(
            "columns-repeated",
            (
                f"Every column of your result is column {column}'s right answer"
                if column is not None
                else "Columns of your result repeat the right answers of other columns"
            )
            + ": the column index is the same for several columns. Look for a column offset without its "
            "tl.arange (or without the column tile's program id), or a column stride of 0.",
            found.evidence,
        )
    sentence = (
        found.sentence.replace("Every row", "Every column")
        .replace("Row i", "Column i")
        .replace("row offset", "column offset")
        .replace("row i", "column i")
        .replace("rows", "columns")
        .replace(" row ", " column ")
        .replace("row's", "column's")
    )
    return Relation(found.id.replace("rows", "columns"), sentence, found.evidence)
