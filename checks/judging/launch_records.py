"""What a launch looks like to a listener, and what a listener is.

The launch kinds, :class:`Launch` (one launch as its entry point saw it) and the
:class:`Listener` base class, whose methods checks.judging.launches calls around every
launch, load, store and compile.  checks.judging.launches registers listeners and installs
the seams, and re-exports every name here; :class:`~checks.judging.launches.Access` (one
interpreted load or store) lives there, beside the interpreter's program id it reads
(here only its shape, :class:`Access`, for the listeners' annotations).

Standard library only.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol


class Access(Protocol):
    """What a listener is told of one interpreted load, store or atomic (the class is
    checks.judging.launches.Access; this module only names its shape, so that the imports
    run one way: launches imports this module, never the other way round)."""

    kind: str
    addrs: Any
    elem: int
    partly_masked: bool
    masked: bool
    values: Any

    @property
    def program_id(self) -> tuple: ...

    def lanes(self) -> tuple: ...

    def stored_bytes(self) -> Any: ...


# What was launched: Triton's JIT dispatch, the interpreter's, an autotuner, a heuristics
# wrapper, or a compiled kernel's handle (``compiled[grid](...)``).
JIT, INTERPRETED, AUTOTUNER, HEURISTICS, HANDLE = "jit", "interpreted", "autotuner", "heuristics", "handle"


def python_function(kernel: Any) -> Any:
    """The Python function under a kernel object (autotuner and heuristics wrappers hold
    the JIT function in ``.fn``, which holds the function in ``.fn``), or None."""
    inner = kernel
    for _ in range(8):
        if hasattr(inner, "__code__"):
            return inner
        inner = getattr(inner, "fn", None)
    return None


@dataclass
class Launch:
    """One launch as its entry point saw it.  ``kernel``: the object launched (for a
    handle launch, the JIT function the compiled kernel came from, when it says);
    ``kwargs`` without ``grid`` and ``warmup``; ``depth``: how many launches of this
    thread were already running around it (an autotuner's inner run is at depth 1)."""

    kernel: Any
    kind: str
    args: tuple
    kwargs: dict
    grid: Any
    depth: int
    compiled: Any = None  # a handle launch: the CompiledKernel

    @property
    def function(self) -> Any:
        return python_function(self.kernel)

    @property
    def name(self) -> str:
        fn = self.function
        return fn.__name__ if fn is not None else str(getattr(self.kernel, "__name__", "kernel"))

    @property
    def file(self) -> str:
        fn = self.function
        return fn.__code__.co_filename if fn is not None else "<unknown>"

    def arg_names(self) -> list:
        """The kernel's parameter names, in order ([] when they cannot be read)."""
        names = getattr(self.kernel, "arg_names", None)
        if isinstance(names, list):
            return names
        fn = self.function
        code = getattr(fn, "__code__", None)
        return list(code.co_varnames[: code.co_argcount]) if code is not None else []

    def tile_sizes(self) -> dict:
        """The tile sizes the kernel was launched with: its integer ``tl.constexpr``
        arguments that size a block in its source (a ``tl.arange``'s length, a ``tl.zeros``
        or ``tl.full`` shape, a ``block_shape``), by name; not a group size or a flag.
        Where the source cannot be read, every integer argument named in capitals."""
        values = dict(zip(self.arg_names(), self.args))
        values.update(self.kwargs)
        sizing = _sizing_constexprs(self.function)
        return {
            k: int(v)
            for k, v in values.items()
            if (k in sizing if sizing is not None else k.isupper())
            and isinstance(v, int)
            and not isinstance(v, bool)
        }


_SIZING: dict = {}  # code object -> the constexpr parameters that size a block (None: no source)


def _sizing_constexprs(fn: Any) -> Optional[frozenset]:
    """The parameters of kernel function ``fn`` annotated ``tl.constexpr`` that appear in
    a block's size: ``tl.arange(start, END)``, ``tl.zeros(SHAPE, ...)``, ``tl.full(SHAPE,
    ...)``, ``tl.reshape(x, SHAPE)`` or a ``block_shape=`` (None when the source cannot be read)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    if code not in _SIZING:
        if len(_SIZING) > 256:  # a warm worker loads every save's kernels anew
            _SIZING.clear()
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError):
            _SIZING[code] = None
            return None
        defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        params = defs[0].args.args + defs[0].args.kwonlyargs if defs else []
        constexprs = {
            a.arg
            for a in params
            if a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr")
        }
        sizes: list = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                where = {"arange": node.args[1:], "zeros": node.args[:1], "full": node.args[:1]}
                sizes += where.get(name, node.args[1:2] if name == "reshape" else [])
                sizes += [k.value for k in node.keywords if k.arg in ("end", "shape", "block_shape")]
        used = {n.id for size in sizes for n in ast.walk(size) if isinstance(n, ast.Name)}
        _SIZING[code] = frozenset(constexprs & used)
    return _SIZING[code]


class Listener:
    """Override what you want to hear; the rest costs nothing (a seam is installed only
    while some listener overrides one of its methods).  ``launch_kinds``: the entry
    points :meth:`around_launch` needs wrapped (another listener may have more wrapped,
    so check ``launch.kind`` where it matters)."""

    launch_kinds: frozenset = frozenset((JIT, INTERPRETED, AUTOTUNER, HEURISTICS, HANDLE))

    def around_launch(self, launch: Launch, proceed: Callable[[], Any]) -> Any:
        """Called for every launch that is not a warmup, at every depth; return what
        ``proceed()`` returns (or, to replace Triton's dispatch, what it would)."""
        return proceed()

    def access(self, access: Access) -> None:
        """Before every load, store and atomic in the interpreter (active lanes only)."""

    def stored(self, access: Access) -> None:
        """After every store and atomic read-modify-write in the interpreter."""

    def compiling(self, **info: Any) -> Optional[bool]:
        """Triton's ``jit_cache_hook``: a new variant is about to be compiled (or found in
        Triton's cache); True would skip it."""
        return None

    def compiled(self, **info: Any) -> None:
        """Triton's ``compilation.listener``: a compile finished, or hit the cache."""
