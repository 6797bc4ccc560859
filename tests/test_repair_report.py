"""The committed repair report (python -m checks.repair.report): its fractions hold the floor
of results/repair-floor.json, and what it says of each mutant is what the search says now
(a fixed sample re-run: a repaired mutant that no longer is fails the test)."""

import json
from pathlib import Path

import pytest

from checks.mutation.generate import all_mutants
from checks.repair.search import find_repair

REPO = Path(__file__).resolve().parent.parent
FLOOR = json.loads((REPO / "results" / "repair-floor.json").read_text(encoding="utf-8"))
REPORT = json.loads((REPO / FLOOR["report"]).read_text(encoding="utf-8"))


def test_the_committed_report_holds_the_floor():
    summary = REPORT["summary"]
    for part, floor in FLOOR["repaired_fraction_at_least"].items():
        got = summary[part]["repaired_fraction"]
        assert got is not None and got >= floor, (part, got, floor)
    assert REPORT["interpret"] is True and REPORT["budget_seconds"] <= 60


def test_every_repair_in_the_report_names_a_line_and_a_kind():
    for row in REPORT["rows"]:
        if row["outcome"] == "repaired":
            assert row["says"].startswith("line ") and row["kind"], row


@pytest.mark.parametrize("workshop, subject", FLOOR["rerun"])
def test_a_repaired_mutant_is_still_repaired(workshop, subject, tmp_path):
    """The fixed sample: each mutant the report repaired is built again from its id and
    searched again; the search must still find a verified change."""
    row = next(r for r in REPORT["rows"] if r["subject"] == subject and r["workshop"] == workshop)
    assert row["outcome"] == "repaired"
    source_name, mutant_id = subject.split(":", 1)
    folder = REPO / "workshops" / row["workshop"]
    text = (folder / ("solution.py" if source_name == "solution" else f"{source_name}.py")).read_text(
        encoding="utf-8"
    )
    mutant = next(m for m in all_mutants(row["workshop"], text) if m.id.split(":", 1)[1] == mutant_id)
    path = tmp_path / f"{row['workshop']}.py"
    path.write_text(mutant.source, encoding="utf-8")
    repair = find_repair(row["workshop"], path, interpret=True, budget=180, workers=2)
    assert repair["status"] == "found", repair
    # where the time went: the change passed its screening, then its verification, in order
    assert 0 < repair["screened_seconds"] <= repair["verified_seconds"] <= repair["seconds"], repair
    # taken in order by two threads: everything before it was taken, one may still run
    assert 1 <= repair["position"] <= repair["tried"] + 1, repair


def test_the_report_over_every_operator_holds_its_floor():
    """The sample over every mutation operator of the reference answers (--per-source 11):
    its own floors, the untargeted operators included in all_mutants."""
    every = FLOOR["every_operator"]
    report = json.loads((REPO / every["report"]).read_text(encoding="utf-8"))
    operators = {r["operator"] for r in report["rows"]}
    assert len(operators) >= 10, operators
    for part, floor in every["repaired_fraction_at_least"].items():
        got = report["summary"][part]["repaired_fraction"]
        assert got is not None and got >= floor, (part, got, floor)
    assert report["interpret"] is True and report["budget_seconds"] <= 60


def test_the_report_times_the_search_from_the_checks_verdict_and_keeps_each_row(tmp_path, monkeypatch):
    """Each mistake is checked first, as the app does, and searched from those records; the
    JSON is rewritten after every row, so a run stopped early keeps what it measured."""
    from checks.repair import report

    wrong = (REPO / "workshops/strided_softmax/wrong/max_not_subtracted.py").read_text(encoding="utf-8")
    subjects = [("wrong/a", "strided_softmax", "", wrong), ("wrong/b", "strided_softmax", "", wrong)]
    monkeypatch.setattr(report, "subjects", lambda *a, **k: subjects)
    verdicts: list = []
    monkeypatch.setattr(report, "verdict", lambda w, path, interpret: verdicts.append(w) or [{"id": "x"}])
    seen: list = []

    def fake_run(chosen, budget, interpret, on_result):
        for label, w, op, _ in chosen:
            records = report.verdict(w, tmp_path / "f.py", interpret)
            assert records == [{"id": "x"}]
            on_result(
                {
                    "subject": label,
                    "workshop": w,
                    "operator": op,
                    "targeted": None,
                    "outcome": "no-repair",
                    "seconds": 1.0,
                    "says": "",
                    "kind": "",
                    "tried": 3,
                }
            )
            seen.append(len(json.loads(out.read_text())["rows"]))  # written after each row

    out = tmp_path / "report.json"
    monkeypatch.setattr(report, "run", fake_run)
    assert report.main(["--workshops", "strided_softmax", "--json", str(out), "--interpret"]) == 0
    assert seen == [1, 2] and verdicts == ["strided_softmax"] * 2
    final = json.loads(out.read_text())
    assert final["subjects_planned"] == 2 and final["summary"]["kept_wrong_answers"]["rejected"] == 2


def test_the_verdict_is_the_command_lines_records(tmp_path):
    """What the report searches from: python -m checks's records of the file (the CPU
    workshop's checks take milliseconds)."""
    from checks.repair.report import verdict

    solution = (REPO / "workshops/online_normalizer/solution.py").read_text(encoding="utf-8")
    path = tmp_path / "merge.py"
    path.write_text(solution, encoding="utf-8")
    passing = verdict("online_normalizer", path, interpret=False)
    assert passing and all(r["status"] in ("pass", "skipped") for r in passing)
    assert {"id", "status", "message", "seconds"} <= set(passing[0])
    path.write_text("this is not python(", encoding="utf-8")
    broken = verdict("online_normalizer", path, interpret=False)
    assert broken and any(r["status"] in ("fail", "error") for r in broken)


def test_where_the_app_starts_the_search_with_the_run_the_report_does_too(tmp_path, monkeypatch):
    """With cores to spare (KERNEL_COURSE_REPAIR_STANDBY=1 here) the report starts the search
    with the run of the checks, as the app does, and times it from the verdict; a source
    that passes is said so and its search stopped."""
    from checks.repair import report

    monkeypatch.setenv("KERNEL_COURSE_REPAIR_STANDBY", "1")
    source = (REPO / "workshops/online_normalizer/solution.py").read_text(encoding="utf-8")
    assert source.count("scale_right = math.exp(m_right - m)") == 1
    wrong = source.replace("scale_right = math.exp(m_right - m)", "scale_right = math.exp(m - m_right)")
    waited: list = []

    def recording(*args, **kw):
        waited.append(kw.get("wait_for_records") is not None)
        return find_repair(*args, **{**kw, "workers": 2})

    row = report._one(tmp_path, 0, ("m", "online_normalizer", "swap", wrong), 60, True, recording)
    assert row["outcome"] == "repaired" and "the other way round" in row["says"], row
    assert 0 <= row["seconds"] and row["check_seconds"] > 0 and waited == [True]
    passing = report._one(tmp_path, 1, ("s", "online_normalizer", "", source), 60, True, recording)
    assert passing["outcome"] == "passes" and waited == [True, True]
