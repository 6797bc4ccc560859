"""The README's save-to-verdict latency table, generated from ``python -m tui.latency``
JSON (schema ``kernel-course/latency`` version 2)::

    python results/latency_table.py results/<date>-<commit>-h200-latency.json [more.json ...]
    python results/latency_table.py --label "2-core CPU" results/local/latency-*.json
    python results/latency_table.py --readme README.md

``--readme`` rewrites the table between README's ``<!-- latency-table ... -->`` and
``<!-- /latency-table -->`` markers from the JSON files the opening marker names
(``files=a.json,b.json``, paths from the repository root), so the table in the README
is always the one these files give (a test checks it).

One row per workshop and scenario: the warm path (the app) and a fresh
``python -m checks`` process, first and last verdict as median (min-max) over the
repeats, the ratio fresh/warm of the last verdict, the app's timings after a pass
(with ``--benchmarks``: to its first and last row, where the JSON has them, and to the
whole table), and the targets (on a GPU).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from workshops import catalog  # noqa: E402

MARKER = re.compile(
    r"<!-- latency-table files=(?P<files>\S+) -->\n(?P<table>.*?)<!-- /latency-table -->", re.S
)


def _code(workshop_id: str) -> str:
    try:
        return catalog.get(workshop_id).code
    except KeyError:
        return workshop_id


def _s(x: float) -> str:
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"


def _cell(row: dict, key: str) -> str:
    v = row.get(key)
    if not v:
        return "-"
    if v["min"] == v["max"]:
        return f"{_s(v['median'])} s"
    return f"{_s(v['median'])} s ({_s(v['min'])}-{_s(v['max'])})"


def _bench_cell(row: dict) -> str:
    """The app's timings after the pass: the whole table, and (where the JSON has them)
    the first and the last row as they were shown."""
    if not row.get("bench_first_row_s"):
        return _cell(row, "bench_s")
    return (
        f"first row {_cell(row, 'bench_first_row_s')}; last row {_cell(row, 'bench_last_row_s')}; "
        f"table {_cell(row, 'bench_s')}"
    )


def _targets(row: dict) -> str:
    failed = row.get("runs_failed") or 0
    note = f"{failed} failed run(s) left out; " if failed else ""
    return note + _target_words(row)


def _target_words(row: dict) -> str:
    t = row.get("targets")
    if not t:
        return ""
    if not t.get("applies"):
        return "no target (no GPU)"
    parts = []
    for key in ("last_s", "first_s", "ratio", "bench_last_row_s"):
        if key in t:
            g = t[key]
            limit = g.get("limit")
            name = {
                "last_s": "last <= ",
                "first_s": "first <= ",
                "ratio": ">= ",
                "bench_last_row_s": "last row <= ",
            }[key]
            name += f"{limit:g}x" if key == "ratio" else f"{limit:g} s"
            unit = "x" if key == "ratio" else " s"
            parts.append(f"{name}: " + ("met" if g["met"] else f"missed by {g['missed_by']:.2f}{unit}"))
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
        fresh: dict = next(
            (
                r
                for r in summary
                if r["path"] == "fresh"
                and r["workshop"] == warm["workshop"]
                and r["scenario"] == warm["scenario"]
            ),
            {},
        )
        sharded: dict = next(
            (
                r
                for r in summary
                if r["path"] == "sharded"
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
                f"{_code(wid)} ({wid}), {warm['scenario']}",
                _workers(pools.get(wid, "")),
                str(warm.get("variants", "-")),
                _cell(warm, "first_s"),
                _cell(warm, "last_s"),
                _cell(sharded, "last_s"),
                _cell(fresh, "last_s"),
                f"{ratio:g}x" if ratio else "-",
                _bench_cell(warm),
                _targets(warm),
            ]
        )
    return out


def _workers(sizes) -> str:
    """Version 3 names check and compile workers per path; version 2 one number."""
    if not isinstance(sizes, dict):
        return str(sizes)
    warm = sizes.get("warm", {})
    text = f"{warm.get('check_workers', '?')}"
    if warm.get("compile_workers"):
        text += f" + {warm['compile_workers']} compiling"
    return text


HEADER = [
    "machine",
    "workshop, edit",
    "workers",
    "kernel variants",
    "app: first verdict",
    "app: last verdict",
    "sharded: last",
    "fresh process: last",
    "last, fresh / app",
    "app: benchmark table after",
    "targets",
]


def table(payloads: list, label: str = "") -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    for p in payloads:
        for r in rows(p, label):
            lines.append("| " + " | ".join(r) + " |")
    return "\n".join(lines) + "\n"


def load(path: Path) -> dict:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("schema") != "kernel-course/latency" or data.get("version", 1) < 2:
        raise ValueError(f"{path}: not latency JSON version 2 (python -m tui.latency --json)")
    return data


def readme_table(readme_text: str) -> tuple:
    """(the table the README's marker block shows, the table its files give)."""
    m = MARKER.search(readme_text)
    if m is None:
        raise ValueError("README has no <!-- latency-table files=... --> block")
    payloads = [load(REPO / f) for f in m.group("files").split(",")]
    return m.group("table"), table(payloads)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python results/latency_table.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="*", type=Path)
    ap.add_argument("--label", default="", help="machine name for the first column (e.g. H200)")
    ap.add_argument("--readme", type=Path, help="rewrite this README's latency-table block")
    args = ap.parse_args(argv)
    try:
        if args.readme:
            text = args.readme.read_text(encoding="utf-8")
            _, fresh = readme_table(text)
            m = MARKER.search(text)
            assert m is not None  # readme_table found it
            args.readme.write_text(
                text[: m.start("table")] + fresh + text[m.end("table") :], encoding="utf-8"
            )
            print(f"rewrote the latency table in {args.readme}")
            return 0
        if not args.json:
            ap.error("name latency JSON files, or --readme README.md")
        sys.stdout.write(table([load(p) for p in args.json], args.label))
    except ValueError as e:
        ap.error(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
