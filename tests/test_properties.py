"""What separates failing from passing checks (checks/judging/properties.py), and where it is said."""

from __future__ import annotations

import textwrap

import pytest

from checks.judging import properties
from checks.judging.case import check
from checks.judging.engine import cases_for
from checks.judging.records import Record


def _rec(status, props=None, id="c"):
    details = {"properties": list(props)} if props is not None else {}
    return Record(workshop="w", id=id, label=id, status=status, details=details)


def test_the_property_every_failing_check_has_and_no_passing_one_has_is_said():
    records = [
        _rec("fail", ["ragged", "strided"]),
        _rec("fail", ["ragged"]),
        _rec("pass", ["strided"]),
        _rec("pass", ["tile-multiple"]),
        _rec("pass"),  # declares nothing: neither for nor against
    ]
    said = properties.separating(records)
    assert said == (
        "Fails only where the width is not a multiple of the tile: look at the last, partial tile: "
        "its masks, its padding value, and whether a program or a loop step reaches it at all."
    )


def test_nothing_is_said_when_a_passing_check_shares_it_or_a_failing_one_declares_nothing():
    assert properties.separating([_rec("fail", ["ragged"]), _rec("pass", ["ragged"])]) is None
    assert properties.separating([_rec("fail", ["ragged"]), _rec("fail"), _rec("pass", ["strided"])]) is None
    assert properties.separating([_rec("fail", ["ragged"])]) is None  # nothing passed: nothing separates
    assert properties.separating([_rec("pass", ["ragged"])]) is None


def test_observed_properties_are_read_off_the_tensors_a_call_was_given():
    import torch

    from checks.judging.mistakes import Call

    square = torch.zeros(4, 64)
    ragged_view = torch.zeros(37, 5).t()
    assert properties.observed([Call("f", (square,), {}, None)]) == ["tile-multiple", "contiguous"]
    half = Call("f", (), {"y": ragged_view.half()}, None)
    assert properties.observed([half]) == ["ragged", "strided", "fp16"]
    assert properties.observed([Call("f", (torch.zeros(0, 37), 3), {}, None)]) == []  # empty: nothing
    assert properties.observed([Call("f", (torch.zeros(2, 2, dtype=torch.bfloat16),), {}, None)]) == [
        "tile-multiple",
        "contiguous",
        "bf16",
    ]


def _seen(status, seen, props=None, id="c"):
    rec = _rec(status, props, id)
    rec.details = {**rec.details, "observed": list(seen)}
    return rec


def test_an_observed_property_separates_and_a_declared_opposite_wins():
    records = [_seen("fail", ["ragged", "contiguous"]), _seen("pass", ["tile-multiple", "contiguous"])]
    assert properties.separating(records).startswith("Fails only where the width is not a multiple")
    # the check says its sizes are whole tiles (of its kernel's tile): the observation yields
    declared = [_seen("fail", ["ragged"], ["tile-multiple"]), _seen("pass", ["ragged"])]
    assert properties.separating(declared).startswith("Fails only where the width is a whole number of tiles")


def test_a_mistake_outside_the_catalogue_is_separated_by_what_its_calls_show(tmp_path):
    """Softmax backward with y and g padded with 1.0: wrong wherever a row does not fill its
    tile.  No check declares that, yet the failing calls are ragged and the passing ones
    whole tiles; own-kernel passes with wrong values and is no evidence."""
    from checks.judging.engine import run_checks
    from workshops import catalog

    answer = (catalog.get("softmax_backward").folder / "solution.py").read_text(encoding="utf-8")
    padded = answer.replace("mask=mask, other=0.0", "mask=mask, other=1.0")
    assert padded.count("other=1.0") == 2
    path = tmp_path / "padded_one.py"
    path.write_text(padded)
    only = ["own-kernel", "worked-example", "one-by-one", "matches-autograd", "ragged-tails"]
    records = {r.id: r for r in run_checks("softmax_backward", path, interpret=True, only=only)}
    assert {i for i, r in records.items() if r.status == "fail"} == {"matches-autograd", "ragged-tails"}
    assert records["own-kernel"].status == "pass" and "observed" not in records["own-kernel"].details
    assert records["worked-example"].details["observed"] == ["tile-multiple", "contiguous"]
    assert records["one-by-one"].details["observed"] == ["contiguous"]  # 1x1: no width to pad
    assert properties.separating(list(records.values())) == (
        "Fails only where the width is not a multiple of the tile: look at the last, partial tile: "
        "its masks, its padding value, and whether a program or a loop step reaches it at all."
    )


def test_a_reversed_causal_mask_is_separated_by_the_causal_keyword_of_its_calls(tmp_path):
    """Keys j >= i instead of j <= i: every failing call is causal, full runs pass (and a
    causal call of one key passes too, which must not hide the pattern)."""
    from checks.judging.engine import run_checks
    from workshops import catalog

    answer = (catalog.get("streaming_attention").folder / "solution.py").read_text(encoding="utf-8")
    right = "offs_n[None, :] <= offs_m[:, None]"
    assert right in answer
    path = tmp_path / "mask_reversed.py"
    path.write_text(answer.replace(right, "offs_n[None, :] >= offs_m[:, None]"))
    only = ["basic", "causal-basic", "causal-row-zero", "tiny-lengths", "ragged-lengths"]
    records = {r.id: r for r in run_checks("streaming_attention", path, interpret=True, only=only)}
    assert records["basic"].status == "pass" and "full" in records["basic"].details["observed"]
    failed = records["causal-basic"]
    assert failed.status == "fail" and "causal" in failed.details["observed"]
    assert records["tiny-lengths"].status == "pass"  # a causal call of one key: right either way
    # the pattern, once the widths say nothing: every failure causal, a full run passing
    causal, full = properties.PROPERTIES["causal"][0], properties.PROPERTIES["full"][0]
    seen = [_rec("fail", ["causal"]), _rec("fail", ["causal"]), _rec("pass", ["causal"])]
    seen.append(_rec("pass", ["full"]))
    assert causal in properties.separating(seen)
    assert full in properties.separating([_rec("fail", ["full"]), _rec("pass", ["causal"])])


def test_a_ragged_or_strided_pattern_is_said_though_one_such_check_passed():
    # padding that only matters for small values: some ragged checks pass, every failure is ragged
    ragged = properties.PROPERTIES["ragged"][0]
    records = [_rec("fail", ["ragged"]), _rec("fail", ["ragged"]), _rec("pass", ["ragged"])]
    assert properties.separating(records) is None  # nothing passed on whole tiles: no contrast
    records.append(_rec("pass", ["tile-multiple"]))
    assert ragged in properties.separating(records)
    assert properties.separating(records[1:]) is None  # one failure is not a pattern
    # what no passing check has comes first
    many = [_rec("fail", ["ragged", "many-rows"]), _rec("fail", ["ragged", "many-rows"])] + records[2:]
    assert properties.separating(many).startswith("Fails only where there are many rows")
    # "contiguous" is never said loosely: it would send a wrong formula to the addresses
    plain = [_rec("fail", ["contiguous"]), _rec("fail", ["contiguous"]), _rec("pass", ["contiguous"])]
    assert properties.separating(plain + [_rec("pass", ["strided"])]) is None


def test_an_error_counts_as_failing():
    said = properties.separating([_rec("error", ["causal"]), _rec("pass", ["ragged"])])
    assert said.startswith("Fails only where attention is causal")


def test_an_unknown_property_is_refused_naming_the_check():
    with pytest.raises(ValueError, match="'my-check'.*'raggd'"):
        check("my-check", "label", properties=("raggd",))(lambda mod, ctx: None)


@pytest.mark.parametrize(
    "workshop_id",
    ["strided_softmax", "split_softmax", "softmax_backward", "streaming_attention", "fused_gemm"],
)
def test_each_gpu_workshop_declares_properties_of_known_kinds(workshop_id):
    declared = [c for c in cases_for(workshop_id) if c.properties]
    assert len(declared) >= 10
    assert all(set(c.properties) <= set(properties.KNOWN) for c in declared)


PADDED_WITH_ZERO = textwrap.dedent(
    """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _rows(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_C: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_C)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=mask, other=0.0)
        x = x.to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        p = (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty)
        tl.store(out_ptr + row * n_cols + cols, p, mask=mask)


    def softmax(x, *, num_warps=4):
        rows, cols = x.shape
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        if rows:
            _rows[(rows,)](x, out, cols, x.stride(0), x.stride(1), BLOCK_C=triton.next_power_of_2(cols))
        return out
    """
)


def test_the_command_line_says_what_the_failing_checks_share(tmp_path, capsys, monkeypatch):
    from checks.__main__ import main

    path = tmp_path / "padded.py"
    path.write_text(PADDED_WITH_ZERO)
    monkeypatch.setenv("NO_COLOR", "1")
    argv = ["strided_softmax", "--file", str(path), "--interpret", "--timeout", "0"]
    code = main(argv + ["--check", "basic", "--check", "ragged-widths", "--check", "widest"])
    out = capsys.readouterr().out
    assert code != 0
    assert (
        "Fails only where the width is not a multiple of the tile: look at the last, partial tile: "
        "its masks, its padding value, and whether a program or a loop step reaches it at all." in out
    )


@pytest.mark.parametrize(
    "workshop_id",
    [
        "strided_softmax",
        "split_softmax",
        "softmax_backward",
        "streaming_attention",
        "fused_gemm",
        "online_normalizer",
    ],
)
def test_no_checks_why_blames_one_mistake(workshop_id):
    # a sentence about one mistake is the mistake's why, shown only when its oracle matched
    from checks.judging.mistakes import mistakes_of

    blamed = ("a kernel that converts", "reducing g alone", "a floor division would", "a strict mask (j < i)")
    mistake_whys = {m.why for m in mistakes_of(workshop_id)}
    for case in cases_for(workshop_id):
        assert case.why not in mistake_whys, case.id
        assert not any(phrase in case.why for phrase in blamed), (case.id, case.why)
