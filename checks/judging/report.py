"""Human-readable printout of check records: Rich when it is importable and stdout is a
terminal, plain text otherwise (``python -S`` has no Rich, and plain text pipes well).
"""

from __future__ import annotations

import os
import sys

from checks.judging.records import Status

STYLE = {
    Status.PASS: "green",
    Status.FAIL: "red",
    Status.TODO: "yellow",
    Status.ERROR: "bold red",
    Status.SKIPPED: "dim",
    Status.NOT_RUN: "dim",
}


def _rich_console():
    if os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        return None
    try:
        from rich.console import Console
    except ImportError:
        return None
    return Console(highlight=False)


MARK_W = max(len(s.word) for s in Status)  # "NOT RUN": every row's id starts in one column


class Printer:
    def __init__(self, verbose: bool = False):
        self.verbose = verbose
        self.console = _rich_console()

    def line(self, text: str = "", style: str = "") -> None:
        if self.console is not None:
            self.console.print(text, style=style or None, markup=False)
        else:
            print(text, flush=True)

    def heading(self, text: str) -> None:
        self.line(text, "bold")

    def record(self, rec, change: str = "") -> None:
        mark = Status(rec.status).word
        tag = f" [{change}]" if change else ""
        self.line(
            f"  {mark:<{MARK_W}} {rec.id:<28} {rec.label}  ({rec.seconds:.2f}s){tag}", STYLE[rec.status]
        )
        if rec.status != "pass" and rec.message:
            for msg_line in rec.message.splitlines()[: (60 if self.verbose else 8)]:
                self.line(f"        {msg_line}")
            m = rec.details.get("map") if isinstance(rec.details, dict) else None
            if m:
                self.line("        where it is wrong (rows down, columns across; # = wrong):")
                for row in m:
                    self.line(f"          {row}")
        if self.verbose and isinstance(rec.details, dict) and rec.details.get("traceback"):
            for tb_line in rec.details["traceback"].splitlines():
                self.line(f"        {tb_line}", "dim")
