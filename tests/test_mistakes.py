"""Mistake oracles: a failing check names the classic mistake the answer makes.

Each oracle reproduces its kept wrong answer's output and not the reference answer's;
the end-to-end record of a kept wrong answer carries the mistake; an unrelated error
gets no diagnosis, and a passing check never does.  GPU workshops run in Triton's
interpreter (conftest sets TRITON_INTERPRET=1); inputs stay small."""

import json
import math
from pathlib import Path

import pytest
import torch

from checks.authoring import mistake_problems, named_mistakes, unnamed_mistake
from checks.judging import mistakes
from checks.judging.case import Case, CheckFailed
from checks.judging.engine import cases_for, load_exercise, run_case, run_checks
from checks.judging.mistakes import Call, Recorder, matching
from checks.judging.mistakes.compare import Partial
from workshops import catalog

FP16, BF16 = torch.float16, torch.bfloat16


def _randn(*shape, scale=1.0, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def _with(t, index, value):
    t = t.clone()
    t[index] = value
    return t


def _rising_transpose():
    ramp = torch.arange(2100, dtype=torch.float64) * 0.01
    return (ramp[:, None] + _randn(2100, 4, scale=0.1, dtype=torch.float64)).float().t()


def _probs(rows, cols, dtype=torch.float32, seed=0):
    return torch.softmax(_randn(rows, cols, seed=seed, dtype=torch.float64), dim=-1).to(dtype)


def _qkv(n, d, seed=0):
    x = _randn(3, n, d, seed=seed, dtype=torch.float64)
    return tuple(x[i].to(FP16).clone() for i in range(3))


def _large_scores():
    q, k, v = _qkv(70, 16)
    q, k = torch.zeros_like(q), torch.zeros_like(k)
    q[:, :2] = 250.0
    k[:, :2] = (250.0 - 0.125 * (torch.arange(70) % 16)).to(FP16)[:, None]
    return (q, k, v), {"causal": False, "block_n": 32}


def _values_near_3000(n=40, causal=False, block_n=32):
    """Equal scores and values near 3000: a tile's p @ v passes fp16's 65,504."""
    q, _, v = _qkv(n, 16)
    v = (3000.0 + 200.0 * v.double().clamp(-2.0, 2.0)).to(FP16)
    return (q, torch.zeros_like(q), v), {"causal": causal, "block_n": block_n}


def _faint_keys():
    """One dominant key, then 1023 keys with weights exp(-11.14) ~ 1.45e-5 and values near
    100: a tile of 32 adds 4.6e-4 to l = 1, under half of fp16's spacing there."""
    n, d = 1024, 16
    q, k = torch.zeros(n, d, dtype=torch.float64), torch.zeros(n, d, dtype=torch.float64)
    q[:, 0], k[0, 0] = 4.0, 11.140625
    v = 100.0 + 10.0 * _randn(n, d, dtype=torch.float64)
    v[0] = 50.0 * torch.where(torch.arange(d) % 2 == 0, 1.0, -1.0)
    return tuple(t.to(FP16) for t in (q, k, v)), {"causal": True, "block_n": 32}


def _maxima_between_fp16_values():
    """fp32 logits near 1000 whose chunk maxima lie a different fraction between fp16's
    values 1000 and 1000.5 in each chunk of 256."""
    g = torch.Generator().manual_seed(0)
    noise = torch.rand((2, 600), generator=g, dtype=torch.float64) - 1.0
    lift = 0.05 + 0.4 * torch.rand((2, 3), generator=g, dtype=torch.float64)
    return ((1000.0 + noise + lift.repeat_interleave(256, dim=1)[:, :600]).float(),), {"chunk_size": 256}


def _gemm(m, n, k, seed=0):
    g = torch.Generator().manual_seed(seed)
    a, b, bias = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((m, k), (k, n), (n,)))
    return (a.to(FP16), b.to(FP16), bias.to(FP16)), {}


def _one_rounding():
    a = torch.zeros(2, 16, dtype=FP16)
    a[:, 0], a[:, 1] = 2048.0, 1.0  # acc = 2049: fp16 rounds it to 2048
    return (a, torch.ones(16, 16, dtype=FP16), torch.full((16,), -2048.0, dtype=FP16)), {}


def _partial_sums():
    a = torch.full((24, 64), 250.0, dtype=FP16)
    b = torch.full((64, 20), 250.0, dtype=FP16)
    b[32:] = -250.0  # partial sums reach 2e6 before the second half cancels them
    return (a, b, torch.ones(20, dtype=FP16)), {}


# (workshop, kept wrong answer, the mistake it makes, function, inputs that expose it)
ORACLE_CASES = [
    (
        "strided_softmax",
        "unit_column_stride",
        "unit-column-stride",
        "softmax",
        lambda: ((_randn(20, 7).t(),), {}),
    ),
    (
        "strided_softmax",
        "input_strides_for_output",
        "input-strides-for-output",
        "softmax",
        lambda: ((_randn(9, 6).t(),), {}),
    ),
    (
        "strided_softmax",
        "tiled_stale_denominator",
        "stale-running-sum",
        "softmax",
        lambda: ((_rising_transpose(),), {}),
    ),
    (
        "strided_softmax",
        "half_through_fp16",
        "half-through-fp16",
        "softmax",
        # row 0 past fp16's range; row 1 near 100, where exp(x) would overflow fp32 but
        # exp(x - max) does not: only the trip through fp16 explains the output
        lambda: (
            (_with(_randn(3, 40, dtype=BF16), (0, 3), 7e4) + torch.tensor([[0.0], [100.0], [0.0]]).to(BF16),),
            {},
        ),
    ),
    (
        "strided_softmax",
        "max_not_subtracted",
        "max-not-subtracted",
        "softmax",
        lambda: ((_randn(4, 50, scale=3.0) + 1000.0,), {}),
    ),
    (
        "softmax_backward",
        "reduce_g_alone",
        "reduce-g-alone",
        "backward",
        lambda: ((_probs(4, 37), _randn(4, 37, seed=1)), {}),
    ),
    (
        "softmax_backward",
        "unit_column_stride",
        "unit-column-stride",
        "backward",
        lambda: ((_probs(9, 5).t(), _randn(9, 5, seed=1).t()), {}),
    ),
    (
        "softmax_backward",
        "half_precision_dot",
        "half-precision-dot",
        "backward",
        lambda: ((_probs(4, 16, FP16), (1000 + _randn(4, 16, seed=1)).to(FP16)), {}),
    ),
    (
        "softmax_backward",
        "half_through_fp16",
        "half-through-fp16",
        "backward",
        lambda: ((_probs(6, 40, BF16), _randn(6, 40, seed=1, scale=7e4, dtype=BF16)), {}),
    ),
    (
        "split_softmax",
        "concat_local_normalized",
        "local-normalization",
        "softmax",
        lambda: ((_randn(2, 600),), {"chunk_size": 256}),
    ),
    (
        "split_softmax",
        "merge_without_rescale",
        "merge-without-rescale",
        "softmax",
        lambda: ((torch.arange(785.0).repeat(2, 1) * 0.02,), {"chunk_size": 256}),
    ),
    (
        "split_softmax",
        "zero_padding_in_stats",
        "zero-padding-in-stats",
        "softmax",
        lambda: ((_randn(2, 300),), {"chunk_size": 256}),
    ),
    # scratch_bytes rounding down is not here: on every ragged N one call of it gives what
    # leaving out the merged pair gives, so only a second shape names it (worked-scratch's
    # record below, and tests/test_relations_engine.py).
    (
        "split_softmax",
        "half_through_fp16",
        "half-through-fp16",
        "softmax",
        lambda: ((_with(_randn(2, 300, dtype=BF16), (1, 7), 7e4),), {"chunk_size": 256}),
    ),
    (
        "streaming_attention",
        "causal_excludes_diagonal",
        "causal-excludes-diagonal",
        "attention",
        lambda: (_qkv(40, 16), {"causal": True, "block_n": 32}),
    ),
    (
        "streaming_attention",
        "rescale_l_not_acc",
        "accumulator-not-rescaled",
        "attention",
        lambda: (_qkv(70, 16), {"causal": False, "block_n": 32}),
    ),
    (
        "streaming_attention",
        "tail_scores_not_masked",
        "tail-scores-not-masked",
        "attention",
        lambda: (_qkv(40, 16), {"causal": False, "block_n": 32}),
    ),
    ("streaming_attention", "fp16_scores", "scores-in-fp16", "attention", _large_scores),
    ("streaming_attention", "fp16_accumulator", "accumulator-in-fp16", "attention", _values_near_3000),
    ("streaming_attention", "fp16_denominator", "denominator-in-fp16", "attention", _faint_keys),
    ("split_softmax", "fp16_scratch", "statistics-in-fp16", "softmax", _maxima_between_fp16_values),
    ("fused_gemm", "bias_by_row", "bias-by-row", "matmul_bias_relu", lambda: _gemm(20, 24, 16)),
    ("fused_gemm", "cast_before_epilogue", "cast-before-epilogue", "matmul_bias_relu", _one_rounding),
    ("fused_gemm", "fp16_accumulator", "fp16-accumulator", "matmul_bias_relu", _partial_sums),
    ("fused_gemm", "fixed_group_size", "fixed-group-size", "tile_of", lambda: ((5, 3, 2, 2), {})),
    (
        "fused_gemm",
        "fixed_group_size",
        "fixed-group-size",
        "matmul_bias_relu",
        lambda: (_gemm(70, 100, 16)[0], {"tile_m": 32, "group_m": 4}),
    ),
    (
        "online_normalizer",
        "raw_denominator",
        "raw-denominator",
        "merge",
        lambda: (((2.0, 2.0), (4.0, 1.0)), {}),
    ),
    (
        "online_normalizer",
        "raw_denominator",
        "raw-denominator",
        "streaming_softmax",
        lambda: (([3.0, -1.0, 7.0, 2.0, 9.5], 2), {}),
    ),
    (
        "online_normalizer",
        "empty_nan",
        "empty-merge-nan",
        "merge",
        lambda: (((-math.inf, 0.0), (-math.inf, 0.0)), {}),
    ),
]

_LOADED: dict = {}


def _module(workshop_id, name):
    """The reference answer ('solution') or a kept wrong answer, loaded once."""
    w = catalog.get(workshop_id)
    path = w.solution if name == "solution" else w.folder / "wrong" / f"{name}.py"
    if path not in _LOADED:
        _LOADED[path] = load_exercise(path)
    return _LOADED[path]


def _call(workshop_id, name, function, args, kwargs):
    return Call(function, args, dict(kwargs), getattr(_module(workshop_id, name), function)(*args, **kwargs))


@pytest.mark.parametrize(
    "workshop_id, wrong, mistake_id, function, inputs",
    ORACLE_CASES,
    ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in ORACLE_CASES],
)
def test_each_oracle_matches_its_kept_wrong_answer_and_not_the_reference(
    workshop_id, wrong, mistake_id, function, inputs
):
    oracles = mistakes.oracles_of(workshop_id)
    (mistake,) = [m for m in oracles.MISTAKES if m.id == mistake_id and m.function == function]
    args, kwargs = inputs()
    bad = _call(workshop_id, wrong, function, args, kwargs)
    good = _call(workshop_id, "solution", function, args, kwargs)
    candidates = mistakes.candidates_of(mistake.oracle(bad))
    assert candidates, "the mistake should apply to these inputs"
    assert any(oracles.agrees(bad, c) for c in candidates), "the oracle reproduces the wrong answer"
    assert not oracles.agrees(bad, oracles.right(bad)), "the wrong answer is wrong here"
    assert oracles.agrees(good, oracles.right(good)), "the reference answer is right here"
    # An oracle of values never matches the reference; one that leaves the never-written
    # elements open (a Partial) holds right values elsewhere, so there the diagnosis's
    # own rule, "and the right computation does not match", is what keeps it quiet.
    full = [c for c in mistakes.candidates_of(mistake.oracle(good)) if not isinstance(c, Partial)]
    assert not any(oracles.agrees(good, c) for c in full)
    found = matching(oracles, bad)
    assert found is not None and found.id == mistake_id
    assert matching(oracles, good) is None


def test_meta_json_names_a_mistake_for_each_classic_wrong_answer():
    for w in catalog.workshops():
        named = named_mistakes(w)
        known = {m.id for m in mistakes.mistakes_of(w.id)}
        assert named and set(named.values()) <= known, w.id
        assert set(named) <= {p.name for p in w.wrong_versions()}, w.id
        assert mistake_problems(w) == [], w.id
        # the shape of "wrong_answers" is unchanged: file -> list of check ids
        meta = json.loads((w.folder / "meta.json").read_text())
        assert all(isinstance(v, list) for v in meta["wrong_answers"].values())


def test_every_mistake_is_fully_described_and_names_a_real_lesson_section():
    for w in catalog.workshops():
        headings = {line[3:].strip() for line in w.lesson.splitlines() if line.startswith("## ")}
        functions = set(w.functions) | set(getattr(mistakes.oracles_of(w.id), "ALSO_RECORDED", ()))
        for m in mistakes.mistakes_of(w.id):
            assert m.section in headings, (w.id, m.id, m.section)
            assert m.function in functions, (w.id, m.id)
            assert all(getattr(m, key).strip() for key in mistakes.DETAIL_KEYS), (w.id, m.id)
            assert "FIGURES" not in m.why and "reference course" not in m.why


# (workshop, kept wrong answer, a check that rejects it, the mistake its record names)
END_TO_END = [
    ("strided_softmax", "unit_column_stride", "worked-transpose", "unit-column-stride"),
    ("softmax_backward", "reduce_g_alone", "worked-example", "reduce-g-alone"),
    ("streaming_attention", "causal_excludes_diagonal", "causal-row-zero", "causal-excludes-diagonal"),
    ("fused_gemm", "fixed_group_size", "worked-tile-map", "fixed-group-size"),
    ("split_softmax", "floor_tile_count", "worked-scratch", "floor-chunk-count"),
    ("online_normalizer", "raw_denominator", "worked-merge", "raw-denominator"),
    ("streaming_attention", "fp16_accumulator", "fp32-accumulator", "accumulator-in-fp16"),
    ("streaming_attention", "fp16_denominator", "fp32-denominator", "denominator-in-fp16"),
    ("split_softmax", "fp16_scratch", "fp32-statistics", "statistics-in-fp16"),
]


@pytest.mark.parametrize(
    "workshop_id, wrong, check_id, mistake_id", END_TO_END, ids=[f"{c[0]}-{c[1]}" for c in END_TO_END]
)
def test_the_record_of_a_kept_wrong_answer_names_its_mistake(workshop_id, wrong, check_id, mistake_id):
    w = catalog.get(workshop_id)
    path = w.folder / "wrong" / f"{wrong}.py"
    unnamed = run_checks(workshop_id, path, interpret=True, only=[check_id])
    (rec,) = unnamed
    assert rec.status == "fail"
    detail = rec.details["mistake"]
    assert list(detail) == ["id", "sentence", "where", "section", "why"]
    assert detail["id"] == mistake_id
    assert (
        rec.message.startswith(detail["sentence"] + " — ") and len(rec.message) > len(detail["sentence"]) + 10
    )
    assert (rec.why, rec.section) == (detail["why"], detail["section"])
    case_why = {c.id: c.why for c in cases_for(workshop_id)}
    assert rec.why != case_why[check_id]
    assert unnamed_mistake(w, path.name, unnamed) == ""  # the self-check's rule holds
    assert json.loads(json.dumps(rec.to_dict()))["details"]["mistake"] == detail


def test_the_self_check_rule_reports_a_mistake_no_check_named():
    w = catalog.get("online_normalizer")
    records = run_checks(w.id, w.folder / "wrong" / "raw_denominator.py", only=["worked-merge"])
    for r in records:
        r.details.pop("mistake")
    assert unnamed_mistake(w, "raw_denominator.py", records) == "raw-denominator"
    assert unnamed_mistake(w, "empty_nan.py", []) == "empty-merge-nan"


def test_a_broken_mistakes_map_is_reported(tmp_path):
    import dataclasses
    import shutil

    w = catalog.get("online_normalizer")
    broken = tmp_path / w.id
    shutil.copytree(w.folder, broken)
    meta = json.loads((broken / "meta.json").read_text())
    meta["mistakes"] = {"raw_denominator.py": "no-such-mistake", "gone.py": "raw-denominator"}
    (broken / "meta.json").write_text(json.dumps(meta))
    problems = "\n".join(mistake_problems(dataclasses.replace(w, folder=broken)))
    assert "'no-such-mistake'" in problems and "wrong/gone.py, which does not exist" in problems


def _tweaked(tmp_path, workshop_id, old, new):
    w = catalog.get(workshop_id)
    text = w.solution.read_text()
    assert text.count(old) == 1
    path = tmp_path / f"{workshop_id}.py"
    path.write_text(text.replace(old, new))
    return path


def test_an_unrelated_error_gets_no_diagnosis(tmp_path):
    # A plausible-looking bug that is none of the classic mistakes: every probability 1.5x.
    path = _tweaked(
        tmp_path, "strided_softmax", "numerators * (1.0 / denominator)", "numerators * (1.5 / denominator)"
    )
    (rec,) = run_checks("strided_softmax", path, interpret=True, only=["basic"])
    assert rec.status == "fail" and "mistake" not in rec.details
    case = {c.id: c for c in cases_for("strided_softmax")}
    assert (rec.why, rec.section) == (case["basic"].why, case["basic"].section)
    path = _tweaked(
        tmp_path, "online_normalizer", "l_left * scale_left + l_right * scale_right", "l_left + l_right * 1.5"
    )
    (rec,) = run_checks("online_normalizer", path, only=["worked-merge"])
    assert rec.status == "fail" and "mistake" not in rec.details


def test_a_passing_check_is_never_diagnosed():
    w = catalog.get("online_normalizer")
    mod = Recorder(load_exercise(w.folder / "wrong" / "raw_denominator.py"), w.functions)

    def quiet(m, ctx):
        m.merge((2.0, 2.0), (4.0, 1.0))  # the raw merge's answer, but the check passes

    rec = run_case(
        Case("quiet", "calls the raw merge and passes", quiet),
        mod,
        Path(w.folder),
        workshop_id=w.id,
        device="cpu",
        interpret=False,
    )
    assert rec.status == "pass" and "mistake" not in rec.details and len(mod.calls) == 1

    def loud(m, ctx):
        m.merge((2.0, 2.0), (4.0, 1.0))
        raise CheckFailed("wrong")

    rec = run_case(
        Case("loud", "fails", loud), mod, Path(w.folder), workshop_id=w.id, device="cpu", interpret=False
    )
    assert rec.status == "fail" and rec.details["mistake"]["id"] == "raw-denominator"
    records = run_checks(w.id, w.solution, only=["worked-merge", "partition-invariance"])
    assert all(r.status == "pass" and "mistake" not in r.details for r in records)


def test_the_recorder_keeps_only_the_last_calls_of_one_check_and_the_missing_function_message(tmp_path):
    w = catalog.get("online_normalizer")
    mod = Recorder(load_exercise(w.solution), w.functions)
    for i in range(mistakes.RECENT_CALLS + 2):
        mod.summarize([float(i)])
    assert [c.args[0] for c in mod.calls] == [[float(i)] for i in range(2, mistakes.RECENT_CALLS + 2)]
    assert mod.EMPTY == (-math.inf, 0.0) and not mod.calls[-1].kwargs  # other attributes pass through
    mod.forget()
    assert not mod.calls
    path = tmp_path / "partial.py"
    path.write_text(w.solution.read_text().replace("def streaming_softmax(", "def streaming_softmax_later("))
    (rec,) = run_checks(w.id, path, only=["empty-input"])
    assert rec.status == "fail" and "does not define 'streaming_softmax'" in rec.message


def test_a_broken_oracle_means_no_diagnosis_not_a_broken_check(monkeypatch):
    oracles = mistakes.oracles_of("online_normalizer")

    def broken(call):
        raise ZeroDivisionError("oracle bug")

    first = oracles.MISTAKES[0]
    monkeypatch.setattr(
        oracles,
        "MISTAKES",
        [mistakes.Mistake(**{**first.details(), "function": first.function, "oracle": broken})],
    )
    call = Call("merge", ((2.0, 2.0), (4.0, 1.0)), {}, (4.0, 3.0))
    assert mistakes.diagnose("online_normalizer", [call]) is None
    assert mistakes.diagnose("no_such_workshop", [call]) is None


def test_two_mistakes_that_explain_a_result_equally_well_name_neither():
    # bf16 logits near 70,000 are NaN whether the kernel goes through fp16 or forgets to
    # subtract the maximum: the evidence cannot tell, so the check keeps its own words.
    x = torch.full((2, 8), 7e4, dtype=BF16)
    call = _call("strided_softmax", "half_through_fp16", "softmax", (x,), {})
    oracles = mistakes.oracles_of("strided_softmax")
    explaining = {
        m.id
        for m in oracles.MISTAKES
        if any(oracles.agrees(call, c) for c in mistakes.candidates_of(m.oracle(call)))
    }
    assert explaining == {"half-through-fp16", "max-not-subtracted"}
    assert matching(oracles, call) is None


def test_an_fp16_accumulator_is_inf_exactly_where_the_kernels_overflows():
    # Causal: row i sums i + 1 values near 3000, so the first rows stay under 65,504 and
    # the later ones overflow, each column at its own row; the oracle rounds acc to fp16
    # after each tile as the kernel does, so its infinities fall on the same elements.
    args, kwargs = _values_near_3000(n=64, causal=True, block_n=64)
    bad = _call("streaming_attention", "fp16_accumulator", "attention", args, kwargs)
    oracles = mistakes.oracles_of("streaming_attention")
    (mistake,) = [m for m in oracles.MISTAKES if m.id == "accumulator-in-fp16"]
    expected = mistake.oracle(bad)
    overflowed = torch.isinf(expected)
    assert not bool(overflowed[:16].any()) and bool(overflowed[-16:].all())
    assert torch.equal(torch.isinf(bad.result.double()), overflowed)
    assert oracles.agrees(bad, expected) and matching(oracles, bad) == mistake


def test_an_infinite_expected_value_is_matched_only_by_the_same_infinity():
    from checks.judging.mistakes.compare import agrees

    expected = torch.tensor([math.inf, -math.inf, 1.0], dtype=torch.float64)
    assert agrees(torch.tensor([math.inf, -math.inf, 1.0], dtype=FP16), expected)
    assert not agrees(torch.tensor([3000.0, -math.inf, 1.0], dtype=FP16), expected)
    assert not agrees(torch.tensor([-math.inf, -math.inf, 1.0], dtype=FP16), expected)
    assert not agrees(torch.tensor([math.nan, -math.inf, 1.0], dtype=FP16), expected)


def test_an_oracle_that_would_read_past_the_storage_predicts_nothing():
    # NaN for NaN would match whatever garbage a kernel read there
    from checks.judging.mistakes.compare import gathered, gathered_within

    base = torch.arange(12.0).reshape(3, 4)
    view = base[:, ::2]  # strides (4, 2): read with unit column stride it stays inside
    assert torch.equal(gathered_within(view, (4, 1)), gathered(view, (4, 1)))
    assert gathered_within(view, (6, 1)) is None  # row 2 would read elements 12 and 13 of 12


def test_g_read_with_ys_strides_is_not_called_a_unit_column_stride(tmp_path):
    from checks.judging.engine import run_checks

    answer = (catalog.get("softmax_backward").folder / "solution.py").read_text(encoding="utf-8")
    own = "g_offsets = rows[:, None] * g_stride_row + cols[None, :] * g_stride_col"
    assert own in answer
    path = tmp_path / "g_with_y_strides.py"
    path.write_text(answer.replace(own, own.replace("g_stride", "y_stride")))
    (record,) = run_checks("softmax_backward", path, interpret=True, only=["strided-slices"])
    assert record.status == "fail"
    assert "column stride were 1" not in record.message
    assert "unit-column-stride" not in str(record.details)
    # what holds instead: NaN where the views' buffer is NaN, read at a wrong address
    assert record.details["relation"]["id"] == "not-finite"
    assert "y and grad_output are views inside a buffer of NaN" in record.message


def test_a_dot_summed_down_the_columns_of_a_packed_block_is_named(tmp_path):
    """A mistake outside the kept wrong answers: the reference's packed rows reduced over
    axis 0. Each column's sum over the program's rows stands in for each row's dot."""
    from checks.judging.engine import run_checks

    answer = (catalog.get("softmax_backward").folder / "solution.py").read_text(encoding="utf-8")
    own = "dot = tl.sum(y * g, axis=1)"
    assert own in answer
    path = tmp_path / "dot_across_rows.py"
    broadcast = "dx = y * (g - dot[:, None])"
    assert broadcast in answer
    path.write_text(
        answer.replace(own, own.replace("axis=1", "axis=0")).replace(broadcast, "dx = y * (g - dot[None, :])")
    )
    records = run_checks(
        "softmax_backward", path, interpret=True, only=["worked-example", "matches-autograd"]
    )
    assert [r.status for r in records] == ["fail", "fail"]
    assert "sums y * g across the rows of its block (axis 0)" in records[0].message
    assert records[0].details["mistake"]["id"] == "dot-across-rows"


def test_a_padding_mistake_on_a_uniform_row_is_not_called_misplaced_stores(tmp_path):
    # broadcast-column gives uniform rows: stores at the input's strides would misplace values
    # equal to the right ones, so that mistake cannot be told from what the output shows
    from checks.judging.engine import run_checks

    answer = (catalog.get("strided_softmax").folder / "solution.py").read_text(encoding="utf-8")
    row_load = 'x = tl.load(x_addrs, mask=in_row, other=-float("inf"))'
    assert row_load in answer
    path = tmp_path / "zero_padding.py"
    path.write_text(answer.replace(row_load, row_load.replace('-float("inf")', "0.0")))
    (record,) = run_checks("strided_softmax", path, interpret=True, only=["broadcast-column"])
    assert record.status == "fail"
    assert "input-strides-for-output" not in str(record.details.get("mistake"))


class _TwoExplanations:
    """A mistakes module whose two mistakes both explain one result: one predicts every
    element, the other only the first row (the rest left open, as for rows never written)."""

    def __init__(self, second_open: bool):
        values = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
        first_row = torch.tensor([[True, True], [False, False]])
        second = Partial(values, first_row) if second_open else values
        self.MISTAKES = [
            mistakes.Mistake("exact", "f", "s", "w", "sec", "why", oracle=lambda call: values),
            mistakes.Mistake("open", "f", "s", "w", "sec", "why", oracle=lambda call: second),
        ]

    def right(self, call):
        return torch.zeros(2, 2, dtype=torch.float64)

    def agrees(self, call, expected):
        from checks.judging.mistakes.compare import agrees

        return agrees(call.result, expected)


def test_a_mistake_that_predicts_every_element_outweighs_one_that_leaves_rows_open():
    call = Call("f", (), {}, torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert matching(_TwoExplanations(second_open=True), call).id == "exact"
    assert matching(_TwoExplanations(second_open=False), call) is None  # equally good: neither


def test_fp16_l_names_its_mistake_even_when_its_wrong_rows_look_like_a_capped_grid():
    # With this seed the faint keys push rows 672.. (a multiple of 16) past the tolerance
    # and leave the rows before right: a capped grid's signature too, but the fp16-l
    # oracle predicts those rows' values, so it is the one named.
    w = catalog.get("streaming_attention")
    mod = Recorder(load_exercise(w.folder / "wrong" / "fp16_denominator.py"), w.functions)
    (case,) = [c for c in cases_for(w.id) if c.id == "fp32-denominator"]
    rec = run_case(case, mod, Path(w.folder), workshop_id=w.id, device="cpu", interpret=True, seed=1)
    oracles = mistakes.oracles_of(w.id)
    (capped,) = [m for m in oracles.MISTAKES if m.id == "capped-grid"]
    assert any(oracles.agrees(mod.calls[-1], c) for c in mistakes.candidates_of(capped.oracle(mod.calls[-1])))
    assert rec.status == "fail" and rec.details["mistake"]["id"] == "denominator-in-fp16"


def test_fp16_scratch_on_bf16_overflow_is_named_as_bf16_through_fp16():
    # A bf16 chunk maximum is an fp16 value unless it overflows, and then fp16 scratch
    # gives the same NaN rows as loading the logits through fp16: one mistake names both.
    x = _with(_randn(2, 300, dtype=BF16), (1, 7), 7e4)
    call = _call("split_softmax", "fp16_scratch", "softmax", (x,), {"chunk_size": 256})
    found = matching(mistakes.oracles_of("split_softmax"), call)
    assert found is not None and found.id == "half-through-fp16" and "(m, l)" in found.sentence


def test_fp16_accumulation_is_named_as_a_gpu_and_as_the_interpreter_compute_it():
    """fp16-partial-sums: the interpreter's fp16 tl.dot per K block rounds each block to
    +/-inf and their sum is NaN; a GPU chains 16-deep tensor-core steps through the fp16
    accumulator and stays at inf. Either output names the fp16 accumulator."""
    from checks.judging.mistakes import Call, fused_gemm as oracles, matching

    M, N, K = 24, 20, 64
    sign = torch.where(torch.arange(K) < K // 2, 1.0, -1.0).double()
    a = torch.full((M, K), 250.0, dtype=torch.float64)
    b = 250.0 * sign[:, None].expand(K, N).clone()
    b[K // 2 - 1, :] += 2.0
    bias = torch.linspace(-1.0, 1.0, N, dtype=torch.float64)
    a, b, bias = (t.half() for t in (a, b, bias))
    for value in (float("inf"), float("nan")):
        got = torch.full((M, N), value, dtype=torch.float16)
        found = matching(oracles, Call("matmul_bias_relu", (a, b, bias), {}, got))
        assert found is not None and found.id == "fp16-accumulator", value


def test_a_later_check_names_a_mistake_only_if_it_explains_the_first_failure_too(monkeypatch):
    # A learner with another bug: the first failing check's result is not what "doubled"
    # predicts, so a later check whose numbers happen to fit "doubled" does not name it.
    import types

    doubled = mistakes.Mistake(
        "doubled", "f", "Your f doubles it.", "f", "The contract", "why", oracle=lambda c: 2 * c.args[0]
    )
    module = types.SimpleNamespace(
        MISTAKES=[doubled], right=lambda c: c.args[0], agrees=lambda c, v: abs(c.result - v) < 1e-9
    )
    monkeypatch.setattr(mistakes, "oracles_of", lambda workshop_id: module)
    later = [Call("f", (3.0,), {}, 6.0)]  # fits "doubled"
    assert mistakes.diagnose("w", later) is doubled
    assert mistakes.diagnose("w", later, earlier=Call("f", (1.0,), {}, 2.0)) is doubled  # it explains both
    assert mistakes.diagnose("w", later, earlier=Call("f", (1.0,), {}, -5.0)) is None  # another bug
    assert mistakes.diagnose("w", later, earlier=Call("g", (1.0,), {}, -5.0)) is doubled  # another function

    recorder = Recorder(types.SimpleNamespace(f=lambda x: -5.0), ["f"])
    recorder.f(1.0)
    recorder.note_failure()
    recorder.forget()
    recorder.f(7.0)
    recorder.note_failure()  # only the first failing check's call is kept
    assert recorder.first_failing == Call("f", (1.0,), {}, -5.0)


@pytest.mark.parametrize(
    "old, new, mistake_id",
    [
        ("alpha = tl.exp2(m_i - m_new)", "alpha = tl.exp(m_i - m_new)", None),  # the pair, below
        ("qk_scale = (1.0 / math.sqrt(d)) * LOG2_E", "qk_scale = (1.0 / d) * LOG2_E", "scale-one-over-d"),
        ("qk_scale = (1.0 / math.sqrt(d)) * LOG2_E", "qk_scale = 1 / math.sqrt(d)", "exp2-of-natural-scores"),
        ("acc = acc * alpha[:, None]", "acc = tl.zeros_like(acc)", "accumulator-reset-each-tile"),
        (
            "qk_scale = (1.0 / math.sqrt(d)) * LOG2_E",
            "qk_scale = (1.0 / math.sqrt(n)) * LOG2_E",
            "scale-by-length",
        ),
    ],
)
def test_a_wrong_softmax_scale_or_a_reset_accumulator_in_attention_is_named(tmp_path, old, new, mistake_id):
    source = (catalog.get("streaming_attention").folder / "solution.py").read_text()
    assert old in source
    changed = source.replace(old, new)
    if mistake_id is None:  # exp in both places, log2(e) left in the scale
        changed = changed.replace("p = tl.exp2(s - m_new[:, None])", "p = tl.exp(s - m_new[:, None])")
        mistake_id = "exp-of-base-2-scores"
    path = tmp_path / "attention_scale.py"
    path.write_text(changed)
    (rec,) = run_checks("streaming_attention", path, interpret=True, only=["basic"])
    assert rec.status == "fail" and rec.details["mistake"]["id"] == mistake_id, rec.message[:300]


def test_a_first_failure_that_is_not_about_values_does_not_silence_later_diagnoses(tmp_path):
    # no validation at all: the rejection checks fail first, on calls whose right answer is
    # unknown; the classic mistake of the later checks is still named
    source = (catalog.get("softmax_backward").folder / "solution.py").read_text()
    start = source.index("    # --- metadata validation (never scans values) ---")
    end = source.index("    n_rows, n_cols = y.shape")
    wrong = source[:start] + source[end:]
    wrong = wrong.replace("dot = tl.sum(y * g, axis=1)", "dot = tl.sum(g, axis=1)")
    assert wrong.count("dot = tl.sum(g, axis=1)") == 1
    path = tmp_path / "no_validation.py"
    path.write_text(wrong)
    records = run_checks("softmax_backward", path, interpret=True)
    order = [r.id for r in records if r.status == "fail"]
    assert any(i.startswith("rejects-") for i in order[: order.index("matches-autograd")])
    named = {r.id: r.details.get("mistake", {}).get("id") for r in records if r.status == "fail"}
    assert named["matches-autograd"] == "reduce-g-alone", named


SPLIT_MUTANTS = [
    (
        [
            (
                "row_sum = tl.sum(tile_sum * tl.exp(tile_max - row_max), axis=0)",
                "row_sum = tl.max(tile_sum * tl.exp(tile_max - row_max), axis=0)",
            )
        ],
        "merge-takes-max",
    ),
    (
        [
            (
                "chunk_sum = tl.sum(tl.exp(x - chunk_max), axis=0)",
                "chunk_sum = tl.sum(tl.exp2(x - chunk_max), axis=0)",
            )
        ],
        "stats-in-base-2",
    ),
    (
        [
            ("tl.store(partial_ptr + slot, chunk_max)", "tl.store(partial_ptr + slot, CHUNK_SUM)"),
            ("tl.store(partial_ptr + slot + 1, chunk_sum)", "tl.store(partial_ptr + slot + 1, chunk_max)"),
            ("CHUNK_SUM", "chunk_sum"),
        ],
        "stats-swapped",
    ),
]


@pytest.mark.parametrize("edits, mistake_id", SPLIT_MUTANTS, ids=[m for _, m in SPLIT_MUTANTS])
def test_merge_and_statistics_mistakes_of_split_softmax_are_named(tmp_path, edits, mistake_id):
    text = (catalog.get("split_softmax").folder / "solution.py").read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "split_wrong.py"
    path.write_text(text)
    (rec,) = run_checks("split_softmax", path, interpret=True, only=["basic-small"])
    assert rec.status == "fail" and rec.details["mistake"]["id"] == mistake_id, rec.message[:300]
