"""The mutation report: per workshop the explained fraction of rejected mutants, every
mutant's status, its failing checks and the sentence a learner reads; the survivors with
their review (from a reviews file kept beside the report); and a markdown summary.
Standard library only.
"""

from __future__ import annotations

import collections
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from checks.mutation import classify
from checks.mutation.generate import REPO

SCHEMA = "kernel-course/mutants"


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def load_reviews(path: Path | None) -> dict:
    """{mutant id: {"verdict": "equivalent" | "hole", "why": ...}} (a missing file: none)."""
    if path is None or not Path(path).is_file():
        return {}
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return data.get("reviews", data)


def fraction(counts: dict) -> float | None:
    """Explained over rejected (explained + unexplained); None when nothing was rejected."""
    rejected = counts[classify.EXPLAINED] + counts[classify.UNEXPLAINED]
    return round(counts[classify.EXPLAINED] / rejected, 4) if rejected else None


def _counts(rows: list) -> dict:
    c: dict = {s: 0 for s in classify.STATUSES}
    for r in rows:
        c[r["status"]] += 1
    c["mutants"] = len(rows)
    c["misattributed"] = sum(bool(r.get("misattributed")) for r in rows)
    c["explained_fraction"] = fraction(c)
    return c


def unexplained_kinds(rows: list) -> dict:
    """For the unexplained mutants: how often each kind of failing record is what the
    learner gets (each mutant counted once per kind), most common first."""
    kinds: collections.Counter = collections.Counter()
    for r in rows:
        if r["status"] == classify.UNEXPLAINED:
            for kind in sorted({c["kind"] for c in r["failing"] if c["status"] == "fail"}):
                kinds[kind] += 1
    return dict(kinds.most_common())


def build(mutants: list, results: dict, *, per_workshop: int, limit: float, reviews: dict) -> dict:
    rows = []
    for m in mutants:
        r = {k: v for k, v in results[m.id].items() if k != "records"}
        row = {
            "id": m.id,
            "workshop": m.workshop,
            "line": m.line,
            "operator": m.operator,
            "before": m.before,
            "after": m.after,
            **r,
        }
        if r["status"] == classify.SURVIVED:
            row["review"] = reviews.get(m.id)  # None: not reviewed yet
        rows.append(row)
    workshops = list(dict.fromkeys(m.workshop for m in mutants))
    return {
        "schema": SCHEMA,
        "version": 1,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": ["python", "-m", "checks.mutation"] + sys.argv[1:],
        "commit": commit(),
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "interpret": True,
        },
        "per_workshop_cap": per_workshop,
        "limit_seconds": limit,
        "rule": classify.__doc__.split("\n\n")[1].strip(),
        "workshops": {w: _counts([r for r in rows if r["workshop"] == w]) for w in workshops},
        "overall": _counts(rows),
        "unexplained_kinds": unexplained_kinds(rows),
        "mutants": rows,
    }


def apply_reviews(data: dict, reviews: dict) -> dict:
    """The report with each survivor's review taken from ``reviews`` (a review written
    after the run: the measurements stay as they were)."""
    for row in data["mutants"]:
        if row["status"] == classify.SURVIVED:
            row["review"] = reviews.get(row["id"])
    return data


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def markdown(report: dict) -> str:
    lines = [
        "# Mutation testing of the checks' teaching",
        "",
        f"Commit {report['commit']}, {report['created']}, Triton's interpreter; "
        f"up to {report['per_workshop_cap']} mutants per workshop, {report['limit_seconds']:g} s each.",
        "",
        "`" + " ".join(report["command"]) + "`",
        "",
        "| workshop | mutants | survived | explained | unexplained | crashed | timed out "
        "| explained fraction |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for w, c in list(report["workshops"].items()) + [("all", report["overall"])]:
        lines.append(
            f"| {w} | {c['mutants']} | {c[classify.SURVIVED]} | {c[classify.EXPLAINED]} | "
            f"{c[classify.UNEXPLAINED]} | {c[classify.CRASHED]} | {c[classify.TIMED_OUT]} | "
            f"{_pct(c['explained_fraction'])} |"
        )
    if report["overall"]["misattributed"]:
        lines += [
            "",
            f"**{report['overall']['misattributed']} mutants were called not the learner's kernel.**",
        ]
        lines += [f"- `{r['id']}`" for r in report["mutants"] if r.get("misattributed")]
    lines += ["", "## Unexplained: what the learner gets instead", ""]
    lines += [f"- {kind}: {n} mutants" for kind, n in report["unexplained_kinds"].items()] or ["- none"]
    unexplained = [r for r in report["mutants"] if r["status"] == classify.UNEXPLAINED]
    by_operator = collections.Counter(r["operator"] for r in unexplained)
    lines += ["", "By operator: " + ", ".join(f"{op} {n}" for op, n in by_operator.most_common())]
    lines += ["", "## Survivors", ""]
    survivors = [r for r in report["mutants"] if r["status"] == classify.SURVIVED]
    for r in survivors:
        review = r.get("review") or {}
        verdict = review.get("verdict", "not reviewed")
        lines.append(f"- `{r['id']}`: **{verdict}**" + (f": {review['why']}" if review.get("why") else ""))
    if not survivors:
        lines.append("- none")
    lines += ["", "## Unexplained mutants", ""]
    for r in unexplained:
        first = next((c for c in r["failing"] if c["status"] == "fail"), None)
        said = f" ({first['id']}: {first['sentence'][:160]})" if first else ""
        lines.append(f"- `{r['id']}`{said}")
    return "\n".join(lines) + "\n"
