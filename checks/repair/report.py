"""``python -m checks.repair.report``: how often the repair search finds a verified fix.

Over one-site mistakes (mutants of every GPU workshop's reference answer and of its kept
right designs, made by checks.mutation's operators) and the kept wrong answers, each
mistake is run through the checks; one that fails is searched for a repair.  Outcomes:

    repaired   a change was found, and every check passed with it (the search verifies)
    reproduced the checks reject it, no change was found, but a change of a reference answer
               gives its result (said, not verified: counted apart from repaired)
    no-repair  the checks reject it, and no change was found within the budget
    passes     every check passes (the mutant computes the same thing, or the checks miss it)

A mutant's operator is "targeted" when the error model has a kind written to undo it and
"untargeted" otherwise; the two are counted apart.  Writes JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import platform
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from checks.json_files import write_json_atomic
from checks.mutation.generate import GPU_WORKSHOPS, REPO, all_mutants, sample
from checks.repair import standby_wanted
from workshops import catalog

# The mutation operators the error model has an inverse for (checks.repair.error_model).
TARGETED = {
    "arith": "arithmetic",
    "compare": "boundary",
    "constant": "constant",
    "mask-drop": "mask",
    "padding": "padding",
    "stride-swap": "exchanged-names",
    "grid-cap": "clamp",
    "epilogue-order": "order",
    "dtype": "dtype",
}
CHEATS = ("torch_fallback", "numpy_", "borrowed_kernel")  # not mistakes of a kernel: nothing to repair


def subjects(workshops: list, per_source: int, designs: bool = True, wrong: bool = True) -> list:
    """(label, workshop, operator or '', source) for every mistake to try."""
    out = []
    for w in workshops:
        folder = REPO / "workshops" / w
        sources = [("solution", (folder / "solution.py").read_text(encoding="utf-8"))]
        if designs:
            sources += [
                (f"right/{p.stem}", p.read_text(encoding="utf-8"))
                for p in sorted((folder / "right").glob("*.py"))
            ]
        for name, text in sources:
            for m in sample(all_mutants(w, text), per_source):
                out.append((f"{name}:{m.id.split(':', 1)[1]}", w, m.operator, m.source))
        if wrong:
            for p in sorted((folder / "wrong").glob("*.py")):
                if not any(p.stem.startswith(c) for c in CHEATS):
                    out.append((f"wrong/{p.stem}", w, "", p.read_text(encoding="utf-8")))
    return out


def run(subjects_: list, budget: float, interpret: bool, on_result=None) -> list:
    from checks.repair.search import find_repair

    rows: list = []
    with tempfile.TemporaryDirectory(prefix="repair-report-") as tmp:
        for i, subject in enumerate(subjects_):
            rows.append(_one(Path(tmp), i, subject, budget, interpret, find_repair))
            if on_result:
                on_result(rows[-1])
    return rows


def verdict(workshop: str, path: Path, interpret: bool) -> list:
    """The failing verdict the app and ``python -m checks`` give: the records of one run of
    the checks (their ids, statuses, messages and seconds) in a process of its own."""
    out = path.with_suffix(".json")
    command = [sys.executable, "-m", "checks", workshop, "--file", str(path), "--json", str(out)]
    subprocess.run(command + (["--interpret"] if interpret else []), capture_output=True, cwd=REPO)
    try:
        payload = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    found = payload.get("records", []) if isinstance(payload, dict) else []
    return [r for r in found if isinstance(r, dict) and r.get("workshop", workshop) == workshop]


def _one(folder: Path, i: int, subject: tuple, budget: float, interpret: bool, find_repair) -> dict:
    """One mistake written to ``folder``, checked, searched from its failing verdict (as the
    app does: the search starts from the run's records), and its row.  ``seconds`` counts
    from the verdict to the search's end."""
    label, w, operator, source = subject
    path = folder / f"{w}_{i}.py"
    path.write_text(source, encoding="utf-8")
    t_check = time.monotonic()
    if standby_wanted(catalog.get(w).gpu and not interpret):  # as the app: it starts with the run
        repair = _with_the_run(w, path, interpret, budget, find_repair)
        t0 = t_check + repair.pop("verdict_seconds")
    else:
        records = verdict(w, path, interpret) or None  # none readable: the search runs the checks itself
        t0 = time.monotonic()
        repair = find_repair(w, path, interpret=interpret, budget=budget, records=records)
    outcome = {"found": "repaired", "reproduced": "reproduced", "not-applicable": "passes"}.get(
        repair["status"], "no-repair"
    )
    return {
        "subject": label,
        "workshop": w,
        "operator": operator,
        "targeted": operator in TARGETED if operator else None,
        "outcome": outcome,
        "seconds": round(time.monotonic() - t0, 1),
        "check_seconds": round(t0 - t_check, 1),
        "workers_ready_seconds": repair.get("workers_ready_seconds"),
        "screened_seconds": repair.get("screened_seconds"),  # the found change passed screening
        "position": repair.get("position"),  # the found change's place in the search's order
        "baseline_seconds": repair.get("baseline_seconds"),  # the file's own run in the workers ended
        "gpu_ready_seconds": repair.get("gpu_ready_seconds"),  # the first compiled worker was ready
        "says": repair.get("says", ""),
        "kind": repair.get("kind", ""),
        "tried": repair.get("tried", 0),
    }


def _with_the_run(w: str, path: Path, interpret: bool, budget: float, find_repair) -> dict:
    """The search started with the run of the checks, as the app starts it on a machine with
    cores to spare: its workers start while the checks run, it gets the verdict's records
    (a verdict that passes: "not-applicable"); ``verdict_seconds``: when the verdict came."""
    t_check = time.monotonic()
    records: queue.Queue = queue.Queue()
    answer: list = []
    search = threading.Thread(
        target=lambda: answer.append(
            find_repair(w, path, interpret=interpret, budget=budget, wait_for_records=records.get)
        ),
        daemon=True,
    )
    search.start()
    got = verdict(w, path, interpret)
    at = time.monotonic() - t_check
    failed = [r for r in got if r.get("status") in ("fail", "error")]
    records.put(got if failed else None)
    search.join()
    if not got:  # no verdict readable: the search runs the checks itself
        return {**find_repair(w, path, interpret=interpret, budget=budget), "verdict_seconds": at}
    if not failed:
        return {"status": "not-applicable", "verdict_seconds": at}
    return {**answer[0], "verdict_seconds": at}


def summary(rows: list) -> dict:
    def tally(selected: list) -> dict:
        failing = [r for r in selected if r["outcome"] != "passes"]
        repaired = [r for r in failing if r["outcome"] == "repaired"]
        seconds = sorted(r["seconds"] for r in repaired)
        return {
            "subjects": len(selected),
            "rejected": len(failing),
            "repaired": len(repaired),
            "reproduced": sum(r["outcome"] == "reproduced" for r in failing),
            "repaired_fraction": round(len(repaired) / len(failing), 3) if failing else None,
            "passes": len(selected) - len(failing),
            "median_seconds_to_repair": seconds[len(seconds) // 2] if seconds else None,
            "max_seconds_to_repair": seconds[-1] if seconds else None,
        }

    mutants = [r for r in rows if r["operator"]]
    return {
        "all_mutants": tally(mutants),
        "targeted_mutants": tally([r for r in mutants if r["targeted"]]),
        "untargeted_mutants": tally([r for r in mutants if not r["targeted"]]),
        "kept_wrong_answers": tally([r for r in rows if not r["operator"]]),
        "by_workshop": {
            w: tally([r for r in mutants if r["workshop"] == w])
            for w in sorted({r["workshop"] for r in rows})
        },
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m checks.repair.report", description=__doc__.split("\n\n")[0])
    p.add_argument("--workshops", nargs="*", default=list(GPU_WORKSHOPS))
    p.add_argument("--per-source", type=int, default=6, help="mutants per reference answer or right design")
    p.add_argument("--budget", type=float, default=60.0, help="seconds of search per mistake")
    p.add_argument("--no-designs", action="store_true")
    p.add_argument("--no-wrong", action="store_true")
    p.add_argument("--interpret", action="store_true")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args(argv)
    chosen = subjects(args.workshops, args.per_source, not args.no_designs, not args.no_wrong)

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    t0 = time.monotonic()
    done: list = []

    def report() -> dict:
        return {
            "command": "python -m checks.repair.report " + " ".join(sys.argv[1:] if argv is None else argv),
            "commit": commit,
            "machine": platform.platform(),
            "interpret": args.interpret,
            "budget_seconds": args.budget,
            "wall_seconds": round(time.monotonic() - t0),
            "subjects_planned": len(chosen),
            "summary": summary(done),
            "rows": done,
        }

    def show(row: dict) -> None:
        print(f"{row['outcome']:9} {row['seconds']:6.1f}s {row['subject']}  {row['says'][:100]}", flush=True)
        done.append(row)
        write_json_atomic(args.json, report())  # a run stopped early keeps what it measured

    run(chosen, args.budget, args.interpret, show)
    final = report()
    write_json_atomic(args.json, final)
    print(json.dumps(final["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
