"""Export of one workshop's last results as JSON (key o): beside the workspace's state
folder unless --export-dir says otherwise, with counts per status, the outcome word and
the workshop's history of timed saves (checks.benchmark.history) and, when the repair
search ran for the exported content, its repair, written atomically with an ordinary
file mode."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

from checks import workspace as ws
from checks.benchmark import history
from checks.json_files import write_json_atomic
from checks.judging import STATUSES, Outcome, outcome_line, outcome_of
from checks.running import RunRecords
from workshops.catalog import Workshop

# version 2: "outcome" in the vocabulary of checks.judging.records.Outcome, "not run" counted;
# "history" (the timed saves, oldest first) added since without a version change: readers
# of version 2 ignore it; so was "repair" (the last repair search's result for this content,
# python -m checks.repair's dict: status, says, line, kind, before, after, diff, ...)
EXPORT_SCHEMA, EXPORT_VERSION = "kernel-course/export", 2


def default_export_dir(workspace: Path) -> Path:
    return ws.state_dir(workspace) / "exports"


def outcome_word(run_outcome: str, records: list) -> str:
    """The run's outcome in the words the app, the list and the CLI use
    (checks.judging.records.Outcome): passed, passed here, failed, incomplete, not run,
    unavailable.  A cancelled run that left nothing wrong is not run."""
    word = outcome_of(records)
    if run_outcome == "cancelled" and word not in (Outcome.FAILED, Outcome.INCOMPLETE):
        return str(Outcome.NOT_RUN)
    return str(word)


def counts(records: list) -> dict:
    return {s: sum(r.status == s for r in records) for s in STATUSES}


def payload(
    workshop: Workshop,
    path: Path,
    last: Optional[RunRecords],
    bench_rows: dict,
    interpreted: bool,
    state_dir: Optional[Path] = None,
    repair: Optional[dict] = None,
) -> dict | None:
    """The export of ``last``, a finished run's records (None: nothing to export yet); the
    workshop's timing history is read from ``state_dir``, by default the state folder of the
    workspace ``path`` is in.  ``repair``: the repair search's result for ``last``'s
    content, kept under "repair" (None: no search ended for it, no key)."""
    records = last.records if last is not None else []
    if last is None or not records:
        return None
    digest = last.content_hash
    rows = bench_rows.get("rows", []) if bench_rows.get("digest") == digest else []
    data = {
        "schema": EXPORT_SCHEMA,
        "version": EXPORT_VERSION,
        "workshop": workshop.id,
        "content_hash": digest,
        "file": str(path),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "outcome": outcome_word(last.outcome, records),
        "summary": outcome_line(records),
        "run_outcome": str(last.outcome),
        "counts": counts(records),
        "interpreted": interpreted,
        "records": [r.to_dict() for r in records],
        "benchmarks": rows,
        "history": [
            s.to_dict() for s in history.load(state_dir or ws.state_dir(Path(path).parent), workshop.id)
        ],
    }
    if repair is not None:
        data["repair"] = dict(repair)
    return data


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
