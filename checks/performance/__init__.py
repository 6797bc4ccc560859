"""Performance readings: why a right kernel is slow, with or without a GPU (the front door).

A reading runs one representative call of a GPU workshop's wrapper in Triton's interpreter
(the caller has switched it on, see checks.interpreter) with its loads and stores recorded
(accesses.py), compiles each launched kernel for the H200 (compiled.py) and turns both into
a predicted time and its losses, the biggest first (reading.py).  problems.py says which
call; goals.py the lessons' performance steps; rank.py compares the predicted order with
the measured one on a GPU.
"""

from __future__ import annotations

from typing import Any, Optional

from checks.performance.problems import ops
from checks.performance.reading import Reading


def read_module(
    op: str, module: Any, default_only: bool = True, seed: int = 0, limit: Optional[int] = None
) -> list:
    """[Reading] of ``module``'s candidate calls for ``op`` (the default call alone unless
    ``default_only`` is False; at most ``limit``), run in the interpreter.  A call that
    launches no Triton kernel (an eager PyTorch candidate) has no reading."""
    from checks.performance import accesses, compiled, problems, reading

    prob = problems.problem(op, seed)
    out = []
    for name, call in problems.candidate_calls(prob, module, default_only)[:limit]:
        _, records = accesses.record(call)
        if not records:
            continue
        facts = compiled.compile_facts(records)
        out.append(reading.read(name, records, facts, prob["work"]))
    return out


def format_reading(r: Reading, indent: str = "  ") -> str:
    return "\n".join([f"{r.variant}:"] + [indent + line for line in r.lines() if line])


__all__ = ["Reading", "format_reading", "ops", "read_module"]
