"""Out-of-bounds detection for kernels run in Triton's interpreter.

On a GPU an unmasked load past the end of a tensor often returns garbage that a later
mask throws away, so the answer is right; near a page boundary the same kernel
faults.  In the interpreter it silently reads whatever host memory lies there.

While installed, every launch records the byte ranges of the tensors passed to it
(each tensor's own view: from its first element to its last, strides included), and
every load and store checks the addresses of its active (unmasked) lanes against
them.  The first access outside all of them raises :class:`OutOfBounds`, naming the
kernel, the program id and the offending byte offset relative to the nearest tensor.

Triton 3.6 offers no public hook for this, so we wrap two of its interpreter's
internals: ``GridExecutor.__call__`` (one launch) and the builder's masked load and
store.  Installed only in interpreter mode, by the engine.
"""

from __future__ import annotations

import threading

import numpy as np

from checks.case import CheckFailed, cause_of_type

_state = threading.local()
_installed = False


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
            out.append((start, start + span * a.element_size(), name, whole))

    for name, a in args:
        visit(a, name)
    return out


def _check(kind: str, ptrs, mask):
    launch = getattr(_state, "launch", None)
    if launch is None:
        return
    addrs = np.asarray(ptrs.data).astype(np.uint64, copy=False).reshape(-1)
    active = np.asarray(mask.data, dtype=bool).reshape(-1) if mask is not None else None
    if active is not None:
        if active.size == 1 and addrs.size > 1:
            active = np.broadcast_to(active, addrs.shape)
        addrs = addrs[active]
    if addrs.size == 0:
        return
    elem = ptrs.get_element_ty().primitive_bitwidth // 8 if hasattr(ptrs, "get_element_ty") else 1
    ok = np.zeros(addrs.shape, dtype=bool)
    for start, end, *_ in launch["ranges"]:
        ok |= (addrs >= start) & (addrs + elem <= end)
    if ok.all():
        return
    bad = int(addrs[~ok][0])
    n_bad = int((~ok).sum())
    # Describe the address relative to the nearest tensor.
    best = min(launch["ranges"], key=lambda r: min(abs(bad - r[0]), abs(bad - r[1])), default=None)
    from triton.runtime.interpreter import interpreter_builder

    pid = tuple(interpreter_builder.grid_idx or ())
    advice = "mask this access"
    if best is not None:
        start, end, name, (st_start, st_end) = best
        past = bad >= end
        dist = bad - end if past else start - bad
        side = "past the end" if past else "before the start"
        where = f"{dist} bytes ({dist // max(elem, 1)} elements) {side} of {name}"
        if st_start <= bad < st_end:
            # Inside the tensor's memory but outside the view the kernel was given: the
            # address is built from the wrong strides or offset, not from a missing mask.
            where += ", in memory that belongs to the tensor it is a view of"
            advice = (
                "this reads elements that are not part of the view: build the address from "
                "the view's own strides (row * stride_row + col * stride_col) and offset"
            )
        else:
            where += ", past the memory of the tensor"
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
        },
    )


def install() -> None:
    """Wrap the interpreter's launch and memory ops (idempotent)."""
    global _installed
    if _installed:
        return
    from triton.runtime import interpreter as I

    orig_call = I.GridExecutor.__call__

    def call(self, *args, **kwargs):
        import inspect

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

    def masked_load(self, ptrs, mask, other, *rest):
        _check("load", ptrs, mask)
        return orig_load(self, ptrs, mask, other, *rest)

    def masked_store(self, ptrs, value, mask, *rest):
        _check("store", ptrs, mask)
        return orig_store(self, ptrs, value, mask, *rest)

    I.GridExecutor.__call__ = call
    builder_cls.create_masked_load = masked_load
    builder_cls.create_masked_store = masked_store
    _installed = True


def find_violation(exc: BaseException):
    """The OutOfBounds inside an exception chain (the interpreter wraps errors), or None."""
    return cause_of_type(exc, OutOfBounds)
