"""What the compiler made of a variant: the Triton kernels one call launched, with their
registers, spills, shared memory, warps and stages.

:func:`recording_launches` listens to Triton's launches (checks.judging.launches) for
the length of one call and keeps what each ``JITFunction.run`` returned: the
``CompiledKernel`` that ran (``JITFunction.run`` is what ``kernel[grid](...)``, the
autotuner and ``@triton.heuristics`` all end in).  After a launch the compiled kernel
has ``n_regs`` and ``n_spills`` (read back from the loaded binary) and ``metadata``
with ``shared`` (bytes), ``num_warps`` and ``num_stages``.

Kernels run by Triton's interpreter (``TRITON_INTERPRET=1``) are not ``JITFunction``s
and are not recorded; PyTorch's own kernels never are.

:func:`cached_handles` and :func:`cached_handle_variant` make the benchmark's second
launch mode: the same wrapper, its launches through the compiled kernels' handles
instead of ``kernel[grid](...)``'s dispatch (see the worksheet).
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from checks.judging import launches

FACT_FIELDS = ("n_regs", "n_spills", "shared_bytes", "num_warps", "num_stages")


def _int(x) -> Optional[int]:
    if isinstance(x, bool):
        return None
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def kernel_name(jit_fn, compiled=None) -> str:
    for obj in (jit_fn, getattr(jit_fn, "fn", None)):
        name = getattr(obj, "__name__", None)
        if isinstance(name, str) and name:
            return name
    name = getattr(compiled, "name", None)
    return name if isinstance(name, str) and name else "kernel"


def kernel_facts(compiled, name: str = "kernel") -> dict:
    """One compiled kernel's resources; a fact the object does not carry is None (a
    kernel whose binary was never loaded has no register count yet)."""
    meta = getattr(compiled, "metadata", None)
    return {
        "name": name,
        "n_regs": _int(getattr(compiled, "n_regs", None)),
        "n_spills": _int(getattr(compiled, "n_spills", None)),
        "shared_bytes": _int(getattr(meta, "shared", None)),
        "num_warps": _int(getattr(meta, "num_warps", None)),
        "num_stages": _int(getattr(meta, "num_stages", None)),
        "launches": 1,
    }


def summarize_launches(launched: list) -> list:
    """[(jit_fn, compiled)] in launch order -> one facts dict per distinct compiled
    kernel, first launch first, with how many times one call launched it."""
    out: list = []
    seen: dict = {}
    for jit_fn, compiled in launched:
        key = id(compiled)
        if key in seen:
            seen[key]["launches"] += 1
            continue
        facts = kernel_facts(compiled, kernel_name(jit_fn, compiled))
        seen[key] = facts
        out.append(facts)
    return out


class _Recording(launches.Listener):
    def __init__(self) -> None:
        self.launched: list = []

    def around_launch(self, launch: launches.Launch, proceed: Callable[[], Any]) -> Any:
        compiled = proceed()
        if launch.kind == launches.JIT and compiled is not None:
            self.launched.append((launch.kernel, compiled))
        return compiled


@contextmanager
def recording_launches() -> Iterator[list]:
    """Within the block, every non-warmup ``JITFunction.run`` appends (jit_fn, compiled)
    to the yielded list."""
    recording = _Recording()
    with launches.listening(recording):
        yield recording.launched


def capture_kernels(fn: Callable) -> list:
    """Call ``fn`` once and return the facts of the Triton kernels it launched ([] for a
    variant that launched none, a PyTorch baseline say)."""
    with recording_launches() as launched:
        fn()
    return summarize_launches(launched)


def describe(kernels) -> str:
    """A short line: "_softmax: 32 regs, 0 spills, 1.0 KiB smem, 4 warps, 3 stages"."""
    if not kernels:
        return "-"
    parts = []
    for k in kernels:
        bits = []
        if k.get("n_regs") is not None:
            bits.append(f"{k['n_regs']} regs")
        if k.get("n_spills") is not None:
            bits.append(f"{k['n_spills']} spills")
        if k.get("shared_bytes") is not None:
            bits.append(f"{k['shared_bytes'] / 1024:.1f} KiB smem")
        if k.get("num_warps") is not None:
            bits.append(f"{k['num_warps']} warps")
        if k.get("num_stages") is not None:
            bits.append(f"{k['num_stages']} stages")
        times = f" x{k['launches']}" if (k.get("launches") or 1) > 1 else ""
        parts.append(f"{k.get('name', 'kernel')}{times}: {', '.join(bits) or 'no facts'}")
    return "; ".join(parts)


def brief(kernels) -> str:
    """A table cell: "32r 0sp 4w 3st 1.0K" for the first kernel, "+N" for more kernels;
    "-" when nothing was recorded, "no triton" when the call launched no Triton kernel."""
    if kernels is None:
        return "-"
    if not kernels:
        return "no triton"
    k = kernels[0]
    bits = []
    for key, unit in (("n_regs", "r"), ("n_spills", "sp"), ("num_warps", "w"), ("num_stages", "st")):
        if k.get(key) is not None:
            bits.append(f"{k[key]}{unit}")
    if k.get("shared_bytes") is not None:
        bits.append(f"{k['shared_bytes'] / 1024:.0f}K")
    more = f" +{len(kernels) - 1}" if len(kernels) > 1 else ""
    return (" ".join(bits) or k.get("name", "kernel")) + more


# --- the cached-handle launch mode ------------------------------------------------------
#
# ``kernel[grid](*args, **kw)`` (Triton's dispatch, ``JITFunction.run``) binds the
# arguments, computes what each one specializes on, builds a cache key, finds the compiled
# kernel, checks the globals it used, and then launches it.  A caller that keeps the
# ``CompiledKernel`` that call returns can launch it again as ``compiled[grid](*args)``,
# every parameter in order and constexprs included: Triton's fused-softmax tutorial
# (02-fused-softmax.py) launches a kernel that way.  That pair -- the return value of
# ``kernel[grid](...)`` and ``CompiledKernel.__getitem__`` -- is the most public handle
# Triton 3.6 offers (its ``CompiledKernel.run`` is the raw launcher behind it, with a
# signature that changes between releases).
#
# To time a wrapper both ways without changing its code, :func:`cached_handles` listens to
# Triton's launches (checks.judging.launches) for the length of each call, nearest to
# Triton, and answers each ``JITFunction.run`` it can from its cache of handles instead of
# letting Triton dispatch it; Triton has no public hook that replaces its dispatch.  The
# listeners registered before it (the launch counter of a timing, say) still hear every
# launch.  The wrapper itself (validation, allocation, its own arithmetic) still runs every
# call, so the difference between a variant and its cached-handle twin is what the dispatch
# costs beyond a handle launch.  The twin pays for its own key (a small tuple per argument)
# and for registering its listener and removing it on every call, so the gap, if anything,
# understates the dispatch.


class _NotCached(Exception):
    """A launch the handle cache does not take (it goes through Triton's dispatch)."""


def _specialization(a):
    """What Triton 3.6 specializes a runtime argument on, or more (so a key never maps two
    calls Triton would compile differently to one handle): a tensor's dtype and 16-byte
    alignment; an int's value 1, divisibility by 16 and integer width; a float's or bool's
    type; None itself."""
    t = type(a)
    if t is int:
        return (a == 1, a % 16 == 0, -(2**31) <= a < 2**31, a < 2**63)
    if t is float or t is bool or a is None:
        return t
    if hasattr(a, "data_ptr") and hasattr(a, "dtype"):
        return (a.dtype, a.data_ptr() % 16 == 0)
    raise _NotCached


_PLAIN_VALUES = (int, float, bool, str, type(None))


class _HandleCache(launches.Listener):
    launch_kinds = frozenset((launches.JIT,))  # alone, it wraps JITFunction.run and nothing else

    def __init__(self) -> None:
        self.handles: dict = {}
        self.device_of: list[Callable[[], Any]] = []  # driver.active.get_current_device, found on first use

    def current_device(self) -> Any:
        if not self.device_of:
            try:
                from triton.runtime import driver

                self.device_of.append(driver.active.get_current_device)
            except Exception:  # noqa: BLE001 - a stand-in kernel class has no driver
                self.device_of.append(lambda: None)
        return self.device_of[0]()

    def around_launch(self, launch: launches.Launch, proceed: Callable[[], Any]) -> Any:
        if launch.kind != launches.JIT:
            return proceed()
        kernel, args, kwargs, grid = launch.kernel, launch.args, launch.kwargs, launch.grid
        try:
            if not isinstance(grid, tuple) or kernel.pre_run_hooks:
                raise _NotCached
            key = (
                id(kernel),
                self.current_device(),
                tuple(kwargs.items()),
                tuple(map(_specialization, args)),
            )
            handle = self.handles.get(key)
        except (_NotCached, TypeError):  # TypeError: an unhashable keyword value
            return proceed()
        if handle is None:
            compiled = proceed()  # compiles, launches
            self.handles[key] = _handle(kernel, compiled, args, kwargs)
            return compiled
        compiled, tail, _ = handle
        if compiled is None:  # a launch the cache cannot replay: Triton's dispatch
            return proceed()
        compiled[grid + (1,) * (3 - len(grid))](*args, *tail)
        return compiled


def cached_handles(fn: Callable) -> Callable:
    """``fn`` (a zero-argument call of a wrapper), with each Triton launch it makes after
    the first of its specialization going through the ``CompiledKernel`` handle that first
    launch returned: ``compiled[grid](*all_parameters)``.

    A launch is cached when its grid is a tuple, its runtime arguments are positional
    plain values or tensors, its keywords are plain values, and the kernel has no pre-run
    hooks; any other launch takes Triton's dispatch, every time.  The key is the current
    device, the keywords and each argument's specialization.  Listeners registered
    before a call (the provenance check, :func:`recording_launches`, the launch counter)
    hear each launch as it was asked for, replayed or not.  Under Triton's interpreter
    kernels are not ``JITFunction``s and every call is the plain one."""
    cache = _HandleCache()
    listening = launches.listening(cache)  # entered around every call: one object, reused

    def call() -> Any:
        with listening:
            return fn()

    # for the tests: what was cached (an attribute of the function itself: a callable
    # object would add a call to every timed launch)
    call.handles = cache.handles  # type: ignore[attr-defined]
    return call


def _handle(kernel, compiled, args: tuple, kwargs: dict) -> tuple:
    """(compiled kernel, the parameter values after the positional ones, the kernel) for
    replaying a launch; the compiled kernel is None when the launch cannot be replayed: a
    ``tl.constexpr`` passed by position (the key holds only its specialization, not its
    value), a keyword that is not a plain value, or a parameter after the positional ones
    with neither a keyword nor a default.  The kernel is kept so its id, in the key, stays
    its own."""
    no = (None, (), kernel)
    if compiled is None or not all(isinstance(v, _PLAIN_VALUES) for v in kwargs.values()):
        return no
    params = list(inspect.signature(kernel.fn).parameters.values())
    if any(_is_constexpr(p) for p in params[: len(args)]):
        return no
    tail = []
    for p in params[len(args) :]:
        if p.name in kwargs:
            tail.append(kwargs[p.name])
        elif p.default is not inspect.Parameter.empty:
            tail.append(p.default)
        else:
            return no
    return compiled, tuple(tail), kernel


def _is_constexpr(param: inspect.Parameter) -> bool:
    """Triton's own rule: a parameter whose annotation names ``constexpr`` (the class
    ``tl.constexpr`` or, with postponed annotations, the string)."""
    annotation = param.annotation
    return annotation is not inspect.Parameter.empty and "constexpr" in str(annotation)


CACHED_HANDLE = "cached handle"


def cached_handle_variant(variant: dict) -> dict:
    """A spec's variant, launched through cached handles (:func:`cached_handles`): same
    role and wrapper call, ``", cached handle"`` after its name, ``launch`` in its config."""
    return {
        "name": f"{variant['name']}, {CACHED_HANDLE}",
        "role": variant.get("role", "candidate"),
        "config": dict(variant.get("config") or {}, launch=CACHED_HANDLE),
        "fn": cached_handles(variant["fn"]),
    }


def with_cached_handle(variants: list, config: dict) -> list:
    """``variants`` with the cached-handle twin of the first candidate whose config holds
    every item of ``config`` (the wrapper's defaults, say) right after it, and that
    candidate marked ``"default": True`` (the row a quick benchmark keeps, see
    :func:`first_view`); unchanged when no candidate matches."""
    for i, v in enumerate(variants):
        got = v.get("config") or {}
        if v.get("role", "candidate") == "candidate" and all(got.get(k) == x for k, x in config.items()):
            return variants[:i] + [dict(v, default=True), cached_handle_variant(v)] + variants[i + 1 :]
    return variants


def first_view(variants: list) -> list:
    """The rows a learner wants right after a pass: their wrapper called with its defaults
    (the candidate marked ``default``, else the first candidate) and every row that is not a
    candidate (PyTorch's baseline and peers).  The sweep of options, each a kernel variant to
    compile, comes with ``--variants all``."""
    candidates = [v for v in variants if v.get("role", "candidate") == "candidate"]
    keep = [v for v in candidates if v.get("default")] or candidates[:1]
    return [v for v in variants if v.get("role", "candidate") != "candidate" or any(v is k for k in keep)]
