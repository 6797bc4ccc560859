"""The README's save-to-verdict latency table, generated from ``python -m tui.latency``
JSON (schema ``kernel-course/latency`` version 2)::

    python results/latency_table.py results/<date>-<commit>-h200-latency.json [more.json ...]
    python results/latency_table.py --label "2-core CPU" results/local/latency-*.json

One row per workshop and scenario: the warm path (the app) and a fresh
``python -m checks`` process, first and last verdict as median (min-max) over the
repeats, the ratio fresh/warm of the last verdict, and the targets (on a GPU).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

CODES = {
    "strided_softmax": "I1",
    "softmax_backward": "I2",
    "fused_gemm": "I3",
    "online_normalizer": "A1",
    "split_softmax": "A2",
    "streaming_attention": "A3",
}


def _s(x: float) -> str:
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"


def _cell(row: dict, key: str) -> str:
    v = row.get(key)
    if not v:
        return "-"
    if v["min"] == v["max"]:
        return f"{_s(v['median'])} s"
    return f"{_s(v['median'])} s ({_s(v['min'])}-{_s(v['max'])})"


def _targets(row: dict) -> str:
    t = row.get("targets")
    if not t:
        return ""
    if not t.get("applies"):
        return "no target (no GPU)"
    parts = []
    for key, name in (("last_s", "last <= 3 s"), ("first_s", "first <= 0.7 s"), ("ratio", ">= 5x")):
        if key in t:
            g = t[key]
            unit = "x" if key == "ratio" else " s"
            parts.append(f"{name}: " + ("met" if g["met"] else f"missed by {g['missed_by']:g}{unit}"))
    return "; ".join(parts)


def machine_label(payload: dict) -> str:
    m = payload.get("machine", {})
    return f"GPU, {m.get('cpus')} cores" if m.get("gpu") else f"{m.get('cpus')}-core CPU"


def rows(payload: dict, label: str = "") -> list:
    label = label or machine_label(payload)
    pools = payload.get("machine", {}).get("pool_size", {})
    summary = payload["summary"]
    out = []
    for warm in summary:
        if warm["path"] != "warm" or warm["scenario"] == "unchanged save":
            continue
        fresh = next(
            (
                r
                for r in summary
                if r["path"] == "fresh"
                and r["workshop"] == warm["workshop"]
                and r["scenario"] == warm["scenario"]
            ),
            {},
        )
        wid = warm["workshop"]
        ratio = warm.get("ratio_fresh_over_warm", {}).get("last")
        out.append(
            [
                label,
                f"{CODES.get(wid, wid)} ({wid}), {warm['scenario']}",
                str(pools.get(wid, "")),
                _cell(warm, "first_s"),
                _cell(warm, "last_s"),
                _cell(fresh, "first_s"),
                _cell(fresh, "last_s"),
                f"{ratio:g}x" if ratio else "-",
                _targets(warm),
            ]
        )
    return out


HEADER = [
    "machine",
    "workshop, edit",
    "workers",
    "warm: first verdict",
    "warm: last verdict",
    "fresh: first",
    "fresh: last",
    "last, fresh / warm",
    "targets",
]


def table(payloads: list, label: str = "") -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    for p in payloads:
        for r in rows(p, label):
            lines.append("| " + " | ".join(r) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python results/latency_table.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="+", type=Path)
    ap.add_argument("--label", default="", help="machine name for the first column (e.g. H200)")
    args = ap.parse_args(argv)
    payloads = []
    for path in args.json:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != "kernel-course/latency" or data.get("version", 1) < 2:
            ap.error(f"{path}: not latency JSON version 2 (python -m tui.latency --json)")
        payloads.append(data)
    sys.stdout.write(table(payloads, args.label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
