"""``python -m tui`` / ``kernel-course``: the course's terminal app."""

from __future__ import annotations

import argparse
import os
import stat
import sys
import tempfile
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


def no_terminal_line(missing: str) -> str:
    """The refusal when ``missing`` (missing_terminal) is not '': one stream is not a
    terminal, or both are not terminals."""
    said = "are not terminals" if " and " in missing else "is not one"
    return (
        f"kernel-course: needs a terminal, and its {missing} {said} "
        "(python -m checks runs the checks without one)"
    )


def _tty(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # replaced, or closed
        return False


def unusable_folder(path: Path) -> str:
    """'' when ``path`` is a folder this user can create files in, or one that can be made
    (its nearest existing ancestor is a folder this user can write in; nothing is created
    here: the app makes it on its first save), else why not, in words."""
    probe = path
    while True:
        try:
            mode = probe.stat().st_mode
            break
        except (FileNotFoundError, NotADirectoryError):
            if probe.parent == probe:
                return "cannot be created (no folder above it exists)"
            probe = probe.parent
        except OSError as e:  # a loop of links, no permission to look
            return f"cannot be reached ({e.strerror or e})"
    if not stat.S_ISDIR(mode):
        if probe == path:
            return "is a file, not a folder" if stat.S_ISREG(mode) else "is not a folder"
        return f"cannot be created: {probe} is not a folder"
    try:  # root passes every permission check but a read-only file system: try it
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as e:
        if probe == path:
            return f"is a folder you cannot write in ({e.strerror or e})"
        return f"cannot be created in {probe} ({e.strerror or e})"
    return ""


def workspace_error(given: Path | None) -> str:
    """'' when the workspace (``--workspace``, else ``$KERNEL_COURSE_WORKSPACE``, else
    ``workspace/``) and the state folder beside it are folders the app can write in;
    else a usage error naming where the bad path came from, said before any screen opens;
    nothing is created here."""
    from checks import workspace as ws

    if given is not None:
        named, path = f"--workspace {given}", given.expanduser().resolve()
    elif os.environ.get("KERNEL_COURSE_WORKSPACE"):
        named = f"KERNEL_COURSE_WORKSPACE={os.environ['KERNEL_COURSE_WORKSPACE']}"
        path = ws.default_workspace()
    else:
        named, path = str(ws.default_workspace()), ws.default_workspace()
    why = unusable_folder(path)
    if why:
        return f"{named}: {why}"
    state = ws.state_dir(path)
    why = unusable_folder(state)
    return f"{named}: its state folder {state} {why}" if why else ""


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
    if args.export_dir is not None and args.export_dir.expanduser().exists():
        if not args.export_dir.expanduser().is_dir():
            parser.error(f"--export-dir {args.export_dir}: is not a folder")
    bad_workspace = workspace_error(args.workspace)
    if bad_workspace:
        parser.error(bad_workspace)
    missing = missing_terminal()  # bad arguments are named first
    if missing:
        print(no_terminal_line(missing), file=sys.stderr)
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
