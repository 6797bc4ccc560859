"""A small JSON summary of a pytest --junitxml file: counts, duration, what failed and why
things were skipped, and the tests a stopped run left unfinished (never counted as passed).
Standard library only (the H200 machine's run writes it).

    python3 results/junit_summary.py tests-junit.xml --output tests.json [--workers 12]
"""

from __future__ import annotations

import argparse
import collections
import json
import platform
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def summarize(xml_path: Path) -> dict:
    root = ET.parse(xml_path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = collections.Counter()
    failures: list = []
    skips: collections.Counter = collections.Counter()
    slowest: list = []
    duration = 0.0
    for suite in suites:
        duration += float(suite.get("time", 0))
        for case in suite.iter("testcase"):
            if not case.get("name"):  # begun, never reported: the run was stopped (a timeout)
                counts["unfinished"] += 1
                continue
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            seconds = float(case.get("time", 0))
            slowest.append((seconds, name))
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed" if child.tag == "failure" else "errors"
                    failures.append(
                        {"test": name, "kind": child.tag, "message": (child.get("message") or "")[:300]}
                    )
                elif child.tag == "skipped":
                    outcome = "skipped"
                    skips[(child.get("message") or "")[:200]] += 1
            counts[outcome] += 1
    slowest.sort(reverse=True)
    return {
        "passed": counts["passed"],
        "failed": counts["failed"],
        "errors": counts["errors"],
        "skipped": counts["skipped"],
        "unfinished": counts["unfinished"],
        "total": sum(counts.values()),
        "duration_s": round(duration, 1),
        "failures": failures,
        "skip_reasons": [{"reason": r, "count": n} for r, n in skips.most_common()],
        "slowest": [{"test": n, "seconds": round(s, 1)} for s, n in slowest[:15]],
    }


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", type=Path)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--workers", type=int, help="pytest-xdist workers the run used")
    parser.add_argument("--exit-code", type=int, help="pytest's exit status")
    args = parser.parse_args(argv)
    if not args.junit.is_file():
        print(f"junit_summary: {args.junit} does not exist (pytest wrote no report)", file=sys.stderr)
        return 1
    summary = summarize(args.junit)
    summary.update(workers=args.workers, exit_code=args.exit_code, python=platform.python_version())
    args.output.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(
        f"{summary['passed']} passed, {summary['failed']} failed, {summary['errors']} errors, "
        f"{summary['skipped']} skipped, {summary['unfinished']} unfinished in {summary['duration_s']} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
