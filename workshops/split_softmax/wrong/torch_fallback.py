"""WRONG on purpose: PyTorch does the work, not a Triton kernel.

The learner's reasoning: "the validation is written, and torch.softmax gives the right
numbers, so the checks will pass while I work on the kernel."  Every numeric check
would pass; the own-kernel check names the PyTorch op and the line that computed it,
and every other check that returns a tensor fails the same way.
"""

import torch
import triton
import triton.language as tl  # noqa: F401

from workshops.contract import check_option, check_tensor

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
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
