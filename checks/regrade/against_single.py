"""``python -m checks.regrade.against_single``: a regrade against checking the same files
one by one from the command line, on this machine: the time of each, and whether every
file got the same verdict both ways.

A synthetic cohort: for each workshop asked for, ``--learners`` learners, each with one of
the answers below in turn (the reference answer, a kept wrong answer that makes a classic
mistake, a PyTorch stand-in, the untouched starter).  First every file is checked by
``python -m checks WORKSHOP --file F --seed N --json OUT``, one after another (what an
instructor does without the regrade), then the whole cohort by ``python -m checks regrade``
with the regrade's options given after ``--``.  Each way starts with an empty Triton
cache of its own (neither reuses kernels the other compiled).  The verdicts compared: the
outcome word and every check's status.

    python -m checks.regrade.against_single --learners 4 --output results/x.json -- --per-gpu 4
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from checks.command_line import EXIT_USAGE, UsageParser
from checks.json_files import write_json_atomic
from checks.judging.records import plural
from checks.regrade import machine

REPO = Path(__file__).resolve().parents[2]
GPU_WORKSHOPS = ("strided_softmax", "softmax_backward", "fused_gemm", "split_softmax", "streaming_attention")
# Per workshop, the answers learners hand in, in turn.
ANSWERS = {
    "online_normalizer": ("solution.py", "wrong/raw_denominator.py", "wrong/empty_nan.py", "starter.py"),
    "strided_softmax": (
        "solution.py",
        "wrong/unit_column_stride.py",
        "wrong/torch_fallback.py",
        "starter.py",
    ),
    "softmax_backward": ("solution.py", "wrong/reduce_g_alone.py", "wrong/torch_fallback.py", "starter.py"),
    "fused_gemm": ("solution.py", "wrong/bias_by_row.py", "wrong/torch_fallback.py", "starter.py"),
    "split_softmax": (
        "solution.py",
        "wrong/merge_without_rescale.py",
        "wrong/torch_fallback.py",
        "starter.py",
    ),
    "streaming_attention": (
        "solution.py",
        "wrong/causal_excludes_diagonal.py",
        "wrong/torch_fallback.py",
        "starter.py",
    ),
}


def build_cohort(root: Path, workshops: list, learners: int, answers: Optional[dict] = None) -> list:
    """SUBMISSIONS under ``root``: ``learners`` folders, one file per workshop each, the
    answers of ``answers`` (default ANSWERS) in turn; the (learner, workshop, answer) of each."""
    answers = ANSWERS if answers is None else answers
    made = []
    for i in range(learners):
        for w in workshops:
            answer = answers[w][i % len(answers[w])]
            dest = root / f"learner{i:02d}" / f"{w}.py"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(REPO / "workshops" / w / answer, dest)
            made.append((dest.parent.name, w, answer))
    return made


def verdict(records: list, outcome: str) -> dict:
    return {"outcome": outcome, "checks": {r["id"]: r["status"] for r in records}}


def cold_cache(folder: str) -> dict:
    """The environment of one way's processes: Triton's kernel cache in a folder of its
    own, empty at the start, so neither way finds kernels the other compiled."""
    return {**os.environ, "TRITON_CACHE_DIR": str(Path(folder) / "triton-cache")}


def check_one_by_one(root: Path, made: list, seed: int, timeout: float) -> tuple:
    """Each file through the command line, one after another: (verdicts, seconds each)."""
    verdicts, seconds = {}, {}
    with tempfile.TemporaryDirectory(prefix="single-") as tmp:
        env = cold_cache(tmp)
        for learner, w, _ in made:
            out = Path(tmp) / f"{learner}-{w}.json"
            cmd = [sys.executable, "-m", "checks", w, "--file", str(root / learner / f"{w}.py")]
            cmd += ["--seed", str(seed), "--json", str(out), "--timeout", f"{timeout:g}"]
            cmd += ["--workspace", str(Path(tmp) / "ws")]
            started = time.monotonic()
            subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
            seconds[f"{learner}/{w}"] = round(time.monotonic() - started, 3)
            data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
            verdicts[f"{learner}/{w}"] = verdict(data.get("records", []), data.get("outcome", "no JSON"))
    return verdicts, seconds


def regrade(root: Path, seed: int, timeout: float, extra: list) -> tuple:
    """The whole cohort through ``python -m checks regrade``: (verdicts, seconds, cohort)."""
    with tempfile.TemporaryDirectory(prefix="regrade-") as tmp:
        report = Path(tmp) / "report"
        cmd = [sys.executable, "-m", "checks", "regrade", str(root), "--seed", str(seed)]
        cmd += ["--report", str(report), "--timeout", f"{timeout:g}", *extra]
        started = time.monotonic()
        r = subprocess.run(cmd, cwd=REPO, env=cold_cache(tmp), capture_output=True, text=True)
        wall = time.monotonic() - started
        if not (report / "cohort.json").exists():
            raise RuntimeError(f"the regrade wrote no report (exit {r.returncode}): {r.stderr[-800:]}")
        cohort = json.loads((report / "cohort.json").read_text(encoding="utf-8"))
        verdicts = {}
        for learner_file in sorted((report / "learners").glob("*.json")):
            data = json.loads(learner_file.read_text(encoding="utf-8"))
            for w, result in data.get("workshops", {}).items():
                verdicts[f"{data['learner']}/{w}"] = verdict(
                    result.get("records", []), result.get("outcome", "")
                )
    return verdicts, round(wall, 3), cohort


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    p = UsageParser(prog="python -m checks.regrade.against_single", description=__doc__.split("\n\n")[0])
    p.add_argument("--learners", type=int, default=4, help="learners per workshop (default 4)")
    p.add_argument("--workshops", default=",".join(GPU_WORKSHOPS), help="comma list (default: the GPU five)")
    p.add_argument("--seed", type=int, default=7, help="the seed of both ways (default 7)")
    p.add_argument("--timeout", type=float, default=120.0, help="time limit per file (default 120)")
    p.add_argument("--output", type=Path, help="JSON to write (default: printed only)")
    args = p.parse_args(own)
    workshops = [w.strip() for w in args.workshops.split(",") if w.strip()]
    unknown = [w for w in workshops if w not in ANSWERS]
    if unknown or not workshops:
        print(
            f"{p.prog}: error: --workshops: unknown {', '.join(unknown) or '(none given)'}", file=sys.stderr
        )
        return EXIT_USAGE
    if args.learners < 1:
        print(f"{p.prog}: error: --learners: at least 1, not {args.learners}", file=sys.stderr)
        return EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="cohort-") as tmp:
        root = Path(tmp)
        made = build_cohort(root, workshops, args.learners)
        print(f"{plural(len(made), 'file')}: one by one from the command line ...", flush=True)
        started = time.monotonic()
        single, seconds = check_one_by_one(root, made, args.seed, args.timeout)
        single_wall = round(time.monotonic() - started, 3)
        print(
            f"  {single_wall:.1f} s; now the regrade ({' '.join(extra) or 'default options'}) ...", flush=True
        )
        graded, regrade_wall, cohort = regrade(root, args.seed, args.timeout, extra)
        print(f"  {regrade_wall:.1f} s", flush=True)
    differ = sorted(k for k in single if graded.get(k) != single[k])
    payload = {
        "schema": "kernel-course/regrade-against-single",
        "version": 1,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": ["python", "-m", "checks.regrade.against_single", *argv],
        "commit": machine.commit(),
        "machine": machine.describe(),
        "seed": args.seed,
        "files": [{"learner": a, "workshop": w, "answer": f} for a, w, f in made],
        "one_by_one": {"wall_s": single_wall, "seconds": seconds},
        "regrade": {"wall_s": regrade_wall, "options": extra, "cluster": cohort.get("cluster", {})},
        "speedup": round(single_wall / regrade_wall, 3) if regrade_wall else None,
        "same_verdicts": not differ,
        "differ": {k: {"one_by_one": single[k], "regrade": graded.get(k)} for k in differ},
        "outcomes": {k: v["outcome"] for k, v in single.items()},
    }
    if args.output:
        write_json_atomic(args.output, payload)
        print(f"written to {args.output}")
    same = "the same verdict both ways"
    if differ:
        same = f"{plural(len(differ), 'verdict differs', 'verdicts differ')}: {', '.join(differ)}"
    print(
        f"{plural(len(made), 'file')}: one by one {single_wall:.1f} s, regrade {regrade_wall:.1f} s "
        f"({payload['speedup']}x); {same}"
    )
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
