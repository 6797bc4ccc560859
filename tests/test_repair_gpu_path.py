"""The repair search's path on a GPU machine: changes are screened in Triton's interpreter
and one that passes there is verified compiled, its checks split over warm GPU workers.
Here (no GPU) the verifying pool is made to interpret too, so the path itself runs: the
pools asked for, the slices, and the verdict built from them."""

from pathlib import Path

from checks.judging.engine import cases_for
from checks.repair import program, search, warm
from checks.repair.schedule import slices as _slices
from checks.repair.search import _blind_to, find_repair

REPO = Path(__file__).resolve().parent.parent
STORE = "tl.store(out_addrs, probs.to(out_ptr.dtype.element_ty), mask=in_row)"


def test_slices_balance_the_expected_seconds_and_keep_each_check_once_in_order():
    checks = ["a", "b", "c", "d", "e"]
    seconds = {"a": 4.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0}
    got = _slices(checks, seconds, 2)
    assert sorted(c for s in got for c in s) == checks
    assert ["a"] in got and ["b", "c", "d", "e"] in got  # 4 s beside 4 x 1 s
    assert all(s == sorted(s) for s in got)
    assert _slices(checks, seconds, 9) == [[c] for c in checks]  # never more slices than checks
    assert _slices(["a"], {}, 4) == [["a"]]


def test_a_run_blind_to_every_failing_check_it_reached_is_told():
    assert _blind_to([["gpu-only", "skipped", ""], ["basic", "pass", ""]], ["gpu-only"])
    assert not _blind_to([["gpu-only", "skipped", ""], ["ragged", "fail", "x"]], ["gpu-only", "ragged"])
    assert not _blind_to([["basic", "fail", "x"]], ["ragged"])  # never reached: nothing said
    assert not _blind_to([], ["ragged"])


def test_screened_in_the_interpreter_then_verified_in_slices(tmp_path, monkeypatch):
    reference = (REPO / "workshops/strided_softmax/solution.py").read_text(encoding="utf-8")
    assert STORE in reference
    path = tmp_path / "strided_softmax.py"
    mistaken = reference.replace(STORE, "tl.store(out_addrs, probs.to(out_ptr.dtype.element_ty))")
    path.write_text(mistaken)
    asked: list = []  # (interpreted as asked, the file it ran, its checks, compile too)

    class Recording(warm.Pool):
        def __init__(self, interpret, *args, **kw):
            self.kind = interpret
            super().__init__(True, *args, **kw)  # no GPU here: the "compiled" pool interprets

        def ask(self, job, limit):
            text = Path(job["file"]).read_text(encoding="utf-8")
            asked.append((self.kind, text, list(job["checks"]), job["gpu_compile"]))
            return super().ask(job, limit)

    monkeypatch.setattr(search, "Pool", Recording)
    repair = find_repair("strided_softmax", path, interpret=False, budget=240, workers=2)
    assert repair["status"] == "found" and repair["line"] == 54, repair
    assert "mask=in_row" in repair["after"]
    fixed = mistaken.replace(STORE.replace(", mask=in_row", ""), STORE)
    # a change of a kernel is screened interpreted; one of the wrapper alone compiled
    kernel = program.kernel_lines(mistaken)
    others = [(kind, text) for kind, text, _, _ in asked if text not in (mistaken, fixed)]
    assert others
    everything = sorted(c.id for c in cases_for("strided_softmax"))
    for interpreted, text in others:
        changed = _changed_lines(mistaken, text)
        assert changed
        if not changed & kernel:
            assert not interpreted, changed
        elif not interpreted:  # a kernel change compiled only to verify one that passed interpreted
            compiled = [c for kind, t, checks, _ in asked if t == text and not kind for c in checks]
            assert sorted(compiled) == everything, changed
            assert [len(checks) for kind, t, checks, _ in asked if t == text and kind] == [1]
    # without the app's records, the GPU gives the verdict first (the whole suite, in two
    # slices: two workers); the found change runs its first failing check interpreted, then
    # every check compiled, in two slices, each check once
    baseline = [checks for kind, text, checks, _ in asked if text == mistaken]
    assert all(kind is False for kind, text, _, _ in asked if text == mistaken)
    assert len(baseline) == 2 and sorted(c for s in baseline for c in s) == everything
    screened = [checks for kind, text, checks, _ in asked if text == fixed and kind is True]
    verified = [checks for kind, text, checks, _ in asked if text == fixed and kind is False]
    assert screened and len(verified) == 2, asked
    assert sorted(c for s in verified for c in s) == everything
    assert not any(compile_too for _, _, _, compile_too in asked)  # the GPU runs compile for real
    assert "verified: with this change all" in repair["note"]


def _changed_lines(before: str, after: str) -> set:
    """The line numbers of ``before`` that ``after`` replaces or deletes (an insertion counts
    the lines on either side of it)."""
    import difflib

    out: set = set()
    for op, i1, i2, _, _ in difflib.SequenceMatcher(
        None, before.splitlines(), after.splitlines()
    ).get_opcodes():
        if op != "equal":
            out.update(range(i1 + 1, i2 + 1) if i2 > i1 else range(max(i1, 1), i1 + 2))
    return out


def test_kernel_lines_run_from_the_decorator_to_the_last_line():
    source = "import triton\n\n\n@triton.jit\ndef k(x):\n    pass\n\n\ndef wrapper(x):\n    return x\n"
    assert program.kernel_lines(source) == {4, 5, 6}


def test_a_file_the_interpreter_passes_is_screened_on_the_gpu():
    """The GPU's verdict failed 'bf16-range'; the interpreter's run of the same file passes
    it (or skips it): a change that passes the interpreter says nothing of that fault."""
    from checks.repair.search import interpreter_sees_the_fault

    failing = ["bf16-range"]
    assert interpreter_sees_the_fault(
        {"statuses": [["basic", "pass", ""], ["bf16-range", "fail", "x"]]}, failing
    )
    assert not interpreter_sees_the_fault({"statuses": [["bf16-range", "pass", ""]]}, failing)
    assert not interpreter_sees_the_fault({"statuses": [["bf16-range", "skipped", "needs a GPU"]]}, failing)
    assert not interpreter_sees_the_fault({}, failing)


def test_with_the_verdicts_records_the_file_as_written_runs_compiled_and_its_failing_checks_interpreted(
    tmp_path, monkeypatch
):
    """The app hands the search its verdict: on a GPU the file's kernels are in Triton's cache,
    so the suite's run of the file as written (which kernels each check launches) goes to the
    compiled workers, and the interpreter's workers run only its failing checks (whether the
    interpreter sees the fault) before they take the candidates."""
    from checks.judging.engine import run_checks

    reference = (REPO / "workshops/strided_softmax/solution.py").read_text(encoding="utf-8")
    path = tmp_path / "strided_softmax.py"
    mistaken = reference.replace(STORE, "tl.store(out_addrs, probs.to(out_ptr.dtype.element_ty))")
    path.write_text(mistaken)
    records = [
        {"id": r.id, "status": str(r.status), "message": r.message, "seconds": r.seconds}
        for r in run_checks("strided_softmax", path, interpret=True)
    ]
    failing = sorted(r["id"] for r in records if r["status"] in ("fail", "error"))
    assert failing
    asked: list = []

    class Recording(warm.Pool):
        def __init__(self, interpret, *args, **kw):
            self.kind = interpret
            super().__init__(True, *args, **kw)

        def ask(self, job, limit):
            text = Path(job["file"]).read_text(encoding="utf-8")
            asked.append((self.kind, text, list(job["checks"])))
            return super().ask(job, limit)

    monkeypatch.setattr(search, "Pool", Recording)
    repair = find_repair("strided_softmax", path, interpret=False, budget=240, workers=2, records=records)
    assert repair["status"] == "found" and "mask=in_row" in repair["after"], repair
    as_written = [(kind, checks) for kind, text, checks in asked if text == mistaken]
    compiled = [c for kind, checks in as_written if not kind for c in checks]
    assert sorted(compiled) == sorted(c.id for c in cases_for("strided_softmax"))
    assert [sorted(checks) for kind, checks in as_written if kind] == [failing]
    assert repair["gpu_ready_seconds"] is not None and repair["baseline_seconds"] is not None
