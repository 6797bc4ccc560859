"""A file that does not import is one clear record that says where: the message and the
details carry the file and the line (the app shows them as one panel)."""

from checks.engine import run_checks


def test_a_syntax_error_is_one_record_with_its_line(tmp_path):
    p = tmp_path / "ex.py"
    p.write_text("def summarize(values):\n    return (\n")
    (rec,) = run_checks("online_normalizer", p)
    assert (rec.id, rec.status) == ("load", "error")
    assert "line 2" in rec.message and rec.details == {"file": str(p), "line": 2}


def test_an_error_at_import_time_names_the_learners_line(tmp_path):
    p = tmp_path / "ex.py"
    p.write_text("import math\n\nLIMIT = math.sqrt(-1)\n")
    (rec,) = run_checks("online_normalizer", p)
    assert rec.status == "error" and "ValueError" in rec.message
    assert rec.details["line"] == 3 and "line 3" in rec.message
