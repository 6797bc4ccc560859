"""A2 wide-row split softmax: the reference answer passes, the starter is TODO, every
wrong version is caught by the checks named for it, and the subtle parts (three ordered
launches, the scratch formula, the benchmark spec) hold.  Runs in Triton's interpreter
(conftest sets TRITON_INTERPRET=1)."""

import importlib
import json
import math
from pathlib import Path
from types import ModuleType

import pytest
import torch

from checks.judging.engine import cases_for, load_exercise, run_checks
from workshops import catalog

WID = "split_softmax"
FOLDER = Path(__file__).resolve().parent.parent / "workshops" / WID

# Checks that only exercise the wrapper's metadata validation: they pass on the starter.
VALIDATION_ONLY = {
    "rejects-bad-type-or-dtype",
    "rejects-bad-shape",
    "rejects-widths",
    "rejects-non-contiguous",
    "rejects-bad-chunk-size",
    "rejects-device-and-grad",
}
GPU_ONLY = {"non-default-stream"}

# ...and checks each of them passes: the bug needs more than one chunk (or a ragged one).
MUST_PASS = {
    "concat_local_normalized": {"width-1", "width-chunk-minus-1", "width-chunk", "worked-scratch"},
    "merge_without_rescale": {"width-1", "width-chunk", "worked-scratch"},
    "zero_padding_in_stats": {"width-chunk", "worked-scratch"},
    "floor_tile_count": {"width-chunk"},
}


@pytest.fixture(scope="module")
def solution():
    return load_exercise(FOLDER / "solution.py")


def test_catalog_entry():
    w = catalog.get(WID)
    assert (w.code, w.level, w.device, w.sessions) == ("A2", "advanced", "GPU", "3-5")
    assert w.title == "Wide-row split softmax"
    assert w.functions == ("softmax", "scratch_bytes")
    assert json.loads((FOLDER / "meta.json").read_text())["id"] == WID


def test_first_check_is_a_small_basic_shape():
    # own-kernel first (is it your kernel at all?), then the first numeric verdict
    assert [c.id for c in cases_for(WID)[:2]] == ["own-kernel", "basic-small"]


def test_gpu_only_checks_are_declared():
    gpu_only = {c.id for c in cases_for(WID) if not c.interpreter}
    assert gpu_only == GPU_ONLY
    assert all(c.interpreter_reason for c in cases_for(WID) if not c.interpreter)


def test_hints_have_four_tiers():
    hints = catalog.get(WID).hints
    assert len(hints) == 4
    assert all(h.startswith(f"## Hint {i + 1}:") for i, h in enumerate(hints))


# --- unit tests of the subtle parts --------------------------------------------------------


def test_worked_scratch_answer(solution):
    assert solution.scratch_bytes(4, 32769, 1024) == 1088
    for m, n, c in [(1, 1, 256), (3, 1024, 1024), (3, 1025, 1024), (2, 131072, 256), (0, 7, 4096)]:
        assert solution.scratch_bytes(m, n, c) == 8 * m * (math.ceil(n / c) + 1)
    for bad, exc, word in [
        ((4, 32769, 512), ValueError, "chunk_size"),
        ((4, 0, 1024), ValueError, "N"),
        ((4, 131073, 1024), ValueError, "N"),
        ((-1, 5, 1024), ValueError, "M"),
        ((4.0, 5, 1024), TypeError, "M"),
    ]:
        with pytest.raises(exc, match=word):
            solution.scratch_bytes(*bad)


def test_three_ordered_launches(solution):
    from checks.judging.provenance import witnessing

    x = torch.randn(4, 32769)
    with witnessing(solution.__file__) as w:
        got = solution.softmax(x, chunk_size=1024)
    assert torch.allclose(got.double(), torch.softmax(x.double(), -1), atol=1e-6, rtol=1e-4)
    assert [(l.kernel, l.grid) for l in w.launches] == [
        ("_partial_stats_kernel", (4, 33)),
        ("_merge_kernel", (4,)),
        ("_normalize_kernel", (4, 33)),
    ]
    with witnessing(solution.__file__) as w:
        assert solution.softmax(torch.empty(0, 5000)).shape == (0, 5000)
    assert w.launches == []  # zero rows: nothing launched


def test_scratch_allocated_matches_scratch_bytes(solution, monkeypatch):
    allocated = []
    real_empty = torch.empty

    def recording_empty(*args, **kwargs):
        t = real_empty(*args, **kwargs)
        allocated.append(t)
        return t

    monkeypatch.setattr(torch, "empty", recording_empty)
    x = torch.randn(3, 5000).half()  # fp16 output, so every fp32 allocation is scratch
    solution.softmax(x, chunk_size=256)
    scratch = sum(t.numel() * t.element_size() for t in allocated if t.dtype == torch.float32)
    assert scratch == solution.scratch_bytes(3, 5000, 256) == 8 * 3 * (20 + 1)


def test_lesson_table_numbers():
    """The [1, 2, 3, 4] example of the lesson and explanation, in float64."""
    l_chunk = 1 + math.exp(-1)
    merged = l_chunk * math.exp(-2) + l_chunk
    assert round(l_chunk, 4) == 1.3679 and round(merged, 4) == 1.5530
    probs = [math.exp(v - 4) / merged for v in (1, 2, 3, 4)]
    assert [round(p, 4) for p in probs] == [0.0321, 0.0871, 0.2369, 0.6439]
    local = [math.exp(v - 2) / l_chunk for v in (1, 2)] + [math.exp(v - 4) / l_chunk for v in (3, 4)]
    assert [round(p, 4) for p in local] == [0.2689, 0.7311, 0.2689, 0.7311]
    raw = [math.exp(v - 4) / (2 * l_chunk) for v in (1, 2, 3, 4)]
    assert [round(p, 4) for p in raw] == [0.0182, 0.0495, 0.1345, 0.3655]
    assert round(sum(raw), 2) == 0.57


def test_benchmark_spec(solution):
    spec = importlib.import_module("checks.benchmark.shapes.split_softmax")
    names = {s["name"]: s["role"] for s in spec.SHAPES}
    assert names == {
        "4x32769": "comparison",
        "64x131072": "comparison",
        "4x131072": "roofline",
        "1024x131072": "roofline",
    }
    assert spec.DTYPES == ["fp32", "fp16", "bf16"]
    assert spec.work(dict(rows=4, cols=131072), torch.float32)["bytes"] == 4 * 131072 * 4 * 2
    assert spec.work(dict(rows=1024, cols=131072), torch.bfloat16)["bytes"] == 1024 * 131072 * 2 * 2
    shape = dict(name="2x3000", role="comparison", rows=2, cols=3000)  # small: interpreter
    inputs = spec.make_inputs(shape, torch.float16, "cpu", seed=1)
    assert inputs["x"].shape == (2, 3000) and inputs["x"].dtype == torch.float16
    assert torch.equal(inputs["x"], spec.make_inputs(shape, torch.float16, "cpu", seed=1)["x"])
    expected = spec.oracle(inputs, shape)
    variants = spec.variants(solution, inputs, shape)
    roles = [v["role"] for v in variants]
    plain = [v for v in variants if v["role"] == "candidate" and "launch" not in v["config"]]
    assert roles.count("baseline") == 1 and len(plain) == 3
    # the default launch again, through cached handles (what Triton's dispatch costs)
    assert [v["name"] for v in variants if "launch" in v["config"]] == [
        "split chunk_size=1024, cached handle"
    ]
    assert sorted(v["config"]["chunk_size"] for v in plain) == [
        256,
        1024,
        4096,
    ]
    for v in variants:
        got = v["fn"]()
        assert got.dtype == torch.float16
        assert torch.allclose(got.double(), expected, atol=1e-3, rtol=1e-2), v["name"]


def test_fp16_scratch_moves_the_chunk_maxima_and_fp32_statistics_names_the_scratch(solution):
    from checks.judging.engine import run_checks

    (ok,) = run_checks(WID, FOLDER / "solution.py", interpret=True, only=["fp32-statistics"])
    assert ok.status == "pass", ok.message
    (rec,) = run_checks(WID, FOLDER / "wrong" / "fp16_scratch.py", interpret=True, only=["fp32-statistics"])
    assert rec.status == "fail" and "fp32 scratch" in rec.message
    # the inputs: chunk maxima strictly between fp16 values, which fp32 keeps
    m = torch.tensor([1000.05, 1000.2, 1000.45], dtype=torch.float32)
    assert not torch.equal(m.half().float(), m)


# --- the interpreter's share of the scale checks ----------------------------------------------


class _RecordingSoftmax:
    """The reference module, each softmax call's (shape, chunk_size) recorded."""

    def __init__(self, mod: ModuleType) -> None:
        self.mod = mod
        self.calls: list = []

    def softmax(self, x: torch.Tensor, *, chunk_size: int = 1024) -> torch.Tensor:
        self.calls.append((tuple(x.shape), chunk_size))
        return self.mod.softmax(x, chunk_size=chunk_size)

    def scratch_bytes(self, m: int, n: int, chunk_size: int) -> int:
        return self.mod.scratch_bytes(m, n, chunk_size)


def _programs(rows: int, cols: int, chunk: int) -> int:
    """Programs the reference launches for one call: stats and normalize over rows x T, merge over rows."""
    return 2 * rows * math.ceil(cols / chunk) + rows


def _interpreted_calls(solution: ModuleType, check_id: str) -> list:
    from checks.judging.case import Context

    (case,) = [c for c in cases_for(WID) if c.id == check_id]
    rec = _RecordingSoftmax(solution)
    case.fn(rec, Context(case_id=check_id, device="cpu", interpret=True))  # raises if it fails
    return rec.calls


def test_width_131072_interprets_the_widest_row_once_and_a_gpu_keeps_every_chunk_size(
    solution: ModuleType,
) -> None:
    from checks.judging.cases.split_softmax import MAX_COLS, width_131072_shapes

    calls = _interpreted_calls(solution, "width-131072")
    assert calls == [((1, MAX_COLS), 4096)]  # the widest row, the chunk size of fewest programs
    assert sum(_programs(r, c, k) for (r, c), k in calls) == 65  # 1,025 at chunk_size 256
    assert width_131072_shapes(interpret=False) == [
        (4, MAX_COLS, 256),
        (4, MAX_COLS, 1024),
        (4, MAX_COLS, 4096),
    ]


def test_worked_shape_interprets_one_row_of_33_chunks(solution: ModuleType) -> None:
    assert _interpreted_calls(solution, "worked-shape-4x32769") == [((1, 32769), 1024)]
    (rec,) = run_checks(
        WID, FOLDER / "wrong" / "floor_tile_count.py", interpret=True, only=["worked-shape-4x32769"]
    )
    assert rec.status == "fail" and "1 of 32769 elements" in rec.message  # the 33rd chunk's column


def test_many_programs_passes_a_cap_of_256_on_each_axis_in_both_modes() -> None:
    from checks.judging.cases.split_softmax_guards import many_programs_shapes

    for interpret, past in ((True, 256), (False, 65535)):
        shapes = many_programs_shapes(interpret)
        assert all(k == 256 for _, _, k in shapes)  # the chunk size of the most chunks
        assert max(rows for rows, _, _ in shapes) > past  # rows: past 256 (a GPU: past 65,535)
        assert max(math.ceil(cols / k) for _, cols, k in shapes) > 256  # chunks of one row
    interpreted = sum(_programs(*s) for s in many_programs_shapes(True))
    assert interpreted == 3 * 257 + 2 * 257 + 1  # one program past the cap on each axis, no more


def test_a_chunk_axis_capped_at_256_is_caught_by_many_programs() -> None:
    (rec,) = run_checks(WID, FOLDER / "wrong" / "capped_grid.py", interpret=True, only=["many-programs"])
    assert rec.status == "fail" and "256 of 65543 elements" in rec.message, rec.message


def _scratch_records(name: str) -> dict:
    ids = ["scratch-fp32", "scratch-bytes", "scratch-per-call"]
    return {r.id: r for r in run_checks(WID, FOLDER / "wrong" / name, interpret=True, only=ids)}


def test_scratch_in_the_input_dtype_passes_every_value_check_and_fails_the_scratch_contract():
    # every check that looks only at values passes it: the dtype of the scratch is what is wrong
    value_checks = [c.id for c in cases_for(WID) if c.interpreter and not c.id.startswith("scratch-")]
    records = run_checks(WID, FOLDER / "wrong" / "half_scratch.py", interpret=True, only=value_checks)
    assert [r.id for r in records if r.status != "pass"] == []
    by_id = _scratch_records("half_scratch.py")
    dtype, size = by_id["scratch-fp32"], by_id["scratch-bytes"]
    assert dtype.status == "fail" and "scratch of dtype float16 for float16 input" in dtype.message
    assert dtype.details["kernel"] == "_partial_stats_kernel"
    assert size.status == "fail" and size.details["handed_bytes"] * 2 == size.details["scratch_bytes"] == 504
    assert by_id["scratch-per-call"].status == "pass"


def test_scratch_cached_across_calls_is_refused_only_by_the_per_call_check():
    by_id = _scratch_records("cached_scratch.py")
    assert by_id["scratch-fp32"].status == by_id["scratch-bytes"].status == "pass"
    reused = by_id["scratch-per-call"]
    assert reused.status == "fail" and reused.details["shared_with_call"] == 1
    assert reused.message.startswith("call 3 (softmax(3x2500 float32, chunk_size=1024))")
    assert "kept from one call to the next" in reused.message


def test_scratch_is_what_the_launches_were_handed_besides_input_and_output(solution):
    from checks.judging.cases.split_softmax_scratch import scratch_bytes_of, scratch_of_call

    x = torch.randn(3, 5000).half()
    got, scratch = scratch_of_call(solution, x, chunk_size=256)
    assert {k for k, _ in scratch} == {"_partial_stats_kernel", "_merge_kernel", "_normalize_kernel"}
    assert all(t.dtype == torch.float32 for _, t in scratch)
    # two views of one allocation: counted once, as the bytes scratch_bytes promises
    assert len(scratch) == 4 and scratch_bytes_of(scratch) == solution.scratch_bytes(3, 5000, 256)
    assert not any(t.untyped_storage().data_ptr() == got.untyped_storage().data_ptr() for _, t in scratch)
