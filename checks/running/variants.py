"""Kernel variants: which ones a run compiled, so the next run's can be compiled ahead.

A *variant* is one specialization of a ``@triton.jit`` function: argument types,
alignment, constexpr values and launch options (num_warps, num_stages, ...).  A check
suite needs dozens; after an edit each must be compiled again.  Triton tells about
every new variant through its public ``knobs.runtime.jit_cache_hook``, with a JSON
``specialization_data`` made for compiling that same variant ahead of time
(``JITFunction.preload`` reads the same format).

* :class:`Recorder` hears that hook in a check worker (a listener of
  checks.judging.launches, which sets the hook): it keeps the variants of kernels
  defined in the learner's file, and when a variant was predicted (the compile pool
  is compiling it, see :mod:`checks.running.compile_pool`) it waits for the pool's marker
  file instead of compiling it a second time, then lets Triton find it in its cache.
* :func:`identity` names a variant independently of the source, so the variants of
  the last run predict the next run's.
* :func:`compile_variant` compiles one variant for a given target without a GPU
  (the compile workers' job).

The hook and the waiting need triton; :func:`identity` and the marker names are
standard library only, so the app's side can use them.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Optional

from checks.judging import launches

ABANDONED = "abandoned"  # a marker file: the pool will compile nothing more for this run


def identity(qualname: str, data: str) -> str:
    """A short name for a variant that does not depend on the module it was loaded
    as (``data`` names the function with its module, which is new in every process)."""
    try:
        fields = {k: v for k, v in json.loads(data).items() if k != "name"}
    except (ValueError, AttributeError):
        fields = {"raw": data}
    blob = qualname + "\0" + json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


def marker(folder, ident: str, ok: bool = True) -> Path:
    return Path(folder) / f"{ident}.{'done' if ok else 'failed'}"


def write_marker(folder, ident: str, ok: bool, note: str = "") -> None:
    """Say that ``ident`` is compiled (or could not be): written whole, then renamed."""
    final = marker(folder, ident, ok)
    tmp = final.with_name(final.name + f".{os.getpid()}.tmp")
    try:
        tmp.write_text(note, encoding="utf-8")
        os.replace(tmp, final)
    except OSError:
        pass  # the run's folder is gone: nobody waits any more


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


class Recorder(launches.Listener):
    """What Triton's ``jit_cache_hook`` says, for one check run.

    ``learner_file``: only kernels defined there are recorded.  ``expected``: the
    identities the compile pool is compiling into Triton's cache, and ``folder`` where
    it drops a marker for each; ``wait_limit`` bounds the wait for any one of them."""

    def __init__(self, learner_file: Any, expected: Any = (), folder: Any = None, wait_limit: float = 60.0):
        self.learner_file = str(learner_file)
        self.expected = set(expected) if folder else set()
        self.folder = Path(folder) if folder else None
        self.wait_limit = wait_limit
        self.variants: list = []  # {"qualname", "data", "id"} in the order first compiled
        self._taken = 0
        self.waited_s = 0.0  # since the last take()
        self.waits = 0
        self.hits = 0  # predicted variants the pool had compiled

    def compiling(self, **info: Any) -> Optional[bool]:
        fn: Any = info.get("fn")
        compile = info.get("compile")
        jit = getattr(fn, "jit_function", None)
        code = getattr(getattr(jit, "fn", None), "__code__", None)
        data = compile.get("specialization_data") if isinstance(compile, dict) else None
        if code is None or not data or not same_file(code.co_filename, self.learner_file):
            return None
        ident = identity(fn.name, data)
        self.variants.append({"qualname": fn.name, "data": data, "id": ident})
        self.before_compiling(ident)
        if ident in self.expected:
            self.expected.discard(ident)
            self._wait_for(ident)
        return None  # never skip: Triton compiles, or finds the pool's work in its cache

    def before_compiling(self, ident: str) -> None:
        """Called with each learner's variant before it is waited for (a subclass may learn
        only now what it expects, see checks/running/discovery.py)."""

    def _wait_for(self, ident: str) -> None:
        folder = self.folder
        assert folder is not None  # nothing is expected without a folder
        t0 = time.monotonic()
        done, failed = marker(folder, ident), marker(folder, ident, ok=False)
        gone = folder / ABANDONED
        self.waits += 1
        while time.monotonic() - t0 < self.wait_limit:
            if done.exists():
                self.hits += 1
                break
            if failed.exists() or gone.exists() or not folder.exists():
                break  # compiled here instead; a compile error is reported by this run
            time.sleep(0.002)
        self.waited_s += time.monotonic() - t0

    def take(self) -> dict:
        """The variants first compiled since the last call, and the seconds waited."""
        new = self.variants[self._taken :]
        self._taken = len(self.variants)
        out: dict[str, Any] = {"variants": [{"qualname": v["qualname"], "data": v["data"]} for v in new]}
        out["wait_s"] = round(self.waited_s, 4)
        self.waited_s = 0.0
        return out


def _dtype_or_value(value):
    import triton.language as tl

    if isinstance(value, str) and tl.dtype.is_dtype(value):
        return tl.dtype(value)
    if isinstance(value, dict) and "constexpr" in value:
        return tl.constexpr(value["constexpr"])
    return value


def _as_tuple(value):
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list) else value


def jit_function(mod, qualname: str):
    """The ``JITFunction`` named ``qualname`` in ``mod``, looking through the
    ``@triton.autotune`` / ``@triton.heuristics`` wrappers (each keeps the kernel it
    wraps in ``.fn``)."""
    from triton.runtime.jit import JITFunction

    obj = mod
    for part in qualname.split("."):
        obj = getattr(obj, part)
    for _ in range(8):
        if isinstance(obj, JITFunction):
            return obj
        obj = getattr(obj, "fn", None)
    raise LookupError(f"{qualname} is not a @triton.jit function")


def compile_variant(fn, data: str, target) -> Any:
    """Compile the variant described by ``data`` (a ``specialization_data`` string) of
    ``fn`` for ``target`` (backend, arch, warp_size) into Triton's cache, the way
    ``JITFunction.preload`` reads it, without a GPU; the compiled kernel."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend

    spec = json.loads(data)
    constexprs = {tuple(k): _dtype_or_value(v) for k, v in zip(spec["constant_keys"], spec["constant_vals"])}
    attrs = {tuple(k): v for k, v in zip(spec["attrs_keys"], spec["attrs_vals"])}
    signature = {k: _as_tuple(v) for k, v in spec["signature"].items()}
    options = {k: _as_tuple(v) for k, v in spec["options"].items()}
    gpu = GPUTarget(*target)
    parsed = make_backend(gpu).parse_options(options)
    return triton.compile(ASTSource(fn, signature, constexprs, attrs), target=gpu, options=parsed.__dict__)
