"""Triton's wordless assertions are said in words (checks.judging.records.TRITON_ASSERTS):
an fp16 accumulator handed to ``tl.dot(a, b, acc)`` stops the interpreter and the compiler
with a bare AssertionError()."""

from pathlib import Path

from checks.judging.engine import run_checks

REPO = Path(__file__).resolve().parent.parent
ACC = "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)"


def test_an_fp16_accumulator_of_tl_dot_is_named_in_the_interpreter_and_by_the_compile_check(tmp_path):
    source = (REPO / "workshops" / "fused_gemm" / "solution.py").read_text(encoding="utf-8")
    assert source.count(ACC) == 1 and "tl.dot(a, b, acc)" in source
    path = tmp_path / "acc16.py"
    path.write_text(source.replace(ACC, ACC.replace("float32", "float16")), encoding="utf-8")
    records = {r.id: r for r in run_checks("fused_gemm", path, interpret=True, only=["basic-fp16", "k-zero"])}
    assert records["basic-fp16"].status == "error"
    assert "refused its accumulator" in records["basic-fp16"].message, records["basic-fp16"].message
    assert "AssertionError()" in records["basic-fp16"].message  # Triton's own words stay, after ours
    # K = 0 never reaches tl.dot in the interpreter; the sm_90 compile of the variant does
    assert records["k-zero"].status == "fail" and "does not compile for a GPU" in records["k-zero"].message
    assert "refused its accumulator" in records["k-zero"].message, records["k-zero"].message
    assert records["k-zero"].section == ""  # not the check's own section: the compiler's rule is none of it
