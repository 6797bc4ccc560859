"""Relations and launches on failing records, end to end: small wrong kernels written here,
run through the engine in Triton's interpreter."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from checks.judging.engine import run_checks

HEADER = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _rows(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_C: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_C)
        mask = cols < n_cols
        x = tl.load(x_ptr + LOAD_ROW + cols * stride_col, mask=mask, other=-float("inf"))
        x = x.to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        out = RESULT
        tl.store(out_ptr + row * n_cols + cols, out.to(out_ptr.dtype.element_ty), mask=mask)


    def softmax(x, *, num_warps=4):
        if x.dim() != 2:
            raise ValueError("x: expected a 2D tensor")
        if num_warps not in (4, 8):
            raise ValueError("num_warps: expected 4 or 8")
        rows, cols = x.shape
        if not 1 <= cols <= 8192:
            raise ValueError("x: 1 to 8192 columns")
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        if rows:
            _rows[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK_C=triton.next_power_of_2(cols))
        return out
    """
)


def _kernel(tmp_path, result: str, load_row: str = "row * stride_row"):
    path = tmp_path / "softmax_wrong.py"
    path.write_text(HEADER.replace("RESULT", result).replace("LOAD_ROW", load_row))
    return path


def _basic(path):
    (rec,) = run_checks("strided_softmax", path, interpret=True, only=["basic"])
    assert rec.status == "fail", rec.message
    return rec


def test_a_missing_division_is_a_factor_per_row_named_by_its_quantity(tmp_path):
    rec = _basic(_kernel(tmp_path, "e"))
    relation = rec.details["relation"]
    assert relation["id"] == "factor-per-row"
    assert "the row's sum of exp(x - max): the division by that sum is missing" in relation["sentence"]
    assert rec.message.startswith(relation["sentence"])
    assert "mistake" not in rec.details


def test_a_negated_result_is_said_and_the_launches_are_named(tmp_path):
    rec = _basic(_kernel(tmp_path, "-(e / tl.sum(e, axis=0))"))
    assert rec.details["relation"]["id"] == "negated"
    assert "Your launches: _rows on grid (4,) = 4 programs (BLOCK_C=64)" in rec.message
    assert "x (4, 37) float32" in rec.message
    assert rec.details["launches"][0]["tiles"] == {"BLOCK_C": 64}


def test_only_row_zero_right_gets_a_relation(tmp_path):
    # a per-row offset bug: every row after the first reads from the wrong place
    rec = _basic(_kernel(tmp_path, "e / tl.sum(e, axis=0)", load_row="row"))
    assert rec.details["relation"]["id"] == "only-first-rows"
    assert rec.details["relation"]["sentence"].startswith("Only row 0 of your result is right")


def test_a_right_kernel_has_no_relation(tmp_path):
    (rec,) = run_checks(
        "strided_softmax", _kernel(tmp_path, "e / tl.sum(e, axis=0)"), interpret=True, only=["basic"]
    )
    assert rec.status == "pass" and "relation" not in rec.details


@pytest.mark.parametrize("workshop_id", ["strided_softmax"])
def test_a_named_mistake_keeps_its_name_and_gets_no_relation(tmp_path, workshop_id):
    # reading with a column stride of 1 is a classic mistake: its oracle names it
    path = tmp_path / "softmax_wrong.py"
    path.write_text(
        HEADER.replace("RESULT", "e / tl.sum(e, axis=0)")
        .replace("LOAD_ROW", "row * stride_row")
        .replace("cols * stride_col", "cols")
    )
    (rec,) = run_checks(workshop_id, path, interpret=True, only=["transpose"])
    assert rec.status == "fail"
    assert rec.details["mistake"]["id"] == "unit-column-stride"
    assert "relation" not in rec.details


def _variant(tmp_path, old: str, new: str):
    path = tmp_path / "softmax_wrong.py"
    text = HEADER.replace("RESULT", "e / tl.sum(e, axis=0)").replace("LOAD_ROW", "row * stride_row")
    assert old in text
    path.write_text(text.replace(old, new))
    return path


def test_interpreter_names_a_short_grid_in_the_gpu_words_then_shows_the_map(tmp_path):
    path = _variant(tmp_path, "_rows[(rows,)]", "_rows[(min(rows, 2),)]")
    rec = _basic(path)
    assert rec.message.startswith(
        "Your launch grid has fewer programs than the rows need, so the last rows are never written."
    )
    assert rec.details["verdict"] == "unwritten" and rec.details["cause"]["id"] == "grid"
    assert rec.details["map"] and "launch triton.cdiv" in rec.why


def test_interpreter_names_the_capped_grid_mistake_from_what_was_written(tmp_path):
    path = _variant(tmp_path, "_rows[(rows,)]", "_rows[(min(rows, 64),)]")
    (rec,) = run_checks("strided_softmax", path, interpret=True, only=["many-rows-transposed"])
    assert rec.status == "fail"
    assert rec.details["mistake"]["id"] == "capped-grid"  # the oracle of the GPU path
    assert rec.message.count("Your launch grid has fewer programs than the rows need") == 1
    assert rec.details["map"]


def test_interpreter_names_a_short_store_mask(tmp_path):
    path = _variant(tmp_path, "mask=mask)", "mask=cols < n_cols - 3)")
    rec = _basic(path)
    assert rec.details["cause"]["id"] == "mask"
    assert rec.message.startswith("Your stores stop before the end of each row")


@pytest.mark.parametrize(
    "body, mistake_id",
    [
        ("8 * M * (N // chunk_size + 1)", "floor-chunk-count"),
        ("8 * M * ((N + chunk_size - 1) // chunk_size)", "no-merged-pair"),
    ],
)
def test_a_scratch_size_is_named_only_after_a_second_shape_tells_the_mistakes_apart(
    tmp_path, body, mistake_id
):
    # 4 x 32769 in chunks of 1024: both mistakes give 1056; N = 32768 tells them apart
    path = tmp_path / "split_wrong.py"
    path.write_text(
        "def softmax(x, chunk_size=1024):\n    raise NotImplementedError\n\n\n"
        f"def scratch_bytes(M, N, chunk_size):\n    return {body}\n"
    )
    (rec,) = run_checks("split_softmax", path, interpret=True, only=["worked-scratch"])
    assert rec.status == "fail" and "returned 1056" in rec.message
    assert rec.details["mistake"]["id"] == mistake_id


SOLUTION_BACKWARD = Path(__file__).resolve().parents[1] / "workshops" / "softmax_backward" / "solution.py"


@pytest.mark.parametrize(
    "old, new, mistake_id, relation_id",
    [
        ("dot = tl.sum(y * g, axis=1)", "dot = tl.sum(g, axis=1)", "reduce-g-alone", None),
        ("dx = y * (g - dot[:, None])", "dx = y * (dot[:, None] - g)", None, "negated"),
    ],
)
def test_a_checks_why_speaks_of_its_property_unless_a_mistake_matched(
    tmp_path, old, new, mistake_id, relation_id
):
    text = SOLUTION_BACKWARD.read_text()
    assert old in text
    path = tmp_path / "backward_wrong.py"
    path.write_text(text.replace(old, new))
    (rec,) = run_checks("softmax_backward", path, interpret=True, only=["worked-example"])
    assert rec.status == "fail"
    if mistake_id:
        assert rec.details["mistake"]["id"] == mistake_id
        assert rec.why == rec.details["mistake"]["why"]  # the mistake's own why
    else:
        assert "mistake" not in rec.details and rec.details["relation"]["id"] == relation_id
        assert "reducing g alone" not in rec.why and "sum(g)" not in rec.why  # the check's property
        assert rec.why.startswith("the lesson's worked example by hand")


SOLUTION_SPLIT = Path(__file__).resolve().parents[1] / "workshops" / "split_softmax" / "solution.py"


def test_merge_padding_of_zero_is_sent_to_the_merge_not_to_kernel_1(tmp_path):
    text = SOLUTION_SPLIT.read_text()
    old = 'tile_max = tl.load(partial_ptr + slots, mask=valid, other=float("-inf"))'
    assert old in text
    path = tmp_path / "split_wrong.py"
    path.write_text(text.replace(old, old.replace('float("-inf")', "0.0")))
    (rec,) = run_checks("split_softmax", path, interpret=True, only=["large-logits"])
    assert rec.status == "fail"
    mistake = rec.details["mistake"]
    assert mistake["id"] == "zero-padding-in-merge" and mistake["section"] == "Kernel 2: the rescaled merge"


def test_the_cpu_workshop_relates_plain_lists(tmp_path):
    solution = Path(__file__).resolve().parents[1] / "workshops" / "online_normalizer" / "solution.py"
    text = solution.read_text()
    old = "return [math.exp(v - m) / l for v in values]"
    assert old in text
    path = tmp_path / "normalizer_wrong.py"
    path.write_text(text.replace(old, "return [math.exp(v - m) for v in values]"))
    (rec,) = run_checks("online_normalizer", path, only=["partition-invariance"])
    assert rec.status == "fail"
    assert "mistake" not in rec.details
    assert rec.details["relation"]["id"] == "factor"
    assert rec.message.startswith("Every value of your result is the right value times one constant")
    assert "equal to the sum l of exp(v - max) over all values: the division by l is missing" in rec.message


def test_a_relation_is_looked_for_only_on_a_failure_of_wrong_values():
    from checks.judging.mistakes import Call
    from checks.judging.mistakes.relating import explain
    from checks.judging.records import Record

    values = [1.0, 2.0, 3.0]
    call = Call("streaming_softmax", (values, 1), {}, [-p for p in _softmax_list(values)])
    refused = Record(workshop="online_normalizer", id="r", label="r", status="fail", message="accepted")
    explain(refused, "online_normalizer", [call], [])
    assert "relation" not in refused.details and refused.message == "accepted"
    wrong = Record(
        workshop="online_normalizer",
        id="w",
        label="w",
        status="fail",
        message="3 of 3 probabilities wrong",
        details={"wrong_probabilities": 3},
    )
    explain(wrong, "online_normalizer", [call], [])
    assert wrong.details["relation"]["id"] == "negated"


def _softmax_list(values):
    import math

    m = max(values)
    e = [math.exp(v - m) for v in values]
    return [x / sum(e) for x in e]


def test_an_access_out_of_bounds_names_the_launches_beside_the_shapes(tmp_path):
    path = _variant(
        tmp_path, "out.to(out_ptr.dtype.element_ty), mask=mask)", "out.to(out_ptr.dtype.element_ty))"
    )
    rec = _basic(path)
    assert rec.details["verdict"] == "out-of-bounds"
    assert rec.details["launches"][0]["kernel"] == "_rows"
    assert "Your launches: _rows on grid (4,) = 4 programs (BLOCK_C=64); for x (4, 37) float32" in rec.message


def test_stores_that_land_twice_are_not_called_a_short_grid(tmp_path):
    # row // 2: rows 0-1 land on row 0, ..., and the last rows stay empty
    path = _variant(tmp_path, "out_ptr + row * n_cols + cols", "out_ptr + (row // 2) * n_cols + cols")
    rec = _basic(path)
    assert rec.details["cause"]["id"] == "store-strides"
    assert "fewer programs" not in rec.message
    # the map fits a store with another tensor's strides and an index that is not each
    # program's own (a tl.program_id of the wrong axis): both are said, neither presumed
    assert "own strides" in rec.message and "tl.program_id of the wrong axis" in rec.message


@pytest.mark.parametrize(
    "old, new, mistake_id",
    [
        ("biased = acc + bias[None, :]", "biased = acc - bias[None, :]", "bias-subtracted"),
        (
            "bias = tl.load(bias_ptr + offs_n, mask=col_ok, other=0.0)",
            "bias = tl.load(bias_ptr + offs_n * 0, mask=col_ok, other=0.0)",
            "one-bias-element",
        ),
    ],
)
def test_gemm_bias_mistakes_are_named(tmp_path, old, new, mistake_id):
    text = (Path(__file__).resolve().parents[1] / "workshops" / "fused_gemm" / "solution.py").read_text()
    assert old in text
    path = tmp_path / "gemm_wrong.py"
    path.write_text(text.replace(old, new))
    (rec,) = run_checks("fused_gemm", path, interpret=True, only=["ragged-tails"])
    assert rec.status == "fail" and rec.details["mistake"]["id"] == mistake_id


@pytest.mark.parametrize(
    "new, mistake_id",
    [("dx = y * g - dot[:, None]", "dot-not-weighted"), ("dx = g - dot[:, None]", "y-factor-left-out")],
)
def test_backward_missing_factors_of_y_are_named(tmp_path, new, mistake_id):
    text = SOLUTION_BACKWARD.read_text()
    old = "dx = y * (g - dot[:, None])"
    assert old in text
    path = tmp_path / "backward_wrong.py"
    path.write_text(text.replace(old, new))
    (rec,) = run_checks("softmax_backward", path, interpret=True, only=["matches-autograd"])
    assert rec.status == "fail" and rec.details["mistake"]["id"] == mistake_id


@pytest.mark.parametrize(
    "unwritten, cause_id, words",
    [
        ((slice(5, 8), slice(None)), "grid", "the last rows"),  # programs count rows from 0
        ((slice(0, 3), slice(None)), "grid", "the first rows"),  # programs count from the end
        ((slice(None), slice(6, 10)), "mask", "last columns"),
        ((slice(None), slice(0, 4)), "tile-offsets", "first columns"),
    ],
)
def test_elements_never_stored_in_one_block_at_either_end_name_their_cause(unwritten, cause_id, words):
    import numpy as np

    from checks.judging.stored import unwritten_cause

    mask = np.zeros((8, 10), dtype=bool)
    mask[unwritten] = True
    cause = unwritten_cause(mask, repeated=0)
    assert cause is not None and cause[0] == cause_id and words in cause[1]


def test_only_the_first_row_stored_over_and_over_is_every_program_on_the_same_row():
    import numpy as np

    from checks.judging.stored import unwritten_cause

    mask = np.ones((8, 10), dtype=bool)
    mask[0] = False  # row 0 stored by all 8 programs: 70 stores landed on stored elements
    cause = unwritten_cause(mask, repeated=70)
    assert cause[0] == "same-elements" and "tl.program_id(0)" in cause[3]
    # repeats scattered over the rows are a store address that ignores the output's strides
    scattered = np.zeros((8, 10), dtype=bool)
    scattered[[1, 4], :] = True
    assert unwritten_cause(scattered, repeated=20)[0] == "store-strides"
    assert unwritten_cause(mask, repeated=10)[0] == "store-strides"  # each twice: not every program


def test_a_kernel_reading_the_row_from_program_id_1_is_told_so(tmp_path):
    from checks.judging.engine import run_checks
    from workshops import catalog

    answer = (catalog.get("strided_softmax").folder / "solution.py").read_text(encoding="utf-8")
    assert "row = tl.program_id(0)" in answer  # the row kernel (the other walks tiles of a transpose)
    path = tmp_path / "axis_one.py"
    path.write_text(answer.replace("row = tl.program_id(0)", "row = tl.program_id(1)"))
    (record,) = run_checks("strided_softmax", path, interpret=True, only=["basic"])
    assert record.status == "fail" and record.details["cause"]["id"] == "same-elements"
    assert record.message.startswith("Every program of your kernel stores the same first rows")


def test_the_last_heads_never_stored_are_a_short_grid_over_the_flattened_leading_dims():
    import numpy as np

    from checks.judging.stored import unwritten_cause

    mask = np.zeros((5, 13, 8, 16), dtype=bool)
    mask[4, 12] = True  # 65 heads, a grid capped at 64: the last head keeps the allocation's bytes
    cause = unwritten_cause(mask, repeated=0)
    assert cause is not None and cause[0] == "grid" and "last rows" in cause[1]
    first = np.zeros((5, 13, 8, 16), dtype=bool)
    first[0, :2] = True  # the first two heads: programs that count from the end
    assert unwritten_cause(first, repeated=0)[0] == "grid"
    one_row_of_a_head = np.zeros((5, 13, 8, 16), dtype=bool)
    one_row_of_a_head[4, 12, 3] = True  # not a block at either end of the flattened rows
    assert unwritten_cause(one_row_of_a_head, repeated=0) is None


def test_a_grid_of_zero_programs_is_said_as_such_not_as_stores_masked_off():
    from checks.judging.engine import run_checks
    from workshops import catalog

    path = catalog.get("streaming_attention").folder / "wrong" / "grid_misses_tail.py"
    (record,) = run_checks("streaming_attention", path, interpret=True, only=["basic"])
    assert record.status == "fail" and record.details["cause"]["id"] == "empty-grid"
    assert record.message.startswith("Your launch grid has no programs for this size")
    assert "though the grid launched them" not in record.message


def test_a_capped_gemm_grid_is_too_few_programs_not_a_short_last_group():
    # every program stored its own tile and none twice, and the last tiles are missing: the
    # grid is short; the fixed-group oracle fits the same numbers only with another grid
    from checks.judging.engine import run_checks
    from workshops import catalog

    path = catalog.get("fused_gemm").folder / "wrong" / "capped_grid.py"
    (record,) = run_checks("fused_gemm", path, interpret=True, only=["many-tiles"])
    assert record.status == "fail" and record.details["cause"]["id"] == "grid"
    assert record.message.startswith("Every program of your grid stored its own elements")
    assert "mistake" not in record.details


def test_only_a_tail_of_the_launch_order_reads_as_the_last_tiles():
    import numpy as np

    from checks.judging.unwritten import a_tail_at_the_end as _a_tail_at_the_end

    corner = np.zeros((681, 330), dtype=bool)
    corner[656:, 320:] = True  # the last tile, row-major
    assert _a_tail_at_the_end(corner)
    grouped = np.zeros((681, 330), dtype=bool)
    grouped[128:192, 256:] = True  # a super-row of 4 tile rows half done, then nothing
    grouped[192:, :] = True
    assert _a_tail_at_the_end(grouped)
    holes = np.zeros((64, 64), dtype=bool)
    holes[8:16, :] = holes[24:32, :] = holes[56:, :] = True  # half of every tile: a mask bug
    assert not _a_tail_at_the_end(holes)
    inside = np.zeros((64, 64), dtype=bool)
    inside[10:20, 10:20] = True
    assert not _a_tail_at_the_end(inside)
    widening = np.zeros((8, 8), dtype=bool)
    widening[4:, 6:] = True
    widening[7, :] = False  # the last row stored: not a tail
    assert not _a_tail_at_the_end(widening)


def test_an_input_read_with_its_strides_exchanged_is_said_with_the_tensor_named(tmp_path):
    from checks.judging.engine import run_checks
    from workshops import catalog

    answer = (catalog.get("fused_gemm").folder / "solution.py").read_text(encoding="utf-8")
    right = "a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak"
    assert right in answer
    path = tmp_path / "a_strides_exchanged.py"
    exchanged = "a_ptr + offs_m[:, None] * stride_ak + offs_k[None, :] * stride_am"
    path.write_text(answer.replace(right, exchanged))
    (record,) = run_checks("fused_gemm", path, interpret=True, only=["basic-fp16"])
    assert record.status == "fail" and record.details["relation"]["id"] == "strides-swapped"
    assert record.details["relation"]["evidence"]["argument"] == "a"
    assert "a read with its last two strides exchanged" in record.message


def test_scattered_or_whole_gaps_name_no_single_cause():
    import numpy as np

    from checks.judging.stored import unwritten_cause

    scattered = np.zeros((8, 10), dtype=bool)
    scattered[[1, 4], :] = True
    assert unwritten_cause(scattered, repeated=0) is None
    assert unwritten_cause(np.ones((8, 10), dtype=bool), repeated=0) is None
    middle = np.zeros((8, 10), dtype=bool)
    middle[:, 3:6] = True
    assert unwritten_cause(middle, repeated=0) is None


@pytest.mark.parametrize(
    "result, said",
    [
        (
            "e * tl.sum(e, axis=0)",
            "equal to the square of the row's sum of exp(x - max): the row is multiplied by its sum",
        ),
        (
            "tl.exp(x) / tl.sum(e, axis=0)",
            "equal to exp of the row's max: the numerator is exp(x) where the sum used exp(x - max)",
        ),
    ],
)
def test_a_factor_per_row_that_is_another_quantity_of_the_row_is_named(tmp_path, result, said):
    rec = _basic(_kernel(tmp_path, result))
    assert rec.details["relation"]["id"] == "factor-per-row"
    assert said in rec.details["relation"]["sentence"], rec.details["relation"]["sentence"]


def test_nothing_stored_by_launched_programs_and_the_first_rows_missed_name_the_block_index():
    import numpy as np

    from checks.judging.stored import unwritten_cause

    everything = np.ones((8, 10), dtype=bool)
    cause = unwritten_cause(everything, repeated=0, launched=True)
    assert cause[0] == "nothing-stored" and "block index" in cause[3]
    assert unwritten_cause(everything, repeated=0, launched=False) is None  # no kernel ran: another kind
    first = np.zeros((8, 10), dtype=bool)
    first[:3] = True
    cause = unwritten_cause(first, repeated=0, launched=True)
    assert cause[0] == "grid" and "num_programs - 1 - pid" in cause[1]
