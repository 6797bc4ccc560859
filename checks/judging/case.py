"""Named checks: the data every workshop's check list is made of.

A workshop's cases live in ``checks/judging/cases/<workshop_id>.py`` as a module-level
list ``CASES`` built with :func:`check`.  A case is a stable id, a label, one
line on what it guards against, the lesson section it belongs to, and a body
``fn(mod, ctx)`` that builds its inputs from ``ctx.rng`` (seeded from the id and
the run's base seed, so a case's inputs never depend on which other cases ran),
calls the learner's module ``mod``, and compares with an oracle.

The body reports through exceptions, so a check reads like a test:

* return normally (optionally a short message) -> pass
* raise :class:`CheckFailed` (or ``AssertionError``) -> fail
* raise :class:`Unavailable` -> skipped, with the reason
* ``NotImplementedError`` raised from the learner's own file -> todo

A case may declare the properties its inputs exercise (``properties=("ragged",
"strided")``, names from checks.judging.properties): after a run, the one every failing
check shares and no passing check has is said once.

This module is standard library only: the CPU workshop runs under ``python -S``.
"""

from __future__ import annotations

import hashlib
import random
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from checks.judging.properties import check_properties


class CheckFailed(AssertionError):
    """A wrong answer.  ``details`` is a JSON-able dict that goes into the record."""

    def __init__(self, message: str, details: Optional[dict] = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}


class Unavailable(Exception):
    """The check cannot run here (no GPU, an interpreter limitation)."""


@dataclass(frozen=True)
class Case:
    id: str
    label: str
    fn: Callable[[Any, "Context"], Optional[str]]
    why: str = ""
    section: str = ""
    # False: needs a real CUDA GPU (non-default stream, guard bands, bf16 tl.dot).
    interpreter: bool = True
    interpreter_reason: str = ""
    # Rough cost, used only to order cases: cheap, informative ones first.
    cost: int = 1
    # What its inputs exercise (checks.judging.properties): what failing checks share is said.
    properties: tuple = ()


def check(
    id: str,
    label: str,
    *,
    why: str = "",
    section: str = "",
    interpreter: bool = True,
    interpreter_reason: str = "",
    cost: int = 1,
    properties: tuple = (),
) -> Callable:
    """Decorator: ``@check("empty-identity", "merging the empty state changes nothing")``.

    The decorated function is returned unchanged; the case is collected on the
    function as ``fn.case`` and by :func:`collect`.
    """

    def wrap(fn):
        fn.case = Case(
            id=id,
            label=label,
            fn=fn,
            why=why,
            section=section,
            interpreter=interpreter,
            interpreter_reason=interpreter_reason,
            cost=cost,
            properties=check_properties(properties, id),
        )
        return fn

    return wrap


def collect(namespace: dict) -> list:
    """All cases defined in a module namespace, in definition order."""
    cases = [v.case for v in namespace.values() if callable(v) and hasattr(v, "case")]
    ids = [c.id for c in cases]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        raise RuntimeError(f"duplicate check ids: {sorted(dupes)}")
    return cases


_comparisons = threading.local()


def note_comparison() -> None:
    """The learner's values matched the right answer in a comparison: the check's pass is
    then evidence about values (checks.judging.properties), not only about metadata."""
    _comparisons.n = getattr(_comparisons, "n", 0) + 1


def comparisons() -> int:
    """How many matching value comparisons this thread has made (read before and after a check)."""
    return getattr(_comparisons, "n", 0)


SEED_ENV = "KERNEL_COURSE_SEED"


def seed_for(case_id: str, base_seed: int = 0) -> int:
    """A stable 32-bit seed derived from the case id and the run's base seed (0, the
    default, gives every case its usual inputs; another base gives inputs nobody has
    tuned to, the same on every machine)."""
    key = case_id if not base_seed else f"{base_seed}:{case_id}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "little")


def parse_seed(value, name: str = "--seed") -> int:
    """A base seed from the command line or the environment: a nonnegative integer."""
    try:
        seed = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{name}: expected a nonnegative integer, got {value!r}") from None
    if seed < 0 or seed >= 2**63:
        raise ValueError(f"{name}: expected a nonnegative integer below 2**63, got {seed}")
    return seed


@dataclass
class Context:
    """What a case body gets besides the learner's module."""

    case_id: str
    device: str = "cpu"  # "cuda" on a GPU, "cpu" for CPU work and the interpreter
    interpret: bool = False
    details: dict = field(default_factory=dict)  # extra facts a passing case wants recorded
    base_seed: int = 0

    @property
    def seed(self) -> int:
        return seed_for(self.case_id, self.base_seed)

    @property
    def rng(self) -> random.Random:
        return random.Random(self.seed)

    def torch_generator(self):
        """A torch.Generator on the CPU seeded for this case (inputs are drawn on the CPU
        and moved, so a case draws the same numbers on every device)."""
        import torch

        g = torch.Generator(device="cpu")
        g.manual_seed(self.seed)
        return g

    def require_gpu(self, reason: str = "needs a CUDA GPU"):
        if self.device != "cuda":
            raise Unavailable(reason)


def cause_of_type(exc: BaseException, kind):
    """The first exception of ``kind`` in ``exc``'s chain (Triton's interpreter wraps
    errors raised inside a kernel in its own InterpreterError), or None."""
    seen = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, kind):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None
