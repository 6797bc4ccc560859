"""The command line of ``python -m checks.benchmark``: the plan of ops to run, the run
itself (ceilings, each op's runner, tables, targets) and the JSON it writes; its
arguments and their usage errors are arguments.py's.

Exit codes: 0 everything ran and passed; 1 a variant failed (wrong result, crash, load
error, a candidate whose answer is not its own kernel's); 2 a variant is still TODO and
nothing failed; 3 no CUDA GPU (or ``TRITON_INTERPRET=1``) or nothing to run; 64 a
usage error.  torch is imported only after the arguments are checked and a GPU found.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from checks import interpreter
from checks.benchmark import (
    ceilings as card_ceilings,
    evidence,
    row_text,
    specs,
    statistics,
    tables,
    targets,
)
from checks.benchmark.arguments import UsageError, build_parser, validate
from checks.benchmark.rows import ROW_LINE_TYPE, STATUSES, exit_code
from checks.command_line import EXIT_UNAVAILABLE, EXIT_USAGE
from checks.json_files import write_json_atomic

# Where inputs live and kernels run; the tests set "cpu" to drive the whole command
# with a fake spec and a fake timer.
DEVICE = "cuda"


def cuda_problem() -> Optional[str]:
    """Why timings cannot run here, or None."""
    if interpreter.active():
        return (
            "timings need a CUDA GPU: TRITON_INTERPRET=1 runs kernels in Triton's "
            "interpreter on the CPU, which has nothing worth timing; unset it on a GPU machine"
        )
    try:
        import torch
        import triton  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"timings need a CUDA GPU with torch and triton ({type(e).__name__}: {e})"
    if not torch.cuda.is_available():
        return (
            "timings need a CUDA GPU, and none is available here (torch.cuda.is_available() "
            "is False); check correctness with `python -m checks <op> --interpret` instead"
        )
    return None


def load_spec(op: str):
    """The op's spec module (the tests replace this)."""
    return specs.load_spec(op)


def target_file(op: str, args) -> Path:
    from workshops import catalog

    if args.file is not None:
        return args.file
    w = catalog.get(op)
    if args.solution:
        return w.solution
    from checks import workspace

    return workspace.ensure_exercise(w, args.workspace)


def default_output(op: str, timing: str, cache: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    mode = timing + ("-cold" if cache == "cold" else "")
    return evidence.REPO / "results" / "local" / f"{op}-{mode}-{stamp}.json"


def cmd_list() -> int:
    for op in specs.benchmarked_ops():
        problem = specs.spec_problem(op, load_spec)
        if problem:
            print(f"{op}: {problem}")
            continue
        spec = load_spec(op)
        print(f"{op}: dtypes {', '.join(spec.DTYPES)} (default {spec.DTYPES[0]})")
        for s in spec.SHAPES:
            params = ", ".join(f"{k}={v}" for k, v in s.items() if k not in ("name", "role"))
            print(f"    {s['role']:<10} {s['name']:<18} {params}")
    return 0


def plan_ops(args) -> tuple:
    """([(op, spec, dtypes, path)], notes): what this run will measure, and why an op
    is left out."""
    ops = specs.benchmarked_ops() if args.op == "all" else [args.op]
    notes, plan = [], []
    for op in ops:
        problem = specs.spec_problem(op, load_spec)
        if problem is None:
            spec = load_spec(op)
            if args.dtype in (None, "all"):
                dtypes = list(spec.DTYPES[:1] if args.dtype is None else spec.DTYPES)
            elif args.dtype in spec.DTYPES:
                dtypes = [args.dtype]
            else:
                if args.op != "all":
                    raise UsageError(
                        f"--dtype: {op} is benchmarked in {', '.join(spec.DTYPES)}, not {args.dtype}"
                    )
                problem = f"not benchmarked in {args.dtype}"
        if problem is None:
            try:
                path = target_file(op, args)
            except KeyError:
                problem = "its workshop is not in the catalog yet"
        if problem is not None:
            notes.append(f"{op}: skipped, {problem}")
            print(f"{op}: skipped, {problem}")
            continue
        plan.append((op, spec, dtypes, Path(path)))
    return plan, notes


def _allowed_ops(op: str) -> tuple:
    from workshops import catalog

    try:
        return tuple(getattr(catalog.get(op), "allowed_torch_ops", ()) or ())
    except KeyError:
        return ()


def row_line(row: dict) -> str:
    """One row as the single JSON line ``--stream-rows`` writes."""
    return json.dumps({"type": ROW_LINE_TYPE, "row": evidence.clean(row)}, default=str, allow_nan=False)


def row_writer(target: Optional[str]) -> Optional[Callable[[dict], None]]:
    """``--stream-rows``: a callback writing each row's line to stdout ("-", the stdout of
    this moment) or appending it to the file ``target``; None without the option."""
    if target is None:
        return None
    if target == "-":
        stream = sys.stdout

        def to_stdout(row: dict) -> None:
            stream.write(row_line(row) + "\n")
            stream.flush()

        return to_stdout

    def to_file(row: dict) -> None:
        with open(target, "a", encoding="utf-8") as f:
            f.write(row_line(row) + "\n")

    return to_file


def run(args, argv: list, on_row: Optional[Callable[[dict], None]] = None) -> int:
    import torch

    from checks.benchmark import kernels, timing
    from checks.benchmark.runner import run_op
    from checks.judging.engine import LoadError, load_exercise

    t_start = time.perf_counter()
    sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)
    plan, notes = plan_ops(args)
    if not plan:
        print("nothing to run")
        return EXIT_UNAVAILABLE

    output = args.output or default_output(args.op, args.timing, args.cache)
    target = "file" if args.file else ("solution" if args.solution else "learner")
    timers, method = timing.make_timers(args.timing, args.cache, args.quick, cap_s=args.cap_s)
    env = timing.environment()
    print(
        f"{env['gpu_name']} ({env['sm_count']} SMs), torch {env['torch']}, triton "
        f"{env['triton']}; timing {args.timing}, cache {args.cache}"
        f"{', quick' if args.quick else ''}; target {target}"
    )
    ceilings = _ceilings(args, env, lambda: timing.measure_ceilings(args.quick))
    inspect_kernels = kernels.capture_kernels if DEVICE == "cuda" else None

    all_rows, hashed = [], evidence.engine_files()
    for op, spec, dtypes, path in plan:
        print(f"\n{op}: {evidence.rel_path(path)} ({', '.join(dtypes)}; shapes {args.shapes})")
        hashed += [path, Path(spec.__file__)]
        load_error, mod = None, None
        try:
            mod = load_exercise(path)
        except LoadError as e:
            load_error = str(e)
        rows = run_op(
            op,
            spec,
            mod,
            path,
            dtypes=dtypes,
            shapes=args.shapes,
            sweep=args.variants == "all",
            timers=timers,
            ceilings=ceilings,
            device=DEVICE,
            sync=sync,
            log=lambda s: print(s, flush=True),
            load_error=load_error,
            learner=not args.solution,
            allowed_ops=_allowed_ops(op),
            inspect_kernels=inspect_kernels,
            l2_bytes=env.get("l2_bytes"),
            cache=args.cache,
            aa=args.aa,
            on_row=on_row,
        )
        tables.print_table(f"{op} ({args.timing} timing, {args.cache} L2)", rows)
        all_rows += rows

    defs = {op: targets.definitions(spec) for op, spec, _, _ in plan}
    verdicts = (
        targets.evaluate_targets(all_rows, args.timing, defs, str(env.get("gpu_name") or ""))
        if args.solution
        else []
    )
    payload = evidence.build_payload(
        command=["python", "-m", "checks.benchmark", *argv],
        timing=args.timing,
        cache=args.cache,
        target=target,
        environment=env,
        hashes=evidence.source_hashes(hashed),
        ceilings=ceilings,
        results=all_rows,
        targets=verdicts,
        method=method,
        quick=args.quick,
        commit=evidence.git_commit(),
        notes=notes,
        tolerance_scales={op: specs.tolerance_scale(spec) for op, spec, _, _ in plan},
    )
    harness = statistics.harness_summary(all_rows)
    aa = statistics.aa_summary(all_rows) if args.aa else None
    payload.update(evidence.clean({"harness": harness, "aa": aa}))
    write_json_atomic(output, payload)
    print()
    tables.print_targets(verdicts)
    for line in harness_lines(harness) + aa_lines(aa):
        print(line)
    counts = {s: sum(r["status"] == s for r in all_rows) for s in STATUSES}
    refused = sum(r.get("refused") is not None for r in all_rows)
    print(
        f"{counts['ok']} variants timed; {counts['failed']} failed"
        + (f" ({refused} refused: {_refusals(all_rows)})" if refused else "")
        + f"; {counts['todo']} TODO. ({time.perf_counter() - t_start:.0f} s)"
    )
    print(f"results written to {output}")
    return exit_code(all_rows)


def main(argv: Optional[list] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    on_row = row_writer(args.stream_rows)
    # rows on stdout: the text report goes to stderr
    report_to = (
        contextlib.redirect_stdout(sys.stderr) if args.stream_rows == "-" else contextlib.nullcontext()
    )
    try:
        with report_to:
            validate(args)
            if args.list:
                return cmd_list()
            problem = cuda_problem()
            if problem:
                print(f"python -m checks.benchmark: {problem}")
                print("nothing was timed or written")
                print_readings(args)
                return EXIT_UNAVAILABLE
            code = run(args, argv, on_row)
            if args.reading:
                print_readings(args)
            return code
    except UsageError as e:
        print(f"python -m checks.benchmark: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def print_readings(args) -> None:
    """Without a GPU: each op's performance reading (python -m checks.performance, in a
    child that runs the interpreter), predicted for the H200 instead of timed."""
    import subprocess

    from checks import interpreter

    ops = specs.benchmarked_ops() if args.op == "all" else [args.op]
    print("performance readings instead (interpreter accesses and an sm_90 compile, no GPU needed):")
    for op in ops:
        path = target_file(op, args)
        done = subprocess.run(
            [sys.executable, "-m", "checks.performance", op, "--file", str(path), "--all-variants"],
            capture_output=True,
            text=True,
            env=interpreter.interpreter_env(True),
        )
        print((done.stdout + (done.stderr[-600:] if done.returncode else "")).rstrip())


def _refusals(rows: list) -> str:
    """How many rows each refusal named, e.g. "1 not-own-kernel, 2 skips-work"."""
    named: dict = {}
    for r in rows:
        if r.get("refused"):
            named[r["refused"]] = named.get(r["refused"], 0) + 1
    return ", ".join(f"{n} {why}" for why, n in sorted(named.items()))


def _ceilings(args: argparse.Namespace, env: dict, measure: Callable[[], dict]) -> dict:
    """The card's ceilings: kept from an earlier run on this card, or measured now."""
    path = args.ceilings or card_ceilings.default_path(args.workspace)

    def measuring() -> dict:
        print("measuring ceilings (1 GiB device copy, bf16 8192^3 matmul)...")
        return measure()

    c = card_ceilings.ceilings_for(path, env, measuring, quick=args.quick, remeasure=args.remeasure_ceilings)
    where = (
        f"kept from {c.get('measured_at')}, {path}; --remeasure-ceilings measures them again"
        if c.get("cached")
        else f"measured now; kept in {path}"
        if "cache_error" not in c and not c.get("errors")
        else "measured now"
    )
    print(
        f"  ceilings: copy {row_text.num(c['copy_gbps'], '.0f')} GB/s; bf16 matmul "
        f"{row_text.num(c['bf16_matmul_tflops'], '.0f')} TFLOP/s ({where})"
        + (f"; errors: {c['errors']}" if c.get("errors") else "")
        + (f"; not kept: {c['cache_error']}" if c.get("cache_error") else "")
    )
    return c


def harness_lines(harness: Optional[dict]) -> list:
    if not harness:
        return []
    return [
        f"harness cost per call (an empty candidate, same input rotation): median "
        f"{harness['median_us']:.2f} us ({harness['min_us']:.2f}-{harness['max_us']:.2f} over "
        f"{harness['n']} rows), taken off every per-call time"
    ]


def aa_lines(aa: Optional[dict]) -> list:
    if aa is None:
        return []
    out = ["A/A (every variant timed twice): how far the two timings disagree"]
    for kind, said in (("device", "device time"), ("per_call", "per-call time")):
        d = aa.get(kind) or {}
        if not d.get("n"):
            out.append(f"  {said}: not measured")
            continue
        out.append(
            f"  {said}: median {d['median']:.1%}, 90th percentile {d['p90']:.1%}, "
            f"worst {d['worst']:.1%} ({d['n']} rows)"
        )
    return out
