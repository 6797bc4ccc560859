"""WRONG on purpose: the reference answer's wrapper (and so its kernel) does the work.

The learner's reasoning: "the validation is mine; the kernel launch is the course's own,
so it must be right."  The numbers are right, but the kernel that produced them was
defined in another file: the own-kernel check names it and the file it came from.
"""

import math

from workshops.contract import HALF_DTYPES, check_bool, check_option, check_tensor, same_device, same_dtype
from workshops.streaming_attention.solution import attention as _reference_attention

MAX_SEQ_LEN = 2048
HEAD_DIMS = (16, 32, 64)
BLOCK_N_CHOICES = (32, 64)
BLOCK_M = 64  # query rows per program: a multiple of every block_n


# Your kernel goes here (see the outline above).


def attention(q, k, v, *, causal=False, block_n=32, skip_future_tiles=True):
    """softmax(q k^T / sqrt(D)) v for contiguous fp16/bf16 q, k, v of shape [N, D]."""
    # 1. Validate metadata (never values).  Done for you: the rejection checks pass already.
    check_tensor(q, "q", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    check_tensor(k, "k", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    check_tensor(v, "v", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    same_dtype("k", k, "q", q)
    same_dtype("v", v, "q", q)
    same_device("k", k, "q", q)
    same_device("v", v, "q", q)
    check_bool(causal, "causal")
    check_option(block_n, "block_n", BLOCK_N_CHOICES)
    check_bool(skip_future_tiles, "skip_future_tiles")
    n, d = q.shape
    if d not in HEAD_DIMS:
        raise ValueError(f"q: head dimension {d} is not supported; use one of {list(HEAD_DIMS)}")
    if n > MAX_SEQ_LEN:
        raise ValueError(f"q: sequence length {n} exceeds the limit of {MAX_SEQ_LEN}")
    if tuple(k.shape) != (n, d):
        raise ValueError(f"k: shape {tuple(k.shape)} differs from q's {(n, d)}")
    if tuple(v.shape) != (n, d):
        raise ValueError(f"v: shape {tuple(v.shape)} differs from q's {(n, d)}")

    scale = 1.0 / math.sqrt(d)  # noqa: F841 - for your kernel launch

    # 2-5. Allocate the output, handle N == 0, launch your kernel, return the output.
    return _reference_attention(q, k, v, causal=causal, block_n=block_n)
