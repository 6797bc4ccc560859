"""Which call a reading runs, per GPU workshop: one shape the interpreter gets through in
seconds yet large enough to fill the H200 (its programs, its reuse), the benchmark spec's
inputs and minimum work at that shape, and the spec's candidate variants.

Standard library at import time; the spec (and torch) are imported when a call is made.
"""

from __future__ import annotations

from typing import Any

READING_SHAPES = {
    "strided_softmax": (
        dict(name="1024x1024-t", role="comparison", rows=1024, cols=1024, transposed=True),
        "fp32",
    ),
    "softmax_backward": (dict(name="512x4097", role="comparison", rows=512, cols=4097), "fp16"),
    "split_softmax": (dict(name="4x131072", role="comparison", rows=4, cols=131072), "fp32"),
    "fused_gemm": (dict(name="512x512x512", role="comparison", M=512, N=512, K=512), "fp16"),
    "streaming_attention": (
        dict(name="b4h16-256x64-full", role="comparison", b=4, h=16, n=256, d=64, causal=False),
        "fp16",
    ),
}

DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def ops() -> list:
    return list(READING_SHAPES)


def problem(op: str, seed: int = 0) -> dict:
    """The reading's shape, dtype name, inputs (CPU tensors) and minimum work for ``op``."""
    import torch

    from checks.benchmark import specs

    if op not in READING_SHAPES:
        raise KeyError(f"op: no performance reading for {op!r} (have {', '.join(READING_SHAPES)})")
    shape, dtype_name = READING_SHAPES[op]
    dtype = getattr(torch, DTYPES[dtype_name])
    spec = specs.load_spec(op)
    inputs = spec.make_inputs(shape, dtype, "cpu", seed)
    return {
        "op": op,
        "shape": shape,
        "dtype": dtype_name,
        "spec": spec,
        "inputs": inputs,
        "work": spec.work(shape, dtype),
    }


def candidate_calls(prob: dict, module: Any, default_only: bool = False) -> list:
    """[(variant name, call)] of the learner's (or the reference) module: the spec's
    candidates, without the cached-handle twins (same kernels) and the baselines.  With
    ``default_only``: the wrapper called with its defaults alone (the candidate whose
    cached-handle twin follows it, else the first)."""
    out: list = []
    default = None
    for v in prob["spec"].variants(module, prob["inputs"], prob["shape"]):
        config = v.get("config") or {}
        if "launch" in config:
            default = default or (out[-1] if out else None)
            continue
        if v.get("role", "candidate") != "candidate" or config.get("copy_first"):
            continue
        out.append((v["name"], v["fn"]))
    if default_only:
        return [default or out[0]] if out else []
    return out
