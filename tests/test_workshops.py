"""Every workshop in the catalog, one suite: the reference answer passes every check
that can run here, the starter is TODO, every kept wrong answer is rejected by the
checks its meta.json names (and the rejection teaches), every GPU workshop checks that
the learner's own kernel did the work.  Nothing here lists workshops by hand: a new
workshop folder is tested by being there.  GPU kernels run in Triton's interpreter
(tests/conftest.py sets TRITON_INTERPRET)."""

import ast
import functools

import pytest
import torch

from checks.judging.engine import cases_for, run_checks
from workshops import catalog

WORKSHOPS = catalog.workshops()
IDS = [w.id for w in WORKSHOPS]
GPU = [w for w in WORKSHOPS if w.gpu]
WRONG = [(w, name, ids) for w in WORKSHOPS for name, ids in w.wrong_answers]


def _interpreter_cases(w) -> set:
    return {c.id for c in cases_for(w.id) if c.interpreter}


@functools.lru_cache(maxsize=None)
def _records(workshop_id: str, which: str):
    w = catalog.get(workshop_id)
    return tuple(run_checks(w.id, w.folder / f"{which}.py", interpret=w.gpu))


@pytest.mark.parametrize("w", WORKSHOPS, ids=IDS)
def test_reference_answer_passes_every_check_that_can_run_here(w):
    records = _records(w.id, "solution")
    bad = [
        (r.id, r.status, r.message[:300])
        for r in records
        if r.status != "pass" and not (r.status == "skipped" and r.id not in _interpreter_cases(w))
    ]
    assert not bad, bad
    assert {r.id for r in records} == {c.id for c in cases_for(w.id)}


@pytest.mark.parametrize("w", WORKSHOPS, ids=IDS)
def test_starter_is_todo_and_nothing_in_it_is_wrong(w):
    records = _records(w.id, "starter")
    statuses = {r.status for r in records}
    assert "todo" in statuses
    assert statuses <= {"todo", "pass", "skipped"}, [
        (r.id, r.status, r.message) for r in records if r.status not in ("todo", "pass", "skipped")
    ]
    # what passes on a starter needs no kernel: it rejects bad input
    for r in records:
        if r.status == "pass":
            assert "reject" in r.id or "reject" in r.label.lower() or "raise" in r.label, r.id


@pytest.mark.parametrize("w", WORKSHOPS, ids=IDS)
def test_kept_wrong_answers_are_listed_with_the_checks_that_catch_them(w):
    files = {p.name for p in w.wrong_versions()}
    listed = {name for name, _ in w.wrong_answers}
    assert files == listed, f"{w.id}: wrong/ holds {sorted(files)}, meta.json lists {sorted(listed)}"
    known = {c.id for c in cases_for(w.id)}
    for name, ids in w.wrong_answers:
        assert set(ids) <= known, (w.id, name, set(ids) - known)
        assert (w.folder / "wrong" / name).read_text().startswith('"""WRONG on purpose'), name
    assert len(files) >= 2, w.id


@pytest.mark.parametrize("w,name,ids", WRONG, ids=[f"{w.id}/{n[:-3]}" for w, n, _ in WRONG])
def test_kept_wrong_answer_is_rejected_by_its_checks_with_a_report_that_teaches(w, name, ids):
    runnable, interpret = [i for i in ids if i in _interpreter_cases(w)], w.gpu
    if not runnable and torch.cuda.is_available():  # caught only on a GPU, and here is one
        runnable, interpret = list(ids), False
    if not runnable:
        pytest.skip(
            f"{name} is caught only on a GPU ({', '.join(ids)}); the H200 self-check in results/ records it"
        )
    records = run_checks(w.id, w.folder / "wrong" / name, interpret=interpret, only=runnable)
    for r in records:
        assert r.status == "fail", (r.id, r.status, r.message[:300])
        assert len(r.message) >= 20
        if "mismatched" in r.details:  # a numeric failure carries its facts
            d = r.details
            assert d["mismatched"] > 0 and d["worst_index"] is not None and "max_abs_error" in d
            assert "wrong" in r.message


@pytest.mark.parametrize("w", WORKSHOPS, ids=IDS)
def test_every_check_has_a_reason_and_a_lesson_section_that_exists(w):
    assert w.lesson, f"{w.id}: lesson.md is missing or empty"
    headings = {line[3:].strip() for line in w.lesson.splitlines() if line.startswith("## ")}
    for c in cases_for(w.id):
        assert c.why and len(c.why) >= 20, (w.id, c.id)
        assert c.section in headings, (w.id, c.id, c.section)


@pytest.mark.parametrize("w", GPU, ids=[w.id for w in GPU])
def test_gpu_workshop_checks_its_own_kernel_early_and_at_scale(w):
    order = [c.id for c in cases_for(w.id)]
    assert order[0] == "own-kernel", order[:3]  # is it your kernel at all? first
    assert any(i.startswith("many-") or i == "widest-length" for i in order)
    assert any("beyond-fp16" in i for i in order)


@pytest.mark.parametrize("w", GPU, ids=[w.id for w in GPU])
def test_own_kernel_check_is_the_shared_one(w):
    from checks.judging.failure_kinds import OWN_KERNEL_WHY, SECTION_OWN

    own = cases_for(w.id)[0]
    assert (own.id, own.why, own.section, own.cost, own.interpreter) == (
        "own-kernel",
        OWN_KERNEL_WHY,
        SECTION_OWN,
        0,
        True,
    )
    assert "@triton.jit" in own.label


def test_own_kernel_check_reports_whose_kernel_ran_and_passes_on_other_failures():
    from checks.judging.case import CheckFailed
    from checks.judging.cases.guards import own_kernel_check

    def wrong_values(mod, ctx):
        raise CheckFailed("x: 3 of 10 elements wrong", {"mismatched": 3, "total": 10})

    def not_yours(mod, ctx):
        raise CheckFailed("not your kernel", {"kind": "not-own-kernel"})

    for body in (wrong_values, not_yours):
        fn = own_kernel_check("the output is written by a @triton.jit kernel of your file")(body)
        assert fn.case.id == "own-kernel" and fn.case.cost == 0 and fn.__name__ == body.__name__
    passed = own_kernel_check("label")(wrong_values)(None, None)
    assert "your kernel computed the output" in passed and "3 of 10" in passed
    with pytest.raises(CheckFailed, match="not your kernel"):
        own_kernel_check("label")(not_yours)(None, None)


@pytest.mark.parametrize("w", GPU, ids=[w.id for w in GPU])
def test_starter_defines_no_kernel(w):
    tree = ast.parse(w.starter.read_text())
    decorated = [
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef)
        for d in n.decorator_list
        if "jit" in ast.unparse(d)
    ]
    assert decorated == []


@pytest.mark.parametrize("w", WORKSHOPS, ids=IDS)
def test_authors_check_finds_nothing_wrong_with_the_folder(w):
    from checks.authoring import folder_problems

    assert folder_problems(w) == []


def test_authors_check_names_each_problem_of_a_broken_folder(tmp_path):
    import dataclasses
    import shutil

    from checks.authoring import folder_problems

    w = catalog.get("strided_softmax")
    broken = tmp_path / w.id
    shutil.copytree(w.folder, broken)
    (broken / "explanation.md").unlink()
    (broken / "hints.md").write_text("")
    (broken / "wrong" / "stray.py").write_text('"""WRONG on purpose: unlisted."""\n')
    (broken / "right" / "undocumented.py").write_text("def softmax(x):\n    return x\n")
    (broken / "lesson.md").write_text(
        (broken / "lesson.md").read_text().replace("## Your kernel, not PyTorch", "## Renamed")
    )
    listed = w.wrong_answers + (("gone.py", ("basic",)), ("capped.py", ("no-such-check",)))
    problems = "\n".join(folder_problems(dataclasses.replace(w, folder=broken, wrong_answers=listed)))
    for expected in (
        "explanation.md is missing",
        "hints.md is empty",
        "wrong/stray.py is not in",
        "lists wrong/gone.py, which does not exist",
        "'no-such-check'",
        "'Your kernel, not PyTorch', which lesson.md does not have",
        "right/undocumented.py must open with a docstring on its design",
    ):
        assert expected in problems, (expected, problems)
