"""WRONG on purpose: the merge rescales every chunk to the FIRST chunk's maximum.

Kernels 1 and 3 are right.  Kernel 2 takes m = m_0, the first chunk's maximum, instead
of the largest m_t, and adds l_t * exp(m_t - m_0) for every chunk: "any common
reference works".  For softmax that is true, exp(x - m) / l does not care which constant
is subtracted, so the answer is exact (every row sums to 1) while no later chunk's
maximum sits more than ~88 above the first chunk's: random rows, a maximum that rises by
5 per chunk, one logit 9 above the rest and rows near +/-1000 all pass.  A later chunk far
above the first overflows exp(m_t - m_0) to inf, and the row comes out as zeros and NaN.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import INT32_MAX, cdiv, check_option, check_tensor, next_power_of_2

CHUNK_SIZES = (256, 1024, 4096)
MAX_COLS = 131072
# 4 (chunk 256) to 16 (chunk 4096) fp32 values per thread: whole 16-byte vector loads,
# several in flight per thread, and a short in-warp reduction.
_NUM_WARPS = {256: 2, 1024: 4, 4096: 8}


@triton.jit
def _partial_stats_kernel(x_ptr, partial_ptr, n_cols, num_tiles, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    tile = tl.program_id(1)
    cols = tile * CHUNK + tl.arange(0, CHUNK)
    in_row = cols < n_cols
    # Padding lanes of the last chunk read -inf: they lose the max and add exp(-inf) = 0.
    x = tl.load(x_ptr + row * n_cols + cols, mask=in_row, other=float("-inf")).to(tl.float32)
    chunk_max = tl.max(x, axis=0)
    chunk_sum = tl.sum(tl.exp(x - chunk_max), axis=0)  # relative to this chunk's max
    slot = (row * num_tiles + tile) * 2
    tl.store(partial_ptr + slot, chunk_max)
    tl.store(partial_ptr + slot + 1, chunk_sum)


@triton.jit
def _merge_kernel(partial_ptr, row_stats_ptr, num_tiles, BLOCK_T: tl.constexpr):
    row = tl.program_id(0)
    tiles = tl.arange(0, BLOCK_T)
    valid = tiles < num_tiles
    slots = (row * num_tiles + tiles) * 2
    # Missing tiles are the empty summary (-inf, 0): exp(-inf - m) * 0 adds nothing.
    tile_max = tl.load(partial_ptr + slots, mask=valid, other=float("-inf"))
    tile_sum = tl.load(partial_ptr + slots + 1, mask=valid, other=0.0)
    row_max = tl.sum(tl.where(tiles == 0, tile_max, 0.0), axis=0)  # the bug: the first chunk's max
    # Re-express every tile's sum relative to the row's max before adding (A1's merge).
    row_sum = tl.sum(tile_sum * tl.exp(tile_max - row_max), axis=0)
    tl.store(row_stats_ptr + row * 2, row_max)
    tl.store(row_stats_ptr + row * 2 + 1, row_sum)


@triton.jit
def _normalize_kernel(x_ptr, row_stats_ptr, out_ptr, n_rows, n_cols, num_tiles, CHUNK: tl.constexpr):
    # Visit the tiles in the reverse of kernel 1's order: the chunks kernel 1 read last
    # are the ones most likely still in L2, so the first programs here reread them cheaply.
    row = n_rows - 1 - tl.program_id(0)
    tile = num_tiles - 1 - tl.program_id(1)
    row_max = tl.load(row_stats_ptr + row * 2)
    inv_sum = 1.0 / tl.load(row_stats_ptr + row * 2 + 1)  # one division per program
    cols = tile * CHUNK + tl.arange(0, CHUNK)
    in_row = cols < n_cols
    offsets = row * n_cols + cols
    # -inf padding gives exp(-inf) = 0 in lanes that are never stored; 0.0 padding would
    # compute exp(0 - row_max) there, which overflows fp16 when the row's max is below -11.
    x = tl.load(x_ptr + offsets, mask=in_row, other=float("-inf")).to(tl.float32)
    probs = tl.exp(x - row_max) * inv_sum
    tl.store(out_ptr + offsets, probs.to(out_ptr.dtype.element_ty), mask=in_row)


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
    num_tiles = cdiv(N, chunk_size)
    bytes_per_pair = 2 * 4  # two fp32 values: m and l
    return bytes_per_pair * M * (num_tiles + 1)


def softmax(x, *, chunk_size=1024):
    """Row softmax of a contiguous 2D fp32/fp16/bf16 tensor with 1..131072 columns."""
    check_tensor(x, "x", ndim=2, contiguous=True)
    check_option(chunk_size, "chunk_size", CHUNK_SIZES)
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x: {n_cols} columns is outside the supported 1 to {MAX_COLS}")

    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out  # nothing to launch (a zero-size grid is not allowed)

    num_tiles = cdiv(n_cols, chunk_size)
    if 2 * n_rows * (num_tiles + 1) > INT32_MAX:
        # Only reachable with billions of very short rows: scratch slots are int32 offsets.
        raise ValueError(f"x: {n_rows} rows need more scratch than 32-bit indexing can address")
    # Per-call scratch (see scratch_bytes): never shared between calls, so two calls on
    # different streams cannot overwrite each other's statistics.
    # One allocation holds both: the T (m, l) pairs of every row, then the merged pairs.
    scratch = torch.empty(2 * n_rows * (num_tiles + 1), dtype=torch.float32, device=x.device)
    partial = scratch[: 2 * n_rows * num_tiles]
    row_stats = scratch[2 * n_rows * num_tiles :]

    tiles_grid = (n_rows, num_tiles)  # rows on axis 0: axis 1 is limited to 65535
    num_warps = _NUM_WARPS[chunk_size]
    # All three launches go to the current stream, in this order: that order is the
    # only synchronization between producer and consumer kernels.
    # Each launch is kernel[grid](...); three per call make the host's share of a call
    # about three times a single kernel's (the worksheet measures it).
    _partial_stats_kernel[tiles_grid](x, partial, n_cols, num_tiles, CHUNK=chunk_size, num_warps=num_warps)
    _merge_kernel[(n_rows,)](partial, row_stats, num_tiles, BLOCK_T=next_power_of_2(num_tiles), num_warps=2)
    _normalize_kernel[tiles_grid](
        x, row_stats, out, n_rows, n_cols, num_tiles, CHUNK=chunk_size, num_warps=num_warps
    )
    return out
