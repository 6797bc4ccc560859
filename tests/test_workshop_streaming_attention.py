"""A3 streaming attention: the reference passes, the starter is TODO, every kept wrong
answer is caught by the checks named for it (all in Triton's interpreter on the CPU),
plus unit tests of the reasoning the checks rely on."""

import difflib
import math
from types import SimpleNamespace

import pytest
import torch

from checks.judging.case import Context
from checks.judging.engine import load_exercise, run_checks
from checks.judging.tensors import tolerance
from workshops import catalog

WID = "streaming_attention"
W = catalog.get(WID)
GPU_ONLY = {"bf16-basic", "bf16-hazards", "non-default-stream", "heads-past-int32"}
# Checks that exercise only the wrapper's validation: the starter passes them.
VALIDATION_ONLY = {
    "rejects-dtype",
    "rejects-shape",
    "rejects-head-dim",
    "rejects-long-sequence",
    "rejects-causal",
    "rejects-block-n",
    "rejects-layout",
    "rejects-device",
    "rejects-requires-grad",
}


def _by_id(records):
    return {r.id: r for r in records}


def test_meta_matches_the_course_table():
    assert (W.code, W.level, W.device, W.sessions) == ("A3", "advanced", "GPU", "3-5")
    assert W.functions == ("attention",)
    assert W.title == "Streaming attention"
    assert [h.split("\n")[0] for h in W.hints] == [
        "## Hint 1: what does one program remember?",
        "## Hint 2: the same factor, twice",
        "## Hint 3: masks and the loop",
        "## Hint 4: nearly the answer",
    ]


def test_missing_alpha_is_reported_as_the_seven():
    path = W.folder / "wrong" / "rescale_l_not_acc.py"
    rec = run_checks(WID, path, interpret=True, only=["worked-answer"])[0]
    assert rec.status == "fail" and "7.0" in rec.message and "accumulator" in rec.message


# --- the reasoning behind the checks ----------------------------------------------------


def _recurrence(logits, values, rescale_acc=True):
    """The kernel's recurrence in plain Python, one key per tile."""
    m, l, acc = -math.inf, 0.0, 0.0
    for s, v in zip(logits, values):
        m_new = max(m, s)
        alpha = math.exp(m - m_new)
        p = math.exp(s - m_new)
        l = l * alpha + p
        acc = (acc * alpha if rescale_acc else acc) + p * v
        m = m_new
    return acc / l


def test_worked_example_is_six_and_the_missing_alpha_gives_seven():
    logits, values = [0.0, 0.0, math.log(2.0)], [1.0, 3.0, 10.0]
    assert _recurrence(logits, values) == pytest.approx(6.0, rel=1e-15)
    assert _recurrence(logits, values, rescale_acc=False) == pytest.approx(7.0, rel=1e-15)
    # With the largest logit first, the maximum never rises and the bug is invisible.
    assert _recurrence(logits[::-1], values[::-1], rescale_acc=False) == pytest.approx(6.0)


def _emulate(q, k, v, causal, block_n, block_m=64):
    """The kernel's rounding on the CPU: fp32 scores and state, P rounded to the input
    dtype before P@V, one rounding of the output (what the GPU-only bf16 checks expect)."""
    n, d = q.shape
    out = torch.empty(n, d, dtype=q.dtype)
    qk_scale = 1.0 / math.sqrt(d) * math.log2(math.e)
    for m0 in range(0, n, block_m):
        rows = torch.arange(m0, min(n, m0 + block_m))
        qb = q[m0 : m0 + block_m].float()
        m = torch.full((len(rows),), -math.inf)
        l = torch.zeros(len(rows))
        acc = torch.zeros(len(rows), d)
        for n0 in range(0, min(n, m0 + block_m) if causal else n, block_n):
            cols = torch.arange(n0, min(n, n0 + block_n))
            s = qb @ k[n0 : n0 + block_n].float().T * qk_scale
            if causal:
                s = s.masked_fill(cols[None, :] > rows[:, None], -math.inf)
            m_new = torch.maximum(m, s.max(dim=1).values)
            alpha = torch.exp2(m - m_new)
            p = torch.exp2(s - m_new[:, None])
            l = l * alpha + p.sum(dim=1)
            acc = acc * alpha[:, None] + p.to(q.dtype).float() @ v[n0 : n0 + block_n].float()
            m = m_new
        out[m0 : m0 + block_m] = (acc / l[:, None]).to(q.dtype)
    return out


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_tolerances_leave_margin_for_the_kernels_rounding(dtype):
    """The bf16 checks cannot run in the interpreter; emulate their inputs here and make
    sure the kernel's own rounding uses well under the course tolerance."""
    from checks.judging.cases import streaming_attention as C

    tol = tolerance(dtype)
    inputs = [C.make_qkv(Context(case_id="bf16-basic"), n, d, dtype) for n, d in ((100, 64), (129, 16))]
    ctx = Context(case_id="bf16-hazards")
    inputs += [C.growing_max_inputs(ctx, 160, 64, dtype), C.extreme_inputs(ctx, 160, 64, dtype)]
    worst = 0.0
    for q, k, v in inputs:
        for causal in (False, True):
            for block_n in (32, 64):
                want = C.attention_oracle(q, k, v, causal)
                err = (_emulate(q, k, v, causal, block_n).double() - want).abs()
                worst = max(worst, float((err / (tol["atol"] + tol["rtol"] * want.abs())).max()))
    assert worst < 0.5, f"the emulated kernel uses {worst:.2f} of the {dtype} tolerance"


def test_extreme_inputs_reach_plus_minus_1000_and_rise_along_the_sequence():
    from checks.judging.cases import streaming_attention as C

    q, k, v = C.extreme_inputs(Context(case_id="extreme-logits"), 130, 32, torch.float16)
    s = q.double() @ k.double().T / math.sqrt(32)
    assert s.max() > 999 and s.min() < -999
    row_max_by_tile = [float(s[0, j : j + 32].max()) for j in range(0, 130, 32)]
    assert row_max_by_tile == sorted(row_max_by_tile)


def test_causal_future_keys_change_nothing_bit_for_bit_either_way():
    mod = load_exercise(W.solution)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(100, 32, generator=g).half() for _ in range(3))
    k2, v2 = k.clone(), v.clone()
    k2[51:] *= 4
    v2[51:] = 7.0
    for skip in (True, False):
        a = mod.attention(q, k, v, causal=True, skip_future_tiles=skip)
        b = mod.attention(q, k2, v2, causal=True, skip_future_tiles=skip)
        assert torch.equal(a[:51], b[:51])


# --- the benchmark spec -----------------------------------------------------------------


def test_benchmark_spec_describes_the_work():
    from checks.benchmark.shapes import streaming_attention as B

    names = [s["name"] for s in B.SHAPES]
    assert names == [
        "129x32-full",
        "129x32-causal",
        "512x64-full",
        "512x64-causal",
        "2048x64-full",
        "2048x64-causal",
        "b4h16-2048x64-full",
        "b4h16-2048x64-causal",
        "b4h16-4096x64-full",
        "b4h16-4096x64-causal",
    ]
    assert {s["role"] for s in B.SHAPES if s["n"] >= 2048} == {"roofline"}
    batched = B.SHAPES[6]
    assert B.work(batched, torch.float16)["flops"] == 64 * 4 * 2048 * 2048 * 64
    assert B.DTYPES == ["fp16", "bf16"]
    full, causal = B.SHAPES[4], B.SHAPES[5]
    assert B.work(full, torch.float16) == {"bytes": 4 * 2048 * 64 * 2, "flops": 4 * 2048 * 2048 * 64}
    assert B.work(causal, torch.bfloat16)["flops"] == 2 * 2048 * 2048 * 64


@pytest.mark.parametrize("shape_index", [0, 1])
def test_benchmark_variants_match_the_oracle(shape_index):
    from checks.benchmark.rows import tolerance
    from checks.benchmark.runner import compare
    from checks.benchmark.shapes import streaming_attention as B

    shape = B.SHAPES[shape_index]
    mod = load_exercise(W.solution)
    inputs = B.make_inputs(shape, torch.float16, "cpu", seed=3)
    ref = B.oracle(inputs, shape)
    vs = B.variants(mod, inputs, shape)
    assert [v["role"] for v in vs].count("baseline") == 1
    cands = [v for v in vs if v["role"] == "candidate" and "launch" not in v["config"]]
    assert len(cands) == (4 if shape["causal"] else 2)
    assert [v["name"] for v in vs if "launch" in v["config"]] == ["triton block_n=32, cached handle"]
    for v in vs:
        ok = compare(v["fn"](), ref, "fp16", tolerance("fp16", B.TOLERANCE_SCALE))[2]
        assert ok, v["name"]


def test_benchmark_variants_work_without_the_skip_option():
    from checks.benchmark.shapes import streaming_attention as B

    calls = []
    learner = SimpleNamespace(
        attention=lambda q, k, v, *, causal=False, block_n=32: calls.append((causal, block_n)) or v.clone()
    )
    shape = B.SHAPES[1]
    vs = B.variants(learner, B.make_inputs(shape, torch.float16, "cpu", seed=0), shape)
    cands = [v for v in vs if v["role"] == "candidate"]
    assert [c["config"] for c in cands] == [
        {"block_n": 32},
        {"block_n": 32, "launch": "cached handle"},
        {"block_n": 64},
    ]
    for c in cands:
        c["fn"]()
    assert calls == [(True, 32), (True, 32), (True, 64)]


# --- the fp32 state: acc and l ------------------------------------------------------------


def test_an_fp16_accumulator_is_inf_where_the_answer_is_about_3000_and_the_reference_passes():
    ids = ["fp32-accumulator", "fp32-denominator"]
    assert all(r.status == "pass" for r in run_checks(WID, W.solution, interpret=True, only=ids))
    (rec,) = run_checks(WID, W.folder / "wrong" / "fp16_accumulator.py", interpret=True, only=ids[:1])
    assert rec.status == "fail" and rec.details["inf"] > 0
    assert "acc must be fp32" in rec.message


def test_an_fp16_denominator_loses_the_faint_tiles_and_the_outputs_are_too_large():
    path = W.folder / "wrong" / "fp16_denominator.py"
    (rec,) = run_checks(WID, path, interpret=True, only=["fp32-denominator"])
    assert rec.status == "fail" and "l must be fp32" in rec.message
    assert rec.details["nan"] == 0 and rec.details["inf"] == 0  # wrong by 1.4%, not broken


def test_a_wrong_scale_fails_the_faint_keys_without_being_told_its_l_is_fp16(tmp_path):
    """1/D for 1/sqrt(D) fails the faint keys far beyond an fp16 l's 1.4 %: the hint of the
    mistake the check is built for would send the learner to fix what is right."""
    right = "qk_scale = (1.0 / math.sqrt(d)) * LOG2_E"
    source = W.solution.read_text(encoding="utf-8")
    assert source.count(right) == 1
    path = tmp_path / "wrong_scale.py"
    path.write_text(source.replace(right, "qk_scale = (1.0 / d) * LOG2_E"), encoding="utf-8")
    (rec,) = run_checks(WID, path, interpret=True, only=["fp32-denominator"])
    assert rec.status == "fail" and "fp16" not in rec.message and "must be fp32" not in rec.message


def test_values_read_through_the_keys_pointer_fail_without_being_told_acc_is_fp16(tmp_path):
    """v loaded from k's pointer gives zeros here (every key is 0), not an fp16 overflow:
    no inf, so no word of acc's precision."""
    source = W.solution.read_text(encoding="utf-8")
    loads = ("v = tl.load(v_ptrs + start_n * stride_vn", "v = tl.load(k_ptrs + start_n * stride_kn")
    assert source.count(loads[0]) == 2
    path = tmp_path / "values_from_keys.py"
    path.write_text(source.replace(*loads), encoding="utf-8")
    (rec,) = run_checks(WID, path, interpret=True, only=["fp32-accumulator"])
    assert rec.status == "fail" and "acc must be fp32" not in rec.message


def test_the_reference_passes_the_fp32_state_checks_at_several_seeds():
    ids = ["fp32-accumulator", "fp32-denominator"]
    for seed in (1, 2, 3):
        records = run_checks(WID, W.solution, interpret=True, only=ids, seed=seed)
        assert [r.status for r in records] == ["pass", "pass"], seed


def test_the_faint_keys_are_lost_by_fp16_rounding_and_kept_by_fp32():
    from checks.judging.cases.streaming_attention_guards import FAINT_LOGIT

    weight = math.exp(-FAINT_LOGIT)
    tile = 32 * weight
    half_spacing_at_1 = 2.0**-11
    assert tile < half_spacing_at_1  # each tile rounds away in fp16...
    assert 64 * weight > half_spacing_at_1  # (with 64 keys a tile rounds up: block_n 32 only)
    l16 = torch.tensor(1.0, dtype=torch.float16)
    for _ in range(31):
        l16 = (l16.float() + tile).half()
    assert float(l16) == 1.0
    true_l = 1.0 + 1023 * weight
    assert true_l - 1.0 > 1.4 * tolerance(torch.float16)["rtol"]  # ...and the loss is past the tolerance


def test_an_ignored_skip_flag_is_caught_by_the_loads_it_makes_and_named_by_program():
    (ok,) = run_checks(WID, W.solution, interpret=True, only=["skip-future-tiles"])
    assert ok.status == "pass" and "no program loaded" in ok.message
    (rec,) = run_checks(
        WID, W.folder / "wrong" / "skip_flag_ignored.py", interpret=True, only=["skip-future-tiles"]
    )
    assert rec.status == "fail"
    d = rec.details
    assert d["key_rows"][0] > d["query_rows"][1]  # the tile lies wholly after the program's rows
    assert f"program {tuple(d['program_id'])}" in rec.message and "loaded k rows" in rec.message


def test_tensors_past_2_31_elements_are_checked_on_a_gpu_only_and_skipped_here_with_the_reason():
    from checks.judging.cases import streaming_attention_gpu_only as G

    (case,) = [c for c in G.CASES if c.id == "heads-past-int32"]
    assert not case.interpreter and "2^31" in case.interpreter_reason
    assert case.cost > max(c.cost for c in G.CASES if c is not case)  # runs last: a fault spoils the rest
    (rec,) = run_checks(WID, W.folder / "wrong" / "int32_head_offset.py", interpret=True, only=[case.id])
    assert rec.status == "skipped" and "2^31" in rec.message
    # the wrong answer differs from the reference only in the width of the head offset
    ref, wrong = (
        p.read_text().splitlines() for p in (W.solution, W.folder / "wrong" / "int32_head_offset.py")
    )
    code = difflib.ndiff(ref[ref.index("import math") :], wrong[wrong.index("import math") :])
    changed = [line for line in code if line[:2] in ("- ", "+ ")]
    assert sorted(line for line in changed if "tl.program_id(0)" in line) == [
        "+     head = tl.program_id(0)  # int32, like every program id",
        "-     head = tl.program_id(0).to(tl.int64)",
    ]
    assert all(line.startswith("-     #") for line in changed if "tl.program_id(0)" not in line)


def test_the_batched_contract_accepts_more_than_2_31_elements_but_not_a_head_that_spans_them():
    # Shapes only (metadata is all the wrapper reads): a stride-0 expand has 2^31 + 4096
    # elements without the memory, and is accepted; the [N, D] form keeps its 32-bit limit.
    mod = load_exercise(W.solution)
    big = torch.zeros(1, 1, 1, 64, dtype=torch.float16).expand(2, 262145, 64, 64)
    assert big.numel() > 2**31
    assert mod._check_inputs(big, big, big, False, 32, True) == (True, big.shape)
    for path in (W.solution, W.starter):
        source = path.read_text()
        assert "int32_offsets=not batched" in source and "one head's rows span" in source


def test_skip_future_tiles_makes_each_call_once_in_the_interpreter_recording_the_skipping_ones() -> None:
    import functools

    from checks.judging.engine import cases_for

    real = load_exercise(W.solution)
    calls: list = []

    @functools.wraps(real.attention)  # the check looks for the skip_future_tiles option
    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **options: object) -> torch.Tensor:
        calls.append(tuple(sorted(options.items())))
        return real.attention(q, k, v, **options)

    (case,) = [c for c in cases_for(WID) if c.id == "skip-future-tiles"]
    case.fn(SimpleNamespace(attention=attention), Context(case_id=case.id, device="cpu", interpret=True))
    answered = [c for c in calls if isinstance(dict(c).get("skip_future_tiles"), bool)]  # not the rejected
    # skip True: causal x block_n; skip False: one block_n per causal; none twice
    assert len(answered) == len(set(answered)) == 6


def test_heads_past_int32_uses_the_fewest_heads_that_pass_2_31_and_still_wraps_a_32_bit_offset():
    import numpy as np

    from checks.judging.cases.streaming_attention_gpu_only import many_heads_shape

    b, h, n, d = many_heads_shape()
    per_head = n * d
    assert (n, d) == (2048, 64) and b * h == 16385
    assert b * h * per_head > 2**31 >= (b * h - 1) * per_head  # one head fewer stays below
    assert h <= 65535 and b <= 65535  # any of the grids the lesson allows can launch it
    assert b * h < 20_000  # launches of a one-kernel-per-head design: one non-causal call
    # the kept wrong answer's 32-bit arithmetic wraps on the last head, product and sum alike
    with np.errstate(over="ignore"):
        last_b, last_h = np.int32(b - 1), np.int32(h - 1)
        stride_b, stride_h = np.int32(h * per_head), np.int32(per_head)
        assert last_b * stride_b + last_h * stride_h < 0
        assert np.int32(b * h - 1) * np.int32(n) * np.int32(d) < 0


def test_the_lesson_puts_the_large_grid_count_on_axis_0():
    batched = W.lesson.split("## Batched heads")[1].split("\n## ")[0]
    assert "65,535" in batched and "axis 0" in batched
