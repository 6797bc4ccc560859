"""Numbers derived from timing samples: microsecond statistics and the 95 % interval of
a median, the rule that keeps sampling until that interval is narrow enough, achieved
throughput against the roofline floor, host overhead and the launch-bound mark, the
working set against the L2, A/A disagreement, and speedups over the baseline.

Pure Python (no torch): every function takes plain numbers, rows and callables.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterable, Optional

# A variant is launch-bound when at least this fraction of its per-call time (CUDA
# events around each Python call) is host time: per-call minus device time (graph replay).
LAUNCH_BOUND_FRACTION = 0.5
# A row faster than a ceiling measured on the same card is impossible: refused.  The
# ceilings are measured (a 1 GiB copy, a cuBLAS matmul), not datasheet peaks, and good
# kernels come within a few percent of them (the reference softmax backward reached 103 %
# of the copy on an H200), so only a margin past 100 % that no measurement noise explains
# is refused.
IMPOSSIBLE = "impossible"
IMPOSSIBLE_FRACTION = 1.15
# A warm row whose working set fits the L2 is served by the L2, whose bandwidth is two to
# three times the memory's on these cards and is not measured: only past four times the
# copy is such a row refused (skipped work shows tens to thousands of times).
L2_RESIDENT_FRACTION = 4.0


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


# --- how sure a median is ------------------------------------------------------------------

CONFIDENCE = 0.95
# Exact binomial sums up to this many samples; past it the normal approximation of the
# binomial, which is within one rank of the exact one there.
EXACT_RANKS_UP_TO = 5000


@functools.lru_cache(maxsize=512)
def median_ranks(n: int, confidence: float = CONFIDENCE) -> Optional[tuple]:
    """0-based indices (lo, hi) into ``n`` sorted samples whose values bound the median
    with at least ``confidence``, whatever the samples' distribution: the number of
    samples below the true median is Binomial(n, 1/2), so [x_(l), x_(n+1-l)] (1-based)
    covers it with probability 1 - 2 P(B <= l - 1); l is the largest rank that keeps
    this at or above ``confidence``.  None when even [min, max] is not sure enough
    (fewer than 6 samples at 95 %)."""
    if n < 1:
        return None
    tail = Fraction(1 - Fraction(confidence).limit_denominator(10**6), 2)  # allowed P per side
    if n > EXACT_RANKS_UP_TO:
        z = _normal_quantile(1 - float(tail))
        l = math.floor((n - z * math.sqrt(n)) / 2)  # 1-based, continuity-corrected downwards
        return (l - 1, n - l) if l >= 1 else None
    total, term, below = 2**n, 1, 0  # term = C(n, i); below = sum of C(n, j) for j < i
    l = 0
    for i in range(n // 2 + 1):
        below += term  # now P(B <= i) * 2**n
        if below * tail.denominator > tail.numerator * total:
            break
        l = i + 1  # P(B <= l - 1) is within the tail
        term = term * (n - i) // (i + 1)
    return (l - 1, n - l) if l >= 1 else None


def _normal_quantile(p: float) -> float:
    """The standard normal quantile, by bisection on erf (only the large-n ranks use it)."""
    lo, hi = -10.0, 10.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def median_interval(xs: Iterable[float], confidence: float = CONFIDENCE) -> Optional[tuple]:
    """(low, high): the distribution-free ``confidence`` interval of the median of
    ``xs`` (see :func:`median_ranks`); None with too few samples."""
    xs = sorted(float(x) for x in xs)
    ranks = median_ranks(len(xs), confidence)
    if ranks is None:
        return None
    return xs[ranks[0]], xs[ranks[1]]


def relative_half_width(interval: Optional[tuple], median: Optional[float]) -> Optional[float]:
    """Half the interval's width over the median; None without an interval or a
    positive median."""
    if interval is None or not median or median <= 0:
        return None
    return (interval[1] - interval[0]) / 2 / median


@dataclass
class RoundTimer:
    """A timer that samples in rounds until it is sure enough (:func:`until_sure`).

    ``sampler(fn)`` does the set-up (warm-up, capture) and returns a callable that
    times one more round and returns its samples in ms.  ``rel_target``: the relative
    half width of the median's 95 % interval to reach; ``cap_s``: the seconds one
    measurement may take.  ``harness``: its samples include the per-call cost of the
    loop around the calls (the runner then measures that cost with an empty candidate
    and subtracts it).  ``by_round``: the samples of one round are not independent (the
    loops of one round share the host's state of those milliseconds), so how sure the
    median is comes from the rounds' medians, and sampling goes on for ``min_span_s``
    seconds at least.  Called like a plain timer, it times one round."""

    sampler: Callable[[Callable], Callable[[], list]]
    rel_target: float
    cap_s: float
    harness: bool = False
    max_samples: int = 2000
    by_round: bool = False
    min_span_s: float = 0.0

    def __call__(self, fn: Callable) -> list:
        return list(self.sampler(fn)())


def until_sure(
    next_round: Callable[[], list],
    *,
    rel_target: float,
    cap_s: float,
    clock: Callable[[], float] = time.perf_counter,
    max_samples: int = 2000,
    confidence: float = CONFIDENCE,
    by_round: bool = False,
    min_span_s: float = 0.0,
) -> dict:
    """Rounds of samples until the median's interval is narrow enough.

    Stops as soon as the relative half width is at most ``rel_target`` (converged) after
    ``min_span_s`` seconds of sampling, or when the next round would end past ``cap_s`` seconds from
    the start, judged by the longest round so far, or at ``max_samples``.  The first
    round always runs.  ``by_round``: the interval is that of the rounds' medians (the
    unit whose values are independent; see :func:`block_medians`), not of the samples.
    Returns samples, rounds, converged, rel_half_width and elapsed_s."""
    start = clock()
    samples: list = []
    medians: list = []
    rounds, longest, half = 0, 0.0, None
    converged = False
    while True:
        began = clock()
        got = list(next_round())
        if not got:
            raise ValueError("a round of timing gave no samples")
        samples += got
        medians.append(quantile(got, 0.5))
        rounds += 1
        now = clock()
        longest = max(longest, now - began)
        unit = medians if by_round else samples
        half = relative_half_width(median_interval(unit, confidence), quantile(unit, 0.5))
        if half is not None and half <= rel_target and now - start >= min_span_s:
            converged = True
            break
        if now - start + longest > cap_s or len(samples) >= max_samples:
            break
    return {
        "samples": samples,
        "rounds": rounds,
        "converged": converged,
        "rel_half_width": half,
        "elapsed_s": clock() - start,
    }


def sample_stats(samples_ms: list, sampling: Optional[dict] = None) -> dict:
    """Raw samples (ms, as triton.testing returns them) -> microsecond statistics, with
    the median's 95 % interval (``median_low_us``, ``median_high_us``; None under 6
    samples) and how they were sampled (``rounds``, ``converged``: None when the timer
    had no target)."""
    us = [float(s) * 1e3 for s in samples_ms]
    if not us:
        raise ValueError("no timing samples")
    median = quantile(us, 0.5)
    sampling = sampling or {}
    interval = median_interval(block_medians(us, sampling.get("round_size")))
    return {
        "samples_us": [round(u, 4) for u in us],
        "median_us": median,
        "p20_us": quantile(us, 0.2),
        "p80_us": quantile(us, 0.8),
        "min_us": min(us),
        "max_us": max(us),
        "mean_us": sum(us) / len(us),
        "median_low_us": interval[0] if interval else None,
        "median_high_us": interval[1] if interval else None,
        "rel_half_width": relative_half_width(interval, median),
        "n_samples": len(us),
        "rounds": sampling.get("rounds", 1),
        "converged": sampling.get("converged"),
        **({"round_size": sampling["round_size"]} if sampling.get("round_size") else {}),
    }


def block_medians(xs: list, size: Optional[int]) -> list:
    """The medians of consecutive blocks of ``size`` samples (the rounds of a timer whose
    samples within a round are not independent), or ``xs`` itself without a size.  The
    interval of a median is then taken over these: samples taken milliseconds apart share
    the host's state, and counting them as independent makes the interval look narrower
    than a second run would agree with."""
    if not size or size <= 1:
        return list(xs)
    size = int(size)
    return [quantile(xs[i : i + size], 0.5) for i in range(0, len(xs), size)]


def add_timings(
    row: dict,
    graph_ms: Optional[list] = None,
    events_ms: Optional[list] = None,
    *,
    harness_us: Optional[float] = None,
    sampling: Optional[dict] = None,
) -> dict:
    """Fill a row from the samples of one or both timers.

    The row's own statistics (``median_us`` ...) are the graph samples when there are
    any (device time: what the roofline and the speedups compare), else the events
    samples.  ``device_us`` is the graph median, ``per_call_us`` the events median
    (events statistics also go to ``per_call``); with both, ``host_us`` = per-call
    minus device time (never below 0), ``host_fraction`` = host / per-call and
    ``launch_bound`` = host_fraction >= LAUNCH_BOUND_FRACTION.

    ``harness_us``: the timing loop's own cost per call (an empty candidate's), taken
    off every events sample (not below 0); a caller never sees a call faster than its
    device time, so ``per_call_us`` is then at least ``device_us``.  ``sampling``:
    {"graph": ..., "events": ...} rounds and convergence of each timer."""
    sampling = sampling or {}
    if events_ms and harness_us:
        events_ms = [max(0.0, float(s) - harness_us / 1e3) for s in events_ms]
    graph = sample_stats(graph_ms, sampling.get("graph")) if graph_ms else None
    events = sample_stats(events_ms, sampling.get("events")) if events_ms else None
    stats = graph or events
    if stats is None:
        raise ValueError("no timing samples")
    row.update(stats)
    row["harness_us"] = harness_us if events else None
    row["device_us"] = graph["median_us"] if graph else None
    row["per_call_us"] = events["median_us"] if events else None
    if graph is not None and events is not None:
        row["per_call"] = events
        if harness_us:
            row["per_call_us"] = max(events["median_us"], graph["median_us"])
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
    in_l2 = row.get("colder_than_label") is False  # warm, and its working set fits the L2
    if gbps and bw and gbps > bw * (L2_RESIDENT_FRACTION if in_l2 else IMPOSSIBLE_FRACTION):
        said = (
            f"{gbps:,.0f} GB/s is {gbps / bw:.0%} of the copy bandwidth measured on this card "
            f"({bw:,.0f} GB/s, the memory limit)"
        )
        if in_l2:
            said += f", more than {L2_RESIDENT_FRACTION:.0f} times it even with every byte in the L2"
    elif tflops and rate and tflops > rate * IMPOSSIBLE_FRACTION:
        said = (
            f"{tflops:,.1f} TFLOP/s is {tflops / rate:.0%} of the bf16 matmul rate measured "
            f"on this card ({rate:,.1f} TFLOP/s, the compute limit)"
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


# --- the working set against the L2 ----------------------------------------------------------


def cache_state(working_set_bytes: Optional[int], l2_bytes: Optional[int], cache: str) -> dict:
    """What a row's "warm" label means: the bytes its timed calls rotate through (every
    input set and an output per set) against the card's L2.  ``colder_than_label`` is
    True when a warm row's working set does not fit (each call then finds less of its
    data in the L2 than "warm" says), False when it fits, None when unknown or when the
    row is already timed cold (the L2 flushed before each call)."""
    colder = None
    if cache == "warm" and working_set_bytes is not None and l2_bytes:
        colder = working_set_bytes > l2_bytes
    return {
        "working_set_bytes": working_set_bytes,
        "l2_bytes": l2_bytes or None,
        "colder_than_label": colder,
    }


# --- A/A: the same variant timed twice --------------------------------------------------------

AA_KINDS = (("device", "device_us"), ("per_call", "per_call_us"))


def disagreement(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """|a - b| / min(a, b): how far two timings of the same thing disagree (0.05 = 5 %);
    None when either is missing or not positive."""
    a, b = finite(a), finite(b)
    if a is None or b is None or a <= 0 or b <= 0:
        return None
    return abs(a - b) / min(a, b)


def aa_row(first: dict, second: dict) -> dict:
    """A row's A/A record: the second timing's device and per-call medians and how far
    each disagrees with the first (the row's own)."""
    out: dict[str, Any] = {}
    for kind, key in AA_KINDS:
        out[f"{kind}_us"] = [first.get(key), second.get(key)]
        out[f"{kind}_diff"] = disagreement(first.get(key), second.get(key))
    return out


def spread(values: list) -> dict:
    """n, median, 90th percentile and worst of some disagreements (None when empty)."""
    xs = [float(x) for x in values if finite(x) is not None]
    if not xs:
        return {"n": 0, "median": None, "p90": None, "worst": None}
    return {"n": len(xs), "median": quantile(xs, 0.5), "p90": quantile(xs, 0.9), "worst": max(xs)}


def aa_summary(rows: list) -> dict:
    """Over the timed rows that were timed twice: the spread of device-time and of
    per-call disagreements."""
    timed = [r for r in rows if r.get("status") == "ok" and isinstance(r.get("aa"), dict)]
    return {kind: spread([r["aa"].get(f"{kind}_diff") for r in timed]) for kind, _ in AA_KINDS}


def harness_summary(rows: list) -> Optional[dict]:
    """The timing loop's own cost per call over the rows that measured it, or None."""
    xs = [float(r["harness_us"]) for r in rows if finite(r.get("harness_us")) is not None]
    if not xs:
        return None
    return {"n": len(xs), "median_us": quantile(xs, 0.5), "min_us": min(xs), "max_us": max(xs)}
