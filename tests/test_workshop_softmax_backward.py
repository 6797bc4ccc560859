"""I2 softmax backward: the reference answer passes, the starter is TODO, every wrong
version is caught by the checks named for it.  Runs in Triton's interpreter (conftest)."""

import importlib
import json
from pathlib import Path

import torch

from checks.judging.engine import cases_for, load_exercise
from workshops import catalog

WID = "softmax_backward"
FOLDER = Path(__file__).resolve().parent.parent / "workshops" / WID

# Checks that only exercise the wrapper's metadata validation: they pass on the starter.
VALIDATION_ONLY = {"rejects-types", "rejects-shapes", "rejects-options", "rejects-device-and-grad"}
GPU_ONLY = {"nondefault-stream"}


def test_catalog_entry():
    w = catalog.get(WID)
    assert (w.code, w.level, w.device, w.sessions) == ("I2", "intermediate", "GPU", "2-4")
    assert w.functions == ("backward",)
    meta = json.loads((FOLDER / "meta.json").read_text())
    assert meta["id"] == WID


def test_first_check_is_the_worked_example():
    # own-kernel first (is it your kernel at all?), then the first numeric verdict
    assert [c.id for c in cases_for(WID)[:2]] == ["own-kernel", "worked-example"]


def test_hints_have_four_tiers():
    hints = catalog.get(WID).hints
    assert len(hints) == 4
    assert all(h.startswith(f"## Hint {i + 1}:") for i, h in enumerate(hints))


# --- unit tests of the subtle parts --------------------------------------------------------


def test_oracle_worked_example_and_dense_jacobian():
    cases = importlib.import_module("checks.judging.cases.softmax_backward")
    y = torch.tensor([[0.25, 0.75]], dtype=torch.float64)
    g = torch.tensor([[2.0, -1.0]], dtype=torch.float64)
    assert torch.allclose(cases.vjp64(y, g), torch.tensor([[0.5625, -0.5625]], dtype=torch.float64))
    # The VJP equals g^T J with the dense Jacobian J = diag(y) - y y^T (what the kernel avoids).
    x = torch.randn(3, 6, dtype=torch.float64)
    y = torch.softmax(x, dim=-1)
    g = torch.randn(3, 6, dtype=torch.float64)
    dense = torch.stack([g[r] @ (torch.diag(y[r]) - torch.outer(y[r], y[r])) for r in range(3)])
    assert torch.allclose(cases.vjp64(y, g), dense, atol=1e-14)


def test_draw_gives_independent_y_and_g():
    from checks.judging.case import Context

    cases = importlib.import_module("checks.judging.cases.softmax_backward")
    y, g = cases.draw_case(Context(case_id="x"), (3, 5))
    assert torch.allclose(y.sum(-1), torch.ones(3, dtype=torch.float64))
    logits_like = torch.log(y) - torch.log(y).mean(-1, keepdim=True)
    assert not torch.allclose(logits_like, g - g.mean(-1, keepdim=True))


def test_rows_per_program_packs_only_narrow_rows():
    """Narrow rows share a program (partial last group masked); wide rows get one each."""
    mod = load_exercise(FOLDER / "solution.py")
    for rows, cols in ((33, 40), (17, 1), (5, 1025), (1, 8192)):
        y = torch.softmax(torch.randn(rows, cols, dtype=torch.float64), -1).float()
        g = torch.randn(rows, cols)
        dx = mod.backward(y, g)
        want = y.double() * (g.double() - (y.double() * g.double()).sum(-1, keepdim=True))
        assert torch.allclose(dx.double(), want, atol=1e-6), (rows, cols)


def test_benchmark_spec_interface():
    spec = importlib.import_module("checks.benchmark.shapes.softmax_backward")
    assert [s["name"] for s in spec.SHAPES] == ["256x1025", "1024x4097", "16384x8192"]
    assert [s["role"] for s in spec.SHAPES] == ["comparison", "comparison", "roofline"]
    assert spec.DTYPES == ["fp16", "fp32", "bf16"]
    assert spec.work(spec.SHAPES[2], torch.float16)["bytes"] == 16384 * 8192 * 2 * 3
    mod = load_exercise(FOLDER / "solution.py")
    shape = dict(name="4x33", role="comparison", rows=4, cols=33)
    inputs = spec.make_inputs(shape, torch.float32, "cpu", seed=1)
    assert set(inputs) == {"y", "grad_output"}
    expected = spec.oracle(inputs, shape)
    assert expected.dtype == torch.float64
    variants = spec.variants(mod, inputs, shape)
    roles = [v["role"] for v in variants]
    plain = [v for v in variants if v["role"] == "candidate" and "launch" not in v["config"]]
    assert roles.count("baseline") == 1 and len(plain) == 2
    assert sorted(v["config"].get("num_warps") for v in plain) == [4, 8]
    # the default launch again, through cached handles (what Triton's dispatch costs)
    assert [v["name"] for v in variants if "launch" in v["config"]] == ["triton num_warps=4, cached handle"]
    for v in variants:
        out = v["fn"]()
        assert torch.allclose(out.double(), expected, atol=1e-5), v["name"]


# --- a reference answer passes at every seed ---------------------------------------------------


def test_the_reference_passes_large_gradient_offset_at_every_seed_and_an_fp16_dot_fails():
    # The fp32 case's g near 1000: a right fp32 dot is rounded at fp32's spacing there and
    # the cancellation in g - dot keeps it (seeds 3 and 6 once went past the bare fp32 atol).
    from checks.judging.engine import run_checks

    for seed in range(1, 9):
        (rec,) = run_checks(
            WID, FOLDER / "solution.py", interpret=True, only=["large-gradient-offset"], seed=seed
        )
        assert rec.status == "pass", (seed, rec.message)
    for seed in (3, 6):
        path = FOLDER / "wrong" / "half_precision_dot.py"
        (rec,) = run_checks(WID, path, interpret=True, only=["large-gradient-offset"], seed=seed)
        assert rec.status == "fail" and rec.details["mistake"]["id"] == "half-precision-dot", seed


def test_the_allowance_for_the_fp32_dot_is_its_rounding_bound_and_far_below_an_fp16_dot():
    from checks.judging.cases.softmax_backward import _fp32_dot_rounding

    y = torch.full((1, 16), 1 / 16, dtype=torch.float32)
    g = torch.full((1, 16), 1000.0, dtype=torch.float32)
    # 16 columns: the products and 4 tree levels, 5 roundings of 2^-24 * 1000, carried by y = 1/16
    assert abs(_fp32_dot_rounding(y, g) - 5 * 2.0**-24 * 1000 / 16) < 1e-12
    assert _fp32_dot_rounding(y, g) < 0.25 / 16 / 100  # fp16's rounding near 1000 is 0.25


def test_an_output_that_is_grad_output_itself_is_told_so(tmp_path):
    from checks.judging.engine import run_checks

    source = (catalog.get("softmax_backward").folder / "solution.py").read_text()
    fresh = "dx = torch.empty((n_rows, n_cols), dtype=y.dtype, device=y.device)"
    assert fresh in source
    path = tmp_path / "in_place.py"
    path.write_text(source.replace(fresh, "dx = grad_output  # written in place"))
    first, sums, fresh = run_checks(
        "softmax_backward",
        path,
        interpret=True,
        only=["no-autograd-graph", "rows-sum-to-zero", "fresh-output"],
    )
    assert first.status == "fail"
    assert first.message.startswith("the output is grad_output itself (or a view of it)"), first.message
    # the values compared with an oracle of the overwritten input: said, not related
    assert sums.status == "fail" and sums.details["relation"]["id"] == "written-into-input"
    assert sums.message.startswith("Your result is the input grad_output itself, written in place")
    assert fresh.status == "fail" and "shares memory with grad_output" in fresh.message


def test_an_error_of_triton_s_rules_says_what_to_do_and_its_traceback_is_the_learners(tmp_path):
    from checks.judging.engine import run_checks

    source = (catalog.get("softmax_backward").folder / "solution.py").read_text()
    assert "BLOCK_COLS=block_cols," in source
    path = tmp_path / "not_a_power_of_two.py"
    path.write_text(source.replace("BLOCK_COLS=block_cols,", "BLOCK_COLS=n_cols,"))
    (rec,) = run_checks("softmax_backward", path, interpret=True, only=["matches-autograd"])
    assert rec.status == "error" and "arange's range must be a power of 2" in rec.message
    assert "triton.next_power_of_2(n)" in rec.message
    shown = rec.details["traceback"]
    assert shown.startswith("Traceback (most recent call last):")  # whole lines, from the top
    assert "not_a_power_of_two.py" in shown and "/checks/judging/" not in shown  # no checker frames
