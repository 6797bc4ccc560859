"""A regrade's reports, written as verdicts arrive, every file atomically (a temporary
file beside it, then ``os.replace``): a reader, or an interrupted regrade, never sees half
a file.

    DIR/learners/<learner>.json   one per learner: per workshop its records, outcome, fault,
                                  seed and file hash; the files that were not graded
    DIR/cohort.json               every verdict, with the seed, the commit, the machine
    DIR/cohort.csv                one row per file (a spreadsheet's view)
    DIR/cohort.md                 learner x workshop: outcome and failing check ids

A later run with the same DIR resumes: a submission whose file hash and seed match a
verdict already there is not run again (unless it was not graded, or --bench now asks
for timings it lacks).  A DIR that holds another seed's regrade is refused.

Standard library only.
"""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

from checks.json_files import write_json_atomic, write_text_atomic
from checks.judging.records import plural
from checks.regrade.verdicts import NOT_GRADED

COHORT_SCHEMA = "kernel-course/regrade-cohort"
LEARNER_SCHEMA = "kernel-course/regrade-learner"
VERSION = 1
CSV_COLUMNS = (
    "learner",
    "workshop",
    "file",
    "outcome",
    "fault",
    "failing",
    "repair",
    "pass",
    "fail",
    "error",
    "todo",
    "skipped",
    "not run",
    "seconds",
    "mode",
    "exit_code",
    "seed",
    "sha256",
    "host",
    "gpu",
    "attempts",
    "bench_exit_code",
    "fault_detail",
)
SHOWN_IDS = 3  # failing check ids per table cell; the rest are counted


class SeedMismatch(Exception):
    pass


def learner_file_name(learner: str) -> str:
    """A learner's JSON file name: the folder's name, which the file system allowed."""
    return f"{learner}.json"


def _count(n, word: str) -> str:
    """'1 CPU', '16 CPUs', '? CPUs' for a count the machine did not say."""
    return plural(n, word) if isinstance(n, int) else f"? {word}s"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class CohortReport:
    """The verdicts of one regrade folder, kept on disk as they arrive."""

    def __init__(self, folder: Path, seed: int, context: dict, submissions: list, unmatched: list):
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise NotADirectoryError(f"--report: {self.folder} is a file, not a folder")
        self.seed = seed
        self.context = context
        self.submissions = list(submissions)
        self.unmatched = list(unmatched)
        self.results: dict = {}  # (learner, workshop) -> result
        self.started = _now()
        self._last_write = 0.0
        self._load()

    # --- resume ---
    def _load(self) -> None:
        cohort = self._read(self.folder / "cohort.json")
        if cohort is not None and cohort.get("seed") != self.seed:
            raise SeedMismatch(
                f"--report: {self.folder} holds a regrade with seed {cohort.get('seed')}, not {self.seed}; "
                "give another folder (or the same --seed to resume it)"
            )
        wanted = {s.key: s for s in self.submissions}
        for path in sorted((self.folder / "learners").glob("*.json")):
            data = self._read(path) or {}
            for wid, result in (data.get("workshops") or {}).items():
                sub = wanted.get((data.get("learner"), wid))
                if sub is not None and result.get("sha256") == sub.sha256 and result.get("seed") == self.seed:
                    self.results[sub.key] = result

    @staticmethod
    def _read(path: Path):
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def done(self, sub, bench: bool = False) -> bool:
        """A verdict for this file and seed is here (and, with ``bench``, the timings of a
        file that passed on a GPU: a file checked in the interpreter has none to add)."""
        r = self.results.get(sub.key)
        if r is None or r.get("outcome") == NOT_GRADED:
            return False
        timeable = r.get("mode") == "GPU" and r.get("outcome") in ("passed", "passed here")
        return not (bench and timeable and "bench" not in r)

    # --- as verdicts arrive ---
    def add(self, result: dict, min_interval_s: float = 2.0) -> None:
        """Keep a verdict: its learner's file now, the cohort files at most every
        ``min_interval_s`` (and at :meth:`finish`)."""
        self.results[(result["learner"], result["workshop"])] = result
        self.write_learner(result["learner"])
        if time.monotonic() - self._last_write >= min_interval_s:
            self.write_cohort()

    def write_learner(self, learner: str) -> Path:
        mine = {
            s.workshop: self.results[s.key]
            for s in self.submissions
            if s.learner == learner and s.key in self.results
        }
        payload = {
            "schema": LEARNER_SCHEMA,
            "version": VERSION,
            "learner": learner,
            "seed": self.seed,
            "commit": self.context.get("commit", ""),
            "updated": _now(),
            "workshops": mine,
            "not_graded_files": [u.to_dict() for u in self.unmatched if u.learner == learner],
        }
        return write_json_atomic(self.folder / "learners" / learner_file_name(learner), payload)

    def finish(self, extra: dict | None = None) -> None:
        for learner in sorted(
            {s.learner for s in self.submissions} | {u.learner for u in self.unmatched if u.learner}
        ):
            if not (self.folder / "learners" / learner_file_name(learner)).exists():
                self.write_learner(learner)
        self.write_cohort(extra)

    # --- the cohort files ---
    def rows(self) -> list:
        """One row per submission, in learner then workshop order; pending ones too."""
        out = []
        for s in sorted(self.submissions, key=lambda s: s.key):
            r = self.results.get(s.key)
            if r is None:
                out.append(
                    {"learner": s.learner, "workshop": s.workshop, "file": s.path.name, "outcome": "pending"}
                )
                continue
            c = r.get("counts", {})
            bench = r.get("bench") or {}
            out.append(
                {
                    "learner": s.learner,
                    "workshop": s.workshop,
                    "file": s.path.name,
                    "outcome": r["outcome"],
                    "fault": r.get("fault", ""),
                    "failing": " ".join(r.get("failing", [])),
                    "repair": (r.get("repair") or {}).get("says") or (r.get("repair") or {}).get("note", ""),
                    **{k: c.get(k, 0) for k in ("pass", "fail", "error", "todo", "skipped", "not run")},
                    "seconds": r.get("seconds", ""),
                    "mode": r.get("mode", ""),
                    "exit_code": r.get("exit_code", ""),
                    "seed": r.get("seed", ""),
                    "sha256": r.get("sha256", ""),
                    "host": r.get("host", ""),
                    "gpu": r.get("gpu") or "",
                    "attempts": r.get("attempts", 1),
                    "bench_exit_code": bench.get("exit_code", ""),
                    "fault_detail": r.get("fault_detail", ""),
                }
            )
        for u in self.unmatched:
            out.append(
                {
                    "learner": u.learner,
                    "workshop": "",
                    "file": u.path.name,
                    "outcome": NOT_GRADED,
                    "fault": "unknown workshop",
                    "fault_detail": u.reason,
                }  # fmt: skip
            )
        return out

    def tally(self) -> dict:
        """Submissions per outcome (pending ones too); the files not graded are counted apart."""
        t: dict = {}
        for s in self.submissions:
            word = self.results[s.key]["outcome"] if s.key in self.results else "pending"
            t[word] = t.get(word, 0) + 1
        return t

    def write_cohort(self, extra: dict | None = None) -> None:
        self._last_write = time.monotonic()
        if extra:
            self.context.update(extra)
        pending = sum(s.key not in self.results for s in self.submissions)
        payload = {
            "schema": COHORT_SCHEMA,
            "version": VERSION,
            "seed": self.seed,
            **self.context,
            "started": self.started,
            "updated": _now(),
            "submissions": len(self.submissions),
            "pending": pending,
            "complete": pending == 0,
            "outcomes": self.tally(),
            "results": [
                {k: v for k, v in self.results[s.key].items() if k != "records"}
                for s in sorted(self.submissions, key=lambda s: s.key)
                if s.key in self.results
            ],
            "not_graded_files": [u.to_dict() for u in self.unmatched],
        }
        write_json_atomic(self.folder / "cohort.json", payload)
        write_text_atomic(self.folder / "cohort.csv", self.csv_text())
        write_text_atomic(self.folder / "cohort.md", self.markdown(pending))

    def csv_text(self) -> str:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for row in self.rows():
            w.writerow(row)
        return buf.getvalue()

    def markdown(self, pending: int) -> str:
        from workshops import catalog

        order = [w.id for w in catalog.workshops()]
        present = sorted({s.workshop for s in self.submissions}, key=order.index)
        learners = sorted(
            {s.learner for s in self.submissions} | {u.learner for u in self.unmatched if u.learner}
        )
        ctx = self.context
        machine = ctx.get("machine", {})
        lines = [
            "# Cohort regrade",
            "",
            f"- seed: {self.seed}",
            f"- commit: {ctx.get('commit') or 'unknown'}",
            f"- machine: {machine.get('host', '?')} ({_count(machine.get('cpus'), 'CPU')}"
            + (f", GPUs: {', '.join(machine['gpus'])}" if machine.get("gpus") else ", no GPU")
            + ")",
            f"- cluster: {ctx.get('cluster', {}).get('description', '')}",
            f"- time limit per file: {ctx.get('timeout_s', '')} s",
            f"- updated: {_now()}"
            + (f" ({pending} of {len(self.submissions)} still pending)" if pending else ""),
            "",
            "| learner | " + " | ".join(present) + " |",
            "| --- |" + " --- |" * len(present),
        ]
        for learner in learners:
            cells = [self._cell(self.results.get((learner, w)), (learner, w)) for w in present]
            lines.append(f"| {_md(learner)} | " + " | ".join(cells) + " |")
        tally = self.tally()
        lines += ["", "Outcomes: " + ", ".join(f"{n} {o}" for o, n in sorted(tally.items())) + "."]
        if self.unmatched:
            lines[-1] += f" Files not graded: {len(self.unmatched)} (below)."
        faults = [r for r in self.rows() if r.get("fault") and r.get("fault") != "unknown workshop"]
        if faults:
            lines += ["", "## Faults", ""]
            lines += [
                f"- {_md(r['learner'])} / {r['workshop']}: {r['fault']}: {_md(r['fault_detail'])}"
                for r in faults
            ]
        repaired = [r for r in self.rows() if r.get("repair")]
        if repaired:
            lines += ["", "## Repairs (the smallest change that makes every check pass, or why none)", ""]
            lines += [f"- {_md(r['learner'])} / {r['workshop']}: {_md(r['repair'])}" for r in repaired]
        if self.unmatched:
            lines += ["", "## Files not graded", ""]
            lines += [
                f"- {_md(u.learner or '(top level)')} / {_md(u.path.name)}: {_md(u.reason)}"
                for u in self.unmatched
            ]
        return "\n".join(lines) + "\n"

    def _cell(self, r, key) -> str:
        if r is None:
            return "pending" if any(s.key == key for s in self.submissions) else "-"
        word = r["outcome"] + (f" ({r['fault']})" if r.get("fault") else "")
        failing = r.get("failing", [])
        if failing:
            shown = ", ".join(failing[:SHOWN_IDS]) + (
                f" +{len(failing) - SHOWN_IDS}" if len(failing) > SHOWN_IDS else ""
            )
            word += f": {shown}"
        return _md(word)


def _md(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
