"""Benchmark spec for I2, softmax backward: dx = y * (g - sum(y * g, row)).

The harness times each variant; this module only describes the work.  The minimal
traffic is three streams of the input dtype: read y, read g, write dx.
"""

import torch

from checks.benchmark.kernels import with_cached_handle
from checks.judging.cases.softmax_backward import vjp64

SHAPES = [
    dict(name="256x1025", role="comparison", rows=256, cols=1025),
    dict(name="1024x4097", role="comparison", rows=1024, cols=4097),
    dict(name="16384x8192", role="roofline", rows=16384, cols=8192),
]

DTYPES = ["fp16", "fp32", "bf16"]

# Speed targets for the reference answer on an H200 (see checks/benchmark/targets.py),
# and triton-cuda-lab, the reference course, on the same H200: shape -> (PyTorch
# baseline us, its best answer us), fp16, graph timing.
TARGETS = [
    dict(
        shape="16384x8192",
        dtype="fp16",
        kind="fraction",
        target=0.85,
        what="16384x8192 fp16: best candidate >= 85% of copy bandwidth (3 streams)",
    ),
    dict(
        shape="16384x8192",
        dtype="fp16",
        kind="vs_peer",
        target=1.5,
        what="16384x8192 fp16: best candidate >= 1.5x aten _softmax_backward_data",
    ),
]
REFERENCE_COURSE = {"256x1025": (17.40, 2.13), "1024x4097": (80.21, 9.86)}


def make_inputs(shape: dict, dtype: torch.dtype, device: str, seed: int) -> dict:
    """y: real softmax probabilities (rows sum to 1); grad_output: standard normal.
    Both contiguous, drawn on the device (the roofline shape is 134M elements)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    size = (shape["rows"], shape["cols"])
    logits = torch.randn(size, generator=gen, device=device, dtype=torch.float32)
    y = torch.softmax(logits, dim=-1).to(dtype)
    del logits
    g = torch.randn(size, generator=gen, device=device, dtype=torch.float32).to(dtype)
    return {"y": y, "grad_output": g}


def oracle(inputs: dict, shape: dict) -> torch.Tensor:
    """float64 VJP from the supplied (rounded) y and g, on their device."""
    return vjp64(inputs["y"], inputs["grad_output"], device=inputs["y"].device)


def work(shape: dict, dtype: torch.dtype) -> dict:
    elements = shape["rows"] * shape["cols"]
    elem = torch.empty((), dtype=dtype).element_size()
    # y*g, the sum, g - dot, y * (...): 4 floating-point operations per element.
    return {"bytes": elements * elem * 3, "flops": 4 * elements}


def variants(mod, inputs: dict, shape: dict) -> list:
    y, g = inputs["y"], inputs["grad_output"]
    out = []
    for w in (4, 8):
        out.append(
            {
                "name": f"triton num_warps={w}",
                "role": "candidate",
                "config": {"num_warps": w},
                "fn": (lambda w=w: mod.backward(y, g, num_warps=w)),
            }
        )

    def eager_fp32():
        yf, gf = y.float(), g.float()
        return (yf * (gf - (yf * gf).sum(-1, keepdim=True))).to(y.dtype)

    out.append({"name": "eager fp32 expression", "role": "baseline", "config": {}, "fn": eager_fp32})
    out.append(
        {
            "name": "aten _softmax_backward_data",
            "role": "peer",
            "config": {},
            "fn": lambda: torch.ops.aten._softmax_backward_data(g, y, -1, y.dtype),
        }
    )
    return with_cached_handle(out, {"num_warps": 4})  # the default, through cached handles
