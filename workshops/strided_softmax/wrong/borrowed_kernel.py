"""WRONG on purpose: the reference answer's wrapper (and so its kernel) does the work.

The learner's reasoning: "the validation is mine; the kernel launch is the course's own,
so it must be right."  The numbers are right, but the kernel that produced them was
defined in another file: the own-kernel check names it and the file it came from.
"""

from workshops.contract import check_option, check_tensor
from workshops.strided_softmax.solution import softmax as _reference_softmax

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

    return _reference_softmax(x, num_warps=num_warps)
