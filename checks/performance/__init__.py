"""Performance readings: why a right kernel is slow, with or without a GPU (the front door).

A reading runs one representative call of a GPU workshop's wrapper in Triton's interpreter
(the caller has switched it on, see checks.interpreter) with its loads and stores recorded
(accesses.py; a launch of many programs is sampled, its first programs scaled to the
grid), compiles each launched kernel for the H200 while the interpreter runs (compiled.py)
and turns both into a predicted time and its losses, the biggest first (reading.py).
environment.py says beforehand when this environment cannot run the interpreter.  problems.py says which
call; goals.py the lessons' performance steps; rank.py compares the predicted order with
the measured one on a GPU.
"""

from __future__ import annotations

from typing import Any, Optional

from checks.performance.problems import ops
from checks.performance.reading import Reading


def read_module(
    op: str,
    module: Any,
    default_only: bool = True,
    seed: int = 0,
    limit: Optional[int] = None,
    every_program: bool = False,
    compiler: Any = None,
) -> list:
    """[Reading] of ``module``'s candidate calls for ``op`` (the default call alone unless
    ``default_only`` is False; at most ``limit``), run in the interpreter: each launch
    sampled (accesses.MAX_PROGRAMS programs, the time limits of accesses) unless
    ``every_program`` (every program, no time limit).  ``compiler``: a started
    compiled.Compiler (default: one of its own).  A call that launches no Triton kernel (an
    eager PyTorch candidate) has no reading.  Raises accesses.TooSlow when one program
    runs past the recording's limit."""
    from checks.performance import accesses, compiled, problems, reading

    prob = problems.problem(op, seed)
    limits: dict = {}
    if every_program:
        limits = dict(max_programs=None, cpu_seconds=float("inf"), limit_seconds=float("inf"))
    own = compiler is None
    compiler = compiler if compiler is not None else compiled.Compiler()
    try:
        calls = []
        for name, call in problems.candidate_calls(prob, module, default_only)[:limit]:
            _, records = accesses.record(call, launched=compiler.submit, **limits)
            if records:
                calls.append((name, records))
        return [
            reading.read(
                name, records, compiler.facts(records), prob["work"], accesses.sample_sentence(records)
            )
            for name, records in calls
        ]
    finally:
        if own:
            compiler.close()


def format_reading(r: Reading, indent: str = "  ") -> str:
    """The variant with its predicted time, then the reading's lines."""
    return "\n".join([f"{r.variant}: {r.predicted_text()}"] + [indent + line for line in r.lines() if line])


__all__ = ["Reading", "format_reading", "ops", "read_module"]
