"""One result row per (op, shape, dtype, variant): its fields, the correctness
tolerance it is judged by, and the command's exit code over all rows.

Pure Python (no torch): the payload, the tables and the tests build rows on a CPU.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional, TypedDict

from checks.command_line import EXIT_PASS, EXIT_TODO, EXIT_UNAVAILABLE, EXIT_WRONG
from checks.judging import tolerances

DTYPE_NAMES = ("fp32", "fp16", "bf16")
ROLES = ("candidate", "baseline", "peer")
# A row's status: timed, failed (wrong, crashed, refused) or TODO (the learner's own
# NotImplementedError, the checks' "todo").  Files written before 2026-12-03 said
# "skipped" for TODO; readers map it with row_status().
STATUSES = ("ok", "failed", "todo")
LEGACY_STATUS = {"skipped": "todo"}


def row_status(row: Mapping[str, Any]) -> Optional[str]:
    """A row's status in today's words (a legacy word mapped; None when it has none)."""
    s = row.get("status")
    return LEGACY_STATUS.get(s, s) if isinstance(s, str) else s


# Why a row was refused (failed, and out of every comparison): not the learner's
# kernel's answer; timed calls that launched none of its kernels; timed calls served
# from a cache; a speed past a ceiling the run measured.
REFUSALS = ("not-own-kernel", "skips-work", "cached-output", "impossible")

# Pass/fail is the relative error norm ||out - ref|| / ||ref|| against the spec's float64
# oracle (computed from the very inputs the variant saw, so only the kernel's arithmetic
# and the output's rounding count), at the thresholds of checks/judging/tolerances.py
# (which says why they are what they are), scaled by the spec's TOLERANCE_SCALE.
REL_TOL = tolerances.RELATIVE_NORM

# ``--stream-rows`` writes each row, as soon as it is measured, as one JSON line
# {"type": ROW_LINE_TYPE, "row": {...}}.
ROW_LINE_TYPE = "bench_row"

TIMING_FIELDS = ("median_us", "p20_us", "p80_us", "min_us", "max_us", "mean_us")
# What a row says beyond its primary timing (see statistics.py and kernels.py).
EXPLAIN_FIELDS = ("device_us", "per_call_us", "host_us", "host_fraction", "launch_bound", "ceiling_us")


def tolerance(dtype: Optional[str], scale: float = 1.0) -> Optional[float]:
    """The relative-error threshold for ``dtype``, times the op's scale."""
    return tolerances.relative_norm(dtype, scale)


def jsonable(d: Any) -> Any:
    return json.loads(json.dumps(d, default=str))


class RowIdentity(TypedDict):
    """What every row has, in every file: which variant of which case, and its verdict."""

    op: str  # the benchmarked op (a GPU workshop's id)
    shape: str  # the spec's shape name, "(all)" for a row about the whole op (a load error)
    dtype: Optional[str]  # "fp32", "fp16", "bf16"; None for a row about the whole op
    variant: str  # the variant's name in the spec ("(variants)": the shape could not be set up)
    role: str  # one of ROLES
    status: str  # one of STATUSES ("skipped" in older files: row_status() reads it)


class BenchRow(RowIdentity, total=False):
    """One result row: a variant of an op at one shape and dtype.  ``new_row`` fills every
    key (None until measured); rows read from older files may lack any key but the
    identity, so readers use ``row.get``."""

    shape_role: Optional[str]  # "comparison" or "roofline"
    params: dict  # the shape's parameters (rows, cols, ...)
    config: dict  # the variant's configuration (num_warps=4, ...)
    message: str  # why it failed or is TODO ("" when ok)
    refused: Optional[str]  # one of REFUSALS when refused by name, else None
    tolerance: Optional[float]  # the relative-error threshold it was judged by
    max_abs_error: Optional[float]  # max |out - oracle| of the correctness call
    rel_error: Optional[float]  # ||out - oracle|| / ||oracle|| of the correctness call
    samples_us: list  # the primary timer's raw samples, microseconds
    median_us: Optional[float]  # the primary timing's median (device time when measured)
    p20_us: Optional[float]  # its 20th percentile
    p80_us: Optional[float]  # its 80th percentile
    min_us: Optional[float]  # its fastest sample
    max_us: Optional[float]  # its slowest sample
    mean_us: Optional[float]  # its mean
    median_low_us: Optional[float]  # low end of the median's 95 % interval
    median_high_us: Optional[float]  # high end of the median's 95 % interval
    rel_half_width: Optional[float]  # the interval's half width over the median
    n_samples: Optional[int]  # samples the median is of
    rounds: Optional[int]  # rounds of samples taken before the interval was narrow enough
    converged: Optional[bool]  # the interval got narrow enough before the time cap
    harness_us: Optional[float]  # the timing loop's own cost per call, taken off per-call samples
    per_call: Optional[dict]  # with both timers: the per-call (events) statistics
    device_us: Optional[float]  # median device time (CUDA-graph replay)
    per_call_us: Optional[float]  # median per-call time a Python caller sees (CUDA events)
    host_us: Optional[float]  # per-call minus device time, not below 0
    host_fraction: Optional[float]  # host_us / per_call_us
    launch_bound: Optional[bool]  # host time is at least half of the per-call time
    ceiling_us: Optional[float]  # the roofline floor: no kernel can be faster
    working_set_bytes: Optional[int]  # bytes the timed calls rotate through (inputs, outputs)
    l2_bytes: Optional[int]  # the card's L2 size, to compare the working set with
    colder_than_label: Optional[bool]  # the working set passes the L2: colder than "warm" says
    one_set_device_us: Optional[float]  # such a row's device time on one input set (warm L2)
    aa: Optional[dict]  # --aa: the two timings of this row and how far they disagree
    kernels: Optional[list]  # the Triton kernels one call launched ([]: none; None: not recorded)
    bytes: Optional[int]  # bytes the op must move at this shape
    flops: Optional[int]  # floating-point operations it must do (None: memory-bound op)
    gbps: Optional[float]  # achieved GB/s
    tflops: Optional[float]  # achieved TFLOP/s
    fraction_of_ceiling: Optional[float]  # ceiling_us / median_us
    bound: Optional[str]  # "memory" or "compute": which term sets the roofline floor
    speedup: Optional[float]  # the baseline's median / this row's, same op, shape and dtype


def new_row(
    op: str,
    shape: Optional[dict],
    dtype: Optional[str],
    variant: str,
    role: str,
    config: Optional[dict] = None,
    tolerance_scale: float = 1.0,
) -> BenchRow:
    """A row before it is measured: every field present, None until known."""
    params = {k: v for k, v in (shape or {}).items() if k not in ("name", "role")}
    return BenchRow(
        op=op,
        shape=shape["name"] if shape else "(all)",
        shape_role=shape.get("role") if shape else None,
        params=jsonable(params),
        dtype=dtype,
        variant=variant,
        role=role if role in ROLES else "candidate",
        config=jsonable(config or {}),
        status="ok",
        message="",
        refused=None,
        tolerance=tolerance(dtype, tolerance_scale),
        max_abs_error=None,
        rel_error=None,
        samples_us=[],
        median_us=None,
        p20_us=None,
        p80_us=None,
        min_us=None,
        max_us=None,
        mean_us=None,
        median_low_us=None,
        median_high_us=None,
        rel_half_width=None,
        n_samples=None,
        rounds=None,
        converged=None,
        harness_us=None,
        per_call=None,
        device_us=None,
        per_call_us=None,
        host_us=None,
        host_fraction=None,
        launch_bound=None,
        ceiling_us=None,
        working_set_bytes=None,
        l2_bytes=None,
        colder_than_label=None,
        one_set_device_us=None,
        aa=None,
        kernels=None,
        bytes=None,
        flops=None,
        gbps=None,
        tflops=None,
        fraction_of_ceiling=None,
        bound=None,
        speedup=None,
    )


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
