"""Numbers derived from timing samples: microsecond statistics, achieved throughput
against the roofline floor, host overhead and the launch-bound mark, and speedups over
the baseline.

Pure Python (no torch): every function takes plain numbers and rows.
"""

from __future__ import annotations

import math
from typing import Optional

# A variant is launch-bound when at least this fraction of its per-call time (CUDA
# events around each Python call) is host time: per-call minus device time (graph replay).
LAUNCH_BOUND_FRACTION = 0.5
# A row faster than a ceiling measured in the same run is impossible: refused.  The
# ceilings are measured (a 1 GiB copy, a cuBLAS matmul), not datasheet peaks, and good
# kernels come within a few percent of them (the reference softmax backward reached 103 %
# of the copy on an H200), so only a margin past 100 % that no measurement noise explains
# is refused.
IMPOSSIBLE = "impossible"
IMPOSSIBLE_FRACTION = 1.15


def finite(x) -> Optional[float]:
    """A JSON-safe number: None for None, NaN and infinities."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def quantile(xs: list, q: float) -> float:
    """Linear interpolation between order statistics (triton.testing's and numpy's default)."""
    xs = sorted(xs)
    point = q * (len(xs) - 1)
    lo, hi = math.floor(point), math.ceil(point)
    return xs[lo] + (point - lo) * (xs[hi] - xs[lo])


def sample_stats(samples_ms: list) -> dict:
    """Raw samples (ms, as triton.testing returns them) -> microsecond statistics."""
    us = [float(s) * 1e3 for s in samples_ms]
    if not us:
        raise ValueError("no timing samples")
    return {
        "samples_us": [round(u, 4) for u in us],
        "median_us": quantile(us, 0.5),
        "p20_us": quantile(us, 0.2),
        "p80_us": quantile(us, 0.8),
        "min_us": min(us),
        "max_us": max(us),
        "mean_us": sum(us) / len(us),
    }


def add_timings(row: dict, graph_ms: Optional[list] = None, events_ms: Optional[list] = None) -> dict:
    """Fill a row from the samples of one or both timers.

    The row's own statistics (``median_us`` ...) are the graph samples when there are
    any (device time: what the roofline and the speedups compare), else the events
    samples.  ``device_us`` is the graph median, ``per_call_us`` the events median
    (events statistics also go to ``per_call``); with both, ``host_us`` = per-call
    minus device time (never below 0), ``host_fraction`` = host / per-call and
    ``launch_bound`` = host_fraction >= LAUNCH_BOUND_FRACTION."""
    graph = sample_stats(graph_ms) if graph_ms else None
    events = sample_stats(events_ms) if events_ms else None
    stats = graph or events
    if stats is None:
        raise ValueError("no timing samples")
    row.update(stats)
    row["device_us"] = graph["median_us"] if graph else None
    row["per_call_us"] = events["median_us"] if events else None
    if graph is not None and events is not None:
        row["per_call"] = events
    return add_host_overhead(row)


def add_host_overhead(row: dict) -> dict:
    device, per_call = finite(row.get("device_us")), finite(row.get("per_call_us"))
    if device is None or per_call is None or per_call <= 0:
        row.update(host_us=None, host_fraction=None, launch_bound=None)
        return row
    host = max(0.0, per_call - device)
    row["host_us"] = host
    row["host_fraction"] = host / per_call
    row["launch_bound"] = row["host_fraction"] >= LAUNCH_BOUND_FRACTION
    return row


def add_throughput(row: dict, work: dict, ceilings: dict) -> dict:
    """Achieved GB/s and TFLOP/s, and the fraction of the roofline floor: the floor time
    (``ceiling_us``) is max(bytes / copy bandwidth, flops / bf16 matmul rate) (just the
    bandwidth term for a memory-bound op whose flops are None); fraction = floor / median."""
    nbytes = work.get("bytes") if work else None
    flops = work.get("flops") if work else None
    row["bytes"] = int(nbytes) if nbytes is not None else None
    row["flops"] = int(flops) if flops is not None else None
    med = row.get("median_us")
    if not med or med <= 0:
        return row
    if nbytes:
        row["gbps"] = nbytes / med / 1e3  # bytes per us -> GB/s
    if flops:
        row["tflops"] = flops / med / 1e6  # flop per us -> TFLOP/s
    bw = (ceilings or {}).get("copy_gbps")
    rate = (ceilings or {}).get("bf16_matmul_tflops")
    t_bytes = nbytes / (bw * 1e3) if (nbytes and bw) else None  # us
    t_flops = flops / (rate * 1e6) if (flops and rate) else None  # us
    if t_bytes is not None or t_flops is not None:
        if not flops or t_flops is not None:  # with flops, the matmul rate must be known
            row["ceiling_us"] = max(t for t in (t_bytes, t_flops) if t is not None)
            row["fraction_of_ceiling"] = row["ceiling_us"] / med
        # which term sets the floor decides what the tables show: GB/s or TFLOP/s
        row["bound"] = "compute" if (t_flops or 0) > (t_bytes or 0) else "memory"
    return row


def _rate(x) -> Optional[float]:
    """A rate from a row: None for a missing, non-numeric or non-finite value."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def fmt_throughput(row: dict, missing: str = "-") -> str:
    """A row's achieved throughput as every table shows it (the CLI, the app, SUMMARY.md,
    the charts): TFLOP/s when compute sets the roofline floor (``bound``, from
    :func:`add_throughput`) or only flops were counted, else GB/s; ``missing`` when the
    row has neither."""
    gbps, tflops = _rate(row.get("gbps")), _rate(row.get("tflops"))
    if tflops is not None and (row.get("bound") == "compute" or gbps is None):
        return f"{tflops:.1f} TFLOP/s"
    if gbps is not None:
        return f"{gbps:.0f} GB/s"
    return missing


def impossible(row: dict, ceilings: dict) -> Optional[str]:
    """Which measured ceiling the row's throughput passes (by more than the margin), said
    with both numbers; None when it passes none."""
    bw = finite((ceilings or {}).get("copy_gbps"))
    rate = finite((ceilings or {}).get("bf16_matmul_tflops"))
    gbps, tflops = finite(row.get("gbps")), finite(row.get("tflops"))
    said = None
    if gbps and bw and gbps > bw * IMPOSSIBLE_FRACTION:
        said = (
            f"{gbps:,.0f} GB/s is {gbps / bw:.0%} of the copy bandwidth this run measured "
            f"({bw:,.0f} GB/s, the memory limit)"
        )
    elif tflops and rate and tflops > rate * IMPOSSIBLE_FRACTION:
        said = (
            f"{tflops:,.1f} TFLOP/s is {tflops / rate:.0%} of the bf16 matmul rate this run "
            f"measured ({rate:,.1f} TFLOP/s, the compute limit)"
        )
    if said is None:
        return None
    return (
        f"{said}; no kernel moves its bytes or does its arithmetic faster than the card can, "
        f"so these calls did not do the work the timing is credited with"
    )


def causal_flag(row: dict):
    """An attention-like row's causal flag, wherever the spec put it (shape params or
    variant config, or a "-causal"/"-full" shape name); None for other ops."""
    for where in (row.get("params") or {}, row.get("config") or {}):
        if "causal" in where:
            return bool(where["causal"])
    name = str(row.get("shape", ""))
    if name.endswith("-causal"):
        return True
    if name.endswith("-full"):
        return False
    return None


def group_key(row: dict) -> tuple:
    return (row["op"], row["shape"], row["dtype"], causal_flag(row))


def add_speedups(rows: list) -> list:
    """speedup = the baseline's median / this variant's median, within one op, shape,
    dtype (and causal flag, for attention whose spec puts it in the variant config)."""
    base: dict[tuple, float] = {}
    for r in rows:
        if r["role"] == "baseline" and r["status"] == "ok" and r["median_us"]:
            base.setdefault(group_key(r), r["median_us"])
    for r in rows:
        b = base.get(group_key(r))
        r["speedup"] = b / r["median_us"] if (b and r["status"] == "ok" and r["median_us"]) else None
    return rows
