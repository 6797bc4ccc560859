"""The variant report: each launch in the interpreter named as the variant Triton would
compile for the H200 (dtype, constexprs, launch options, an integer equal to 1 made a
constant, integers and pointers divisible by 16 marked), counted per check, and compiled
for sm_90 on this machine (no GPU needed)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from checks.judging import launches  # noqa: E402
from checks.running import variant_report  # noqa: E402

KERNELS = textwrap.dedent(
    """
    import triton
    import triton.language as tl


    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs * stride, mask=mask)
        tl.store(out_ptr + offs, x * 2, mask=mask)


    def scale(x, out, n, stride, block, num_warps=4):
        scale_kernel[(1,)](x, out, n, stride, BLOCK=block, num_warps=num_warps)
    """
)


@pytest.fixture
def kernels(tmp_path: Path):
    from checks import interpreter
    from checks.judging import engine

    interpreter.select(True)
    path = tmp_path / "scale_kernels.py"
    path.write_text(KERNELS, encoding="utf-8")
    return path, engine.load_exercise(path)


def _specs(recorder) -> list:
    return [json.loads(v["data"]) for v in recorder.variants.values()]


def test_each_distinct_specialization_is_one_variant_and_each_check_says_which(kernels) -> None:
    path, mod = kernels
    recorder = variant_report.SpecializationRecorder(path)
    x, out = torch.zeros(64), torch.zeros(64)
    with launches.listening(recorder):
        recorder.check = "first"
        mod.scale(x, out, 33, 1, 64)  # stride 1: a constant; 33: plain
        mod.scale(x, out, 35, 1, 64)  # the same variant again
        recorder.check = "second"
        mod.scale(x, out, 48, 1, 64)  # 48 is divisible by 16: another variant
        mod.scale(x[1:], out, 33, 1, 64)  # a pointer not 16-byte aligned: another
        mod.scale(x, out, 33, 1, 64, num_warps=8)  # other launch options: another
        mod.scale(x, out, 33, 1, 64)  # the first again
    assert len(recorder.variants) == 4
    first, by_n, unaligned, warps = _specs(recorder)
    assert first["signature"]["stride"] == "constexpr" and first["signature"]["n"] == "i32"
    assert [4] not in first["attrs_keys"] and [0] in first["attrs_keys"]  # x_ptr aligned
    assert [2] in by_n["attrs_keys"]  # n=48: divisible by 16
    assert [0] not in unaligned["attrs_keys"]
    assert warps["options"]["num_warps"] == 8
    ids = list(recorder.variants)
    assert recorder.by_check == {"first": [ids[0]], "second": [ids[1], ids[2], ids[3], ids[0]]}
    assert "BLOCK=64" in recorder.variants[ids[0]]["summary"] and "w8" in recorder.variants[ids[3]]["summary"]


def test_the_recorded_variant_compiles_for_sm90_without_a_gpu(kernels, tmp_path: Path, monkeypatch) -> None:
    path, mod = kernels
    recorder = variant_report.SpecializationRecorder(path)
    with launches.listening(recorder):
        mod.scale(torch.zeros(64), torch.zeros(64), 33, 2, 64)
    report = {
        "workshop": "scale",
        "file": str(path),
        "target": list(variant_report.TARGET),
        "variants": [dict(v, index=i) for i, v in enumerate(recorder.variants.values())],
    }
    variant_report.measure_compiles(report)
    (v,) = report["variants"]
    assert report["compile_errors"] == 0
    assert isinstance(v["compile_cpu_s"], float) and v["compile_cpu_s"] > 0


def test_an_unknown_workshop_is_refused_by_name(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        variant_report.main(["--workshops", "online_normalizer", "--no-compile"])
    assert e.value.code == 2
    assert "--workshops: not GPU workshops: online_normalizer" in capsys.readouterr().err
