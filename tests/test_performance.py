"""Performance readings: the sector count of a warp's request, the cost model's named
causes, and each kept slow answer's reading naming its cause while each reference answer's
says it moves each byte once or why not (interpreter accesses, sm_90 compile, no GPU)."""

from pathlib import Path

import numpy as np
import pytest

from checks.performance import accesses, goals, problems, read_module
from checks.performance.__main__ import load_module
from checks.performance.reading import read

REPO = Path(__file__).resolve().parent.parent

# workshop -> (kept slow answer, the cause its reading must name first among the losses)
SLOW = {
    "strided_softmax": ("column_walk.py", "sectors"),
    "softmax_backward": ("two_kernels.py", "reread"),
    "split_softmax": ("one_program_per_row.py", "programs"),
    "fused_gemm": ("fp32_products.py", "no-tensor-cores"),
    "streaming_attention": ("large_tiles.py", "spills"),
}


def test_contiguous_fp32_warp_touches_four_sectors():
    addrs = np.arange(64, dtype=np.uint64) * 4 + 4096
    assert accesses.sector_counts(addrs, None, 4) == (2, 8, 8)


def test_lanes_a_row_apart_touch_one_sector_each():
    addrs = np.arange(32, dtype=np.uint64) * 4096
    assert accesses.sector_counts(addrs, None, 4) == (1, 32, 4)


def test_two_d_block_is_ordered_along_its_contiguous_axis():
    # a [32, 8] tile of a transposed view: rows are neighbours in memory
    rows, cols = np.meshgrid(np.arange(32), np.arange(8), indexing="ij")
    addrs = (rows * 4 + cols * 4096).astype(np.uint64)
    requests, sectors, ideal = accesses.sector_counts(addrs, None, 4)
    assert (requests, sectors, ideal) == (8, 32, 32)


def test_masked_lanes_do_not_count():
    addrs = np.arange(32, dtype=np.uint64) * 4096
    on = np.zeros(32, bool)
    on[:2] = True
    assert accesses.sector_counts(addrs, on, 4) == (1, 2, 1)


def _record(tensors: dict, streams: list, programs: int = 1024):
    rec = accesses.KernelRecord("k", None, (), {}, [], programs, tensors)
    for name, kind, nbytes, req, sec, ideal in streams:
        st = accesses.Stream(name, kind, 4, bytes=nbytes, requests=req, sectors=sec, ideal_sectors=ideal)
        st.programs_seen = {(0, 0, 0)}
        st.program_bytes, st.program_unique = 4096, 4096
        rec.streams[(name, kind)] = st
    return rec


def test_a_second_kernel_reading_the_input_is_named_as_a_reread():
    t = {"x_ptr": (0, 1 << 20, 1 << 20), "out_ptr": (1 << 21, (1 << 21) + (1 << 20), 1 << 20)}
    first = _record(t, [("x_ptr", "load", 1 << 20, 10, 40, 40)])
    first.name = "stats"
    second = _record(t, [("x_ptr", "load", 1 << 20, 10, 40, 40), ("out_ptr", "store", 1 << 20, 10, 40, 40)])
    second.name = "normalize"
    r = read("v", [first, second], [None, None], {"bytes": 2 << 20, "flops": None})
    assert r.causes()[0] == "reread"
    assert "reads x 2.0 times" in r.headline and "2 kernels" in r.headline


def test_one_pass_reading_moves_each_byte_once():
    t = {"x_ptr": (0, 1 << 20, 1 << 20), "out_ptr": (1 << 21, (1 << 21) + (1 << 20), 1 << 20)}
    rec = _record(t, [("x_ptr", "load", 1 << 20, 10, 40, 40), ("out_ptr", "store", 1 << 20, 10, 40, 40)])
    r = read("v", [rec], [None], {"bytes": 2 << 20, "flops": None})
    assert r.causes() == []
    assert r.traffic.startswith("moves each byte once")


@pytest.mark.parametrize("op", sorted(SLOW))
def test_readings_of_the_reference_and_the_slow_answer(op):
    """One test per workshop (each reading runs the interpreter and compiles for sm_90, so the
    workshops' readings run side by side on the test workers): the slow answer's reading names
    its cause first; the reference's says it moves each byte once or why not, and predicts less
    time; the lesson's performance step is met by the reference and not by the slow answer."""
    ref = read_module(op, load_module(REPO / "workshops" / op / "solution.py"))[0]
    slow = read_module(op, load_module(REPO / "workshops" / op / "slow" / SLOW[op][0]))[0]
    assert slow.causes() and slow.causes()[0] == SLOW[op][1], slow.lines()
    assert slow.headline.startswith("biggest loss")
    assert (
        ref.traffic.startswith("moves each byte once")
        or ": reads " in ref.traffic
        or "reads " in ref.headline
    )
    assert ref.predicted_s < slow.predicted_s
    assert goals.judge(op, ref)[0], ref.lines()
    assert not goals.judge(op, slow)[0], slow.lines()


def test_every_gpu_workshop_with_a_spec_has_a_reading_and_a_step():
    from checks.benchmark import specs

    assert set(problems.ops()) == set(specs.benchmarked_ops()) == set(goals.GOALS) == set(SLOW)


@pytest.mark.parametrize("op", sorted(SLOW))
def test_each_slow_answer_passes_every_check_that_runs_here(op):
    from checks.judging.engine import run_checks

    records = run_checks(op, REPO / "workshops" / op / "slow" / SLOW[op][0], interpret=True)
    assert records and not [r.id for r in records if r.status not in ("pass", "skipped")]
    assert sum(r.status == "pass" for r in records) >= len(records) - 6  # skipped: GPU-only checks


def test_spearman_of_orders():
    from checks.performance.rank import ranks, spearman

    assert ranks([3.0, 1.0, 2.0, 1.0]) == [4.0, 1.5, 3.0, 1.5]
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1], [1]) is None and spearman([1, 1], [2, 3]) is None


def test_rank_compares_predicted_and_measured_orders_with_a_fake_timer(monkeypatch, tmp_path):
    from checks.performance import rank

    predicted = {
        "solution.py": ([("a", 1e-6, []), ("b", 2e-6, [])], [], []),
        "column_walk.py": ([("a", 9e-6, ["sectors"])], [], []),
    }
    monkeypatch.setattr(rank, "predict", lambda op, path, every, most: predicted[Path(path).name])
    # measured: the slow answer is slowest, but the reference's two candidates swap places
    times = {"solution.py": {"a": 5e-6, "b": 4e-6}, "column_walk.py": {"a": 30e-6}}
    result = rank.rank_all(["strided_softmax"], lambda op, path, names: times[Path(path).name], jobs=1)
    r = result["ops"]["strided_softmax"]
    assert r["predicted_order"] == ["reference: a", "reference: b", "slow/column_walk: a"]
    assert r["measured_order"] == ["reference: b", "reference: a", "slow/column_walk: a"]
    assert r["spearman"] == pytest.approx(0.5)
    assert result["pooled"]["points"] == 3 and result["missing"] == []


def _cli(*args):
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )


def test_perf_flag_says_the_step_is_not_met_for_the_column_walk():
    slow = REPO / "workshops" / "strided_softmax" / "slow" / "column_walk.py"
    r = _cli("-m", "checks", "strided_softmax", "--file", str(slow), "--interpret", "--perf")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (
        "biggest loss" in r.stdout and "32 sectors of 32 bytes per warp-wide request, 4 is ideal" in r.stdout
    )
    assert "num_warps=4: predicted " in r.stdout and " us on an H200 (ideal " in r.stdout
    assert "Performance step: " in r.stdout and ": not met (" in r.stdout


def test_recorded_accesses_of_a_row_walk_over_a_transpose():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def copy_rows(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        ok = cols < n_cols
        x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=ok)
        tl.store(out_ptr + row * n_cols + cols, x, mask=ok)

    x = torch.randn(40, 16).t()  # [16, 40] with strides (1, 16): each row's lanes 64 bytes apart
    out = torch.empty(16, 40)
    _, records = accesses.record(lambda: copy_rows[(16,)](x, out, 40, 1, 16, BLOCK=64))
    (rec,) = records
    assert rec.programs == 16 and rec.name == "copy_rows"
    load, store = rec.streams[("x_ptr", "load")], rec.streams[("out_ptr", "store")]
    assert load.bytes == store.bytes == 16 * 40 * 4  # masked lanes move nothing
    assert load.lane_step == 64 and store.lane_step == 4
    # 40 active lanes per program: one full request and one of 8 lanes
    assert load.requests == 2 * accesses.SAMPLED_PROGRAMS
    assert load.sectors == 40 * accesses.SAMPLED_PROGRAMS  # a sector per lane: 64 bytes apart
    assert store.sectors == store.ideal_sectors == 5 * accesses.SAMPLED_PROGRAMS
    assert torch.equal(out, x)


def test_measured_sentences_say_the_ceiling_and_launch_bound():
    from checks.performance.measured import sentences

    row = dict(fraction_of_ceiling=0.62, bound="memory", host_us=18.2, device_us=3.1, per_call_us=21.3)
    assert sentences(dict(row, launch_bound=True)) == [
        "reaches 62% of the copy ceiling",
        "launch-bound: 18 us per call on the host, 3 us on the GPU; "
        "fewer launches per call (or a CUDA graph) save more than a faster kernel",
    ]
    said = sentences(dict(row, launch_bound=False, bound="compute", host_us=0.4))
    assert said == ["reaches 62% of the FLOP ceiling", "21.3 us per call, 3.1 us of it on the GPU"]
    assert sentences({"fraction_of_ceiling": None, "launch_bound": None}) == []
