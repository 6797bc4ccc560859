"""The card's ceilings are measured once per card and kept; the command's new options
(--aa, --ceilings, --remeasure-ceilings) end to end.  On a CPU: the measuring function,
the timers and the environment are faked."""

import json
import random
from pathlib import Path

import pytest

from checks.benchmark import ceilings, cli as bench_cli, statistics
from checks.benchmark.statistics import RoundTimer

ENV = {
    "gpu_name": "Fake GPU",
    "gpu_uuid": "GPU-1234",
    "pci_bus_id": "00000000:19:00.0",
    "sm_count": 132,
    "l2_bytes": 62914560,
    "driver": "580.00",
    "cuda": "13.0",
    "torch": "2.11.0",
    "triton": "3.6.0",
    "python": "3.12",
    "platform": "Linux",
}
MEASURED = {"copy_gbps": 4000.0, "bf16_matmul_tflops": 700.0, "errors": []}


class Measure:
    def __init__(self, result=None):
        self.calls = 0
        self.result = dict(result or MEASURED)

    def __call__(self):
        self.calls += 1
        return dict(self.result)


def test_ceilings_are_measured_once_per_card_and_kept(tmp_path):
    path = tmp_path / "state" / "ceilings.json"
    measure = Measure()
    first = ceilings.ceilings_for(path, ENV, measure, now=lambda: "then")
    assert measure.calls == 1 and first["cached"] is False and first["copy_gbps"] == 4000.0
    kept = json.loads(path.read_text())
    assert kept["schema"] == "kernel-course/ceilings"
    [entry] = kept["entries"]
    assert entry["card"] == ceilings.card_key(ENV) and entry["measured_at"] == "then"
    assert entry["card"]["gpu_uuid"] == "GPU-1234" and entry["card"]["pci_bus_id"] == "00000000:19:00.0"
    again = ceilings.ceilings_for(path, ENV, measure)
    assert measure.calls == 1  # not measured again
    assert again["cached"] is True and again["measured_at"] == "then"
    assert again["bf16_matmul_tflops"] == 700.0 and again["cache_file"] == str(path)
    assert [p.name for p in path.parent.iterdir()] == ["ceilings.json"]  # no temporary file left


@pytest.mark.parametrize("field", ["gpu_name", "gpu_uuid", "pci_bus_id", "driver", "cuda", "torch", "triton"])
def test_another_card_or_software_measures_again_and_both_are_kept(tmp_path, field):
    path = tmp_path / "ceilings.json"
    measure = Measure()
    ceilings.ceilings_for(path, ENV, measure)
    other = dict(ENV, **{field: "something else"})
    assert ceilings.ceilings_for(path, other, measure)["cached"] is False and measure.calls == 2
    assert ceilings.ceilings_for(path, ENV, measure)["cached"] is True
    assert ceilings.ceilings_for(path, other, measure)["cached"] is True and measure.calls == 2
    assert len(json.loads(path.read_text())["entries"]) == 2


def test_remeasure_replaces_this_cards_entry(tmp_path):
    path = tmp_path / "ceilings.json"
    ceilings.ceilings_for(path, ENV, Measure())
    faster = Measure(dict(MEASURED, copy_gbps=4200.0))
    got = ceilings.ceilings_for(path, ENV, faster, remeasure=True)
    assert faster.calls == 1 and got["cached"] is False and got["copy_gbps"] == 4200.0
    [entry] = json.loads(path.read_text())["entries"]
    assert entry["ceilings"]["copy_gbps"] == 4200.0


def test_a_quick_measurement_serves_quick_runs_only(tmp_path):
    path = tmp_path / "ceilings.json"
    measure = Measure()
    ceilings.ceilings_for(path, ENV, measure, quick=True)
    assert ceilings.ceilings_for(path, ENV, measure, quick=True)["cached"] is True and measure.calls == 1
    assert ceilings.ceilings_for(path, ENV, measure)["cached"] is False and measure.calls == 2
    assert ceilings.ceilings_for(path, ENV, measure, quick=True)["cached"] is True and measure.calls == 2


def test_a_failed_measurement_is_not_kept(tmp_path):
    path = tmp_path / "ceilings.json"
    broken = Measure({"copy_gbps": None, "bf16_matmul_tflops": 700.0, "errors": ["copy: OOM"]})
    got = ceilings.ceilings_for(path, ENV, broken)
    assert got["copy_gbps"] is None and got["errors"] and not path.exists()
    ceilings.ceilings_for(path, ENV, broken)
    assert broken.calls == 2


def test_a_broken_or_foreign_file_is_measured_over(tmp_path):
    path = tmp_path / "ceilings.json"
    for text in ("{not json", json.dumps({"schema": "something/else", "entries": []}), "[]"):
        path.write_text(text)
        measure = Measure()
        assert ceilings.ceilings_for(path, ENV, measure)["cached"] is False and measure.calls == 1
        assert json.loads(path.read_text())["schema"] == "kernel-course/ceilings"


def test_an_unwritable_place_still_gives_the_ceilings(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    got = ceilings.ceilings_for(blocker / "ceilings.json", ENV, Measure())
    assert got["copy_gbps"] == 4000.0 and got["cached"] is False and "cache_error" in got


def test_the_default_file_is_in_the_workspaces_state_folder(tmp_path):
    from checks import workspace

    ws = tmp_path / "ws"
    assert ceilings.default_path(ws) == workspace.state_dir(ws) / "ceilings.json"
    assert ceilings.default_path().parent == workspace.state_dir(workspace.default_workspace())


# --- the command end to end ---------------------------------------------------------------------

LEARNER = """
import torch

def softmax(x, *, num_warps=4):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
"""


def _fake_command(monkeypatch, spec_samples):
    """The command on the CPU with a fake spec, round timers, ceilings and environment;
    returns the list the fake ceiling measurement appends to."""
    import types

    import torch

    from checks.benchmark import timing

    spec = types.ModuleType("fake_spec")
    spec.__file__ = __file__
    spec.SHAPES = [dict(name="4x8", role="comparison", rows=4, cols=8)]
    spec.DTYPES = ["fp32"]
    spec.make_inputs = lambda shape, dtype, device, seed: {
        "x": torch.randn(shape["rows"], shape["cols"], generator=torch.Generator().manual_seed(seed))
    }
    spec.oracle = lambda inputs, shape: torch.softmax(inputs["x"].double(), dim=-1)
    spec.work = lambda shape, dtype: {"bytes": 256, "flops": None}
    spec.variants = lambda mod, inputs, shape: [
        dict(name="torch.softmax", role="baseline", config={}, fn=lambda: torch.softmax(inputs["x"], -1)),
    ]

    def timers(timing_mode, cache, quick, cap_s=None):
        rng = random.Random(0)

        def sampler(kind):
            def start(fn):
                def next_round():
                    out = fn()
                    empty = out is None  # the harness's empty candidate
                    return [spec_samples(kind, empty, rng) for _ in range(10)]

                return next_round

            return start

        return (
            {
                "graph": RoundTimer(sampler("graph"), 0.01, 1.0),
                "events": RoundTimer(sampler("events"), 0.02, 1.0, harness=True),
            },
            "fake round timers",
        )

    measured = []
    monkeypatch.setattr(bench_cli, "DEVICE", "cpu")
    monkeypatch.setattr(bench_cli, "cuda_problem", lambda: None)
    monkeypatch.setattr(bench_cli, "load_spec", lambda op: spec)
    monkeypatch.setattr(timing, "make_timers", timers)
    monkeypatch.setattr(timing, "measure_ceilings", lambda quick: measured.append(quick) or dict(MEASURED))
    monkeypatch.setattr(timing, "environment", lambda: dict(ENV))
    return measured


def test_the_command_keeps_ceilings_and_reports_aa_and_the_harness_cost(tmp_path, monkeypatch, capsys):
    def samples(kind, empty, rng):
        if empty:
            return 0.0005  # the loop's own cost: 0.5 us per call
        return (0.004 if kind == "graph" else 0.0105) * (1 + rng.uniform(-0.001, 0.001))

    measured = _fake_command(monkeypatch, samples)
    learner = tmp_path / "strided_softmax.py"
    learner.write_text(LEARNER)
    kept = tmp_path / "kept" / "ceilings.json"
    out = tmp_path / "run.json"
    args = ["--op", "strided_softmax", "--file", str(learner), "--output", str(out), "--ceilings", str(kept)]
    assert bench_cli.main(args + ["--aa"]) == 0
    printed = capsys.readouterr().out
    assert measured == [False] and kept.is_file()
    assert "measuring ceilings" in printed and f"kept in {kept}" in printed
    payload = json.loads(out.read_text())
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(
        (Path(__file__).resolve().parent.parent / "results/schema/benchmark.schema.json").read_text()
    )
    jsonschema.Draft202012Validator(schema).validate(payload)
    row = payload["results"][0]
    assert row["harness_us"] == pytest.approx(0.5) and row["per_call_us"] == pytest.approx(10.0, rel=0.01)
    assert row["converged"] is True and row["median_low_us"] <= row["median_us"] <= row["median_high_us"]
    assert row["working_set_bytes"] == 4 * 128 and row["colder_than_label"] is False
    assert row["aa"]["device_diff"] < 0.01
    assert payload["aa"]["device"]["n"] == 1 and payload["aa"]["per_call"]["worst"] < 0.01
    assert payload["harness"]["median_us"] == pytest.approx(0.5)
    assert payload["ceilings"]["cached"] is False
    assert "A/A (every variant timed twice)" in printed and "90th percentile" in printed
    assert "harness cost per call" in printed and "0.50 us" in printed

    # the second run takes the kept ceilings and measures nothing; no --aa, no A/A
    assert bench_cli.main(args) == 0
    printed = capsys.readouterr().out
    assert measured == [False] and "measuring ceilings" not in printed and "kept from" in printed
    payload = json.loads(out.read_text())
    assert payload["ceilings"]["cached"] is True and payload["ceilings"]["copy_gbps"] == 4000.0
    assert payload["aa"] is None and payload["results"][0]["aa"] is None and "A/A" not in printed

    assert bench_cli.main(args + ["--remeasure-ceilings"]) == 0
    assert measured == [False, False]


def test_ceilings_that_is_a_folder_is_a_usage_error(tmp_path, capsys):
    code = bench_cli.main(["--op", "all", "--solution", "--ceilings", str(tmp_path)])
    assert code == 64 and "--ceilings" in capsys.readouterr().err


def test_the_aa_lines_say_each_kind():
    lines = bench_cli.aa_lines(statistics.aa_summary([]))
    assert lines[0].startswith("A/A") and "not measured" in lines[1]
