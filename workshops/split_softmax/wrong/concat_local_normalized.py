"""WRONG on purpose: each chunk is normalized by its own (m, l), and the chunks are
concatenated.

Every program computes a stable softmax of its chunk -- the single-row softmax, once
per chunk -- so each chunk of the output sums to 1 and a row of T chunks sums to T.
Local probabilities cannot be concatenated into a globally normalized row: the row's
maximum and denominator are only known after every chunk has been summarized and
merged.  Widths up to one chunk (T = 1) are still right, which is why a test at
width <= chunk_size passes; the first width that fails is chunk_size + 1.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import check_option, check_tensor

CHUNK_SIZES = (256, 1024, 4096)
MAX_COLS = 131072


@triton.jit
def _chunk_softmax_kernel(x_ptr, out_ptr, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    tile = tl.program_id(1)
    cols = tile * CHUNK + tl.arange(0, CHUNK)
    in_row = cols < n_cols
    offsets = row * n_cols + cols
    x = tl.load(x_ptr + offsets, mask=in_row, other=float("-inf")).to(tl.float32)
    chunk_max = tl.max(x, axis=0)
    e = tl.exp(x - chunk_max)
    chunk_sum = tl.sum(e, axis=0)
    tl.store(out_ptr + offsets, (e / chunk_sum).to(out_ptr.dtype.element_ty), mask=in_row)


def scratch_bytes(M, N, chunk_size):
    check_option(chunk_size, "chunk_size", CHUNK_SIZES)
    return 8 * M * (triton.cdiv(N, chunk_size) + 1)


def softmax(x, *, chunk_size=1024):
    check_tensor(x, "x", ndim=2, contiguous=True)
    check_option(chunk_size, "chunk_size", CHUNK_SIZES)
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x: {n_cols} columns is outside the supported 1 to {MAX_COLS}")
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out
    grid = (n_rows, triton.cdiv(n_cols, chunk_size))
    _chunk_softmax_kernel[grid](x, out, n_cols, CHUNK=chunk_size)
    return out
