"""Out-of-bounds advice follows the evidence (checks/judging/oob.py): an access the mask let
through names the grid and the program_id axis; one bad address infers no stride."""

import pytest
import torch
import triton
import triton.language as tl

from checks.judging import oob


@pytest.fixture
def bounds_checked():
    with oob.checking():
        yield


@triton.jit
def _rows_on_axis_1(x, y, n_cols, BLOCK: tl.constexpr):
    # the bug: the rows come from axis 1 of the grid, which was launched over axis 0
    row = tl.program_id(0) * 0 + tl.program_id(1) + tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(y + row * n_cols + cols, v, mask=mask)


@pytest.mark.usefixtures("bounds_checked")
def test_a_masked_access_on_a_grid_wider_than_the_rows_names_the_grid_not_a_missing_mask():
    x, y = torch.randn(4, 16), torch.empty(4, 16)
    with pytest.raises(Exception) as info:
        _rows_on_axis_1[(6, 1)](x, y, 16, BLOCK=16)  # 6 programs for 4 rows: every lane is masked in
    v = oob.find_violation(info.value)
    assert v is not None
    assert "mask this access" not in v.message
    assert "the mask lets every lane of program (4, 0, 0) of grid (6, 1, 1) through" in v.message
    assert "Check the grid" in v.message and "program_id axis" in v.message


@triton.jit
def _one_lane_past(x, y, table, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n + 1, other=0.0)  # one lane too many
    tl.store(y + offs, v, mask=offs < n)


@pytest.mark.usefixtures("bounds_checked")
def test_one_bad_address_infers_no_stride():
    x, y = torch.randn(7), torch.empty(7)
    table = torch.zeros(3, 3)  # offset 7 is its element (2, 1): one address fits its strides by chance
    with pytest.raises(Exception) as info:
        _one_lane_past[(1,)](x, y, table, 7, BLOCK=8)
    v = oob.find_violation(info.value)
    assert v is not None and v.details["lanes_out_of_bounds"] == 1
    assert "strides" not in v.message
    assert "compare the mask's bound with the size these offsets index" in v.message


@triton.jit
def _rows_mask_one_past(x, y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols <= n_cols  # the bug: one lane past the row, every lane let through when BLOCK = n_cols + 1
    v = tl.load(x + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(y + row * n_cols + cols, v, mask=cols < n_cols)


@pytest.mark.usefixtures("bounds_checked")
def test_a_last_program_with_lanes_in_bounds_is_told_about_the_mask_not_the_grid():
    # 3 columns in tiles of 4: the mask lets all 4 lanes through; program 5 (the last row)
    # owns row 5, only its last lane is past the end
    x, y = torch.randn(6, 3), torch.empty(6, 3)
    with pytest.raises(Exception) as info:
        _rows_mask_one_past[(6,)](x, y, 3, BLOCK=4)
    v = oob.find_violation(info.value)
    assert v is not None and v.details["program_id"][0] == 5
    assert "owns no elements" not in v.message
    assert "compare the mask's bound with the size these offsets index" in v.message


@triton.jit
def _rows(x, y, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride_row + cols * stride_col, mask=mask, other=0.0)
    tl.store(y + row * n_cols + cols, v, mask=mask)


@pytest.mark.usefixtures("bounds_checked")
def test_row_and_column_strides_passed_in_the_wrong_order_are_named():
    x, y = torch.randn(4, 37), torch.empty(4, 37)
    with pytest.raises(Exception) as info:
        _rows[(4,)](x, y, 37, x.stride(1), x.stride(0), BLOCK=64)  # the bug: (1, 37) for (37, 1)
    v = oob.find_violation(info.value)
    assert v is not None
    assert "row and column strides swapped (row * 1 + col * 37)" in v.message
    assert "mask's bound" not in v.message and "owns no elements" not in v.message


@triton.jit
def _rows_unmasked(x, y, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * stride_row + cols * stride_col)  # the bug: no mask, BLOCK > n_cols
    tl.store(y + row * n_cols + cols, v, mask=cols < n_cols)


@pytest.mark.usefixtures("bounds_checked")
def test_a_row_read_past_its_end_without_a_mask_is_not_called_a_stride_swap():
    """The last row's lanes past the end land where the swapped layout (whose extent is
    larger) would reach, but the lanes before them do not: no layout is named, the mask is."""
    x, y = torch.randn(33, 40), torch.empty(33, 40)
    with pytest.raises(Exception) as info:
        _rows_unmasked[(33,)](x, y, 40, x.stride(0), x.stride(1), BLOCK=64)
    v = oob.find_violation(info.value)
    assert v is not None and v.details["program_id"][0] == 32
    assert "swapped" not in v.message and "column stride" not in v.message
    assert "mask this access" in v.message


@triton.jit
def _store_with_input_strides(x, y, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride_row + cols * stride_col, mask=mask, other=0.0)
    tl.store(y + row * stride_row + cols * stride_col, v, mask=mask)  # the bug: the input's strides


@pytest.mark.usefixtures("bounds_checked")
def test_one_lane_out_of_bounds_still_shows_the_other_tensors_strides_through_the_whole_access():
    base = torch.randn(28, 20)
    x = base.t()[:, :]  # (20, 28) with strides (1, 20)
    x = x[:19]  # 19 rows: a store at x's strides into a (19, 28) output runs one lane past its end
    y = torch.empty(19, 28)
    with pytest.raises(Exception) as info:
        _store_with_input_strides[(19,)](x, y, 28, x.stride(0), x.stride(1), BLOCK=32)
    v = oob.find_violation(info.value)
    assert v is not None and v.details["lanes_out_of_bounds"] == 1
    assert (
        "the addresses of this store, counted from the start of y, step like the elements of x" in v.message
    )


def test_a_tile_stored_without_its_mask_is_told_to_mask_not_that_strides_are_swapped():
    """A GEMM's last tiles stored without the mask: their addresses step by the output's own
    strides, so whatever the lanes past the end land on, the advice is the mask (a learner's
    trial met "strides swapped" here, on the checks whose shapes let both layouts fit)."""
    from pathlib import Path

    from checks.judging.engine import run_checks

    repo = Path(__file__).resolve().parent.parent
    source = (repo / "workshops" / "fused_gemm" / "solution.py").read_text(encoding="utf-8")
    store = "tl.store(c_ptrs, out, mask=row_ok[:, None] & col_ok[None, :])"
    assert source.count(store) == 1
    path = Path(__import__("tempfile").mkdtemp()) / "unmasked.py"
    path.write_text(source.replace(store, "tl.store(c_ptrs, out)"), encoding="utf-8")
    records = run_checks(
        "fused_gemm", path, interpret=True, only=["group-invariance", "tile-order", "wide-tiles"]
    )
    failed = [r for r in records if r.status == "fail"]
    assert len(failed) == 3, [(r.id, r.status, r.message[:200]) for r in records]
    for r in failed:
        assert "out-of-bounds store" in r.message and "strides swapped" not in r.message, r.message
        assert "mask this access" in r.message, r.message


def test_a_k_mask_one_too_wide_on_an_offset_view_is_told_about_the_mask_not_the_offset():
    """``offs_k < k_left`` written ``<=``: on a view that starts inside its storage the extra
    lane lands in the storage, which once read as a storage offset counted twice."""
    from pathlib import Path

    from checks.judging.engine import run_checks

    repo = Path(__file__).resolve().parent.parent
    source = (repo / "workshops" / "fused_gemm" / "solution.py").read_text(encoding="utf-8")
    mask = "mask=row_ok[:, None] & (offs_k[None, :] < k_left)"
    assert source.count(mask) == 1
    path = Path(__import__("tempfile").mkdtemp()) / "k_mask.py"
    path.write_text(source.replace(mask, mask.replace("< k_left", "<= k_left")), encoding="utf-8")
    (record,) = run_checks("fused_gemm", path, interpret=True, only=["offset-views"])
    assert record.status == "fail" and "out-of-bounds load" in record.message, record.message
    assert "storage_offset" not in record.message and "mask" in record.message, record.message
