"""Check records: one per named check, shared by the printout, the JSON and the app.

Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

STATUSES = ("pass", "fail", "todo", "error", "skipped")

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

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Record":
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        rec = cls(**known)
        if rec.status not in STATUSES:
            raise ValueError(f"bad status {rec.status!r}")
        return rec


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
    the mode an ordinary file gets (0644 less the umask), not mkstemp's private 0600."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=2, sort_keys=False)
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
