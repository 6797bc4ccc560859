"""The arguments of ``python -m checks``: its parser, the workshops a run selects (and
the GPU workshops 'all' leaves out), and every usage error a run can have, found
before any notice or work.

Standard library only at import time, as ``python -S -m checks`` needs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from checks.command_line import DEFAULT_TIMEOUT, UsageParser
from checks.judging.records import plural
from workshops import catalog


class UsageError(Exception):
    pass


def build_parser(description: str) -> argparse.ArgumentParser:
    """The parser of ``python -m checks``; ``description`` is its module's first paragraph."""
    p = UsageParser(
        prog="python -m checks",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit codes: 0 pass, 1 wrong answer or load error, 2 TODO, "
        "3 nothing selected or unavailable, 64 usage error, 141 output pipe closed\n\n"
        "instructors: python -m checks regrade SUBMISSIONS --seed N --report DIR regrades a "
        "cohort's files (python -m checks regrade --help)",
    )
    p.add_argument("exercise", nargs="?", help="workshop id or code (e.g. online_normalizer, A1), or 'all'")
    p.add_argument(
        "--list",
        action="store_true",
        help="list the workshops and the ids of their checks (for --check); "
        "after a workshop's id or code: that workshop's only",
    )
    p.add_argument(
        "--level",
        choices=("all", "intermediate", "advanced"),
        default="all",
        help="with 'all' or --list: only this level",
    )
    p.add_argument(
        "--hint",
        nargs="?",
        const=1,
        type=int,
        metavar="N",
        help="show hint N (default the first); tiers go from a nudge to nearly the answer",
    )
    p.add_argument("--hints", action="store_true", help="show every hint")
    p.add_argument("--explain", action="store_true", help="show the answer's explanation")
    p.add_argument("--solution", action="store_true", help="check the reference answer instead of your file")
    p.add_argument("--file", type=Path, metavar="PATH", help="check this file against the named workshop")
    p.add_argument("--include-gpu", action="store_true", help="with 'all': include the GPU workshops")
    p.add_argument(
        "--interpret", action="store_true", help="run GPU workshops in Triton's interpreter on the CPU"
    )
    p.add_argument("--check", action="append", metavar="ID", help="run only this named check (repeatable)")
    p.add_argument("--json", type=Path, metavar="PATH", help="write the run's records as JSON")
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help=f"stop a workshop's run after this long (default {DEFAULT_TIMEOUT:g}, as in the app): "
        "the check it was stuck in is an error naming the line of your file, the checks after it "
        "are not run; 0: no limit (the checks run in this process)",
    )
    p.add_argument(
        "--verbose", action="store_true", help="show every failing check in full, with its traceback"
    )
    p.add_argument("--workspace", type=Path, metavar="DIR", help="folder of your exercise files")
    p.add_argument(
        "--reset",
        action="store_true",
        help="restore the starter into your file (your file is backed up first)",
    )
    p.add_argument("--where", action="store_true", help="print the path of your exercise file")
    p.add_argument(
        "--self-check",
        action="store_true",
        help="authors: check the course itself -- each selected workshop's folder is "
        "complete, its answer passes, its starter is TODO, and every kept wrong "
        "answer is rejected by the checks its meta.json names",
    )
    p.add_argument(
        "--seed",
        metavar="N",
        help="mix N into every check's inputs (same N, same inputs on every machine; "
        "default $KERNEL_COURSE_SEED, else 0: the usual inputs)",
    )
    p.add_argument(
        "--no-interpret",
        action="store_true",
        help="without a GPU, refuse to run GPU workshops instead of interpreting them",
    )
    p.add_argument(
        "--doctor",
        action="store_true",
        help="report what will work on this machine and how to fix what will not",
    )
    p.add_argument(
        "--perf",
        action="store_true",
        help="after a passing run of a GPU workshop: its performance reading (recorded in the "
        "interpreter, compiled for the H200; no GPU needed) and the lesson's performance step",
    )
    p.add_argument(
        "--repair",
        action="store_true",
        help="after a failing run: search for the smallest change of your file that makes every check "
        "pass, verify it, and say the line and the kind of mistake (your file is never changed)",
    )
    p.add_argument(
        "--repair-budget",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="with --repair: seconds of search per workshop at most (default 60)",
    )
    p.add_argument(
        "--sanitize",
        action="store_true",
        help="on a GPU: run the checks under compute-sanitizer (memcheck) and report invalid memory accesses",
    )
    return p


def select_workshops(args) -> list:
    if args.exercise is None:
        raise UsageError("name a workshop (or 'all'); see --list")
    if args.exercise == "all":
        if args.file:
            raise UsageError("--file needs one named workshop, not 'all'")
        ws = [w for w in catalog.workshops() if args.level in ("all", w.level)]
        if not args.include_gpu:
            ws = [w for w in ws if not w.gpu]
        return ws
    try:
        return [catalog.get(args.exercise)]
    except KeyError as e:
        raise UsageError(str(e).strip("'\"")) from None


def left_out_workshops(args) -> list:
    """With 'all' and no --include-gpu: the GPU workshops of the level, which it leaves out."""
    if args.exercise != "all" or args.include_gpu:
        return []
    return [w for w in catalog.workshops() if w.gpu and args.level in ("all", w.level)]


def left_out(args) -> str:
    """The sentence naming the workshops 'all' left out, or ''."""
    gpu = left_out_workshops(args)
    if not gpu:
        return ""
    names = ", ".join(f"{w.code} {w.id}" for w in gpu)
    return f"Left out: {plural(len(gpu), 'GPU workshop')} ({names}); add --include-gpu to check them too."


def validate(args, selected: list) -> None:
    """Every usage error a run can have, before any notice or work."""
    if args.interpret and args.no_interpret:
        raise UsageError("--interpret and --no-interpret contradict each other; choose one")
    if args.check and len(selected) != 1:
        raise UsageError("--check needs one named workshop")
    if args.repair_budget <= 0:
        raise UsageError(f"--repair-budget: {args.repair_budget:g} seconds; it must be more than 0")
    if args.repair and args.check:
        raise UsageError("--repair verifies a change against every check; leave out --check")
    if args.file is not None and not Path(args.file).is_file():
        raise UsageError(f"--file: {args.file} does not exist")
    if args.check:
        from checks.judging.engine import cases_for

        w = selected[0]
        try:
            known = {c.id for c in cases_for(w.id)}
        except ImportError:
            return  # its checks need torch: the run says so
        unknown = [i for i in args.check if i not in known]
        if unknown:
            raise UsageError(
                f"--check: unknown check id(s) for {w.id}: {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
