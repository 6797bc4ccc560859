"""``python -m tui`` / ``kernel-course``: the course's terminal app."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from checks.command_line import EXIT_USAGE as USAGE_ERROR, UsageParser


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(
        prog="kernel-course",
        description="Browse the Triton kernel workshops, read the lessons "
        "and watch your file's checks re-run on every save.",
    )
    p.add_argument(
        "--workspace",
        type=Path,
        metavar="DIR",
        help="folder of your exercise files (default: workspace/ in the repository, "
        "or $KERNEL_COURSE_WORKSPACE)",
    )
    p.add_argument(
        "--open",
        metavar="WORKSHOP",
        dest="open_workshop",
        help="go straight to one workshop (id or code, e.g. online_normalizer or A1)",
    )
    p.add_argument(
        "--poll",
        action="store_true",
        help="poll for file changes (for file systems that send no events: network "
        "drives, some WSL and container mounts)",
    )
    p.add_argument("--no-bench", action="store_true", help="start with benchmarks off (b toggles)")
    p.add_argument(
        "--export-dir",
        type=Path,
        metavar="DIR",
        help="folder for exported results (default: exports/ in the state folder "
        "beside the workspace, .<workspace>-state/exports)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time limit of one check run (default 120)",
    )
    return p


NO_TERMINAL = 2  # the app draws on a terminal and reads its keys: without one it cannot run


def missing_terminal() -> str:
    """'' when standard input and output are both a terminal, else what is not."""
    missing = [name for name, stream in (("input", sys.stdin), ("output", sys.stdout)) if not _tty(stream)]
    return " and ".join(f"standard {name}" for name in missing)


def _tty(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # replaced, or closed
        return False


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.timeout is not None and not args.timeout > 0:
        parser.error("--timeout: must be a positive number of seconds")
    from checks.running import SettingError, compile_workers, pool_size

    try:  # read again by every workshop screen: a bad value is an error here, named
        compile_workers()
        pool_size()
    except SettingError as e:
        parser.error(str(e))
    from workshops import catalog

    if args.open_workshop:
        try:
            catalog.get(args.open_workshop)
        except KeyError as e:
            print(f"kernel-course: {str(e).strip(chr(39) + chr(34))}", file=sys.stderr)
            return USAGE_ERROR
    missing = missing_terminal()  # bad arguments are named first
    if missing:
        print(
            f"kernel-course: needs a terminal, and its {missing} is not one "
            "(python -m checks runs the checks without one)",
            file=sys.stderr,
        )
        return NO_TERMINAL
    from tui.app import DEFAULT_TIMEOUT, CourseApp

    app = CourseApp(
        workspace=args.workspace,
        open_workshop=args.open_workshop,
        poll=args.poll,
        bench=not args.no_bench,
        results_dir=args.export_dir,
        check_timeout=args.timeout or DEFAULT_TIMEOUT,
    )
    app.run()
    return app.return_code or 0  # 1 after an unhandled error (Textual prints it)


if __name__ == "__main__":
    sys.exit(main())
