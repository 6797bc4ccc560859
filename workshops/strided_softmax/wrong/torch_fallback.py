"""WRONG on purpose: PyTorch does the work, not a Triton kernel.

The learner's reasoning: "the validation is written, and torch.softmax gives the right
numbers, so the checks will pass while I work on the kernel."  Every numeric check
would pass; the own-kernel check names the PyTorch op and the line that computed it,
and every other check that returns a tensor fails the same way.
"""

import torch

from workshops.contract import check_option, check_tensor

MAX_COLS = 8192
NUM_WARPS = (4, 8)


def softmax(x, *, num_warps=4):
    """Row softmax of a 2D fp32/fp16/bf16 tensor with any nonnegative strides.
    Returns a fresh contiguous tensor of the same shape and dtype."""
    # Metadata validation: TypeError for type/dtype, ValueError otherwise; never scans values.
    check_tensor(x, "x", ndim=2)
    check_option(num_warps, "num_warps", NUM_WARPS)
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(
            f"x: {n_cols} columns; this kernel supports 1 to {MAX_COLS} (one row must fit one program)"
        )

    return torch.softmax(x.float(), dim=-1).to(x.dtype)
