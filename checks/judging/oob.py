"""Out-of-bounds detection in Triton's interpreter.

On a GPU an unmasked load past the end of a tensor often returns garbage that a later
mask throws away, so the answer is right; near a page boundary the same kernel
faults.  In the interpreter it silently reads whatever host memory lies there.

While bounds checking is on, every launch records the byte ranges of the tensors
passed to it (each tensor's own view: from its first element to its last, strides
included), and every load, store and atomic checks the addresses of its active
(unmasked) lanes against them.  The first access outside all of them raises
:class:`OutOfBounds`, naming the kernel, the program id and where the address lies
relative to the nearest tensor.

The same accesses are heard by others: the witness (checks.judging.provenance) keeps
what each store wrote, to prove that every element a call returns was stored by the
learner's kernel, and a check can hear which addresses each program loaded (see
:func:`observing_loads`: which key tiles a causal attention kernel read).

Triton 3.6 offers no public hook for any of this; checks.judging.launches wraps the
interpreter's launch and memory methods, and only while a listener is registered: a
:func:`checking` or :func:`observing_loads` context here (Triton's own methods are back
when the last one closes, also when the body raises).  Only in interpreter mode.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, Optional

import numpy as np

from checks.judging import failure_kinds, launch_records, launches
from checks.judging.case import CheckFailed, cause_of_type

_state = threading.local()  # .launch: the running launch's kernel name and tensor ranges


class OutOfBounds(CheckFailed):
    pass


def _ranges_of(args) -> list:
    out = []

    def visit(a, name):
        if isinstance(a, (tuple, list)):
            for i, x in enumerate(a):
                visit(x, f"{name}[{i}]")
            return
        if hasattr(a, "data_ptr") and hasattr(a, "stride") and hasattr(a, "element_size"):
            if a.numel() == 0:
                return
            span = sum((n - 1) * s for n, s in zip(a.shape, a.stride())) + 1
            start = a.data_ptr()
            try:  # the memory the view lives in: reads there are of the wrong elements
                storage = a.untyped_storage()
                whole = (storage.data_ptr(), storage.data_ptr() + storage.nbytes())
            except Exception:  # noqa: BLE001 - no storage to describe; the view alone
                whole = (start, start + span * a.element_size())
            layout = (tuple(a.shape), tuple(a.stride()), a.element_size())
            out.append((start, start + span * a.element_size(), name, whole, layout))

    for name, a in args:
        visit(a, name)
    return out


MANY_LANES = 8  # an access of this many active lanes shows its stride pattern


def _strided_run(addrs, elem: int) -> bool:
    """At least :data:`MANY_LANES` distinct addresses, not one run of consecutive elements."""
    unique = np.unique(addrs.astype(np.int64))
    return bool(unique.size >= MANY_LANES and elem > 0 and (np.diff(unique) != elem).any())


def _view_offsets(layout) -> np.ndarray:
    shape, strides, _ = layout
    offs = np.zeros((), dtype=np.int64)
    for n, s in zip(shape, strides):
        offs = np.add.outer(offs, np.arange(n, dtype=np.int64) * s)
    return offs.reshape(-1)


def _strides_of_another(bad_addrs, best, ranges) -> Optional[tuple]:
    """The tensor whose layout explains every out-of-range address, read as offsets from
    ``best``'s first element: the access was built with that tensor's strides, or it
    indexes rows past ``best``'s last one (the message says both)."""
    start, _, _, _, (shape, strides, elem) = best
    rel = bad_addrs.astype(np.int64) - np.int64(start)
    if elem <= 0 or (rel % elem).any():
        return None
    rel //= elem
    for other in ranges:
        o_shape, o_strides, _ = other[4]
        if other is best or o_strides == strides or int(np.prod(o_shape)) > (1 << 22):
            continue
        offsets = np.unique(_view_offsets(other[4]))
        # a tensor without holes (contiguous, or a permutation of contiguous) holds every
        # offset below its size: any addresses fit it, which is no evidence of its strides
        if offsets.size == int(offsets[-1]) - int(offsets[0]) + 1:
            continue
        if np.isin(rel, offsets).all():
            return other
    return None


def _step_of_another(block, best, ranges) -> Optional[tuple]:
    """(step, tensor) when the access's block of addresses (every lane, in the block's
    shape) moves by one constant ``step`` elements along one of its axes, a step that is
    none of ``best``'s strides but is a stride of another tensor of the launch: the
    addresses were built with that tensor's strides.  None when no axis shows that."""
    start, _, _, _, (_, strides, elem) = best
    if block is None or block.ndim < 2 or elem <= 0:
        return None
    for step in _axis_steps(block, elem):
        if step is None or step == 0 or step in strides or -step in strides:
            continue
        owners = [r for r in ranges if r is not best and step in r[4][1]]
        if owners:
            return step, owners[0]
    return None


def _steps_are(block, best) -> bool:
    """Whether a 2D block of addresses steps by ``best``'s row stride along its first axis
    and by its column stride along its second, each axis constant."""
    _, _, _, _, (shape, strides, elem) = best
    if block is None or block.ndim != 2 or len(strides) != 2 or elem <= 0 or min(block.shape) < 2:
        return False
    return _axis_steps(block, elem) == list(strides) and strides[0] != strides[1]


def _axis_steps(block, elem: int) -> list:
    """For each axis of a block of addresses, the constant step (in elements) it moves by
    along that axis, or None where the steps differ, are not whole elements, or the axis
    has a single lane."""
    a = block.astype(np.int64)
    out: list = []
    for axis in range(a.ndim):
        if a.shape[axis] < 2:
            out.append(None)
            continue
        d = np.diff(a, axis=axis)
        first = int(d.flat[0])
        out.append(first // elem if first % elem == 0 and (d == first).all() else None)
    return out


def _index_past_a_dimension(addrs, best) -> Optional[tuple]:
    """(dim, index) when the access's lowest address, read with ``best``'s own strides
    (largest first), lands at ``index`` along ``dim`` and that dimension has fewer entries:
    the index multiplying that stride runs past it.  None when it reads as in range."""
    start, _, _, _, (shape, strides, elem) = best
    lo = int(addrs.astype(np.int64).min()) - int(start)
    if elem <= 0 or lo < 0 or lo % elem:
        return None
    rel = lo // elem
    dims = sorted(((s, d) for d, s in enumerate(strides) if s > 0 and shape[d] > 1), reverse=True)
    for stride, dim in dims:
        k, rel = divmod(rel, stride)
        if k >= shape[dim]:
            return dim, k
    return None


def _offset_added_twice(bad_addrs, best) -> Optional[int]:
    """The view's storage offset (in elements) when every address of the access (each
    active lane, in bounds or not), moved back by it, is one of the view's elements: the
    kernel added storage_offset() to a pointer that has it.  None otherwise (a mask one
    element too wide also lands in the storage, but its other lanes are where they belong)."""
    start, _, _, (st_start, _), layout = best
    elem = layout[2]
    shift = (int(start) - int(st_start)) // elem if elem > 0 else 0
    if shift <= 0 or int(np.prod(layout[0])) > (1 << 22):
        return None
    rel = bad_addrs.astype(np.int64) - np.int64(start)
    if (rel % elem).any():
        return None
    return shift if np.isin(rel // elem - shift, _view_offsets(layout)).all() else None


def _as_if_unit_column_stride(bad_addrs, best) -> bool:
    """True when every out-of-range address of a 2D ``best`` whose column stride is not 1
    is one of its elements as they would lie with a column stride of 1: the kernel assumed
    contiguous rows (a transposed, sliced or broadcast input breaks that)."""
    start, _, _, _, (shape, strides, elem) = best
    if len(shape) != 2 or strides[1] == 1 or elem <= 0 or shape[0] * shape[1] > (1 << 22):
        return False
    rel = bad_addrs.astype(np.int64) - np.int64(start)
    if (rel % elem).any():
        return False
    rows, cols = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    return bool(np.isin(rel // elem, (rows * strides[0] + cols).ravel()).all())


def _as_if_strides_swapped(bad_addrs, best) -> bool:
    """True when every out-of-range address of a 2D ``best`` is one of its elements as they
    would lie with its row and column strides swapped (the wrapper passed stride(1) as the
    row stride and stride(0) as the column stride)."""
    start, _, _, _, (shape, strides, elem) = best
    if len(shape) != 2 or strides[0] == strides[1] or 0 in strides or shape[0] * shape[1] > (1 << 22):
        return False  # a zero stride (a broadcast) makes the swap ambiguous: said as a unit stride
    rel = bad_addrs.astype(np.int64) - np.int64(start)
    if elem <= 0 or (rel % elem).any():
        return False
    rows, cols = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    return bool(np.isin(rel // elem, (rows * strides[1] + cols * strides[0]).ravel()).all())


def _masked_advice(pid: tuple, partly_masked: bool, some_inside: bool = False) -> str:
    """What an access the mask let through says.  Some lanes masked off, some lanes in
    bounds, or the first program already outside: the mask's bound is past the end.  Every
    lane of a later program let through and outside: that program owns nothing here (the
    grid, or the program_id axis the offsets use)."""
    grid = launches.interpreted_grid()
    on = f"program {pid} of grid {grid}" if grid else f"program {pid}"
    if partly_masked or not any(pid) or some_inside:
        return (
            f"the access is masked, yet lanes the mask lets through fall outside ({on}): compare the "
            f"mask's bound with the size these offsets index, and check that the grid gives this "
            f"program elements to work on"
        )
    return (
        f"the access is masked, yet the mask lets every lane of {on} through and the access lies "
        f"outside: this program owns no elements here. Check the grid (one program per row or tile "
        f"of this tensor, not of another size) and that the tl.program_id axis the offsets use is "
        f"the one the grid gives the rows"
    )


def _tensor_of_the_access(addrs, bad: int, ranges):
    """The tensor an access belongs to: the one holding its lowest lane (where its pointer
    most likely starts), else the view whose storage holds the bad address, else the tensor
    nearest to it. Nearness alone names a neighbour when the allocator puts two side by side."""
    lo = int(addrs.min())
    for r in ranges:
        if r[0] <= lo < r[1]:
            return r
    for r in ranges:
        if r[3][0] <= bad < r[3][1]:
            return r
    return min(ranges, key=lambda r: min(abs(bad - r[0]), abs(bad - r[1])), default=None)


def _check(
    kind: str, addrs, elem: int, partly_masked: bool, masked: bool = False, block: Optional[Callable] = None
) -> None:
    """Raise :class:`OutOfBounds` when an active lane of this access lies outside every
    tensor of the launch.  ``block()``: every lane's address in the block's shape (its
    steps along each axis show which strides built it)."""
    launch = getattr(_state, "launch", None)
    if launch is None or addrs.size == 0:
        return
    ranges = launch["ranges"]
    ok = np.zeros(addrs.shape, dtype=bool)
    for start, end, *_ in ranges:
        ok |= (addrs >= start) & (addrs + elem <= end)
    if ok.all():
        return
    bad_addrs = addrs[~ok]
    bad, n_bad = int(bad_addrs[0]), int(bad_addrs.size)
    best = _tensor_of_the_access(addrs, bad, ranges)
    pid = launches.program_id()
    advice = "mask this access"
    if best is not None:
        start, end, name, (st_start, st_end), (_, strides, _) = best
        past = bad >= end
        dist = bad - end if past else start - bad
        if past and dist == 0:
            where = f"at the first byte past the end of {name}"
        else:
            side = "past the end" if past else "before the start"
            where = f"{dist} bytes ({dist // max(elem, 1)} elements) {side} of {name}"
        several = np.unique(bad_addrs).size > 1  # one address shows no stride
        # A layout is named only when it places every active lane, not only the bad ones: a
        # row read past its end without a mask also lands where a wider layout would reach.
        # A block whose axes step by the tensor's own row and column strides is laid out
        # right: what runs past the end is a tail without its mask, whatever it lands on.
        laid_right = block is not None and _steps_are(block(), best)
        unit_columns = several and not laid_right and _as_if_unit_column_stride(addrs, best)
        swapped = several and not laid_right and not unit_columns and _as_if_strides_swapped(addrs, best)
        # one bad address shows no stride; the whole access (every active lane) may, when it
        # steps by more than one element (a consecutive run fits any layout that has one)
        lanes = bad_addrs if several else (addrs if _strided_run(addrs, elem) else None)
        stepped = None
        if not (swapped or unit_columns) and block is not None:
            stepped = _step_of_another(block(), best, ranges)
        other = (
            None
            if swapped or unit_columns or stepped or lanes is None
            else _strides_of_another(lanes, best, ranges)
        )
        if swapped:
            where += f" (strides {strides})"
            advice = (
                f"the bad addresses are {name}'s elements as they would lie with its row and column "
                f"strides swapped (row * {strides[1]} + col * {strides[0]}): pass stride(0) as the row "
                f"stride and stride(1) as the column stride, in the order the kernel takes them"
            )
        elif unit_columns:
            where += f" (strides {strides})"
            advice = (
                f"the bad addresses are {name}'s elements as they would lie if its column stride "
                f"were 1 (it is {strides[1]}): build its addresses from its own strides "
                f"(row * stride_row + col * stride_col); a mask would only hide the misplaced elements"
            )
        elif stepped is not None:
            step, owner = stepped
            where += f" (strides {strides})"
            advice = (
                f"the addresses of this {kind} step by {step} elements along one axis of its block: "
                f"that is none of {name}'s strides {strides}, but it is a stride of {owner[2]} "
                f"{owner[4][1]}: {name}'s addresses are built with {owner[2]}'s strides; build each "
                f"tensor's addresses from its own strides"
            )
        elif other is not None:
            # The offsets are valid for another argument's layout: its strides were used.
            where += f" (strides {strides})"
            # Say what was observed, not which mistake made it: the same addresses come from
            # an offset built with the other tensor's strides or from a row index out of range.
            advice = (
                f"the {'bad addresses' if several else f'addresses of this {kind}'}, counted from the "
                f"start of {name}, step like the elements of "
                f"{other[2]} {other[4][1]}: an offset computed with {other[2]}'s strides (or a row "
                f"index past {name}'s last row); build each tensor's addresses from its own strides "
                f"and bound its row index; a mask would only hide the elements this access misplaces"
            )
        elif st_start <= bad < st_end and (shift := _offset_added_twice(addrs, best)):
            where += ", in memory that belongs to the tensor it is a view of"
            advice = (
                f"the addresses are {name}'s own elements moved {shift} elements further, which is "
                f"its storage offset: the pointer a kernel receives already points at the view's "
                f"first element, so adding storage_offset() counts it twice; build the address from "
                f"the pointer and the view's strides alone"
            )
        elif st_start <= bad < st_end and laid_right:
            # laid out by the view's own strides, a lane past its last row or column got
            # through: the mask (or its bound), not the address
            where += ", in memory that belongs to the tensor it is a view of"
            advice = (
                _masked_advice(pid, partly_masked, bool(ok.any()))
                if partly_masked or masked
                else "mask this access: its addresses step by the view's own strides, and the lanes past "
                "its last row or column need the mask"
            )
        elif st_start <= bad < st_end:
            # Inside the tensor's memory but outside the view the kernel was given: the
            # address is built from the wrong strides or offset, not from a missing mask.
            where += ", in memory that belongs to the tensor it is a view of"
            advice = (
                f"this {kind} touches elements that are not part of the view: build the address "
                f"from the view's own strides (row * stride_row + col * stride_col) and offset"
            )
        else:
            where += ", past the memory of the tensor"
            past_dim = None if ok.any() or len(strides) < 3 else _index_past_a_dimension(addrs, best)
            if past_dim is not None and past_dim[0] < len(strides) - 2:
                # wholly outside, and the offset reads as an index past a batch or head dimension
                dim, k = past_dim
                advice = (
                    f"read with {name}'s strides {strides}, the first lane of this {kind} is at index {k} "
                    f"along dim {dim}, which has {best[4][0][dim]} entries: the index that multiplies "
                    f"stride({dim}) runs past that dimension; check which index (batch, head, row) "
                    f"multiplies each stride, and the grid axis it comes from"
                )
            elif partly_masked or masked:
                advice = _masked_advice(pid, partly_masked, bool(ok.any()))
            elif n_bad > 1 and not ok.any():
                # a ragged last tile starts inside the tensor; this one lies wholly outside
                advice = (
                    f"every lane of this unmasked {kind} lies outside {name}, so a missing mask is not "
                    f"the cause (a ragged last tile still starts inside the tensor): the offset that "
                    f"moves the {kind} to its tile is wrong; check the tile's start (its index times "
                    f"{name}'s own strides) and the loop's bounds"
                )
    else:
        where = f"address {bad:#x}, and the launch has no tensor arguments"
    raise OutOfBounds(
        f"out-of-bounds {kind} in kernel {launch['kernel']} at program id {pid}: {where} "
        f"({n_bad} lane(s) outside every tensor passed to the launch; {advice})",
        {
            "kernel": launch["kernel"],
            "program_id": list(pid),
            "kind": kind,
            "lanes_out_of_bounds": n_bad,
            "where": where,
            "verdict": failure_kinds.OUT_OF_BOUNDS,
        },
    )


class _BoundsCheck(launches.Listener):
    """Every interpreted launch records its tensors' ranges; every access is checked."""

    def around_launch(self, launch: launches.Launch, proceed: Callable[[], Any]) -> Any:
        if launch.kind != launches.INTERPRETED:
            return proceed()
        named = list(zip(launch.arg_names(), launch.args)) + list(launch.kwargs.items())
        prev = getattr(_state, "launch", None)
        _state.launch = {"kernel": launch.name, "ranges": _ranges_of(named)}
        try:
            return proceed()
        finally:
            _state.launch = prev

    def access(self, access: launch_records.Access) -> None:
        _check(
            access.kind,
            access.addrs,
            access.elem,
            access.partly_masked,
            access.masked,
            block=lambda: access.lanes()[0],
        )


class _LoadListener(launches.Listener):
    def __init__(self, listener: Callable):
        self.listener, self.thread = listener, threading.get_ident()

    def access(self, access: launch_records.Access) -> None:
        if access.kind == "load" and threading.get_ident() == self.thread:
            self.listener(access.addrs.copy(), access.elem, access.program_id)


@contextlib.contextmanager
def observing_loads(listener: Callable) -> Iterator[None]:
    """Call ``listener(addresses, elem_bytes, program_id)`` before every load in this
    thread: the uint64 addresses of the active (unmasked) lanes, the element size, and
    the (x, y, z) id of the program that loads.  A load whose lanes are all masked off
    touches no memory and is not reported."""
    with launches.listening(_LoadListener(listener)):
        yield


@contextlib.contextmanager
def checking(bounds: bool = True) -> Iterator[None]:
    """While open (with ``bounds``), every load, store and atomic of an interpreted launch
    is checked against the launch's tensors.  Contexts nest: an inner one checks nothing
    twice, and ``bounds=False`` adds nothing."""
    if not bounds or any(isinstance(x, _BoundsCheck) for x in launches.listeners()):
        yield
        return
    with launches.listening(_BoundsCheck()):
        yield


def find_violation(exc: BaseException):
    """The OutOfBounds inside an exception chain (the interpreter wraps errors), or None."""
    return cause_of_type(exc, OutOfBounds)
