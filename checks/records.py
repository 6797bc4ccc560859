"""Check records: one per named check, shared by the printout, the JSON and the app.

Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import platform
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path


class Status(str, Enum):
    """A check's verdict: the one vocabulary of records, the CLI, the app and the JSON.
    A ``str`` underneath, so it compares equal to its value and writes as it in JSON."""

    PASS = "pass"
    FAIL = "fail"  # a wrong answer
    TODO = "todo"  # the learner's own NotImplementedError
    ERROR = "error"  # a crash, a timeout, a file that does not import
    SKIPPED = "skipped"  # cannot run here (no GPU, an interpreter limit): never counted as passed

    def __str__(self) -> str:
        return self.value

    @property
    def word(self) -> str:
        """How the printout and the app label it."""
        return "SKIP" if self is Status.SKIPPED else self.value.upper()


STATUSES = tuple(s.value for s in Status)


class Progress(str, Enum):
    """A workshop's standing in the progress file, from a run's exit code."""

    PASSED = "passed"
    FAILING = "failing"
    TODO = "todo"
    UNAVAILABLE = "unavailable"

    def __str__(self) -> str:
        return self.value


# Exit codes of `python -m checks` (a usage error is 64, not argparse's 2, which means TODO here).
EXIT_PASS, EXIT_WRONG, EXIT_TODO, EXIT_UNAVAILABLE, EXIT_USAGE = 0, 1, 2, 3, 64


class UsageParser(argparse.ArgumentParser):
    """argparse exits 2 on a bad argument, which means TODO in this course: exit 64."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


@dataclass
class Record:
    workshop: str
    id: str
    label: str
    status: str
    message: str = ""
    seconds: float = 0.0
    why: str = ""
    section: str = ""
    details: dict = field(default_factory=dict)
    seed: int = 0  # the run's base seed (0: the usual inputs)

    def __post_init__(self):
        try:
            self.status = Status(self.status)
        except ValueError:
            raise ValueError(f"status: {self.status!r} is not one of {', '.join(STATUSES)}") from None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Record":
        """A record from its JSON form (unknown keys ignored; a bad status is a ValueError)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def exit_code(records: list) -> int:
    """0 every runnable check passed; 1 anything wrong; 2 TODO and nothing wrong;
    3 nothing ran (nothing selected, or all of it unavailable here)."""
    statuses = {r.status for r in records}
    if statuses & {"fail", "error"}:
        return EXIT_WRONG
    if "todo" in statuses:
        return EXIT_TODO
    if "pass" not in statuses:
        return EXIT_UNAVAILABLE
    return EXIT_PASS


def progress_of(records: list) -> Progress:
    """A run's standing for the progress file (the CLI and the app both record it)."""
    return {
        EXIT_PASS: Progress.PASSED,
        EXIT_WRONG: Progress.FAILING,
        EXIT_TODO: Progress.TODO,
        EXIT_UNAVAILABLE: Progress.UNAVAILABLE,
    }[exit_code(records)]


def change_since(old, new) -> str:
    """'newly passing' / 'newly failing' between a check's previous and current status."""
    if old is None or old == new or Status.PASS not in (old, new):
        return ""
    return "newly passing" if new == Status.PASS else "newly failing"


def tally(records: list) -> dict:
    """Counts for the closing line.  An exercise is incomplete when any of its checks is TODO."""
    incomplete = {r.workshop for r in records if r.status == "todo"}
    return {
        "passed": sum(r.status == "pass" for r in records),
        "failed": sum(r.status in ("fail", "error") for r in records),
        "incomplete": len(incomplete),
        "unavailable": sum(r.status == "skipped" for r in records),
    }


def summary_line(records: list) -> str:
    t = tally(records)
    return (
        f"{t['passed']} checks passed; {t['failed']} failed; "
        f"{t['incomplete']} exercises incomplete; {t['unavailable']} unavailable."
    )


RECORDS_SCHEMA = "kernel-course/check-records"


def run_header(kind: str, exit_code: int, interpret: bool) -> dict:
    """The fields every JSON file of ``python -m checks`` starts with (``kind``: "" for a
    run's records, "self-check" for the author's check)."""
    return {
        "schema": RECORDS_SCHEMA + (f"/{kind}" if kind else ""),
        "version": 1,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": ["python", "-m", "checks"] + sys.argv[1:],
        "exit_code": exit_code,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "interpret": bool(interpret),
        },
    }


def _umask() -> int:
    """The process's umask, read without changing it where /proc allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no /proc: read it by setting it back at once
    os.umask(mask)
    return mask


def write_json_atomic(path: Path, payload) -> Path:
    """Write JSON to a temporary file beside ``path`` and rename it over: a reader never
    sees half a file, and an interrupted write leaves the old file intact.  The file gets
    the mode an ordinary file gets (0644 less the umask), not mkstemp's private 0600.
    Compact, no indentation (evidence files hold thousands of raw samples): one line and a
    newline; any JSON reader reads it as it read the indented files written before."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(payload, f, separators=(",", ":"))
            f.write("\n")
            f.flush()
            try:
                os.fchmod(f.fileno(), 0o644 & ~_umask())
            except (AttributeError, OSError):
                pass
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
