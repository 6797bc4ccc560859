"""results/junit_summary.py, the H200 test run's JSON: every test counted once, by its outcome;
a test a stopped run left unfinished is never counted as passed."""

import importlib.util
import json

from conftest import REPO

_spec = importlib.util.spec_from_file_location("junit_summary", REPO / "results" / "junit_summary.py")
junit_summary = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(junit_summary)

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" time="12.5">
<testcase classname="tests.test_a" name="test_passes" time="1.0" />
<testcase classname="tests.test_a" name="test_fails" time="2.0">
<failure message="assert 1 == 2">x</failure></testcase>
<testcase classname="tests.test_a" name="test_breaks" time="0.5">
<error message="fixture broke">y</error></testcase>
<testcase classname="tests.test_b" name="test_gpu" time="0.0">
<skipped message="needs a CUDA GPU" /></testcase>
<testcase classname="tests.test_b" name="test_gpu2" time="0.0">
<skipped message="needs a CUDA GPU" /></testcase>
<testcase time="0.000" />
</testsuite></testsuites>"""


def test_counts_failures_skips_and_unfinished_tests(tmp_path):
    (tmp_path / "j.xml").write_text(JUNIT)
    out = tmp_path / "tests.json"
    assert junit_summary.main([str(tmp_path / "j.xml"), "--output", str(out), "--workers", "12"]) == 0
    s = json.loads(out.read_text())
    assert (s["passed"], s["failed"], s["errors"], s["skipped"], s["unfinished"], s["total"]) == (
        1,
        1,
        1,
        2,
        1,
        6,
    )
    assert s["duration_s"] == 12.5 and s["workers"] == 12
    assert [f["test"] for f in s["failures"]] == ["tests.test_a::test_fails", "tests.test_a::test_breaks"]
    assert s["skip_reasons"] == [{"reason": "needs a CUDA GPU", "count": 2}]
    assert s["slowest"][0] == {"test": "tests.test_a::test_fails", "seconds": 2.0}


def test_a_missing_report_is_an_error_not_an_empty_summary(tmp_path):
    assert junit_summary.main([str(tmp_path / "none.xml"), "--output", str(tmp_path / "s.json")]) == 1
    assert not (tmp_path / "s.json").exists()
