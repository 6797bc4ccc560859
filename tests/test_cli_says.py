"""What `python -m checks` says, as the app says it: the first failure in full (its
diagnosis, where to look, the map and its scale, why, the lesson section), one line for
the others, a run of identical messages once with a count, a time limit by default that
names the stuck line, the outcome word in the JSON, progress left alone when nothing
could run, usage errors before any notice, a quiet exit when the pipe's reader goes away,
and numbers that mean what they say (a NaN is never an error of 0)."""

import json
import re
import subprocess
import sys
import textwrap

import pytest
from test_cli import A1, REPO, SOLUTION_TEXT, cli, exercise

from checks.command_line import DEFAULT_TIMEOUT, EXIT_BROKEN_PIPE, EXIT_USAGE
from checks.judging.records import Record, change_since, outcome_line
from checks.judging.report import Printer, scale_text


def rec(status, id_="c", message="", **kw):
    return Record(workshop="w", id=id_, label=f"label of {id_}", status=status, message=message, **kw)


def printed(capsys, records, verbose=False, lesson="workshops/w/lesson.md") -> str:
    out = Printer(verbose=verbose)
    out.begin(lesson=lesson)
    for r in records:
        out.record(r)
    out.finish()
    return capsys.readouterr().out


MISTAKE = {
    "id": "stale-denominator",
    "sentence": "The running sum is not rescaled when the maximum grows.",
    "where": "the loop over column tiles, where l is updated",
    "section": "The layout-aware path",
    "why": "a running sum not rescaled is counted at the wrong scale",
}


def test_the_first_failure_in_full_and_one_line_for_each_other(capsys):
    first = rec(
        "fail",
        "growing-max",
        message=MISTAKE["sentence"] + "\nsoftmax(x.t()): 2591 of 12000 elements wrong\nsecond line of facts",
        why=MISTAKE["why"],
        section=MISTAKE["section"],
        details={
            "mistake": MISTAKE,
            "map": ["....####"] * 8,
            "map_scale": {"rows": 40, "cols": 128, "lines": 8, "chars": 32},
        },
    )
    second = rec(
        "fail", "rows-sum", message="rows do not sum to 1\nmore facts", why="other why", section="Numerics"
    )
    text = printed(capsys, [rec("pass", "ok"), first, second])
    head, tail = text.split("rows-sum", 1)
    for said in (
        MISTAKE["sentence"],
        "second line of facts",
        "Where to look: the loop over column tiles, where l is updated",
        "Why it matters: a running sum not rescaled is counted at the wrong scale",
        "Lesson section: The layout-aware path (in workshops/w/lesson.md)",
        "each of the 8 map lines covers 5 rows; each character 4 columns",
    ):
        assert said in " ".join(head.split()), (said, text)
    assert head.count("....####") == 8
    # every other failing check: its first line only
    assert "rows do not sum to 1" in tail
    assert "more facts" not in tail and "other why" not in tail and "Numerics" not in tail
    # --verbose: every failure in full
    assert "other why" in printed(capsys, [first, second], verbose=True)


def test_a_run_of_identical_messages_is_said_once_with_a_count_and_every_id(capsys):
    todo = "softmax: write the kernel"
    records = [rec("todo", f"t{i}", todo) for i in range(26)] + [rec("skipped", "s", "needs a GPU")]
    text = printed(capsys, records)
    assert text.count(todo) == 1 and "26 checks: TODO: softmax: write the kernel" in text
    assert all(re.search(rf"^  TODO +t{i} ", text, re.M) for i in range(26))  # the ids stay visible
    assert re.search(r"^  SKIP +s .*\n +needs a GPU$", text, re.M), text  # a run of one: as before
    nots = [rec("not run", f"n{i}", "not run: timed out") for i in range(3)]
    assert "3 checks: not run: timed out" in printed(capsys, nots)  # the word is not said twice
    # A failure's line comes at once, under its row (the next check may take minutes);
    # each identical failure after it points back to the first, with no count line.
    missing = "AttributeError: module has no attribute 'softmax'"
    errors = [rec("error", f"e{i}", missing, why="a why") for i in range(3)]
    text = printed(capsys, [rec("fail", "f", "first failure"), *errors])
    assert re.search(r"^  ERROR +e0 .*\n +AttributeError.*\n  ERROR +e1 ", text, re.M), text
    assert re.search(r"^  ERROR +e2 .*\n +\(the same message as e0\)$", text, re.M), text
    assert text.count(missing) == 1 and "3 checks" not in text
    assert "a why" not in text  # only the first failure (f) is shown in full


def test_the_untouched_starter_says_each_todo_once_per_run(tmp_path):
    r = cli("online_normalizer", "--workspace", str(tmp_path / "ws"), stdlib_only=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "4 checks: TODO: streaming_softmax: merge chunk summaries, then normalize" in r.stdout
    assert r.stdout.count("streaming_softmax: merge chunk summaries") == 1


def test_the_cli_prints_the_why_and_the_section_of_the_first_failure_only():
    r = cli("online_normalizer", "--file", str(A1 / "wrong" / "raw_denominator.py"))
    assert r.returncode == 1
    assert r.stdout.count("Why it matters:") == 1 and r.stdout.count("Lesson section:") == 1
    first = r.stdout.split("FAIL", 2)[1]
    # the failure matches a classic mistake, so the why and "where to look" are the mistake's
    assert "Your merge adds the two denominators as they are" in first
    assert "Where to look: merge:" in first and "Why it matters: each l is a sum of exp" in first
    assert "Lesson section: Deriving the merge" in first


def test_the_error_map_states_its_scale():
    assert scale_text({"rows": 40, "cols": 128, "lines": 8, "chars": 32}) == (
        "a 40 x 128 output: each of the 8 map lines covers 5 rows; each character 4 columns"
    )
    assert scale_text({"rows": 4, "cols": 3000, "lines": 4, "chars": 32}) == (
        "a 4 x 3000 output: each map line is one row; each character about 94 columns"
    )
    assert "about 5.4 rows" in scale_text({"rows": 43, "cols": 8, "lines": 8, "chars": 8})


def test_a_nan_is_the_worst_error_never_an_error_of_0():
    torch = pytest.importorskip("torch")
    from checks.judging.tensors import describe, mismatch_report

    expected = torch.full((40, 128), 0.31, dtype=torch.float64)
    got = expected.float().clone()
    got[2, 7] = got[30, 100] = float("nan")
    facts = mismatch_report(got, expected, atol=1e-5, rtol=1e-4)
    said = describe(facts)
    assert "abs err 0" not in said and "got nan, expected 0.31" in said, said
    assert facts["worst_index"] == [2, 7] and facts["not_finite"] == 2
    assert facts["map_scale"] == {"rows": 40, "cols": 128, "lines": 8, "chars": 32}
    got[5, 5] = 1.0  # a finite error beside the NaN: the NaN is still the worst
    assert "got nan, expected 0.31" in describe(mismatch_report(got, expected, atol=1e-5, rtol=1e-4))
    finite = expected.float().clone()
    finite[1, 1] = 1.31
    assert "(abs err 1, " in describe(mismatch_report(finite, expected, atol=1e-5, rtol=1e-4))


def test_a_time_limit_by_default_and_0_for_none(tmp_path):
    assert DEFAULT_TIMEOUT == 120
    out = tmp_path / "r.json"
    r = cli("online_normalizer", "--solution", "--json", str(out), stdlib_only=True)
    assert r.returncode == 0 and json.loads(out.read_text())["timeout_seconds"] == DEFAULT_TIMEOUT
    helped = " ".join(cli("--help").stdout.split())
    assert "default 120" in helped and "0: no limit" in helped
    r = cli("online_normalizer", "--solution", "--timeout", "0", "--json", str(out), stdlib_only=True)
    assert r.returncode == 0 and "11 checks passed" in r.stdout
    assert json.loads(out.read_text())["timeout_seconds"] is None


def test_a_timeout_names_the_stuck_line_and_says_failed_in_the_json(tmp_path):
    p = exercise(tmp_path, SOLUTION_TEXT + "\ndef merge(left, right):\n    while True:\n        pass\n")
    line = len(p.read_text().splitlines()) - 1
    out = tmp_path / "run.json"
    r = cli("online_normalizer", "--file", str(p), "--timeout", "5", "--json", str(out), stdlib_only=True)
    assert r.returncode == 1, r.stdout + r.stderr
    # the sample lands on either line of the loop (Python 3.12 charges its jump to `pass`)
    stuck = (f"ex.py:{line} |     while True:", f"ex.py:{line + 1} |         pass")
    assert any(s in r.stdout for s in stuck), r.stdout
    data = json.loads(out.read_text())
    assert data["outcome"] == "failed" and data["outcome_line"].startswith("failed: 1 of 11 checks failed")
    assert "never ran" in data["outcome_line"] and data["counts"]["not run"] == 10
    assert data["counts"]["error"] == 1 and data["timeout_seconds"] == 5
    stuck = next(x for x in data["records"] if x["status"] == "error")
    assert stuck["id"] == "worked-merge" and stuck["message"].startswith("timed out")


@pytest.mark.parametrize(
    "args,outcome",
    [(["--solution"], "passed"), (["--file", str(A1 / "wrong" / "empty_nan.py")], "failed")],
)
def test_the_json_says_the_outcome_word(tmp_path, args, outcome):
    out = tmp_path / "r.json"
    r = cli("online_normalizer", *args, "--json", str(out), stdlib_only=True)
    data = json.loads(out.read_text())
    assert data["outcome"] == outcome and data["outcome_line"].startswith(outcome + ":")
    assert data["outcome_line"][0].upper() + data["outcome_line"][1:] + "." in r.stdout
    assert sum(data["counts"].values()) == len(data["records"]) == 11


@pytest.mark.usefixtures("no_gpu")
def test_a_run_where_nothing_could_run_leaves_progress_alone(tmp_path):
    pytest.importorskip("torch")
    from checks.judging.engine import cases_for

    ws, state = tmp_path / "ws", tmp_path / ".ws-state"
    ws.mkdir()
    state.mkdir()
    (ws / "strided_softmax.py").write_text((REPO / "workshops/strided_softmax/solution.py").read_text())
    passed = {"strided_softmax": [{"id": c.id, "status": "pass"} for c in cases_for("strided_softmax")]}
    (state / "last-run.json").write_text(json.dumps(passed))
    progress = {"strided_softmax": {"status": "passed", "best": {"status": "passed", "passed": 36}}}
    (state / "progress.json").write_text(json.dumps(progress))
    before = {p.name: p.read_bytes() for p in state.iterdir()}
    r = cli("strided_softmax", "--workspace", str(ws), "--no-interpret")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "newly failing" not in r.stdout and "Changed since the last run" not in r.stdout
    assert {p.name: p.read_bytes() for p in state.iterdir()} == before
    assert "progress is left as it was" in r.stdout


def test_a_skipped_check_is_never_newly_failing():
    assert change_since("pass", "skipped") == change_since("pass", "not run") == ""
    assert change_since("skipped", "pass") == ""
    assert change_since("pass", "fail") == "newly failing"


def test_outcome_sentences_in_good_grammar():
    gpu = "no CUDA GPU is available here"
    assert (
        outcome_line([rec("skipped", message=gpu)]) == "unavailable: the 1 check cannot run on this machine"
    )
    two = [rec("skipped", "a", gpu), rec("skipped", "b", gpu)]
    assert outcome_line(two) == "unavailable: none of the 2 checks can run on this machine"


def test_a_usage_error_comes_before_any_notice():
    pytest.importorskip("torch")
    r = cli("strided_softmax", "--solution", "--check", "nope")
    assert r.returncode == EXIT_USAGE and "nope" in r.stderr and "--check" in r.stderr
    assert r.stdout == "", r.stdout  # no GPU notice, no heading: nothing before the error
    r = cli("all", "--include-gpu", "--check", "basic")
    assert r.returncode == EXIT_USAGE and r.stdout == ""


def test_a_reader_that_goes_away_ends_the_output_quietly():
    proc = subprocess.Popen(
        [sys.executable, "-m", "checks", "--list"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `| head` does once it has its lines
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_a_stuck_check_at_import_is_named_too(tmp_path):
    p = exercise(
        tmp_path,
        textwrap.dedent("""
        import time
        while True:
            time.sleep(0.01)
        """),
    )
    r = cli("online_normalizer", "--file", str(p), "--timeout", "5", stdlib_only=True)
    assert r.returncode == 1 and "timed out" in r.stdout
    assert "ex.py:4 |     time.sleep(0.01)" in r.stdout, r.stdout


def test_changes_since_the_last_run_are_counted_with_a_few_ids():
    from checks.__main__ import changed_text

    changes = [("w", f"c{i}", "newly passing") for i in range(20)] + [("w", "bad", "newly failing")]
    text = changed_text(changes, several=False)
    assert text == "1 newly failing (bad); 20 newly passing (c0, c1, c2, c3 and 16 more)"
    assert changed_text(changes[:1], several=True) == "1 newly passing (w:c0)"
