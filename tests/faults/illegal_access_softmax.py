"""A strided_softmax exercise whose kernel stores far outside its output: on a GPU this
is an illegal memory access (a sticky CUDA error), in the interpreter an out-of-bounds
store.  Used by tests/test_faults.py to show the verdict is an error, never a pass."""

import torch
import triton
import triton.language as tl


@triton.jit
def _wild_store(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    far = offs.to(tl.int64) + (1 << 40)  # a terabyte past the output
    tl.store(out_ptr + far, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def softmax(x, *, num_warps=4):
    out = torch.empty(x.shape, device=x.device, dtype=torch.float32)
    _wild_store[(1,)](out, out.numel(), BLOCK=16)
    return out.to(x.dtype)
