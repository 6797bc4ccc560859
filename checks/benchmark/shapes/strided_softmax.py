"""Benchmark spec for I1, strided softmax (the harness times it; this file describes it).

The comparison shapes are TRANSPOSED views (torch.randn(cols, rows).t()), the layout
this workshop is about: reading them row by row is uncoalesced.  The roofline shapes
compare a contiguous input (copy bandwidth is the ceiling) with the same size
transposed.  Candidates: the learner's softmax with each num_warps, the default
launched through cached handles (what Triton's dispatch costs per call, see
checks/benchmark/kernels.py), and "copy-then-kernel" (x.contiguous() first, then the
kernel), the alternative to direct strided access; the baseline is torch.softmax on the
same view.
"""

import torch

from checks.benchmark.kernels import with_cached_handle
from checks.judging.cases.strided_softmax import softmax_oracle

SHAPES = [
    dict(name="256x257", role="comparison", rows=256, cols=257, transposed=True),
    dict(name="1024x1024", role="comparison", rows=1024, cols=1024, transposed=True),
    dict(name="16384x8192", role="roofline", rows=16384, cols=8192, transposed=False),
    dict(name="16384x8192-t", role="roofline", rows=16384, cols=8192, transposed=True),
]

DTYPES = ["fp32", "fp16", "bf16"]

# Speed targets for the reference answer on an H200 (checks/benchmark/targets.py says
# how each kind is judged), and the figures of triton-cuda-lab, the reference course,
# on the same H200: shape -> (PyTorch baseline us, its best answer us), fp32, graph timing.
TARGETS = [
    dict(
        shape="16384x8192",
        dtype="fp32",
        kind="fraction",
        target=0.85,
        what="16384x8192 fp32 contiguous: best candidate >= 85% of copy bandwidth",
    ),
    dict(
        shape="16384x8192-t",
        dtype="fp32",
        kind="vs_baseline",
        target=2.0,
        what="16384x8192 fp32 transposed view: best candidate >= 2x torch.softmax",
    ),
]
REFERENCE_COURSE = {"256x257": (5.37, 2.59), "1024x1024": (13.70, 8.30)}


def make_inputs(shape: dict, dtype: torch.dtype, device: str, seed: int) -> dict:
    rows, cols = shape["rows"], shape["cols"]
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    if shape["transposed"]:
        # A (rows, cols) view of a contiguous (cols, rows) tensor: strides (1, rows).
        x = torch.randn(cols, rows, generator=g, device=device, dtype=torch.float32).to(dtype).t()
    else:
        x = torch.randn(rows, cols, generator=g, device=device, dtype=torch.float32).to(dtype)
    return {"x": x}


def oracle(inputs: dict, shape: dict) -> torch.Tensor:
    return softmax_oracle(inputs["x"], device=inputs["x"].device)


def work(shape: dict, dtype: torch.dtype) -> dict:
    size = torch.empty((), dtype=dtype).element_size()
    # Minimal traffic: read every input element once, write every output element once.
    return {"bytes": shape["rows"] * shape["cols"] * (size + size), "flops": None}


def variants(mod, inputs: dict, shape: dict) -> list:
    x = inputs["x"]
    out = []
    for w in (4, 8):
        out.append(
            {
                "name": f"num_warps={w}",
                "role": "candidate",
                "config": {"num_warps": w},
                "fn": (lambda w=w: mod.softmax(x, num_warps=w)),
            }
        )
    out.append(
        {
            "name": "copy-then-kernel",
            "role": "candidate",
            "config": {"num_warps": 4, "copy_first": True},
            "fn": lambda: mod.softmax(x.contiguous(), num_warps=4),
        }
    )
    out.append(
        {"name": "torch.softmax", "role": "baseline", "config": {}, "fn": lambda: torch.softmax(x, dim=-1)}
    )
    return with_cached_handle(out, {"num_warps": 4})
