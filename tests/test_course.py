"""The course as a whole, interpreted on the CPU: every answer passes, every starter is
TODO, every kept wrong answer is rejected -- and the rejection teaches something (a
message that says what differs, with the facts behind it in the record)."""
import subprocess
import sys
from pathlib import Path

import pytest

from checks.engine import run_checks
from checks.records import exit_code
from workshops import catalog

REPO = Path(__file__).resolve().parent.parent
WRONG = [(w.id, p) for w in catalog.workshops() for p in w.wrong_versions()]


def test_every_workshop_keeps_wrong_answers():
    for w in catalog.workshops():
        assert len(w.wrong_versions()) >= 2, w.id


@pytest.mark.parametrize("workshop_id,path", WRONG, ids=[f"{w}/{p.stem}" for w, p in WRONG])
def test_wrong_answer_gets_a_report_that_teaches(workshop_id, path):
    records = run_checks(workshop_id, path, interpret=True)
    assert exit_code(records) == 1
    bad = [r for r in records if r.status in ("fail", "error")]
    assert bad
    assert not any(r.status == "todo" for r in records)
    for r in bad:
        assert len(r.message) >= 20 and r.message.lower() not in ("assertion failed",), (r.id, r.message)
    numeric = [r for r in bad if "mismatched" in r.details]
    for r in numeric:
        d = r.details
        # the facts a learner needs: how many, where, how wrong
        assert d["mismatched"] > 0 and d["worst_index"] is not None and "max_abs_error" in d
        assert "wrong" in r.message
    # every check carries its reason and its lesson section
    for r in records:
        if r.id not in ("load", "run"):
            assert r.why and r.section, (r.id, "missing why/section")


def test_lesson_sections_named_by_checks_exist():
    from checks.engine import cases_for
    for w in catalog.workshops():
        headings = {line[3:].strip() for line in w.lesson.splitlines() if line.startswith("## ")}
        for c in cases_for(w.id):
            assert c.section in headings, (w.id, c.id, c.section)


def test_all_gpu_answers_pass_interpreted_through_the_cli():
    r = subprocess.run([sys.executable, "-m", "checks", "all", "--include-gpu", "--solution", "--interpret"],
                       cwd=REPO, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " 0 failed; 0 exercises incomplete;" in r.stdout
    # what could not run here is reported as unavailable, never counted as passed
    assert "could not run here" in r.stdout and " 0 unavailable." not in r.stdout


def test_self_check_command():
    r = subprocess.run([sys.executable, "-m", "checks", "online_normalizer", "--self-check"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 of 4 course files behave as expected." in r.stdout
