"""The text of a benchmark row's cells: one function per column, and the columns each
reader shows -- the command's table (tables.py), results/SUMMARY.md (results/summarize.py)
and the app's timings panel (tui/benchmark_child.py).

Pure Python (no torch).  Every function takes a row (rows.BenchRow, or a row read from
an older file: keys may be missing, values may be null) and the reader's mark for a
missing value, and returns plain text; a value that is missing or not a number is shown
as missing, never as zero.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Optional

from checks.benchmark import kernels as kernel_info
from checks.benchmark.rows import row_status
from checks.benchmark.statistics import fmt_throughput

Row = Mapping[str, Any]
MISSING = "-"
STATUS_WIDTH = 80  # characters of a failure's first message line
INTERVAL_NOTE = "median ±x: x is the farther end of the median's 95 % interval, when the run measured one"


def number(v: Any) -> Optional[float]:
    """A finite number, or None for anything else (None, NaN, a bool, a string)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def num(v: Any, spec: str = ".2f", missing: str = MISSING) -> str:
    x = number(v)
    return missing if x is None else format(x, spec)


def interval(row: Row) -> Optional[float]:
    """The half-width of the median's 95 % interval (its farther end), when known."""
    med = number(row.get("median_us"))
    lo, hi = number(row.get("median_low_us")), number(row.get("median_high_us"))
    if med is None or lo is None or hi is None:
        return None
    return max(med - lo, hi - med, 0.0)


def median(row: Row, missing: str = MISSING) -> str:
    """The median in µs, with ``±`` its interval's farther end when the run measured one."""
    med = number(row.get("median_us"))
    if med is None:
        return missing
    half = interval(row)
    return f"{med:.2f}" + (f" ±{half:.2f}" if half is not None else "")


def median_or_status(row: Row, missing: str = MISSING) -> str:
    """The median, or, for a reader without a status column, why there is none."""
    status = row_status(row)
    if status not in (None, "ok") and number(row.get("median_us")) is None:
        return "refused" if row.get("refused") else str(status)
    return median(row, missing)


def spread(row: Row, missing: str = MISSING) -> str:
    """The 20th to 80th percentile of the samples, µs."""
    lo, hi = number(row.get("p20_us")), number(row.get("p80_us"))
    return missing if lo is None or hi is None else f"{lo:.2f}-{hi:.2f}"


def per_call(row: Row, missing: str = MISSING) -> str:
    """Per-call time, shown only beside a device time (alone it is the median already)."""
    if number(row.get("device_us")) is None:
        return missing
    return num(row.get("per_call_us"), missing=missing)


def harness(row: Row, missing: str = MISSING) -> str:
    """The per-call timing loop's own cost per call (already taken off the per-call time),
    shown beside a per-call time so a reader sees how much of it the harness could blur."""
    x = number(row.get("harness_us"))
    return missing if x is None or number(row.get("per_call_us")) is None else f"{x:.2f}"


def host(row: Row, missing: str = MISSING) -> str:
    """Host overhead (per-call minus device time), marked when it is most of the call."""
    x = number(row.get("host_us"))
    if x is None:
        return missing
    return f"{x:.2f}" + (" launch-bound" if row.get("launch_bound") is True else "")


def speedup(row: Row, missing: str = MISSING) -> str:
    """The baseline's median over this row's."""
    return num(row.get("speedup"), missing=missing) + ("x" if number(row.get("speedup")) is not None else "")


def throughput(row: Row, missing: str = MISSING) -> str:
    """Achieved GB/s, or TFLOP/s where compute sets the roofline floor."""
    return fmt_throughput(dict(row), missing)


def fraction(row: Row, missing: str = MISSING) -> str:
    """The roofline floor's share of the median (100 %: as fast as the card allows)."""
    x = number(row.get("fraction_of_ceiling"))
    return missing if x is None else f"{x:.0%}"


def kernel(row: Row, missing: str = MISSING) -> str:
    """The first Triton kernel's registers, spills, warps, stages and shared memory."""
    ks = row.get("kernels")
    if not isinstance(ks, list):
        return missing
    return kernel_info.brief([k if isinstance(k, dict) else {} for k in ks])


def rel_error(row: Row, missing: str = MISSING) -> str:
    return num(row.get("rel_error"), ".1e", missing)


def status(row: Row, missing: str = MISSING) -> str:
    """The verdict: "ok", or the verdict in capitals and the message's first line: "FAILED: ...",
    "TODO: ...", "REFUSED skips-work: ..." (a row failed by name)."""
    s = row_status(row)
    if s == "ok":
        return "ok"
    lines = str(row.get("message") or "").strip().splitlines()
    msg = lines[0].strip() if lines else ""
    refused = row.get("refused")
    if refused:
        label = f"REFUSED {refused}"
        msg = _without(msg, f"refused: {refused}:")
    elif s == "todo":
        label, msg = "TODO", _without(msg, "TODO:")
    else:
        label = str(s).upper() if s else missing
    return f"{label}: {msg[:STATUS_WIDTH]}" if msg else label


def _without(text: str, prefix: str) -> str:
    return text[len(prefix) :].strip() if text.startswith(prefix) else text


def variant(row: Row, missing: str = MISSING) -> str:
    """The variant's name, with its configuration unless the name says it already."""
    cfg = row.get("config")
    cfg_text = ",".join(f"{k}={v}" for k, v in cfg.items()) if isinstance(cfg, dict) else ""
    name = str(row.get("variant") or missing)
    return name + (f" ({cfg_text})" if cfg_text and cfg_text not in name else "")


def _field(key: str) -> Callable[[Row, str], str]:
    def text(row: Row, missing: str = MISSING) -> str:
        v = row.get(key)
        return missing if v is None or v == "" else str(v)

    return text


# column key -> (header, cell function)
COLUMNS: dict[str, tuple[str, Callable[[Row, str], str]]] = {
    "variant": ("variant", variant),
    "role": ("role", _field("role")),
    "shape": ("shape", _field("shape")),
    "dtype": ("dtype", _field("dtype")),
    "median": ("median us", median),
    "spread": ("p20-p80 us", spread),
    "per_call": ("per call us", per_call),
    "harness": ("loop us", harness),
    "host": ("host us", host),
    "speedup": ("speedup", speedup),
    "throughput": ("achieved", throughput),
    "fraction": ("% ceiling", fraction),
    "kernel": ("kernel", kernel),
    "rel_error": ("rel err", rel_error),
    "status": ("status", status),
}
NUMERIC = {
    "median",
    "spread",
    "per_call",
    "harness",
    "host",
    "speedup",
    "throughput",
    "fraction",
    "rel_error",
}

# What each reader shows, in order.  The app has no status column: its median says why a
# row has no time (median_or_status); it draws the run, the bar and its own labels itself.
CLI_COLUMNS = (
    "variant",
    "role",
    "shape",
    "dtype",
    "median",
    "spread",
    "per_call",
    "harness",
    "host",
    "speedup",
    "throughput",
    "fraction",
    "kernel",
    "status",
)
SUMMARY_COLUMNS = (
    "shape",
    "dtype",
    "variant",
    "role",
    "median",
    "spread",
    "per_call",
    "harness",
    "host",
    "speedup",
    "throughput",
    "fraction",
    "kernel",
    "rel_error",
    "status",
)
APP_COLUMNS = ("median", "spread", "speedup", "throughput", "fraction", "per_call", "host", "kernel")


def headers(columns: tuple) -> list:
    return [COLUMNS[c][0] for c in columns]


def cells(row: Row, columns: tuple, missing: str = MISSING) -> list:
    """One row's text in ``columns`` (keys of COLUMNS)."""
    return [COLUMNS[c][1](row, missing) for c in columns]


def has_interval(rows: list) -> bool:
    """Whether any row shows its median's interval (then a reader explains ``±``)."""
    return any(interval(r) is not None for r in rows)
