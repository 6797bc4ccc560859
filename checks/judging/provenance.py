"""Did the learner's own kernel produce the answer?

A numeric check only says the output is right.  This module says who computed it.
While one call of a learner's function runs, it records

* every Triton launch: which ``@triton.jit`` function (and the file it was defined
  in) and the storage of every tensor passed to it;
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

Triton 3.6 has no public hook for "a launch happened" that also names the kernel's
Python function, so ``JITFunction.run``, the interpreter's ``InterpretedFunction.run``
and ``CompiledKernel.__getitem__`` are wrapped while a witnessed call runs, and only
then.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Iterable, Optional

from checks.judging import failure_kinds
from checks.judging.case import CheckFailed
from checks.judging.op_rules import (
    ALLOWED_OPS,
    DTYPE_KEEPING,
    HOST_VALUES,
    MEMORY_HANDLES,
    PLAIN_NAMES,
    WRITERS,
)
from checks.judging.stored import StoreLog, interpreting, stored_problem, unwritten_problem

LESSON_SECTION = failure_kinds.SECTION_OWN


class NotOwnKernel(CheckFailed):
    """The call's answer did not come from a kernel of the learner's file
    (``details["verdict"]`` is ``"not-own-kernel"``)."""


class Unwritten(CheckFailed):
    """The learner's kernels computed the answer but no program stored some of its
    elements, and nothing else wrote them: a grid, mask or stride bug, not someone
    else's work (``details["verdict"]`` is ``"unwritten"``).  Interpreter only."""


@dataclass
class Launch:
    kernel: str
    file: str
    storages: set
    grid: object = None  # as given to the launch (a tuple, or a callable of the meta)
    programs: Optional[tuple] = None  # the grid the launch ran, when it could be read


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


_state = threading.local()


def _active() -> Optional[Witness]:
    if getattr(_state, "launch_depth", 0):
        return None
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


def _storage_of(t) -> Optional[int]:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - not a tensor with storage
        return None


def _python_fn(kernel):
    """The Python function under a kernel object: autotuner and heuristics wrappers hold
    the JIT function in ``.fn``, which holds the function in ``.fn``."""
    inner = kernel
    for _ in range(8):
        if hasattr(inner, "__code__"):
            return inner
        inner = getattr(inner, "fn", None)
    return None


def _source_file(kernel) -> str:
    fn = _python_fn(kernel)
    return fn.__code__.co_filename if fn is not None else "<unknown>"


def _record_launch(kernel_obj, args, kwargs, grid=None) -> Optional[Launch]:
    w = _active()
    if w is None:
        return None
    storages: set = set()
    _storage_ptrs(list(args) + list(kwargs.values()), storages)
    fn = _python_fn(kernel_obj)
    name = fn.__name__ if fn is not None else getattr(kernel_obj, "__name__", "kernel")
    launch = Launch(
        kernel=name,
        file=_source_file(kernel_obj),
        storages=storages,
        grid=tuple(grid) if isinstance(grid, (tuple, list)) else grid,
    )
    w.launches.append(launch)
    return launch


def _programs(kernel_obj, grid, args, kwargs) -> Optional[tuple]:
    """The grid a launch runs: a tuple as given, or what a grid function returns for
    the launch's arguments by name (as Triton calls it); None when it cannot be read
    here (an autotuner's meta-parameters are known only to the launch it makes inside)."""
    if grid is None:
        return None
    try:
        if callable(grid):
            fn = _python_fn(kernel_obj)
            if fn is None:
                return None
            params = inspect.signature(fn).parameters
            bound = inspect.signature(fn).bind(*args, **{k: v for k, v in kwargs.items() if k in params})
            bound.apply_defaults()
            grid = grid(dict(bound.arguments))
        return tuple(int(g) for g in grid)
    except Exception:  # noqa: BLE001 - a grid read only to report it; the launch itself says what is wrong
        return None


@contextlib.contextmanager
def _inside_launch(w: Optional[Witness], launch: Optional[Launch]):
    """Triton's own work from here on; stores count when the launch is the learner's."""
    prev, prev_launch = getattr(_state, "own_launch", False), getattr(_state, "launch", None)
    if launch is not None and w is not None:  # a launch is recorded only while witnessing
        _state.own_launch, _state.launch = _same_file(launch.file, w.learner_file), launch
    _state.launch_depth = getattr(_state, "launch_depth", 0) + 1
    try:
        yield
    finally:
        _state.launch_depth -= 1
        _state.own_launch, _state.launch = prev, prev_launch


def _on_store(addrs, values, elem) -> None:
    w = getattr(_state, "witness", None)
    if w is not None and w.stores is not None and getattr(_state, "own_launch", False):
        w.stores.add(addrs, values, elem)


def _wrap_run(original: Callable) -> Callable:
    """A launch entry point: recorded as one launch; what happens inside it (the
    interpreter moving tensors, an autotuner timing its configs with PyTorch ops and
    relaunching the kernel) is Triton's, not the learner's."""

    def run(self, *args, **kwargs):
        if kwargs.get("warmup"):
            return original(self, *args, **kwargs)
        grid = kwargs.get("grid")
        meta = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
        w = _active()
        launch = _record_launch(self, args, meta, grid)
        with _inside_launch(w, launch):
            # Read inside (a grid function is user code, not the call's ops), and only where
            # stores are seen; a launch made inside another (an autotuner's) gives its grid.
            outer, witness = launch or getattr(_state, "launch", None), getattr(_state, "witness", None)
            if outer is not None and witness is not None and witness.stores is not None:
                outer.programs = _programs(self, grid, args, meta) or outer.programs
            return original(self, *args, **kwargs)

    return functools.update_wrapper(run, original, assigned=(), updated=())  # sets __wrapped__ only


def _wrap_compiled_getitem(original: Callable) -> Callable:
    def getitem(self, grid):
        runner = original(self, grid)

        def launch(*args, **kwargs):
            src = getattr(self, "src", None)
            w = _active()
            with _inside_launch(w, _record_launch(getattr(src, "fn", self), args, kwargs, grid)):
                return runner(*args, **kwargs)

        return launch

    return functools.update_wrapper(getitem, original, assigned=(), updated=())  # sets __wrapped__ only


@contextlib.contextmanager
def _watching_launches():
    """Wrap Triton's launch entry points for the duration of one witnessed call, then
    put the originals back (code that caches launch handles, like the reference
    answers' fast path, checks whether ``JITFunction.run`` is wrapped and goes through
    it while it is)."""
    from triton.runtime.jit import JITFunction

    targets = [(JITFunction, "run", _wrap_run)]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        targets.append((InterpretedFunction, "run", _wrap_run))
    except ImportError:
        pass
    try:
        from triton.compiler.compiler import CompiledKernel

        targets.append((CompiledKernel, "__getitem__", _wrap_compiled_getitem))
    except ImportError:
        pass
    try:  # @triton.autotune and @triton.heuristics wrap the kernel; launches go through them
        from triton.runtime.autotuner import Autotuner, Heuristics

        targets += [(Autotuner, "run", _wrap_run), (Heuristics, "run", _wrap_run)]
    except ImportError:
        pass
    saved = [(cls, name, cls.__dict__[name]) for cls, name, _ in targets]
    for cls, name, wrap in targets:
        setattr(cls, name, wrap(cls.__dict__[name]))
    try:
        yield
    finally:
        for cls, name, original in saved:
            setattr(cls, name, original)


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
            f"must come from a @triton.jit kernel defined in your file"
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
def witnessing(path, allowed: Optional[frozenset] = None):
    """Record the launches and PyTorch ops of the code run inside; yields the
    :class:`Witness` (also useful on its own: which kernels ran, in what order, on
    which grids).  Inside another witnessing block it records nothing new."""
    if getattr(_state, "witness", None) is not None:
        yield Witness(learner_file=str(path))
        return
    w = Witness(learner_file=str(path))
    _state.witness, _state.launch_depth, _state.own_launch, _state.launch = w, 0, False, None
    try:
        with contextlib.ExitStack() as stack:
            if interpreting():  # stores are seen only in the interpreter
                from checks.judging import oob

                w.stores = StoreLog()
                stack.enter_context(oob.observing_stores(_on_store))
            stack.enter_context(_handle_recorder())
            stack.enter_context(_watching_launches())
            stack.enter_context(_op_recorder(allowed or ALLOWED_OPS))
            yield w
    finally:
        _state.witness = None


def witnessed_call(
    path, fn: Callable, *args, fn_name: Optional[str] = None, allowed: Optional[frozenset] = None, **kwargs
):
    """Call ``fn`` and return its result; raise :class:`NotOwnKernel` when its tensors
    were not computed by a kernel defined in the file at ``path``, and :class:`Unwritten`
    (in the interpreter) when they were but some elements no program stored.  A call
    inside a witnessed call is not witnessed again (the outer one sees everything)."""
    if getattr(_state, "witness", None) is not None:
        return fn(*args, **kwargs)
    with witnessing(path, allowed) as w:
        _storage_ptrs(list(args) + list(kwargs.values()), w.inputs)
        result = fn(*args, **kwargs)
    name = fn_name or str(getattr(fn, "__name__", "your function"))
    problem = verdict(w, name, result)
    if problem:
        raise NotOwnKernel(
            problem,
            {
                "verdict": failure_kinds.NOT_OWN_KERNEL,
                "launches": [(l.kernel, _display(l.file)) for l in w.launches],
                "torch_ops": [list(o) for o in w.torch_ops[:20]],
            },
        )
    if w.stores is not None:
        missed = unwritten_problem(w, name, [t for t in _tensors_in(result, []) if t.numel() > 0])
        if missed is not None:
            raise Unwritten(*missed)
    return result


class WitnessedModule:
    """The learner's module as the checks see it: the contract's functions are
    witnessed on every call; everything else is the module's own attribute."""

    def __init__(self, mod, path, functions: Iterable[str], allowed: Optional[frozenset] = None):
        self._mod, self._path, self._allowed = mod, str(path), allowed
        self._functions = frozenset(functions)

    def __getattr__(self, name):
        value = getattr(self._mod, name)
        if name in self._functions and callable(value):

            def call(*args, **kwargs):
                return witnessed_call(self._path, value, *args, fn_name=name, allowed=self._allowed, **kwargs)

            call.__name__ = name
            call.__wrapped__ = value
            return call
        return value
