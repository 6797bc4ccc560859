"""A wrong cause is worse than numbers: the learner goes to fix what is right.

Each test writes a workshop's reference answer with one mistake into a file, runs the
checks that catch it (in Triton's interpreter) and reads what they say: the true
mechanism, or the observation with every mechanism it admits, never one wrong cause.
The relation and store-map sentences are also tested on their own, with the other
causes that produce the same observation."""

from __future__ import annotations

import numpy as np
import pytest

from checks.judging.engine import run_checks
from workshops import catalog


def _mutant(tmp_path, workshop_id: str, *edits: tuple) -> object:
    """The workshop's solution.py with each (old, new) edit made once, as a file."""
    text = (catalog.get(workshop_id).folder / "solution.py").read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) >= 1, old
        text = text.replace(old, new, 1)
    path = tmp_path / f"{workshop_id}_mutant.py"
    path.write_text(text, encoding="utf-8")
    return path


def _failures(workshop_id: str, path, *check_ids: str) -> dict:
    records = run_checks(workshop_id, path, interpret=True, only=list(check_ids))
    assert all(r.status == "fail" for r in records), [(r.id, r.status, r.message[:200]) for r in records]
    return {r.id: r for r in records}


def _mistake(record) -> str:
    return (record.details.get("mistake") or {}).get("id", "")


# -- 1. the output stored with an input's row stride (softmax backward) ------------------

Y_STRIDE_STORE = ("rows[:, None] * n_cols + cols[None, :]", "rows[:, None] * y_stride_row + cols[None, :]")


def test_an_output_stored_with_the_inputs_row_stride_is_named_not_called_a_program_id_bug(tmp_path):
    path = _mutant(tmp_path, "softmax_backward", Y_STRIDE_STORE)
    found = _failures("softmax_backward", path, "transposed-inputs", "broadcast-inputs")
    for record in found.values():
        assert _mistake(record) == "output-with-input-strides", record.message[:300]
        assert record.message.startswith("Your kernel stores dx at addresses built with an input's strides")
        assert "program id" not in record.message and "program_id" not in record.message


def test_a_program_that_stores_its_own_rows_on_each_other_is_told_the_row_step_not_the_program_id():
    from checks.judging.stored import StoreLog, unwritten_cause

    torch = pytest.importorskip("torch")
    out = torch.zeros(4, 8, dtype=torch.float32)
    base, log = out.data_ptr(), StoreLog()
    row0 = base + 4 * np.arange(8, dtype=np.uint64)
    for _ in range(4):  # one program, four rows, each stored at row 0: a row stride of 0
        log.add(row0, np.zeros((8, 4), dtype=np.uint8), 4, program=(1, (0, 0, 0)))
    gaps = log.gaps(out)
    assert gaps is not None and gaps.repeated == 24 and gaps.within == 24
    cause = unwritten_cause(gaps.unexplained, gaps.repeated, launched=True, within=gaps.within)
    assert cause[0] == "row-step" and "stride that is 0" in cause[1] and "program id" not in cause[1]
    # four programs, each storing row 0 once: the same first rows from every program
    log = StoreLog()
    for pid in range(4):
        log.add(row0, np.zeros((8, 4), dtype=np.uint8), 4, program=(1, (pid, 0, 0)))
    gaps = log.gaps(out)
    assert gaps.repeated == 24 and gaps.within == 0
    cause = unwritten_cause(gaps.unexplained, gaps.repeated, launched=True, within=gaps.within)
    assert cause[0] == "same-elements"
    assert "program id" in cause[1] and "stride that is 0" in cause[1]  # both causes, neither alone


# -- 2. one row's answer everywhere: every cause that makes it -----------------------------


def test_one_rows_answer_everywhere_names_every_cause_that_makes_it():
    from checks.judging.relations import rows_moved

    want = np.arange(24, dtype=np.float64).reshape(6, 4)
    found = rows_moved(np.repeat(want[:1], 6, axis=0), want)
    assert found.id == "rows-repeated" and found.evidence["row"] == 0
    for cause in ("tl.program_id", "row stride of 0", "causal mask"):
        assert cause in found.sentence, cause
    assert "every program works on the same row" not in found.sentence


def test_rows_that_repeat_their_blocks_first_row_are_said_as_blocks():
    from checks.judging.relations import columns_moved, rows_moved

    want = np.arange(32, dtype=np.float64).reshape(8, 4)
    got = want[np.arange(8) // 4 * 4]  # blocks of 4 rows, each computed as its first row
    found = rows_moved(got, want)
    assert found.id == "rows-repeated" and found.evidence["starts"] == [0, 4]
    assert "first row of its block" in found.sentence and "causal mask" in found.sentence
    assert "several programs compute the same row" not in found.sentence
    # the column version names no causal mask or broadcast row
    columns = columns_moved(np.repeat(want[:, :1], 4, axis=1), want)
    assert columns.id == "columns-repeated" and "causal" not in columns.sentence


# -- 3. a causal mask taken from the query block's first row -------------------------------


def test_a_causal_mask_from_the_query_blocks_first_row_is_named(tmp_path):
    path = _mutant(
        tmp_path,
        "streaming_attention",
        ("offs_n[None, :] <= offs_m[:, None]", "offs_n[None, :] <= tl.min(offs_m, axis=0)"),
    )
    (record,) = _failures("streaming_attention", path, "causal-basic").values()
    assert _mistake(record) == "causal-from-block-start", record.message[:300]
    assert "tl.program_id" not in record.message


# -- 4. a key loop one tile short ----------------------------------------------------------


@pytest.mark.parametrize(
    "edit, check_id",
    [
        # full attention: the loop over whole tiles stops one tile early
        (("range(0, full_tiles_end, BLOCK_N)", "range(0, full_tiles_end - BLOCK_N, BLOCK_N)"), "basic"),
        # causal tile skipping: the tiles before the diagonal stop one tile early
        (
            ("range(0, diagonal_start, BLOCK_N)", "range(0, diagonal_start - BLOCK_N, BLOCK_N)"),
            "ragged-lengths",
        ),
        # causal without skipping: every tile visited but the last (its rows were all stored)
        (("range(0, N, BLOCK_N)", "range(0, N - BLOCK_N, BLOCK_N)"), "skip-future-tiles"),
    ],
    ids=["full", "before-diagonal", "causal-last"],
)
def test_a_key_loop_one_tile_short_is_named_not_called_a_mask_or_a_grid(tmp_path, edit, check_id):
    path = _mutant(tmp_path, "streaming_attention", edit)
    (record,) = _failures("streaming_attention", path, check_id).values()
    assert _mistake(record) == "key-tile-skipped", record.message[:300]
    for wrong in ("mask that tile's loads", "never written", "grid rounds", "fewer programs"):
        assert wrong not in record.message, wrong


def test_the_last_partial_tile_alone_wrong_admits_a_loop_that_stops_before_it():
    from checks.judging.relations import tile_pattern

    want = np.ones((100, 8))
    got = want.copy()
    got[64:] = 2.0
    found = tile_pattern(got, want, tiles=(64,))
    assert found.id == "last-partial-row-tile"
    assert "masked with the true size" in found.sentence and "a loop stops before it" in found.sentence


def test_equal_rows_are_no_evidence_of_a_factor_per_column():
    from checks.judging.relations import constant_factor

    want = np.tile(np.linspace(1.0, 2.0, 8), (10, 1))  # every row the same: one value per column
    got = np.tile(np.linspace(-3.0, 5.0, 8), (10, 1))
    assert constant_factor(got, want) is None


# -- 5. the running maximum started at 0 ---------------------------------------------------


def test_a_running_maximum_started_at_zero_is_named_not_called_a_scale(tmp_path):
    path = _mutant(
        tmp_path,
        "streaming_attention",
        ('m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)', "m_i = tl.zeros([BLOCK_M], tl.float32)"),
    )
    (record,) = _failures("streaming_attention", path, "causal-row-zero").values()
    assert _mistake(record) == "max-starts-at-zero", record.message[:300]
    assert "scale or a normalization" not in record.message


def test_rows_that_are_all_zero_and_the_rest_right_are_not_called_a_scale():
    from checks.judging.relations import constant_factor

    want = np.arange(1.0, 41.0).reshape(5, 8)
    got = want.copy()
    got[0] = 0.0
    found = constant_factor(got, want)
    assert found.id == "zero-rows" and found.evidence["zero"] == 1
    assert "scale or a normalization" not in found.sentence and "running maximum" in found.sentence


# -- 6. pid_m and pid_n exchanged (fused GEMM) ---------------------------------------------

PIDS_SWAPPED = (
    "    pid_m = first_pid_m + local % group_size_m\n    pid_n = local // group_size_m",
    "    pid_n = first_pid_m + local % group_size_m\n    pid_m = local // group_size_m",
)


def test_exchanged_tile_indices_are_named_and_a_grid_of_the_right_size_is_not_called_short(tmp_path):
    path = _mutant(tmp_path, "fused_gemm", PIDS_SWAPPED)
    found = _failures("fused_gemm", path, "k-zero", "long-k")
    assert _mistake(found["k-zero"]) == "tile-indices-swapped", found["k-zero"].message[:300]
    # long-k's call is made equally by a fixed-height last group: neither is named, and the
    # store map says what it shows (a program stored nothing) with both causes among others
    long_k = found["long-k"]
    assert _mistake(long_k) == "" and long_k.details["cause"]["id"] == "idle-programs"
    assert "indices exchanged" in long_k.message and "group" in long_k.message
    for record in found.values():
        assert "fewer programs than" not in record.message
        assert "stop before the end of each row" not in record.message


# -- 7. an fp16 accumulator over one K step ------------------------------------------------


def test_an_fp16_accumulator_of_one_k_step_is_named_among_the_causes_of_an_early_rounding(tmp_path):
    path = _mutant(
        tmp_path,
        "fused_gemm",
        (
            "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
            "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)",
        ),
        ("acc = tl.dot(a, b, acc)", "acc = tl.dot(a, b, acc, out_dtype=tl.float16)"),
        ("block_k = min(widest_k, max(16, next_power_of_2(K)))", "block_k = max(16, next_power_of_2(K))"),
    )
    (record,) = _failures("fused_gemm", path, "epilogue-one-rounding").values()
    assert _mistake(record) == "cast-before-epilogue", record.message[:300]
    assert "accumulator kept in 16 bits" in record.message and "out_dtype=tl.float16" in record.message
