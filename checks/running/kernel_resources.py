"""Registers, spills and shared memory of kernel configurations, compiled for the H200 here.

Without a GPU, Triton still compiles for sm_90 and ships ptxas: each candidate
configuration of a reference answer's kernel is compiled at the shape it would be timed
at, its shared memory read from the compiled kernel and its registers and spills from
``ptxas -v`` on the same PTX.  A configuration that spills, or asks for more shared memory
than one H200 block may have, is pruned before anything is timed::

    python -m checks.running.kernel_resources --study gemm --json OUT.json
    python -m checks.running.kernel_resources --study attention

The variant of each configuration is worked out by Triton's own binder from stand-in
tensors (:class:`triton.runtime.jit.MockTensor`: dtype only, a 16-byte aligned pointer),
as :mod:`checks.running.variant_report` does for the checks' launches.
"""

from __future__ import annotations

import argparse
import itertools
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from checks.running.variant_report import TARGET, SpecializationRecorder

SMEM_LIMIT = 232_448  # bytes of shared memory one block may use on sm_90 (227 KiB)
REPO = Path(__file__).resolve().parents[2]


def ptxas_usage(ptx: str, arch: int = 90) -> dict:
    """Registers and spill bytes that ``ptxas -v`` reports for ``ptx`` (sm_<arch>a)."""
    from triton import knobs

    with tempfile.TemporaryDirectory(prefix="kernel-resources-") as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx, encoding="utf-8")
        done = subprocess.run(
            [
                knobs.nvidia.ptxas.path,
                "-v",
                f"--gpu-name=sm_{arch}a",
                "-o",
                str(Path(tmp) / "k.cubin"),
                str(src),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    text = done.stdout + done.stderr
    regs = re.search(r"Used (\d+) registers", text)
    stores = re.search(r"(\d+) bytes spill stores", text)
    loads = re.search(r"(\d+) bytes spill loads", text)
    return {
        "registers": int(regs.group(1)) if regs else None,
        "spill_store_bytes": int(stores.group(1)) if stores else None,
        "spill_load_bytes": int(loads.group(1)) if loads else None,
    }


def compile_config(jit: Any, args: tuple, kwargs: dict, target: tuple = TARGET) -> dict:
    """Compile one launch's variant of ``jit`` for ``target``; its resources."""
    from checks.running.variants import compile_variant

    recorder = SpecializationRecorder(jit.fn.__code__.co_filename, target)
    ident = recorder.record(jit, jit.fn, args, kwargs)
    t0 = time.perf_counter()
    kernel = compile_variant(jit, recorder.variants[ident]["data"], target)
    seconds = time.perf_counter() - t0
    got = {"shared_bytes": int(kernel.metadata.shared), "compile_s": round(seconds, 2)}
    got.update(ptxas_usage(kernel.asm["ptx"], target[1]))
    spills = (got["spill_store_bytes"] or 0) + (got["spill_load_bytes"] or 0)
    got["fits"] = got["shared_bytes"] <= SMEM_LIMIT
    got["spills"] = spills > 0
    got["kept"] = got["fits"] and not got["spills"]
    return got


def load_file(path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"resources_{path.parent.name}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def gemm_configs() -> list:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) candidates for 4096^3 fp16 on Hopper."""
    grid = itertools.product((128,), (128, 256), (32, 64), (4, 8), (3, 4, 5))
    return [c for c in grid if not (c[1] == 256 and c[3] == 4)]  # 128x256 on 4 warps: no


def study_gemm(size: int = 4096) -> list:
    import triton.language as tl
    from triton.runtime.jit import MockTensor

    from checks.running.variants import jit_function

    mod = load_file(REPO / "workshops" / "fused_gemm" / "solution.py")
    jit = jit_function(mod, "_matmul_bias_relu_kernel")
    t = MockTensor(tl.float16)
    out = []
    for bm, bn, bk, warps, stages in gemm_configs():
        args = (t, t, t, t, size, size, size, size, 1, size, 1, size, 1)
        kwargs = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
        got = compile_config(jit, args, kwargs)
        out.append({"config": dict(kwargs), "shape": f"{size}^3 fp16", **got})
        print(_line(out[-1]), flush=True)
    return out


def attention_configs() -> list:
    """(BLOCK_M, BLOCK_N, num_warps, num_stages, causal) candidates for B4 H16 N2048 D64 fp16."""
    return list(itertools.product((64, 128), (32, 64, 128), (4, 8), (2, 3, 4), (False, True)))


def study_attention(b: int = 4, h: int = 16, n: int = 2048, d: int = 64) -> list:
    import math

    import triton.language as tl
    from triton.runtime.jit import MockTensor

    from checks.running.variants import jit_function

    mod = load_file(REPO / "workshops" / "streaming_attention" / "solution.py")
    jit = jit_function(mod, "_attention_kernel")
    t = MockTensor(tl.float16)
    strides = (h * n * d, n * d, d, 1)
    out = []
    for bm, bn, warps, stages, causal in attention_configs():
        if bn > bm:
            continue  # a query block must hold whole key tiles (the diagonal starts on a tile)
        args = (t, t, t, t, n, h, 1.0 / math.sqrt(d) * 1.4426950408889634, *strides, *strides, *strides)
        kwargs = dict(
            HEAD_DIM=d,
            BLOCK_M=bm,
            BLOCK_N=bn,
            CAUSAL=causal,
            SKIP_FUTURE_TILES=causal,
            num_warps=warps,
            num_stages=stages,
        )
        got = compile_config(jit, args, kwargs)
        out.append({"config": dict(kwargs), "shape": f"B{b} H{h} N{n} D{d} fp16", **got})
        print(_line(out[-1]), flush=True)
    return out


def time_on_gpu(study: str, rows: list) -> None:
    """On a CUDA GPU, time each kept configuration (CUDA-graph replay, warm L2) beside the
    library's own op at the same shape (cuBLAS addmm + relu; SDPA): ``us`` and
    ``ratio_to_library`` (library time / ours: >= 1.0 is at or past it) in each row."""
    import math

    import torch
    import triton
    import triton.testing

    from checks.running.variants import jit_function

    dev, f16 = "cuda", torch.float16
    if study == "gemm":
        n = 4096
        a, b = torch.randn(n, n, device=dev, dtype=f16), torch.randn(n, n, device=dev, dtype=f16)
        bias, c = torch.randn(n, device=dev, dtype=f16), torch.empty(n, n, device=dev, dtype=f16)
        jit = jit_function(
            load_file(REPO / "workshops" / "fused_gemm" / "solution.py"), "_matmul_bias_relu_kernel"
        )
        library: dict = {False: lambda: torch.relu(torch.addmm(bias, a, b))}

        def launch(cfg: dict) -> Any:
            grid = (triton.cdiv(n, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
            return lambda: jit[grid](a, b, bias, c, n, n, n, n, 1, n, 1, n, 1, **cfg)
    else:
        bh, h, n, d = 64, 16, 2048, 64
        q, k, v = (torch.randn(4, h, n, d, device=dev, dtype=f16) for _ in range(3))
        o = torch.empty_like(q)
        jit = jit_function(
            load_file(REPO / "workshops" / "streaming_attention" / "solution.py"), "_attention_kernel"
        )
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def library_call(causal: bool) -> Any:
            return lambda: sdpa(q, k, v, is_causal=causal)

        library = {c: library_call(c) for c in (False, True)}
        scale = 1.0 / math.sqrt(d) * 1.4426950408889634

        def launch(cfg: dict) -> Any:
            grid = (bh, triton.cdiv(n, cfg["BLOCK_M"]))
            return lambda: jit[grid](q, k, v, o, n, h, scale, *q.stride(), *k.stride(), *v.stride(), **cfg)

    baseline = {c: triton.testing.do_bench_cudagraph(fn) * 1e3 for c, fn in library.items()}
    for r in rows:
        if not r["kept"]:
            continue
        cfg = r["config"]
        try:
            us = triton.testing.do_bench_cudagraph(launch(cfg)) * 1e3
        except Exception as e:  # noqa: BLE001 - e.g. out of resources: said in the row
            r["gpu_error"] = f"{type(e).__name__}: {str(e)[:200]}"
            continue
        lib = baseline[bool(cfg.get("CAUSAL", False))]
        r.update(us=round(us, 2), library_us=round(lib, 2), ratio_to_library=round(lib / us, 3))
        print(f"{_line(r)}  {us:8.1f} us  x{lib / us:.3f} of the library", flush=True)


def _line(r: dict) -> str:
    c = r["config"]
    cfg = " ".join(f"{k}={v}" for k, v in c.items() if k not in ("HEAD_DIM", "SKIP_FUTURE_TILES"))
    verdict = "kept" if r["kept"] else ("SPILLS" if r["spills"] else "TOO MUCH SMEM")
    return (
        f"{cfg:<70} regs {r['registers']!s:>4}  spill {r['spill_store_bytes']}/{r['spill_load_bytes']} B  "
        f"smem {r['shared_bytes'] / 1024:6.1f} KiB  {r['compile_s']:5.2f} s  {verdict}"
    )


def main(argv: Optional[list] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m checks.running.kernel_resources", description=__doc__.split("\n")[0]
    )
    p.add_argument("--study", choices=("gemm", "attention", "all"), default="all")
    p.add_argument("--json", type=Path, help="write the rows as JSON here")
    p.add_argument(
        "--time",
        action="store_true",
        help="on a CUDA GPU, also time each kept configuration beside cuBLAS / SDPA",
    )
    args = p.parse_args(argv)
    found: dict = {}
    if args.study in ("gemm", "all"):
        found["gemm"] = study_gemm()
    if args.study in ("attention", "all"):
        found["attention"] = study_attention()
    if args.time:
        for study, rows in found.items():
            time_on_gpu(study, rows)
    if args.json:
        from checks.json_files import write_json_atomic

        write_json_atomic(args.json, {"target": list(TARGET), "smem_limit_bytes": SMEM_LIMIT, **found})
    return 0


if __name__ == "__main__":
    sys.exit(main())
