"""A failure's message points at the fault: the worst element with its own error, an
access out of bounds or a Triton error said as what it is (not as own-kernel's charge),
relations in the tile sizes the kernel was launched with, a named mistake without
generic advice that contradicts it, and an fp16 accumulator told apart from an early cast.
The learners' mistakes are the fixtures: the reference answer with one edit."""

from pathlib import Path

import pytest

from checks.judging import failure_kinds
from checks.judging.engine import cases_for, run_checks
from workshops import catalog

torch = pytest.importorskip("torch")

GEMM = catalog.get("fused_gemm")
SOLUTION = (GEMM.folder / "solution.py").read_text()


def edited(tmp_path: Path, name: str, *edits: tuple) -> Path:
    source = SOLUTION
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    path = tmp_path / name
    path.write_text(source)
    return path


def gemm(path: Path, only: list) -> dict:
    return {r.id: r for r in run_checks("fused_gemm", path, interpret=True, only=only)}


UNMASKED_LOADS = (
    (
        "a = tl.load(a_ptrs, mask=row_ok[:, None] & (offs_k[None, :] < k_left), other=0.0)",
        "a = tl.load(a_ptrs)",
    ),
    (
        "b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & col_ok[None, :], other=0.0)",
        "b = tl.load(b_ptrs)",
    ),
)
FP16_ACCUMULATOR = (
    (
        "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
        "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)",
    ),
    ("acc = tl.dot(a, b, acc)", "acc = tl.dot(a, b, acc, out_dtype=tl.float16)"),
)


def test_the_worst_element_is_said_with_its_own_error():
    # A larger error elsewhere within the relative tolerance (400 +/- 3.8) is not the worst
    # element's: index, got, expected and error come from one element.
    from checks.judging.tensors import describe, mismatch_report

    expected = torch.full((32, 32), 0.5, dtype=torch.float64)
    expected[3, 4] = 400.0
    got = expected.half()
    got[3, 4] = 403.75  # within rtol 1e-2 of 400
    got[29, 21] = 0.75  # wrong by 0.25
    facts = mismatch_report(got, expected, atol=1e-3, rtol=1e-2)
    assert facts["mismatched"] == 1 and facts["worst_index"] == [29, 21]
    assert facts["max_abs_error"] == pytest.approx(0.25)
    assert "worst at [29, 21]: got 0.75, expected 0.5 (abs err 0.25, " in describe(facts)


def test_an_out_of_bounds_load_is_its_own_kind_of_failure_not_own_kernels(tmp_path):
    path = edited(tmp_path, "unmasked_loads.py", *UNMASKED_LOADS)
    recs = gemm(path, ["own-kernel", "epilogue-one-rounding", "ragged-tails"])
    labels = {c.id: c.label for c in cases_for("fused_gemm")}
    own = recs["own-kernel"]
    assert own.status == "fail" and own.details["verdict"] == failure_kinds.OUT_OF_BOUNDS, own
    assert own.message.startswith("out-of-bounds load in kernel _matmul_bias_relu_kernel")
    # said as an access out of bounds: its own label, why and section, none of own-kernel's
    assert own.label == failure_kinds.OUT_OF_BOUNDS_LABEL != labels["own-kernel"]
    assert own.why == failure_kinds.OUT_OF_BOUNDS_WHY != failure_kinds.OWN_KERNEL_WHY
    # an access told to take its mask points to the lesson's section on masks
    assert "mask" in own.message and own.section == "The K loop and its masks"
    # the section follows the fault in any check, unless the check's own is about masks
    epilogue, tails = recs["epilogue-one-rounding"], recs["ragged-tails"]
    assert epilogue.details["verdict"] == tails.details["verdict"] == failure_kinds.OUT_OF_BOUNDS
    assert (epilogue.label, epilogue.section) == (labels["epilogue-one-rounding"], "The K loop and its masks")
    assert tails.section == "The K loop and its masks"


def test_a_triton_error_is_not_explained_by_the_check_it_happened_in(tmp_path):
    path = edited(
        tmp_path, "dot_dtypes.py", ("acc = tl.dot(a, b, acc)", "acc = tl.dot(a, b.to(tl.float32), acc)")
    )
    rec = gemm(path, ["own-kernel"])["own-kernel"]
    assert rec.status == "error" and "Both operands must be same dtype" in rec.message, rec
    assert "tl.dot multiplies two tiles of one dtype" in rec.message
    assert (rec.why, rec.section) == (failure_kinds.ERROR_WHY, "")


def test_relations_speak_of_the_tile_sizes_the_kernel_was_launched_with(tmp_path, monkeypatch):
    # No mistake named (as when the first failure rules it out): the relation of long-k's
    # one wrong element in the last row once said "with a tile of 4", GROUP_M's value.
    from checks.judging import mistakes

    monkeypatch.setattr(mistakes, "diagnose", lambda *args, **kwargs: None)
    path = edited(tmp_path, "fp16_accumulator.py", *FP16_ACCUMULATOR)
    rec = gemm(path, ["long-k"])["long-k"]
    assert rec.status == "fail" and "mistake" not in rec.details, rec
    launched = rec.details["launches"][0]["tiles"]
    assert launched == {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}  # not GROUP_M, M, N or K
    assert "tile of 4" not in rec.message
    relation = rec.details.get("relation") or {}
    assert relation.get("evidence", {}).get("tile") in (None, *launched.values())


def test_a_named_mistake_is_not_followed_by_advice_that_contradicts_it():
    path = GEMM.folder / "wrong" / "fixed_group_size.py"
    recs = gemm(path, ["worked-tile-map", "k-zero", "partial-group"])
    for check_id in ("k-zero", "partial-group"):
        rec = recs[check_id]
        assert rec.details["mistake"]["id"] == "fixed-group-size", rec
        assert rec.details["verdict"] == failure_kinds.UNWRITTEN
        assert "Let the store's mask through" not in rec.message, rec.message
        assert "address the output with its own strides" not in rec.message.lower(), rec.message
        assert "elements that no program of your kernels stored" in rec.message  # the facts stay


def test_an_fp16_accumulator_is_told_apart_from_a_cast_before_the_epilogue(tmp_path):
    accumulator = edited(tmp_path, "fp16_accumulator.py", *FP16_ACCUMULATOR)
    recs = gemm(accumulator, ["epilogue-one-rounding", "long-k"])
    for rec in recs.values():
        assert rec.details["mistake"]["id"] == "fp16-accumulator", rec
    cast = GEMM.folder / "wrong" / "cast_before_epilogue.py"
    rec = gemm(cast, ["epilogue-one-rounding"])["epilogue-one-rounding"]
    assert rec.details["mistake"]["id"] == "cast-before-epilogue", rec
    assert gemm(GEMM.solution, ["epilogue-one-rounding"])["epilogue-one-rounding"].status == "pass"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_the_long_k_epilogue_call_is_exact_with_a_late_cast_and_not_with_a_16_bit_accumulator(dtype):
    from checks.judging.cases import fused_gemm as cases

    ctx = type("Ctx", (), {"device": "cpu"})()
    a, b, bias = cases._exact_epilogue_operands(ctx, dtype, K=256)
    acc = a.double() @ b.double()
    right = torch.relu(acc + bias.double())
    assert torch.equal(right.to(dtype).double(), right)  # representable
    assert torch.equal(torch.relu(acc.to(dtype) + bias).double(), right)  # a cast after the loop: right
    for block_k in (16, 32, 64, 128):  # a 16-bit accumulator, one rounding per K step: wrong
        acc16 = torch.zeros_like(acc).to(dtype)
        for k in range(0, 256, block_k):
            acc16 = (acc16.double() + a[:, k : k + block_k].double() @ b[k : k + block_k].double()).to(dtype)
        assert (torch.relu(acc16.double() + bias.double()) != right).float().mean() > 0.5, block_k
