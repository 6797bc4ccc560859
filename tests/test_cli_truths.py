"""The command line says what happened and nothing else: what 'all' left out, totals that are
the workshop's, a timeout's unrun checks as 'not run', a diagnosis said once, --help naming
regrade, --op taking codes, and a learner's file with the mode their umask gives."""

import json
import os
import stat

import pytest
from test_cli import A1, SOLUTION_TEXT, cli
from test_cli_says import MISTAKE, printed, rec

from checks.judging.engine import cases_for
from checks.judging.records import outcome_line, summary_line
from workshops import catalog

GPU_WORKSHOPS = [w for w in catalog.workshops() if w.gpu]


# --- 'all' names what it left out ------------------------------------------------------


def test_all_names_the_gpu_workshops_it_left_out_and_how_to_include_them(tmp_path):
    out = tmp_path / "run.json"
    r = cli("all", "--solution", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    said = [line for line in r.stdout.splitlines() if line.startswith("Left out:")]
    assert len(said) == 1, r.stdout
    for w in GPU_WORKSHOPS:
        assert f"{w.code} {w.id}" in said[0]
    assert f"{len(GPU_WORKSHOPS)} GPU workshops" in said[0] and "--include-gpu" in said[0]
    assert json.loads(out.read_text())["left_out"] == [w.id for w in GPU_WORKSHOPS]


def test_all_with_nothing_selected_names_what_it_left_out():
    r = cli("all", "--level", "intermediate")
    assert r.returncode == 3, r.stdout + r.stderr
    intermediate = [w for w in GPU_WORKSHOPS if w.level == "intermediate"]
    assert f"Left out: {len(intermediate)} GPU workshops" in r.stdout
    assert all(w.id in r.stdout for w in intermediate)


def test_the_self_check_of_all_names_what_it_left_out_too():
    r = cli("all", "--self-check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Left out: {len(GPU_WORKSHOPS)} GPU workshops" in r.stdout


def test_a_gpu_workshops_self_check_without_a_gpu_runs_interpreted_as_a_run_of_one_file_does(
    monkeypatch, capsys
):
    """Without a GPU, --self-check of a GPU workshop chooses Triton's interpreter with the same
    one notice as ``--file`` (it used to skip every check and call the answer BAD)."""
    import torch

    from checks import __main__ as checks_main, authoring

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    seen = {}

    def fake_self_check(selected, args, out):
        seen.update(ids=[w.id for w in selected], interpret=args.interpret)
        return 0

    monkeypatch.setattr(authoring, "self_check", fake_self_check)
    assert checks_main.main(["softmax_backward", "--self-check"]) == 0
    assert seen == {"ids": ["softmax_backward"], "interpret": True}
    assert "No CUDA GPU here: the GPU workshops run in Triton's interpreter" in capsys.readouterr().out
    seen.clear()
    assert checks_main.main(["softmax_backward", "--self-check", "--no-interpret"]) == 0
    assert seen["interpret"] is False


def test_a_named_workshop_says_nothing_about_left_out_ones():
    r = cli("online_normalizer", "--solution")
    assert r.returncode == 0 and "Left out" not in r.stdout


# --- --help, --op ------------------------------------------------------------------------


def test_help_names_regrade():
    r = cli("--help")
    assert r.returncode == 0
    assert "python -m checks regrade SUBMISSIONS" in r.stdout


@pytest.mark.parametrize("argv", [["online_normalizer", "--help"], ["--check", "x", "A1", "-h"]])
def test_help_after_a_workshop_names_it_its_checks_and_the_options(argv, capsys):
    from checks.__main__ import main

    assert main(argv) == 0
    said = capsys.readouterr().out
    assert said.startswith("usage: python -m checks online_normalizer [options]")
    assert "A1 Online normalization [online_normalizer]" in said
    checks = cases_for("online_normalizer")
    assert f"{len(checks)} checks (run one with --check ID):" in said
    for c in checks:
        assert f"  {c.id:<28} {c.label}\n" in said
    assert "--interpret" in said and "exit codes:" in said
    with pytest.raises(SystemExit) as ended:  # the command's own help is unchanged
        main(["--help"])
    assert ended.value.code == 0 and "[online_normalizer]" not in capsys.readouterr().out


@pytest.mark.parametrize("given", ["I1", "i1", "strided_softmax"])
def test_benchmark_op_takes_a_workshop_code_as_checks_does(given):
    from checks.benchmark.cli import build_parser

    assert build_parser().parse_args(["--op", given]).op == "strided_softmax"


def test_benchmark_op_without_a_benchmark_or_unknown_is_refused_naming_it(capsys):
    from checks.benchmark.cli import build_parser

    for given, says in (
        ("A1", "A1 (online_normalizer) has no benchmark"),
        ("nope", "unknown operation 'nope'"),
    ):
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args(["--op", given])
        assert exit_.value.code == 64
        err = capsys.readouterr().err
        assert "--op" in err and says in err


# --- counts are of the workshop's checks --------------------------------------------------


@pytest.mark.usefixtures("no_gpu")  # the interpreter's worker: ready in the same time everywhere
def test_a_file_stuck_at_import_counts_the_workshops_checks_not_one_more(tmp_path):
    """A file that loops while importing: no check ran, and the totals are the workshop's
    36, not 37 (the import is said, not counted as a check)."""
    stuck = tmp_path / "strided_softmax.py"
    stuck.write_text("while True:\n    pass\n")
    out = tmp_path / "run.json"
    # 10 s: time for the worker to start and send its plan before the file's import hangs
    r = cli("strided_softmax", "--file", str(stuck), "--timeout", "10", "--json", str(out), timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    checks = len(json.loads(out.read_text())["records"]) - 1  # the import's record and the checks'
    assert checks == len(cases_for("strided_softmax"))
    assert checks == len([line for line in r.stdout.splitlines() if line.startswith("  NOT RUN")])
    assert f"Failed: your file did not import; none of the {checks} checks ran" in r.stdout
    assert f"of {checks + 1} checks" not in r.stdout and f"{checks} not run" in r.stdout
    assert "0 checks passed; 0 failed;" in r.stdout


def test_a_timeout_in_a_check_leaves_the_rest_not_run(tmp_path):
    hangs = tmp_path / "online_normalizer.py"
    hangs.write_text(
        SOLUTION_TEXT.replace(
            "def streaming_softmax(values, chunk_size):",
            "def streaming_softmax(values, chunk_size):\n    while True:\n        pass\n",
            1,
        )
    )
    out = tmp_path / "run.json"
    r = cli("online_normalizer", "--file", str(hangs), "--timeout", "3", "--json", str(out), timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    records = json.loads(out.read_text())["records"]
    statuses = [x["status"] for x in records]
    stuck = statuses.index("error")
    assert statuses.count("error") == 1 and set(statuses[:stuck]) == {"pass"}
    assert statuses[stuck + 1 :] and set(statuses[stuck + 1 :]) == {"not run"}
    n = len(records)
    assert n == 11  # the workshop's checks, no more
    never = n - stuck - 1
    assert f"Failed: 1 of {n} checks failed (1 error); {never} never ran (the run ended first)." in r.stdout


def _records(statuses, load=None):
    records = [rec(s, f"c{i}") for i, s in enumerate(statuses)]
    return ([rec("error", load, message="SyntaxError")] if load else []) + records


@pytest.mark.parametrize(
    "records, line",
    [
        (
            _records(["not run"] * 36, load="load"),
            "failed: your file did not import; none of the 36 checks ran",
        ),
        (_records([], load="load"), "failed: your file did not import; no check ran"),
        (_records(["not run"], load="load"), "failed: your file did not import; the 1 check never ran"),
        (
            _records(["pass", "error", "not run", "not run"]),
            "failed: 1 of 4 checks failed (1 error); 2 never ran",
        ),
        (
            _records(["pass", "pass", "not run"], load="run"),
            "failed: the run broke between checks; 1 never ran (the run ended first)",
        ),
        (_records(["pass", "fail"]), "failed: 1 of 2 checks failed"),
    ],
)
def test_outcome_lines_count_checks_only(records, line):
    assert outcome_line(records).startswith(line), outcome_line(records)


def test_the_summary_counts_checks_and_says_a_file_that_did_not_import():
    assert summary_line(_records(["not run"] * 3, load="load")) == (
        "0 checks passed; 0 failed; 0 exercises incomplete; 0 unavailable; 3 not run; "
        "your file did not import."
    )


# --- a diagnosis is said once --------------------------------------------------------------


def test_a_diagnosis_said_under_one_check_is_referred_to_under_the_next(capsys):
    def failing(id_, facts):
        return rec("fail", id_, message=f"{MISTAKE['sentence']} — {facts}", details={"mistake": MISTAKE})

    text = printed(
        capsys, [failing("first", "2 of 8 wrong"), failing("second", "5 of 9 wrong"), failing("third", "")]
    )
    assert text.count(MISTAKE["sentence"]) == 1, text
    assert "(the same diagnosis as first) 5 of 9 wrong" in text
    assert "(the same diagnosis as first)" in text.split("third", 1)[1]


def test_another_diagnosis_is_said_in_its_own_words(capsys):
    other = dict(MISTAKE, sentence="The maximum is not subtracted.")
    records = [
        rec("fail", "a", message=f"{MISTAKE['sentence']} — x", details={"mistake": MISTAKE}),
        rec("fail", "b", message=f"{other['sentence']} — y", details={"mistake": other}),
    ]
    text = printed(capsys, records)
    assert MISTAKE["sentence"] in text and other["sentence"] in text and "same diagnosis" not in text


# --- the learner's file gets the umask's mode --------------------------------------------


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_a_new_and_a_reset_exercise_file_get_the_umasks_mode(tmp_path, umask, mode):
    from checks import workspace

    w = catalog.get("online_normalizer")
    before = os.umask(umask)
    try:
        path = workspace.ensure_exercise(w, tmp_path / "ws")
        assert stat.S_IMODE(path.stat().st_mode) == mode
        path.chmod(0o600)
        workspace.reset(w, tmp_path / "ws")
        assert stat.S_IMODE(path.stat().st_mode) == mode
    finally:
        os.umask(before)
    assert path.read_bytes() == (A1 / "starter.py").read_bytes()


def test_the_cli_creates_the_exercise_file_readable_by_the_group(tmp_path):
    r = cli("online_normalizer", "--where", "--workspace", str(tmp_path / "ws"))
    assert r.returncode == 0, r.stderr
    mode = stat.S_IMODE((tmp_path / "ws" / "online_normalizer.py").stat().st_mode)
    assert mode == 0o666 & ~_umask_of_children()


def _umask_of_children() -> int:
    before = os.umask(0)
    os.umask(before)
    return before
