"""Benchmark spec for A3, streaming attention (the harness times it; this file describes it).

Causal or full lives in the SHAPE (``causal=True/False``, names "<N>x<D>-causal" and
"<N>x<D>-full"), because the float64 oracle depends on it.  129x32 is ragged for every
tile size; 512x64 is small; 2048x64 is the contract's longest sequence (the roofline
shape).  Single head: at N=2048 there are only 32 query blocks of 64 rows for the
H200's 132 SMs, so the time is set by the busiest program, not by total work.

Candidates: the learner's attention with block_n 32 and 64; for causal shapes, also
skip_future_tiles=False (every key tile visited and masked: the lesson's starting
point), when the learner's function has that option.  Baseline: PyTorch SDPA with
automatic backend selection on [1, 1, N, D] views.  Peer: the eager expression that
materializes the fp32 N x N score matrix, the thing this workshop avoids.

Batched heads ("b4h16-<N>x64-full/-causal", roofline): q, k, v of shape [B, H, N, D]
= [4, 16, N, 64], each a [B, N, H, D] tensor's transpose(1, 2) (the layout a projection
produces), N = 2048 and 4096.  64 heads give the GPU enough programs for causal
skipping to pay.  Baseline: SDPA on the same views; no peer (the fp32 scores would
take gigabytes).
"""

import inspect
import math

import torch

from checks.benchmark.kernels import with_cached_handle
from checks.judging.cases.streaming_attention import attention_oracle
from checks.judging.cases.streaming_attention_heads import heads_oracle

SHAPES = [
    dict(name="129x32-full", role="comparison", n=129, d=32, causal=False),
    dict(name="129x32-causal", role="comparison", n=129, d=32, causal=True),
    dict(name="512x64-full", role="comparison", n=512, d=64, causal=False),
    dict(name="512x64-causal", role="comparison", n=512, d=64, causal=True),
    dict(name="2048x64-full", role="roofline", n=2048, d=64, causal=False),
    dict(name="2048x64-causal", role="roofline", n=2048, d=64, causal=True),
    dict(name="b4h16-2048x64-full", role="roofline", b=4, h=16, n=2048, d=64, causal=False),
    dict(name="b4h16-2048x64-causal", role="roofline", b=4, h=16, n=2048, d=64, causal=True),
    dict(name="b4h16-4096x64-full", role="roofline", b=4, h=16, n=4096, d=64, causal=False),
    dict(name="b4h16-4096x64-causal", role="roofline", b=4, h=16, n=4096, d=64, causal=True),
]
DTYPES = ["fp16", "bf16"]
BLOCK_NS = (32, 64)

# Attention converts P to the input dtype before P @ V (as FlashAttention does): more rounding.
TOLERANCE_SCALE = 2.0
# Speed targets for the reference answer on an H200 (see checks/benchmark/targets.py;
# "2048x64" matches the -causal and -full shapes, ``causal`` picks one), and
# triton-cuda-lab, the reference course, on the same H200: shape -> (PyTorch baseline
# us, its best answer us), fp16, causal rows, graph timing.
TARGETS = (
    [
        dict(
            shape="2048x64",
            dtype="fp16",
            causal=True,
            kind="vs_baseline",
            target=1.0,
            what="N=2048 D=64 fp16 causal: best candidate no slower than SDPA",
        ),
        dict(
            shape="2048x64",
            dtype="fp16",
            causal=False,
            kind="vs_baseline",
            target=1.0,
            what="N=2048 D=64 fp16 full: best candidate no slower than SDPA",
        ),
        dict(
            shape="2048x64",
            dtype="fp16",
            kind="causal_over_full",
            target=0.6,
            what="N=2048 D=64 fp16: causal takes <= 0.6x the time of full",
        ),
    ]
    + [
        dict(
            shape=f"b4h16-{n}x64",
            dtype=dt,
            causal=False,
            kind="vs_baseline",
            target=0.8,
            what=f"B=4 H=16 N={n} D=64 {dt} full: best candidate >= 0.8x SDPA's throughput",
        )
        for n in (2048, 4096)
        for dt in ("fp16", "bf16")
    ]
    + [
        dict(
            shape=f"b4h16-{n}x64",
            dtype=dt,
            kind="causal_over_full",
            target=0.6,
            what=f"B=4 H=16 N={n} D=64 {dt}: causal takes <= 0.6x the time of full",
        )
        for n in (2048, 4096)
        for dt in ("fp16", "bf16")
    ]
)
REFERENCE_COURSE = {"129x32": (8.11, 4.57), "512x64": (10.36, 10.02)}
REFERENCE_COURSE_CAUSAL = True


def make_inputs(shape: dict, dtype: torch.dtype, device: str, seed: int) -> dict:
    """q, k, v: independent standard normal [N, D] tensors, contiguous, drawn on the CPU;
    batched shapes: [B, H, N, D] views of [B, N, H, D] tensors, drawn on the device."""
    n, d = shape["n"], shape["d"]
    if "b" in shape:
        g = torch.Generator(device=device)
        g.manual_seed(seed)
        return dict(
            zip(
                "qkv",
                (
                    torch.randn(shape["b"], n, shape["h"], d, generator=g, device=device)
                    .to(dtype)
                    .transpose(1, 2)
                    for _ in range(3)
                ),
            )
        )
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    q, k, v = (torch.randn(n, d, generator=g, dtype=torch.float32).to(dtype).to(device) for _ in range(3))
    return {"q": q, "k": k, "v": v}


def oracle(inputs: dict, shape: dict) -> torch.Tensor:
    """float64 softmax(q k^T / sqrt(D) [causal mask]) v, on the inputs' device (outside
    the timed calls; only here is the N x N score matrix formed)."""
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    one_oracle = heads_oracle if "b" in shape else attention_oracle
    return one_oracle(q, k, v, shape["causal"], device=q.device)


def work(shape: dict, dtype: torch.dtype) -> dict:
    """Minimal bytes: q, k, v read once and the output written once (4 N D elements).
    FLOPs: 2 N^2 D for Q K^T plus 2 N^2 D for P V; causal needs about half of them."""
    n, d = shape["n"], shape["d"]
    heads = shape.get("b", 1) * shape.get("h", 1)
    elem = torch.empty((), dtype=dtype).element_size()
    flops = 4 * n * n * d * heads
    if shape["causal"]:
        flops //= 2
    return {"bytes": 4 * n * d * elem * heads, "flops": flops}


def _accepts(fn, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def variants(mod, inputs: dict, shape: dict) -> list:
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    causal = shape["causal"]
    has_skip = _accepts(mod.attention, "skip_future_tiles")
    out = []
    for block_n in BLOCK_NS:
        config = {"block_n": block_n, **({"skip_future_tiles": True} if has_skip else {})}
        out.append(
            {
                "name": f"triton block_n={block_n}",
                "role": "candidate",
                "config": config,
                "fn": (lambda bn=block_n: mod.attention(q, k, v, causal=causal, block_n=bn)),
            }
        )
    if causal and has_skip:
        for block_n in BLOCK_NS:
            out.append(
                {
                    "name": f"triton block_n={block_n} visit every tile",
                    "role": "candidate",
                    "config": {"block_n": block_n, "skip_future_tiles": False},
                    "fn": (
                        lambda bn=block_n: mod.attention(
                            q, k, v, causal=causal, block_n=bn, skip_future_tiles=False
                        )
                    ),
                }
            )

    if "b" in shape:  # batched heads: SDPA on the same [B, H, N, D] views
        out.append(
            {
                "name": "torch SDPA (automatic backend)",
                "role": "baseline",
                "config": {},
                "fn": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
            }
        )
        return with_cached_handle(out, {"block_n": 32})  # the default, through cached handles
    q4, k4, v4 = q[None, None], k[None, None], v[None, None]  # [1, 1, N, D] views
    out.append(
        {
            "name": "torch SDPA (automatic backend)",
            "role": "baseline",
            "config": {},
            "fn": lambda: torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=causal)[
                0, 0
            ],
        }
    )

    n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    future = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1) if causal else None

    def materialized():
        scores = (q.float() @ k.float().T) * scale  # the N x N tensor we avoid
        if future is not None:
            scores = scores.masked_fill(future, float("-inf"))
        return (torch.softmax(scores, dim=-1) @ v.float()).to(q.dtype)

    out.append(
        {"name": "eager fp32 scores (materializes N x N)", "role": "peer", "config": {}, "fn": materialized}
    )
    return with_cached_handle(out, {"block_n": 32})
