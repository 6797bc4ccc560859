"""How far a GPU kernel's answer may be from its float64 oracle, per dtype: the one table.

Pure Python (no torch), keyed by dtype name, so that both the named checks
(checks/judging/tensors.py, which maps the names to torch dtypes) and the benchmark's
rows (checks/benchmark/rows.py, which must run without torch) read it.

There are two kinds because two different things are judged.  A named check reports
the worst element and a map of the wrong ones, so it needs a bound for each element
(ELEMENTWISE: |got - want| <= atol + rtol * |want|).  A benchmark row is judged by one
number, the relative error norm ||out - ref|| / ||ref|| (RELATIVE_NORM), which a few
large elements cannot dominate the way they dominate an elementwise bound.

Elementwise:

* fp32: the kernel computes in fp32 with a different summation order than the
  float64 oracle, so a few ulps of relative error per element are expected.
* fp16 / bf16: the result is rounded once to 11 / 8 significant bits, so the error
  is dominated by that final rounding (2^-11 ~ 4.9e-4, 2^-8 ~ 3.9e-3) plus the fp32
  work before it.

Relative norm: rounding a result to fp16 alone gives about 3e-4 and to bf16 about 2e-3
(u/sqrt(3)); fp32 softmax-like arithmetic lands near 1e-7.  An op whose arithmetic
rounds more (a matmul) scales these in its benchmark spec (TOLERANCE_SCALE).
"""

from __future__ import annotations

from typing import Optional

ELEMENTWISE: dict[str, dict[str, float]] = {
    "fp32": {"atol": 1e-5, "rtol": 1e-4},
    "fp16": {"atol": 1e-3, "rtol": 1e-2},
    "bf16": {"atol": 8e-3, "rtol": 2e-2},
    "fp64": {"atol": 1e-10, "rtol": 1e-9},
}

RELATIVE_NORM: dict[str, float] = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1.5e-2}


def elementwise(dtype: str, scale: float = 1.0) -> dict[str, float]:
    """atol and rtol for ``dtype`` (a name: "fp32", "fp16", "bf16", "fp64"), times ``scale``."""
    t = ELEMENTWISE[dtype]
    return {"atol": t["atol"] * scale, "rtol": t["rtol"] * scale}


def relative_norm(dtype: Optional[str], scale: float = 1.0) -> Optional[float]:
    """The relative-error-norm threshold for ``dtype``, times ``scale``; None for a dtype
    without one (a row about a whole op has no dtype)."""
    return RELATIVE_NORM[dtype] * scale if dtype in RELATIVE_NORM else None
