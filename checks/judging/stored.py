"""Which bytes the learner's kernels stored during one call, in Triton's interpreter.

checks.judging.oob reports every store's active lanes (address and the bytes written);
:class:`StoreLog` keeps those of the learner's own launches, and :meth:`StoreLog.gaps`
says, for a returned tensor, which of its elements hold bytes that no such store put
there: never stored at all, or stored and then overwritten by something that is not a
kernel (a NumPy view of the tensor, a PyTorch copy).  The last store to a byte wins,
as in memory.  numpy only; the tensor is read through ``.numpy()`` after the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

_UNKNOWN = -1  # an atomic's result: the byte was written, its value is not known here


@dataclass
class Gaps:
    """The elements of one tensor whose bytes no store of the learner's kernels explains."""

    total: int
    never_stored: int
    overwritten: int
    first: list  # logical indices, up to three, of the first such elements

    @property
    def count(self) -> int:
        return self.never_stored + self.overwritten


class StoreLog:
    def __init__(self) -> None:
        self._addrs: list = []
        self._values: list = []
        self._merged: Optional[tuple] = None

    def add(self, addrs: np.ndarray, values: Optional[np.ndarray], elem: int) -> None:
        """One store: ``addrs`` of its active lanes, ``values`` one row of bytes per lane."""
        if values is not None and values.shape[1] == elem:
            row = values.astype(np.int16)
        else:  # value not known (an atomic), or a width that is not the pointer's
            row = np.full((addrs.size, elem), _UNKNOWN, dtype=np.int16)
        self._addrs.append((addrs[:, None] + np.arange(elem, dtype=np.uint64)).reshape(-1))
        self._values.append(row.reshape(-1))
        self._merged = None

    @property
    def empty(self) -> bool:
        return not self._addrs

    def _last_writes(self) -> tuple:
        """(sorted unique byte addresses, the value the last store left at each)."""
        if self._merged is None:
            addrs = np.concatenate(self._addrs) if self._addrs else np.zeros(0, np.uint64)
            values = np.concatenate(self._values) if self._values else np.zeros(0, np.int16)
            order = np.argsort(addrs, kind="stable")  # equal addresses keep store order
            addrs, values = addrs[order], values[order]
            last = np.ones(addrs.size, dtype=bool)
            last[:-1] = addrs[1:] != addrs[:-1]
            self._merged = (addrs[last], values[last])
        return self._merged

    def gaps(self, t) -> Optional[Gaps]:
        """None when every element of tensor ``t`` holds what the logged stores wrote."""
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
        addrs, values = self._last_writes()
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
        return Gaps(total=n, never_stored=never, overwritten=int((~same_elems).sum()) - never, first=first)


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (where every store is seen)."""
    try:
        import triton

        return bool(triton.knobs.runtime.interpret)
    except (ImportError, AttributeError):
        return False


def _byte_dtype():
    import torch

    return torch.uint8


def stored_problem(w, fn_name: str, outputs: list, where, section: str) -> Optional[str]:
    """Why a returned tensor is not what the learner's kernels stored (None: it is).
    ``w`` is the call's witness (checks.judging.provenance.Witness); ``where(line, file)`` says
    a line of the learner's file as the other messages do."""
    for i, t in enumerate(outputs):
        gaps = w.stores.gaps(t)
        if gaps is None:
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
