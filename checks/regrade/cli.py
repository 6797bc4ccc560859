"""``python -m checks regrade SUBMISSIONS --seed N --report DIR``: regrade a cohort.

Exit codes: 0 every file was graded (whatever the learners' outcomes); 1 some could not
be graded: a file that names no workshop (listed as "not graded" first), a worker lost
twice, or the grading itself broke (the report says which); 3 Dask is not installed;
64 a usage error; 130 interrupted (the report holds what was done; the same command
resumes).
"""

from __future__ import annotations

import argparse
import collections
import signal
import sys
import time
from pathlib import Path

from checks.command_line import EXIT_UNAVAILABLE, EXIT_USAGE, UsageParser
from checks.judging.records import plural
from checks.regrade import machine, verdicts
from checks.regrade.reports import CohortReport, SeedMismatch
from checks.regrade.submissions import Submission, discover, is_gpu_workshop

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MEMORY_GIB = 8.0
ATTEMPTS = 2  # a task whose worker is lost is run once more, then reported lost
EXIT_NOT_GRADED, EXIT_INTERRUPTED = 1, 130


class UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(
        prog="python -m checks regrade",
        description="Regrade a cohort: every learner's workshop files through the full checks, "
        "spread over a Dask cluster, with one report for the class.",
        epilog="SUBMISSIONS/<learner>/<workshop_id>.py, one folder per learner (e.g. "
        "alice/strided_softmax.py). Exit codes: 0 all graded, 1 some not graded (a file naming no "
        "workshop, or a grading that failed), "
        "3 Dask missing, 64 usage error, 130 interrupted (run it again to resume).",
    )
    p.add_argument("submissions", type=Path, metavar="SUBMISSIONS", help="one folder per learner")
    p.add_argument("--seed", required=True, metavar="N", help="mix N into every check's inputs (required)")
    p.add_argument("--report", required=True, type=Path, metavar="DIR", help="where the reports go")
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"time limit of one file's checks (default {DEFAULT_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help=f"CPU workers on a machine without a GPU (default {machine.default_cpu_workers()}: "
        "one per two cores)",
    )
    p.add_argument(
        "--gpus",
        default="auto",
        metavar="LIST",
        help="GPUs to put a worker on: auto (CUDA_VISIBLE_DEVICES, else nvidia-smi), none, or ids like 0,1",
    )
    p.add_argument(
        "--per-gpu",
        type=int,
        default=1,
        metavar="N",
        help="submissions checked on one GPU at a time (default 1; more keeps a large GPU and the "
        "CPU cores that compile its kernels busy, at the cost of timings: leave 1 with --bench)",
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="use a running Dask cluster (tcp://host:8786)")
    p.add_argument(
        "--memory-limit",
        type=float,
        default=DEFAULT_MEMORY_GIB,
        metavar="GIB",
        help=f"address-space limit of a check process that uses no GPU (default {DEFAULT_MEMORY_GIB:g}; "
        "0: none)",
    )
    p.add_argument("--bench", action="store_true", help="on a GPU, also time each passing GPU submission")
    p.add_argument(
        "--repair",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="after a failing run, search each failing file for the smallest change that makes every check "
        "pass, for at most SECONDS per file (default 0: no search)",
    )
    p.add_argument("--redo", action="store_true", help="grade everything again, even what DIR already has")
    return p


def validate(args) -> int:
    """The seed; raises UsageError naming the argument."""
    from checks.judging.case import parse_seed

    try:
        seed = parse_seed(args.seed)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not args.timeout > 0:
        raise UsageError(f"--timeout: must be a positive number of seconds, not {args.timeout:g}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: must be at least 1, not {args.workers}")
    if args.per_gpu < 1:
        raise UsageError(f"--per-gpu: must be at least 1, not {args.per_gpu}")
    if args.per_gpu > 1 and args.bench:
        raise UsageError(
            "--per-gpu: timings of submissions sharing a GPU mean nothing; leave it at 1 with --bench"
        )
    if args.repair < 0:
        raise UsageError(
            f"--repair: must be 0 (no search) or a positive number of seconds, not {args.repair:g}"
        )
    if args.memory_limit < 0:
        raise UsageError(
            f"--memory-limit: must be 0 (none) or a positive number of GiB, not {args.memory_limit:g}"
        )
    if not args.submissions.is_dir():
        raise UsageError(f"SUBMISSIONS: {args.submissions} is not a folder")
    if args.report.exists() and not args.report.is_dir():
        raise UsageError(f"--report: {args.report} is a file, not a folder")
    try:
        machine.parse_gpus(args.gpus)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.scheduler and (args.workers is not None or args.gpus != "auto" or args.per_gpu != 1):
        raise UsageError(
            "--scheduler: the running cluster has its own workers; leave out --workers, --gpus and --per-gpu"
        )
    return seed


def _order(subs: list) -> list:
    """GPU workshops first (the long ones), learners interleaved."""
    return sorted(subs, key=lambda s: (not is_gpu_workshop(s.workshop), s.workshop, s.learner))


class Progress:
    def __init__(self, total: int, width: int):
        self.total, self.done, self.width = total, 0, width

    def line(self, r: dict) -> str:
        self.done += 1
        word = r["outcome"] + (f" ({r['fault']})" if r.get("fault") else "")
        failing = r.get("failing", [])
        ids = (
            (": " + ", ".join(failing[:3]) + (f" +{len(failing) - 3}" if len(failing) > 3 else ""))
            if failing
            else ""
        )
        n = len(str(self.total))
        return (
            f"[{self.done:>{n}}/{self.total}] {r['learner']:<{self.width}} {r['workshop']:<20} "
            f"{r.get('seconds', 0):7.1f} s  {word}{ids}"
        )


def _job(sub: Submission, seed: int, args, plan) -> dict:
    gpu = is_gpu_workshop(sub.workshop)
    on_gpu = bool(gpu and plan.gpu_workers)
    return {
        "learner": sub.learner,
        "workshop": sub.workshop,
        "source": sub.source,
        "sha256": sub.sha256,
        "seed": seed,
        "timeout": args.timeout,
        "memory_bytes": 0 if on_gpu else int(args.memory_limit * 2**30),
        "bench": bool(args.bench and on_gpu),
        "repair_s": args.repair,
    }


def why_lost(e: BaseException) -> str:
    """A task's exception in a few words (Dask's own messages run to a paragraph)."""
    name = type(e).__name__
    if name == "KilledWorker":
        return "KilledWorker: the Dask worker died while it ran the task"
    if name == "CommClosedError":
        return "CommClosedError: the connection to its Dask worker closed"
    first = str(e).splitlines()[0] if str(e) else ""
    return f"{name}: {first[:200]}"


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def grade_all(todo: list, seed: int, args, report: CohortReport, say) -> int:
    """Submit every task, keep each verdict as it arrives; the exit code."""
    from distributed import as_completed

    from checks.regrade import cluster

    gpus = [] if args.scheduler else machine.gpus_here(args.gpus)
    workers = args.workers or machine.default_cpu_workers()
    not_graded = 0
    with cluster.open_cluster(
        scheduler=args.scheduler or "", gpus=gpus, cpu_workers=workers, per_gpu=args.per_gpu, say=say
    ) as (
        client,
        plan,
    ):
        say(f"cluster: {plan.describe()} (ready in {plan.start_s:.1f} s)")
        if args.bench and not plan.gpu_workers:
            say("--bench: no worker has a CUDA GPU, and timings need one: regrading without them")
        report.context["cluster"] = plan.to_dict()
        width = max(len(s.learner) for s in todo)
        progress = Progress(len(todo), width)
        futures: dict = {}

        def submit(sub: Submission, attempt: int):
            job = _job(sub, seed, args, plan)
            fut = client.submit(
                cluster.grade,
                job,
                plan.gpu_of_worker,
                resources=plan.resources_for(is_gpu_workshop(sub.workshop)),
                key=f"regrade-{sub.learner}-{sub.workshop}-{attempt}-{time.monotonic_ns()}",
                pure=False,
            )
            futures[fut] = (sub, attempt)
            return fut

        queue = collections.deque((s, 1) for s in todo)
        pending = as_completed()

        def top_up() -> None:
            # no more in flight than the cluster has threads: see cluster.py
            room = cluster.slots(client) - len(futures)
            while queue and room > 0:
                pending.add(submit(*queue.popleft()))
                room -= 1

        top_up()
        try:
            for fut in pending:
                sub, attempt = futures.pop(fut)
                try:
                    result = fut.result()
                except Exception as e:  # noqa: BLE001 - a lost worker, or the task itself broke
                    reason = why_lost(e)
                    if attempt < ATTEMPTS:
                        say(f"  {sub.learner}/{sub.workshop}: {reason}; running it once more")
                        queue.appendleft((sub, attempt + 1))
                        top_up()
                        continue
                    result = {
                        "learner": sub.learner,
                        "workshop": sub.workshop,
                        "sha256": sub.sha256,
                        "seed": seed,
                        "seconds": 0.0,
                        **verdicts.lost(reason, attempt),
                    }
                result["attempts"] = attempt
                if result["outcome"] == verdicts.NOT_GRADED:
                    not_graded += 1
                report.add(result)
                say(progress.line(result))
                top_up()
        except KeyboardInterrupt:
            cluster.stop_running(client)
            for fut in list(futures):
                fut.cancel()
            raise
    return EXIT_NOT_GRADED if not_graded else 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)

    def say(text: str = "") -> None:
        print(text, flush=True)

    try:
        seed = validate(args)
        subs, unmatched = discover(args.submissions)
        context = {
            "command": ["python", "-m", "checks", "regrade", *argv],
            "commit": machine.commit(),
            "machine": machine.describe(),
            "timeout_s": args.timeout,
            "memory_limit_gib": args.memory_limit,
        }
        try:
            report = CohortReport(args.report, seed, context, subs, unmatched)
        except SeedMismatch as e:
            raise UsageError(str(e)) from None
        learners = {s.learner for s in subs}
        found = f"{plural(len(subs), 'file')} from {plural(len(learners), 'learner')}"
        say(f"{found} in {args.submissions}; seed {seed}")
        for u in unmatched:
            say(f"  not graded: {u.learner + '/' if u.learner else ''}{u.path.name}: {u.reason}")
        todo = [s for s in subs if args.redo or not report.done(s, bench=args.bench)]
        if len(todo) < len(subs):
            say(
                f"resuming: {len(subs) - len(todo)} already graded in {args.report} (same file hash and seed)"
            )
    except UsageError as e:
        print(f"python -m checks regrade: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        import distributed  # noqa: F401
    except ImportError:
        say("python -m checks regrade needs Dask: pip install 'kernel-course[cohort]' (dask[distributed])")
        return EXIT_UNAVAILABLE
    started = time.monotonic()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)  # a batch system's stop: as ctrl+c
    code = 0
    try:
        if todo:
            report.write_cohort()  # the plan, all pending; and the folder now holds this seed
            code = grade_all(todo, seed, args, report, say)
    except KeyboardInterrupt:
        report.finish({"wall_s": round(time.monotonic() - started, 3)})
        graded = sum(s.key in report.results for s in subs)
        say(f"interrupted: {graded} of {len(subs)} graded, kept in {args.report}; the same command resumes")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    report.finish({"wall_s": round(time.monotonic() - started, 3)})
    tally = report.tally()
    say("outcomes: " + ", ".join(f"{n} {o}" for o, n in sorted(tally.items())))
    say(f"reports: {args.report / 'cohort.md'}, cohort.csv, cohort.json, learners/<learner>.json")
    if unmatched:
        say(f"{plural(len(unmatched), 'file')} not graded (listed above): exit status {EXIT_NOT_GRADED}")
        return EXIT_NOT_GRADED
    return code
