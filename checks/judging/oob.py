"""Out-of-bounds detection, and the record of what kernels store, in Triton's interpreter.

On a GPU an unmasked load past the end of a tensor often returns garbage that a later
mask throws away, so the answer is right; near a page boundary the same kernel
faults.  In the interpreter it silently reads whatever host memory lies there.

While bounds checking is on, every launch records the byte ranges of the tensors
passed to it (each tensor's own view: from its first element to its last, strides
included), and every load, store and atomic checks the addresses of its active
(unmasked) lanes against them.  The first access outside all of them raises
:class:`OutOfBounds`, naming the kernel, the program id and where the address lies
relative to the nearest tensor.

The same hooks tell a listener (see :func:`observing_stores`) which bytes each store
wrote and with which values: the witness (checks.judging.provenance) uses that to prove that
every element a call returns was stored by the learner's kernel.  Another listener (see
:func:`observing_loads`) hears which addresses each program loaded: a check uses that to
see which key tiles a causal attention kernel read.

Triton 3.6 offers no public hook for any of this.  The narrowest seam is the
interpreter builder's memory methods: every ``tl.store`` (plain, masked, block
pointer, tensor descriptor) reaches ``InterpreterBuilder.create_masked_store``, every
load ``create_masked_load``, and atomics ``create_atomic_rmw`` / ``create_atomic_cas``;
one launch is one ``GridExecutor.__call__``.  They are wrapped on the class only while
a :func:`checking` or :func:`observing_stores` context is open (the outermost one
restores the originals on leaving), and only in interpreter mode (nothing here is
imported on a GPU run).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Optional

import numpy as np

from checks.judging import failure_kinds
from checks.judging.case import CheckFailed, cause_of_type

_state = threading.local()  # .launch: the running launch's tensors; .on_store, .on_load: listeners
_lock = threading.Lock()
_depth = 0  # open contexts; the wrappers are on the classes while it is above 0
_originals: list = []  # (class, attribute, original) to put back when the last one closes
_bounds = False


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


def _lanes(ptrs, mask) -> tuple:
    """(addresses of the active lanes as uint64, the flat mask or None when no lane is off)."""
    addrs = np.asarray(ptrs.data).astype(np.uint64, copy=False).reshape(-1)
    if mask is None:
        return addrs, None
    active = np.asarray(mask.data, dtype=bool).reshape(-1)
    if active.size == 1 and addrs.size > 1:
        active = np.broadcast_to(active, addrs.shape)
    if active.all():
        return addrs, None
    return addrs[active], active


def _elem_bytes(ptrs) -> int:
    return ptrs.get_element_ty().primitive_bitwidth // 8 if hasattr(ptrs, "get_element_ty") else 1


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
        if np.isin(rel, _view_offsets(other[4])).all():
            return other
    return None


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


def _check(kind: str, addrs, elem: int, partly_masked: bool) -> None:
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
    # Describe the address relative to the nearest tensor.
    best = min(ranges, key=lambda r: min(abs(bad - r[0]), abs(bad - r[1])), default=None)
    pid = _program_id()
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
        unit_columns = _as_if_unit_column_stride(bad_addrs, best)
        other = None if unit_columns else _strides_of_another(bad_addrs, best, ranges)
        if unit_columns:
            where += f" (strides {strides})"
            advice = (
                f"the bad addresses are {name}'s elements as they would lie if its column stride "
                f"were 1 (it is {strides[1]}): build its addresses from its own strides "
                f"(row * stride_row + col * stride_col); a mask would only hide the misplaced elements"
            )
        elif other is not None:
            # The offsets are valid for another argument's layout: its strides were used.
            where += f" (strides {strides})"
            # Say what was observed, not which mistake made it: the same addresses come from
            # an offset built with the other tensor's strides or from a row index out of range.
            advice = (
                f"the bad addresses, counted from the start of {name}, step like the elements of "
                f"{other[2]} {other[4][1]}: an offset computed with {other[2]}'s strides (or a row "
                f"index past {name}'s last row); build each tensor's addresses from its own strides "
                f"and bound its row index; a mask would only hide the elements this access misplaces"
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
            if partly_masked:
                advice = (
                    "the access is masked, yet lanes the mask lets through fall outside: check "
                    "the mask's bound and the address arithmetic, not only whether a mask exists"
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


def _program_id() -> tuple:
    """The (x, y, z) program id the interpreter runs now (() outside a launch)."""
    from triton.runtime.interpreter import interpreter_builder

    return tuple(int(i) for i in (interpreter_builder.grid_idx or ()))


def _stored_bytes(value, ptrs, active) -> Optional[np.ndarray]:
    """The bytes each active lane wrote, one row per lane (None: not known)."""
    vals = np.asarray(value.data)
    if vals.shape != np.shape(ptrs.data):
        vals = np.broadcast_to(vals, np.shape(ptrs.data))
    vals = vals.reshape(-1)
    if active is not None:
        vals = vals[active]
    return np.ascontiguousarray(vals).view(np.uint8).reshape(vals.size, -1)


@contextlib.contextmanager
def observing_stores(listener: Callable):
    """Call ``listener(addresses, values, elem_bytes)`` after every store in this thread:
    the uint64 addresses of the active lanes, the bytes each wrote (one row per lane;
    None for an atomic, whose result the store does not show) and the element size."""
    with checking(bounds=False):
        prev = getattr(_state, "on_store", None)
        _state.on_store = listener
        try:
            yield
        finally:
            _state.on_store = prev


@contextlib.contextmanager
def observing_loads(listener: Callable):
    """Call ``listener(addresses, elem_bytes, program_id)`` before every load in this
    thread: the uint64 addresses of the active (unmasked) lanes, the element size, and
    the (x, y, z) id of the program that loads.  A load whose lanes are all masked off
    touches no memory and is not reported."""
    with checking(bounds=False):
        prev = getattr(_state, "on_load", None)
        _state.on_load = listener
        try:
            yield
        finally:
            _state.on_load = prev


@contextlib.contextmanager
def checking(bounds: bool = True):
    """While open, the interpreter's launch and memory ops are wrapped; ``bounds`` turns
    the out-of-bounds check on until this context closes.  Contexts nest; the outermost
    one puts Triton's own methods back, also when the body raises."""
    global _depth, _bounds
    with _lock:
        if _depth == 0:
            _wrap()
        _depth += 1
        before = _bounds
        _bounds = _bounds or bounds
    try:
        yield
    finally:
        with _lock:
            _bounds = before
            _depth -= 1
            if _depth == 0:
                for owner, name, original in reversed(_originals):
                    if original is None:  # it was inherited: uncover the base class's
                        delattr(owner, name)
                    else:
                        setattr(owner, name, original)
                _originals.clear()


def _wrap() -> None:
    """Put the wrappers on the interpreter's classes, remembering what they replace."""
    import inspect

    from triton.runtime import interpreter as I

    orig_call = I.GridExecutor.__call__

    def call(self, *args, **kwargs):
        if not _bounds:
            return orig_call(self, *args, **kwargs)
        names = inspect.getfullargspec(self.fn).args
        named = list(zip(names, args)) + list(kwargs.items())
        prev = getattr(_state, "launch", None)
        _state.launch = {"kernel": getattr(self.fn, "__name__", "kernel"), "ranges": _ranges_of(named)}
        try:
            return orig_call(self, *args, **kwargs)
        finally:
            _state.launch = prev

    builder_cls = type(I.interpreter_builder)
    orig_load = builder_cls.create_masked_load
    orig_store = builder_cls.create_masked_store
    orig_rmw = builder_cls.create_atomic_rmw
    orig_cas = builder_cls.create_atomic_cas

    def masked_load(self, ptrs, mask, other, *rest):
        listener = getattr(_state, "on_load", None)
        if not _bounds and listener is None:
            return orig_load(self, ptrs, mask, other, *rest)
        addrs, active = _lanes(ptrs, mask)
        if _bounds:
            _check("load", addrs, _elem_bytes(ptrs), active is not None)
        if listener is not None and addrs.size:
            listener(addrs.copy(), _elem_bytes(ptrs), _program_id())
        return orig_load(self, ptrs, mask, other, *rest)

    def masked_store(self, ptrs, value, mask, *rest):
        listener = getattr(_state, "on_store", None)
        if not _bounds and listener is None:
            return orig_store(self, ptrs, value, mask, *rest)
        addrs, active = _lanes(ptrs, mask)
        if _bounds:
            _check("store", addrs, _elem_bytes(ptrs), active is not None)
        result = orig_store(self, ptrs, value, mask, *rest)
        if listener is not None and addrs.size:
            listener(addrs.copy(), _stored_bytes(value, ptrs, active), _elem_bytes(ptrs))
        return result

    def atomic_rmw(self, rmw_op, ptr, val, mask, *rest):
        listener = getattr(_state, "on_store", None)
        if not _bounds and listener is None:
            return orig_rmw(self, rmw_op, ptr, val, mask, *rest)
        addrs, active = _lanes(ptr, mask)
        if _bounds:
            _check("atomic", addrs, _elem_bytes(ptr), active is not None)
        result = orig_rmw(self, rmw_op, ptr, val, mask, *rest)
        if listener is not None and addrs.size:
            listener(addrs.copy(), None, _elem_bytes(ptr))
        return result

    def atomic_cas(self, ptr, cmp, val, *rest):
        if _bounds:  # a compare-and-swap may or may not write: checked, not recorded
            _check("atomic", _lanes(ptr, None)[0], _elem_bytes(ptr), False)
        return orig_cas(self, ptr, cmp, val, *rest)

    wrappers = [
        (I.GridExecutor, "__call__", call),
        (builder_cls, "create_masked_load", masked_load),
        (builder_cls, "create_masked_store", masked_store),
        (builder_cls, "create_atomic_rmw", atomic_rmw),
        (builder_cls, "create_atomic_cas", atomic_cas),
    ]
    for owner, name, wrapper in wrappers:
        _originals.append((owner, name, vars(owner).get(name)))
        setattr(owner, name, wrapper)


def find_violation(exc: BaseException):
    """The OutOfBounds inside an exception chain (the interpreter wraps errors), or None."""
    return cause_of_type(exc, OutOfBounds)
