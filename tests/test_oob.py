"""The interpreter's out-of-bounds detector (checks/judging/oob.py)."""

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime import interpreter

from checks.judging import oob


def _triton_own_methods() -> list:
    builder = type(interpreter.interpreter_builder)
    names = ("create_masked_load", "create_masked_store", "create_atomic_rmw", "create_atomic_cas")
    return [interpreter.InterpretedFunction.run, *(getattr(builder, n) for n in names)]


TRITONS_OWN = _triton_own_methods()  # no context is open while modules are imported


@pytest.fixture
def bounds_checked():
    with oob.checking():
        yield


@triton.jit
def _copy_unmasked_load(x, y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)  # reads past n: the bug
    tl.store(y + offs, v, mask=offs < n)  # ...but the result is masked, so y is right


@triton.jit
def _copy_masked(x, y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n, other=0.0)
    tl.store(y + offs, v, mask=offs < n)


@triton.jit
def _copy_store_past_end(x, y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n, other=0.0)
    tl.store(y + offs + 1, v, mask=offs < n)  # off by one: the last lane writes past y


@pytest.mark.usefixtures("bounds_checked")
def test_unmasked_load_is_flagged_even_when_the_answer_is_right():
    x = torch.randn(10)
    y = torch.empty(10)
    with pytest.raises(Exception) as info:
        _copy_unmasked_load[(1,)](x, y, 10, BLOCK=16)
    v = oob.find_violation(info.value)
    assert v is not None
    assert "_copy_unmasked_load" in v.message and "program id (0, 0, 0)" in v.message
    assert "past the end of x" in v.message
    assert v.details["kind"] == "load"


@pytest.mark.usefixtures("bounds_checked")
def test_store_past_the_end_names_the_program():
    x = torch.randn(40)
    y = torch.empty(40)
    with pytest.raises(Exception) as info:
        _copy_store_past_end[(3,)](x, y, 40, BLOCK=16)
    v = oob.find_violation(info.value)
    assert v is not None and v.details["kind"] == "store"
    assert v.details["program_id"][0] == 2  # the program holding the last element


@pytest.mark.usefixtures("bounds_checked")
def test_masked_kernel_raises_no_false_alarm():
    x = torch.randn(10)
    y = torch.empty(10)
    _copy_masked[(1,)](x, y, 10, BLOCK=16)
    assert torch.equal(x, y)


@triton.jit
def _read_rows_as_if_contiguous(x, y, n_rows, n_cols, BLOCK: tl.constexpr):
    # the bug: the row stride is taken to be n_cols, whatever the view's stride is
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * 10 + cols, mask=cols < 10, other=0.0)  # 10: the base's width
    tl.store(y + row * n_cols + cols, v, mask=cols < n_cols)


@pytest.mark.usefixtures("bounds_checked")
def test_a_read_past_the_tensor_is_told_from_a_read_of_the_wrong_elements():
    x = torch.randn(10)
    with pytest.raises(Exception) as info:
        _copy_unmasked_load[(1,)](x, torch.empty(10), 10, BLOCK=16)
    past = oob.find_violation(info.value).message
    assert "past the memory of the tensor" in past and "mask this access" in past
    # a column slice read as if it were whole rows: the addresses stay inside the base
    # tensor's memory, but leave the view the kernel was given
    base = torch.randn(3, 10)
    view = base[0:2, 0:5]
    with pytest.raises(Exception) as info:
        _read_rows_as_if_contiguous[(2,)](view, torch.empty(2, 5), 2, 5, BLOCK=16)
    wrong = oob.find_violation(info.value).message
    assert "belongs to the tensor it is a view of" in wrong and "strides" in wrong
    assert "mask this access" not in wrong


@triton.jit
def _store_with_input_strides(x, y, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    # the bug: the output (contiguous) is addressed with the input's strides
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    offs = row * stride_row + cols * stride_col
    v = tl.load(x + offs, mask=cols < n_cols, other=0.0)
    tl.store(y + offs, v, mask=cols < n_cols)


@pytest.mark.usefixtures("bounds_checked")
def test_a_store_with_the_inputs_strides_is_not_told_to_add_a_mask():
    base = torch.randn(12, 70)
    x = base[2:9, 5:61]  # row stride 70, width 56
    y = torch.empty(7, 56)
    with pytest.raises(Exception) as info:
        _store_with_input_strides[(7,)](x, y, 56, x.stride(0), x.stride(1), BLOCK=64)
    v = oob.find_violation(info.value)
    assert v is not None and v.details["kind"] == "store"
    assert "step like the elements of x (70, 1)" in v.message
    assert "offset computed with x's strides (or a row index past y's last row)" in v.message
    assert "its own strides" in v.message
    assert "mask this access" not in v.message and "0 bytes" not in v.message


@triton.jit
def _load_with_output_strides(x, y, n_cols, stride_out_row, BLOCK: tl.constexpr):
    # the bug: the input (contiguous, rows n_cols apart) is read with the output's row stride
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * stride_out_row + cols, mask=cols < n_cols, other=0.0)
    tl.store(y + row * stride_out_row + cols, v, mask=cols < n_cols)


@pytest.mark.usefixtures("bounds_checked")
def test_a_load_that_steps_like_the_outputs_rows_says_what_was_seen_not_whose_strides_were_used():
    # the addresses match out's rows; that is what the message reports, with both readings
    # (out's row stride used for x, or a row index past x's last row), not a verdict
    x = torch.randn(7, 56)
    out = torch.empty(12, 70)[:7, :56]  # row stride 70
    with pytest.raises(Exception) as info:
        _load_with_output_strides[(7,)](x, out, 56, out.stride(0), BLOCK=64)
    v = oob.find_violation(info.value)
    assert v is not None and v.details["kind"] == "load"
    assert "step like the elements of y (70, 1)" in v.message
    assert "an offset computed with y's strides (or a row index past x's last row)" in v.message
    assert "follow the strides" not in v.message and "mask this access" not in v.message


@triton.jit
def _load_assuming_unit_column_stride(x, y, n_cols, stride_row, BLOCK: tl.constexpr):
    # the bug: the column stride is taken to be 1 (x is a broadcast view: it is 0)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    tl.store(y + row * n_cols + cols, v, mask=cols < n_cols)


@pytest.mark.usefixtures("bounds_checked")
def test_a_load_that_assumes_a_unit_column_stride_says_so_not_another_tensors_strides():
    # g shared along each row (strides (1, 0)): reading it as contiguous rows runs past its
    # 7 elements; y's strides (33, 1) would also explain the addresses, but the simpler
    # reading is x's own elements with a column stride of 1
    x = torch.randn(7, 1).expand(7, 33)
    y = torch.empty(7, 33)
    with pytest.raises(Exception) as info:
        _load_assuming_unit_column_stride[(7,)](x, y, 33, x.stride(0), BLOCK=64)
    v = oob.find_violation(info.value)
    assert v is not None and v.details["kind"] == "load"
    assert "as they would lie if its column stride were 1 (it is 0)" in v.message, v.message
    assert "step like the elements of" not in v.message


def test_the_check_is_a_context_that_always_puts_tritons_methods_back():
    x, y = torch.randn(10), torch.empty(10)
    assert _triton_own_methods() == TRITONS_OWN
    with oob.checking():
        wrapped = _triton_own_methods()
        assert all(a is not b for a, b in zip(wrapped, TRITONS_OWN))
        with oob.checking(bounds=False):  # nested: still wrapped, the outer bounds still hold
            assert _triton_own_methods() == wrapped
            with pytest.raises(Exception) as info:
                _copy_unmasked_load[(1,)](x, y, 10, BLOCK=16)
            assert oob.find_violation(info.value) is not None
        assert _triton_own_methods() == wrapped
    assert _triton_own_methods() == TRITONS_OWN
    _copy_unmasked_load[(1,)](x, y, 10, BLOCK=16)  # unchecked again: Triton reads on silently
    with pytest.raises(RuntimeError), oob.checking():
        raise RuntimeError("the body failed")
    assert _triton_own_methods() == TRITONS_OWN


def test_a_check_run_leaves_the_interpreter_as_it_found_it(tmp_path):
    from checks.judging.engine import run_checks
    from workshops import catalog

    w = catalog.get("strided_softmax")
    records = run_checks(w.id, w.solution, interpret=True, only=["own-kernel"])
    assert [r.status for r in records] == ["pass"]
    assert _triton_own_methods() == TRITONS_OWN


@triton.jit
def _copy_blocks(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n, other=0.0)
    tl.store(y + offs, v, mask=offs < n)


def test_a_load_listener_hears_each_programs_active_lanes_and_nothing_after_it_closes():
    x, y = torch.arange(20, dtype=torch.float32), torch.empty(20)
    heard = []
    with oob.observing_loads(lambda addrs, elem, pid: heard.append((pid, addrs, elem))):
        _copy_blocks[(3,)](x, y, 20, BLOCK=8)
    assert torch.equal(x, y)
    assert [pid for pid, _, _ in heard] == [(0, 0, 0), (1, 0, 0), (2, 0, 0)]
    elements = [((addrs.astype("int64") - x.data_ptr()) // elem).tolist() for _, addrs, elem in heard]
    assert elements == [list(range(0, 8)), list(range(8, 16)), list(range(16, 20))]  # masked lanes left out
    assert {elem for _, _, elem in heard} == {4}
    assert _triton_own_methods() == TRITONS_OWN  # the wrappers are gone again
    _copy_blocks[(3,)](x, y, 20, BLOCK=8)
    assert len(heard) == 3


@triton.jit
def _tile_with_another_row_stride(a, b, out, stride_a_row, stride_b_row, BLOCK: tl.constexpr):
    # the bug: b's rows are addressed with a's row stride
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, 16)
    x = tl.load(a + rows[:, None] * stride_a_row + cols[None, :])
    y = tl.load(b + rows[:, None] * stride_a_row + cols[None, :])
    tl.store(out + rows[:, None] * 16 + cols[None, :], x + y)


@pytest.mark.usefixtures("bounds_checked")
def test_a_block_whose_rows_step_by_another_tensors_stride_names_that_tensor():
    a = torch.randn(32, 16 * 3)[:, :16]  # rows 48 apart: a stride no other tensor has
    b = torch.randn(32, 16)  # rows 16 apart
    out = torch.empty(32, 16)
    with pytest.raises(Exception) as info:
        _tile_with_another_row_stride[(1,)](a, b, out, a.stride(0), b.stride(0), BLOCK=32)
    v = oob.find_violation(info.value)
    assert v is not None and v.details["kind"] == "load"
    assert "step by 48 elements along one axis of its block" in v.message
    assert "none of b's strides (16, 1), but it is a stride of a (48, 1)" in v.message
    assert "mask this access" not in v.message


@triton.jit
def _tile_past_the_end(x, out, start, BLOCK: tl.constexpr):
    # the bug: the tile's start is far past the end (an offset from the wrong stride)
    offs = start + tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(out + tl.arange(0, BLOCK), v)


@pytest.mark.usefixtures("bounds_checked")
def test_an_unmasked_tile_wholly_outside_is_not_told_to_add_a_mask_nor_blamed_on_a_contiguous_tensor():
    x = torch.randn(64)
    out = torch.empty(4096)  # contiguous and large: it holds any offset, which proves nothing
    with pytest.raises(Exception) as info:
        _tile_past_the_end[(1,)](x, out, 1024, BLOCK=32)
    v = oob.find_violation(info.value)
    assert v is not None
    assert "a missing mask is not the cause" in v.message and "tile's start" in v.message
    assert "step like the elements of" not in v.message and "mask this access" not in v.message


@triton.jit
def _heads_with_b_and_h_swapped(x, out, H, stride_b, stride_h, BLOCK: tl.constexpr):
    # the bug: h multiplies the batch stride and b the head stride
    head = tl.program_id(0)
    b = head // H
    h = head % H
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + h * stride_b + b * stride_h + offs, mask=offs < 4, other=0.0)
    tl.store(out + head * 4 + offs, v, mask=offs < 4)


@pytest.mark.usefixtures("bounds_checked")
def test_an_offset_past_the_batch_dimension_says_which_stride_ran_past():
    x = torch.randn(2, 3, 4)  # B=2, H=3: program 2 has b=0, h=2, and 2 * stride(0) is past x
    out = torch.empty(6, 4)
    with pytest.raises(Exception) as info:
        _heads_with_b_and_h_swapped[(6,)](x, out, 3, x.stride(0), x.stride(1), BLOCK=8)
    v = oob.find_violation(info.value)
    assert v is not None and v.details["program_id"][0] == 2
    assert "at index 2 along dim 0, which has 2 entries" in v.message
    assert "multiplies stride(0) runs past that dimension" in v.message


@triton.jit
def _copy_adding_the_storage_offset(x, y, offset, n, BLOCK: tl.constexpr):
    # the bug: x already points at the view's first element; the offset is added again
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offset + offs, mask=offs < n, other=0.0)
    tl.store(y + offs, v, mask=offs < n)


@pytest.mark.usefixtures("bounds_checked")
def test_a_storage_offset_added_to_the_views_own_pointer_is_said_so():
    base = torch.randn(128)
    x = base[40:56]  # a view 40 elements into its storage: x's pointer is already there
    y = torch.empty(16)
    with pytest.raises(Exception) as info:
        _copy_adding_the_storage_offset[(1,)](x, y, x.storage_offset(), 16, BLOCK=16)
    v = oob.find_violation(info.value)
    assert v is not None and "moved 40 elements further, which is its storage offset" in v.message
    assert "adding storage_offset() counts it twice" in v.message
