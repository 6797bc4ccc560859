"""Right but slow: one program per row, sweeping its 131072 columns chunk by chunk (a
running max and sum, then a second sweep that normalizes).  With 4 rows that is 4
programs for the H200's 132 SMs: the other 128 idle.  It keeps the split design's
scratch (each chunk's (m, l) and the row's merged pair, written by the row's one program),
so only the number of programs differs.  Splitting each row into chunks that many
programs reduce at once is what fills the GPU."""

import torch
import triton
import triton.language as tl

from workshops.contract import cdiv, check_option, check_tensor

MAX_COLS = 131072
CHUNK_SIZES = (256, 1024, 4096)


@triton.jit
def row_kernel(x_ptr, out_ptr, stats_ptr, n_cols, num_tiles, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([CHUNK], float("-inf"), tl.float32)
    l = tl.zeros([CHUNK], tl.float32)
    row_stats = stats_ptr + row * (num_tiles + 1) * 2  # (m, l) per chunk, then the merged pair
    for t in range(0, num_tiles):
        cols = t * CHUNK + tl.arange(0, CHUNK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        chunk_max = tl.max(x, axis=0)
        tl.store(row_stats + 2 * t, chunk_max)
        tl.store(row_stats + 2 * t + 1, tl.sum(tl.exp(x - chunk_max), axis=0))
        m_new = tl.maximum(m, x)
        l = l * tl.exp(m - m_new) + tl.where(x == float("-inf"), 0.0, tl.exp(x - m_new))
        m = tl.where(m_new == float("-inf"), m, m_new)
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(l > 0, l * tl.exp(m - row_max), 0.0), axis=0)
    tl.store(row_stats + 2 * num_tiles, row_max)
    tl.store(row_stats + 2 * num_tiles + 1, row_sum)
    for start in range(0, n_cols, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        ok = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=ok, other=float("-inf")).to(tl.float32)
        tl.store(
            out_ptr + row * n_cols + cols,
            (tl.exp(x - row_max) / row_sum).to(out_ptr.dtype.element_ty),
            mask=ok,
        )


def _check_int(value, name, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"{lo} to {hi}" if hi is not None else f"at least {lo}"
        raise ValueError(f"{name}: {value} is out of range ({bound})")


def scratch_bytes(M, N, chunk_size):
    """Bytes of fp32 scratch this answer allocates for an M x N input.

    One (m, l) pair per chunk per row, plus one merged (m, l) pair per row:
    T = ceil(N / chunk_size) and 2 * 4 bytes * M * (T + 1).
    """
    _check_int(M, "M", 0)
    _check_int(N, "N", 1, MAX_COLS)
    check_option(chunk_size, "chunk_size", CHUNK_SIZES)
    num_tiles = cdiv(N, chunk_size)
    bytes_per_pair = 2 * 4  # two fp32 values: m and l
    return bytes_per_pair * M * (num_tiles + 1)


def softmax(x, *, chunk_size=1024):
    check_tensor(x, "x", ndim=2, contiguous=True)
    check_option(chunk_size, "chunk_size", CHUNK_SIZES)
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x: {n_cols} columns is outside the supported 1 to {MAX_COLS}")
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out
    num_tiles = cdiv(n_cols, chunk_size)
    stats = torch.empty(scratch_bytes(n_rows, n_cols, chunk_size) // 4, dtype=torch.float32, device=x.device)
    row_kernel[(n_rows,)](x, out, stats, n_cols, num_tiles, CHUNK=chunk_size, num_warps=4)
    return out
