"""I1 strided softmax: the reference passes, the starter is TODO, every kept wrong answer
is rejected by the checks named for it, and both kernel paths of the reference are right
on every layout.  Runs in Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET).
"""

import importlib
from pathlib import Path

import pytest
import torch

from checks.judging.engine import cases_for, load_exercise, run_checks
from workshops import catalog

WID = "strided_softmax"
FOLDER = Path(__file__).resolve().parent.parent / "workshops" / WID

# Checks that need no kernel: they must pass on the starter.
VALIDATION = {
    "rejects-width",
    "rejects-type",
    "rejects-rank",
    "rejects-num-warps",
    "rejects-requires-grad",
    "rejects-device",
}


def _by_id(records):
    return {r.id: r for r in records}


def _gpu_only():
    return {c.id for c in cases_for(WID) if not c.interpreter}


@pytest.fixture(scope="module")
def solution():
    return load_exercise(FOLDER / "solution.py")


@pytest.mark.parametrize("force", [True, False], ids=["tiles-everywhere", "rows-everywhere"])
def test_each_path_alone_passes_every_check(tmp_path, force):
    """The wrapper picks a path from the strides; each kernel must be right on its own on
    every layout the checks build, so force one path for every input."""
    src = (FOLDER / "solution.py").read_text()
    src += f"\n\ndef use_tiles(x):\n    return {force}\n"
    path = tmp_path / f"forced_{'tiles' if force else 'rows'}.py"
    path.write_text(src)
    records = run_checks(WID, path, interpret=True)
    bad = [(r.id, r.status, r.message) for r in records if r.status != "pass" and r.id not in _gpu_only()]
    assert not bad, bad


def _layouts():
    base = torch.randn(40, 90)
    return {
        "contiguous": (base, False),
        "transpose": (base.t(), True),
        "column-slice": (base[3:30, 5:61], False),
        "column-step": (base[:, 1::3], False),
        "transpose-slice": (base.t()[3:30, 7:35], True),
        "broadcast-row": (base[:1].expand(7, 90), False),
        "broadcast-column": (base[:, :1].expand(40, 9), False),
        "single-row-transposed": (base[:, :1].t(), False),
        "single-column": (base[:, :1], False),
    }


@pytest.mark.parametrize("name", sorted(_layouts()))
def test_use_tiles_follows_the_strides(solution, name):
    x, want = _layouts()[name]
    assert solution.use_tiles(x) is want, (name, x.shape, x.stride())


@pytest.mark.parametrize("block_r,block_c", [(16, 256), (32, 128), (64, 64), (4, 32)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_tiles_kernel_with_each_block_shape(solution, block_r, block_c, dtype):
    """Tile shapes the policy picks only for large row counts, run on small inputs."""
    g = torch.Generator().manual_seed(block_r * 1000 + block_c)
    for x in (
        torch.randn(300, 70, generator=g).to(dtype).t(),  # 70 rows: partial block
        torch.randn(70, 300, generator=g).to(dtype)[5:50, 3:200],
    ):
        out = torch.empty(x.shape, dtype=dtype)
        grid = (triton_cdiv(x.shape[0], block_r),)
        solution.softmax_tiles_kernel[grid](
            x, out, x.shape[0], x.shape[1], x.stride(0), x.stride(1), BLOCK_R=block_r, BLOCK_C=block_c
        )
        torch.testing.assert_close(
            out.double(),
            torch.softmax(x.double(), -1),
            atol=1e-3 if dtype != torch.float32 else 1e-6,
            rtol=1e-2,
        )


def triton_cdiv(a, b):
    return (a + b - 1) // b


@pytest.mark.parametrize("rows", [1, 2, 5, 70, 1000, 8448, 16384, 100000])
@pytest.mark.parametrize("cols", [1, 7, 300, 8192])
@pytest.mark.parametrize("size", [4, 2])
def test_tile_shape_policy(solution, rows, cols, size):
    block_r, block_c = solution.tile_shape(rows, cols, size)
    assert block_r & (block_r - 1) == 0 and block_c & (block_c - 1) == 0
    assert block_r * size <= 128  # at most one cache line per column segment
    assert block_r * block_c <= 4096  # the tile fits the registers of 4 warps
    assert block_c <= max(1, triton_next_pow2(cols))
    if triton_next_pow2(rows) >= 32 // size:
        assert block_r * size >= 32  # at least one 32-byte sector per column
    if rows >= 264 * 128 // size:
        assert block_r == 128 // size  # big row counts get full cache lines


def triton_next_pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


def test_worked_example_addresses():
    """The lesson's arithmetic, checked against torch's own view metadata."""
    base = torch.arange(6.0).reshape(2, 3)
    x = base.t()
    assert x.stride() == (1, 3)
    assert 2 * x.stride(0) + 1 * x.stride(1) == 5 and x[2, 1] == base.reshape(-1)[5]
    assert 0 * x.stride(0) + 1 * x.stride(1) == 3 and x[0, 1] == base.reshape(-1)[3]
    out = torch.empty(3, 2)
    assert out.stride() == (2, 1) and 0 * 2 + 1 == 1  # (0, 1) writes output offset 1


def test_meta_lesson_hints_and_sections():
    w = catalog.get(WID)
    assert (w.code, w.level, w.device, w.sessions, w.functions) == (
        "I1",
        "intermediate",
        "GPU",
        "2-4",
        ("softmax",),
    )
    assert len(w.hints) == 4 and all(h.startswith(f"## Hint {i + 1}:") for i, h in enumerate(w.hints))
    headings = {line[3:].strip() for line in w.lesson.splitlines() if line.startswith("## ")}
    missing = {c.section for c in cases_for(WID)} - headings
    assert not missing, f"check sections without a lesson heading: {missing}"
    assert "python -m checks.benchmark --op strided_softmax" in w.lesson
    assert "## Done when" in w.lesson


def test_benchmark_spec():
    spec = importlib.import_module("checks.benchmark.shapes.strided_softmax")
    assert [s["name"] for s in spec.SHAPES] == ["256x257", "1024x1024", "16384x8192", "16384x8192-t"]
    assert spec.DTYPES[0] == "fp32"
    mod = load_exercise(FOLDER / "solution.py")
    for shape in spec.SHAPES[:1]:  # the interpreter is slow; one small shape
        inputs = spec.make_inputs(shape, torch.float16, "cpu", seed=3)
        x = inputs["x"]
        assert x.shape == (shape["rows"], shape["cols"]) and x.stride() == (1, shape["rows"])
        assert spec.work(shape, torch.float16)["bytes"] == shape["rows"] * shape["cols"] * 4
        expected = spec.oracle(inputs, shape)
        variants = spec.variants(mod, inputs, shape)
        assert [v["role"] for v in variants].count("baseline") == 1
        assert {v["name"] for v in variants} >= {"num_warps=4", "num_warps=8", "copy-then-kernel"}
        for v in variants:
            torch.testing.assert_close(v["fn"]().double(), expected, atol=2e-3, rtol=2e-2)
    big = spec.SHAPES[2]
    assert spec.work(big, torch.float32)["bytes"] == 16384 * 8192 * 8


def test_the_transpose_checks_reason_speaks_of_the_load_and_the_store():
    # the case reads a transposed input and writes a contiguous output: a failure can
    # be either side's, so its reason must not blame the loads alone
    from checks.judging.engine import cases_for

    (case,) = [c for c in cases_for("strided_softmax") if c.id == "transpose"]
    assert "load" in case.why and "store" in case.why and "(n_cols, 1)" in case.why
    from workshops import catalog

    w = catalog.get("strided_softmax")
    (rec,) = run_checks(
        w.id, w.folder / "wrong" / "input_strides_for_output.py", interpret=True, only=["column-slice"]
    )
    assert rec.status == "fail" and "mask this access" not in rec.message
    assert "step like the elements of x_ptr" in rec.message
