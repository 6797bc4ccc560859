"""WRONG on purpose: the reference answer's wrapper (and so its kernel) does the work.

The learner's reasoning: "the validation is mine; the kernel launch is the course's own,
so it must be right."  The numbers are right, but the kernel that produced them was
defined in another file: the own-kernel check names it and the file it came from.
"""

import torch  # noqa: F401  (you will need it for the output and the scratch)
import triton
import triton.language as tl  # noqa: F401

from workshops.contract import check_option, check_tensor
from workshops.split_softmax.solution import softmax as _reference_softmax

CHUNK_SIZES = (256, 1024, 4096)
MAX_COLS = 131072


def _check_int(value, name, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo} to {hi}" if hi is not None else f"at least {lo}"
        raise ValueError(f"{name}: {value} is out of range ({bound})")


def scratch_bytes(M, N, chunk_size):
    """Bytes of fp32 scratch one call of softmax allocates for an M x N input.

    One (m, l) pair per chunk per row, plus one merged (m, l) pair per row:
    T = ceil(N / chunk_size) and 2 * 4 bytes * M * (T + 1).
    """
    _check_int(M, "M", 0)
    _check_int(N, "N", 1, MAX_COLS)
    check_option(chunk_size, "chunk_size", CHUNK_SIZES)
    num_tiles = triton.cdiv(N, chunk_size)
    bytes_per_pair = 2 * 4  # two fp32 values: m and l
    return bytes_per_pair * M * (num_tiles + 1)


def softmax(x, *, chunk_size=1024):
    check_tensor(x, "x", ndim=2, contiguous=True)
    check_option(chunk_size, "chunk_size", CHUNK_SIZES)
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x: {n_cols} columns is outside the supported 1 to {MAX_COLS}")
    return _reference_softmax(x, chunk_size=chunk_size)
