"""Benchmark spec for A2, wide-row split softmax (the harness times it; this file only
describes the work).

Few, very wide rows are where the split pays: torch.softmax gives each row to one
block, so 4 rows keep 4 of the H200's 132 SMs busy.  At 1024 rows every SM already has
work, and the split's extra reread of x (three passes instead of two) must be paid for
by better bandwidth alone.
"""

import torch

from checks.benchmark.kernels import with_cached_handle
from checks.judging.cases.split_softmax import split_oracle

SHAPES = [
    dict(name="4x32769", role="comparison", rows=4, cols=32769),
    dict(name="64x131072", role="comparison", rows=64, cols=131072),
    dict(name="4x131072", role="roofline", rows=4, cols=131072),
    dict(name="1024x131072", role="roofline", rows=1024, cols=131072),
]
DTYPES = ["fp32", "fp16", "bf16"]
CHUNK_SIZES = (256, 1024, 4096)

# Speed targets for the reference answer on an H200 (see checks/benchmark/targets.py),
# and triton-cuda-lab, the reference course, on the same H200: shape -> (PyTorch
# baseline us, its best answer us), fp32, graph timing.
TARGETS = [
    dict(
        shape="4x131072",
        dtype="fp32",
        kind="vs_baseline",
        target=3.0,
        what="4x131072 fp32: best candidate >= 3x torch.softmax",
    ),
    dict(
        shape="1024x131072",
        dtype="fp32",
        kind="vs_baseline",
        target=1.2,
        what="1024x131072 fp32: best candidate >= 1.2x torch.softmax",
    ),
]
REFERENCE_COURSE = {"4x32769": (12.13, 5.13), "64x131072": (32.86, 14.09)}


def make_inputs(shape: dict, dtype: torch.dtype, device: str, seed: int) -> dict:
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    x = torch.randn(shape["rows"], shape["cols"], generator=g, dtype=torch.float32) * 2.0
    return {"x": x.to(dtype).to(device)}


def oracle(inputs: dict, shape: dict) -> torch.Tensor:
    return split_oracle(inputs["x"], device=inputs["x"].device)


def work(shape: dict, dtype: torch.dtype) -> dict:
    elem = torch.empty((), dtype=dtype).element_size()
    # Minimal traffic: x read once, the output written once.  The split answer reads x
    # twice (stats, then normalize), plus a few bytes of scratch per chunk.
    return {"bytes": shape["rows"] * shape["cols"] * elem * 2, "flops": None}


def variants(mod, inputs: dict, shape: dict) -> list:
    x = inputs["x"]
    out = [
        {
            "name": f"split chunk_size={c}",
            "role": "candidate",
            "config": {"chunk_size": c},
            "fn": (lambda c=c: mod.softmax(x, chunk_size=c)),
        }
        for c in CHUNK_SIZES
    ]
    out.append(
        {"name": "torch.softmax", "role": "baseline", "config": {}, "fn": lambda: torch.softmax(x, -1)}
    )
    return with_cached_handle(out, {"chunk_size": 1024})  # the default, through cached handles
