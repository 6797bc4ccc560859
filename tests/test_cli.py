"""The check engine and `python -m checks`, driven as a learner drives it (subprocesses)."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from checks.command_line import EXIT_USAGE

REPO = Path(__file__).resolve().parent.parent
A1 = REPO / "workshops" / "online_normalizer"


def cli(*args, stdlib_only=False, env_extra=None, timeout=120, cwd=REPO):
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env.update(env_extra or {})
    cmd = [sys.executable] + (["-S"] if stdlib_only else []) + ["-m", "checks", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def exercise(tmp_path, body: str, name="ex.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


SOLUTION_TEXT = (A1 / "solution.py").read_text()


def test_solution_passes_under_python_S():
    r = cli("online_normalizer", "--solution", stdlib_only=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "11 checks passed; 0 failed; 0 exercises incomplete; 0 unavailable." in r.stdout


def test_starter_is_todo_under_python_S(tmp_path):
    r = cli("online_normalizer", "--workspace", str(tmp_path / "ws"), stdlib_only=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "TODO" in r.stdout and "1 exercise incomplete" in r.stdout
    assert "Incomplete: 11 of 11 checks still TODO." in r.stdout
    # the learner's copy was created from the starter, byte for byte
    assert (tmp_path / "ws" / "online_normalizer.py").read_bytes() == (A1 / "starter.py").read_bytes()


@pytest.mark.parametrize("wrong", sorted(p.name for p in (A1 / "wrong").glob("*.py")))
def test_each_wrong_version_is_rejected(wrong):
    r = cli("online_normalizer", "--file", str(A1 / "wrong" / wrong), stdlib_only=True)
    assert r.returncode == 1, r.stdout
    assert "FAIL" in r.stdout


def test_wrong_versions_caught_by_the_named_checks():
    expected = {"raw_denominator.py": "worked-merge", "empty_nan.py": "empty-empty"}
    for name, check_id in expected.items():
        r = cli("online_normalizer", "--file", str(A1 / "wrong" / name), "--check", check_id)
        assert r.returncode == 1, (name, r.stdout)


@pytest.mark.usefixtures("no_gpu")
def test_all_intermediate_without_gpu_is_unavailable():
    r = cli("all", "--level", "intermediate")
    assert r.returncode == 3, r.stdout + r.stderr


@pytest.mark.usefixtures("no_gpu")
def test_named_gpu_workshop_without_gpu_and_no_interpret_says_why_once():
    r = cli("strided_softmax", "--solution", "--no-interpret")
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.count("--interpret") == 1, r.stdout  # one notice, not one per check


@pytest.mark.usefixtures("no_gpu")
def test_named_gpu_workshop_without_gpu_runs_interpreted_with_one_notice():
    r = cli("strided_softmax", "--solution", "--check", "rejects-type", "--check", "own-kernel")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("No CUDA GPU here") == 1
    assert "(interpreter)" in r.stdout


def test_interpret_and_no_interpret_together_is_a_usage_error():
    r = cli("strided_softmax", "--interpret", "--no-interpret")
    assert r.returncode == 64 and "--no-interpret" in r.stderr


@pytest.mark.parametrize("bad", ["-1", "x", "1.5"])
def test_a_bad_seed_is_a_usage_error_naming_it(bad):
    r = cli("online_normalizer", "--solution", "--seed", bad)
    assert r.returncode == 64 and "--seed" in r.stderr, r.stderr


def test_doctor_reports_what_works_here():
    r = cli("--doctor")
    assert r.returncode == 0, r.stdout + r.stderr
    for word in ("python", "torch", "triton", "GPU", "interpreter"):
        assert word in r.stdout


def test_partial_answer_is_wrong_not_todo(tmp_path):
    # summarize done (correctly), merge wrong, streaming_softmax still TODO -> 1 (wrong wins)
    p = exercise(
        tmp_path,
        """
        import math
        EMPTY = (-math.inf, 0.0)
        def summarize(values):
            values = list(values)
            if not values:
                return EMPTY
            m = max(values)
            return (m, sum(math.exp(v - m) for v in values))
        def merge(a, b):
            return (max(a[0], b[0]), a[1] + b[1])
        def streaming_softmax(values, chunk_size):
            raise NotImplementedError("later")
    """,
    )
    r = cli("online_normalizer", "--file", str(p))
    assert r.returncode == 1
    assert re.search(r"PASS +summarize-empty", r.stdout) and "TODO" in r.stdout and "FAIL" in r.stdout


def test_todo_only_from_learner_code(tmp_path):
    # A NotImplementedError raised by library code is not the learner's TODO
    p = exercise(
        tmp_path,
        SOLUTION_TEXT
        + textwrap.dedent("""
        import fractions
        def merge(left, right):
            return fractions.Fraction(1, 3) ** fractions.Fraction(1, 2) + object()
    """),
    )
    r = cli("online_normalizer", "--file", str(p), "--check", "worked-merge")
    assert r.returncode == 1, r.stdout
    assert "ERROR" in r.stdout

    lib = tmp_path / "helperlib.py"
    lib.write_text("def f():\n    raise NotImplementedError('library gap')\n")
    p2 = exercise(
        tmp_path,
        SOLUTION_TEXT
        + textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import helperlib
        def merge(left, right):
            return helperlib.f()
    """),
        name="ex2.py",
    )
    r = cli("online_normalizer", "--file", str(p2), "--check", "worked-merge")
    assert r.returncode == 1, r.stdout
    assert "raised by a library" in r.stdout


@pytest.mark.parametrize(
    "body,needle",
    [
        ("def summarize(values:\n    pass\n", "SyntaxError"),
        ("import not_a_module_anywhere\n", "ModuleNotFoundError"),
        ("raise RuntimeError('boom at import')\n", "boom at import"),
        ("import sys\nsys.exit(3)\n", "sys.exit"),
    ],
)
def test_load_errors_are_failures_with_a_clear_message(tmp_path, body, needle):
    p = exercise(tmp_path, body)
    r = cli("online_normalizer", "--file", str(p), stdlib_only=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert needle in r.stdout
    if needle == "SyntaxError":
        assert "line 1" in r.stdout


def test_check_selects_one_and_unknown_id_is_usage_error():
    r = cli("online_normalizer", "--solution", "--check", "empty-empty")
    assert r.returncode == 0 and "1 check passed;" in r.stdout and "1 checks" not in r.stdout
    assert "Passed: the 1 check ran and passed." in r.stdout
    r = cli("online_normalizer", "--solution", "--check", "no-such-check")
    assert r.returncode == EXIT_USAGE and "no-such-check" in r.stderr


def test_usage_errors_have_their_own_code(tmp_path):
    assert cli("no_such_workshop").returncode == EXIT_USAGE
    assert cli().returncode == EXIT_USAGE
    assert cli("online_normalizer", "--bogus-flag").returncode == EXIT_USAGE
    assert cli("all", "--file", "x.py").returncode == EXIT_USAGE
    r = cli("online_normalizer", "--file", str(tmp_path / "missing.py"))
    assert r.returncode == EXIT_USAGE and "--file" in r.stderr
    r = cli("online_normalizer", "--hint", "99")
    assert r.returncode == EXIT_USAGE and "--hint" in r.stderr
    for bad in ("-1", "nan"):
        r = cli("online_normalizer", "--timeout", bad)
        assert r.returncode == EXIT_USAGE and "--timeout" in r.stderr


def test_json_records_match_the_printout(tmp_path):
    out = tmp_path / "sub" / "run.json"
    r = cli("online_normalizer", "--file", str(A1 / "wrong" / "raw_denominator.py"), "--json", str(out))
    assert r.returncode == 1
    data = json.loads(out.read_text())
    assert data["schema"] == "kernel-course/check-records" and data["exit_code"] == 1
    printed = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] in ("PASS", "FAIL", "TODO", "ERROR", "SKIP", "NOT"):
            printed[parts[1]] = parts[0]
    mark = {
        "pass": "PASS",
        "fail": "FAIL",
        "todo": "TODO",
        "error": "ERROR",
        "skipped": "SKIP",
        "not run": "NOT",
    }
    assert {rec["id"]: mark[rec["status"]] for rec in data["records"]} == printed
    assert data["summary"] in r.stdout
    assert not list(out.parent.glob(".*.tmp"))  # atomic write left no temporary file


def test_timeout_stops_an_infinite_loop(tmp_path):
    p = exercise(tmp_path, SOLUTION_TEXT + "\ndef merge(left, right):\n    while True:\n        pass\n")
    r = cli("online_normalizer", "--file", str(p), "--timeout", "3", stdlib_only=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "timed out" in r.stdout
    assert not re.search(r"PASS +worked-merge", r.stdout)  # the check that hung is an error, never a pass
    assert re.search(r"^  ERROR   worked-merge ", r.stdout, re.M), r.stdout  # ids aligned under NOT RUN
    # the checks the timeout stopped are "not run", not "unavailable" (that is for no GPU)
    never = [line for line in r.stdout.splitlines() if line.strip().startswith("NOT RUN")]
    assert never, r.stdout
    assert "; 0 unavailable; " in r.stdout and f"; {len(never)} not run." in r.stdout
    assert "Failed:" in r.stdout and "1 error" in r.stdout and "1 errors" not in r.stdout


def test_timeout_mode_matches_in_process_verdicts():
    a = cli("online_normalizer", "--solution", "--timeout", "30")
    b = cli("online_normalizer", "--solution")
    assert a.returncode == b.returncode == 0
    assert a.stdout.count("PASS") == b.stdout.count("PASS") == 11


def test_hints_are_tiered():
    one = cli("online_normalizer", "--hint", stdlib_only=True)
    assert one.returncode == 0 and "Hint 1" in one.stdout and "Hint 2" not in one.stdout
    two = cli("online_normalizer", "--hint", "2", stdlib_only=True)
    assert "Hint 2" in two.stdout and "Hint 1" not in two.stdout
    every = cli("online_normalizer", "--hints", stdlib_only=True)
    assert every.stdout.count("## Hint") >= 3


def test_list_shows_the_catalog_and_the_check_ids():
    from checks.judging.engine import cases_for

    r = cli("--list")
    assert r.returncode == 0
    assert "online_normalizer" in r.stdout and "A1" in r.stdout
    ids = [c.id for c in cases_for("online_normalizer")]
    assert "11 checks (--check ID):" in r.stdout
    for check_id in ids:
        assert f"        {check_id} " in r.stdout
    assert "strided_softmax" in r.stdout  # every workshop
    # one workshop's: by id or code, nothing of the others
    for name in ("online_normalizer", "A1"):
        one = cli(name, "--list", stdlib_only=True)
        assert one.returncode == 0, one.stderr
        assert all(f" {i} " in one.stdout for i in ids) and "strided_softmax" not in one.stdout
    assert cli("nope", "--list").returncode == EXIT_USAGE


def test_list_without_torch_says_why_a_gpu_workshop_lists_no_ids():
    r = cli("--list", stdlib_only=True)
    assert r.returncode == 0 and "they need torch" in r.stdout and "worked-merge" in r.stdout


def test_reset_keeps_a_backup(tmp_path):
    ws = tmp_path / "ws"
    cli("online_normalizer", "--where", "--workspace", str(ws))
    mine = ws / "online_normalizer.py"
    mine.write_text(SOLUTION_TEXT)
    r = cli("online_normalizer", "--reset", "--workspace", str(ws))
    assert r.returncode == 0, r.stderr
    assert mine.read_bytes() == (A1 / "starter.py").read_bytes()
    backups = list((tmp_path / ".ws-state" / "backups").glob("online_normalizer.*.py"))
    assert len(backups) == 1 and backups[0].read_text() == SOLUTION_TEXT


def test_progress_and_changes_between_runs(tmp_path):
    ws = tmp_path / "ws"
    cli("online_normalizer", "--workspace", str(ws))  # TODO
    (ws / "online_normalizer.py").write_text(SOLUTION_TEXT)
    r = cli("online_normalizer", "--workspace", str(ws))
    assert r.returncode == 0
    progress = json.loads((tmp_path / ".ws-state" / "progress.json").read_text())
    assert progress["online_normalizer"]["status"] == "passed"
    (ws / "online_normalizer.py").write_text((A1 / "wrong" / "empty_nan.py").read_text())
    r = cli("online_normalizer", "--workspace", str(ws))
    assert r.returncode == 1
    assert "newly failing (empty-empty)" in r.stdout


def test_learner_module_is_importable_like_a_real_module():
    """A dataclass with postponed annotations looks its module up in sys.modules."""
    r = cli("online_normalizer", "--file", str(REPO / "tests" / "fixtures" / "a1_with_dataclass.py"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_missing_function_is_named(tmp_path):
    p = exercise(tmp_path, SOLUTION_TEXT.replace("def streaming_softmax(", "def streaming_softmax_renamed("))
    r = cli("online_normalizer", "--file", str(p), "--check", "empty-input")
    assert r.returncode == 1
    assert "does not define 'streaming_softmax'" in r.stdout


def test_json_records_are_written_with_an_ordinary_file_mode(tmp_path):
    import stat

    out = tmp_path / "r.json"
    r = cli("online_normalizer", "--solution", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644 & ~mask


def test_a_run_of_your_file_keeps_the_best_result_with_counts(tmp_path):
    ws = tmp_path / "ws"
    r = cli("online_normalizer", "--workspace", str(ws), "--file", str(A1 / "solution.py"))
    assert r.returncode == 0
    ws.mkdir(exist_ok=True)
    (ws / "online_normalizer.py").write_text((A1 / "solution.py").read_text())
    r = cli("online_normalizer", "--workspace", str(ws))
    assert r.returncode == 0, r.stdout + r.stderr
    from checks import workspace

    entry = workspace.load_progress(ws)[0]["online_normalizer"]
    assert entry["best"]["status"] == "passed" and entry["best"]["passed"] == entry["best"]["total"] > 0
