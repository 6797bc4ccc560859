"""``python -m checks.mutation``: mutants of each GPU workshop's reference answer, run in
Triton's interpreter, and whether the checks that reject them say why.

    python -m checks.mutation --workshops all --per-workshop 32 \\
        --json results/<date>-<commit>-cpu-mutants.json --markdown results/MUTANTS.md

Exit codes: 0 the report was written (or the list printed); 64 a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from checks.command_line import EXIT_USAGE, UsageParser
from checks.json_files import write_json_atomic, write_text_atomic
from checks.mutation import generate, report
from checks.mutation.runner import DEFAULT_LIMIT, run_mutants

DEFAULT_PER_WORKSHOP = 40  # about 10 minutes on two cores (3 s a mutant, measured)
DEFAULT_REVIEWS = generate.REPO / "results" / "mutants-review.json"


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m checks.mutation", description=__doc__.split("\n\n")[0])
    p.add_argument("--workshops", default="all", help="'all' or GPU workshop ids, comma-separated")
    p.add_argument(
        "--per-workshop",
        type=int,
        default=DEFAULT_PER_WORKSHOP,
        metavar="N",
        help=f"mutants per workshop, sampled the same way everywhere (default {DEFAULT_PER_WORKSHOP})",
    )
    p.add_argument("--only", action="append", metavar="ID", help="run only this mutant id (repeatable)")
    p.add_argument("--processes", type=int, default=2, help="worker processes (default 2)")
    p.add_argument(
        "--limit",
        type=float,
        default=DEFAULT_LIMIT,
        metavar="SECONDS",
        help=f"time limit per mutant (default {DEFAULT_LIMIT:g})",
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="write the report here")
    p.add_argument("--markdown", type=Path, metavar="PATH", help="write the summary here")
    p.add_argument(
        "--reviews",
        type=Path,
        default=DEFAULT_REVIEWS,
        metavar="PATH",
        help="the survivors' reviews, merged into the report",
    )
    p.add_argument(
        "--raw", type=Path, metavar="PATH", help="also append each mutant's records here (JSON lines)"
    )
    p.add_argument(
        "--apply-reviews",
        type=Path,
        metavar="REPORT",
        help="run nothing: put the reviews into this report (and --markdown) and write it back",
    )
    p.add_argument("--list", action="store_true", help="print the chosen mutants' ids and stop")
    return p


def _workshops(value: str) -> list:
    if value == "all":
        return list(generate.GPU_WORKSHOPS)
    chosen = [w.strip() for w in value.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in generate.GPU_WORKSHOPS]
    if unknown or not chosen:
        raise ValueError(
            f"--workshops: {', '.join(unknown) or value!r} not a GPU workshop; "
            f"known: {', '.join(generate.GPU_WORKSHOPS)}"
        )
    return chosen


def _apply_reviews(args) -> int:
    data = json.loads(args.apply_reviews.read_text(encoding="utf-8"))
    data = report.apply_reviews(data, report.load_reviews(args.reviews))
    write_json_atomic(args.apply_reviews, data)
    text = report.markdown(data)
    if args.markdown:
        write_text_atomic(args.markdown, text)
    print(text)
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        workshops = _workshops(args.workshops)
        if args.per_workshop < 1:
            raise ValueError(f"--per-workshop: must be at least 1, not {args.per_workshop}")
        if args.processes < 1:
            raise ValueError(f"--processes: must be at least 1, not {args.processes}")
        if not args.limit > 0:
            raise ValueError(f"--limit: must be a positive number of seconds, not {args.limit:g}")
    except ValueError as e:
        print(f"python -m checks.mutation: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.apply_reviews:
        return _apply_reviews(args)
    if args.only:
        every = [m for w in workshops for m in generate.all_mutants(w)]
        known = {m.id for m in every}
        unknown = [i for i in args.only if i not in known]
        if unknown:
            print(
                f"python -m checks.mutation: error: --only: unknown mutant id(s): {unknown}", file=sys.stderr
            )
            return EXIT_USAGE
        mutants = [m for m in every if m.id in set(args.only)]
    else:
        mutants = generate.mutants_for(workshops, args.per_workshop)
    if args.list:
        for m in mutants:
            print(m.id)
        return 0
    t0 = time.monotonic()

    def progress(m, result) -> None:
        if args.raw:
            with open(args.raw, "a", encoding="utf-8") as f:
                f.write(json.dumps({"id": m.id, "records": result.get("records", [])}) + "\n")
        print(f"{time.monotonic() - t0:7.0f} s  {result['status']:<22} {m.id}", flush=True)

    results = run_mutants(mutants, processes_n=args.processes, limit=args.limit, on_result=progress)
    data = report.build(
        mutants,
        results,
        per_workshop=args.per_workshop,
        limit=args.limit,
        reviews=report.load_reviews(args.reviews),
    )
    text = report.markdown(data)
    if args.json:
        write_json_atomic(args.json, data)
    if args.markdown:
        write_text_atomic(args.markdown, text)
    print(text)
    return 0
