"""Warm-up for a check worker and for the compile workers, run before a save arrives.

A worker that has imported torch and triton still pays one-time costs on its first
kernel launch: Triton's compiler pipeline and driver utilities are loaded, the launch
path is set up, torch loads its first CUDA kernels and cuBLAS, and the first PyTorch
op under the witness of :mod:`checks.judging.provenance` (a ``TorchDispatchMode``) imports
torch's dispatch-mode machinery (torch._dynamo, sympy), which takes seconds.  Paying
them here, while the learner is still typing, takes them off the first verdict.

The tiny kernel below never changes, so after the first time it is a Triton cache hit.
Nothing here touches the learner's file; a failure is reported, never fatal.
"""

from __future__ import annotations

import contextlib
import json
from typing import ContextManager

import triton
import triton.language as tl


@triton.jit
def _warm_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.exp(x - tl.max(x, axis=0)), mask=mask)


def _launch(x):
    import torch

    # The first aten op dispatched under the witness (a Python dispatch mode) is what
    # imports torch's dispatch-mode machinery, so the warm-up allocates inside it.
    y = torch.empty_like(x).view(-1)
    _warm_kernel[(1,)](x, y, x.numel(), BLOCK=64)
    return y


def warm(device: str, interpret: bool = False) -> None:
    """Launch the tiny kernel as the checks launch a learner's kernel (inside the
    witness, and in the interpreter with its memory checks), then run a few torch
    operations on ``device``."""
    import torch

    from checks.judging import provenance

    bounds: ContextManager = contextlib.nullcontext()
    if interpret:
        from checks.judging import oob

        bounds = oob.checking()
    x = torch.randn(64, device=device)
    # Loaded (or compiled) and launched inside the witness, as a learner's first kernel is.
    with bounds:
        y = provenance.witnessed_call(__file__, _launch, x)
    a = torch.randn(32, 32, device=device)
    torch.softmax(a @ a, dim=-1).sum().item()
    torch.testing.assert_close(y, y)
    if device == "cuda":
        torch.cuda.synchronize()


def warm_variant(target) -> str:
    """The ``specialization_data`` of the tiny kernel for ``target`` (backend, arch,
    warp_size), in the format of Triton's ``jit_cache_hook``."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend

    options = make_backend(GPUTarget(*target)).parse_options({}).__dict__
    aligned = [["tt.divisibility", 16]]
    return json.dumps(
        {
            "name": f"{__name__}._warm_kernel",
            "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
            "constant_keys": [[3]],
            "constant_vals": [64],
            "attrs_keys": [[0], [1]],
            "attrs_vals": [aligned, aligned],
            "options": options,
            "key": "warm-up",
        },
        default=list,
    )


def compile_ahead(target) -> None:
    """Compile the tiny kernel for ``target`` without a GPU: a compile worker's first
    compile loads the code generator, LLVM and ptxas once, before any save."""
    from checks.running import variants

    variants.compile_variant(_warm_kernel, warm_variant(target), target)
