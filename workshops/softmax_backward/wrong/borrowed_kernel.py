"""WRONG on purpose: the reference answer's wrapper (and so its kernel) does the work.

The learner's reasoning: "the validation is mine; the kernel launch is the course's own,
so it must be right."  The numbers are right, but the kernel that produced them was
defined in another file: the own-kernel check names it and the file it came from.
"""

import torch  # noqa: F401  (you will need these for the output and the kernel)
import triton  # noqa: F401
import triton.language as tl  # noqa: F401

from workshops.contract import check_option, check_tensor, same_device, same_dtype
from workshops.softmax_backward.solution import backward as _reference_backward

MAX_COLS = 8192
NUM_WARPS = (4, 8)


def backward(y, grad_output, *, num_warps=4):
    """dL/dx of softmax along the last dim from y = softmax(x) and grad_output = dL/dy."""
    # --- metadata validation (done for you; the checks' rejection cases rely on it) ---
    check_tensor(y, "y", ndim=2)
    check_tensor(grad_output, "grad_output", ndim=2)
    same_dtype("grad_output", grad_output, "y", y)
    same_device("grad_output", grad_output, "y", y)
    if grad_output.shape != y.shape:
        raise ValueError(f"grad_output: shape {tuple(grad_output.shape)} differs from y's {tuple(y.shape)}")
    check_option(num_warps, "num_warps", NUM_WARPS)
    n_rows, n_cols = y.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"y: {n_cols} columns is outside the supported 1..{MAX_COLS}")

    # --- your part ---
    return _reference_backward(y, grad_output, num_warps=num_warps)
