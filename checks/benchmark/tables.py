"""Printed tables of a run: one row per variant, with Rich when it is importable and
aligned plain text otherwise; then the target verdicts.  Pure Python."""

from __future__ import annotations

import os
import sys

from checks.benchmark import kernels as kernel_info
from checks.benchmark.statistics import fmt_throughput

HEADERS = [
    "variant",
    "role",
    "shape",
    "dtype",
    "median us",
    "p20-p80 us",
    "per call us",
    "host us",
    "speedup",
    "achieved",
    "% ceiling",
    "kernel",
    "status",
]
NUMERIC = {"median us", "p20-p80 us", "per call us", "host us", "speedup", "achieved", "% ceiling"}


def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def host(r: dict) -> str:
    """Host overhead, marked when the per-call time is mostly host time."""
    if r.get("host_us") is None:
        return "-"
    return f"{r['host_us']:.2f}" + (" launch-bound" if r.get("launch_bound") else "")


def status(r: dict) -> str:
    if r["status"] == "ok":
        return "ok"
    first = r["message"].splitlines()[0][:70] if r.get("message") else ""
    return f"{r['status']}: {first}"


def variant_label(r: dict) -> str:
    cfg = ",".join(f"{k}={v}" for k, v in (r.get("config") or {}).items())
    return r["variant"] + (f" ({cfg})" if cfg and cfg not in r["variant"] else "")


def table_rows(rows: list) -> list:
    """The printed columns of one op's rows (strings)."""
    out = []
    for r in rows:
        spread = f"{r['p20_us']:.2f}-{r['p80_us']:.2f}" if r.get("p20_us") is not None else "-"
        frac = r.get("fraction_of_ceiling")
        per_call = r.get("per_call_us") if r.get("device_us") is not None else None
        out.append(
            [
                variant_label(r),
                r["role"],
                r["shape"],
                r["dtype"] or "-",
                fmt(r.get("median_us")),
                spread,
                fmt(per_call),
                host(r),
                fmt(r.get("speedup")) + ("x" if r.get("speedup") is not None else ""),
                fmt_throughput(r),
                fmt(frac * 100 if frac is not None else None, ".0f") + ("%" if frac is not None else ""),
                kernel_info.brief(r.get("kernels")),
                status(r),
            ]
        )
    return out


def print_table(title: str, rows: list, stream=None) -> None:
    """A Rich table when Rich is importable, else aligned plain text."""
    stream = stream or sys.stdout
    body = table_rows(rows)
    try:
        from rich.console import Console
        from rich.table import Table

        rich = True
    except ImportError:
        rich = False
    if rich:
        tty = stream.isatty() and not os.environ.get("NO_COLOR")
        console = Console(file=stream, width=None if tty else 200, no_color=not tty, highlight=False)
        t = Table(title=title, title_justify="left")
        for h in HEADERS:
            t.add_column(h, justify="right" if h in NUMERIC else "left")
        for line in body:
            style = None if line[-1] == "ok" else ("red" if line[-1].startswith("failed") else "yellow")
            t.add_row(*line, style=style)
        console.print(t)
        return
    widths = [max(len(h), *(len(l[i]) for l in body)) for i, h in enumerate(HEADERS)]
    print(title, file=stream)
    print("  ".join(h.ljust(w) for h, w in zip(HEADERS, widths)), file=stream)
    for l in body:
        print("  ".join(c.ljust(w) for c, w in zip(l, widths)), file=stream)


def print_targets(targets: list, stream=None) -> None:
    stream = stream or sys.stdout
    if not targets:
        return
    print("Targets:", file=stream)
    for t in targets:
        m = "-" if t["measured"] is None else f"{t['measured']:.3g}"
        print(
            f"  {'met   ' if t['met'] else 'MISSED'} {t['op']}: {t['what']} "
            f"(measured {m} {t['comparison']} {t['target']} {t['unit']})",
            file=stream,
        )
