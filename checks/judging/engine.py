"""Run a workshop's named checks against one exercise file, in this process.

Standard library only at import time: torch and triton are imported by the case
modules and the exercise itself, and only for GPU workshops.  Choose the interpreter
(checks.interpreter.select, which :func:`run_checks` calls too) before a GPU exercise
is imported, because Triton reads its switch when a kernel is decorated.  Each check
is told the mode in its context (``ctx.interpret``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import itertools
import linecache
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Callable, ContextManager, Iterable, Optional

from checks import interpreter
from checks.judging import case as check_case, failure_kinds, gpu_compile, mistakes, properties, shape_errors
from checks.judging.call_parameters import noted as with_parameters
from checks.judging.case import SEED_ENV, Case, CheckFailed, Context, Unavailable, cause_of_type, parse_seed
from checks.judging.records import (
    Record,
    error_advice,
    exception_chain,
    jsonable,
    learner_traceback,
    short_repr,
)
from workshops import catalog

_module_counter = itertools.count()


def use_interpreter() -> None:
    """Select Triton's interpreter (kernels run on the CPU with numpy): the process's
    choice, made in checks.interpreter.  Must run before triton decorates a kernel;
    harmless to call twice."""
    interpreter.select(True)


def case_modules(workshop_id: str) -> list:
    """The modules holding a workshop's checks: ``checks/judging/cases/<id>.py`` and any
    ``checks/judging/cases/<id>_<part>.py`` beside it (e.g. ``<id>_guards.py``), by name."""
    folder = Path(__file__).resolve().parent / "cases"
    others = {w.id for w in catalog.workshops()}  # "a_b.py" is workshop a_b's, not a's part
    names = [workshop_id] + sorted(p.stem for p in folder.glob(f"{workshop_id}_*.py") if p.stem not in others)
    return [importlib.import_module(f"checks.judging.cases.{name}") for name in names]


def cases_for(workshop_id: str) -> list:
    """The workshop's cases, cheapest first (stable within equal cost)."""
    cases: list = []
    seen: dict = {}
    for mod in case_modules(workshop_id):
        for case in mod.CASES:
            if case.id in seen:
                if seen[case.id] is case:
                    continue  # a module that re-exports another's cases
                raise RuntimeError(f"{workshop_id}: two checks named {case.id!r}")
            seen[case.id] = case
            cases.append(case)
    return sorted(cases, key=lambda c: c.cost)


def gpu_problem() -> Optional[str]:
    """Why GPU workshops cannot run natively here, or None when they can."""
    try:
        import torch
        import triton  # noqa: F401
    except Exception as e:  # noqa: BLE001 - report any import failure plainly
        return (
            f"torch and triton are needed for the GPU workshops ({type(e).__name__}: {e}); "
            f"install the project (see README) and run with the project's .venv"
        )
    if not torch.cuda.is_available():
        return (
            "no CUDA GPU is available here; add --interpret to run the kernels in Triton's "
            "interpreter on the CPU (slow, but checks correctness)"
        )
    return None


class LoadError(Exception):
    """The exercise file could not be imported; the message says where and why, and
    ``file``/``line`` say it again for a program (the app shows the line)."""

    def __init__(self, message: str, file: str = "", line: Optional[int] = None):
        super().__init__(message)
        self.file, self.line = file, line


def _learner_frame(tb, path: Path):
    """The deepest traceback frame inside the learner's file, or None."""
    found = None
    target = os.path.realpath(path)
    for frame, lineno in traceback.walk_tb(tb):
        if os.path.realpath(frame.f_code.co_filename) == target:
            found = (frame, lineno)
    return found


def raised_in(exc: BaseException, path: Path) -> bool:
    """True when the innermost frame of the traceback is in the learner's file: the
    NotImplementedError is the starter's own TODO, not a library's."""
    last = None
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        last = frame
    return last is not None and os.path.realpath(last.f_code.co_filename) == os.path.realpath(path)


def _kernel_line(exc: BaseException, path: Path) -> Optional[tuple]:
    """(line, function) in the learner's file of a Triton compilation error: the
    error carries the kernel's source and the AST node that failed (line numbers from
    the kernel's ``def``), not the file's line, so the ``def`` is found in the file."""
    for e in reversed(exception_chain(exc)):  # innermost first: the node that really failed
        src, node = getattr(e, "src", None), getattr(e, "node", None)
        if not isinstance(src, str) or node is None or not hasattr(node, "lineno"):
            continue
        head = src.lstrip().splitlines()[0].strip() if src.strip() else ""
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        for i, line in enumerate(lines):
            if head and line.strip() == head:
                name = head.split("(")[0].replace("def", "").strip()
                return i + node.lineno, name
    return None


def where_in_file(exc: BaseException, path: Path) -> str:
    """Where in the learner's file ``exc`` happened: a kernel's own line when Triton
    says which (its compiler, or the interpreter running the kernel), else the
    deepest frame of the learner's file."""
    kernel = _kernel_line(exc, path)
    if kernel is not None:
        return f" ({Path(path).name}, line {kernel[0]}, in kernel {kernel[1]})"
    for e in reversed(exception_chain(exc)):  # the interpreter raises a kernel's error from inside it
        hit = _learner_frame(e.__traceback__, path)
        if hit is not None:
            frame, lineno = hit
            return f" ({Path(path).name}, line {lineno}, in {frame.f_code.co_name})"
    return ""


def _with_line(failed: CheckFailed, path: Path) -> str:
    """An out-of-bounds access's message with the line of the learner's kernel that made it
    (the interpreter runs the kernel's Python, so its frame is in the traceback)."""
    if failed.details.get("verdict") != failure_kinds.OUT_OF_BOUNDS:
        return failed.message
    hit = _learner_frame(failed.__traceback__, path)
    if hit is None:
        return failed.message
    frame, lineno = hit
    failed.details["line"] = lineno
    return f"{failed.message} -- at {Path(path).name}, line {lineno}, in {frame.f_code.co_name}"


def load_exercise(path: str | Path, on_loaded: Optional[Callable[[str], None]] = None):
    """Import ``path`` as a fresh module (never cached), with clear load errors.

    The file is read ONCE and exactly those bytes are compiled (and served to
    ``inspect``/``linecache``, which Triton reads kernels through): never a cached
    .pyc, which Python trusts when the source's size and whole-second mtime match, so
    two saves of equal size within a second would run the older code.
    ``on_loaded(sha256 hex of the bytes)`` says which content the checks run on: the
    file may have changed since the caller hashed it."""
    path = Path(path)
    if not path.is_file():
        raise LoadError(f"exercise file not found: {path}")
    name = f"_exercise_{path.stem}_{next(_module_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError(f"cannot import {path}: not a Python file")
    try:
        source = path.read_bytes()
    except OSError as e:
        raise LoadError(f"cannot read {path}: {e}") from None
    if on_loaded is not None:
        on_loaded(hashlib.sha256(source).hexdigest())  # as checks.workspace.content_hash
    mod = importlib.util.module_from_spec(spec)
    # Registered under its unique name, as an import would: dataclasses with string
    # annotations, pickling and typing look the module up in sys.modules.
    sys.modules[name] = mod
    try:
        text = importlib.util.decode_source(source)
        linecache.cache[str(path)] = (len(text), None, text.splitlines(True), str(path))
        exec(compile(source, str(path), "exec", dont_inherit=True), mod.__dict__)
    except SyntaxError as e:
        raise LoadError(
            f"SyntaxError in {Path(e.filename or path).name}"
            + (f", line {e.lineno}" if e.lineno else "")
            + f": {e.msg}"
            + (" (save the file as UTF-8)" if "encoding" in (e.msg or "") else "")
            + (f"\n    {e.text.rstrip()}" if e.text else ""),
            str(e.filename or path),
            e.lineno,
        ) from None
    except SystemExit as e:
        raise LoadError(f"the exercise called sys.exit({e.code!r}) while being imported") from None
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        hit = _learner_frame(e.__traceback__, path)
        raise LoadError(
            f"{type(e).__name__} while importing the exercise{where_in_file(e, path)}: {e}",
            str(path),
            hit[1] if hit else None,
        ) from None
    return mod


def _assigned_at(path: Path, name: str) -> Optional[int]:
    """The line of the last top-level statement of ``path`` that binds ``name``."""
    import ast

    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    lines = [
        node.lineno
        for node in tree.body
        for target in ast.walk(node)
        if isinstance(target, ast.Name) and target.id == name and isinstance(target.ctx, ast.Store)
    ]
    return max(lines, default=None)


def base_seed(seed: Optional[int] = None) -> int:
    """The run's base seed: ``seed`` when given, else $KERNEL_COURSE_SEED, else 0."""
    if seed is not None:
        return parse_seed(seed)
    env = os.environ.get(SEED_ENV, "").strip()
    return parse_seed(env, f"${SEED_ENV}") if env else 0


def witnessed(mod, path: Path, w, interpret: bool) -> object:
    """The learner's module as GPU checks see it: each call of a contract function is
    watched, and a tensor it returns must have been written by a kernel of ``path``
    (see checks.judging.provenance; with ``interpret``, store by store)."""
    from checks.judging import provenance

    allowed = provenance.allowed_ops(w.allowed_torch_ops)
    return provenance.WitnessedModule(mod, path, w.functions, allowed, interpret=interpret)


def run_case(
    case: Case, mod, path: Path, *, workshop_id: str, device: str, interpret: bool, seed: int = 0
) -> Record:
    rec = Record(
        workshop=workshop_id,
        id=case.id,
        label=case.label,
        status="pass",
        why=case.why,
        section=case.section,
        seed=seed,
    )
    if interpret and not case.interpreter:
        rec.status = "skipped"
        rec.message = case.interpreter_reason or "needs a CUDA GPU; not run in the interpreter"
        return rec
    ctx = Context(case_id=case.id, device=device, interpret=interpret, base_seed=seed)
    if isinstance(mod, mistakes.Recorder):
        mod.forget()  # only this check's calls are evidence for its diagnosis
        if "checks.judging.provenance" in sys.modules:
            sys.modules["checks.judging.provenance"].forget_launches()  # and only its launches
    t0, compared = time.perf_counter(), check_case.comparisons()
    try:
        msg = case.fn(mod, ctx)
        if device == "cuda":
            import torch

            torch.cuda.synchronize()  # surface asynchronous kernel errors inside this check
        rec.message = msg or ""
        rec.details = jsonable(ctx.details)
    except Unavailable as e:
        rec.status, rec.message = "skipped", str(e)
    except NotImplementedError as e:
        if raised_in(e, path):
            rec.status = "todo"
            rec.message = str(e) or "not implemented yet"
        else:
            rec.status = "error"
            rec.message = f"NotImplementedError raised by a library, not your TODO: {e}"
    except CheckFailed as e:
        rec.status, rec.message, rec.details = "fail", _with_line(e, path), jsonable(e.details)
    except AssertionError as e:
        rec.status, rec.message = "fail", str(e) or "assertion failed"
    except SystemExit as e:
        rec.status, rec.message = "error", f"your code called sys.exit({e.code!r})"
    except RecursionError as e:
        rec.status, rec.message = "error", f"RecursionError{where_in_file(e, path)}: {e}"
    except MemoryError:
        rec.status, rec.message = "error", "MemoryError: your code asked for more memory than there is"
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - a crash in the learner's code is a verdict
        wrapped = cause_of_type(e, CheckFailed)  # e.g. an out-of-bounds access in the interpreter
        if wrapped is not None:
            rec.status, rec.message = "fail", _with_line(wrapped, path)
            rec.details = jsonable(wrapped.details)
        elif isinstance(e, AttributeError) and getattr(e, "obj", None) is mod:
            rec.status = "fail"
            rec.message = (
                f"your file does not define {e.name!r}; the workshop's contract "
                f"asks for it (see the starter's outline)"
            )
        else:
            rec.status = "error"
            rec.message = f"{type(e).__name__}{where_in_file(e, path)}: {e}" + error_advice(str(e), e)
            rec.message = shape_errors.plain(e, path, rec.message)  # a shape error in plain words first
            rec.details = {"traceback": learner_traceback(e)}
    rec.seconds = round(time.perf_counter() - t0, 4)
    if case.properties:  # what separates failing from passing checks is said after the run
        rec.details = {**rec.details, "properties": list(case.properties)}
    if isinstance(mod, mistakes.Recorder) and (
        rec.status in ("fail", "error") or (rec.status == "pass" and check_case.comparisons() > compared)
    ):
        # and what the tensors it handed over show, and their numbers: the failing call's,
        # or (a pass that compared values with the right answer) every call's
        failing = [mod.attempted] if mod.attempted is not None else list(mod.calls)[-1:]
        calls = list(mod.calls) if rec.status == "pass" else failing
        seen = properties.observed(calls) if rec.status != "error" else []
        if seen:
            rec.details = {**rec.details, "observed": seen}
        rec.details = with_parameters(rec.details, calls, workshop_id, mod)  # every number of them
    # e.g. a PyTorch op caught in a numeric check: say why that matters
    failure_kinds.explained(rec, catalog.lesson_headings(workshop_id) if rec.status == "fail" else None)
    if rec.status == "fail" and isinstance(mod, mistakes.Recorder) and mod.calls:
        found = mistakes.diagnose(workshop_id, mod.calls, earlier=mod.first_failing)
        if found is not None:
            mistakes.annotate(rec, found)  # the failure names the classic mistake it matches
        if "mismatched" in rec.details:  # wrong values (not a rejection missed): evidence for later
            mod.note_failure()
    if rec.status == "fail" and isinstance(mod, mistakes.Recorder):
        from checks.judging.mistakes import relating

        provenance = sys.modules.get("checks.judging.provenance")  # loaded by GPU workshops only
        seen = provenance.last_launches() if provenance is not None else []
        relating.explain(rec, workshop_id, list(mod.calls), seen, mod.attempted)  # a relation, the launches
    return rec


def run_checks(
    workshop_id: str,
    path: Path,
    *,
    interpret: bool = False,
    only: Optional[Iterable[str]] = None,
    on_plan: Optional[Callable[[list], None]] = None,
    on_begin: Optional[Callable[[Case], None]] = None,
    on_record: Optional[Callable[[Record], None]] = None,
    on_loaded: Optional[Callable[[str], None]] = None,
    seed: Optional[int] = None,
) -> list:
    """Run the named checks of ``workshop_id`` against the file at ``path``.

    ``only``: check ids to run (unknown ids raise KeyError naming them).  For a GPU
    workshop without a GPU and without ``interpret``, every selected check is
    recorded as skipped with the reason (exit code 3).  ``seed``: the base seed mixed
    into every case's inputs (default $KERNEL_COURSE_SEED, else 0); a bad value raises
    ValueError naming it."""
    w = catalog.get(workshop_id)
    seed = base_seed(seed)
    path = Path(path)
    if w.gpu and interpret:
        use_interpreter()
    problem = gpu_problem() if (w.gpu and not interpret) else None
    bounds: ContextManager = contextlib.nullcontext()
    if w.gpu and interpret:
        try:
            import torch  # noqa: F401
            import triton  # noqa: F401

            from checks.judging import oob

            bounds = oob.checking()  # every load and store is checked against the launch's tensors
        except ImportError as e:
            problem = f"torch and triton are needed for the GPU workshops ({e})"
    if w.gpu and problem is None:
        from workshops import contract

        contract.set_interpret(interpret)  # the wrappers' device rules follow the run's mode
    device = "cuda" if (w.gpu and not interpret) else "cpu"

    cases = cases_for(workshop_id) if problem is None or not w.gpu else _plain_cases(workshop_id)
    if only:
        only = list(only)
        known = {c.id for c in cases}
        unknown = [i for i in only if i not in known]
        if unknown:
            raise KeyError(
                f"unknown check id(s) for {workshop_id}: {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        cases = [c for c in cases if c.id in only]
    if on_plan:
        on_plan(cases)

    def emit(rec):
        if on_record:
            on_record(rec)
        return rec

    if problem is not None:
        return [
            emit(
                Record(
                    workshop=w.id,
                    id=c.id,
                    label=c.label,
                    status="skipped",
                    message=problem,
                    why=c.why,
                    section=c.section,
                    seed=seed,
                )
            )
            for c in cases
        ]
    with bounds:
        return _judge(w, cases, path, device, interpret, seed, emit, on_begin, on_loaded)


def _judge(w, cases, path, device, interpret, seed, emit, on_begin, on_loaded) -> list:
    """Load the learner's file and run ``cases`` on it, one record each (or one load error)."""
    try:
        mod = load_exercise(path, on_loaded)
    except LoadError as e:
        return [
            emit(
                Record(
                    workshop=w.id,
                    id="load",
                    label=f"import {path.name}",
                    status="error",
                    message=str(e),
                    seed=seed,
                    details={"file": e.file or str(path), "line": e.line},
                )
            )
        ]
    values = {name: getattr(mod, name) for name in w.functions if hasattr(mod, name)}
    not_functions = [name for name, v in values.items() if not callable(v)]
    if not_functions:
        lines = {name: _assigned_at(path, name) for name in not_functions}
        said = [
            f"{name} is {short_repr(values[name])} (of type {type(values[name]).__name__}"
            + (f", line {lines[name]}" if lines[name] else "")
            + "), not a function"
            for name in not_functions
        ]
        return [
            emit(
                Record(
                    workshop=w.id,
                    id="load",
                    label=f"import {path.name}",
                    status="error",
                    message=f"in {path.name}, {'; '.join(said)}: the workshop's contract "
                    f"asks for {', '.join(f'def {n}(...)' for n in w.functions)} (see the starter)",
                    seed=seed,
                    details={"file": str(path), "line": lines[not_functions[0]]},
                )
            )
        ]
    if w.gpu:
        mod = witnessed(mod, path, w, interpret)
    # Each check's contract calls are remembered: a failure may then name a classic mistake.
    mod = mistakes.Recorder(mod, mistakes.recorded_functions(w.id, w.functions))
    records = []
    with gpu_compile.checked(path, w.gpu and interpret) as judged:  # what the interpreter ran must compile
        for case in cases:
            if on_begin:
                on_begin(case)
            rec = run_case(case, mod, path, workshop_id=w.id, device=device, interpret=interpret, seed=seed)
            records.append(emit(judged(rec)))
    return records


def _plain_cases(workshop_id: str) -> list:
    """Case ids and labels without importing torch (when torch itself is missing)."""
    try:
        return cases_for(workshop_id)
    except Exception:  # noqa: BLE001 - the case module needs torch; list the workshop as one item
        w = catalog.get(workshop_id)
        return [Case(id="workshop", label=w.title, fn=lambda m, c: None)]
