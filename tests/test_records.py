"""One vocabulary: a check's status, a workshop's progress and "newly passing" are
defined once (checks.judging.records) and read the same way by the CLI, the app and the JSON."""

import json

import pytest

from checks.command_line import exit_code
from checks.judging.records import (
    STATUSES,
    Progress,
    Record,
    Status,
    change_since,
    progress_of,
)


def rec(status, id="c"):
    return Record(workshop="w", id=id, label="l", status=status)


def test_status_is_a_string_in_comparisons_and_json_and_rejects_a_typo():
    r = rec("pass")
    assert r.status is Status.PASS and r.status == "pass" and f"{r.status}" == "pass"
    assert json.loads(json.dumps(r.to_dict()))["status"] == "pass"
    assert Record.from_dict(r.to_dict()) == r
    assert [s.word for s in Status] == ["PASS", "FAIL", "TODO", "ERROR", "SKIP", "NOT RUN"]
    assert STATUSES == ("pass", "fail", "todo", "error", "skipped", "not run")
    with pytest.raises(ValueError, match="status"):
        rec("passed")


@pytest.mark.parametrize(
    "statuses,progress,code",
    [
        (["pass", "pass"], Progress.PASSED, 0),
        (["pass", "fail", "todo"], Progress.FAILING, 1),
        (["pass", "error"], Progress.FAILING, 1),
        (["pass", "todo", "skipped"], Progress.TODO, 2),
        (["skipped"], Progress.UNAVAILABLE, 3),
        (["pass", "not run"], Progress.UNAVAILABLE, 3),  # a run cut short is not a pass
        (["pass", "error", "not run"], Progress.FAILING, 1),
        ([], Progress.UNAVAILABLE, 3),
    ],
)
def test_progress_follows_the_exit_code(statuses, progress, code):
    records = [rec(s, str(i)) for i, s in enumerate(statuses)]
    assert exit_code(records) == code and progress_of(records) is progress


def test_newly_passing_and_newly_failing_only_across_a_pass():
    assert change_since("fail", Status.PASS) == "newly passing"
    assert change_since("pass", Status.TODO) == "newly failing"
    assert change_since("fail", Status.ERROR) == change_since(None, Status.PASS) == ""
    assert change_since("pass", Status.PASS) == ""


def test_summary_counts_in_good_grammar():
    from checks.judging.records import summary_line

    one = [rec("pass"), rec("todo", "d")]
    assert summary_line(one) == "1 check passed; 0 failed; 1 exercise incomplete; 0 unavailable."
    many = [rec("pass", f"p{i}") for i in range(2)] + [rec("not run", "n")]
    assert (
        summary_line(many) == "2 checks passed; 0 failed; 0 exercises incomplete; 0 unavailable; 1 not run."
    )
