"""What the checks said about one mutant: survived, rejected and explained, rejected and
unexplained, or crashed / timed out; and, for each failing check, what explains it.

The rule (one failing record at a time; the mutant is explained when at least one of its
failing records is, and none of them calls the kernel someone else's work):

* ``mistake``: ``details["mistake"]`` names a classic mistake of the workshop;
* ``relation``: ``details["relation"]`` says how the result relates to the right answer
  (negated, scaled per row, shifted ...);
* ``contract``: the check is one of the workshop's argument checks
  (``checks/judging/cases/<id>_arguments.py``) and failed on what the wrapper raised or
  accepted (no map of wrong values, no verdict): its message names the argument and what
  the wrapper should have done, which is the whole cause;
* ``out-of-bounds``, only with a named cause: an access with no mask at all ("mask this
  access"), or addresses that step like another tensor's strides, like a column stride of
  1, or fall inside the viewed tensor's storage outside the view (the message names the
  strides to use), or a masked access whose lanes fall outside, read from the evidence: the
  mask's bound (some lanes masked off) or the grid and the ``program_id`` axis (a later
  program wholly outside);
* ``unwritten``, only when ``details["cause"]`` names the one cause (the grid, the mask or
  the store's strides: ``{"id", "sentence", "why"}``).  The bare map of never-stored
  elements with the launches beside it lists three possible causes and does not count;
* ``no-launch``: the call launched nothing and nothing else computed its result (an early
  return taken for a shape with elements): the message and its why say so.

A failing record with ``details["verdict"] == "not-own-kernel"`` on a mutant of the
reference answer is a defect of the checks (the kernel is the learner's own): the mutant
is unexplained and flagged ``misattributed``.  A check that ends in an error (an exception
in the kernel, a compile error) explains nothing by this rule: a mutant with errors and no
failures is ``crashed``.  Standard library only.
"""

from __future__ import annotations

from typing import Iterable, Optional

SURVIVED = "survived"
EXPLAINED = "rejected-explained"
UNEXPLAINED = "rejected-unexplained"
TIMED_OUT = "timed-out"
CRASHED = "crashed"
STATUSES = (SURVIVED, EXPLAINED, UNEXPLAINED, TIMED_OUT, CRASHED)

NOT_OWN_KERNEL = "not-own-kernel"  # as checks.judging.failure_kinds names it
OUT_OF_BOUNDS = "out-of-bounds"
UNWRITTEN = "unwritten"
NO_LAUNCH = "no-launch"

# An out-of-bounds message names its cause with one of these (checks.judging.oob).
NAMED_OOB_CAUSES = (
    "mask this access",  # the access had no mask at all
    "as they would lie if its column stride were 1",
    "as they would lie with its row and column strides swapped",
    "step like the elements of",  # another tensor's strides
    "in memory that belongs to the tensor it is a view of",
    "compare the mask's bound with the size these offsets index",  # lanes the mask let through
    "this program owns no elements here",  # a later program wholly outside: the grid or axis
    "a missing mask is not the cause",  # an unmasked access wholly outside: its tile's offset
    "runs past that dimension",  # the offset reads as a batch or head index past its size
    "adding storage_offset() counts it twice",  # a view's offset added to its own pointer
)


def explanation(record: dict, contract_checks: Iterable[str] = ()) -> Optional[str]:
    """What explains one failing record (its JSON form), by the rule above; None: nothing."""
    if record.get("status") != "fail":
        return None
    d = record.get("details") if isinstance(record.get("details"), dict) else {}
    assert isinstance(d, dict)
    if d.get("verdict") == NOT_OWN_KERNEL:
        return None
    if isinstance(d.get("mistake"), dict) and d["mistake"].get("id"):
        return "mistake"
    if isinstance(d.get("relation"), dict) and d["relation"].get("id"):
        return "relation"
    if record.get("id") in set(contract_checks) and "map" not in d and not d.get("verdict"):
        return "contract"
    message = str(record.get("message", ""))
    if d.get("verdict") == OUT_OF_BOUNDS and any(c in message for c in NAMED_OOB_CAUSES):
        return "out-of-bounds"
    cause = d.get("cause")
    if d.get("verdict") == UNWRITTEN and isinstance(cause, dict) and cause.get("id"):
        return "unwritten"
    if d.get("verdict") == NO_LAUNCH:
        return "no-launch"
    return None


def sentence(record: dict, limit: int = 400) -> str:
    """What the learner reads first about a failing record: the named mistake's or the
    relation's sentence, else the message's first line."""
    d = record.get("details") if isinstance(record.get("details"), dict) else {}
    for key in ("mistake", "relation"):
        named = d.get(key) if isinstance(d, dict) else None
        if isinstance(named, dict) and named.get("sentence"):
            return str(named["sentence"])[:limit]
    text = str(record.get("message", "")).strip().splitlines()
    return text[0][:limit] if text else ""


def kind_of(record: dict) -> str:
    """A short name for what a failing record is, for counting the unexplained ones."""
    d = record.get("details") if isinstance(record.get("details"), dict) else {}
    verdict = d.get("verdict") if isinstance(d, dict) else None
    if verdict == OUT_OF_BOUNDS:
        return "out-of-bounds (masked access, no cause named)"
    if verdict == UNWRITTEN:
        return "never stored (no cause named)"
    if verdict == NOT_OWN_KERNEL:
        return "called not the learner's kernel"
    if isinstance(d, dict) and "map" in d:
        return "wrong values (counts and a map)"
    return "wrong values (message only)"


def classify(records: list, contract_checks: Iterable[str] = ()) -> dict:
    """The mutant's status and its failing checks, from the run's records (JSON form)."""
    contract = set(contract_checks)
    failing = [r for r in records if r.get("status") in ("fail", "error")]
    fails = [r for r in failing if r.get("status") == "fail"]
    checks = [
        {
            "id": r.get("id"),
            "status": str(r.get("status")),
            "explained_by": explanation(r, contract),
            "kind": kind_of(r) if r.get("status") == "fail" else "error",
            "sentence": sentence(r),
        }
        for r in failing
    ]
    misattributed = any(
        isinstance(r.get("details"), dict) and r["details"].get("verdict") == NOT_OWN_KERNEL for r in fails
    )
    if not failing:
        status = SURVIVED
    elif not fails:
        status = CRASHED
    elif not misattributed and any(c["explained_by"] for c in checks):
        status = EXPLAINED
    else:
        status = UNEXPLAINED
    return {"status": status, "misattributed": misattributed, "failing": checks}
