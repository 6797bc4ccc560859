"""Save-to-verdict latency, measured side by side: ``python -m tui.latency``.

An editor-style save (temporary file renamed over the old one) is timed to the first
and the last verdict along up to three paths (``--paths``), in one run, each save with
its own edit:

* ``warm``: the app's own path, headless -- :func:`tui.watch.saves` with the app's
  settings notices the save, :class:`checks.running.RunSession` compares the content
  hash, its compile pool compiles the variants the last run needed while one warm
  check worker (torch and triton imported, CUDA and the witness warmed up) runs the
  checks; without a GPU (Triton's interpreter) the checks are sharded over one warm
  worker per core instead, balanced by the last run's seconds per check, as the app
  does; without Textual, and without watchfiles (the watch then polls);
* ``sharded``: the same controller without a compile pool, the checks sharded over
  ``--pool`` warm workers that each compile what their shard needs (the design before
  the compile pool, kept to measure against; interpreted, the app's path with
  ``--pool`` workers);
* ``fresh``: a new ``python -m checks WORKSHOP --file F`` process, as a learner at the
  shell starts it after the same kind of edit.

A GPU workshop's edit inserts a statement with a unique literal into the body of every
``@triton.jit`` function (``--edit first``: only the first), so its source and Triton
cache key are new for every path and repeat: nothing any path compiled before is
reused.  The CPU workshop's edit adds a unique comment.  A save that changes nothing is
also tried (the warm path must start no run).  Before every measured save every pool
is primed and ready, so no path shares the machine with a pool's imports; each
session's first run (the unedited answer) is the unmeasured warm-up.  With
``--benchmarks``, the first passing run of the app's path per GPU workshop is followed
by the app's benchmark of the same file, timed to its table.

JSON (``--json``, default results/local/latency-<time>.json), schema
``kernel-course/latency`` version 3::

    {"schema", "version", "created", "command",
     "machine": {"python", "platform", "cpus", "gpu",
                 "pool_size": {workshop: {path: {"check_workers", "compile_workers"}}},
                 "watcher": "watchfiles" | "stat-poll"},
     "settings": {"repeats", "paths", "edit", "watch_step_ms", "targets": {...}},
     "complete": false until every workshop is measured (the file is rewritten after
                 each one, so a run stopped at a time limit keeps what it measured),
     "workshops_done": [...], "seconds",
     "summary": [{"workshop", "scenario", "path", "n", "runs_started", "runs_failed" (left
                  out of the figures: a crash or a failing check is not a verdict's latency),
                  "first_s": {"median", "min", "max"}, "last_s": {...}, "bench_s": {...},
                  "bench_first_row_s": {...}, "bench_last_row_s": {...},
                  "variants" (distinct kernel variants of the learner's file the suite needs),
                  # warm and sharded rows with a fresh row beside them:
                  "ratio_fresh_over_warm": {"first", "last"},
                  "ratio_sharded_over_warm": {"first", "last"},  # warm rows
                  # warm rows of GPU workshops:
                  "targets": {"applies", "why", "last_s", "first_s", "ratio":
                              {"limit", "value", "met", "missed_by"}}}],
     "runs": [{"workshop", "scenario", "path", "repeat", "ran", "first_s", "last_s",
               "split": {...}, "variants", "bench_s", "bench_first_row_s",
               "bench_last_row_s", ...}]}

With ``--benchmarks``: ``bench_first_row_s`` and ``bench_last_row_s``, seconds from the
pass (the last verdict's arrival) to the first and the last timing row the app shows
as it is measured, and ``bench_s`` to the whole table.

``split`` of a warm or sharded run: ``notice_s`` (save to the watcher's report),
``shards``, ``checks_s`` (the checks' own seconds, summed over shards), ``compile_s``
and ``compiles`` (Triton compiling in the check workers, from its compilation
listener, summed), ``run_s`` (checks_s - compile_s), ``critical_s`` (the busiest
shard's checks_s), ``transfer_max_s`` (worker to controller, per record), ``wait_s``
(the check worker waiting for the compile pool), ``ahead`` (the compile pool:
variants, compiled, failed, compile_s summed over its workers, wall_s from the save
to its last variant, benchmark_variants: those only the app's last benchmark needed,
compiled after the checks'), ``warm_up_s`` (the check worker's start-up and warm-up, paid
before the save) and ``per_check`` (each check's seconds and its wait for the pool).  A
fresh run's split has ``checks_s`` and ``outside_checks_s``
(process start, imports, file load, output).  ``results/latency_table.py`` turns the
JSON into the README's table.
"""

from __future__ import annotations

import ast
import itertools
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from checks.command_line import UsageParser
from checks.doctor import gpu_present
from checks.json_files import write_json_atomic
from checks.running import SettingError, compile_workers, discovery_said, pool_size as machine_pool_size
from checks.workspace import content_hash
from tui import benchmark_child, watch
from tui.headless import HeadlessSession
from tui.latency_summary import TARGETS, TARGETS_INTERPRETED, print_table, summarize, verdict_complete
from workshops import catalog

REPO = Path(__file__).resolve().parent.parent
_stamps = itertools.count(int(time.time()) % 1_000_000 * 1000)


def editor_save(path: Path, text: str) -> float:
    """Write like vim or a JetBrains IDE: temporary file, then rename over.  Returns the
    monotonic time just before the rename, the moment the new content can be seen: a
    watcher that polls can report the change before ``os.replace`` returns, and its
    report must not read as earlier than the save."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".swp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    saved = time.monotonic()
    os.replace(tmp, path)
    return saved


def _is_jit(fn: ast.AST) -> bool:
    return any("jit" in ast.unparse(d) for d in getattr(fn, "decorator_list", []))


def kernel_edit(src: str, stamp: int, which: str = "all") -> str:
    """``src`` with ``_kc_edit = <stamp>`` as the first statement (after a docstring) of
    every ``@triton.jit`` function (``which="first"``: the first one only).  Without one,
    a comment with the stamp is appended."""
    tree = ast.parse(src)
    kernels = [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_jit(n)
    ]
    kernels.sort(key=lambda n: n.lineno)
    if which == "first":
        kernels = kernels[:1]
    if not kernels:
        return src + f"\n# edit {stamp}\n"
    lines = src.splitlines(keepends=True)
    for fn in sorted(kernels, key=lambda n: -n.lineno):  # bottom up: lines stay valid
        body = fn.body
        first = body[0]
        doc = (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        )
        end = first.end_lineno
        assert end is not None  # ast.parse sets it
        if doc and len(body) > 1:
            at, indent = end, body[1].col_offset
        else:
            at, indent = (end if doc else first.lineno - 1), first.col_offset
        lines.insert(at, " " * indent + f"_kc_edit = {stamp}\n")
    return "".join(lines)


def edited(w, which: str) -> str:
    stamp = next(_stamps) % 2_000_000_000 + 1
    src = w.solution.read_text(encoding="utf-8")
    return kernel_edit(src, stamp, which) if w.gpu else src + f"\n# edit {stamp}\n"


def warm_run(session: HeadlessSession, text: str, timeout: float) -> dict:
    if not session.wait_ready(timeout):
        return {"ran": False, "error": "the worker pool did not become ready"}
    c = session.controller
    digest = content_hash(text.encode("utf-8"))
    started = session.runs_started
    saved = editor_save(session.path, text)
    got = session.wait_finished(digest, saved, timeout)
    if got is None:
        return {"ran": False, "error": f"no verdict within {timeout:g} s"}
    fin = got["finished"]
    notice = next((t for t in session.batches if t >= saved), None)
    timings = c.last_timings
    secs = [v.get("seconds") or 0.0 for v in timings.values()]
    comp = [v.get("compile_s") or 0.0 for v in timings.values()]
    per_shard: dict = {}
    for v in timings.values():
        per_shard[v.get("shard", 0)] = per_shard.get(v.get("shard", 0), 0.0) + (v.get("seconds") or 0.0)
    transfers = [v["transfer_s"] for v in timings.values() if v.get("transfer_s") is not None]
    waits = [v.get("wait_s") or 0.0 for v in timings.values()]
    order = [c_["id"] for c_ in session.messages_plan(fin.generation)]
    ahead = c.last_compile or {}
    return {
        "ran": session.runs_started > started,
        "passed_at": got["last"],  # monotonic; taken out by measure(), for bench_after
        "first_s": round(got["first"] - saved, 4),
        "last_s": round(got["last"] - saved, 4),
        "outcome": fin.outcome,
        "checks": len(got["records"]),
        "statuses": sorted({r.status for r in got["records"]}),
        "in_check_order": got["order"] == [i for i in order if i in got["order"]],
        "split": {
            "notice_s": round(notice - saved, 4) if notice else None,
            "shards": c.last_shards,
            "checks_s": round(sum(secs), 4),
            "compile_s": round(sum(comp), 4),
            "compiles": sum(v.get("compiles") or 0 for v in timings.values()),
            "run_s": round(sum(secs) - sum(comp), 4),
            "critical_s": round(max(per_shard.values(), default=0.0), 4),
            "transfer_max_s": round(max(transfers), 4) if transfers else None,
            "wait_s": round(sum(waits), 4),
            "ahead": {
                k: ahead.get(k)
                for k in ("variants", "compiled", "failed", "compile_s", "wall_s", "benchmark_variants")
            }
            if ahead
            else None,
            "warm_up_s": session.ready_seconds(),
            # where a verdict's seconds go: each check's own seconds and its wait for the pool
            "per_check": {
                cid: {"s": round(v.get("seconds") or 0.0, 4), "wait_s": round(v.get("wait_s") or 0.0, 4)}
                for cid, v in timings.items()
            },
        },
        "variants": len(c.variants),
    }


def bench_after(session: HeadlessSession, timeout: float, passed_at: Optional[float] = None) -> dict:
    """The app's benchmark of the file just checked (``python -m checks.benchmark`` at
    the app's default shapes, as the workshop screen starts it when every check
    passes, its rows streamed to the table as they are measured): seconds from the pass
    (``passed_at``, the monotonic time the last verdict arrived; default now) to the
    first and the last row and to the whole table."""
    t0 = time.monotonic() if passed_at is None else passed_at
    arrived: list = []  # when each row reached the caller (from the run's reader thread)
    worker = session.controller.benchmark_worker()  # warm, as the app's
    run = benchmark_child.BenchmarkRun(
        session.workshop.id,
        session.path.parent,
        file=session.path,
        worker=worker,
        on_row=lambda row: arrived.append(time.monotonic()),
    )
    rows, error, output = run.run()
    end = time.monotonic()
    session.controller.prime()  # the next save finds its workers warm again
    return {
        "bench_s": round(end - t0, 4),
        "bench_first_row_s": round(arrived[0] - t0, 4) if arrived else None,
        "bench_last_row_s": round(arrived[-1] - t0, 4) if arrived else None,
        "bench_streamed_rows": len(arrived),
        "bench_warm": worker is not None,
        "bench_rows": len(rows),
        "bench_error": error or None,
        "bench_discovery": discovery_said(output),  # the variants handed to the compile pool
    }


def fresh_run(w, path: Path, text: str, interpret: bool, timeout: float) -> dict:
    saved = editor_save(path, text)
    out = path.with_suffix(".records.json")
    cmd = [sys.executable, "-m", "checks", w.id, "--file", str(path), "--json", str(out)]
    if interpret:
        cmd.append("--interpret")
    env = dict(os.environ, PYTHONUNBUFFERED="1", NO_COLOR="1")
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    first = None
    mark = re.compile(r"^\s+(PASS|FAIL|TODO|ERROR|SKIP)\s")
    assert proc.stdout is not None  # started with stdout=PIPE
    for line in proc.stdout:
        if first is None and mark.match(line):
            first = time.monotonic()
    proc.wait(timeout=timeout)
    end = time.monotonic()
    checks_s = None
    try:
        import json

        data = json.loads(out.read_text(encoding="utf-8"))
        recs = data.get("records", data) if isinstance(data, dict) else data
        checks_s = round(sum(r.get("seconds") or 0.0 for r in recs if isinstance(r, dict)), 4)
    except (OSError, ValueError, AttributeError):
        pass
    return {
        "ran": True,
        "first_s": round((first or end) - saved, 4),
        "last_s": round(end - saved, 4),
        "exit_code": proc.returncode,
        "split": {
            "checks_s": checks_s,
            "outside_checks_s": round(end - saved - checks_s, 4) if checks_s is not None else None,
        },
    }


def unchanged_save(session: HeadlessSession, timeout: float) -> dict:
    session.wait_ready(timeout)
    runs, skipped = session.runs_started, session.saves_skipped
    saved = editor_save(session.path, session.path.read_text(encoding="utf-8"))
    deadline = saved + 5.0
    while session.saves_skipped == skipped and time.monotonic() < deadline:
        time.sleep(0.01)
    return {
        "ran": session.runs_started > runs,
        "noticed": session.saves_skipped > skipped,
        "notice_s": round(time.monotonic() - saved, 4),
    }


def measure(
    w,
    repeats: int,
    interpret: bool,
    timeout: float,
    work: Path,
    edit: str,
    pool_size,
    paths,
    benchmarks=False,
) -> tuple:
    """Measure ``paths`` (warm: the app's path; sharded: the checks sharded over
    ``pool_size`` workers without compiling ahead; fresh: a new process), interleaved
    per repeat so drift hits each alike."""
    scenario = "kernel edit" if w.gpu else "edit"
    sessions, files = {}, {}
    for mode in paths:
        (work / mode).mkdir(parents=True, exist_ok=True)
        files[mode] = work / mode / w.exercise_name
        files[mode].write_text(w.solution.read_text(encoding="utf-8"), encoding="utf-8")
    sizes = {}
    rows = []
    try:
        for mode in paths:
            if mode == "fresh":
                continue
            sharded = mode == "sharded"
            sessions[mode] = HeadlessSession(
                w,
                files[mode],
                workspace=work / mode,
                interpret=interpret,
                timeout=timeout,
                pool_size=(pool_size or machine_pool_size(gpu=not interpret)) if sharded else None,
                compilers=0 if sharded else None,
                benchmarks=benchmarks and not sharded,
            )
            sessions[mode].start()  # its first run (the unedited answer) is the unmeasured warm-up
            sizes[mode] = sessions[mode].controller.settings()
        for i in range(repeats):
            for mode in paths:
                for s in sessions.values():
                    s.wait_ready(timeout)  # no worker imports during any measured save
                r = (
                    fresh_run(w, files[mode], edited(w, edit), interpret, timeout)
                    if mode == "fresh"
                    else warm_run(sessions[mode], edited(w, edit), timeout)
                )
                passed_at = r.pop("passed_at", None)
                first = i == 0  # one benchmark per workshop: it takes far longer than a verdict
                if (
                    benchmarks
                    and first
                    and mode == "warm"
                    and w.gpu
                    and not interpret
                    and verdict_complete(r)
                ):
                    r.update(bench_after(sessions[mode], timeout, passed_at))
                rows.append({"workshop": w.id, "scenario": scenario, "path": mode, "repeat": i, **r})
        if "warm" in sessions:
            rows.append(
                {
                    "workshop": w.id,
                    "scenario": "unchanged save",
                    "path": "warm",
                    "repeat": 0,
                    **unchanged_save(sessions["warm"], timeout),
                }
            )
    finally:
        for s in sessions.values():
            s.close()
    return rows, sizes


def main(argv=None) -> int:
    p = UsageParser(prog="python -m tui.latency", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--workshops",
        default="online_normalizer,strided_softmax",
        help="comma-separated workshop ids, or 'all' (default: the CPU workshop and strided_softmax)",
    )
    p.add_argument("--repeats", type=int, default=3, help="measured saves per path (default 3)")
    p.add_argument(
        "--edit",
        choices=("all", "first"),
        default="all",
        help="which @triton.jit functions each save edits (default all)",
    )
    p.add_argument(
        "--pool", type=int, help="workers of the sharded path (default: the machine's sharded pool size)"
    )
    p.add_argument(
        "--paths",
        default="warm,fresh",
        help="comma-separated paths to measure side by side: warm (the app's: compile pool and one "
        "warm worker; interpreted, one warm worker per core), sharded (checks sharded over --pool "
        "warm workers, no compile pool), fresh (a new process); default warm,fresh",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="per-run limit in seconds")
    p.add_argument(
        "--benchmarks",
        action="store_true",
        help="after each passing run of the app's path on a GPU, time the app's benchmark of it "
        "(last verdict to timings table)",
    )
    p.add_argument(
        "--json",
        "--output",
        dest="json",
        type=Path,
        help="JSON path (default results/local/latency-<time>.json)",
    )
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats: must be at least 1")
    if args.pool is not None and args.pool < 1:
        p.error("--pool: must be at least 1")
    paths = [x.strip() for x in args.paths.split(",") if x.strip()]
    bad = [x for x in paths if x not in ("warm", "sharded", "fresh")] or ([] if paths else ["(none)"])
    if bad:
        p.error(f"--paths: unknown path(s) {', '.join(bad)}; choose from warm, sharded, fresh")
    ids = (
        [w.id for w in catalog.workshops()]
        if args.workshops.strip() == "all"
        else [s.strip() for s in args.workshops.split(",") if s.strip()]
    )
    for i in ids:
        try:
            catalog.get(i)
        except KeyError as e:
            p.error(f"--workshops: {e}")
    try:  # the settings the controller reads: a bad one is a usage error naming it
        compile_workers()
        machine_pool_size()
    except SettingError as e:
        p.error(str(e))
    gpu = gpu_present()
    rows: list = []
    sizes: dict = {}
    t0 = time.monotonic()
    out = args.json or REPO / "results" / "local" / f"latency-{time.strftime('%Y%m%d-%H%M%S')}.json"

    def payload(done: bool) -> dict:
        return {
            "schema": "kernel-course/latency",
            "version": 3,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": "python -m tui.latency " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": {
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "gpu": gpu,
                "pool_size": sizes,  # per workshop, per path: check and compile workers
                "watcher": watch.BACKEND,
            },
            "settings": {
                "repeats": args.repeats,
                "paths": paths,
                "edit": args.edit,
                "watch_step_ms": watch.STEP_MS,
                "targets": TARGETS if gpu else TARGETS_INTERPRETED,
            },
            "complete": done,
            "workshops_done": sorted(sizes),
            "seconds": round(time.monotonic() - t0, 1),
            "summary": summarize(rows, gpu),
            "runs": rows,
        }

    with tempfile.TemporaryDirectory(prefix="latency-ws-") as d:
        for wid in ids:
            w = catalog.get(wid)
            got, sizes[wid] = measure(
                w,
                args.repeats,
                w.gpu and not gpu,
                args.timeout,
                Path(d) / wid,
                args.edit,
                args.pool,
                paths,
                args.benchmarks,
            )
            rows += got
            # after each workshop, so a run stopped at its time limit keeps what it measured
            write_json_atomic(out, payload(done=False))
            print(f"  {wid}: measured ({time.monotonic() - t0:.0f} s so far)", flush=True)
    final = payload(done=True)
    print_table(final["summary"])
    write_json_atomic(out, final)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
