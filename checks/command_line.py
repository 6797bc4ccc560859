"""What every command line of the course shares (``python -m checks``,
``python -m checks.benchmark``, ``python -m tui``): the exit codes, the exit code of a
run's records, and an argparse that exits 64 on a usage error.

Standard library only, plus the records it reads.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from checks.judging.records import Progress, progress_of

# Exit codes of `python -m checks` (a usage error is 64, not argparse's 2, which means TODO here).
EXIT_PASS, EXIT_WRONG, EXIT_TODO, EXIT_UNAVAILABLE, EXIT_USAGE = 0, 1, 2, 3, 64

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a reader that went away

# A run's time limit when none is given, as in the app: an infinite loop ends as a timeout.
DEFAULT_TIMEOUT = 120.0

EXIT_OF_PROGRESS = {
    Progress.PASSED: EXIT_PASS,
    Progress.FAILING: EXIT_WRONG,
    Progress.TODO: EXIT_TODO,
    Progress.UNAVAILABLE: EXIT_UNAVAILABLE,
}


def exit_code(records: list) -> int:
    """0 every runnable check passed; 1 anything wrong; 2 TODO and nothing wrong;
    3 nothing ran (nothing selected, all of it unavailable here, or never run)."""
    return EXIT_OF_PROGRESS[progress_of(records)]


class UsageParser(argparse.ArgumentParser):
    """argparse exits 2 on a bad argument, which means TODO in this course: exit 64."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def exit_quietly_on_broken_pipe(main: Callable[[], int]) -> int:
    """``main()``'s exit code; when the reader of stdout goes away first
    (``python -m checks --list | head``), exit 141 without a traceback.  stdout is
    pointed at devnull so that Python's own flush at exit cannot fail again."""
    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE
