"""``python -m checks.repair WORKSHOP --file PATH``: find and verify the smallest change of a
failing exercise that makes every check pass (the learner's file is never written).

With ``--jsonl`` every line of stdout is one JSON object: ``{"event": "begin"}``, then
``{"event": "progress", ...}`` lines, then ``{"event": "result", "repair": {...}}`` (what the
app reads; a ``"reproduced"`` repair carries the change of a reference answer that gives the
file's result: checks.repair.reference_match).  Exit 0 whatever was found; 64 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

USAGE = 64


def print_repair(repair: dict, out=None) -> None:
    """The repair as the command line says it."""
    out = out or sys.stdout
    if repair["status"] == "found":
        print(
            f"Smallest change that makes every check pass ({repair['seconds']:.0f} s, "
            f"{repair['tried']} changes tried):",
            file=out,
        )
        print(f"  {repair['says']}", file=out)
        for label, text in (("yours", repair["before"]), ("fixed", repair["after"])):
            for i, line in enumerate(text.splitlines() or [""]):
                print(f"  {label if i == 0 else '':5} | {line}", file=out)
    elif repair["status"] == "reproduced":
        # the reference's lines before and after the change stay in the dict (the JSON, a key of
        # the app): the sentence already quotes the one changed line, and no more is shown
        print(
            f"No change of your code makes every check pass; a change of the reference gives your result "
            f"({repair['seconds']:.0f} s):",
            file=out,
        )
        print(f"  {repair['says']}", file=out)
        print(f"  ({repair['note']})", file=out)
    else:
        print(f"Repair: {repair['note']}", file=out)


def main(argv=None) -> int:
    from checks import interpreter
    from workshops import catalog

    p = argparse.ArgumentParser(prog="python -m checks.repair", description=__doc__.split("\n\n")[0])
    p.add_argument("workshop", help="workshop id or code (e.g. fused_gemm, I3)")
    p.add_argument("--file", required=True, type=Path, help="the exercise file to repair (never written)")
    p.add_argument("--interpret", action="store_true", help="run GPU workshops in Triton's interpreter")
    p.add_argument("--budget", type=float, default=60.0, help="seconds to search at most (default 60)")
    p.add_argument(
        "--workers", type=int, default=0, help="worker processes (default: one per core, at most 16)"
    )
    p.add_argument("--seed", type=int, default=None, help="the checks' seed (as python -m checks --seed)")
    p.add_argument(
        "--records",
        type=Path,
        default=None,
        help="the failing run's records as JSON (python -m checks --json, or a list of records): the "
        "search starts from them instead of running the checks once first",
    )
    p.add_argument(
        "--records-from-stdin",
        action="store_true",
        help="start the workers now, then read the failing run's records from standard input (one "
        "line of JSON, as --records reads; the end of input without one: the run did not fail, stop): "
        "started with the run of the checks, the search's workers are warm by its verdict",
    )
    p.add_argument("--jsonl", action="store_true", help="progress and result as JSON lines")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return USAGE if e.code else 0
    try:
        w = catalog.get(args.workshop)
    except (KeyError, ValueError) as e:
        print(f"python -m checks.repair: workshop: {e}", file=sys.stderr)
        return USAGE
    if not args.file.is_file():
        print(f"python -m checks.repair: --file: no such file: {args.file}", file=sys.stderr)
        return USAGE
    if args.budget <= 0:
        print("python -m checks.repair: --budget: must be more than 0 seconds", file=sys.stderr)
        return USAGE
    if args.records is not None and args.records_from_stdin:
        print("python -m checks.repair: --records-from-stdin: not with --records", file=sys.stderr)
        return USAGE
    records = None
    if args.records is not None:
        try:
            records = records_of(args.records.read_text(encoding="utf-8"), w.id)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            print(f"python -m checks.repair: --records: cannot read {args.records}: {e}", file=sys.stderr)
            return USAGE
        if not records:
            print(
                f"python -m checks.repair: --records: {args.records} holds no record of {w.id}",
                file=sys.stderr,
            )
            return USAGE
    interpret = bool(args.interpret and w.gpu) or (w.gpu and not _has_gpu())
    interpreter.select(interpret)

    from checks.repair.search import find_repair

    def progress(event: dict) -> None:
        if args.jsonl:
            print(json.dumps(event), flush=True)

    repair = find_repair(
        w.id,
        args.file,
        interpret=interpret,
        budget=args.budget,
        workers=args.workers,
        seed=args.seed,
        on_progress=progress,
        records=records,
        wait_for_records=(lambda: records_from_stdin(w.id)) if args.records_from_stdin else None,
    )
    if args.jsonl:
        print(json.dumps({"event": "result", "repair": repair}), flush=True)
    else:
        print_repair(repair)
    return 0


def records_of(text: str, workshop: str) -> list:
    """The records of ``workshop`` in JSON text: python -m checks --json's, or a list of them."""
    payload = json.loads(text)
    found = payload["records"] if isinstance(payload, dict) else payload
    return [r for r in found if r.get("workshop", workshop) == workshop and "id" in r and "status" in r]


def records_from_stdin(workshop: str):
    """The records the first line of standard input holds; None at the end of input, or
    when the line holds none (the run did not fail: there is nothing to search)."""
    line = sys.stdin.readline()
    try:
        return records_of(line, workshop) or None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main())
