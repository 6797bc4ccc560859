"""The arguments of ``python -m checks.benchmark``: its parser, ``--op``'s reading of a
workshop's id or code, and the usage errors found before anything is timed.

No torch here: the arguments are checked before a GPU is looked for.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable, Optional

from checks.benchmark import specs
from checks.benchmark.rows import DTYPE_NAMES
from checks.command_line import UsageParser

TIMINGS = ("both", "graph", "events")


class UsageError(Exception):
    pass


def build_parser(ops: Optional[list] = None) -> argparse.ArgumentParser:
    ops = specs.benchmarked_ops() if ops is None else ops
    p = UsageParser(
        prog="python -m checks.benchmark",
        description="Time the GPU workshops' kernels after checking them against a "
        "float64 oracle; write the evidence as JSON.",
        epilog="exit codes: 0 all ran and passed, 1 a variant failed, 2 TODO, "
        "3 no CUDA GPU or nothing to run, 64 usage error",
    )
    p.add_argument(
        "--op",
        type=op_named(ops),
        metavar="OP",
        help=f"the operation to benchmark, by workshop id or code ({', '.join(ops)}), or all",
    )
    who = p.add_mutually_exclusive_group()
    who.add_argument("--solution", action="store_true", help="time the reference answer")
    who.add_argument("--file", type=Path, metavar="PATH", help="time this file (one --op)")
    p.add_argument("--workspace", type=Path, metavar="DIR", help="folder of your exercise files")
    p.add_argument(
        "--timing",
        choices=TIMINGS,
        default="both",
        help="graph: warm CUDA-graph replay (device time); events: CUDA events "
        "around repeated Python calls (per-call time); both: the two, and "
        "host overhead = per-call minus device time (default both)",
    )
    p.add_argument(
        "--cache",
        choices=("warm", "cold"),
        default="warm",
        help="cold: flush the L2 before every call (triton.testing.do_bench; "
        "--timing events only; default warm)",
    )
    p.add_argument(
        "--dtype",
        choices=DTYPE_NAMES + ("all",),
        help="dtype to time (default: each op's first; all: each op's list)",
    )
    p.add_argument(
        "--shapes",
        choices=("comparison", "roofline", "all"),
        default="all",
        help="which of the spec's shapes (default all)",
    )
    p.add_argument(
        "--variants",
        choices=("all", "defaults"),
        default="all",
        help="all: every option the spec sweeps (warps, tiles, block sizes) and the cached-handle "
        "twin; defaults: only your wrapper called with its defaults and PyTorch's rows, the "
        "first view the app times after a pass (default all)",
    )
    p.add_argument(
        "--output",
        type=Path,
        metavar="PATH",
        help="JSON file to write (default results/local/<op>-<timing>-<stamp>.json)",
    )
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument(
        "--cap-s",
        type=float,
        metavar="SECONDS",
        help="the most seconds one measurement samples for before it stops short of its interval "
        "target (default 2, 0.5 with --quick; the app passes less so every row comes quickly)",
    )
    p.add_argument(
        "--aa",
        action="store_true",
        help="A/A: time every variant twice, one right after the other, and report how far "
        "the two timings disagree (device and per-call time)",
    )
    p.add_argument(
        "--ceilings",
        type=Path,
        metavar="PATH",
        help="file that keeps the card's measured ceilings (default ceilings.json in the "
        "workspace's state folder)",
    )
    p.add_argument(
        "--remeasure-ceilings",
        action="store_true",
        help="measure the card's ceilings again instead of using the kept ones",
    )
    p.add_argument(
        "--stream-rows",
        nargs="?",
        const="-",
        metavar="FILE",
        help='write each row as soon as it is measured, one JSON line {"type": "bench_row", '
        '"row": {...}}: on stdout (the text report then goes to stderr), or appended to FILE',
    )
    p.add_argument(
        "--reading",
        action="store_true",
        help="after the timings, each op's performance reading (why a variant is slow; "
        "without a GPU it is printed instead of timings)",
    )
    p.add_argument("--list", action="store_true", help="list the ops, their shapes and dtypes")
    return p


def op_named(ops: list) -> Callable[[str], str]:
    """--op's parser: a benchmarked workshop's id or code (I1, as ``python -m checks I1``
    takes it), or 'all'; the id is what the rest of the run uses."""

    def parse(text: str) -> str:
        if text == "all" or text in ops:
            return text
        from workshops import catalog

        try:
            workshop = catalog.get(text)
        except KeyError:
            workshop = None
        if workshop is not None and workshop.id in ops:
            return workshop.id
        if workshop is not None:
            raise argparse.ArgumentTypeError(
                f"{text} ({workshop.id}) has no benchmark; benchmarked: {', '.join(ops)}"
            )
        raise argparse.ArgumentTypeError(f"unknown operation {text!r}; choose from all, {', '.join(ops)}")

    parse.__name__ = "operation"
    return parse


def validate(args) -> None:
    if args.list:
        return
    if args.op is None:
        raise UsageError("--op: name an operation or 'all' (see --list)")
    if args.file is not None:
        if args.op == "all":
            raise UsageError("--file: needs one --op, not 'all'")
        if not args.file.is_file():
            raise UsageError(f"--file: {args.file} does not exist")
    if args.cache == "cold" and args.timing != "events":
        raise UsageError(
            "--cache: cold applies to --timing events (do_bench flushes the L2 "
            "before each call); graph replay is warm"
        )
    if args.output is not None and args.output.is_dir():
        raise UsageError(f"--output: {args.output} is a folder; give a file path")
    if args.ceilings is not None and args.ceilings.is_dir():
        raise UsageError(f"--ceilings: {args.ceilings} is a folder; give a file path")
    if args.cap_s is not None and not (0 < args.cap_s <= 600):
        raise UsageError(f"--cap-s: {args.cap_s:g} is not a number of seconds in (0, 600]")
