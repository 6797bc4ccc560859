"""Mutation testing of the checks' teaching (checks/mutation): the operators, the mutant
ids, the rule that says which rejected mutants are explained, and a small fixed sample of
mutants re-run in the interpreter to hold the committed report (results/*-cpu-mutants.json)
and its floor (results/mutants-floor.json)."""

import ast
import json
from pathlib import Path

import pytest

from checks.mutation import classify, generate, report
from checks.mutation.operators import OPERATORS

REPO = Path(__file__).resolve().parent.parent

SOURCE = """
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=ok, other=-float("inf")).to(tl.float32)
    shifted = x - 3.0
    clipped = tl.maximum(shifted, 0.0)
    total = tl.sum(tl.exp(clipped), axis=0)
    tl.store(out_ptr + row * n_cols + cols, tl.exp(clipped) / total, mask=ok)


def wrapper(x, out):
    n_rows, n_cols = x.shape
    kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1), BLOCK=16)
    return out
"""


def mutants_by(operator):
    return [m for m in generate.all_mutants("toy", SOURCE) if m.operator == operator]


def changed_lines(m):
    old, new = SOURCE.splitlines(), m.source.splitlines()
    return [i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b]


def test_every_operator_finds_a_place_in_a_kernel_and_a_wrapper():
    found = {m.operator for m in generate.all_mutants("toy", SOURCE)}
    assert found == set(OPERATORS)


@pytest.mark.parametrize(
    "operator, line, before, after",
    [
        ("arith", 12, "x - 3.0", "(x + 3.0)"),
        ("compare", 10, "cols < n_cols", "(cols <= n_cols)"),
        ("constant", 20, "16", "17"),
        ("constant", 13, "0.0", "1.0"),
        ("mask-drop", 15, "tl.store(..., mask=ok)", "tl.store(...)"),
        ("padding", 11, '-float("inf")', "0.0"),
        ("stride-swap", 11, None, None),
        ("grid-halve", 20, "(n_rows,)", "(max(n_rows // 2, 1),)"),
        ("grid-cap", 20, "(n_rows,)", "(min(n_rows, 64),)"),
        ("dtype", 11, "tl.float32", "tl.float16"),
        ("drop-factor", 15, "tl.exp(clipped) / total", "(tl.exp(clipped))"),
    ],
)
def test_an_operator_changes_only_what_it_says(operator, line, before, after):
    chosen = [
        m
        for m in mutants_by(operator)
        if m.line == line and before in (None, m.before) and after in (None, m.after)
    ]
    assert chosen, [(m.line, m.before) for m in mutants_by(operator)]
    m = chosen[0]
    ast.parse(m.source)  # valid Python
    assert m.source != SOURCE
    assert changed_lines(m) == [line]
    if after is not None:
        assert m.after == after
    if operator == "mask-drop":
        assert "mask=" not in m.source.splitlines()[line - 1]
    elif after is not None:
        assert after in m.source.splitlines()[line - 1]
    if operator == "stride-swap":
        assert "row * stride_col + cols * stride_row" in m.source.splitlines()[line - 1]


def test_epilogue_order_swaps_two_steps_on_one_value():
    [m] = mutants_by("epilogue-order")
    assert m.line == 12
    lines = m.source.splitlines()
    assert lines[11].strip() == "shifted = tl.maximum(x, 0.0)"
    assert lines[12].strip() == "clipped = shifted - 3.0"


def test_a_mutant_is_a_splice_of_the_solution_its_comments_kept():
    """The lines before the edit and those at the end of the file stay as they were (a
    splice, not a re-printed module: the learner-facing line numbers of the messages match
    the solution's up to the edit)."""
    source = generate.solution_path("strided_softmax").read_text(encoding="utf-8").splitlines()
    for m in generate.all_mutants("strided_softmax"):
        lines = m.source.splitlines()
        assert lines[: m.line - 1] == source[: m.line - 1], m.id
        if m.line < len(source) - 12:
            assert lines[-10:] == source[-10:], m.id
        assert sum(line.strip().startswith("#") for line in lines) == sum(
            line.strip().startswith("#") for line in source
        ), m.id


def test_the_command_refuses_bad_arguments_by_name(capsys):
    from checks.mutation.cli import main

    assert main(["--workshops", "online_normalizer", "--list"]) == 64
    assert "--workshops" in capsys.readouterr().err
    assert main(["--per-workshop", "0", "--list"]) == 64
    assert "--per-workshop" in capsys.readouterr().err
    assert main(["--only", "strided_softmax:1:arith:x -> y"]) == 64
    assert "--only" in capsys.readouterr().err
    assert main(["--workshops", "fused_gemm", "--per-workshop", "5", "--list"]) == 0
    listed = capsys.readouterr().out.split("\n")
    assert len([i for i in listed if i]) == 5 and all(i.startswith("fused_gemm:") for i in listed if i)


def test_ids_are_stable_unique_and_the_sample_deterministic():
    for w in generate.GPU_WORKSHOPS:
        first, second = generate.all_mutants(w), generate.all_mutants(w)
        ids = [m.id for m in first]
        assert ids == [m.id for m in second]
        assert len(set(ids)) == len(ids)
        assert all(i.startswith(f"{w}:") for i in ids)
        chosen = generate.sample(first, 20)
        assert [m.id for m in chosen] == [m.id for m in generate.sample(second, 20)]
        assert len(chosen) == min(20, len(first))
        # the operators take turns: every operator with a mutant is tried
        assert {m.operator for m in chosen} == {m.operator for m in first} or len(chosen) < len(
            {m.operator for m in first}
        )


def test_no_mutant_is_the_solution_itself():
    for w in generate.GPU_WORKSHOPS:
        original = ast.dump(ast.parse(generate.solution_path(w).read_text(encoding="utf-8")))
        assert all(ast.dump(ast.parse(m.source)) != original for m in generate.all_mutants(w))


# --- the rule ---------------------------------------------------------------------------


def rec(status="fail", id="some-check", message="3 of 9 elements wrong", **details):
    return {"id": id, "status": status, "message": message, "details": details}


@pytest.mark.parametrize(
    "record, contract, expected",
    [
        (rec(mistake={"id": "no-max", "sentence": "Your kernel skips the max"}), (), "mistake"),
        (rec(relation={"id": "negated", "sentence": "Every value has the wrong sign"}), (), "relation"),
        (
            rec(id="rejects-width", message="softmax accepted a (2, 8193) input"),
            ("rejects-width",),
            "contract",
        ),
        (
            rec(id="no-autograd-graph", map=["##"]),
            ("no-autograd-graph",),
            None,
        ),  # wrong values, not the contract
        (
            rec(verdict="out-of-bounds", message="out-of-bounds load ... (3 lane(s); mask this access)"),
            (),
            "out-of-bounds",
        ),
        (
            rec(verdict="out-of-bounds", message="... step like the elements of y (4, 1): an offset ..."),
            (),
            "out-of-bounds",
        ),
        (
            rec(
                verdict="out-of-bounds",
                message="... yet lanes the mask lets through fall outside: check the mask's bound",
            ),
            (),
            None,
        ),
        (rec(verdict="unwritten", message="516 of 900 elements that no program stored"), (), None),
        (
            rec(verdict="unwritten", cause={"id": "short-grid", "sentence": "Your launch grid has fewer"}),
            (),
            "unwritten",
        ),
        (rec(verdict="unwritten", cause="a string is not the record's cause"), (), None),
        (
            rec(
                verdict="out-of-bounds",
                message="the mask lets every lane ... this program owns no elements here",
            ),
            (),
            "out-of-bounds",
        ),
        (
            rec(verdict="no-launch", message="softmax returned without launching any Triton kernel"),
            (),
            "no-launch",
        ),
        (rec(map=["#."]), (), None),
        (rec(status="error", message="TypeError (m.py, line 3)"), (), None),
        (rec(verdict="not-own-kernel", mistake={"id": "x", "sentence": "s"}), (), None),
    ],
)
def test_what_explains_a_failing_record(record, contract, expected):
    assert classify.explanation(record, contract) == expected


def test_a_mutants_status():
    passing = rec(status="pass")
    named = rec(mistake={"id": "no-max", "sentence": "Your kernel skips the max"})
    assert classify.classify([passing, rec(status="skipped")])["status"] == classify.SURVIVED
    assert classify.classify([passing, rec(status="error")])["status"] == classify.CRASHED
    assert classify.classify([rec(map=["#"]), named])["status"] == classify.EXPLAINED
    assert classify.classify([rec(map=["#"]), rec(status="error")])["status"] == classify.UNEXPLAINED
    mixed = classify.classify([named, rec(verdict="not-own-kernel")])
    assert mixed["status"] == classify.UNEXPLAINED and mixed["misattributed"]
    shown = classify.classify([named])["failing"][0]
    assert shown["sentence"] == "Your kernel skips the max" and shown["explained_by"] == "mistake"


def test_the_explained_fraction_counts_only_rejected_mutants():
    counts = {s: 0 for s in classify.STATUSES}
    counts.update({classify.EXPLAINED: 9, classify.UNEXPLAINED: 1, classify.SURVIVED: 5, classify.CRASHED: 4})
    assert report.fraction(counts) == 0.9
    assert report.fraction({s: 0 for s in classify.STATUSES}) is None


# --- the committed report ---------------------------------------------------------------


def committed_report():
    found = sorted(REPO.glob("results/*-cpu-mutants.json"))
    assert found, "no results/*-cpu-mutants.json: run python -m checks.mutation (see README)"
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in found]
    return max(reports, key=lambda r: r["created"])  # the newest (file names sort by commit)


def test_the_committed_report_meets_its_floor_and_every_survivor_is_reviewed():
    data = committed_report()
    kept = json.loads((REPO / "results" / "mutants-floor.json").read_text(encoding="utf-8"))
    floor = kept["floor"]
    assert set(floor) == set(generate.GPU_WORKSHOPS)
    for w, least in floor.items():
        got = data["workshops"][w]["explained_fraction"]
        assert got is not None and got >= least, f"{w}: {got} explained, below the floor {least}"
    # a mutant called someone else's work is a defect of the checks: their number may only fall
    assert data["overall"]["misattributed"] <= kept["misattributed_at_most"]
    for m in data["mutants"]:
        if m["status"] == classify.SURVIVED:
            assert m["review"] and m["review"]["verdict"] in ("equivalent", "hole") and m["review"]["why"], m[
                "id"
            ]


def test_the_committed_reports_mutants_are_still_generated():
    data = committed_report()
    current = {m.id for w in generate.GPU_WORKSHOPS for m in generate.all_mutants(w)}
    stale = [m["id"] for m in data["mutants"] if m["id"] not in current]
    assert not stale, f"the solutions changed: regenerate the report ({stale[:3]})"


def fixed_sample(data, per_workshop=2):
    """The two quickest rejected mutants of each workshop, one explained and one not where
    both kinds exist."""
    chosen = []
    for w in generate.GPU_WORKSHOPS:
        rows = [m for m in data["mutants"] if m["workshop"] == w]
        for status in (classify.EXPLAINED, classify.UNEXPLAINED):
            quick = sorted((m for m in rows if m["status"] == status), key=lambda m: (m["seconds"], m["id"]))
            chosen += quick[:1]
    return chosen


@pytest.mark.timeout(240)
def test_a_fixed_sample_is_classified_as_in_the_committed_report():
    """Explained stays explained (the teaching got no worse); an unexplained mutant may
    have become explained (then regenerate the report: its floor can rise)."""
    from checks.mutation.runner import run_mutants

    data = committed_report()
    sample = fixed_sample(data)
    by_id = {m.id: m for w in generate.GPU_WORKSHOPS for m in generate.all_mutants(w)}
    results = run_mutants([by_id[m["id"]] for m in sample], processes_n=2, limit=60)
    worse = []
    for m in sample:
        now = results[m["id"]]["status"]
        if now != m["status"] and not (m["status"] == classify.UNEXPLAINED and now == classify.EXPLAINED):
            worse.append(f"{m['id']}: {m['status']} in the report, {now} now")
    assert not worse, "\n".join(worse)
