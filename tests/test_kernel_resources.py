"""Registers, spills and shared memory of candidate configurations, compiled for sm_90 on
this machine (Triton ships ptxas; no GPU needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from checks.running import kernel_resources

GEMM = """
import json, sys
import triton.language as tl
from triton.runtime.jit import MockTensor
from checks.running import kernel_resources as kr
from checks.running.variants import jit_function

mod = kr.load_file(kr.REPO / "workshops" / "fused_gemm" / "solution.py")
jit = jit_function(mod, "_matmul_bias_relu_kernel")
t, n = MockTensor(tl.float16), 4096
out = []
for stages in (3, 5):
    kwargs = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=stages)
    out.append(kr.compile_config(jit, (t, t, t, t, n, n, n, n, 1, n, 1, n, 1), kwargs))
print(json.dumps(out))
"""


def test_the_wide_gemm_tile_fits_with_3_stages_and_not_with_5(tmp_path) -> None:
    # in a process of its own, outside the interpreter the tests select
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "-c", GEMM], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    kept, too_big = json.loads(done.stdout.strip().splitlines()[-1])
    assert kept["kept"] and not kept["spills"] and 0 < kept["registers"] <= 255
    # (128x64 + 64x256) fp16 per stage: 48 KiB, three stages
    assert kept["shared_bytes"] == 3 * 48 * 1024
    assert too_big["shared_bytes"] > kernel_resources.SMEM_LIMIT and not too_big["kept"]


def test_ptxas_spills_are_read_from_its_report(monkeypatch) -> None:
    said = "ptxas info    : Used 255 registers, 32 bytes spill stores, 40 bytes spill loads\n"

    real_run = subprocess.run

    def fake_run(cmd, **kw):
        if "-v" not in cmd:
            return real_run(cmd, **kw)  # ptxas --version, asked by Triton
        return subprocess.CompletedProcess(cmd, 0, stdout="", stderr=said)

    monkeypatch.setattr(kernel_resources.subprocess, "run", fake_run)
    got = kernel_resources.ptxas_usage("// no ptx")
    assert got == {"registers": 255, "spill_store_bytes": 32, "spill_load_bytes": 40}
