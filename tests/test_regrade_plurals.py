"""The regrade counts in words that agree with their numbers: "2 files from 1 learner",
never "1 learners". The grading itself is left out (no cluster starts)."""

import io
from pathlib import Path

import pytest

from checks.regrade import cli, execution, reports, verdicts

REPO = Path(__file__).resolve().parent.parent
SOLUTION = (REPO / "workshops" / "online_normalizer" / "solution.py").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "files, said",
    [
        ({"amy": ["online_normalizer.py", "strided_softmax.py"]}, "2 files from 1 learner in"),
        ({"amy": ["online_normalizer.py"]}, "1 file from 1 learner in"),
        ({"amy": ["online_normalizer.py"], "bo": ["online_normalizer.py"]}, "2 files from 2 learners in"),
    ],
)
def test_the_cohort_line_counts_in_agreeing_words(tmp_path, capsys, monkeypatch, files, said):
    pytest.importorskip("distributed")
    for learner, names in files.items():
        for name in names:
            (tmp_path / "subs" / learner).mkdir(parents=True, exist_ok=True)
            (tmp_path / "subs" / learner / name).write_text(SOLUTION, encoding="utf-8")
    monkeypatch.setattr(cli, "grade_all", lambda *args: 0)  # the line is said before any grading
    cli.main([str(tmp_path / "subs"), "--seed", "1", "--report", str(tmp_path / "report")])
    assert said in capsys.readouterr().out


def test_the_other_counts_agree_with_their_numbers():
    assert "1 attempt;" in verdicts.lost("KilledWorker", 1)["fault_detail"]
    assert "2 attempts;" in verdicts.lost("KilledWorker", 2)["fault_detail"]
    assert reports._count(1, "CPU") == "1 CPU" and reports._count(16, "CPU") == "16 CPUs"
    assert reports._count(None, "CPU") == "? CPUs"


def test_output_cut_by_one_byte_says_one_byte():
    flood = b"h" * execution.HEAD_BYTES + b"m" + b"t" * execution.TAIL_BYTES
    out = execution.CappedOutput(io.BytesIO(flood))
    assert "[... 1 byte of output left out ...]" in out.text()
