"""Did the learner's own kernel produce the answer?

A check says the output is right; this says who computed it.  While a call runs it records:

* every Triton launch: its ``@triton.jit`` function, that function's file, and the
  storage of every tensor passed to it;
* every PyTorch operation that reaches the dispatcher, with the line of the learner's
  file that led to it (launches themselves are not looked into: Triton's interpreter
  moves tensors with PyTorch ops of its own).

The call is the learner's own work when each tensor it returns (those with elements)
lives in storage passed to a launch of a kernel defined in the learner's file, and no
PyTorch op outside :data:`ALLOWED_OPS` ran.  Allocation, views, metadata and copies
that keep the dtype (``.contiguous()``, ``.clone()``) are allowed; anything that
computes values (``torch.softmax``, ``@``, ``+``, a dtype cast) is not.  A workshop
may allow more ops in its ``meta.json`` (``"allowed_torch_ops"``).  Nor may the
learner's code read a tensor's values into Python or NumPy (``.numpy()``,
``np.asarray``, ``.tolist()``; ``.item()`` is an op): an answer computed there and
only copied by a kernel of the file is not the kernel's work.

In Triton's interpreter the witness proves more: every store of the learner's
launches is logged (checks.judging.oob reports each one; checks.judging.stored keeps them), and each
returned element must hold the bytes such a store left there.  An output written
through a NumPy view, copied in, or stored by another file's kernel is not the learner's
work (:class:`NotOwnKernel`); elements nothing wrote at all are an addressing bug of the
learner's kernels (:class:`Unwritten`, with every launch's grid and a map).  On a GPU
stores are not seen; the storage rule above holds.

Launches and stores are heard through checks.judging.launches, for the length of a
witnessed call only.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Iterable, Iterator, Optional

from checks import interpreter
from checks.judging import failure_kinds, launch_records, launches
from checks.judging.case import CheckFailed
from checks.judging.op_rules import (
    ALLOWED_OPS,
    DTYPE_KEEPING,
    HOST_VALUES,
    MEMORY_HANDLES,
    PLAIN_NAMES,
    WRITERS,
)
from checks.judging.stored import StoreLog, stored_problem, unwritten_problem

LESSON_SECTION = failure_kinds.SECTION_OWN


class NotOwnKernel(CheckFailed):
    """The call's answer did not come from a kernel of the learner's file
    (``details["verdict"]`` is ``"not-own-kernel"``, or ``"no-launch"`` when nothing was launched
    and nothing else computed it)."""


class Unwritten(CheckFailed):
    """The learner's kernels computed the answer but no program stored some of its
    elements, and nothing else wrote them: a grid, mask or stride bug, not someone
    else's work (``details["verdict"]`` is ``"unwritten"``).  Interpreter only.
    ``returned``: what the call returned."""

    returned: Any = None


@dataclass
class Launch:
    kernel: str
    file: str
    storages: set
    grid: object = None  # as given to the launch (a tuple, or a callable of the meta)
    programs: Optional[tuple] = None  # the grid the launch ran, when it could be read
    tiles: dict = field(default_factory=dict)  # its tile sizes (BLOCK_N=64, ...): Launch.tile_sizes

    def said(self) -> dict:
        """The launch as a failure's details name it."""
        grid = self.programs or (self.grid if isinstance(self.grid, tuple) else None)
        return {"kernel": self.kernel, "grid": list(grid) if grid else None, "tiles": dict(self.tiles)}


@dataclass
class Witness:
    """What one call did: launches and PyTorch ops (name, line in the learner's file)."""

    learner_file: str
    launches: list = field(default_factory=list)
    torch_ops: list = field(default_factory=list)
    # In the interpreter: what the learner's launches stored, other writes (how, line,
    # storage written) and the storages of the call's arguments; None/empty on a GPU.
    stores: Optional[StoreLog] = None
    writes: list = field(default_factory=list)
    inputs: set = field(default_factory=set)

    def own_launches(self) -> list:
        return [l for l in self.launches if _same_file(l.file, self.learner_file)]

    def foreign_storages(self) -> set:
        """The storages given to launches of kernels defined outside the learner's file."""
        return set().union(*(l.storages for l in self.launches if not _same_file(l.file, self.learner_file)))


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


_state = threading.local()  # .witness; .launch, .own_launch: the learner's launch running now


def _active() -> Optional[Witness]:
    if launches.depth():
        return None  # Triton's own work inside a launch
    return getattr(_state, "witness", None)


def _storage_ptrs(values: Iterable[Any], into: set) -> None:
    for v in values:
        if isinstance(v, (tuple, list)):
            _storage_ptrs(v, into)
        elif hasattr(v, "untyped_storage") and hasattr(v, "data_ptr"):
            try:
                into.add(v.untyped_storage().data_ptr())
            except Exception:  # noqa: BLE001 - a tensor without storage holds no answer
                pass
        elif hasattr(v, "base") and hasattr(v, "block_shape"):  # a TensorDescriptor
            _storage_ptrs([v.base], into)


def _storage_of(t: Any) -> Optional[int]:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - not a tensor with storage
        return None


def _programs(launch: launches.Launch) -> Optional[tuple]:
    """The grid a launch runs: a tuple as given, or what a grid function returns for
    the launch's arguments by name (as Triton calls it); None when it cannot be read
    here (an autotuner's meta-parameters are known only to the launch it makes inside)."""
    grid = launch.grid
    if grid is None:
        return None
    try:
        if callable(grid):
            fn = launch.function
            if fn is None:
                return None
            params = inspect.signature(fn).parameters
            kwargs = {k: v for k, v in launch.kwargs.items() if k in params}
            bound = inspect.signature(fn).bind(*launch.args, **kwargs)
            bound.apply_defaults()
            grid = grid(dict(bound.arguments))
        return tuple(int(g) for g in grid)
    except Exception:  # noqa: BLE001 - a grid read only to report it; the launch itself says what is wrong
        return None


def _tile_arguments(launch: launches.Launch) -> dict:
    """The launch's tile sizes (the constexprs that size its blocks: BLOCK_N=64), by name."""
    return launch.tile_sizes()


def last_launches() -> list:
    """The learner's launches of the last witnessed call of this thread (each
    :meth:`Launch.said`), [] before any."""
    return list(getattr(_state, "last_launches", []))


def _grouped(own: list, most: int = 8) -> list:
    """The launches as a failure names them (:meth:`Launch.said`), consecutive equal ones
    as one with a ``count``: a design of one launch per head makes thousands."""
    groups: list = []
    for launch in own:
        said = launch.said()
        if groups and {k: v for k, v in groups[-1].items() if k != "count"} == said:
            groups[-1]["count"] += 1
        elif len(groups) < most:
            groups.append({**said, "count": 1})
        else:
            break
    return groups


def forget_launches() -> None:
    """A new check starts: the launches of earlier calls are not its evidence."""
    _state.last_launches = []


class _LaunchWatcher(launches.Listener):
    """Records the calling thread's outermost launches into the witness; what happens
    inside one (the interpreter moving tensors, an autotuner timing its configs with
    PyTorch ops and relaunching the kernel) is Triton's, not the learner's."""

    def __init__(self, w: Witness):
        self.w, self.thread = w, threading.get_ident()

    def around_launch(self, launch: launches.Launch, proceed: Callable[[], Any]) -> Any:
        if threading.get_ident() != self.thread:
            return proceed()
        w, recorded = self.w, None
        if launch.depth == 0:
            storages: set = set()
            _storage_ptrs(list(launch.args) + list(launch.kwargs.values()), storages)
            grid = launch.grid
            recorded = Launch(
                kernel=launch.name,
                file=launch.file,
                storages=storages,
                grid=tuple(grid) if isinstance(grid, (tuple, list)) else grid,
            )
            w.launches.append(recorded)
        prev = getattr(_state, "own_launch", False), getattr(_state, "launch", None)
        if recorded is not None:
            _state.own_launch, _state.launch = _same_file(recorded.file, w.learner_file), recorded
        try:
            # Only where stores are seen; a launch made inside another (an autotuner's) gives its grid.
            outer = recorded or _state.launch
            if outer is not None and (launch.depth or not outer.tiles):
                try:  # an autotuner's config reaches only the launch it makes inside
                    outer.tiles.update(_tile_arguments(launch))
                except Exception:  # noqa: BLE001 - read only to report the tile sizes
                    pass
            if outer is not None and w.stores is not None and launch.kind != launches.HANDLE:
                outer.programs = _programs(launch) or outer.programs
            return proceed()
        finally:
            _state.own_launch, _state.launch = prev


class _StoreWatcher(launches.Listener):
    """In the interpreter: keeps the stores of the learner's own launches."""

    def __init__(self, w: Witness):
        self.w, self.thread = w, threading.get_ident()

    def stored(self, access: launch_records.Access) -> None:
        w = self.w
        if (
            threading.get_ident() == self.thread
            and w.stores is not None
            and getattr(_state, "own_launch", False)
        ):
            w.stores.add(access.addrs, access.values, access.elem, (len(w.launches), access.program_id))


def _learner_line(learner_file: str) -> Optional[int]:
    here = inspect.currentframe()
    frame: Optional[FrameType] = here.f_back if here is not None else None
    while frame is not None:
        if _same_file(frame.f_code.co_filename, learner_file):
            return frame.f_lineno
        frame = frame.f_back
    return None


def _dtypes_differ(name: str, args, kwargs) -> bool:
    if name == "copy_" and len(args) >= 2:
        return getattr(args[0], "dtype", None) != getattr(args[1], "dtype", None)
    if name == "_to_copy":
        want = (kwargs or {}).get("dtype")
        return want is not None and args and want != getattr(args[0], "dtype", want)
    return False


def _op_recorder(allowed: frozenset):
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpRecorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            w = _active()
            if w is not None:
                name = func.overloadpacket.__name__
                if name not in allowed or (name in DTYPE_KEEPING and _dtypes_differ(name, args, kwargs)):
                    op = f"aten::{name}" + (f" ({PLAIN_NAMES[name]})" if name in PLAIN_NAMES else "")
                    w.torch_ops.append((op, _learner_line(w.learner_file)))
                elif name in WRITERS and w.stores is not None and args:
                    w.writes.append((f"aten::{name}", _learner_line(w.learner_file), _storage_of(args[0])))
            return func(*args, **(kwargs or {}))

    return OpRecorder()


def _handle_recorder():
    """Tensor methods that expose a tensor's memory to Python (they dispatch no op that
    computes, so the op recorder cannot see them)."""
    from torch.overrides import TorchFunctionMode

    class HandleRecorder(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            w = _active()
            name = getattr(func, "__name__", "")
            how = MEMORY_HANDLES.get(name)
            # .data_ptr() only explains how values reached an output in the interpreter
            if w is not None and how is not None and (how in HOST_VALUES or w.stores is not None):
                line = _learner_line(w.learner_file)
                if line is not None and args:
                    w.writes.append((how, line, _storage_of(args[0])))
            return func(*args, **(kwargs or {}))

    return HandleRecorder()


def _tensors_in(value, out: list) -> list:
    if isinstance(value, (tuple, list)):
        for v in value:
            _tensors_in(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors_in(v, out)
    elif hasattr(value, "untyped_storage") and hasattr(value, "numel"):
        out.append(value)
    return out


def _where(line: Optional[int], learner_file: str) -> str:
    return f"your file, line {line}" if line else f"called from outside {Path(learner_file).name}"


def verdict(w: Witness, fn_name: str, result) -> Optional[str]:
    """None when the call's answer is the learner's kernel's work, else why not."""
    outputs = [t for t in _tensors_in(result, []) if t.numel() > 0]
    if not outputs:
        return None  # nothing returned with elements: nothing to have been computed
    if w.torch_ops:
        seen, named = set(), []
        for op, line in w.torch_ops:
            if (op, line) not in seen:
                seen.add((op, line))
                named.append(f"{op} ({_where(line, w.learner_file)})")
        more = f" and {len(named) - 3} more" if len(named) > 3 else ""
        return (
            f"{fn_name} computed values with PyTorch: {', '.join(named[:3])}{more}. Only "
            f"allocation, views and layout copies may run outside your Triton kernels; "
            f"do the arithmetic in a @triton.jit kernel of your file"
        )
    own = w.own_launches()
    if not own:
        if w.launches:
            borrowed = sorted({f"{l.kernel} from {_display(l.file)}" for l in w.launches})
            return (
                f"{fn_name} launched {', '.join(borrowed)}, not a kernel defined in your "
                f"file; write the @triton.jit kernel in {Path(w.learner_file).name}"
            )
        return (
            f"{fn_name} returned without launching any Triton kernel; the answer "
            f"must come from a @triton.jit kernel defined in your file (if your wrapper "
            f"returns early, for empty or small inputs, check that condition against this "
            f"call's shapes)"
        )
    written = set().union(*(l.storages for l in own))
    for i, t in enumerate(outputs):
        if t.untyped_storage().data_ptr() not in written:
            which = "the tensor" if len(outputs) == 1 else f"output {i}"
            kernels = ", ".join(sorted({l.kernel for l in own}))
            return (
                f"{fn_name} returned {which} (shape {tuple(t.shape)}) that none of your "
                f"kernel launches ({kernels}) was given to write; return the buffer your "
                f"kernel stores into"
            )
    if w.stores is not None:
        problem = stored_problem(w, fn_name, outputs, _where, LESSON_SECTION)
        if problem:
            return problem
    on_host = [(how, line) for how, line, _ in w.writes if how in HOST_VALUES]
    if on_host:
        how, line = on_host[0]
        return (
            f"{fn_name} read tensor values on the host: {how} ({_where(line, w.learner_file)}). "
            f"Your kernel stored the output, but values read into Python or NumPy are "
            f"computed there, not by your kernel; do the arithmetic in a @triton.jit kernel "
            f'of your file (see the lesson\'s section "{LESSON_SECTION}")'
        )
    return None


def _display(file: str) -> str:
    try:
        return str(Path(file).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return file


def allowed_ops(extra: Iterable[str] = ()) -> frozenset:
    return ALLOWED_OPS | frozenset(extra)


@contextlib.contextmanager
def witnessing(
    path: Any, allowed: Optional[frozenset] = None, interpret: Optional[bool] = None
) -> Iterator[Witness]:
    """Record the launches and PyTorch ops of the code run inside; yields the
    :class:`Witness` (also useful on its own: which kernels ran, in what order, on
    which grids).  ``interpret``: whether Triton's interpreter runs the kernels, where
    every store is seen too (default: this process's mode, checks.interpreter).  Inside
    another witnessing block it records nothing new."""
    if getattr(_state, "witness", None) is not None:
        yield Witness(learner_file=str(path))
        return
    w = Witness(learner_file=str(path))
    _state.witness, _state.own_launch, _state.launch = w, False, None
    try:
        with contextlib.ExitStack() as stack:
            if interpreter.active() if interpret is None else interpret:
                w.stores = StoreLog()
                stack.enter_context(launches.listening(_StoreWatcher(w)))
            stack.enter_context(_handle_recorder())
            stack.enter_context(launches.listening(_LaunchWatcher(w)))
            stack.enter_context(_op_recorder(allowed or ALLOWED_OPS))
            yield w
    finally:
        _state.witness = None


def witnessed_call(
    path: Any,
    fn: Callable,
    *args: Any,
    fn_name: Optional[str] = None,
    allowed: Optional[frozenset] = None,
    interpret: Optional[bool] = None,
    **kwargs: Any,
) -> Any:
    """Call ``fn`` and return its result; raise :class:`NotOwnKernel` when its tensors
    were not computed by a kernel defined in the file at ``path``, and :class:`Unwritten`
    (in the interpreter: ``interpret``, see :func:`witnessing`) when they were but some
    elements no program stored.  A call inside a witnessed call is not witnessed again
    (the outer one sees everything)."""
    if getattr(_state, "witness", None) is not None:
        return fn(*args, **kwargs)
    with witnessing(path, allowed, interpret) as w:
        _storage_ptrs(list(args) + list(kwargs.values()), w.inputs)
        try:
            result = fn(*args, **kwargs)
        finally:
            _state.last_launches = _grouped(w.own_launches())
    name = fn_name or str(getattr(fn, "__name__", "your function"))
    problem = verdict(w, name, result)
    if problem:
        raise NotOwnKernel(
            problem,
            {
                # no launch and no op: nobody else's work, a launch that was skipped
                "verdict": failure_kinds.NOT_OWN_KERNEL
                if w.launches or w.torch_ops or w.writes
                else failure_kinds.NO_LAUNCH,
                "launches": [(l.kernel, _display(l.file)) for l in w.launches],
                "torch_ops": [list(o) for o in w.torch_ops[:20]],
            },
        )
    if w.stores is not None:
        missed = unwritten_problem(w, name, [t for t in _tensors_in(result, []) if t.numel() > 0])
        if missed is not None:
            unwritten = Unwritten(*missed)
            unwritten.returned = result  # a mistake oracle may still recognise what was written
            raise unwritten
    return result


class WitnessedModule:
    """The learner's module as the checks see it: the contract's functions are
    witnessed on every call; everything else is the module's own attribute."""

    def __init__(
        self,
        mod: Any,
        path: Any,
        functions: Iterable[str],
        allowed: Optional[frozenset] = None,
        interpret: Optional[bool] = None,
    ):
        self._mod, self._path, self._allowed, self._interpret = mod, str(path), allowed, interpret
        self._functions = frozenset(functions)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._mod, name)
        if name in self._functions and callable(value):

            def call(*args: Any, **kwargs: Any) -> Any:
                return witnessed_call(
                    self._path,
                    value,
                    *args,
                    fn_name=name,
                    allowed=self._allowed,
                    interpret=self._interpret,
                    **kwargs,
                )

            call.__name__ = name
            call.__wrapped__ = value  # type: ignore[attr-defined]
            return call
        return value
