"""What one submission's run comes to: the outcome word of its records (the words the
app, the CLI and the export use: passed, passed here, failed, incomplete, not run,
unavailable), the ids of the checks that failed, and the fault when the run did not end
the ordinary way (a timeout, a crash, a kill, memory exhausted).

A run that left no records is ``failed`` when something killed the check process (the
learner's code can reach it), and ``not graded`` when the grading itself broke (the
engine could not start, or the Dask worker running it was lost twice): that is the
instructor's problem to fix, not the learner's mark.

Standard library only.
"""

from __future__ import annotations

import signal

from checks.judging.records import STATUSES, Outcome, Record, outcome_of, plural

NOT_GRADED = "not graded"
OUTCOMES = tuple(o.value for o in Outcome) + (NOT_GRADED,)
# a fault, in one word: what the report's "fault" column holds
FAULTS = ("", "timeout", "crashed", "killed", "memory", "no records", "lost")
MEMORY_SIGNS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory")


def signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _fault_of_records(records: list) -> tuple:
    """(fault, detail) from the error records a run left: the single run's own words."""
    for r in records:
        if r.status != "error":
            continue
        first = r.message.split("; last stderr")[0].splitlines()[0].rstrip(": ") if r.message else ""
        if any(sign in r.message for sign in MEMORY_SIGNS):
            return "memory", f"{r.id}: {first}"
        if r.message.startswith("timed out"):
            return "timeout", f"{r.id}: {first}"
        if r.message.startswith("crashed"):
            killed = r.details.get("returncode") == -signal.SIGKILL
            return ("killed" if killed else "crashed"), f"{r.id}: {first}"
    return "", ""


def counts(records: list) -> dict:
    return {s: sum(r.status == s for r in records) for s in STATUSES}


def from_records(records: list) -> dict:
    """The verdict of a run that wrote its records."""
    fault, detail = _fault_of_records(records)
    return {
        "outcome": str(outcome_of(records)),
        "failing": [r.id for r in records if r.status in ("fail", "error")],
        "counts": counts(records),
        "fault": fault,
        "fault_detail": detail,
    }


def without_records(returncode, timed_out: bool, limit_s: float, output_tail: str) -> dict:
    """The verdict of a check process that ended without writing its records."""
    last = output_tail.strip().splitlines()[-1:] or [""]
    if timed_out:
        fault, outcome = "timeout", str(Outcome.FAILED)
        detail = f"the check process did not finish within {limit_s:g} s and was stopped"
    elif returncode is not None and returncode < 0:
        name = signal_name(returncode)
        fault = "killed" if returncode == -signal.SIGKILL else "crashed"
        outcome = str(Outcome.FAILED)
        detail = (
            f"the check process was ended by {name} before it wrote its records "
            "(the submission's code can reach it: a kill, or the out-of-memory killer)"
        )
    else:
        fault, outcome = "no records", NOT_GRADED
        detail = f"the check process exited with code {returncode} and wrote no records: {last[0]}"
    return {
        "outcome": outcome,
        "failing": [],
        "counts": {s: 0 for s in STATUSES},
        "fault": fault,
        "fault_detail": detail,
    }


def lost(reason: str, attempts: int) -> dict:
    """The verdict of a submission whose task did not come back on any attempt (its Dask
    worker died, the connection closed, or the task itself raised)."""
    return {
        "outcome": NOT_GRADED,
        "failing": [],
        "counts": {s: 0 for s in STATUSES},
        "fault": "lost",
        "fault_detail": f"no verdict came back in {plural(attempts, 'attempt')}; the last: {reason}",
    }


def records_from_json(payload: dict) -> list:
    return [Record.from_dict(d) for d in payload.get("records", [])]
