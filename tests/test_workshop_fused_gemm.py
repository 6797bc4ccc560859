"""I3, GEMM with bias and ReLU: the reference answer, the starter and the kept wrong
answers against the named checks (Triton's interpreter on the CPU; conftest sets
TRITON_INTERPRET=1), plus unit tests of the parts that are easy to get subtly wrong:
the pid -> tile map, the one-rounding construction and the benchmark spec.
"""

import importlib
import itertools
from types import SimpleNamespace

import pytest
import torch

from checks.judging.engine import cases_for, load_exercise, run_checks
from workshops import catalog

WID = "fused_gemm"
W = catalog.get(WID)
CASES = {c.id: c for c in cases_for(WID)}
INTERPRETABLE = {i for i, c in CASES.items() if c.interpreter}
GPU_ONLY = {i for i, c in CASES.items() if not c.interpreter}
# Checks that exercise only the wrapper's validation, which the starter already has.
VALIDATION_ONLY = {
    "rejects-dtype",
    "rejects-shape",
    "rejects-options",
    "layout-rejected",
    "rejects-device",
    "rejects-requires-grad",
}


def _by_id(records):
    return {r.id: r for r in records}


def test_catalog_entry():
    assert (W.code, W.level, W.device, W.sessions) == ("I3", "intermediate", "GPU", "2-4")
    assert W.functions == ("matmul_bias_relu",)
    assert W.title == "GEMM with bias and ReLU"
    assert len(W.hints) == 4 and all(h.startswith(f"## Hint {i + 1}:") for i, h in enumerate(W.hints))


def test_bf16_checks_are_gpu_only():
    for c in CASES.values():
        if "bf16" in c.id:
            assert not c.interpreter and "bf16 tl.dot" in c.interpreter_reason


# --- unit tests -----------------------------------------------------------------------------


def _grouped_order(num_pid_m, num_pid_n, group_m):
    """The grouped launch order written out by enumeration (independent of the arithmetic):
    super-rows of group_m tile rows, each swept column by column, top to bottom."""
    order = []
    for first in range(0, num_pid_m, group_m):
        rows = range(first, min(first + group_m, num_pid_m))
        for col in range(num_pid_n):
            order.extend((row, col) for row in rows)
    return order


def test_tile_of_matches_the_enumerated_order():
    mod = load_exercise(W.solution)
    assert [mod.tile_of(p, 3, 2, 2) for p in (4, 5)] == [(2, 0), (2, 1)]
    for nm, nn, g in itertools.product(range(1, 12), range(1, 6), (1, 2, 4, 8)):
        got = [mod.tile_of(p, nm, nn, g) for p in range(nm * nn)]
        assert got == _grouped_order(nm, nn, g), (nm, nn, g)


def test_fixed_group_size_loses_tiles_exactly_when_the_last_group_is_short():
    mod = load_exercise(W.folder / "wrong" / "fixed_group_size.py")
    for nm, nn, g in itertools.product(range(1, 12), range(1, 6), (4, 8)):
        owned = {mod.tile_of(p, nm, nn, g) for p in range(nm * nn)}
        complete = owned == {(i, j) for i in range(nm) for j in range(nn)}
        # A full last group (or a single tile column) hides the bug.
        assert complete == (nm % g == 0 or nn == 1), (nm, nn, g)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_exact_epilogue_values_separate_one_and_two_roundings(dtype):
    cases = importlib.import_module("checks.judging.cases.fused_gemm")
    ctx = type("Ctx", (), {"device": "cpu"})()
    a, b, bias = cases._exact_epilogue_operands(ctx, dtype)
    acc = a.double() @ b.double()  # exact: small integers times 1
    one = torch.relu(acc + bias.double())
    assert torch.equal(one.to(dtype).double(), one)  # the contract's answer is representable
    assert not torch.equal(acc.to(dtype).double(), acc)  # ...but the accumulator is not
    two = torch.relu(acc.to(dtype) + bias).double()  # the cast-early epilogue
    differs = (two != one).float().mean().item()
    assert differs > 0.5, differs


def test_solution_rejects_an_output_past_int32():
    mod = load_exercise(W.solution)
    n = 46341
    a, b, bias = torch.ones(n, 0).half(), torch.ones(0, n).half(), torch.ones(n).half()
    with pytest.raises(ValueError, match="32-bit"):
        mod.matmul_bias_relu(a, b, bias)


def test_solution_k_zero_is_relu_of_bias_and_fresh():
    mod = load_exercise(W.solution)
    bias = torch.tensor([-1.0, 0.5, 2.0, -0.0], dtype=torch.float16)
    got = mod.matmul_bias_relu(torch.ones(3, 0).half(), torch.ones(0, 4).half(), bias)
    assert torch.equal(got, torch.relu(bias).expand(3, 4)) and got.is_contiguous()


def test_benchmark_spec():
    spec = importlib.import_module("checks.benchmark.shapes.fused_gemm")
    assert [s["name"] for s in spec.SHAPES] == ["127x65x33", "512x512x512", "4096x4096x4096"]
    assert [s["role"] for s in spec.SHAPES] == ["comparison", "comparison", "roofline"]
    assert all(s["name"] == f"{s['M']}x{s['N']}x{s['K']}" for s in spec.SHAPES)
    assert spec.DTYPES == ["fp16", "bf16"]
    big = spec.SHAPES[-1]
    w = spec.work(big, torch.bfloat16)
    assert w["flops"] == 2 * 4096**3 and w["bytes"] == (3 * 4096 * 4096 + 4096) * 2

    mod = load_exercise(W.solution)
    shape = spec.SHAPES[0]
    inputs = spec.make_inputs(shape, torch.float16, "cpu", seed=3)
    again = spec.make_inputs(shape, torch.float16, "cpu", seed=3)
    assert all(torch.equal(inputs[k], again[k]) for k in inputs)
    assert tuple(inputs["a"].shape) == (127, 33) and tuple(inputs["b"].shape) == (33, 65)
    want = spec.oracle(inputs, shape)
    assert want.dtype == torch.float64 and tuple(want.shape) == (127, 65)

    vs = spec.variants(mod, inputs, shape)
    roles = [v["role"] for v in vs]
    assert roles.count("baseline") == 1 and roles.count("peer") == 1
    configs = {(v["config"]["tile_m"], v["config"]["group_m"]) for v in vs if v["role"] == "candidate"}
    assert configs == set(itertools.product((16, 32, 64, 128), (1, 4, 8)))
    for v in vs:
        got = v["fn"]()
        torch.testing.assert_close(got.double(), want, atol=2e-2, rtol=1e-2, msg=v["name"])
    roof = spec.variants(mod, inputs, big)
    assert {v["config"]["tile_m"] for v in roof if v["role"] == "candidate"} == {64, 128}
    # A module that keeps to the contract gets no wide-tile candidates: the starter's
    # validation rejects tile_m=128 before its TODO.
    starter = load_exercise(W.starter)
    assert not spec.accepts_wide_tile(starter, inputs)
    assert {
        v["config"]["tile_m"] for v in spec.variants(starter, inputs, shape) if v["role"] == "candidate"
    } == {16, 32, 64}


# --- the interpreter's share of the scale checks --------------------------------------------


def _interpreted(check_id: str) -> tuple[list, list]:
    """Run one check on the reference in the interpreter: each call's (M, N, K, options) and
    each launch's grid."""
    from checks.judging.case import Context
    from checks.judging.provenance import witnessing

    real = load_exercise(W.solution)
    calls: list = []

    def matmul_bias_relu(
        a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, **options: int
    ) -> torch.Tensor:
        calls.append((a.shape[0], b.shape[1], a.shape[1], options))
        return real.matmul_bias_relu(a, b, bias, **options)

    with witnessing(real.__file__) as w:
        CASES[check_id].fn(
            SimpleNamespace(matmul_bias_relu=matmul_bias_relu),
            Context(case_id=check_id, device="cpu", interpret=True),
        )
    return calls, [launch.grid for launch in w.launches]


def test_many_tiles_interprets_just_past_256_programs_with_tails_and_a_gpu_keeps_thousands() -> None:
    from checks.judging.cases.fused_gemm_guards import many_tiles_shapes

    calls, grids = _interpreted("many-tiles")
    assert calls == [(681, 330, 24, dict(group_m=4, tile_m=16))]
    assert grids == [(258,)]  # 43 x 6 tiles: past a cap of 256, the last group of 4 short
    M, N, K = calls[0][:3]
    assert M % 16 and N % 64 and K < 32  # tails in M and N; K is one step of 32, partly masked
    for M, N, K, options in many_tiles_shapes(interpret=False):
        assert (M, N, K) == (4100, 4000, 72) and -(-M // options["tile_m"]) * -(-N // 64) > 4000


def test_a_grid_capped_at_256_programs_is_caught_by_many_tiles() -> None:
    (rec,) = run_checks(WID, W.folder / "wrong" / "capped_grid.py", interpret=True, only=["many-tiles"])
    assert rec.status == "fail" and "no program" in rec.message, rec.message


def test_wide_tiles_interprets_fewer_tile_rows_of_the_same_k_loop() -> None:
    from checks.judging.cases.fused_gemm import wide_tiles_shape

    calls, grids = _interpreted("wide-tiles")
    assert calls[-1] == (200, 384, 1000, dict(tile_m=128, group_m=8))  # after the tile_m=128 probe
    assert grids[-1] == (4,)  # 2 x 2 tiles of 128 x 256, each 16 K steps of 64 (the last ragged)
    assert wide_tiles_shape(interpret=False) == (512, 384, 1000)


def test_options_sweep_has_a_short_last_group_for_every_group_size() -> None:
    (rec,) = run_checks(
        WID, W.folder / "wrong" / "fixed_group_size.py", interpret=True, only=["options-sweep"]
    )
    assert rec.status == "fail", rec.message  # 5 tile rows of 16: groups of 4 + 1, one short group of 8
