"""An author's checks of the course.  First of each workshop folder, before any code
runs: every file a learner or the app needs is there, every check names a lesson
section that exists, and the kept wrong answers match the map in ``meta.json`` (a
missing file is an error, never '').  Then ``python -m checks --self-check`` runs every
file: the answer passes, the starter is TODO, each kept wrong answer is rejected by the
checks its ``meta.json`` names, each one that makes a classic mistake (meta.json's
``"mistakes"``: file -> mistake id) has that mistake named by at least one of them, and
each right answer of another design (``right/``) passes every check."""

from __future__ import annotations

import json

from checks.command_line import EXIT_UNAVAILABLE, exit_code
from checks.json_files import run_header, write_json_atomic
from checks.judging import mistakes
from checks.judging.engine import cases_for

REQUIRED_FILES = ("meta.json", "lesson.md", "hints.md", "explanation.md", "starter.py", "solution.py")


def named_mistakes(w) -> dict:
    """meta.json's ``"mistakes"``: each kept wrong answer's file name -> the id of the
    classic mistake it makes (empty when there is none or meta.json cannot be read)."""
    try:
        meta = json.loads((w.folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    named = meta.get("mistakes", {})
    return dict(named) if isinstance(named, dict) else {"": named}


def mistake_problems(w) -> list:
    """What is wrong with meta.json's ``"mistakes"`` map of workshop ``w``: a file that is
    not a kept wrong answer, an id that names no mistake of the workshop.  (A workshop
    without oracles, ``checks/judging/mistakes/<id>.py``, has its ids unchecked: nothing
    can name them.)"""
    named = named_mistakes(w)
    if "" in named or not all(isinstance(k, str) and isinstance(v, str) for k, v in named.items()):
        return [f"{w.id}: meta.json's mistakes must map file names in wrong/ to mistake ids"]
    files = {p.name for p in w.wrong_versions()}
    problems = [
        f"{w.id}: meta.json's mistakes names wrong/{name}, which does not exist"
        for name in sorted(set(named) - files)
    ]
    try:
        has_oracles = mistakes.oracles_of(w.id) is not None
        known = {m.id for m in mistakes.mistakes_of(w.id)}
    except Exception as e:  # noqa: BLE001 - a broken oracles module is the author's to fix
        return problems + [f"{w.id}: its mistake oracles do not load: {type(e).__name__}: {e}"]
    headings = {line[3:].strip() for line in w.lesson.splitlines() if line.startswith("## ")}
    if has_oracles:
        for name, mistake_id in sorted(named.items()):
            if mistake_id not in known:
                problems.append(
                    f"{w.id}: meta.json says wrong/{name} makes mistake {mistake_id!r}, "
                    f"which is not one of {', '.join(sorted(known))}"
                )
    for m in mistakes.mistakes_of(w.id):
        if m.section not in headings:
            problems.append(
                f"{w.id}: mistake {m.id!r} names lesson section {m.section!r}, which lesson.md does not have"
            )
    return problems


def mistakes_named_by(records) -> set:
    """The ids of the classic mistakes the failing records name."""
    return {r.details.get("mistake", {}).get("id") for r in records if r.status == "fail"} - {None}


def unnamed_mistake(w, wrong_name: str, records) -> str:
    """The mistake meta.json says ``wrong_name`` makes, when no failing check named it
    ('' when none is named, or it was, or the workshop has no oracles to name it)."""
    wanted = named_mistakes(w).get(wrong_name, "")
    if not wanted or wanted in mistakes_named_by(records) or mistakes.oracles_of(w.id) is None:
        return ""
    return wanted


def folder_problems(w) -> list:
    """What is wrong with workshop ``w``'s folder, as sentences (empty when nothing)."""
    problems = [f"{w.id}: {name} is missing" for name in REQUIRED_FILES if not (w.folder / name).is_file()]
    for name in REQUIRED_FILES[1:4]:
        p = w.folder / name
        if p.is_file() and not p.read_text(encoding="utf-8").strip():
            problems.append(f"{w.id}: {name} is empty")
    if (w.folder / "hints.md").is_file() and len(w.hints) < 2:
        problems.append(f"{w.id}: hints.md needs at least two '## ' tiers")
    files = {p.name for p in w.wrong_versions()}
    listed = {name for name, _ in w.wrong_answers}
    for name in sorted(files - listed):
        problems.append(f"{w.id}: wrong/{name} is not in meta.json's wrong_answers")
    for name in sorted(listed - files):
        problems.append(f"{w.id}: meta.json lists wrong/{name}, which does not exist")
    for right in w.right_versions():
        if not right.read_text(encoding="utf-8").startswith('"""RIGHT'):
            problems.append(
                f'{w.id}: right/{right.name} must open with a docstring on its design (\'"""RIGHT ...\')'
            )
    try:
        cases = cases_for(w.id)
    except Exception as e:  # noqa: BLE001 - a broken case module is the author's to fix
        return problems + [f"{w.id}: its checks do not load: {type(e).__name__}: {e}"]
    known = {c.id for c in cases}
    for name, ids in w.wrong_answers:
        for i in sorted(set(ids) - known):
            problems.append(
                f"{w.id}: meta.json says check {i!r} catches wrong/{name}, but there is no such check"
            )
    headings = {line[3:].strip() for line in w.lesson.splitlines() if line.startswith("## ")}
    for c in cases:
        if c.section not in headings:
            problems.append(
                f"{w.id}: check {c.id!r} names lesson section {c.section!r}, which lesson.md does not have"
            )
        if not c.why:
            problems.append(f"{w.id}: check {c.id!r} does not say why it matters")
    return problems + mistake_problems(w)


def missed_catches(w, wrong_name: str, records) -> list:
    """The checks meta.json names for ``wrong_name`` that did not reject it (a check
    skipped here, e.g. GPU-only in the interpreter, is not counted as a miss, nor one that
    passed saying what it cannot prove here: ``details["unproven"]``)."""
    wanted = dict(w.wrong_answers).get(wrong_name, ())
    by_id = {r.id: r for r in records}
    not_a_miss = ("fail", "error", "skipped", "not run")
    return [i for i in wanted if i in by_id and by_id[i].status not in not_a_miss and not unproven(by_id[i])]


def unproven(record) -> bool:
    """A check that passed here saying what it could not prove on this machine (e.g. that
    future key tiles are skipped, seen only in the interpreter)."""
    return record.status == "pass" and bool(record.details.get("unproven"))


def self_check(workshops: list, args, out) -> int:
    """``python -m checks --self-check``.  Rustlings' rule for a course: every unsolved
    exercise must fail.  Each file runs in its own worker process (a wrong kernel's CUDA
    error cannot spoil another file), several files at once: about one per two cores, and
    on a GPU at most one per 8 GiB of its memory (``KERNEL_COURSE_POOL=N`` sets it); one
    more worker starts importing while they run.  A kept wrong answer runs only
    the checks its meta.json names: each of them must reject it."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from checks.running import ChildRun, WorkerPool, pool_size, preload_for

    folder_issues = [p for w in workshops for p in folder_problems(w)]
    for p in folder_issues:
        out.line(f"  BAD {p}", "bold red")
    expected = []
    for w in workshops:
        expected.append((w, w.solution, {0}, "answer passes", None))
        expected.append((w, w.starter, {2}, "starter is TODO", None))
        named = dict(w.wrong_answers)
        for bad in w.wrong_versions():
            expected.append((w, bad, {1}, "wrong answer rejected", named.get(bad.name)))
        for right in w.right_versions():
            expected.append((w, right, {0}, "another design passes", None))
    # Lines come out in file order: a file's line waits for the files listed before it.
    on_gpu = any(w.gpu for w in workshops) and not args.interpret
    jobs = max(1, min(pool_size(gpu=on_gpu), len(expected)))
    pool = WorkerPool(1)
    running: set = set()
    stop = threading.Event()

    def run_file(item) -> list:
        w, path, _, _, only = item
        if stop.is_set():
            return []
        preload = preload_for(w.gpu, args.interpret)
        run = ChildRun(
            w.id,
            path,
            interpret=args.interpret,
            worker=pool.take(preload, n=1)[0],
            only=only,
            timeout=args.timeout or 600,
        )
        pool.prime(preload)  # the next file's worker imports while this one runs
        running.add(run)
        try:
            return run.run()
        finally:
            running.discard(run)

    problems, files = 0, []
    executor = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="self-check")
    try:
        for (w, path, want, what, only), records in zip(expected, executor.map(run_file, expected)):
            code = exit_code(records)
            missed = missed_catches(w, path.name, records) if want == {1} else []
            cannot_here = all(r.status == "skipped" or unproven(r) for r in records)
            unavailable = want == {1} and records and cannot_here
            unnamed = unnamed_mistake(w, path.name, records) if want == {1} and not unavailable else ""
            ok = (code in want or unavailable) and not missed and not unnamed
            problems += not ok
            caught = sorted({r.id for r in records if r.status in ("fail", "error")})
            note = (
                f"; caught by {', '.join(caught[:4])}{'...' if len(caught) > 4 else ''}"
                if caught and code == 1
                else ""
            )
            if unavailable:
                note += f"; its checks ({', '.join(only or [])}) cannot run or prove it here"
            if missed:
                note += f"; NOT caught by {', '.join(missed)} (meta.json says it should be)"
            mistake = named_mistakes(w).get(path.name, "") if want == {1} else ""
            mistake_named = bool(mistake) and mistake in mistakes_named_by(records)
            if unnamed:
                note += f"; mistake {unnamed!r} NOT named by any failing check (meta.json says it is made)"
            elif mistake_named:
                note += f"; names the mistake {mistake}"
            rel = str(path.relative_to(w.folder.parent))
            out.line(
                f"  {'ok ' if ok else 'BAD'} {w.id:<20} {rel}: exit {code} ({what}){note}",
                "" if ok else "bold red",
            )
            files.append(
                {
                    "workshop": w.id,
                    "file": rel,
                    "expected": what,
                    "exit_code": code,
                    "ok": ok,
                    "caught_by": caught,
                    "missed": missed,
                    "mistake": mistake,
                    "mistake_named": mistake_named,
                    "records": [r.to_dict() for r in records],
                }
            )
    except BaseException:  # Ctrl-C: stop the files that run now, start no other
        stop.set()
        for run in list(running):
            run.cancel()
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        pool.close()
    out.line(
        f"{len(expected) - problems} of {len(expected)} course files behave as expected."
        + (f" {len(folder_issues)} problem(s) in the folders." if folder_issues else "")
    )
    code = EXIT_UNAVAILABLE if not expected else (0 if problems == 0 and not folder_issues else 1)
    if args.json:
        write_json_atomic(
            args.json,
            {
                **run_header("self-check", code, args.interpret),
                "folder_problems": folder_issues,
                "files": files,
            },
        )
        out.line(f"self-check written to {args.json}")
    return code
