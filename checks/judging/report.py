"""Human-readable printout of check records: Rich when it is importable and stdout is a
terminal, plain text otherwise (``python -S`` has no Rich, and plain text pipes well).

What a workshop's records read like: one row per check; under the first failing check
everything it says (its message, where the run was stuck, the map of wrong elements and
its scale, where to look, why it matters, the lesson section); one line under each other
check that did not pass; a failure that says what the one above it said points there
("(the same message as bf16-beyond-fp16)"), one whose diagnosis was said above names the
check it was said under and gives only its own facts ("(the same diagnosis as worked-merge)
..."); and a run of TODOs or skips that say the same thing ends with one line that says it
with a count ("26 checks: TODO: ...").
"""

from __future__ import annotations

import linecache
import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Optional

from checks.judging.records import Status, plural

STYLE = {
    Status.PASS: "green",
    Status.FAIL: "red",
    Status.TODO: "yellow",
    Status.ERROR: "bold red",
    Status.SKIPPED: "dim",
    Status.NOT_RUN: "dim",
}

INDENT = " " * 8  # under a row's status word
FAILING = (Status.FAIL, Status.ERROR)
MESSAGE_LINES = 40  # of the first failure's message, without --verbose


def _rich_console():
    if os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        return None
    try:
        from rich.console import Console
    except ImportError:
        return None
    return Console(highlight=False)


MARK_W = max(len(s.word) for s in Status)  # "NOT RUN": every row's id starts in one column


def _per(n: int, cells: int) -> str:
    """'5' when ``n`` splits into ``cells`` equal bands, else 'about 5.3'."""
    if n % cells == 0:
        return str(n // cells)
    share = n / cells
    return f"about {share:.1f}" if share < 10 else f"about {share:.0f}"


def scale_text(scale: dict) -> str:
    """What one line and one character of an error map stand for, from the facts of
    checks/judging/tensors.py ``map_scale``: 'a 40 x 128 output: each of the 8 map lines
    covers 5 rows; each character 4 columns'."""
    rows, cols, lines, chars = (int(scale[k]) for k in ("rows", "cols", "lines", "chars"))
    if lines == rows:
        down = "each map line is one row"
    else:
        down = f"each of the {lines} map lines covers {_per(rows, lines)} rows"
    across = (
        "each character is one column" if chars == cols else f"each character {_per(cols, chars)} columns"
    )
    return f"a {rows} x {cols} output: {down}; {across}"


def first_line(message: str) -> str:
    lines = (message or "").strip().splitlines()
    return lines[0] if lines else ""


def _details(rec) -> dict:
    return rec.details if isinstance(rec.details, dict) else {}


class Printer:
    def __init__(self, verbose: bool = False):
        self.verbose = verbose
        self.console = _rich_console()
        self.width = min(shutil.get_terminal_size((100, 24)).columns, 100)
        self.lesson = ""
        self._failure_shown = False
        # The run of records that say the same thing: (status, first line), how many, and
        # whether its message is already printed (under a failure shown in full).
        self._run_key: Optional[tuple] = None
        self._run_count = 0
        self._run_said = False
        self._run_first = ""  # the id of its first record
        self._diagnosed: dict = {}  # a diagnosis (a kept mistake's sentence) said: the id it was said under

    def line(self, text: str = "", style: str = "") -> None:
        if self.console is not None:
            self.console.print(text, style=style or None, markup=False)
        else:
            print(text, flush=True)

    def heading(self, text: str) -> None:
        self.line(text, "bold")

    def begin(self, lesson: str = "") -> None:
        """A workshop's records start: its first failure is shown in full.  ``lesson``:
        the lesson file its sections are in."""
        self.finish()
        self.lesson = lesson
        self._failure_shown = False
        self._diagnosed = {}

    def finish(self) -> None:
        """The workshop's records are over: say what the last run of them said."""
        key, n, said = self._run_key, self._run_count, self._run_said
        self._run_key, self._run_count, self._run_said = None, 0, False
        if key is None or said:  # a failure's message was said under its first row
            return
        status, message = key
        if n == 1:
            self.line(INDENT + message)
            return
        word = "" if message.lower().startswith(status.value) else f"{status.word}: "
        self.line(f"{INDENT}{plural(n, 'check')}: {word}{message}")

    def record(self, rec, change: str = "") -> None:
        status = Status(rec.status)
        full = status in FAILING and (self.verbose or not self._failure_shown)
        key = (status, first_line(rec.message)) if status != Status.PASS and rec.message else None
        if key is None or full or key != self._run_key:
            self.finish()
        tag = f" [{change}]" if change else ""
        self.line(
            f"  {status.word:<{MARK_W}} {rec.id:<28} {rec.label}  ({rec.seconds:.2f}s){tag}", STYLE[status]
        )
        if full:
            self._failure_shown = True
            self._story(rec)
        if key is not None:
            if key != self._run_key:
                # A failure's line is said at once (the next check may take a while); a
                # TODO's, a skip's or a not-run's when its run of identical ones ends.
                said = full or status in FAILING
                if said and not full:
                    self.line(INDENT + self._once(rec, key[1]))
                elif full:
                    self._once(rec, key[1])
                self._run_key, self._run_count, self._run_said = key, 0, said
                self._run_first = rec.id
            elif self._run_said:
                self.line(f"{INDENT}(the same message as {self._run_first})", "dim")
            self._run_count += 1
        if self.verbose and _details(rec).get("traceback"):
            self.finish()
            for tb_line in _details(rec)["traceback"].splitlines():
                self.line(f"{INDENT}{tb_line}", "dim")

    def _once(self, rec, line: str) -> str:
        """A failure's first line, its diagnosis said once per workshop: after the first
        check it was said under, a reference to that check and the facts that follow it."""
        mistake = _details(rec).get("mistake")
        sentence = str(mistake.get("sentence") or "") if isinstance(mistake, dict) else ""
        if not sentence or not line.startswith(sentence):
            return line
        if sentence not in self._diagnosed:
            self._diagnosed[sentence] = rec.id
            return line
        facts = line[len(sentence) :].removeprefix(" — ").strip()
        return f"(the same diagnosis as {self._diagnosed[sentence]})" + (f" {facts}" if facts else "")

    def _wrapped(self, label: str, text: str) -> None:
        for out in textwrap.wrap(
            " ".join(text.split()),
            width=max(self.width, 60),
            initial_indent=INDENT + label,
            subsequent_indent=INDENT + "  ",
        ):
            self.line(out)

    def _story(self, rec) -> None:
        """Everything a failing record says: the diagnosis and its why."""
        d = _details(rec)
        lines = (rec.message or "").rstrip().splitlines()
        shown = lines if self.verbose else lines[:MESSAGE_LINES]
        for msg_line in shown:
            self.line(INDENT + msg_line)
        if len(shown) < len(lines):
            self.line(f"{INDENT}({plural(len(lines) - len(shown), 'more line')}: --verbose shows them)")
        stuck = d.get("stuck_at")
        if isinstance(stuck, dict) and stuck.get("file") and stuck.get("line"):
            source = linecache.getline(str(stuck["file"]), int(stuck["line"])).rstrip()
            if source.strip():  # the line itself, as the editor shows it
                self.line(f"{INDENT}{Path(str(stuck['file'])).name}:{stuck['line']} | {source}")
        if d.get("map"):
            self.line(f"{INDENT}Where it is wrong (rows down, columns across; # = wrong, . = right):")
            if isinstance(d.get("map_scale"), dict):
                self.line(f"{INDENT}({scale_text(d['map_scale'])})")
            for row in d["map"]:
                self.line(f"{INDENT}  {row}")
        mistake = d.get("mistake")
        if isinstance(mistake, dict) and mistake.get("where"):
            self._wrapped("Where to look: ", str(mistake["where"]))
        if rec.why:
            self._wrapped("Why it matters: ", rec.why)
        if rec.section:
            self._wrapped("Lesson section: ", rec.section + (f" (in {self.lesson})" if self.lesson else ""))
