"""``python -m checks``: run a workshop's named checks from the shell.

Exit codes: 0 every selected check that can run here passed;
1 a wrong answer or a load error; 2 TODO and nothing wrong; 3 nothing selected or
dependencies unavailable; 64 a usage error; 141 the reader of stdout went away.

Standard library only at import time, so ``python -S -m checks online_normalizer``
works from the repository root.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
from pathlib import Path

from checks import arguments
from checks.arguments import UsageError, left_out, left_out_workshops, select_workshops, validate
from checks.command_line import (
    DEFAULT_TIMEOUT,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    exit_code,
    exit_quietly_on_broken_pipe,
)
from checks.json_files import run_header, write_json_atomic
from checks.judging.properties import separating as separating_property
from checks.judging.records import (
    STATUSES,
    Record,
    change_since,
    outcome_line,
    outcome_of,
    plural,
    progress_of,
    ran_any,
    summary_line,
)
from checks.judging.report import Printer
from workshops import catalog


def build_parser() -> argparse.ArgumentParser:
    """The parser (checks.arguments), described by this module's first paragraph."""
    return arguments.build_parser(__doc__.split("\n\n")[0])


def _target(w, args) -> Path:
    from checks import workspace

    if args.file is not None:
        return args.file
    if args.solution:
        return w.solution
    return workspace.ensure_exercise(w, args.workspace)


def cmd_list(args, out: Printer) -> int:
    """Each workshop with the ids of its checks (what --check takes); a named workshop
    lists only its own."""
    from checks.judging.engine import cases_for

    chosen = None
    if args.exercise not in (None, "all"):
        chosen = select_workshops(args)[0]
    for level in ("intermediate", "advanced"):
        if args.level not in ("all", level) or (chosen is not None and chosen.level != level):
            continue
        out.heading(level.capitalize())
        for w in catalog.workshops():
            if w.level != level or (chosen is not None and w.id != chosen.id):
                continue
            out.line(f"  {w.code}  {w.id:<20} {w.title:<26} {w.device}  sessions {w.sessions}")
            out.line(f"      prerequisite: {w.prerequisite}; deliverable: {w.deliverable}")
            try:
                cases = cases_for(w.id)
            except ImportError as e:
                out.line(f"      (its checks cannot be listed here: they need {e.name})")
                continue
            out.line(f"      {plural(len(cases), 'check')} (--check ID):")
            for c in cases:
                out.line(f"        {c.id:<28} {c.label}")
    return 0


def cmd_hint(w, args, out: Printer) -> int:
    hints = w.hints
    if not hints:
        out.line(f"{w.id} has no hints yet")
        return EXIT_UNAVAILABLE
    if args.hints:
        chosen = list(range(1, len(hints) + 1))
    else:
        if not 1 <= args.hint <= len(hints):
            raise UsageError(f"--hint: {w.id} has hints 1 to {len(hints)}, not {args.hint}")
        chosen = [args.hint]
    for n in chosen:
        out.line(hints[n - 1])
        out.line()
    if not args.hints and args.hint < len(hints):
        out.line(f"(hint {args.hint} of {len(hints)}; next: --hint {args.hint + 1})")
    return 0


def _previous(json_records: dict, w_id: str) -> dict:
    return {r["id"]: r["status"] for r in json_records.get(w_id, [])}


def _no_cuda_gpu() -> bool:
    """True when torch imports but sees no CUDA GPU.  Asks torch only: triton must not
    be imported before the interpreter is chosen (it reads TRITON_INTERPRET when a
    kernel is decorated)."""
    try:
        import torch
    except Exception:  # noqa: BLE001 - the engine reports a missing torch plainly
        return False
    return not torch.cuda.is_available()


def interpret_without_a_gpu(args, selected: list, out: Printer) -> None:
    """GPU workshops on a machine without a CUDA GPU run in Triton's interpreter, as the
    app does (one notice, not one per check); ``--no-interpret`` refuses instead."""
    if any(w.gpu for w in selected) and not args.interpret and not args.no_interpret and _no_cuda_gpu():
        args.interpret = True
        out.line(
            "No CUDA GPU here: the GPU workshops run in Triton's interpreter on the CPU "
            "(correct but slow, not timed; checks that need a GPU are skipped). "
            "--no-interpret refuses instead."
        )


def _shown(path: Path) -> str:
    """A path as the learner would type it: relative to the current folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _run_one(w, path, args, show) -> list:
    """The records of one workshop's checks: in a child process stopped after
    ``--timeout`` seconds (a hang names the line it was stuck on), or here with no limit."""
    try:
        if args.timeout:
            from checks.running.child import ChildRun, Worker
            from checks.running.events import RecordEvent

            # On a GPU the worker must preload as the app's does (a CPU run's address-space
            # cap would starve CUDA); elsewhere nothing to warm: the run imports what it needs.
            worker = Worker(preload="gpu" if (w.gpu and not args.interpret) else "none")
            runner = ChildRun(
                w.id, path, interpret=args.interpret, only=args.check, timeout=args.timeout, worker=worker
            )
            records = []
            try:
                for ev in runner.events():
                    if isinstance(ev, RecordEvent):
                        records.append(ev.record)
                        show(ev.record)
            except BaseException:
                runner.cancel()  # an interrupt or a closed pipe must not leave the worker running
                raise
            if runner.outcome == "usage":
                raise UsageError(runner.usage_error)
            return records
        from checks.judging.engine import run_checks

        return run_checks(w.id, path, interpret=args.interpret, only=args.check, on_record=show)
    except KeyError as e:
        raise UsageError(str(e).strip("'\"")) from None


def _save_progress(w, path, records, mode, args, out: Printer) -> bool:
    """Record the workshop's standing in the progress file; True when saved."""
    from checks import workspace

    status = str(progress_of(records))
    h = workspace.content_hash(Path(path).read_bytes()) if Path(path).exists() else ""
    try:
        workspace.record_progress(
            w.id,
            status,
            h,
            args.workspace,
            note=f"{mode}; {summary_line(records)}",
            warn=lambda msg: out.line(f"  ({msg})"),
        )
        workspace.record_result(
            w.id, status, sum(r.status == "pass" for r in records), len(records), h, args.workspace
        )
    except (OSError, TimeoutError) as e:
        out.line(f"  (progress not saved: {e})")
        return False
    return True


def run(args, out: Printer) -> int:
    from checks import workspace

    selected = select_workshops(args)
    validate(args, selected)
    interpret_without_a_gpu(args, selected, out)
    if args.interpret:
        from checks import interpreter

        interpreter.select(True)  # before anything imports triton
    if not selected:
        out.line("Nothing selected.")
        out.line(left_out(args) or "No workshop matches.")
        out.line(summary_line([]))
        return EXIT_UNAVAILABLE

    all_records: list = []
    home = args.workspace or workspace.default_workspace()
    previous = workspace.load_last_run(home)  # the command line's last run or the app's
    records_progress = not (args.solution or args.file or args.check)
    changes_total = []
    repairs: dict = {}
    for w in selected:
        path = _target(w, args)
        mode = "interpreter" if (w.gpu and args.interpret) else ("GPU" if w.gpu else "CPU")
        out.heading(f"{w.code} {w.title} [{w.id}] - {path} ({mode})")
        out.begin(lesson=_shown(w.folder / "lesson.md"))
        before = _previous(previous, w.id) if records_progress else {}
        changes = []

        def show(rec: Record):
            change = change_since(before.get(rec.id), rec.status)
            if change:
                changes.append((rec.id, change))
            out.record(rec, change)

        records = _run_one(w, path, args, show)
        out.finish()
        separated = separating_property(records)
        if separated:  # what the failing checks share and the passing ones lack
            out.line(f"  {separated}", "bold")
        if records_progress:
            if not ran_any(records):
                out.line("  (no check could run here: your progress is left as it was)")
            elif _save_progress(w, path, records, mode, args, out):
                try:
                    workspace.record_last_run(home, w.id, records)
                except OSError:
                    pass
        changes_total += [(w.id, i, c) for i, c in changes]
        all_records += records
        if args.perf and w.gpu:
            _perf(w, path, records, out)
        if args.repair and exit_code([r for r in records if r.status in ("fail", "error")]) != 0:
            repairs[w.id] = _repair(w, path, records, args, out)

    out.line()
    if changes_total:
        out.line("Changed since the last run: " + changed_text(changes_total, several=len(selected) > 1))
    code = exit_code(all_records)
    line = outcome_line(all_records)
    out.line(line[0].upper() + line[1:] + ".", "bold")
    out.line(summary_line(all_records))
    if left_out(args):
        out.line(left_out(args))
    if args.json:
        payload = {
            **run_header("", code, args.interpret),
            "outcome": str(outcome_of(all_records)),
            "outcome_line": line,
            "summary": summary_line(all_records),
            "counts": {s: sum(r.status == s for r in all_records) for s in STATUSES},
            "timeout_seconds": args.timeout or None,
            "seed": all_records[0].seed if all_records else 0,
            "records": [r.to_dict() for r in all_records],
            "left_out": [w.id for w in left_out_workshops(args)],
        }
        if args.repair:
            payload["repairs"] = repairs
        write_json_atomic(args.json, payload)
        out.line(f"records written to {args.json}")
    return code


def _repair(w, path, records, args, out: Printer) -> dict:
    """The smallest verified change of a failing file, searched in worker processes."""
    from checks.repair.__main__ import print_repair
    from checks.repair.search import find_repair

    out.line("  Looking for the smallest change that makes every check pass ...")
    repair = find_repair(
        w.id,
        path,
        interpret=bool(w.gpu and args.interpret),
        records=[r.to_dict() for r in records],
        budget=args.repair_budget,
        seed=args.seed,
    )
    text = io.StringIO()
    print_repair(repair, text)
    for line in text.getvalue().splitlines():
        out.line("  " + line, "bold" if repair["status"] == "found" and line.startswith("  line") else "")
    return repair


def _perf(w, path, records, out: Printer) -> None:
    """The performance reading of a passing answer, from a child in the interpreter."""
    import subprocess

    from checks import interpreter

    if exit_code(records) != 0:
        out.line("  (--perf reads a passing answer: fix the failing checks first)")
        return
    done = subprocess.run(
        [sys.executable, "-m", "checks.performance", w.id, "--file", str(path)],
        capture_output=True,
        text=True,
        env=interpreter.interpreter_env(True),
    )
    for line in (done.stdout + (done.stderr if done.returncode else "")).splitlines():
        out.line("  " + line)


def changed_text(changes: list, several: bool, shown: int = 4) -> str:
    """'3 newly passing (a, b, c); 1 newly failing (d)': counts by kind, a few ids each
    (workshop-qualified only when the run covered several workshops)."""
    parts = []
    for kind in ("newly failing", "newly passing"):
        ids = [f"{w}:{i}" if several else i for w, i, c in changes if c == kind]
        if ids:
            more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
            parts.append(f"{len(ids)} {kind} ({', '.join(ids[:shown])}{more})")
    return "; ".join(parts)


def workshop_named_for_help(argv: list):
    """The workshop ``--help`` (or ``-h``) follows in ``argv`` (``python -m checks
    softmax_backward --help``), or None for the command's own help."""
    if not {"-h", "--help"} & set(argv[: argv.index("--")] if "--" in argv else argv):
        return None
    rest = [a for a in argv if a not in ("-h", "--help")]
    try:
        args, _ = build_parser().parse_known_args(rest)
    except SystemExit:  # a usage error among the rest: the command's own help
        return None
    if args.exercise in (None, "all"):
        return None
    try:
        return catalog.get(args.exercise)
    except KeyError:
        return None


def cmd_workshop_help(w) -> int:
    """One workshop's help: its name, what it asks, its checks (the ids --check takes)
    and the command's options."""
    from checks.judging.engine import cases_for

    lines = [
        f"{w.code} {w.title} [{w.id}]: {w.level}, {w.device}, sessions {w.sessions}",
        f"  prerequisite: {w.prerequisite}; deliverable: {w.deliverable}",
        "",
    ]
    try:
        cases = cases_for(w.id)
        lines.append(f"{plural(len(cases), 'check')} (run one with --check ID):")
        lines += [f"  {c.id:<28} {c.label}" for c in cases]
    except ImportError as e:
        lines.append(f"its checks cannot be listed here: they need {e.name}")
    p = build_parser()
    p.usage = f"python -m checks {w.id} [options]"
    p.description = "\n".join(lines)
    p.print_help()
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "regrade":
        from checks.regrade.cli import main as regrade_main

        return regrade_main(argv[1:])
    helped = workshop_named_for_help(argv)
    if helped is not None:
        return cmd_workshop_help(helped)
    args = build_parser().parse_args(argv)
    out = Printer(verbose=args.verbose)
    try:
        if args.timeout is None and not args.self_check:
            args.timeout = DEFAULT_TIMEOUT  # the self-check keeps its own, longer limit
        if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout >= 0):
            raise UsageError(f"--timeout: must be a number of seconds (0: no limit), not {args.timeout:g}")
        if args.seed is not None:
            from checks.judging.case import SEED_ENV, parse_seed

            try:
                os.environ[SEED_ENV] = str(parse_seed(args.seed))  # child processes inherit it
            except ValueError as e:
                raise UsageError(str(e)) from None
        if args.doctor:
            from checks import doctor

            return doctor.report(out)
        if args.list:
            return cmd_list(args, out)
        if args.self_check:
            from checks.authoring import self_check

            selected = select_workshops(args)
            interpret_without_a_gpu(args, selected, out)  # as a run of one file does
            code = self_check(selected, args, out)
            if left_out(args):
                out.line(left_out(args))
            return code
        if args.sanitize:
            from checks.sanitizer import run_sanitized

            return run_sanitized(list(sys.argv[1:] if argv is None else argv), out)
        if args.hint is not None or args.hints or args.explain or args.reset or args.where:
            w = select_workshops(args)
            if args.exercise == "all" or len(w) != 1:
                raise UsageError("--hint/--explain/--reset/--where need one named workshop")
            w = w[0]
            if args.where:
                from checks import workspace

                out.line(str(workspace.ensure_exercise(w, args.workspace)))
                return 0
            if args.reset:
                from checks import workspace

                path, saved = workspace.reset(w, args.workspace)
                out.line(
                    f"restored the starter into {path}"
                    + (f"; your previous file is kept at {saved}" if saved else "")
                )
                return 0
            if args.explain:
                out.line(w.explanation or f"{w.id} has no explanation yet")
                return 0
            return cmd_hint(w, args, out)
        return run(args, out)
    except UsageError as e:
        print(f"python -m checks: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(exit_quietly_on_broken_pipe(main))
