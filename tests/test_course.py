"""The course through its command line, interpreted on the CPU (the per-workshop
verdicts are in tests/test_workshops.py)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.usefixtures("no_gpu")  # what could not run here is what the interpreter cannot run
def test_a_gpu_answer_passes_interpreted_through_the_cli_and_records_its_seed(tmp_path):
    out = tmp_path / "run.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "checks",
            "strided_softmax",
            "--solution",
            "--interpret",
            "--seed",
            "7",
            "--json",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " 0 failed; 0 exercises incomplete;" in r.stdout
    # what could not run here is reported as unavailable, never counted as passed
    assert "could not run here" in r.stdout and " 0 unavailable." not in r.stdout
    records = json.loads(out.read_text())["records"]
    assert records and all(rec["seed"] == 7 for rec in records)


def test_self_check_command():
    r = subprocess.run(
        [sys.executable, "-m", "checks", "online_normalizer", "--self-check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "5 of 5 course files behave as expected." in r.stdout
