"""The GPU compiler's side of checks.judging.gpu_compile: a process forked from an
interpreted check run that compiles the run's kernel variants for sm_90 (no GPU needed)
and says whether the compiler accepts each.

Forked, not started afresh: torch and triton are imported already (a fresh interpreter
pays seconds for torch alone).  Triton's interpreter switch is turned off here, so the
learner's file, executed again from the very text the run loaded, defines compiled
``JITFunction`` kernels instead of interpreted ones.  Each variant is compiled with
``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))`` through Triton's
front end and its TTIR passes, and stopped there.  The front end is where the compiler
refuses a program: ``tl.dot``'s shape rule for sm_90 (K at least 16, 32 for 8-bit
operands), a loop-carried variable's type, constexpr-ness, a global that is not a
constexpr, a block that is not a power of two; the launch options (``num_warps`` a power
of two) are checked before it.  The later stages -- TTGIR (layouts for the warps,
pipelining), LLVM and ptxas -- cost most of a compile (seconds for a wide wgmma tile;
TTGIR alone adds about half again to the front end and TTIR) and refuse almost nothing
the front end let through.  The stop goes through Triton's public cache-manager setting
(``TRITON_CACHE_MANAGER``, ``knobs.cache.manager_class``): a manager that keeps nothing
and raises once the TTIR is handed to it.

Messages are dicts on a :class:`multiprocessing.connection.Connection`:

* ``{"key", "file", "sha", "source"?, "kernel", "line", "signature", "constexprs",
  "attrs", "options"}``: compile one variant (``source``, the file's text, comes with the
  first variant of each ``sha``); the answer is ``{"key", "status", "words", "line",
  "function", "seconds"}``, ``status`` one of ``ok``, ``refused`` (the compiler's
  ``words``, at ``line`` of the file in ``function``) or ``unknown`` (the variant could not
  be put to the compiler: ``words`` says why; never the learner's fault).

Standard library at import time.
"""

from __future__ import annotations

import ast
import linecache
import os
import re
import stat
import sys
import tempfile
import time
import types
import warnings
from typing import Any, Optional

from checks.judging.records import wordless_assert

TARGET = ("cuda", 90, 32)  # backend, compute capability, warp size: an H100/H200
STOP_AFTER = ".ttir"  # the last stage compiled (see the module doc)
STOPPING_MANAGER = f"{__name__}:Manager"  # Triton's TRITON_CACHE_MANAGER setting, see _compiled_mode
KEPT_FILES = 8  # learner files kept imported (a warm process sees one per save)


class _Enough(Exception):
    """Raised through ``triton.compile`` once the TTIR exists: the variant compiled."""


def serve(conn: Any) -> None:
    """The child's loop: answer each variant until the parent goes away.  Never returns
    into the caller's frames (the caller is a fork of the check run): it exits."""
    code = 0
    try:
        _close_channels(keep=conn.fileno())
        log = _quiet()
        _compiled_mode()
        modules: dict = {}
        _warm()
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError, KeyboardInterrupt):
                break
            try:
                conn.send(answer(job, modules, log))
            except (OSError, ValueError):
                break
    except BaseException:  # noqa: BLE001 - a forked child must never unwind into the parent's code
        code = 1
    finally:
        os._exit(code)


def _close_channels(keep: int) -> None:
    """Close the pipes and sockets inherited from the check run (a worker's channel to the
    app, a test's capture of its output) but ``keep``: whoever reads one to its end must not
    wait for this process."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 256))
    for fd in fds:
        if fd <= 2 or fd == keep:
            continue
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            pass


def _quiet() -> int:
    """Send this process's stdout and stderr (Python's and C's) to an unlinked temporary
    file: the learner's module prints nothing into the parent's output, and MLIR's
    diagnostics can be read back.  Its descriptor."""
    log = tempfile.TemporaryFile()
    fd = os.dup(log.fileno())
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)  # the learner's module never reads the parent's input
    return fd


def _compiled_mode() -> None:
    """Triton as a process without the interpreter has it.  The environment is the one
    checks.interpreter gives a child without the switch, plus Triton's cache-manager
    setting that stops each compile after the TTIR (:data:`STOPPING_MANAGER`).  Triton's
    Python modules are then imported anew (its own ``@jit`` functions, ``tl.cdiv`` and the
    other standard ones, were decorated for the interpreter in the parent), and so is any
    other module holding a kernel of the parent's Triton; its native library is kept (it
    cannot be loaded twice, and holds no interpreter state).  No hook or patch of the
    parent's reaches the new modules."""
    from checks import interpreter

    env = interpreter.interpreter_env(False)
    env.pop("TRITON_STORE_BINARY_ONLY", None)  # every stage is handed to the cache manager
    env["TRITON_CACHE_MANAGER"] = STOPPING_MANAGER
    os.environ.clear()
    os.environ.update(env)
    kernel_type = getattr(sys.modules.get("triton.runtime.jit"), "KernelInterface", None)
    if isinstance(kernel_type, type):
        warnings.simplefilter("ignore")  # reading every module's names wakes deprecation notices
        for name, module in list(sys.modules.items()):
            try:
                held = list(vars(module).values())
            except TypeError:
                continue
            if not name.startswith("triton") and any(isinstance(v, kernel_type) for v in held):
                del sys.modules[name]
    native = "triton._C"
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        if name != native and not name.startswith(native + "."):
            del sys.modules[name]
    import triton

    if triton.knobs.runtime.interpret or triton.knobs.cache.manager_class is not stopping_manager():
        raise RuntimeError("Triton is not set up to compile here")


def _warm() -> None:
    """Pay the compiler's one-time start (the backend, its dialects) while the parent runs
    its first check."""
    import triton
    import triton.language as tl

    @triton.jit
    def warm_kernel(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) + 1)

    try:
        _compile(warm_kernel, {"x_ptr": "*fp32"}, {}, {}, {})
    except Exception:  # noqa: BLE001 - a failing warm-up shows again on the first real variant
        pass


_MANAGER: list = []


def stopping_manager() -> type:
    """Triton's cache manager here: keeps nothing, finds nothing, and raises
    :class:`_Enough` once the last stage compiled (:data:`STOP_AFTER`) is handed to it."""
    if not _MANAGER:
        from triton.runtime.cache import CacheManager

        class StopAfterTTIR(CacheManager):
            def get_file(self, filename: str) -> Optional[str]:
                return None

            def put(self, data: Any, filename: str, binary: bool = True) -> str:
                if filename.endswith(STOP_AFTER):
                    raise _Enough()
                return ""

            def get_group(self, filename: str) -> Optional[dict]:
                return None

            def put_group(self, filename: str, group: dict) -> None:
                return None

        _MANAGER.append(StopAfterTTIR)
    return _MANAGER[0]


def __getattr__(name: str) -> Any:
    """``TRITON_CACHE_MANAGER`` names ``<this module>:Manager``; Triton reads it with getattr."""
    if name == "Manager":
        return stopping_manager()
    raise AttributeError(name)


def _compile(jit: Any, signature: dict, constexprs: dict, attrs: dict, options: dict) -> None:
    """Compile through the TTIR (returns) or raise the compiler's error."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    src = ASTSource(fn=jit, signature=signature, constexprs=constexprs, attrs=attrs)
    try:
        triton.compile(src, target=GPUTarget(*TARGET), options=options)
    except _Enough:
        pass


def answer(job: dict, modules: dict, log: int) -> dict:
    """What the compiler says of one variant."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    out: dict = {"key": job["key"], "status": "ok", "words": "", "line": None, "function": ""}
    module, problem, lines = _module(job, modules)
    jit = _kernel(module, job["kernel"], job.get("line")) if module is not None else None
    if jit is None:
        out.update(
            status="unknown", words=problem or f"{job['kernel']} is not a module-level @triton.jit kernel"
        )
        return out
    import triton

    start = os.lseek(log, 0, os.SEEK_END)
    try:
        constexprs = {k: _value(v) for k, v in job["constexprs"].items()}
        attrs = {tuple(k): v for k, v in job["attrs"]}
        _compile(jit, job["signature"], constexprs, attrs, job["options"])
    except triton.CompilationError as e:
        out.update(status="refused", **_words(e, lines))
    except RuntimeError as e:  # an MLIR pass refused the program: its diagnostics went to fd 2
        said = _diagnostic(log, start)
        if "PassManager" in str(e) or said:
            out.update(status="refused", words=said or str(e).strip().splitlines()[0])
        else:
            out.update(status="unknown", words=f"RuntimeError: {e}"[:300])
    except Exception as e:  # noqa: BLE001 - the compile could not be set up: not the learner's verdict
        out.update(status="unknown", words=f"{type(e).__name__}: {e}"[:300])
    out["seconds"] = round(time.perf_counter() - t0, 4)
    out["cpu_s"] = round(time.process_time() - cpu0, 4)
    return out


def _module(job: dict, modules: dict) -> tuple:
    """(the learner's module of ``job["sha"]`` executed in compiled mode, or None; why
    not; the file's lines)."""
    sha = job["sha"]
    if sha in modules:
        return modules[sha]
    text = job.get("source")
    if text is None:
        return None, "the file's text never reached the compiler process", []
    if len(modules) >= KEPT_FILES:
        for old, _, _ in modules.values():
            if old is not None:
                sys.modules.pop(old.__name__, None)
        modules.clear()
    path = job["file"]
    name = f"_gpu_compile_{sha[:16]}"
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module  # dataclasses and typing look a module up by name
    linecache.cache[path] = (len(text), None, text.splitlines(True), path)  # what Triton reads
    lines = text.splitlines()
    try:
        exec(compile(text, path, "exec", dont_inherit=True), module.__dict__)
        modules[sha] = (module, "", lines)
    except BaseException as e:  # noqa: BLE001 - the file runs differently without the interpreter
        sys.modules.pop(name, None)
        why = f"the file does not import without the interpreter ({type(e).__name__}: {e})"
        modules[sha] = (None, why[:300], lines)
    return modules[sha]


def _kernel(module: Any, name: str, line: Optional[int]) -> Any:
    """The ``JITFunction`` of the launched kernel: the module's global ``name`` (through
    autotune and heuristics wrappers), else any of its kernels named so (at ``line``)."""
    from triton.runtime.jit import JITFunction

    def unwrap(obj: Any) -> Any:
        for _ in range(8):
            if isinstance(obj, JITFunction):
                return obj
            obj = getattr(obj, "fn", None)
        return None

    found = unwrap(getattr(module, name, None))
    if found is not None and getattr(found, "__name__", name) == name:
        return found
    for value in vars(module).values():
        jit = unwrap(value)
        code = getattr(getattr(jit, "fn", None), "__code__", None)
        if code is not None and code.co_name == name and (line is None or code.co_firstlineno == line):
            return jit
    return None


def _value(v: Any) -> Any:
    """A constexpr value as the parent described it (a dtype by name)."""
    if isinstance(v, dict) and "dtype" in v:
        import triton.language as tl

        return tl.dtype(v["dtype"])
    return v


_REPR = re.compile(r"^[A-Za-z_][\w.]*\((.*)\)$", re.DOTALL)


def _first_line(text: str) -> str:
    """The first line that says something, an exception's repr unwrapped to its message."""
    text = (text or "").strip()
    m = _REPR.match(text)
    if m:
        try:
            inner = ast.literal_eval(m.group(1))
            if isinstance(inner, str):
                text = inner.strip()
        except (ValueError, SyntaxError):
            pass
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _words(exc: BaseException, lines: list) -> dict:
    """The compiler's words for a ``CompilationError``: the innermost one's message (an
    error in a called ``@triton.jit`` function is wrapped by its caller's), with the line
    of the learner's file it points at."""
    import triton

    inner, e = exc, exc.__cause__
    while e is not None:
        if isinstance(e, triton.CompilationError):
            inner = e
        e = e.__cause__
    message = getattr(inner, "error_message", None) or (
        str(inner.__cause__) if inner.__cause__ else str(inner)
    )
    words = _first_line(message) or wordless_assert(exc)
    src, at = getattr(inner, "src", None), getattr(getattr(inner, "node", None), "lineno", None)
    line, function = None, ""
    if isinstance(src, str) and src.strip() and isinstance(at, int):
        head = src.lstrip().splitlines()[0].strip()
        function = head.split("(")[0].replace("def", "").strip()
        line = next((i + at for i, text in enumerate(lines) if text.strip() == head), None)
    return {"words": words, "line": line, "function": function}


def _diagnostic(log: int, start: int) -> str:
    """The first ``error:`` line MLIR wrote to fd 2 since ``start``."""
    try:
        end = os.lseek(log, 0, os.SEEK_END)
        text = os.pread(log, min(end - start, 65536), start).decode("utf-8", "replace")
    except OSError:
        return ""
    for line in text.splitlines():
        if "error:" in line:
            return line.split("error:", 1)[1].strip()
    return ""
