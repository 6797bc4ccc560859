"""Which bytes the learner's kernels stored during one call, in Triton's interpreter.

checks.judging.launches reports every store's active lanes (address and the bytes written);
:class:`StoreLog` keeps those of the learner's own launches, and :meth:`StoreLog.gaps`
says, for a returned tensor, which of its elements hold bytes that no such store put
there: never stored at all, or stored and then overwritten by something that is not a
kernel (a NumPy view of the tensor, a PyTorch copy).  The last store to a byte wins,
as in memory.  numpy only; the tensor is read through ``.numpy()`` after the call.

Elements never stored are of two kinds.  When something else put values there (a NumPy
view, a copy, a kernel of another file, host values), the answer is not the kernel's:
:func:`stored_problem` says so.  When nothing did (the output was allocated, perhaps
zero-filled, and left), the learner's kernels simply missed them: a grid too small, a
mask too tight, a store with the wrong strides.  :func:`unwritten_problem` reports that
as an addressing bug, with the elements no program wrote, every launch's grid and a map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from checks.judging import failure_kinds
from checks.judging.op_rules import HOST_VALUES, INITIALIZERS

_UNKNOWN = -1  # an atomic's result: the byte was written, its value is not known here
ADDRESSING_HINT = (
    "Every element needs a program whose tl.store reaches it: give the grid a program for every "
    "row or tile (triton.cdiv(size, BLOCK), not a fixed cap), let the store's mask through every "
    "in-bounds element, and address the output with its own strides (not the input's)"
)


@dataclass
class Gaps:
    """The elements of one tensor whose bytes no store of the learner's kernels explains."""

    total: int
    never_stored: int
    overwritten: int
    first: list  # logical indices, up to three, of the first such elements
    unexplained: np.ndarray  # bool, the tensor's shape: True where no store explains the bytes
    repeated: int = 0  # stores that landed on an element of the tensor already stored (addresses repeat)

    @property
    def count(self) -> int:
        return self.never_stored + self.overwritten


class StoreLog:
    def __init__(self) -> None:
        self._addrs: list = []
        self._values: list = []
        self._merged: Optional[tuple] = None
        self._gaps: dict = {}  # (address, shape, strides, dtype) -> Optional[Gaps], once per call
        self.programs: set = set()  # (launch, program id) of every program that stored something

    def add(self, addrs: np.ndarray, values: Optional[np.ndarray], elem: int, program: Any = None) -> None:
        """One store: ``addrs`` of its active lanes, ``values`` one row of bytes per lane;
        ``program``: which program of which launch stored them."""
        if program is not None:
            self.programs.add(program)
        if values is not None and values.shape[1] == elem:
            row = values.astype(np.int16)
        else:  # value not known (an atomic), or a width that is not the pointer's
            row = np.full((addrs.size, elem), _UNKNOWN, dtype=np.int16)
        self._addrs.append((addrs[:, None] + np.arange(elem, dtype=np.uint64)).reshape(-1))
        self._values.append(row.reshape(-1))
        self._merged = None
        self._gaps.clear()

    @property
    def empty(self) -> bool:
        return not self._addrs

    def _last_writes(self) -> tuple:
        """(sorted unique byte addresses, the value the last store left at each, every
        stored byte address sorted, repeats kept)."""
        if self._merged is None:
            addrs = np.concatenate(self._addrs) if self._addrs else np.zeros(0, np.uint64)
            values = np.concatenate(self._values) if self._values else np.zeros(0, np.int16)
            order = np.argsort(addrs, kind="stable")  # equal addresses keep store order
            addrs, values = addrs[order], values[order]
            last = np.ones(addrs.size, dtype=bool)
            last[:-1] = addrs[1:] != addrs[:-1]
            self._merged = (addrs[last], values[last], addrs)
        return self._merged

    def gaps(self, t) -> Optional[Gaps]:
        """None when every element of tensor ``t`` holds what the logged stores wrote."""
        key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype))
        if key not in self._gaps:
            self._gaps[key] = self._find_gaps(t)
        return self._gaps[key]

    def _find_gaps(self, t) -> Optional[Gaps]:
        n, elem = t.numel(), t.element_size()
        if n == 0:
            return None
        offsets = np.zeros((), dtype=np.int64)
        for size, stride in zip(t.shape, t.stride()):
            offsets = np.add.outer(offsets, np.arange(size, dtype=np.int64) * stride)
        starts = np.uint64(t.data_ptr()) + (offsets.reshape(-1) * elem).astype(np.uint64)
        want = (starts[:, None] + np.arange(elem, dtype=np.uint64)).reshape(-1)
        # The tensor's bytes in logical order (a copy made after the call, outside the witness).
        now = t.detach().reshape(-1).contiguous().view(-1).view(_byte_dtype()).numpy().astype(np.int16)
        addrs, values, every = self._last_writes()
        if addrs.size == 0:
            stored = np.zeros(want.size, dtype=bool)
            same = stored
        else:
            idx = np.minimum(np.searchsorted(addrs, want), addrs.size - 1)
            stored = addrs[idx] == want
            kept = values[idx]
            same = stored & ((kept == _UNKNOWN) | (kept == now))
        # per element of t (all of its bytes), not per byte
        stored_elems, same_elems = stored.reshape(n, elem).all(axis=1), same.reshape(n, elem).all(axis=1)
        if same_elems.all():
            return None
        bad = np.flatnonzero(~same_elems)[:3]
        first = [list(int(i) for i in np.unravel_index(int(b), tuple(t.shape))) for b in bad]
        never = int((~stored_elems).sum())
        element_starts = np.unique(starts)  # a store to an element counts once, at its first byte
        stores_each = np.searchsorted(every, element_starts, "right") - np.searchsorted(every, element_starts)
        return Gaps(
            total=n,
            never_stored=never,
            overwritten=int((~same_elems).sum()) - never,
            first=first,
            unexplained=(~same_elems).reshape(tuple(t.shape)),
            repeated=int(np.maximum(stores_each - 1, 0).sum()),
        )


def _byte_dtype():
    import torch

    return torch.uint8


def left_as_allocated(w, t, gaps: Gaps) -> bool:
    """Whether the elements of ``t`` that no store of the learner's kernels explains were
    simply never written: no value of them was overwritten, ``t`` is no argument's memory,
    no kernel of another file was given it, nothing but an allocation's fill (``zeros``,
    ``fill_``) wrote it, and no values were read on the host during the call."""
    storage = t.untyped_storage().data_ptr()
    return (
        gaps.overwritten == 0
        and storage not in w.inputs
        and storage not in w.foreign_storages()
        and not any(how in HOST_VALUES for how, _, _ in w.writes)
        and not any(s == storage and how not in INITIALIZERS for how, _, s in w.writes)
    )


def stored_problem(w, fn_name: str, outputs: list, where, section: str) -> Optional[str]:
    """Why a returned tensor is not what the learner's kernels stored (None: it is, or
    its only gaps are elements the kernels missed: see :func:`unwritten_problem`).
    ``w`` is the call's witness (checks.judging.provenance.Witness); ``where(line, file)`` says
    a line of the learner's file as the other messages do."""
    for i, t in enumerate(outputs):
        gaps = w.stores.gaps(t)
        if gaps is None or left_as_allocated(w, t, gaps):
            continue
        which = "the tensor" if len(outputs) == 1 else f"output {i}"
        first = ", ".join(str(ix) for ix in gaps.first)
        parts = []
        if gaps.never_stored:
            parts.append(
                f"{gaps.never_stored} of {gaps.total} elements were never stored by a kernel of yours"
            )
        if gaps.overwritten:
            parts.append(f"{gaps.overwritten} hold values other than your kernel stored there")
        said = f"{fn_name} returned {which} (shape {tuple(t.shape)}): {' and '.join(parts)} (first: {first})"
        if t.untyped_storage().data_ptr() in w.inputs:
            said += "; it is the memory of an argument, returned without your kernel writing it"
        seen = []
        for how, line, storage in w.writes:
            named = f"{how} ({where(line, w.learner_file)})"
            if storage == t.untyped_storage().data_ptr() and named not in seen:
                seen.append(named)
        if seen:
            said += f"; values reached it another way, without a kernel's store: {', '.join(seen[:3])}"
        return (
            f"{said}. Every element a call returns must be stored by a tl.store of a kernel "
            f'defined in your file, during that call (see the lesson\'s section "{section}")'
        )
    return None


def unwritten_problem(w, fn_name: str, outputs: list) -> Optional[tuple]:
    """(message, details) for the first returned tensor with elements that no program of
    the learner's kernels stored and nothing else wrote (an addressing or grid bug), or
    None.  The details hold a map of those elements (checks.judging.tensors.error_map)."""
    import torch

    from checks.judging.tensors import error_map  # torch: only once there is something to say

    for i, t in enumerate(outputs):
        gaps = w.stores.gaps(t)
        if gaps is None or not left_as_allocated(w, t, gaps):
            continue
        mask = gaps.unexplained
        which = "the tensor" if len(outputs) == 1 else f"output {i}"
        shape = tuple(t.shape)
        launches = _launches_said(w.own_launches())
        plane = mask.reshape(1, -1) if mask.ndim < 2 else mask.reshape(-1, shape[-1])
        details = {
            "verdict": failure_kinds.UNWRITTEN,
            "total": gaps.total,
            "never_stored": gaps.never_stored,
            "stores_repeated": gaps.repeated,
            "shape": list(shape),
            "first_unwritten": gaps.first,
            "launches": [
                {"kernel": l.kernel, "grid": list(l.programs) if l.programs is not None else None}
                for l in w.own_launches()
            ],
            "map": error_map(torch.from_numpy(np.ascontiguousarray(plane))),
        }
        if mask.ndim == 2:
            rows, cols = np.flatnonzero(mask.any(axis=1)).tolist(), np.flatnonzero(mask.any(axis=0)).tolist()
            details["rows_affected"], details["cols_affected"] = _index_ranges(rows), _index_ranges(cols)
        repeats = (
            f"; {gaps.repeated} of their stores landed on elements already stored (unless a program "
            f"means to store an element twice, the store addresses repeat where they should differ)"
            if gaps.repeated
            else ""
        )
        own = w.own_launches()
        empty_grids = bool(own) and all(l.programs is not None and 0 in l.programs for l in own)
        cause = EMPTY_GRID if empty_grids else unwritten_cause(mask, gaps.repeated, launched=bool(own))
        last_tiles = cause is None and not gaps.repeated and _a_tail_at_the_end(mask)
        if last_tiles and _every_program_stored(w, own):
            cause = TOO_FEW_PROGRAMS
        # what to do, said last: a named mistake's own advice replaces it (mistakes.annotate)
        details["advice"] = cause[3] if cause else ADDRESSING_HINT
        message = (
            (f"{cause[1]} — " if cause else "")
            + f"{fn_name} returned {which} (shape {shape}) with {gaps.never_stored} of {gaps.total} "
            f"elements that no program of your kernels stored (they hold whatever the allocation "
            f"left there): {_where_unwritten(mask)}. {_size_said(shape)}; your launches: {launches}"
            f"{repeats}. {details['advice']}"
        )
        if cause:
            details["cause"] = {"id": cause[0], "sentence": cause[1], "why": cause[2]}
        return message, details
    return None


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
STORE_STRIDES = (
    "store-strides",
    "Your stores land on some elements twice and on others never: the store address does not follow "
    "the output's own strides.",
    "each output element needs its own address, row * the output's row stride + col * its column "
    "stride (a fresh contiguous output: row * n_cols + col), whatever the input's strides were",
    "Address the output with its own strides, not the input's",
)


SAME_ELEMENTS = (
    "same-elements",
    "Every program of your kernel stores the same first rows, so the rest are never written: the row "
    "index does not come from the program id of the grid's axis.",
    "each program must find its own rows from the program id of the axis the grid launches: on a 1-D "
    "grid that is tl.program_id(0); tl.program_id(1) (or a constant) is 0 in every program, so all of "
    "them store the first row",
    "Compute the row (or tile) index from tl.program_id(0) for a 1-D grid",
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


def _a_tail_at_the_end(mask: np.ndarray) -> bool:
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


def _every_program_stored(w, own: list) -> bool:
    """True when the learner's launches ran at least one program and every program of
    every launch stored something (each launch's grid known)."""
    if not own or any(l.programs is None for l in own):
        return False
    launched = sum(math.prod(l.programs) for l in own)
    return 0 < launched == len(w.stores.programs)


NOTHING_STORED = (
    "nothing-stored",
    "None of your programs stored an element of this output, though the grid launched them: every "
    "program's stores are masked off or aimed past it.",
    "a program stores what its block index and mask say: an index one block too high (or from the "
    "wrong tl.program_id axis) puts every store past the end, where the mask drops it",
    "Check the block index each program computes from tl.program_id, the store's mask, and that the "
    "store goes to the output's pointer",
)


def unwritten_cause(mask: np.ndarray, repeated: int, launched: bool = False) -> Optional[tuple]:
    """Which of :data:`NOTHING_STORED` (``launched``: kernels of the learner's ran),
    :data:`SHORT_GRID`, :data:`SHORT_MASK`, :data:`FIRST_COLUMNS`, :data:`SAME_ELEMENTS` and
    :data:`STORE_STRIDES` the never-stored elements (``mask``, True where never stored)
    show, or None.  Stores that land twice come first: a store
    address that skips rows also leaves the last ones empty; only the first rows stored,
    over and over, is every program computing the same row.  Whole rows never stored, in
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
                return SAME_ELEMENTS
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


def _index_ranges(idx: list, limit: int = 4) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8' (the first ``limit`` runs, then how many more)."""
    runs: list = []
    for i in idx:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    said = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:limit]]
    more = f" (+{len(runs) - limit} more runs)" if len(runs) > limit else ""
    return ", ".join(said) + more


def _where_unwritten(mask: np.ndarray) -> str:
    """Which indices hold unwritten elements, dimension by dimension."""
    if mask.ndim == 1:
        return f"elements {_index_ranges(np.flatnonzero(mask).tolist())}"
    parts = []
    for d in range(mask.ndim):
        hit = np.flatnonzero(mask.any(axis=tuple(a for a in range(mask.ndim) if a != d))).tolist()
        size = mask.shape[d]
        name = ("row", "column")[d] if mask.ndim == 2 else f"dim {d}"
        if mask.ndim == 2 and size == 1:
            parts.append(f"the only {name}")
        elif len(hit) == size:
            parts.append(f"all {_count(size, name)}" if mask.ndim == 2 else f"every index of {name}")
        else:
            said = f"{name}s" if mask.ndim == 2 else f"{name} indices"
            parts.append(f"{said} {_index_ranges(hit)} ({len(hit)} of {size})")
    return "; ".join(parts)


def _count(n: int, name: str) -> str:
    """'1 row', '3 rows'."""
    return f"{n} {name}" + ("" if n == 1 else "s")


def _size_said(shape: tuple) -> str:
    if len(shape) == 1:
        return f"The output has {_count(shape[0], 'element')}"
    if len(shape) == 2:
        return f"The output has {_count(shape[0], 'row')} and {_count(shape[1], 'column')}"
    return f"The output has shape {shape}"


def _launches_said(launches: list) -> str:
    """'softmax_kernel on grid (256,) = 256 programs', launches on one grid counted once."""
    said: list = []
    for l in launches:
        if l.programs is None:
            text = f"{l.kernel} on a grid that could not be read"
        else:
            text = f"{l.kernel} on grid {l.programs} = {_programs_said(math.prod(l.programs))}"
        if said and said[-1][0] == text:
            said[-1][1] += 1
        else:
            said.append([text, 1])
    parts = [text + (f" ({n} launches)" if n > 1 else "") for text, n in said[:6]]
    more = f" and {len(said) - 6} more" if len(said) > 6 else ""
    return ("; ".join(parts) + more) if parts else "none stored anything"


def _programs_said(n: int) -> str:
    return "1 program" if n == 1 else f"{n} programs"
