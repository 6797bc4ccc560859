"""Triton's launches, compiles and (in its interpreter) memory accesses, heard in one place.

Every part of the checks that wants to know what Triton does -- the provenance witness,
the interpreter's bounds check and store record, the benchmark's launch counter and
kernel facts, its cached-handle launch mode, the worker's compile clock and variant
recorder -- is a :class:`Listener` registered for the length of a block::

    with launches.listening(listener):
        ...

Listeners stack: the first registered is the outermost around a launch, the last the
nearest to Triton.  Leaving a block removes its listener (whatever else was registered
after it) and, with the last one, puts every patched method back; nothing is patched
while no listener needs it.  The registry is process-wide and guarded by a lock; a
listener that cares only about its own thread checks :func:`threading.get_ident`.

Why patch at all.  Triton 3.6's public launch hook (``knobs.runtime.launch_enter_hook``)
runs only for compiled kernels on a GPU, not in the interpreter, and names the compiled
function, not the Python one (nor the tensors passed).  So the launch entry points are
wrapped here, and only here: ``JITFunction.run``, the interpreter's
``InterpretedFunction.run``, ``Autotuner.run`` and ``Heuristics.run`` (an autotuned or
heuristic kernel goes through them first), and ``CompiledKernel.__getitem__`` (a launch
through a compiled kernel's handle).  In the interpreter, where Triton has no hook for
memory at all, the builder's ``create_masked_load``, ``create_masked_store``,
``create_atomic_rmw`` and ``create_atomic_cas`` are wrapped: every ``tl.load`` and
``tl.store`` (plain, masked, block pointer, tensor descriptor) and atomic reaches one.
Compiles are heard through Triton's public knobs (``runtime.jit_cache_hook`` and
``compilation.listener``), set here and restored here.

The launch kinds, :class:`Launch`, :class:`Listener` and :func:`python_function` live in
checks.judging.launch_records and are re-exported here.

Standard library at import time; triton and numpy are imported when a seam is installed.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from checks.judging.launch_records import (
    AUTOTUNER,
    HANDLE,
    HEURISTICS,
    INTERPRETED,
    JIT,
    Launch,
    Listener,
    python_function as python_function,
)


class Access:
    """One load, store or atomic in the interpreter, with at least one active lane.
    ``addrs``: the uint64 addresses of the active (unmasked) lanes; ``elem``: the element
    size in bytes; ``partly_masked``: some lanes were masked off; ``values`` (for
    :meth:`Listener.stored`): the bytes each active lane wrote, one row per lane, or None
    (an atomic, whose written value the store does not show)."""

    __slots__ = ("kind", "addrs", "elem", "partly_masked", "masked", "values", "_active", "_value", "_ptrs")

    def __init__(self, kind: str, addrs: Any, elem: int, active: Any, value: Any = None, ptrs: Any = None):
        self.kind, self.addrs, self.elem = kind, addrs, elem
        self.partly_masked = active is not None
        self.masked = self.partly_masked  # a mask was given (it may let every lane through): see _heard
        self.values: Any = None
        self._active, self._value, self._ptrs = active, value, ptrs

    @property
    def program_id(self) -> tuple:
        """The (x, y, z) id of the program that makes this access."""
        return program_id()

    def lanes(self) -> tuple:
        """(every lane's uint64 address in the block's shape, its active mask or None)."""
        import numpy as np

        addrs = np.asarray(self._ptrs.data).astype(np.uint64, copy=False)
        return addrs, None if self._active is None else self._active.reshape(addrs.shape)

    def stored_bytes(self) -> Any:
        """The bytes each active lane of a store wrote, one row per lane (None: not known)."""
        import numpy as np

        if self._value is None:
            return None
        vals = np.asarray(self._value.data)
        shape = np.shape(self._ptrs.data)
        if vals.shape != shape:
            vals = np.broadcast_to(vals, shape)
        vals = vals.reshape(-1)
        if self._active is not None:
            vals = vals[self._active]
        return np.ascontiguousarray(vals).view(np.uint8).reshape(vals.size, -1)


_lock = threading.RLock()
_local = threading.local()  # .depth: launches running in this thread
# Who hears what, swapped whole under the lock and read without it by the wrappers: the
# listeners that override around_launch, access, stored, compiling, compiled, in order.
_launch: tuple = ()
_access: tuple = ()
_stored: tuple = ()
_compiling: tuple = ()
_compiled: tuple = ()
_installed: dict = {}  # seam name -> [(owner, attribute, what it was)] to put back
_METHODS = ("around_launch", "access", "stored", "compiling", "compiled")
_heard_by: dict = {}  # listener class -> which of _METHODS it overrides


def _hears(listener: Any) -> tuple:
    cls = type(listener)
    flags = _heard_by.get(cls)
    if flags is None:
        flags = tuple(getattr(cls, m, None) not in (None, getattr(Listener, m)) for m in _METHODS)
        _heard_by[cls] = flags
    return flags


def _derive(chosen: tuple) -> tuple:
    """(listeners, the five groups of :data:`_METHODS`, the seams they need)."""
    groups: tuple = ([], [], [], [], [])
    for x in chosen:
        for group, heard in zip(groups, _hears(x)):
            if heard:
                group.append(x)
    launch, access, stored, compiling, compiled = (tuple(g) for g in groups)
    seams = {
        name
        for name, on in (("memory", access or stored), ("compiling", compiling), ("compiled", compiled))
        if on
    }
    seams.update(kind for x in launch for kind in x.launch_kinds)
    return (chosen, launch, access, stored, compiling, compiled, frozenset(seams))


_now: tuple = _derive(())


def _apply(state: tuple) -> None:
    global _now, _launch, _access, _stored, _compiling, _compiled
    _, _launch, _access, _stored, _compiling, _compiled, seams = state
    _now = state
    if _installed.keys() == seams:
        return
    for name in _SEAMS:
        if name in seams and name not in _installed:
            _installed[name] = _install(name)
        elif name not in seams and name in _installed:
            _restore(_installed.pop(name))


class listening:  # used as a function: ``with launches.listening(x):``
    """Register ``listener`` while the block runs (see the module doc); the block gets it.

    One object may be entered again and again: it remembers the states before and after
    its listener, so the benchmark's cached-handle twin, which registers its listener
    around every timed call, pays about a microsecond for it."""

    __slots__ = ("listener", "_memo")

    def __init__(self, listener: Any):
        self.listener = listener
        self._memo: Optional[tuple] = None  # (state before, state after) the last entry

    def __enter__(self) -> Any:
        with _lock:
            before, memo = _now, self._memo
            if memo is not None and memo[0] is before:
                after = memo[1]
            else:
                after = _derive(before[0] + (self.listener,))
                self._memo = (before, after)
            _apply(after)
        return self.listener

    def __exit__(self, *exc: Any) -> None:
        with _lock:
            now, memo = _now, self._memo
            if memo is not None and memo[1] is now:
                _apply(memo[0])  # nothing else changed meanwhile: exactly the state before
                return
            kept = list(now[0])
            for i in range(len(kept) - 1, -1, -1):
                if kept[i] is self.listener:
                    del kept[i]
                    break
            _apply(_derive(tuple(kept)))


def listeners() -> tuple:
    """The listeners registered now, outermost first."""
    return _now[0]


def depth() -> int:
    """How many launches this thread is inside now (0: none; Triton's own work inside a
    launch, the interpreter moving tensors say, runs at 1 or more)."""
    return getattr(_local, "depth", 0)


def _restore(saved: list) -> None:
    for owner, name, original in reversed(saved):
        if original is _INHERITED:
            delattr(owner, name)
        else:
            setattr(owner, name, original)


_INHERITED = object()  # the attribute came from a base class: removing ours uncovers it


def _put(saved: list, owner: Any, name: str, value: Any) -> None:
    saved.append(
        (owner, name, vars(owner).get(name, _INHERITED) if isinstance(owner, type) else getattr(owner, name))
    )
    setattr(owner, name, value)


# --- launches -----------------------------------------------------------------------------


def launch_points() -> list:
    """(class, method, kind) of Triton's launch entry points that this Triton has."""
    points: list = []
    try:
        from triton.runtime.jit import JITFunction

        points.append((JITFunction, "run", JIT))
    except ImportError:
        return points
    try:
        from triton.runtime.interpreter import InterpretedFunction

        points.append((InterpretedFunction, "run", INTERPRETED))
    except ImportError:
        pass
    try:
        from triton.runtime.autotuner import Autotuner, Heuristics

        points += [(Autotuner, "run", AUTOTUNER), (Heuristics, "run", HEURISTICS)]
    except ImportError:
        pass
    try:
        from triton.compiler.compiler import CompiledKernel

        points.append((CompiledKernel, "__getitem__", HANDLE))
    except ImportError:
        pass
    return points


def _deliver(launch: Launch, chain: tuple, call: Callable[[], Any]) -> Any:
    _local.depth = launch.depth + 1
    try:
        return _next(launch, chain, 0, call)
    finally:
        _local.depth = launch.depth


def _next(launch: Launch, chain: tuple, i: int, call: Callable[[], Any]) -> Any:
    if i == len(chain):
        return call()
    return chain[i].around_launch(launch, lambda: _next(launch, chain, i + 1, call))


def _wrap_run(original: Callable, kind: str) -> Callable:
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        chain = _launch
        if not chain or kwargs.get("warmup"):
            return original(self, *args, **kwargs)
        meta = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
        launch = Launch(self, kind, args, meta, kwargs.get("grid"), depth())
        return _deliver(launch, chain, lambda: original(self, *args, **kwargs))

    run.__wrapped__ = original  # type: ignore[attr-defined]
    return run


def _wrap_getitem(original: Callable) -> Callable:
    def getitem(self: Any, grid: Any) -> Any:
        runner = original(self, grid)

        def launch(*args: Any, **kwargs: Any) -> Any:
            chain = _launch
            if not chain:
                return runner(*args, **kwargs)
            kernel = getattr(getattr(self, "src", None), "fn", None) or self
            heard = Launch(kernel, HANDLE, args, kwargs, grid, depth(), compiled=self)
            return _deliver(heard, chain, lambda: runner(*args, **kwargs))

        return launch

    getitem.__wrapped__ = original  # type: ignore[attr-defined]
    return getitem


_plans: dict = {}  # kind -> (the launch_points function asked, [(class, method, Triton's, ours)])


def _install_launches(kind: str) -> list:
    """Our wrappers in place of Triton's entry points of one kind.  They are made once
    and put back in place on each install while Triton's methods stay the ones they wrap
    (the cached-handle twin installs and removes its one around every timed call)."""
    asked, plan = _plans.get(kind, (None, []))
    if asked is not launch_points or any(vars(o).get(n, _INHERITED) is not t for o, n, t, _ in plan):
        plan = []
        for owner, name, of_kind in launch_points():  # a stand-in's in the tests
            if of_kind == kind:
                current = getattr(owner, name)
                wrapper = _wrap_getitem(current) if kind == HANDLE else _wrap_run(current, kind)
                plan.append((owner, name, vars(owner).get(name, _INHERITED), wrapper))
        _plans[kind] = (launch_points, plan)
    for owner, name, _, wrapper in plan:
        setattr(owner, name, wrapper)
    return [(owner, name, theirs) for owner, name, theirs, _ in plan]


# --- the interpreter's memory -------------------------------------------------------------


def program_id() -> tuple:
    """The (x, y, z) program id the interpreter runs now (() outside a launch)."""
    from triton.runtime.interpreter import interpreter_builder

    return tuple(int(i) for i in (interpreter_builder.grid_idx or ()))


def interpreted_grid() -> tuple:
    """The (x, y, z) grid of the interpreted launch running now (() outside a launch)."""
    from triton.runtime.interpreter import interpreter_builder

    return tuple(int(i) for i in (getattr(interpreter_builder, "grid_dim", None) or ()))


def _lanes(ptrs: Any, mask: Any) -> tuple:
    """(addresses of the active lanes as uint64, the flat mask or None when no lane is off)."""
    import numpy as np

    addrs = np.asarray(ptrs.data).astype(np.uint64, copy=False).reshape(-1)
    if mask is None:
        return addrs, None
    active = np.asarray(mask.data, dtype=bool).reshape(-1)
    if active.size == 1 and addrs.size > 1:
        active = np.broadcast_to(active, addrs.shape)
    if active.all():
        return addrs, None
    return addrs[active], active


def _elem_bytes(ptrs: Any) -> int:
    return ptrs.get_element_ty().primitive_bitwidth // 8 if hasattr(ptrs, "get_element_ty") else 1


def _heard(kind: str, ptrs: Any, mask: Any, value: Any = None) -> Optional[Access]:
    addrs, active = _lanes(ptrs, mask)
    if addrs.size == 0:
        return None  # every lane masked off: no memory touched
    access = Access(kind, addrs, _elem_bytes(ptrs), active, value, ptrs)
    access.masked = mask is not None and not getattr(_local, "unmasked", False)
    return access


def _install_memory() -> list:
    from triton.runtime import interpreter

    builder = type(interpreter.interpreter_builder)
    load, store = builder.create_masked_load, builder.create_masked_store
    rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas

    def masked_load(self: Any, ptrs: Any, mask: Any, other: Any, *rest: Any) -> Any:
        if _access:
            acc = _heard("load", ptrs, mask)
            if acc is not None:
                for listener in _access:
                    listener.access(acc)
        return load(self, ptrs, mask, other, *rest)

    def written(kind: str, ptrs: Any, mask: Any, value: Any, write: Callable[[], Any]) -> Any:
        acc = _heard(kind, ptrs, mask, value) if (_access or _stored) else None
        if acc is not None:
            for listener in _access:
                listener.access(acc)
        result = write()
        if acc is not None and _stored:
            acc.values = acc.stored_bytes()  # None for an atomic: the written value is not shown
            for listener in _stored:
                listener.stored(acc)
        return result

    def masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *rest: Any) -> Any:
        return written("store", ptrs, mask, value, lambda: store(self, ptrs, value, mask, *rest))

    def atomic_rmw(self: Any, op: Any, ptr: Any, val: Any, mask: Any, *rest: Any) -> Any:
        return written("atomic", ptr, mask, None, lambda: rmw(self, op, ptr, val, mask, *rest))

    def atomic_cas(self: Any, ptr: Any, cmp: Any, val: Any, *rest: Any) -> Any:
        # compare-and-swap may or may not write: heard before, never as a store
        acc = _heard("atomic", ptr, None) if _access else None
        if acc is not None:
            for listener in _access:
                listener.access(acc)
        return cas(self, ptr, cmp, val, *rest)

    def without_mask(method: str) -> Callable:  # tl.load/tl.store without mask= pass one of all True
        plain = getattr(builder, method)

        def call(self: Any, *args: Any) -> Any:
            _local.unmasked = True
            try:
                return plain(self, *args)
            finally:
                _local.unmasked = False

        return call

    saved: list = []
    _put(saved, builder, "create_load", without_mask("create_load"))
    _put(saved, builder, "create_store", without_mask("create_store"))
    _put(saved, builder, "create_masked_load", masked_load)
    _put(saved, builder, "create_masked_store", masked_store)
    _put(saved, builder, "create_atomic_rmw", atomic_rmw)
    _put(saved, builder, "create_atomic_cas", atomic_cas)
    return saved


# --- compiles -----------------------------------------------------------------------------


def _cache_hook(**info: Any) -> Optional[bool]:
    skip = False
    for listener in _compiling:
        skip = bool(listener.compiling(**info)) or skip
    return True if skip else None


def _compilation(**info: Any) -> None:
    for listener in _compiled:
        listener.compiled(**info)


def _install_knob(group: str, name: str, value: Callable) -> list:
    try:
        import triton.knobs as knobs
    except ImportError:
        return []
    saved: list = []
    _put(saved, getattr(knobs, group), name, value)
    return saved


_SEAMS = (JIT, INTERPRETED, AUTOTUNER, HEURISTICS, HANDLE, "memory", "compiling", "compiled")


def _install(seam: str) -> list:
    if seam == "memory":
        return _install_memory()
    if seam == "compiling":
        return _install_knob("runtime", "jit_cache_hook", _cache_hook)
    if seam == "compiled":
        return _install_knob("compilation", "listener", _compilation)
    return _install_launches(seam)
