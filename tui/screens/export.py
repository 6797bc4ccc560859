"""Export of one workshop's last results as JSON (key o): beside the workspace's state
folder unless --export-dir says otherwise, with counts per status and one outcome word,
written atomically with an ordinary file mode."""

from __future__ import annotations

import time
from pathlib import Path

from checks import workspace as ws
from checks.records import STATUSES, write_json_atomic

EXPORT_SCHEMA, EXPORT_VERSION = "kernel-course/export", 1


def default_export_dir(workspace: Path) -> Path:
    return ws.state_dir(workspace) / "exports"


def outcome_word(run_outcome: str, records: list) -> str:
    """passed / failed / incomplete / error: what the run says, in one word.

    error: the run itself broke (a crash, a timeout, a load error, the app); failed: a
    check failed; incomplete: TODO or not run here; passed: every runnable check passed."""
    statuses = {r.status for r in records}
    if run_outcome not in ("done",) or "error" in statuses:
        return "error"
    if "fail" in statuses:
        return "failed"
    if "todo" in statuses or "pass" not in statuses:
        return "incomplete"
    return "passed"


def counts(records: list) -> dict:
    return {s: sum(r.status == s for r in records) for s in STATUSES}


def payload(workshop, path: Path, last: dict, bench_rows: dict, interpreted: bool) -> dict | None:
    if not last or not last.get("records"):
        return None
    digest = last["digest"]
    records = last["records"]
    rows = bench_rows.get("rows", []) if bench_rows.get("digest") == digest else []
    return {
        "schema": EXPORT_SCHEMA,
        "version": EXPORT_VERSION,
        "workshop": workshop.id,
        "content_hash": digest,
        "file": str(path),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "outcome": outcome_word(last.get("outcome", ""), records),
        "run_outcome": last.get("outcome"),
        "counts": counts(records),
        "interpreted": interpreted,
        "records": [r.to_dict() for r in records],
        "benchmarks": rows,
    }


def write(folder: Path, data: dict) -> Path:
    """<folder>/<workshop>-<time>.json, never over an earlier export."""
    folder = Path(folder)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"{data['workshop']}-{stamp}.json"
    n = 2
    while path.exists():
        path = folder / f"{data['workshop']}-{stamp}-{n}.json"
        n += 1
    return write_json_atomic(path, data)
