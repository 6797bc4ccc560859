"""``python -m checks.regrade.measure``: how a regrade scales with its workers, measured.

A synthetic cohort (each learner: the CPU workshop and one interpreted GPU workshop, right
and kept wrong answers in turn) is regraded from scratch through ``python -m checks
regrade`` once per worker count; the JSON records the wall time, the cluster's start,
each submission's seconds (by workshop), the speed-up over one worker, and the load
average before and after each run (other work on the machine slows a run: say so).

    python -m checks.regrade.measure --learners 6 --workers 1,2 --output results/x.json
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from checks.command_line import EXIT_USAGE, UsageParser
from checks.json_files import write_json_atomic
from checks.judging.records import plural
from checks.regrade import against_single, machine

REPO = Path(__file__).resolve().parents[2]
# (workshop, answer files in turn): right answers and kept wrong ones
ANSWERS = {
    "online_normalizer": ("solution.py", "wrong/raw_denominator.py", "wrong/empty_nan.py"),
    "strided_softmax": ("solution.py", "wrong/torch_fallback.py", "wrong/capped_grid.py"),
}


def build_cohort(root: Path, learners: int) -> int:
    """SUBMISSIONS under ``root``: ``learners`` folders, one file per workshop each."""
    return len(against_single.build_cohort(root, list(ANSWERS), learners, ANSWERS))


def _stats(values: list) -> dict:
    if not values:
        return {}
    return {
        "median": round(statistics.median(values), 3),
        "mean": round(statistics.fmean(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "n": len(values),
    }


def measure_once(submissions: Path, workers: int, seed: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="regrade-measure-") as tmp:
        report = Path(tmp) / "report"
        load_before = os.getloadavg()
        started = time.monotonic()
        cmd = [sys.executable, "-m", "checks", "regrade", str(submissions), "--seed", str(seed)]
        cmd += ["--report", str(report), "--workers", str(workers), "--timeout", f"{timeout:g}"]
        r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        wall = time.monotonic() - started
        load_after = os.getloadavg()
        cohort = json.loads((report / "cohort.json").read_text(encoding="utf-8"))
    results = cohort["results"]
    seconds = [x["seconds"] for x in results]
    by_workshop: dict = {}
    for x in results:
        by_workshop.setdefault(x["workshop"], []).append(x["seconds"])
    return {
        "workers": workers,
        "exit_code": r.returncode,
        "wall_s": round(wall, 3),
        "cluster_start_s": cohort.get("cluster", {}).get("start_s"),
        "submission_s": _stats(seconds),
        "submission_s_by_workshop": {w: _stats(v) for w, v in by_workshop.items()},
        "sum_submission_s": round(sum(seconds), 3),
        "submissions_per_minute": round(60 * len(results) / wall, 2),
        "outcomes": cohort.get("outcomes", {}),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
    }


def table_rows(payload: dict) -> list:
    """The README's rows for a measurement: workers, wall, median seconds per file (the
    CPU workshop / the interpreted GPU workshop), files per minute, speed-up."""
    rows = []
    for r in payload["runs"]:
        by = r["submission_s_by_workshop"]
        rows.append(
            f"| {r['workers']} | {r['wall_s']:.1f} s | {by['online_normalizer']['median']:.2f} s / "
            f"{by['strided_softmax']['median']:.1f} s | {r['submissions_per_minute']:.1f} | "
            f"{r.get('speedup_over_1_worker', 1.0):.2f}x |"
        )
    return rows


def main(argv=None) -> int:
    p = UsageParser(prog="python -m checks.regrade.measure", description=__doc__.split("\n\n")[0])
    p.add_argument("--learners", type=int, default=6, help="synthetic learners (default 6)")
    p.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    p.add_argument("--seed", type=int, default=11, help="the regrade's seed (default 11)")
    p.add_argument("--timeout", type=float, default=120.0, help="time limit per file (default 120)")
    p.add_argument("--note", default="", help="what else the machine was doing, in words")
    p.add_argument("--output", type=Path, help="JSON to write (default: printed only)")
    args = p.parse_args(argv)
    try:
        counts = [int(x) for x in args.workers.split(",")]
        if not counts or min(counts) < 1:
            raise ValueError
    except ValueError:
        print(
            f"{p.prog}: error: --workers: a comma list of positive counts, not {args.workers!r}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.learners < 1:
        print(f"{p.prog}: error: --learners: at least 1, not {args.learners}", file=sys.stderr)
        return EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="regrade-cohort-") as tmp:
        n = build_cohort(Path(tmp), args.learners)
        runs = []
        for w in counts:
            print(f"{plural(n, 'submission')} through {plural(w, 'worker')} ...", flush=True)
            runs.append(measure_once(Path(tmp), w, args.seed, args.timeout))
            print(json.dumps(runs[-1]), flush=True)
    base = next((r for r in runs if r["workers"] == 1), None)
    for r in runs:
        if base is not None:
            r["speedup_over_1_worker"] = round(base["wall_s"] / r["wall_s"], 3)
            r["efficiency"] = round(r["speedup_over_1_worker"] / r["workers"], 3)
    payload = {
        "schema": "kernel-course/regrade-scale",
        "version": 1,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": ["python", "-m", "checks.regrade.measure", *(sys.argv[1:] if argv is None else argv)],
        "commit": machine.commit(),
        "machine": machine.describe(),
        "note": args.note,
        "cohort": {"learners": args.learners, "submissions": n, "answers": ANSWERS},
        "runs": runs,
    }
    if args.output:
        write_json_atomic(args.output, payload)
        print(f"written to {args.output}")
    print("\n".join(table_rows(payload)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
