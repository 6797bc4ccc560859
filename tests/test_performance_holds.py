"""The performance reading holds on any machine (issue 43, point 5): it says before trying
when numpy and Triton's interpreter cannot work together; rank lists every variant it
could not read or time; a kernel that does not compile for sm_90 is the reading; a launch
of many programs is sampled, so a reading ends in seconds; each variant's predicted time
is printed."""

import json
import time
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from checks.performance import (
    __main__ as perf_main,
    accesses,
    compiled,
    environment,
    format_reading,
    goals,
    rank,
    read_module,
)
from checks.performance.reading import Reading, read

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "performance"


# --- numpy 2.4 and newer with Triton 3.6's interpreter ------------------------------------


def _versions(monkeypatch, **versions):
    monkeypatch.setattr(environment, "installed", lambda dist: versions.get(dist.replace("-", "_")))


@pytest.mark.parametrize(
    "numpy, triton_version, blocked",
    [
        ("2.5.0", "3.6.0", True),
        ("2.4.0", "3.6.0", True),
        ("2.4.1", "3.5.1", True),
        ("2.5.0rc1", "3.6.0+git1234", True),
        ("2.3.5", "3.6.0", False),
        ("1.26.4", "3.6.0", False),
        ("2.5.0", "3.7.0", False),
        ("2.5.0", None, False),  # no Triton: nothing known stands in the way
    ],
)
def test_the_versions_that_cannot_run_the_interpreter(monkeypatch, numpy, triton_version, blocked):
    _versions(monkeypatch, numpy=numpy, triton=triton_version)
    problem = environment.interpreter_problem()
    assert bool(problem) is blocked
    if blocked:
        last = problem.splitlines()[-1]  # what the app shows of a failed reading
        assert f"numpy {numpy}" in last and 'pip install "numpy<2.4"' in last
        assert "only 0-dimensional arrays can be converted to Python scalars" in problem


def test_pytorch_triton_is_read_when_triton_is_not_installed(monkeypatch):
    _versions(monkeypatch, numpy="2.5.0", pytorch_triton="3.6.0+gitabc")
    assert "Triton 3.6.0+gitabc's interpreter" in environment.interpreter_problem()


def test_the_reading_says_so_before_trying_and_exits_with_its_own_code(monkeypatch, capsys):
    _versions(monkeypatch, numpy="2.5.0", triton="3.6.0")

    def tried(*a, **k):
        raise AssertionError("the reading was tried")

    monkeypatch.setattr(perf_main, "load_module", tried)
    monkeypatch.setattr(perf_main, "_read", tried)
    code = perf_main.main(["strided_softmax"])
    out = capsys.readouterr().out
    assert code == environment.EXIT_ENVIRONMENT == 4
    assert "Triton 3.6.0's interpreter cannot run with numpy 2.5.0" in out
    assert out.strip().splitlines()[-1].endswith('pip install "numpy<2.4"')
    assert "InterpreterError" not in out


def test_rank_says_so_before_trying(monkeypatch, capsys, tmp_path):
    _versions(monkeypatch, numpy="2.5.0", triton="3.6.0")
    monkeypatch.setattr(rank, "rank_all", lambda *a, **k: pytest.fail("rank read variants"))
    code = rank.main(["--json", str(tmp_path / "rank.json"), "--fake-timer"])
    assert code == environment.EXIT_ENVIRONMENT
    assert 'pip install "numpy<2.4"' in capsys.readouterr().out
    assert not (tmp_path / "rank.json").exists()


# --- rank: every variant it could not read or time ----------------------------------------


def test_rank_lists_each_variant_it_could_not_read_or_time_and_exits_nonzero(monkeypatch, capsys, tmp_path):
    predicted = {
        "solution.py": (
            [("a", 1e-6, []), ("b", 2e-6, []), ("c", 3e-6, [])],
            [("d", "k does not compile for sm_90: Loop-carried variable acc ...")],
            ["e"],  # past --max-variants: listed apart, not missing
        ),
        "column_walk.py": (
            [],
            [("", "the reading exited with 1: no reading: the answer's call raised ...")],
            [],
        ),
    }
    monkeypatch.setattr(rank, "predict", lambda op, path, every, most: predicted[Path(path).name])
    times = {"solution.py": {"a": 5e-6, "b": "timing raised RuntimeError: illegal memory access"}}
    result = rank.rank_all(["strided_softmax"], lambda op, path, names: times[Path(path).name], jobs=1)
    missing = {(x["answer"], x["variant"]): x["why"] for x in result["missing"]}
    assert missing == {
        ("reference", "b"): "read, not timed: timing raised RuntimeError: illegal memory access",
        ("reference", "c"): "read, not timed: the timer returned no time for it",
        ("reference", "d"): "k does not compile for sm_90: Loop-carried variable acc ...",
        ("slow/column_walk", ""): "the reading exited with 1: no reading: the answer's call raised ...",
    }
    assert [p["variant"] for p in result["ops"]["strided_softmax"]["points"]] == ["a"]
    assert result["limited"] == [{"op": "strided_softmax", "answer": "reference", "variant": "e"}]

    out = tmp_path / "rank.json"
    assert rank.main(["--json", str(out), "--op", "strided_softmax", "--fake-timer"]) == 1
    said = capsys.readouterr().out
    assert "strided_softmax: Spearman 1.00 over 3 variants (2 left out, below)" in said
    assert "left out of the orders above (2): not read or not timed:" in said
    assert "strided_softmax: reference: d: k does not compile for sm_90" in said
    assert "strided_softmax: slow/column_walk (every variant): the reading exited with 1" in said
    assert "not read, by choice (1, past the first 4 candidates of a reference" in said
    assert len(json.loads(out.read_text())["missing"]) == 2


def test_predict_says_why_a_reading_child_gave_nothing(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def softmax(x, *, num_warps=4):\n    raise RuntimeError('broken on purpose')\n")
    readings, missing, limited = rank.predict("strided_softmax", broken, False)
    assert readings == [] == limited
    ((variant, why),) = missing
    assert variant == "" and why.startswith("the reading exited with 1: no reading: the answer's call raised")
    assert "broken on purpose" in why


def test_predict_names_the_candidates_past_the_limit():
    solution = REPO / "workshops" / "strided_softmax" / "solution.py"
    readings, missing, limited = rank.predict("strided_softmax", solution, True, 1)
    assert len(readings) == 1 and missing == [] and len(limited) == 1
    assert limited[0] != readings[0][0]


# --- a kernel that does not compile for sm_90 ---------------------------------------------


def _fp16_accumulator_record():
    module = perf_main.load_module(FIXTURES / "fp16_accumulator.py")
    x, out = torch.zeros(256, dtype=torch.float16), torch.empty(64, dtype=torch.float16)
    args = (x, out, 256)
    rec = accesses.KernelRecord(
        "fp16_accumulator_kernel",
        module.fp16_accumulator_kernel.fn,
        args,
        {"BLOCK": 64},
        ["x_ptr", "out_ptr", "n"],
        1,
        {
            "x_ptr": (x.data_ptr(), x.data_ptr() + 512, 512),
            "out_ptr": (out.data_ptr(), out.data_ptr() + 128, 128),
        },
    )
    st = accesses.Stream("x_ptr", "load", 2, bytes=512, requests=8, sectors=32, ideal_sectors=32)
    rec.streams[("x_ptr", "load")] = st
    return rec


def test_a_compile_error_is_the_reading_in_the_compilers_words():
    rec = _fp16_accumulator_record()
    (facts,) = compiled.compile_facts([rec])
    words = facts["compile_error"]
    assert "Loop-carried variable acc has initial type" in words and "fp16" in words and "fp32" in words
    assert "(line 13 of fp16_accumulator.py: for start in range(0, n, BLOCK):)" in words, words
    r = read("v", [rec], [facts], {"bytes": 640, "flops": 1e9})
    assert r.compile_errors == [("fp16_accumulator_kernel", words)]
    assert r.lines() == [r.headline] and words in r.headline
    assert r.predicted_text() == "no predicted time: a kernel does not compile for sm_90"
    assert r.as_dict()["predicted_us"] is None
    for op in goals.GOALS:  # no step is met after a failed compile
        met, _, evidence = goals.judge(op, r)
        assert met is False and "does not compile for sm_90" in evidence and words in evidence
    text = format_reading(r)
    assert "no tl.dot" not in text and "CUDA cores" not in text


def test_without_compile_facts_the_compile_steps_are_not_judged():
    rec = _fp16_accumulator_record()
    r = read(
        "v",
        [rec],
        [{"error": "no compile facts: the compile child ended early"}],
        {"bytes": 640, "flops": 1e9},
    )
    assert "no-tensor-cores" not in [f.cause for f in r.findings]
    assert any("no compile facts" in d for d in r.details)
    for op in ("fused_gemm", "streaming_attention"):
        met, _, evidence = goals.judge(op, r)
        assert met is None and evidence.startswith("not judged: no compile facts")


def test_the_a3_fp16_accumulator_reads_as_its_compile_error(tmp_path):
    source = (REPO / "workshops" / "streaming_attention" / "solution.py").read_text(encoding="utf-8")
    fp32 = "acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)"
    assert source.count(fp32) == 1
    answer = tmp_path / "fp16_acc.py"
    answer.write_text(source.replace(fp32, fp32.replace("float32", "float16")), encoding="utf-8")
    out = tmp_path / "r.json"
    r = _cli("-m", "checks.performance", "streaming_attention", "--file", str(answer), "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "does not compile for the H200 (sm_90)" in r.stdout
    assert "Loop-carried variable acc has initial type" in r.stdout
    assert "no tl.dot" not in r.stdout and ": met (" not in r.stdout
    assert "Performance step: keep every tile in registers (no spills): not met (" in r.stdout
    data = json.loads(out.read_text())
    assert data["step_met"] is False and data["readings"] == []
    assert data["candidates"] == [data["not_compiled"][0]["variant"]]
    assert "Loop-carried variable acc" in data["not_compiled"][0]["compile_errors"][0]["error"]


# --- sampling: a bounded subset of the programs, scaled up ---------------------------------


@triton.jit
def _stamp_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * 0 + tl.num_programs(0))


def test_a_launch_past_the_sample_runs_its_first_programs_and_scales_their_bytes():
    x = torch.ones(100 * 16)

    def call(out):
        _stamp_kernel[(100,)](x, out, BLOCK=16)
        _stamp_kernel[(100,)](x, out, BLOCK=16)  # a second launch after the sampled one still runs
        return out

    out_all, out_some = torch.zeros(1600), torch.full((1600,), -1.0)
    _, every = accesses.record(lambda: call(out_all), max_programs=None)
    _, some = accesses.record(lambda: call(out_some), max_programs=8)
    assert [r.recorded for r in every] == [100, 100] and not any(r.sampled for r in every)
    assert [r.recorded for r in some] == [8, 8] and all(r.sampled and r.programs == 100 for r in some)
    for a, b in zip(every, some):
        assert {k: s.bytes for k, s in a.streams.items()} == {k: s.bytes for k, s in b.streams.items()}
    assert torch.all(out_some[: 8 * 16] == 100)  # the launch's own grid: tl.num_programs is 100
    assert torch.all(out_some[8 * 16 :] == -1)  # the programs past the sample did not run
    said = accesses.sample_sentence(some)
    assert said.startswith("sampled: the interpreter ran the first 8 of 100 programs of _stamp_kernel")


@triton.jit
def _even_programs_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid % 2 == 0:  # the odd programs touch no memory
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def test_programs_that_touch_no_memory_count_among_those_that_ran():
    x = torch.ones(100 * 16)
    _, every = accesses.record(lambda: _even_programs_kernel[(100,)](x, torch.empty(1600), BLOCK=16), None)
    _, some = accesses.record(lambda: _even_programs_kernel[(100,)](x, torch.empty(1600), BLOCK=16), 8)
    assert (some[0].recorded, some[0].ran) == (8, 16)  # programs 0, 2, ..., 14; program 16 ended it
    assert {k: s.bytes for k, s in every[0].streams.items()} == {
        k: s.bytes for k, s in some[0].streams.items()
    }
    assert "the first 16 of 100 programs" in accesses.sample_sentence(some)


def test_the_time_limits_end_a_launch_early_or_the_recording():
    x = torch.ones(100 * 16)
    _, recs = accesses.record(lambda: _stamp_kernel[(100,)](x, torch.empty(1600), BLOCK=16), cpu_seconds=0.0)
    assert recs[0].recorded == 1 and recs[0].why_sampled == "time"
    assert "(the recording's time limit)" in accesses.sample_sentence(recs)
    with pytest.raises(
        accesses.TooSlow, match="s of CPU on this call without finishing it .program .0, 0, 0."
    ):
        accesses.record(lambda: _stamp_kernel[(100,)](x, torch.empty(1600), BLOCK=16), limit_seconds=-1.0)


def test_a_column_walking_softmax_is_read_in_seconds():
    """87 s of CPU in the interpreter before the reading sampled (4 min 42 s on a busy 2-core
    machine): one program per row of a transposed 1024x1024, 64 strided chunks each."""
    started = time.process_time()
    (r,) = read_module("strided_softmax", perf_main.load_module(FIXTURES / "column_walk_loop.py"))
    assert time.process_time() - started < 10
    assert r.causes()[0] == "sectors", r.lines()
    assert r.moved_bytes == 12 * 2**20  # x read twice, out written once: scaled from the sample
    # 32 programs, or fewer where the recording's time limit came first (a busy machine)
    assert (
        r.sampled.startswith("sampled: the interpreter ran the first ") and " of 1024 programs" in r.sampled
    )
    assert r.sampled in format_reading(r)


# --- the predicted time -------------------------------------------------------------------


def test_each_variant_is_printed_with_its_predicted_time():
    r = Reading("num_warps=4", 17.06e-6, 2.1e-6, 8 << 20, 12 << 20, 1024, headline="biggest loss ...")
    first = format_reading(r).splitlines()[0]
    assert first == "num_warps=4: predicted 17.1 us on an H200 (ideal 2.1 us)"
    slow = Reading("v", 0.0123, 2.1e-6, 8 << 20, 12 << 20, 1024)
    assert "predicted 12,300 us on an H200" in format_reading(slow)


def _cli(*args):
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
