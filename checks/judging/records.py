"""Check records: one per named check, shared by the printout, the JSON and the app;
and what a list of them comes to (an outcome, a progress standing, a tally, a sentence).

Exit codes and the JSON writer are the command line's (checks.command_line) and the
files' (checks.json_files).  Standard library only.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Optional


class Status(str, Enum):
    """A check's verdict: the one vocabulary of records, the CLI, the app and the JSON.
    A ``str`` underneath, so it compares equal to its value and writes as it in JSON."""

    PASS = "pass"
    FAIL = "fail"  # a wrong answer
    TODO = "todo"  # the learner's own NotImplementedError
    ERROR = "error"  # a crash, a timeout, a file that does not import
    SKIPPED = "skipped"  # cannot run here (no GPU, an interpreter limit): never counted as passed
    NOT_RUN = "not run"  # planned, but the run ended first (a timeout, a cancel, a crash)

    def __str__(self) -> str:
        return self.value

    @property
    def word(self) -> str:
        """How the printout and the app label it."""
        return {Status.SKIPPED: "SKIP", Status.NOT_RUN: "NOT RUN"}.get(self, self.value.upper())


STATUSES = tuple(s.value for s in Status)


class Outcome(str, Enum):
    """What a run (or a workshop) came to, in the words the app, the workshop list, the
    CLI and the export all use."""

    PASSED = "passed"  # every check ran and passed
    PASSED_HERE = "passed here"  # every check that can run on this machine passed
    FAILED = "failed"  # a wrong answer, a crash, a timeout (its check an error), a file that does not import
    INCOMPLETE = "incomplete"  # a TODO is left
    NOT_RUN = "not run"  # the run ended before its checks did and left nothing wrong (a cancel)
    UNAVAILABLE = "unavailable"  # nothing could run here (every check needs a GPU)

    def __str__(self) -> str:
        return self.value


def outcome_of(records: list) -> Outcome:
    """The one word for a run's records, worst news first."""
    statuses = {r.status for r in records}
    if statuses & {"fail", "error"}:
        return Outcome.FAILED
    if "todo" in statuses:
        return Outcome.INCOMPLETE
    if "not run" in statuses or not statuses:
        return Outcome.NOT_RUN
    if "pass" not in statuses:
        return Outcome.UNAVAILABLE
    return Outcome.PASSED_HERE if "skipped" in statuses else Outcome.PASSED


def plural(n: int, word: str, many: str = "") -> str:
    """'1 check', '2 checks', '1 error' ('many': an irregular plural)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def unavailable_ids(records: list) -> list:
    return [r.id for r in records if r.status == "skipped"]


def where_they_run(records: list) -> str:
    """Where the checks that could not run here do run, from their messages."""
    said = " ".join(r.message for r in records if r.status == "skipped").lower()
    if "gpu" in said or "cuda" in said or not said:
        return "a machine with a CUDA GPU"
    return "a machine that has what they need"


# What a run records outside any check: the learner's file failing to import ("load"), or
# the run breaking between checks ("run").  Neither is a check: totals leave them out.
RUN_LEVEL = {"load": "your file did not import", "run": "the run broke between checks"}


def is_check(record) -> bool:
    return record.id not in RUN_LEVEL


def outcome_line(records: list) -> str:
    """One sentence for a run, opening with its outcome word; 'passed here' names the
    checks that could not run and where they do.  Counts are of checks (a file that does
    not import is said, not counted as one)."""
    outcome = outcome_of(records)
    broke = [RUN_LEVEL[r.id] for r in records if not is_check(r) and r.status in ("fail", "error")]
    records = [r for r in records if is_check(r)]
    n = len(records)
    count = lambda *s: sum(r.status in s for r in records)
    every = f"all {n} checks" if n != 1 else "the 1 check"
    if outcome is Outcome.PASSED:
        return f"passed: {every} ran and passed"
    if outcome is Outcome.PASSED_HERE:
        ids = unavailable_ids(records)
        shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
        return (
            f"passed here: {count('pass')} of {plural(n, 'check')} passed; "
            f"{len(ids)} could not run here ({shown}): {'it runs' if len(ids) == 1 else 'they run'} "
            f"on {where_they_run(records)}"
        )
    if outcome is Outcome.FAILED:
        errors = count("error")
        with_errors = f" ({plural(errors, 'error')})" if errors else ""
        never = count("not run")
        parts = list(dict.fromkeys(broke))
        if count("fail", "error") or not parts:
            parts.append(f"{count('fail', 'error')} of {plural(n, 'check')} failed{with_errors}")
        if never == n and n:
            none_ran = "the 1 check never ran" if n == 1 else f"none of the {n} checks ran"
            parts.append(f"{none_ran} (the run ended first)")
        elif never:
            parts.append(f"{never} never ran (the run ended first)")
        elif not n:
            parts.append("no check ran")
        return "failed: " + "; ".join(parts)
    if outcome is Outcome.INCOMPLETE:
        return f"incomplete: {count('todo')} of {plural(n, 'check')} still TODO"
    if outcome is Outcome.NOT_RUN:
        if not n:
            return "not run: no check ran"
        return f"not run: {count('not run')} of {plural(n, 'check')} never ran (the run ended first)"
    if n == 1:
        return "unavailable: the 1 check cannot run on this machine"
    return f"unavailable: none of the {n} checks can run on this machine"


class Progress(str, Enum):
    """A workshop's standing in the progress file, from a run's exit code."""

    PASSED = "passed"
    FAILING = "failing"
    TODO = "todo"
    UNAVAILABLE = "unavailable"

    def __str__(self) -> str:
        return self.value


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


def progress_of(records: list) -> Progress:
    """A run's standing for the progress file (the CLI and the app both record it; the
    exit code follows it): failing when anything is wrong; else TODO when a TODO is left;
    else unavailable when nothing passed or the run ended first; else passed."""
    statuses = {r.status for r in records}
    if statuses & {"fail", "error"}:
        return Progress.FAILING
    if "todo" in statuses:
        return Progress.TODO
    if "pass" not in statuses or "not run" in statuses:
        return Progress.UNAVAILABLE
    return Progress.PASSED


# The statuses of a check that ran to a verdict (a skipped check did not run here; a
# check that was not run did not run at all: neither says anything about the code).
RAN = (Status.PASS, Status.FAIL, Status.TODO, Status.ERROR)


def ran_any(records: list) -> bool:
    """True when at least one check ran to a verdict: a run where nothing could run (no
    GPU and --no-interpret, say) changes neither the progress file nor what changed."""
    return any(r.status in RAN for r in records)


def change_since(old, new) -> str:
    """'newly passing' / 'newly failing' between a check's previous and current status;
    only between two verdicts (a check skipped here is never newly failing)."""
    if old is None or old == new or Status.PASS not in (old, new) or old not in RAN or new not in RAN:
        return ""
    return "newly passing" if new == Status.PASS else "newly failing"


def tally(records: list) -> dict:
    """Counts of checks for the closing line.  An exercise is incomplete when any of its
    checks is TODO; ``broke``: what failed outside any check (a file that did not import)."""
    incomplete = {r.workshop for r in records if r.status == "todo"}
    broke = [RUN_LEVEL[r.id] for r in records if not is_check(r) and r.status in ("fail", "error")]
    records = [r for r in records if is_check(r)]
    return {
        "broke": list(dict.fromkeys(broke)),
        "passed": sum(r.status == "pass" for r in records),
        "failed": sum(r.status in ("fail", "error") for r in records),
        "incomplete": len(incomplete),
        "unavailable": sum(r.status == "skipped" for r in records),
        "not_run": sum(r.status == "not run" for r in records),
    }


def summary_line(records: list) -> str:
    t = tally(records)
    not_run = f"; {t['not_run']} not run" if t["not_run"] else ""
    broke = "".join(f"; {what}" for what in t["broke"])
    return (
        f"{plural(t['passed'], 'check')} passed; {t['failed']} failed; "
        f"{plural(t['incomplete'], 'exercise')} incomplete; {t['unavailable']} unavailable{not_run}{broke}."
    )


TRACEBACK_CHARS = 4000  # a record's traceback, at most (whole lines)
_CHECKER = str(Path(__file__).resolve().parent.parent)  # the checks package: not the learner's frames


def learner_traceback(e: BaseException) -> str:
    """The traceback of an error in a check, without the checker's own frames (the hooks a
    launch passes through say nothing about the learner's code), its last lines whole."""
    tb = traceback.TracebackException.from_exception(e)
    for link in exception_chain(tb):
        kept = [f for f in link.stack if not str(Path(f.filename).resolve()).startswith(_CHECKER)]
        if kept:
            link.stack = traceback.StackSummary.from_list(kept)
    lines = "".join(tb.format()).splitlines(keepends=True)
    out: list = []
    size = 0
    for line in reversed(lines):
        if size + len(line) > TRACEBACK_CHARS:
            out.append("...\n")
            break
        out.append(line)
        size += len(line)
    return "".join(reversed(out))


def exception_chain(exc) -> list:
    """``exc`` and what it was raised from or during (``__cause__``, else ``__context__``),
    outermost first: exceptions, or their traceback.TracebackException records."""
    found, seen = [], set()
    link = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        found.append(link)
        link = link.__cause__ or link.__context__
    return found


# Errors Triton raises for a rule of its language, and what to do (said under the error).
TRITON_RULES = (
    (
        "arange's range must be a power of 2",
        "tl.arange takes a power-of-two length: make the tile triton.next_power_of_2(n) wide and "
        "mask the lanes past n",
    ),
    (
        "Both operands must be same dtype",
        "tl.dot multiplies two tiles of one dtype: load both in the inputs' 16-bit dtype (or cast one "
        "with .to()) and keep fp32 for the accumulator, passed as tl.dot's third argument",
    ),
    (
        "should have M >= 16, N >= 16 and K >= 16",
        "tl.dot needs tiles of at least 16 in every dimension: raise the smallest tile size",
    ),
)


# Rules Triton checks with a bare ``assert``: the interpreter and the compiler both stop with
# an AssertionError() that says nothing, known by the Triton function that raised it.
TRITON_ASSERTS = {
    ("semantic.py", "dot"): (
        "tl.dot(a, b, acc) refused its accumulator: Triton requires `acc` to have the dot's result "
        "type, float32 unless out_dtype says otherwise, and the tile's shape; an accumulator created "
        "as float16 (tl.zeros(..., dtype=tl.float16)) is refused. Create it in float32 and cast once, "
        "at the store"
    ),
}


def error_advice(message: str, exc: Optional[BaseException] = None) -> str:
    """'\n' and what to do about an error Triton raises for one of its rules (by its words,
    or, for a wordless assertion in ``exc``'s chain, by where Triton raised it), or ''."""
    said = next((advice for words, advice in TRITON_RULES if words in message), "")
    said = said or (wordless_assert(exc) if exc is not None else "")
    return f"\n{said}" if said else ""


def wordless_assert(exc: BaseException) -> str:
    """What a wordless AssertionError in ``exc``'s chain checked, when it is one of
    :data:`TRITON_ASSERTS`; else ''."""
    for e in exception_chain(exc):
        if isinstance(e, AssertionError) and not str(e).strip() and e.__traceback__ is not None:
            last = traceback.extract_tb(e.__traceback__)[-1]
            where = last.filename.replace("\\", "/")
            for (file, function), said in TRITON_ASSERTS.items():
                if where.endswith(f"/triton/language/{file}") and last.name == function:
                    return said
    return ""


def short_repr(value, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def jsonable(d: dict) -> dict:
    """``d`` as JSON gives it back (what is not JSON becomes its str)."""
    return json.loads(json.dumps(d, default=str))
