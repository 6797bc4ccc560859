"""Regenerate results/SUMMARY.md from the committed benchmark evidence.

    python results/summarize.py                       # results/*.json -> results/SUMMARY.md
    python results/summarize.py --results DIR --output PATH [--charts DIR]

Reads every ``*.json`` directly in the results folder whose ``schema`` is
``kernel-course/benchmark`` (files written by ``python -m checks.benchmark``); the
git-ignored ``results/local/`` and other sub-folders are not read, and other JSON files
(check records, say) are listed as not benchmark evidence.  Every number in the summary
comes from those files, and every table names the file it comes from.  Evidence is
append-only: a new measurement is a new file, and this summary is regenerated, never
edited by hand.

Beside the summary it draws one chart per op, ``charts/<op>.svg`` (see charts.py):
achieved throughput against the ceiling, for the best candidate, the baseline and the
peer, across shapes and dtypes, from the newest file with device (graph) timing.

The ops and their order come from the workshop catalog, as the benchmark's do
(``checks.benchmark.specs``).  Targets of a ``--solution`` file are judged by the
benchmark's own code (``checks.benchmark.targets``) with the current definitions in
each op's spec module, on that file's rows; that needs torch (the spec modules import
it).  Without it, the verdicts recorded in the file are shown.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from checks.benchmark import row_text, specs  # noqa: E402
from checks.benchmark.rows import STATUSES, row_status  # noqa: E402

import charts  # noqa: E402  (results/charts.py)

SCHEMA = "kernel-course/benchmark"


def op_order() -> list:
    """The benchmarked ops in catalog order (the benchmark's own discovery)."""
    try:
        return specs.benchmarked_ops()
    except Exception:  # noqa: BLE001 - a broken catalog still gets a summary, sorted by name
        return []


def judged_targets(d: dict) -> tuple:
    """(verdicts, how): a solution file's targets judged now with the specs' definitions
    on its rows, or the verdicts recorded in the file when that is not possible."""
    recorded = list(d.get("targets") or [])
    rows = [r for r in (d.get("results") or []) if isinstance(r, dict)]
    if d.get("target") != "solution" or d.get("timing") not in ("graph", "events", "both"):
        return recorded, "recorded"
    try:
        from checks.benchmark import targets

        defs = {}
        for op in dict.fromkeys(r.get("op") for r in rows):
            if op in op_order() and specs.spec_problem(op) is None:
                defs[op] = targets.definitions(specs.load_spec(op))
        return targets.evaluate_targets(rows, d["timing"], defs), "judged"
    except Exception:  # noqa: BLE001 - no torch here, say: show what the file recorded
        return recorded, "recorded"


def load_evidence(folder: Path) -> tuple:
    """([(name, payload)] sorted by creation time then name, [notes on skipped files])."""
    found, notes = [], []
    for p in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            notes.append(f"`{p.name}`: unreadable ({e})")
            continue
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            kind = data.get("schema") if isinstance(data, dict) else None
            notes.append(f"`{p.name}`: not benchmark evidence (schema {kind!r})")
            continue
        if data.get("version") != 1:
            notes.append(f"`{p.name}`: benchmark schema version {data.get('version')!r} is not 1")
            continue
        found.append((p.name, data))
    found.sort(key=lambda x: (str(x[1].get("created", "")), x[0]))
    return found, notes


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list, rows: list) -> list:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _describe(name: str, d: dict) -> str:
    env = d.get("environment") or {}
    return (
        f"`{name}`: {d.get('timing')} timing, {d.get('cache')} L2"
        f"{', quick' if d.get('quick') else ''}, {d.get('target')}, "
        f"{env.get('gpu_name', '?')}, {d.get('created', '?')}"
    )


def chart_sources(evidence: list) -> dict:
    """op -> (file name, payload): the newest file with device time and a fraction of
    the ceiling for the op (what its chart is drawn from)."""
    out = {}
    for name, d in evidence:  # oldest first: the newest wins
        if d.get("timing") not in ("graph", "both"):
            continue
        for r in d.get("results") or []:
            if r.get("fraction_of_ceiling") is not None and r.get("status") == "ok":
                out[r.get("op")] = (name, d)
    return out


def draw_charts(evidence: list, folder: Path) -> dict:
    """Write charts/<op>.svg; op -> the chart's path."""
    written = {}
    for op, (name, d) in chart_sources(evidence).items():
        text = charts.svg(op, [r for r in d["results"] if r.get("op") == op], name, d.get("ceilings") or {})
        if text:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{op}.svg"
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
            written[op] = path
    return written


def _pct(x) -> str:
    return "-" if x is None else f"{100 * float(x):.1f} %"


def aa_section(evidence: list) -> list:
    """The A/A disagreement (``--aa``: every variant timed twice) and the timing loop's own
    cost per call of each file that recorded them; [] when none did."""
    rows = []
    for name, d in evidence:
        aa, harness = d.get("aa"), d.get("harness")
        if not isinstance(aa, dict) and not isinstance(harness, dict):
            continue
        cells = [f"`{name}`"]
        for kind in ("device", "per_call"):
            got = (aa or {}).get(kind) or {}
            cells += [
                str(got.get("n", "-")),
                _pct(got.get("median")),
                _pct(got.get("p90")),
                _pct(got.get("worst")),
            ]
        h = harness if isinstance(harness, dict) else {}
        cells.append(row_text.num(h.get("median_us"), ".3g"))
        rows.append(cells)
    if not rows:
        return []
    header = ["file", "device n", "device median", "device p90", "device worst"]
    header += ["per-call n", "per-call median", "per-call p90", "per-call worst", "harness us/call"]
    return [
        "## A/A and harness cost",
        "",
        "Each variant timed twice in one run: how far the two medians disagree. The harness "
        "cost is the per-call timing loop's own cost per call (an empty candidate's), taken "
        "off every per-call row.",
        "",
        *_table(header, rows),
        "",
    ]


def render(evidence: list, notes: list, chart_links: Optional[dict] = None) -> str:
    chart_links = chart_links or {}
    lines = [
        "# Benchmark summary",
        "",
        "Generated by `python results/summarize.py` from the benchmark JSON files in "
        "`results/` (`results/local/` is not read). Do not edit by hand: add a new "
        "evidence file and regenerate. Each table names the file its numbers come from.",
        "",
    ]
    if not evidence:
        lines += [
            "No benchmark evidence yet: run `python -m checks.benchmark --op all "
            "--solution` on a CUDA GPU and commit its JSON file under `results/`.",
            "",
        ]
    else:
        lines += ["## Evidence files", ""]
        rows = []
        for name, d in evidence:
            env, ceil = d.get("environment") or {}, d.get("ceilings") or {}
            res = d.get("results") or []
            counts = "/".join(str(sum(row_status(r) == s for r in res)) for s in STATUSES)
            rows.append(
                [
                    f"`{name}`",
                    d.get("created", "-"),
                    f"{d.get('timing')}{' (quick)' if d.get('quick') else ''}",
                    d.get("cache", "-"),
                    d.get("target", "-"),
                    env.get("gpu_name", "-"),
                    f"{env.get('torch', '-')} / {env.get('triton', '-')}",
                    (d.get("commit") or "-")[:12],
                    row_text.num(ceil.get("copy_gbps"), ".0f"),
                    row_text.num(ceil.get("bf16_matmul_tflops"), ".0f"),
                    counts,
                ]
            )
        lines += _table(
            [
                "file",
                "created",
                "timing",
                "L2",
                "target",
                "GPU",
                "torch / triton",
                "commit",
                "copy GB/s",
                "bf16 matmul TFLOP/s",
                "ok/failed/TODO",
            ],
            rows,
        )
        lines.append("")

        judged = [(name, judged_targets(d)) for name, d in evidence]
        targets = [(name, t) for name, (ts, _) in judged for t in ts]
        lines += ["## Targets", ""]
        if targets:
            met = sum(bool(t.get("met")) for _, t in targets)
            how = {h for _, (ts, h) in judged if ts}
            lines += [f"{met} of {len(targets)} targets met; {len(targets) - met} MISSED.", ""]
            if "judged" in how:
                lines += [
                    "Targets are judged by `checks/benchmark/targets.py` with the "
                    "definitions in each op's spec module (`checks/benchmark/shapes/<op>.py`), "
                    "on each file's own rows"
                    + (
                        "; files it could not judge show the verdicts they recorded"
                        if "recorded" in how
                        else ""
                    )
                    + ".",
                    "",
                ]
            rows = []
            for name, t in targets:
                unit = t.get("unit", "")
                rows.append(
                    [
                        f"`{name}`",
                        t.get("op", "-"),
                        t.get("what", "-"),
                        f"{t.get('comparison', '')} {t.get('target')} {unit}".strip(),
                        row_text.num(t.get("measured"), ".3g"),
                        "met"
                        if t.get("met")
                        else "**MISSED**" + (f" ({t['note']})" if t.get("note") else ""),
                    ]
                )
            lines += _table(["file", "op", "what", "target", "measured", "verdict"], rows)
        else:
            lines.append("No targets in these files (targets are judged on `--solution` runs).")
        lines.append("")

        lines += aa_section(evidence)

        order = op_order()
        ops = sorted(
            {r.get("op") for _, d in evidence for r in (d.get("results") or [])},
            key=lambda o: (order.index(o) if o in order else len(order), o),
        )
        for op in ops:
            lines += [f"## {op}", ""]
            if op in chart_links:
                lines += [f"![{op}: achieved throughput against the ceiling]({chart_links[op]})", ""]
            for name, d in evidence:
                res = [r for r in (d.get("results") or []) if r.get("op") == op]
                if not res:
                    continue
                lines += [f"### from {_describe(name, d)}", ""]
                cols = row_text.SUMMARY_COLUMNS
                lines += _table(row_text.headers(cols), [row_text.cells(r, cols) for r in res])
                if row_text.has_interval(res):
                    lines += ["", row_text.INTERVAL_NOTE + "."]
                lines += ["", f"Source: `{name}`.", ""]
    if notes:
        lines += ["## Files not summarized", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python results/summarize.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, default=HERE, help="folder of evidence files (default results/)")
    p.add_argument("--output", type=Path, help="file to write (default <results>/SUMMARY.md)")
    p.add_argument("--charts", type=Path, help="folder of the SVG charts (default charts/ beside the output)")
    args = p.parse_args(argv)
    evidence, notes = load_evidence(args.results)
    out = args.output or (args.results / "SUMMARY.md")
    folder = args.charts or (out.parent / "charts")
    written = draw_charts(evidence, folder)
    links = {}
    for op, path in written.items():
        try:
            links[op] = path.resolve().relative_to(out.parent.resolve()).as_posix()
        except ValueError:
            links[op] = path.resolve().as_posix()
    text = render(evidence, notes, links)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    print(
        f"wrote {out} from {len(evidence)} benchmark file(s)"
        + (f"; {len(written)} chart(s) in {folder}" if written else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
