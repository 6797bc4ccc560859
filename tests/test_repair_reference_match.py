"""The reference match: where no edit of the learner's file makes every check pass, the
change of a reference answer that gives the learner's result on the failing checks is
named (with its line of the reference), and nothing is named where no change gives it.

Strided softmax in Triton's interpreter: its failing checks run in a few hundredths of a
second, so all 247 mutants of its reference answers run in about 5 s on two cores."""

import ast
import json
from pathlib import Path

import pytest

from checks.repair import error_model, reference_match
from checks.repair.reference_match import compare, reproduce, signature
from checks.repair.variants import valid_variants

REPO = Path(__file__).resolve().parent.parent
W = "strided_softmax"
# one factor of the reference dropped: a mistake the error model has no edit for
NORMALIZE = "probs = numerators * (1.0 / denominator)"
NO_DIVISION = (NORMALIZE, "probs = numerators")
# half of every probability: no mutant of the reference gives that
HALVED = (NORMALIZE, "probs = numerators * (0.5 / denominator)")


def _learner(tmp_path: Path, change: tuple) -> Path:
    source = (REPO / "workshops" / W / "solution.py").read_text(encoding="utf-8")
    assert source.count(change[0]) == 1
    path = tmp_path / "exercise.py"
    path.write_text(source.replace(*change), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """Two warm interpreted workers for the whole module: each starts in about 7 s."""
    p = reference_match.Pool(True, tmp_path_factory.mktemp("pool"), [], 2)
    yield p
    p.stop()


def test_the_digest_says_which_elements_are_wrong():
    import torch

    from checks.judging.tensors import mismatch_report

    expected = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    one, other = expected.clone(), expected.clone()
    one[1, 2] += 1.0
    other[1, 2] += 1.0 + 1e-9  # the same wrong element, the same value within tolerance
    a, b = (
        mismatch_report(one, expected, atol=1e-5, rtol=1e-4),
        mismatch_report(other, expected, atol=1e-5, rtol=1e-4),
    )
    assert a["wrong_digest"] == b["wrong_digest"] and a["wrong_sum"] == pytest.approx(7.0)
    assert compare(signature("fail", "x", a), signature("fail", "y", b)) == "output"
    moved = expected.clone()
    moved[2, 1] += 1.0  # as many wrong elements, elsewhere
    c = mismatch_report(moved, expected, atol=1e-5, rtol=1e-4)
    assert c["wrong_digest"] != a["wrong_digest"]
    assert compare(signature("fail", "x", a), signature("fail", "x", c)) is None
    larger = expected.clone()
    larger[1, 2] += 2.0  # the same element, another value
    d = mismatch_report(larger, expected, atol=1e-5, rtol=1e-4)
    assert compare(signature("fail", "x", a), signature("fail", "x", d)) is None


def test_without_an_output_the_verdict_line_is_compared_without_the_files_own_names():
    mine = signature(
        "fail",
        "out-of-bounds load in kernel my_kernel at line 12 (44 lanes)\nYour launches: ...",
        {},
        frozenset({"my_kernel"}),
    )
    same = signature(
        "fail",
        "out-of-bounds load in kernel ref_kernel at line 40 (44 lanes)\nother words",
        {},
        frozenset({"ref_kernel"}),
    )
    fewer = signature(
        "fail", "out-of-bounds load in kernel ref_kernel at line 40 (9 lanes)", {}, frozenset({"ref_kernel"})
    )
    assert compare(mine, same) == "message"
    assert compare(mine, fewer) == "pattern"  # numbers left out: the weakest match
    assert compare(mine, signature("error", "out-of-bounds load in kernel my_kernel", {})) is None


def test_a_mutant_of_the_reference_is_reproduced_with_its_line(tmp_path, pool):
    """The learner's file drops the division by the denominator: no edit of the error model
    gives the reference back, and the mutant that drops that factor is named."""
    path = _learner(tmp_path, NO_DIVISION)
    source = path.read_text(encoding="utf-8")
    target = ast.dump(ast.parse((REPO / "workshops" / W / "solution.py").read_text(encoding="utf-8")))
    undone = [
        t
        for _, t in valid_variants(source, error_model.candidates(source))
        if ast.dump(ast.parse(t)) == target
    ]
    assert not undone, "the error model covers this mistake: pick another"

    r = reproduce(W, path, interpret=True, budget=60, workers=2, ask=pool.ask)
    assert r["status"] == "reproduced", r
    assert r["kind"] == "reference-mutant" and r["match"] == "output" and r["reference"] == "solution.py"
    assert r["line"] == 49
    assert (
        "is what the reference gives with `numerators` where it has `numerators * (1.0 / denominator)`"
        in r["says"]
    )
    assert "(line 49 of solution.py)" in r["says"]
    assert NORMALIZE in r["before"] and "probs = (numerators)" in r["after"]
    assert "not a verified repair" in r["note"]
    assert json.loads(json.dumps(r)) == r


def test_a_file_that_fails_unlike_every_mutant_is_not_reproduced(tmp_path, pool):
    r = reproduce(W, _learner(tmp_path, HALVED), interpret=True, budget=60, workers=2, ask=pool.ask)
    assert r["status"] == "none", r
    assert "says" not in r
    assert r["tried"] > 200 and f"{r['tried']} of {r['tried']} mutants" in r["note"]  # every one ran


def test_the_starter_fails_no_check_so_nothing_is_compared(pool):
    r = reproduce(
        W, REPO / "workshops" / W / "starter.py", interpret=True, budget=60, workers=2, ask=pool.ask
    )
    assert r["status"] == "none" and r["tried"] == 0 and "no check failed" in r["note"]


def test_a_change_that_also_fails_a_check_the_file_passes_is_not_its_result():
    """The CPU workshop: merging two empty states gives NaN.  Flipping the reference's
    ``m == -math.inf`` gives that NaN too, but it breaks every other merge, which the
    learner's file gets right: not the same result."""
    path = REPO / "workshops" / "online_normalizer" / "wrong" / "empty_nan.py"
    r = reproduce("online_normalizer", path, interpret=False, budget=60, workers=1)
    assert r["status"] == "none", r
    claimed = reproduce("online_normalizer", path, interpret=False, budget=60, workers=1, passing=[])
    assert claimed["status"] == "reproduced" and claimed["match"] == "message"
    assert "`m != -math.inf` where it has `m == -math.inf`" in claimed["says"]


def test_cancelled_stops_it(tmp_path, pool):
    def never(job, limit):
        raise AssertionError("a job ran after the search was cancelled")

    r = reproduce(W, _learner(tmp_path, HALVED), interpret=True, budget=60, ask=never, cancelled=lambda: True)
    assert r["status"] == "cancelled" and r["tried"] == 0

    seen: list = []
    r = reproduce(
        W,
        _learner(tmp_path, HALVED),
        interpret=True,
        budget=60,
        workers=2,
        ask=pool.ask,
        on_progress=seen.append,
        cancelled=lambda: len(seen) >= 3,
    )
    assert r["status"] == "cancelled", r
    assert 3 <= r["tried"] < 20 and r["tried"] < seen[-1]["candidates"]


def test_the_search_says_the_reproduction_when_no_edit_is_found(tmp_path, monkeypatch, capsys):
    """find_repair with an error model that proposes nothing: its edit search ends with
    "none" at once, and the time left goes to the reference match."""
    from checks.repair import search
    from checks.repair.__main__ import print_repair

    monkeypatch.setattr(search.error_model, "candidates", lambda source: [])
    monkeypatch.setattr(search, "everywhere", lambda source, singles: [])
    r = search.find_repair(W, _learner(tmp_path, NO_DIVISION), interpret=True, budget=120, workers=2)
    assert r["status"] == "reproduced", r
    assert r["kind"] == "reference-mutant" and r["line"] == 49
    assert r["note"].startswith("no change of one or two edits") and "not a verified repair" in r["note"]
    assert json.loads(json.dumps(r))["says"] == r["says"]  # what --jsonl writes
    print_repair(r)
    out = capsys.readouterr().out
    assert "a change of the reference gives your result" in out and r["says"] in out
    assert "probs = (numerators)" not in out  # the changed line is a field, for a key to reveal
