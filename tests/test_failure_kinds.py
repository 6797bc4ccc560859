"""A failure explains its own kind, whichever check saw it: another computation's values
(not the learner's kernel), an access out of bounds; and own-kernel judges whose kernel
ran, not whether its values are right (the numeric checks say that)."""

from pathlib import Path

from checks.judging import failure_kinds
from checks.judging.engine import run_checks

REPO = Path(__file__).resolve().parents[1]
I2 = REPO / "workshops" / "softmax_backward"
SOLUTION = (I2 / "solution.py").read_text()


def records(path: Path, only: list) -> dict:
    return {r.id: r for r in run_checks("softmax_backward", path, interpret=True, only=only)}


def test_a_pytorch_cast_caught_in_a_numeric_check_explains_itself_not_the_check():
    recs = records(I2 / "wrong" / "float_cast_before_launch.py", ["own-kernel", "inputs-unchanged"])
    for rec in recs.values():
        assert rec.status == "fail" and "aten::_to_copy" in rec.message, rec
        assert rec.why == failure_kinds.NOT_OWN_WHY and rec.section == failure_kinds.SECTION_OWN


def test_own_kernel_passes_a_learners_kernel_with_wrong_values():
    rec = records(I2 / "wrong" / "reduce_g_alone.py", ["own-kernel"])["own-kernel"]
    assert rec.status == "pass" and "its values are wrong" in rec.message, rec


def test_an_out_of_bounds_store_gets_the_out_of_bounds_why(tmp_path):
    # the learner's unmasked store: every tail lane writes past the row
    src = SOLUTION
    masked = [line for line in src.splitlines() if "tl.store(" in line and "mask=" in line]
    assert masked, "the reference answer stores with a mask"
    line = masked[0]
    f = tmp_path / "unmasked_store.py"
    f.write_text(src.replace(line, line.replace(", mask=mask", "")))
    rec = records(f, ["ragged-tails"])["ragged-tails"]
    assert rec.status == "fail" and rec.details.get("verdict") == "out-of-bounds", rec
    assert rec.why == failure_kinds.OUT_OF_BOUNDS_WHY
    # the line of the learner's kernel that stored out of bounds
    store_line = 1 + f.read_text().splitlines().index(line.replace(", mask=mask", ""))
    assert rec.details["line"] == store_line and f"unmasked_store.py, line {store_line}" in rec.message


def test_an_out_of_bounds_access_met_by_own_kernel_points_to_the_lessons_addresses(tmp_path):
    # own-kernel's own section is about PyTorch doing the work; an access past the end is not
    src = SOLUTION
    line = next(line for line in src.splitlines() if "tl.store(" in line and "mask=" in line)
    f = tmp_path / "unmasked_store.py"
    f.write_text(src.replace(line, line.replace(", mask=mask", "")))
    rec = records(f, ["own-kernel"])["own-kernel"]
    assert rec.status == "fail" and rec.details.get("verdict") == "out-of-bounds", rec
    assert rec.section == "Tile ownership and addresses"


def test_the_addresses_section_is_found_by_its_heading_in_every_gpu_lesson():
    from workshops import catalog

    for w in catalog.workshops():
        if w.device == "GPU":
            found = failure_kinds.addresses_section(catalog.lesson_headings(w.id))
            assert found is not None and found != failure_kinds.SECTION_OWN, w.id
    assert failure_kinds.addresses_section(["The idea", "Run it"]) is None
    # advice to mask an access goes to the section on masks, where the lesson has one
    headings = ["Who owns which tile", "The K loop and its masks", "Run it"]
    assert failure_kinds.addresses_section(headings) == "Who owns which tile"
    assert failure_kinds.addresses_section(headings, mask_first=True) == "The K loop and its masks"
    assert failure_kinds.addresses_section(["Who owns which tile"], mask_first=True) == "Who owns which tile"
    assert catalog.lesson_headings("no-such-workshop") == []
