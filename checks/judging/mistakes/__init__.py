"""Mistake oracles: when a check fails, name the classic mistake the answer makes.

Each workshop has a module here (``checks/judging/mistakes/<workshop_id>.py``) with

* ``MISTAKES``: the classic mistakes of that workshop, each a :class:`Mistake` whose
  ``oracle`` computes, in float64 (plain floats for the CPU workshop), what the *wrong*
  computation gives on a contract call's arguments;
* ``right(call)``: what the right computation gives (None when it cannot say);
* ``agrees(call, expected)``: whether the call's result equals ``expected`` within the
  tolerance of the result's dtype.

While a check runs, :class:`Recorder` remembers the last few contract calls (arguments
and result, by reference).  When the check fails, :func:`diagnose` tries the mistakes
on those calls, most recent first: the mistake whose oracle alone matches a result that
the right computation does not match is the diagnosis, and :func:`annotate` puts it on
the record.  A failure that matches no mistake keeps the check's own words.

Standard library only: the CPU workshop runs under ``python -S`` without torch; a GPU
workshop's module imports torch when it is first needed (only on a failing check).
"""

from __future__ import annotations

import importlib
import inspect
import math
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

RECENT_CALLS = 4  # contract calls remembered per check, most recent last

# The record's details["mistake"] has exactly these keys (the app and the CLI read them).
DETAIL_KEYS = ("id", "sentence", "where", "section", "why")


def _programs_launched(details: Any) -> Optional[int]:
    """The programs of every launch a failure's details list (``{"grid": [...]}`` each),
    or None when a grid is missing or unreadable."""
    launched = details.get("launches") if isinstance(details, dict) else None
    if not isinstance(launched, list) or not launched:
        return None
    total = 0
    for launch in launched:
        grid = launch.get("grid") if isinstance(launch, dict) else None
        if not isinstance(grid, list) or not all(isinstance(g, int) for g in grid):
            return None
        total += math.prod(grid)
    return total


@dataclass(frozen=True)
class Call:
    """One contract call a check made: the function's name, its arguments and what it
    returned (references, not copies: the inputs are not changed by a right answer)."""

    function: str
    args: tuple
    kwargs: dict
    result: Any
    names: tuple = field(default=(), compare=False)  # the function's parameter names, when known
    # programs the learner's kernels ran in this call, where the interpreter counted them
    # (a call that left elements unwritten): None when not known
    programs: Optional[int] = field(default=None, compare=False)
    # every element of the result was stored by the learner's kernels, as the interpreter
    # saw store by store: a mistake that leaves elements never written is not this one
    stored: bool = field(default=False, compare=False)

    def argument(self, index: int, name: str, default: Any = None) -> Any:
        """The argument at position ``index`` or keyword ``name`` (else ``default``)."""
        if len(self.args) > index:
            return self.args[index]
        return self.kwargs.get(name, default)


@dataclass(frozen=True)
class Mistake:
    """A classic mistake of one workshop.

    ``sentence`` names the mistake in one plain sentence; ``where`` says where in the
    kernel it goes wrong; ``section`` is the lesson section to read (a ``## `` heading of
    the workshop's lesson.md); ``why`` says in a sentence or two why the answer comes out
    wrong.  ``oracle(call)`` returns what the wrong computation gives for ``call``: None
    when the mistake cannot apply to that call (a causal-only mistake on a non-causal
    call), one expected value, or :class:`Variants`, several candidates (e.g. one per
    plausible tile size), any of which may match."""

    id: str
    function: str
    sentence: str
    where: str
    section: str
    why: str
    oracle: Callable[[Call], Any] = field(compare=False, repr=False)

    def details(self) -> dict:
        return {key: getattr(self, key) for key in DETAIL_KEYS}


class Variants(list):
    """Several candidates of one oracle (e.g. one per plausible tile size), any of which
    may match: a plain list is one expected value (the CPU workshop's probabilities)."""


class Undetermined:
    """An expected value that leaves some elements open (never written: they may hold
    anything).  It explains less than an oracle that predicts every element, so a match
    of such a value gives way to a fully determined one (see :func:`matching`)."""


class Recorder:
    """The learner's module as a check sees it, remembering each contract call.

    Every attribute is the wrapped module's; a contract function is wrapped so that each
    call that returns is remembered in :attr:`calls` (the last :data:`RECENT_CALLS`)."""

    def __init__(self, module: Any, functions: Iterable[str]):
        self.recorded_module = module
        self.contract_functions = frozenset(functions)
        self.calls: deque = deque(maxlen=RECENT_CALLS)
        self.attempted: Optional[Call] = None  # the last call begun (its result None): one that raised
        self.first_failing: Optional[Call] = None  # the last call of the run's first failing check

    def __getattr__(self, name: str) -> Any:
        try:
            value = getattr(self.recorded_module, name)
        except AttributeError:
            # Raised again as this object's, so "your file does not define ..." still
            # recognises the missing contract function.
            raise AttributeError(f"module has no attribute {name!r}", name=name, obj=self) from None
        if name not in self.contract_functions or not callable(value):
            return value
        calls = self.calls
        names = _parameter_names(value)
        recorder = self
        stores_seen = _stores_seen(self.recorded_module)

        def call(*args, **kwargs):
            recorder.attempted = Call(name, args, dict(kwargs), None, names)
            try:
                result = value(*args, **kwargs)
            except Exception as e:
                # A failure that still carries what the call returned (elements no program
                # stored, in the interpreter): the oracles may name how the rest was written.
                if getattr(e, "returned", None) is not None:
                    programs = _programs_launched(getattr(e, "details", None))
                    returned = e.returned  # type: ignore[attr-defined]
                    calls.append(Call(name, args, dict(kwargs), returned, names, programs))
                raise
            calls.append(Call(name, args, dict(kwargs), result, names, stored=stores_seen))
            return result

        call.__name__ = name
        call.__wrapped__ = value  # type: ignore[attr-defined]
        return call

    def note_failure(self) -> None:
        """A check failed: keep its last call, once, as evidence against the later checks'
        diagnoses (see :func:`diagnose`)."""
        if self.first_failing is None and self.calls:
            self.first_failing = self.calls[-1]

    def forget(self) -> None:
        """Start a new check: the calls of the previous one are not its evidence."""
        self.calls.clear()
        self.attempted = None


def _stores_seen(module: Any) -> bool:
    """Whether a call of ``module`` that returns had every element of its result stored by
    the learner's kernels: a witnessed module in the interpreter, where a result with an
    element no store explains raises instead (checks.judging.provenance)."""
    provenance = sys.modules.get("checks.judging.provenance")  # loaded by GPU workshops only
    if provenance is None or not isinstance(module, provenance.WitnessedModule):
        return False
    interpret = getattr(module, "_interpret", None)
    if interpret is None:
        from checks import interpreter

        interpret = interpreter.active()
    return bool(interpret)


def _parameter_names(function: Any) -> tuple:
    try:
        return tuple(inspect.signature(inspect.unwrap(function)).parameters)
    except (TypeError, ValueError):
        return ()


def oracles_of(workshop_id: str) -> Optional[Any]:
    """The workshop's mistakes module, or None when it has none."""
    try:
        return importlib.import_module(f"{__name__}.{workshop_id}")
    except ModuleNotFoundError as e:
        if e.name == f"{__name__}.{workshop_id}":
            return None
        raise


def recorded_functions(workshop_id: str, functions: Iterable[str]) -> tuple:
    """The functions whose calls are remembered: the contract's, and any helper the
    workshop's mistakes module names in ``ALSO_RECORDED`` (e.g. a tile map a check calls)."""
    try:
        module = oracles_of(workshop_id)
    except Exception:  # noqa: BLE001 - no oracles (e.g. torch missing): the contract alone
        module = None
    return tuple(functions) + tuple(getattr(module, "ALSO_RECORDED", ()))


def mistakes_of(workshop_id: str) -> list:
    module = oracles_of(workshop_id)
    return list(module.MISTAKES) if module is not None else []


def candidates_of(found: Any, call: Optional[Call] = None) -> list:
    """What an oracle returned, as a list of candidates (empty for None); on ``call``, whose
    every element was seen stored, without those that leave elements never written."""
    if found is None:
        return []
    found = list(found) if isinstance(found, Variants) else [found]
    return (
        [c for c in found if not isinstance(c, Undetermined)] if call is not None and call.stored else found
    )


def matching(module: Any, call: Call) -> Optional[Mistake]:
    """The one mistake of the module that explains ``call``'s result, or None: None when
    the right computation explains it (or cannot be computed), and None when two
    different mistakes explain it equally well (the evidence cannot tell them apart, and
    naming the wrong one would mislead).  A mistake whose oracle predicts every element
    explains a result better than one that leaves elements open (:class:`Undetermined`):
    wrong rows computed exactly as one mistake computes them were written, not left as
    the memory held them."""
    right = module.right(call)
    if right is None or module.agrees(call, right):
        return None
    found: dict = {}  # mistake id -> (the mistake, whether a fully determined value matched)
    for mistake in module.MISTAKES:
        if mistake.function != call.function or mistake.id in found:
            continue
        agreeing = [c for c in candidates_of(mistake.oracle(call), call) if module.agrees(call, c)]
        if agreeing:
            found[mistake.id] = (mistake, any(not isinstance(c, Undetermined) for c in agreeing))
    if len(found) > 1:
        determined = [entry for entry in found.values() if entry[1]]
        return determined[0][0] if len(determined) == 1 else None
    return next(iter(found.values()))[0] if found else None


def consistent(module: Any, mistake: Mistake, calls: list) -> bool:
    """Whether ``mistake`` explains every call of its function: each result is what the
    mistake's oracle predicts, or (where the oracle says the mistake changes nothing) the
    right value.  Used to tell apart mistakes that explain one call equally well."""
    for call in calls:
        if call.function != mistake.function:
            continue
        predicted = candidates_of(mistake.oracle(call), call)
        if predicted:
            if not any(module.agrees(call, c) for c in predicted):
                return False
        else:
            right = module.right(call)
            if right is None or not module.agrees(call, right):
                return False
    return True


def _told_apart(module: Any, call: Call, calls: list) -> Optional[Mistake]:
    """The one mistake that explains ``call`` and is :func:`consistent` with all ``calls``."""
    right = module.right(call)
    if right is None or module.agrees(call, right):
        return None
    explaining = {
        m.id: m
        for m in module.MISTAKES
        if m.function == call.function
        and any(module.agrees(call, c) for c in candidates_of(m.oracle(call), call))
    }
    kept = [m for m in explaining.values() if consistent(module, m, calls)]
    return kept[0] if len(explaining) > 1 and len(kept) == 1 else None


def diagnose(workshop_id: str, calls: Iterable[Call], earlier: Optional[Call] = None) -> Optional[Mistake]:
    """The classic mistake that explains the most recent of ``calls`` that one explains.

    ``earlier``: the failing call of the run's first failing check.  A mistake that does
    not explain it either (its oracle predicts another result there, or says the mistake
    changes nothing where the result is wrong) is not named: something else is wrong,
    and the later check's numbers only happen to fit it.

    Never raises: an oracle that cannot handle an input (an unusual shape, a tensor it
    cannot read) means no diagnosis, not a broken check."""
    try:
        module = oracles_of(workshop_id)
    except Exception:  # noqa: BLE001 - no oracles (e.g. torch missing): no diagnosis
        return None
    if module is None:
        return None
    calls = list(calls)
    for call in reversed(calls):
        try:
            found = matching(module, call)
            if found is None and len(calls) > 1:
                found = _told_apart(module, call, calls)  # two mistakes fit: another call may decide
        except Exception:  # noqa: BLE001 - see the docstring
            found = None
        if found is not None:
            return found if earlier is None or _explains_too(module, found, earlier) else None
    return None


def _explains_too(module: Any, mistake: Mistake, call: Call) -> bool:
    """Whether ``mistake`` could have made ``call``'s result: its oracle predicts it, or it
    changes nothing there and the result is right (or the right one is unknown)."""
    if call.function != mistake.function:
        return True
    try:
        predicted = candidates_of(mistake.oracle(call), call)
        if predicted:
            return any(module.agrees(call, c) for c in predicted)
        right = module.right(call)
        return right is None or module.agrees(call, right)
    except Exception:  # noqa: BLE001 - an oracle that cannot read the earlier call: no evidence against
        return True


def annotate(record: Any, mistake: Mistake) -> None:
    """Put ``mistake`` on a failing check's record: its sentence opens the message (the
    numbers stay), its why and section replace the check's own (and a cause the map
    showed: checks.judging.stored.unwritten_cause), and the failure's generic advice
    (``details["advice"]``) gives way to the mistake's own where to look."""
    details = record.details if isinstance(record.details, dict) else {}
    cause = details.get("cause")
    opening = f"{cause.get('sentence')} — " if isinstance(cause, dict) else None
    if opening and record.message.startswith(opening):
        record.message = record.message[len(opening) :]
    advice = details.get("advice")
    if isinstance(advice, str) and advice and f" {advice}" in record.message:
        record.message = record.message.replace(f" {advice}", "", 1)
    record.message = f"{mistake.sentence} — {record.message}" if record.message else mistake.sentence
    record.why = mistake.why
    record.section = mistake.section
    record.details = {**record.details, "mistake": mistake.details()}
