"""Benchmark spec for I3, GEMM with bias and ReLU (the harness does the timing).

Shape names are "MxNxK": C[M, N] = relu(A[M, K] @ B[K, N] + bias[N]).  127x65x33 is
ragged in every dimension (no block divides it), 512x512x512 is a small square GEMM,
4096x4096x4096 is the roofline shape (compute-bound: 137 GFLOP against 100 MB).

Baseline: the fp32 expression, because it is the contract written out (fp32 product,
fp32 bias, ReLU, one cast) -- and slow: an fp32 GEMM plus elementwise passes.  Peer:
cuBLAS relu(addmm(bias, a, b)): where cuBLAS rounds the bias add is its own choice, not
the contract's, and the ReLU is a second pass over C, but it is the speed to aim for at
4096^3 (the solution's tile_m=128 variant should reach at least 0.8x of it).
"""

import torch

from checks.benchmark.kernels import with_cached_handle
from checks.judging.cases.fused_gemm import gemm_oracle

SHAPES = [
    dict(name="127x65x33", role="comparison", M=127, N=65, K=33),
    dict(name="512x512x512", role="comparison", M=512, N=512, K=512),
    dict(name="4096x4096x4096", role="roofline", M=4096, N=4096, K=4096),
]
DTYPES = ["fp16", "bf16"]

# A GEMM rounds more than a softmax: the cuBLAS peer may reduce in reduced precision.
TOLERANCE_SCALE = 2.0
# Speed targets for the reference answer on an H200 (see checks/benchmark/targets.py),
# and triton-cuda-lab, the reference course, on the same H200: shape -> (PyTorch
# baseline us, its best answer us), fp16, graph timing.
TARGETS = [
    dict(
        shape="4096x4096x4096",
        dtype="fp16",
        kind="vs_peer",
        target=0.8,
        what="4096^3 fp16: best candidate >= 0.8x cuBLAS relu(addmm)",
    ),
    dict(
        shape="4096x4096x4096",
        dtype="bf16",
        kind="vs_peer",
        target=0.8,
        what="4096^3 bf16: best candidate >= 0.8x cuBLAS relu(addmm)",
    ),
]
REFERENCE_COURSE = {"127x65x33": (16.27, 3.23), "512x512x512": (28.17, 8.43)}

GROUPS = (1, 4, 8)
SMALL_TILES = (16, 32, 64)  # the contract's tile_m values
ROOFLINE_TILES = (64,)  # the contract's widest tile
WIDE_TILE = 128  # optional extra: the reference's 128x256x64 Hopper tile


def make_inputs(shape: dict, dtype: torch.dtype, device: str, seed: int) -> dict:
    """a[M, K], b[K, N], bias[N]: standard normal values, contiguous, drawn on the device."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    M, N, K = shape["M"], shape["N"], shape["K"]
    a = torch.randn(M, K, generator=g, device=device, dtype=torch.float32).to(dtype)
    b = torch.randn(K, N, generator=g, device=device, dtype=torch.float32).to(dtype)
    bias = torch.randn(N, generator=g, device=device, dtype=torch.float32).to(dtype)
    return {"a": a, "b": b, "bias": bias}


def oracle(inputs: dict, shape: dict) -> torch.Tensor:
    """relu(a @ b + bias) in float64, on the inputs' device."""
    return gemm_oracle(inputs["a"], inputs["b"], inputs["bias"], device=inputs["a"].device)


def work(shape: dict, dtype: torch.dtype) -> dict:
    M, N, K = shape["M"], shape["N"], shape["K"]
    elem = torch.empty((), dtype=dtype).element_size()
    return {"bytes": (M * K + K * N + N + M * N) * elem, "flops": 2 * M * N * K}


def accepts_wide_tile(mod, inputs: dict) -> bool:
    """Does the module accept tile_m=128 (an extension beyond the contract)?  A 1x1x1
    probe: rejected with TypeError/ValueError -> no wide-tile candidates.  Anything
    else (including a TODO) keeps them, so they are reported like the other variants."""
    a = inputs["a"]
    one = dict(device=a.device, dtype=a.dtype)
    try:
        mod.matmul_bias_relu(
            torch.ones(1, 1, **one), torch.ones(1, 1, **one), torch.ones(1, **one), tile_m=WIDE_TILE
        )
    except (TypeError, ValueError):
        return False
    except Exception:  # noqa: BLE001 - reported by the variant itself when it runs
        return True
    return True


def variants(mod, inputs: dict, shape: dict) -> list:
    a, b, bias = inputs["a"], inputs["b"], inputs["bias"]
    dtype = a.dtype
    tiles: tuple[int, ...] = ROOFLINE_TILES if shape["role"] == "roofline" else SMALL_TILES
    if accepts_wide_tile(mod, inputs):
        tiles = tiles + (WIDE_TILE,)
    out = []
    for tile_m in tiles:
        for group_m in GROUPS:
            out.append(
                {
                    "name": f"triton tile_m={tile_m} group_m={group_m}",
                    "role": "candidate",
                    "config": {"tile_m": tile_m, "group_m": group_m},
                    "fn": (lambda t=tile_m, g=group_m: mod.matmul_bias_relu(a, b, bias, group_m=g, tile_m=t)),
                }
            )
    out.append(
        {
            "name": "torch fp32 expression relu(a.float() @ b.float() + bias.float()).to(dtype)",
            "role": "baseline",
            "config": {},
            "fn": lambda: torch.relu(a.float() @ b.float() + bias.float()).to(dtype),
        }
    )
    out.append(
        {
            "name": "cuBLAS relu(addmm(bias, a, b))",
            "role": "peer",
            "config": {},
            "fn": lambda: torch.relu(torch.addmm(bias, a, b)),
        }
    )
    # The wrapper's defaults (tile_m=32 where it is swept), through cached handles.
    return with_cached_handle(out, {"tile_m": 32 if 32 in tiles else tiles[0], "group_m": 4})
