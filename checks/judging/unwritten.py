"""Why elements of an output were never stored: the cause the map of never-stored
elements shows (a grid too small, a mask too tight, a store with another tensor's strides,
programs that all store the same rows), in the words the GPU path's oracles use.
checks.judging.stored finds the elements; :func:`unwritten_cause` names the cause.  numpy only.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

# What the map of never-stored elements shows, in the words the GPU path's oracles use:
# (id, sentence, why, what to do).
SHORT_GRID = (
    "grid",
    "Your launch grid has fewer programs than the rows need, so the last rows are never written.",
    "a grid capped below the rows covers only the first rows; every row past the cap keeps whatever "
    "memory held (rows before it are right): launch triton.cdiv(rows, rows per program) programs",
    "Give the grid a program for every row or tile (triton.cdiv(size, BLOCK), not a fixed cap)",
)
SHORT_MASK = (
    "mask",
    "Your stores stop before the end of each row, so the last columns are never written.",
    "the store's mask (or the column loop's bound) ends before the row does: bound it by the true "
    "number of columns, not by a tile size or a multiple of one",
    "Let the store's mask through every in-bounds element (cols < n_cols)",
)
STORE_STRIDES = (  # the causes that fit, not one presumed: each gives this map
    "store-strides",
    "Your stores land on some elements twice and on others never: two stores compute one address. "
    "Either the store address does not follow the output's own strides, or the row or tile index "
    "it is built from is not each program's own (a tl.program_id of the wrong axis, an index "
    "divided or taken from the wrong name).",
    "each output element needs its own address, row * the output's row stride + col * its column "
    "stride (a fresh contiguous output: row * n_cols + col), and each program its own rows and "
    "tiles, from the program id of the axis that counts them",
    "Check the indices each program computes from tl.program_id and the store's address, which "
    "must use the output's own strides",
)


_SMALL_STRIDE = (
    "a stride that is 0 or less than a row of the output (an input's row stride where the output's "
    "own is meant: 0 for a broadcast input, 1 for a transposed one)"
)
SAME_ELEMENTS = (
    "same-elements",
    "Every program of your kernel stores the same first rows, so the rest are never written: the row "
    "offset is the same in every program. Either the row index does not come from the program id of "
    f"the grid's axis, or it is multiplied by {_SMALL_STRIDE}.",
    "each program must find its own rows from the program id of the axis the grid launches (on a 1-D "
    "grid tl.program_id(0); tl.program_id(1) or a constant is 0 in every program) and reach them "
    "with the output's own row stride",
    "Compute the row (or tile) index from tl.program_id(0) for a 1-D grid, and address the output "
    "with its own row stride",
)
ROW_STEP = (  # the same first rows, stored again by the program that stored them
    "row-step",
    "A program of your kernel stores some elements more than once, and only the first rows are "
    "written: its store address does not advance by a whole row of the output from one row to the "
    f"next. The row index is multiplied by {_SMALL_STRIDE}, or the address leaves the row index out.",
    "each row needs its own place in the output: row * the output's row stride + col (a fresh "
    "contiguous output: row * n_cols + col); an input's strides describe that input's layout only",
    "Address the output with its own row stride (row * n_cols for a fresh contiguous output), not an input's",
)


def idle_programs(idle: int, launched: int) -> tuple:
    """Elements never stored while some programs stored nothing: the grid need not be short."""
    return (
        "idle-programs",
        f"No program stores these elements, yet {idle} of your {programs_said(launched)} stored "
        f"nothing at all (every lane of their stores was masked off or fell outside the output): the "
        f"tiles the programs compute from their program ids miss part of the output while some lie "
        f"past it. Look for row and column tile indices exchanged, a group or tile size that is not "
        f"the launch's, an index counted past the end, or a store mask tighter than the output.",
        "each element needs a program whose tile covers it; a program whose tile lies past the output "
        "stores nothing (its mask drops every lane), so a grid of the right size can still leave "
        "tiles unwritten",
        "Check which tile each program computes from tl.program_id, and that every tile of the output "
        "is some program's",
    )


# The same two causes when the elements never stored come first: programs that count
# rows (or tiles) from the end leave the first ones empty when there are too few of them.
SHORT_GRID_FIRST = (
    "grid",
    "No program stores the first rows: your programs count their blocks from the end, and either "
    "the grid has fewer programs than the rows need or the count is one too high "
    "(num_programs - pid where num_programs - 1 - pid is meant).",
    "a block index counted from the end reaches the first rows only when the grid has a program "
    "for every block and the program counted last gets block 0; the others keep whatever memory held",
    "Give the grid a program for every row block (triton.cdiv(size, BLOCK)) and check which block "
    "the last program gets",
)
FIRST_COLUMNS = (
    "tile-offsets",
    "Your stores never reach the first columns of each row: the tiles' column offsets start past them.",
    "each program's columns start at its tile index times the tile size; an index counted from the "
    "wrong end or with the wrong sign skips the first tiles (and its stores past the end are masked "
    "off), so those columns keep whatever memory held",
    "Check the tile index each program computes from tl.program_id and the column offsets built from it",
)


def _edge_block(flags: np.ndarray) -> str:
    """'last' when the True entries are exactly a run at the end of ``flags``, 'first' when at
    the start, else '' (none, all, or scattered)."""
    n, k = flags.size, int(flags.sum())
    if k == 0 or k == n:
        return ""
    if flags[n - k :].all():
        return "last"
    if flags[:k].all():
        return "first"
    return ""


EMPTY_GRID = (
    "empty-grid",
    "Your launch grid has no programs for this size, so nothing is written: the program count "
    "rounds down to 0.",
    "a count of programs computed as size // BLOCK is 0 whenever the size is smaller than one block "
    "(and leaves out the last partial block otherwise): every launch ran zero programs",
    "Give the grid triton.cdiv(size, BLOCK) programs: a partial block still needs its program",
)
TOO_FEW_PROGRAMS = (
    "grid",
    "Every program of your grid stored its own elements and none stored an element twice, yet some "
    "are never written: the grid has fewer programs than the tiles need.",
    "when each program owns one tile and every program did its part, elements left over need "
    "programs that were never launched: a grid capped below the tile count, or computed from the "
    "wrong sizes",
    "Give the grid one program per tile: triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N) (or per "
    "row), not a fixed cap",
)


def a_tail_at_the_end(mask: np.ndarray) -> bool:
    """True when the never-stored elements are a tail of the flattened plane: the rows
    from the first one with a gap to the last, each missing a run of columns up to its
    end that starts no later than the row above's (the last tiles of a launch order,
    row-major or grouped), not holes in every tile."""
    plane = mask.reshape(-1, mask.shape[-1]) if mask.ndim else mask.reshape(1, 1)
    rows = np.flatnonzero(plane.any(axis=1))
    if rows.size == 0 or rows[-1] != plane.shape[0] - 1 or rows.size != rows[-1] - rows[0] + 1:
        return False
    starts = plane.shape[1] - np.fliplr(~plane[rows]).argmax(axis=1)  # where each row's final run begins
    starts[plane[rows].all(axis=1)] = 0
    if any(not plane[r, c:].all() or plane[r, :c].any() for r, c in zip(rows, starts)):
        return False
    return bool((np.diff(starts) <= 0).all())


def programs_left_idle(w, own: list) -> Optional[int]:
    """How many programs of the learner's launches stored nothing (None: no launch ran, or
    a grid could not be read)."""
    if not own or any(l.programs is None for l in own):
        return None
    launched = sum(math.prod(l.programs) for l in own)
    return launched - len(w.stores.programs) if launched else None


NOTHING_STORED = (
    "nothing-stored",
    "None of your programs stored an element of this output, though the grid launched them: every "
    "program's stores are masked off or aimed past it.",
    "a program stores what its block index and mask say: an index one block too high (or from the "
    "wrong tl.program_id axis) puts every store past the end, where the mask drops it",
    "Check the block index each program computes from tl.program_id, the store's mask, and that the "
    "store goes to the output's pointer",
)


def unwritten_cause(
    mask: np.ndarray, repeated: int, launched: bool = False, within: int = 0
) -> Optional[tuple]:
    """Which of :data:`NOTHING_STORED` (``launched``: kernels of the learner's ran),
    :data:`SHORT_GRID`, :data:`SHORT_MASK`, :data:`FIRST_COLUMNS`, :data:`SAME_ELEMENTS`,
    :data:`ROW_STEP` and :data:`STORE_STRIDES` the never-stored elements (``mask``, True
    where never stored) show, or None.  Stores that land twice come first: a store
    address that skips rows also leaves the last ones empty; only the first rows stored,
    over and over, is a row offset that does not move: from one program to the next, or
    (``within``: stores on elements their own program had stored) from row to row inside
    a program.  Whole rows never stored, in
    one block at either end, are a short grid; whole columns at the end, a short mask; at
    the start, tile offsets."""
    if launched and not repeated and mask.size > 1 and mask.all():
        return NOTHING_STORED
    if repeated:
        if mask.ndim >= 2 and mask.shape[-2] > 1:
            plane = mask.reshape(-1, mask.shape[-1])
            stored_rows = np.asarray(~plane.all(axis=1))
            # only a block of first rows stored, each three times or more: programs that all
            # computed the same row index (row // 2 stores each row twice: a wrong address)
            if _edge_block(stored_rows) == "first" and repeated >= 2 * int((~plane).sum()):
                return ROW_STEP if within else SAME_ELEMENTS
        return STORE_STRIDES
    if mask.ndim >= 2 and mask.shape[-2] > 1:
        rows = np.asarray(mask.any(axis=tuple(d for d in range(mask.ndim) if d != mask.ndim - 2)))
        edge = _edge_block(rows)
        if edge and mask[..., rows, :].all():
            return SHORT_GRID if edge == "last" else SHORT_GRID_FIRST
    if mask.ndim >= 3:
        # whole rows of the flattened leading dimensions (the last heads of [B, H, N, D])
        plane = mask.reshape(-1, mask.shape[-1])
        flat_rows = np.asarray(plane.any(axis=1))
        edge = _edge_block(flat_rows)
        if edge and plane[flat_rows].all():
            return SHORT_GRID if edge == "last" else SHORT_GRID_FIRST
    if mask.ndim >= 1 and mask.shape[-1] > 1:
        cols = np.asarray(mask.reshape(-1, mask.shape[-1]).any(axis=0))
        edge = _edge_block(cols)
        if edge and mask[..., cols].all():
            return SHORT_MASK if edge == "last" else FIRST_COLUMNS
    return None


def programs_said(n: int) -> str:
    return "1 program" if n == 1 else f"{n} programs"
