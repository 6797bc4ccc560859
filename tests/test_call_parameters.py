"""What separates failing from passing checks over the numbers of their calls
(checks/judging/call_parameters.py), and where it is said."""

from __future__ import annotations

from checks.judging import call_parameters, properties
from checks.judging.records import Record

K, N, M = "K (a's columns)", "N (b's columns)", "M (a's rows)"


def _rec(status, *calls, props=None, id="c"):
    details: dict = {"parameters": [dict(c) for c in calls]} if calls else {}
    if props is not None:
        details["properties"] = list(props)
    return Record(workshop="w", id=id, label=id, status=status, details=details)


def _gemm(m, k, n, **more):
    return {M: m, K: k, N: n, "tile_m": 32, **more}


def test_fails_only_where_k_exceeds_n():
    records = [
        _rec("fail", _gemm(40, 90, 50)),
        _rec("fail", _gemm(100, 33, 17)),
        _rec("pass", _gemm(100, 20, 60), _gemm(8, 64, 64)),
        _rec("pass", _gemm(7, 3, 90)),
    ]
    assert call_parameters.separating(records) == "Fails only where K (a's columns) > N (b's columns)."
    # and the run's sentence says it, since no property separates
    assert properties.separating(records) == "Fails only where K (a's columns) > N (b's columns)."


def test_a_threshold_at_a_power_of_two_comes_with_what_to_look_at():
    records = [
        _rec("fail", _gemm(20, 33, 17)),
        _rec("fail", _gemm(9, 700, 20)),
        _rec("pass", _gemm(70, 16, 100), _gemm(91, 24, 150)),
        _rec("pass", _gemm(5, 0, 40), _gemm(3, 5, 10)),
    ]
    assert call_parameters.separating(records) == (
        f"Fails only where {K} > 32: {call_parameters.PAST_ONE_TILE}."
    )
    # a size that is not a multiple of a tile: the masks
    ragged = [
        _rec("fail", _gemm(20, 48, 17)),
        _rec("fail", _gemm(9, 80, 20)),
        _rec("pass", _gemm(70, 64, 100), _gemm(91, 32, 150)),
        _rec("pass", _gemm(5, 128, 40)),
    ]
    assert call_parameters.separating(ragged) == (
        f"Fails only where {K} is not a multiple of 32: {call_parameters.MASKS}."
    )


def _rows(status, *shapes):
    return _rec(status, *({"x's rows": r, "x's columns": c} for r, c in shapes))


def test_a_width_past_a_limit_or_rows_not_a_multiple_of_a_small_block():
    wide = [_rows("fail", (6, 2000)), _rows("fail", (9, 1500)), _rows("pass", (6, 1000), (4, 64))]
    wide.append(_rows("pass", (12, 512)))
    assert call_parameters.separating(wide) == (
        f"Fails only where x's columns > 1024: {call_parameters.PAST_ONE_TILE}."
    )
    # the rows separate as simply (> 8): which of the two matters is unknown, nothing is said
    both = [_rows("fail", (16, 2000)), _rows("fail", (20, 1500)), _rows("pass", (8, 1000), (4, 64))]
    both.append(_rows("pass", (2, 512)))
    assert call_parameters.separating(both) is None
    rows = [_rows("fail", (6, 1000)), _rows("fail", (9, 64)), _rows("pass", (8, 1000), (4, 64))]
    rows.append(_rows("pass", (12, 512)))
    assert call_parameters.separating(rows) == (
        f"Fails only where the number of x's rows is not a multiple of 4: {call_parameters.MASKS}."
    )


def test_nothing_is_said_where_failing_and_passing_overlap():
    records = [
        _rec("fail", _gemm(40, 90, 50)),
        _rec("fail", _gemm(100, 33, 17)),
        _rec("pass", _gemm(40, 90, 50)),  # the same numbers passed: no predicate can tell them apart
        _rec("pass", _gemm(7, 3, 90)),
    ]
    assert call_parameters.separating(records) is None


def test_one_failing_check_alone_is_a_coincidence_not_a_pattern():
    lone = [
        _rec("fail", _gemm(40, 90, 50)),
        _rec("pass", _gemm(100, 20, 60), _gemm(8, 64, 64)),
        _rec("pass", _gemm(7, 3, 90)),
    ]
    assert call_parameters.separating(lone) is None
    # and a second failing check makes it one
    assert call_parameters.separating(lone + [_rec("fail", _gemm(100, 33, 17))]) is not None
    # so is a failing check without numbers, or too few passing checks with them
    assert call_parameters.separating(lone + [_rec("fail")]) is None
    few = [_rec("fail", _gemm(40, 90, 50)), _rec("fail", _gemm(100, 33, 17)), lone[1], _rec("pass")]
    assert call_parameters.separating(few) is None


def test_a_separating_property_wins_over_the_numbers():
    records = [
        _rec("fail", _gemm(40, 90, 50), props=["ragged"]),
        _rec("fail", _gemm(100, 33, 17), props=["ragged"]),
        _rec("pass", _gemm(100, 20, 60), _gemm(8, 64, 64), props=["tile-multiple"]),
        _rec("pass", _gemm(7, 3, 90), props=["tile-multiple"]),
    ]
    assert properties.separating(records).startswith("Fails only where the width is not a multiple")


def test_strides_bools_and_the_names_of_a_call():
    import torch

    from checks.judging.mistakes import Call

    def matmul_bias_relu(a, b, bias, *, group_m=4, tile_m=32):
        return None

    class Module:
        pass

    module = Module()
    module.matmul_bias_relu = matmul_bias_relu  # type: ignore[attr-defined]
    a, b, bias = torch.zeros(5, 33), torch.zeros(40, 33).t(), torch.zeros(40)
    call = Call("matmul_bias_relu", (a, b, bias), {"tile_m": 16}, None)
    numbers = call_parameters.numbers_of(call, "fused_gemm", module)
    assert numbers == {
        M: 5,
        K: 33,
        "a's row stride": 33,
        "a's column stride": 1,
        N: 40,  # b's rows are K, and bias's length is N: named once
        "b's row stride": 1,
        "b's column stride": 33,
        "bias's stride": 1,
        "group_m": 4,  # the default, read off the signature
        "tile_m": 16,
    }
    # without the module or the workshop: names by position, sizes by the tensor's name
    bare = call_parameters.numbers_of(Call("f", (torch.zeros(3, 1), True), {}, None, ("x", "causal")))
    assert bare == {"x's rows": 3, "x's columns": 1, "x's row stride": 1, "causal": True}
    stride = "b's column stride"
    records = [
        _rec("fail", {stride: 33, "causal": True}),
        _rec("fail", {stride: 70, "causal": False}),
        _rec("pass", {stride: 1, "causal": True}),
        _rec("pass", {stride: 1, "causal": False}),
    ]
    assert call_parameters.separating(records) == (
        f"Fails only where b's column stride is not 1: {call_parameters.STRIDES}."
    )


def test_a_k_loop_that_stops_after_one_tile_fails_only_where_k_is_past_one_tile(tmp_path):
    """fused_gemm with ``range(0, 1)`` for the K loop: right while K fits one tile of 32,
    wrong beyond.  No property separates (every size is ragged); K does."""
    from checks.judging.engine import run_checks
    from workshops import catalog

    answer = catalog.get("fused_gemm").solution.read_text(encoding="utf-8")
    loop = "for k in range(0, tl.cdiv(K, BLOCK_K)):"
    assert answer.count(loop) == 1
    path = tmp_path / "one_k_tile.py"
    path.write_text(answer.replace(loop, "for k in range(0, 1):"))
    only = ["basic-fp16", "k-zero", "offset-views", "ragged-tails", "large-values", "long-k"]
    records = {r.id: r for r in run_checks("fused_gemm", path, interpret=True, only=only)}
    failed = {i for i, r in records.items() if r.status == "fail"}
    assert failed == {"ragged-tails", "large-values", "long-k"}
    assert records["long-k"].details["parameters"] == [
        {
            M: 9,
            K: 700,
            "a's row stride": 700,
            "a's column stride": 1,
            N: 20,
            "b's row stride": 20,
            "b's column stride": 1,
            "bias's stride": 1,
            "group_m": 4,
            "tile_m": 32,
        }
    ]
    assert properties.separating(list(records.values())) == (
        f"Fails only where {K} > 32: {call_parameters.PAST_ONE_TILE}."
    )
