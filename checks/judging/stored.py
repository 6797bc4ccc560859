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
from checks.judging.unwritten import (
    EMPTY_GRID,
    SHORT_GRID,
    SHORT_MASK,
    TOO_FEW_PROGRAMS,
    a_tail_at_the_end,
    idle_programs,
    programs_left_idle,
    programs_said,
    unwritten_cause,
)

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
    within: int = 0  # of those, stores on an element the same program had stored already

    @property
    def count(self) -> int:
        return self.never_stored + self.overwritten


class StoreLog:
    def __init__(self) -> None:
        self._addrs: list = []
        self._values: list = []
        self._tags: list = []  # per stored byte: which program stored it (an index of _program_tags)
        self._program_tags: dict = {}
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
        tag = self._program_tags.setdefault(program, len(self._program_tags))
        self._tags.append(np.full(addrs.size * elem, tag, dtype=np.int64))
        self._merged = None
        self._gaps.clear()

    @property
    def empty(self) -> bool:
        return not self._addrs

    def _last_writes(self) -> tuple:
        """(sorted unique byte addresses, the value the last store left at each, every
        stored byte address sorted, repeats kept, the byte addresses a program had
        already stored, sorted)."""
        if self._merged is None:
            addrs = np.concatenate(self._addrs) if self._addrs else np.zeros(0, np.uint64)
            values = np.concatenate(self._values) if self._values else np.zeros(0, np.int16)
            tags = np.concatenate(self._tags) if self._tags else np.zeros(0, np.int64)
            by_program = np.lexsort((tags, addrs))
            a, t = addrs[by_program], tags[by_program]
            again = a[1:][(a[1:] == a[:-1]) & (t[1:] == t[:-1])]  # sorted, as a is
            order = np.argsort(addrs, kind="stable")  # equal addresses keep store order
            addrs, values = addrs[order], values[order]
            last = np.ones(addrs.size, dtype=bool)
            last[:-1] = addrs[1:] != addrs[:-1]
            self._merged = (addrs[last], values[last], addrs, again)
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
        import torch

        now = t.detach().reshape(-1).contiguous().view(-1).view(torch.uint8).numpy().astype(np.int16)
        addrs, values, every, again = self._last_writes()
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
        again_each = np.searchsorted(again, element_starts, "right") - np.searchsorted(again, element_starts)
        return Gaps(
            total=n,
            never_stored=never,
            overwritten=int((~same_elems).sum()) - never,
            first=first,
            unexplained=(~same_elems).reshape(tuple(t.shape)),
            repeated=int(np.maximum(stores_each - 1, 0).sum()),
            within=int(again_each.sum()),
        )


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
        cause = (
            EMPTY_GRID
            if empty_grids
            else unwritten_cause(mask, gaps.repeated, launched=bool(own), within=gaps.within)
        )
        idle = programs_left_idle(w, own)
        if idle and cause in (SHORT_GRID, SHORT_MASK):  # a grid of the right size, tiles misplaced
            cause = idle_programs(idle, idle + len(w.stores.programs))
        last_tiles = cause is None and not gaps.repeated and a_tail_at_the_end(mask)
        if last_tiles and idle == 0:
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
            text = f"{l.kernel} on grid {l.programs} = {programs_said(math.prod(l.programs))}"
        if said and said[-1][0] == text:
            said[-1][1] += 1
        else:
            said.append([text, 1])
    parts = [text + (f" ({n} launches)" if n > 1 else "") for text, n in said[:6]]
    more = f" and {len(said) - 6} more" if len(said) > 6 else ""
    return ("; ".join(parts) + more) if parts else "none stored anything"
