"""One result row per (op, shape, dtype, variant): its fields, the correctness
tolerance it is judged by, and the command's exit code over all rows.

Pure Python (no torch): the payload, the tables and the tests build rows on a CPU.
"""

from __future__ import annotations

import json
from typing import Optional

from checks.command_line import EXIT_PASS, EXIT_TODO, EXIT_UNAVAILABLE, EXIT_WRONG

DTYPE_NAMES = ("fp32", "fp16", "bf16")
ROLES = ("candidate", "baseline", "peer")
# A row's status: timed, failed (wrong, crashed, refused) or TODO (the learner's own
# NotImplementedError, the checks' "todo").  Files written before 2026-12-03 said
# "skipped" for TODO; readers map it with row_status().
STATUSES = ("ok", "failed", "todo")
LEGACY_STATUS = {"skipped": "todo"}


def row_status(row: dict) -> Optional[str]:
    s = row.get("status")
    return LEGACY_STATUS.get(s, s) if isinstance(s, str) else s


# Why a row was refused (failed, and out of every comparison): not the learner's
# kernel's answer; timed calls that launched none of its kernels; timed calls served
# from a cache; a speed past a ceiling the run measured.
REFUSALS = ("not-own-kernel", "skips-work", "cached-output", "impossible")

# Pass/fail is the relative error norm ||out - ref|| / ||ref|| against the spec's float64
# oracle (computed from the very inputs the variant saw, so only the kernel's arithmetic
# and the output's rounding count).  Rounding a result to fp16 alone gives about 3e-4 and
# to bf16 about 2e-3 (u/sqrt(3)); fp32 softmax-like arithmetic lands near 1e-7.  An op
# whose arithmetic rounds more (a matmul) scales these in its spec (TOLERANCE_SCALE).
REL_TOL = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1.5e-2}

TIMING_FIELDS = ("median_us", "p20_us", "p80_us", "min_us", "max_us", "mean_us")
# What a row says beyond its primary timing (see statistics.py and kernels.py).
EXPLAIN_FIELDS = ("device_us", "per_call_us", "host_us", "host_fraction", "launch_bound", "ceiling_us")


def tolerance(dtype: Optional[str], scale: float = 1.0) -> Optional[float]:
    """The relative-error threshold for ``dtype``, times the op's scale."""
    return REL_TOL[dtype] * scale if dtype in REL_TOL else None


def jsonable(d):
    return json.loads(json.dumps(d, default=str))


def new_row(
    op: str,
    shape: Optional[dict],
    dtype: Optional[str],
    variant: str,
    role: str,
    config: Optional[dict] = None,
    tolerance_scale: float = 1.0,
) -> dict:
    params = {k: v for k, v in (shape or {}).items() if k not in ("name", "role")}
    return {
        "op": op,
        "shape": shape["name"] if shape else "(all)",
        "shape_role": shape.get("role") if shape else None,
        "params": jsonable(params),
        "dtype": dtype,
        "variant": variant,
        "role": role if role in ROLES else "candidate",
        "config": jsonable(config or {}),
        "status": "ok",
        "message": "",
        "refused": None,
        "tolerance": tolerance(dtype, tolerance_scale),
        "max_abs_error": None,
        "rel_error": None,
        "samples_us": [],
        **{k: None for k in TIMING_FIELDS},
        "per_call": None,
        **{k: None for k in EXPLAIN_FIELDS},
        "kernels": None,
        "bytes": None,
        "flops": None,
        "gbps": None,
        "tflops": None,
        "fraction_of_ceiling": None,
        "bound": None,
        "speedup": None,
        # how sure the median is (statistics.sample_stats), the timing loop's own cost,
        # the working set against the L2, the A/A second timing (statistics.py)
        "median_low_us": None,
        "median_high_us": None,
        "rel_half_width": None,
        "n_samples": None,
        "rounds": None,
        "converged": None,
        "harness_us": None,
        "working_set_bytes": None,
        "l2_bytes": None,
        "colder_than_label": None,
        "aa": None,
    }


def exit_code(rows: list) -> int:
    """0 all ran and passed; 1 a variant failed; 2 a TODO and nothing failed; 3 no rows."""
    statuses = {row_status(r) for r in rows}
    if not rows:
        return EXIT_UNAVAILABLE
    if "failed" in statuses:
        return EXIT_WRONG
    if "todo" in statuses:
        return EXIT_TODO
    return EXIT_PASS
