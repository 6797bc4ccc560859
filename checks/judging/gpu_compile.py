"""What passes in the interpreter must also compile for a GPU.

Triton's interpreter runs a kernel as Python: it accepts programs the GPU compiler
refuses (a ``tl.dot`` whose inner dimension K is below 16, an accumulator started as
fp16 and re-assigned fp32 in a loop, a plain global read in a kernel).  So in an
interpreted run every distinct kernel variant the checks launch from the learner's file
-- the kernel, its constexprs, its argument types with the specializations Triton
compiles a variant for (an integer equal to 1, a None) and the launch options -- is
compiled for sm_90 as well (:mod:`checks.judging.gpu_compile_child`: a forked process,
through Triton's front end and TTIR, where the compiler's refusals come from).  A check
that passed but launched a variant the compiler refuses fails, with the compiler's words,
the kernel, its constexprs and what to change.

Compiles start as the launches happen and run beside the interpreter; after each check,
only a check that passed waits for its own variants.  Outcomes are kept for the process
by (the file's text, kernel, signature, constexprs, options; see :func:`variant_key`): a
variant compiled once is not compiled again in the run, nor in a later run of the same
process.  ``KERNEL_COURSE_GPU_COMPILE=0`` turns the compiles off.

Standard library at import time (triton is imported when a run is watched).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import linecache
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from checks.judging import launches
from checks.judging.launch_records import INTERPRETED

ENV = "KERNEL_COURSE_GPU_COMPILE"  # "0": no compile for the GPU in interpreted runs
VERDICT = "gpu-compile"
WAIT_S = 120.0  # the longest wait for one answer of the compiler process
KEPT = 4096  # outcomes kept per process
LOSSES = 3  # compiler processes lost in a row before this process stops starting them

WHY = (
    "Triton's interpreter runs your kernel as Python and accepts programs the GPU compiler "
    "refuses; on a GPU this check's call would stop with a CompilationError before any "
    "kernel ran. Each kernel variant the checks launch (its constexprs, argument types and "
    "launch options) is compiled for sm_90 (H100/H200) too, without a GPU"
)

# words of the compiler -> what to change
ADVICE = (
    (
        "and K >=",
        "on sm_90 tl.dot needs K, the inner dimension of its operands (a's columns, b's rows), "
        "to be at least 16 (32 for 8-bit inputs); M and N may be small. Keep the block size that "
        "is K at 16 or more even when the shape's K is smaller (e.g. max(16, next_power_of_2(K))) "
        "and mask the columns past K (other=0.0) rather than shrinking the tile to the shape",
    ),
    (
        "Loop-carried variable",
        "a variable carried through a loop keeps one type on a GPU: start it in the type the loop "
        "gives it (an accumulator: tl.zeros(..., tl.float32)), or cast inside the loop (x.to(...))",
    ),
    (
        "global variable",
        "a kernel may read a module-level name only when it is a tl.constexpr "
        "(NAME = tl.constexpr(value)); else pass the value as an argument",
    ),
    (
        "power of 2",
        "block sizes (tl.arange lengths, tile shapes) must be powers of two: round up with "
        "triton.next_power_of_2 and mask the rest",
    ),
)
DEFAULT_ADVICE = (
    "change the kernel line it names, or the constexprs your wrapper passes for this check's "
    "shapes, until every variant compiles"
)


def enabled() -> bool:
    return os.environ.get(ENV, "").strip().lower() not in ("0", "false", "off", "no")


@contextlib.contextmanager
def checked(path: Path, on: bool) -> Iterator[Callable]:
    """While the block runs, the kernel variants launched from ``path`` are compiled for
    sm_90 (when ``on``, the run is interpreted, and :data:`ENV` allows); the block gets a
    function that takes each check's record after it ran and returns it, failed when the
    check passed but launched a variant the compiler refuses."""
    gate = Gate(path) if on and enabled() and COMPILER.available() else None
    if gate is None:
        yield lambda record: record
        return
    COMPILER.start()  # forked now, between checks, and warming up while the first one runs
    with launches.listening(gate):
        yield gate.judged


class Gate(launches.Listener):
    """Hears the interpreted launches of kernels of the learner's file, hands each new
    variant to the compiler, and judges each check's record by its variants' outcomes."""

    launch_kinds = frozenset((INTERPRETED,))

    def __init__(self, path: Path):
        self.path = str(path)
        self.launched: dict = {}  # key -> description, this check's variants in launch order
        self._files: dict = {}  # a launch's file name -> whether it is the learner's
        self._sha: Optional[str] = None
        self._text = ""

    def around_launch(self, launch: launches.Launch, proceed: Callable[[], Any]) -> Any:
        if launch.kind == INTERPRETED and self._own(launch.file):
            try:
                job = describe(launch)
            except Exception:  # noqa: BLE001 - a launch that cannot be described is not compiled
                job = None
            if job is not None:
                job.update(file=self.path, sha=self.sha())
                key = variant_key(job)
                if key not in self.launched:
                    self.launched[key] = job
                    COMPILER.submit(key, job, self._text)
        return proceed()

    def _own(self, file: str) -> bool:
        if file not in self._files:
            try:
                self._files[file] = os.path.samefile(file, self.path)
            except OSError:
                self._files[file] = os.path.realpath(file) == os.path.realpath(self.path)
        return self._files[file]

    def sha(self) -> str:
        """The digest of the file's text as the run loaded it (load_exercise put it in linecache)."""
        if self._sha is None:
            self._text = "".join(linecache.getlines(self.path))
            self._sha = hashlib.sha256(self._text.encode("utf-8")).hexdigest()
        return self._sha

    def judged(self, record: Any) -> Any:
        launched, self.launched = self.launched, {}
        if record.status != "pass" or not launched:
            return record
        outcomes = COMPILER.outcomes(list(launched))
        for key, job in launched.items():
            outcome = outcomes.get(key)
            if outcome is not None and outcome.get("status") == "refused":
                refuse(record, job, outcome, Path(self.path).name)
                break
        return record


def refuse(record: Any, job: dict, outcome: dict, file_name: str) -> None:
    """Turn a passing ``record`` into the failure the GPU compiler's ``outcome`` makes it."""
    words = outcome.get("words") or "the compiler refused it"
    where = ""
    if outcome.get("line"):
        where = f" ({file_name}, line {outcome['line']}, in {outcome.get('function') or job['kernel']})"
    named = constexprs_named(job)
    advice = next((a for words_in, a in ADVICE if words_in in words), DEFAULT_ADVICE)
    record.status = "fail"
    record.message = (
        f"{job['kernel']}{f' with {named}' if named else ''}, a variant this check launched, "
        f"does not compile for a GPU (sm_90), though the interpreter ran it: {words}{where}. "
        f"On a GPU this check's call would stop with a CompilationError. What to change: {advice}"
    )
    record.why = WHY
    record.section = ""  # the check's own section is about what it verifies, not the compiler's rule
    record.details = {
        **(record.details if isinstance(record.details, dict) else {}),
        "verdict": VERDICT,
        "kernel": job["kernel"],
        "constexprs": job["named"],
        "options": job["options"],
        "compiler": words,
        "line": outcome.get("line"),
    }


def constexprs_named(job: dict) -> str:
    said = [f"{k}={v.get('dtype') if isinstance(v, dict) else v}" for k, v in job["named"].items()]
    said += [f"{k}={v}" for k, v in sorted(job["options"].items())]
    return ", ".join(said)


# --- a launch as a variant -----------------------------------------------------------------

_PARAMS: dict = {}  # code object -> [(name, is constexpr, default)]


def _params(fn: Any) -> list:
    code = fn.__code__
    if code not in _PARAMS:
        if len(_PARAMS) > 256:  # a warm worker loads every save's kernels anew
            _PARAMS.clear()
        _PARAMS[code] = [
            (p.name, "constexpr" in str(p.annotation), p.default)
            for p in inspect.signature(fn).parameters.values()
        ]
    return _PARAMS[code]


def _constexpr(v: Any) -> Any:
    """A constexpr value the child can rebuild; TypeError for one it cannot."""
    import triton.language as tl

    if isinstance(v, tl.constexpr):
        return _constexpr(v.value)
    if isinstance(v, tl.dtype):
        return {"dtype": str(v)}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"a constexpr of type {type(v).__name__}")


def describe(launch: launches.Launch) -> Optional[dict]:
    """The variant a launch would compile on a GPU, as ``triton.compile`` takes it: the
    signature (``mangle_type``, Triton's own reading of an argument), the constexprs (the
    parameters annotated so, and what Triton specializes into one: an integer 1, None),
    the divisibility attributes and the launch options.  None: nothing to compile."""
    from triton.runtime.jit import mangle_type

    fn = launch.function
    if fn is None or not hasattr(fn, "__code__"):
        return None
    params = _params(fn)
    names = [p[0] for p in params]
    values = dict(zip(names, launch.args))
    values.update({k: v for k, v in launch.kwargs.items() if k in names})
    options = {
        k: v for k, v in launch.kwargs.items() if k not in names and isinstance(v, (bool, int, float, str))
    }
    decorated = getattr(launch.kernel, "kwargs", None) or {}
    fixed = set(_indexed(decorated.get("do_not_specialize"), names))
    unaligned = set(_indexed(decorated.get("do_not_specialize_on_alignment"), names))
    signature: dict = {}
    constexprs: dict = {}
    attrs: list = []
    named: dict = {}
    for i, (name, is_constexpr, default) in enumerate(params):
        if name in values:
            v = values[name]
        elif default is not inspect.Parameter.empty:
            v = default
        else:
            return None  # a missing argument: the launch itself fails
        if is_constexpr:
            signature[name] = "constexpr"
            constexprs[name] = named[name] = _constexpr(v)
            continue
        kind = mangle_type(v, name not in fixed)
        signature[name] = kind
        if kind == "constexpr":
            constexprs[name] = _constexpr(v)
        elif name not in fixed and name not in unaligned and _divisible(v):
            attrs.append([[i], [["tt.divisibility", 16]]])
    return {
        "kernel": launch.name,
        "line": fn.__code__.co_firstlineno,
        "signature": signature,
        "constexprs": constexprs,
        "attrs": attrs,
        "options": options,
        "named": named,
    }


def _indexed(which: Any, names: list) -> list:
    return [names[w] if isinstance(w, int) and 0 <= w < len(names) else w for w in (which or ())]


def _divisible(v: Any) -> bool:
    if hasattr(v, "data_ptr") and hasattr(v, "dtype"):
        return v.data_ptr() % 16 == 0
    return isinstance(v, int) and not isinstance(v, bool) and v % 16 == 0


def variant_key(job: dict) -> str:
    """What a compile is kept by: the file's text, the kernel, its signature (argument types,
    and the integers 1 and Nones Triton makes constants), constexprs and launch options.
    Not the divisibility attributes: they steer the compiler's alignment analysis (how wide
    a load may be), never whether a program compiles, so variants that differ only in them
    are compiled once, with the first one's."""
    fields = {k: job[k] for k in ("sha", "kernel", "line", "signature", "constexprs", "options")}
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:32]


# --- the compiler process ------------------------------------------------------------------


class Compiler:
    """The forked compiler process of this process, kept for its life (a later run, or the
    next workshop of ``python -m checks all``, uses it again), and every outcome it gave."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.pid = 0
        self.sent_files: set = set()  # shas whose text this child has
        self.queue: list = []  # keys sent and not answered yet, in order
        self.jobs: dict = {}  # key -> (job, the file's text) for the keys in the queue
        self.done: dict = {}  # key -> outcome
        self.compiles = 0  # variants answered by a child (not from self.done)
        self.busy_s = 0.0  # the child's seconds on them
        self.lock = threading.RLock()  # one conversation with the child at a time
        self.losses = 0  # children lost in a row, without an answer between
        self.broken = False

    def available(self) -> bool:
        if self.broken or not hasattr(os, "fork"):
            return False
        try:
            import triton.backends.compiler  # noqa: F401
            from triton.compiler import ASTSource  # noqa: F401
        except ImportError:
            return False
        return True

    def start(self) -> None:
        """Fork the compiler process, unless one is running."""
        with self.lock:
            if self.conn is None:
                self._fork()

    def _fork(self) -> None:
        import multiprocessing

        from checks.judging import gpu_compile_child

        ours, theirs = multiprocessing.Pipe()
        try:
            with warnings.catch_warnings():  # Python 3.12+ warns of forking beside threads:
                warnings.simplefilter("ignore", DeprecationWarning)  # the child runs no thread's code
                pid = os.fork()
        except OSError:
            return
        if pid == 0:  # the child: never returns
            ours.close()
            gpu_compile_child.serve(theirs)
        theirs.close()
        self.conn, self.pid, self.sent_files = ours, pid, set()

    def submit(self, key: str, job: dict, text: str) -> None:
        with self.lock:
            if key in self.done or key in self.jobs:
                return
            if self.broken:
                self.done[key] = {"key": key, "status": "unknown", "words": "no compiler process"}
                return
            self.start()
            self.jobs[key] = (job, text)
            self.queue.append(key)
            self._send(key)

    def _send(self, key: str) -> None:
        job, text = self.jobs[key]
        message = {**job, "key": key}
        if job["sha"] not in self.sent_files:
            message["source"] = text
        try:
            self.conn.send(message)
            self.sent_files.add(job["sha"])
        except (OSError, ValueError, AttributeError):
            self._lost("the compiler process is gone")

    def outcomes(self, keys: list) -> dict:
        """The outcomes of ``keys``, waiting for those still being compiled."""
        with self.lock:
            return self._outcomes(keys)

    def _outcomes(self, keys: list) -> dict:
        waiting = [k for k in keys if k not in self.done and k in self.jobs]
        while any(k in self.jobs for k in waiting) and self.conn is not None:
            ready = False
            try:
                ready = self.conn.poll(WAIT_S)
                got = self.conn.recv() if ready else None
            except (EOFError, OSError):
                got = None
            if got is None:
                self._lost("the compiler process stopped" if ready else f"no answer in {WAIT_S:.0f} s")
                continue
            self._answered(got)
        return {k: self.done[k] for k in keys if k in self.done}

    def _answered(self, got: dict) -> None:
        key = got.get("key")
        if key in self.jobs:
            del self.jobs[key]
            self.queue.remove(key)
        if len(self.done) > KEPT:  # the oldest half goes: those waited for now are the newest
            for old in list(self.done)[: KEPT // 2]:
                del self.done[old]
        self.done[key] = got
        self.losses = 0
        self.compiles += 1
        self.busy_s += float(got.get("seconds") or 0.0)

    def _lost(self, why: str) -> None:
        """The child died or hung on the variant at the head of the queue: that one is
        unknown, the child is ended, and a new one compiles the rest."""
        head = self.queue.pop(0) if self.queue else None
        if head is not None:
            self.jobs.pop(head, None)
            self.done[head] = {"key": head, "status": "unknown", "words": why}
        self.stop()
        self.losses += 1
        self.broken = self.losses >= LOSSES  # a compiler that cannot start: no more tries
        rest = list(self.queue)
        self.queue = []
        for key in rest:
            job, text = self.jobs.pop(key)
            self.submit(key, job, text)

    def stop(self) -> None:
        if self.conn is None:
            return
        with contextlib.suppress(OSError):
            self.conn.close()
        with contextlib.suppress(OSError):
            os.kill(self.pid, 9)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)
        self.conn, self.pid = None, 0

    def stats(self) -> dict:
        return {"compiles": self.compiles, "seconds": round(self.busy_s, 3), "known": len(self.done)}


COMPILER = Compiler()
