"""WRONG on purpose: the tiled (layout-aware) path takes each row's maximum from its first column tile.

Both paths address memory correctly, and the one-row-per-program path is right.  The
tiled kernel's pass 1 reads the first column tile, takes its maximum ``m``, and then
only adds ``exp(x - m)`` of every later tile to ``l``: "the maximum is fixed, so no sum
ever needs rescaling".  Softmax does not care which constant is subtracted, so that is
exact (and every row sums to 1) as long as no later tile holds values more than ~88
above the first tile's maximum: random rows, a ramp of 30, an element 40 above the rest
all pass.  A later tile far above the first overflows ``exp(x - m)`` to inf, and the row
turns into zeros and NaN.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import cdiv, check_option, check_tensor, next_power_of_2

MAX_COLS = 8192
NUM_WARPS = (4, 8)


@triton.jit
def softmax_rows_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    in_row = cols < n_cols  # BLOCK_C is a power of two >= n_cols

    # Load address: both input strides.  The storage offset is already in x_ptr.
    x_addrs = x_ptr + row * stride_row + cols * stride_col
    # Masked lanes read -inf: they never win the max and exp(-inf) adds 0 to the sum.
    x = tl.load(x_addrs, mask=in_row, other=-float("inf")).to(tl.float32)

    row_max = tl.max(x, axis=0)
    numerators = tl.exp(x - row_max)  # every term <= 1: no overflow
    denominator = tl.sum(numerators, axis=0)  # >= 1 (the max contributes exp(0))
    probs = numerators * (1.0 / denominator)  # one division per row, not per element

    # Store address: the output is fresh and contiguous, so its row stride is n_cols
    # and its column stride is 1 -- whatever the input's strides were.
    out_addrs = out_ptr + row * n_cols + cols
    tl.store(out_addrs, probs.to(out_ptr.dtype.element_ty), mask=in_row)


@triton.jit
def softmax_tiles_kernel(
    x_ptr, out_ptr, n_rows, n_cols, stride_row, stride_col, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr
):
    block = tl.program_id(0)
    rows = block * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < n_rows
    # Rows past the end re-read the last real row (always in bounds, never stored), so
    # every row in the tile has a finite maximum and no -inf - (-inf) = NaN appears.
    rows_safe = tl.minimum(rows, n_rows - 1)
    row_offsets = rows_safe[:, None] * stride_row  # [BLOCK_R, 1]
    cols0 = tl.arange(0, BLOCK_C)

    # Pass 1: the maximum of the first column tile, then the sum of every tile against it.
    first = tl.load(
        x_ptr + row_offsets + cols0[None, :] * stride_col, mask=(cols0 < n_cols)[None, :], other=-float("inf")
    ).to(tl.float32)
    m = tl.max(first, axis=1)  # the bug: later tiles never raise it
    l = tl.zeros([BLOCK_R], tl.float32)
    for start in range(0, n_cols, BLOCK_C):
        cols = start + cols0
        col_ok = cols < n_cols
        x = tl.load(
            x_ptr + row_offsets + cols[None, :] * stride_col, mask=col_ok[None, :], other=-float("inf")
        ).to(tl.float32)
        l += tl.sum(tl.exp(x - m[:, None]), axis=1)

    # Pass 2: re-read, normalize with the final (m, l), store contiguously.
    inv_l = 1.0 / l
    for start in range(0, n_cols, BLOCK_C):
        cols = start + cols0
        col_ok = cols < n_cols
        x = tl.load(
            x_ptr + row_offsets + cols[None, :] * stride_col, mask=col_ok[None, :], other=-float("inf")
        ).to(tl.float32)
        probs = tl.exp(x - m[:, None]) * inv_l[:, None]
        out_addrs = out_ptr + rows[:, None] * n_cols + cols[None, :]
        tl.store(out_addrs, probs.to(out_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


def use_tiles(x: torch.Tensor) -> bool:
    """The layout-aware path pays off when rows, not columns, are neighbours in memory:
    the column stride is larger than the row stride (a transpose).  A size-1 dimension's
    stride means nothing, and a column stride of 0 or 1 already reads well row by row."""
    n_rows, n_cols = x.shape
    stride_row, stride_col = x.stride()
    return n_rows > 1 and n_cols > 1 and stride_col > 1 and stride_row < stride_col


def launch_rows(x: torch.Tensor, out: torch.Tensor, num_warps: int) -> None:
    n_rows, n_cols = x.shape
    stride_row, stride_col = x.stride()
    # One program per row.  Each distinct BLOCK_C (and num_warps) compiles once; later
    # calls with the same values reuse the compiled kernel from Triton's cache.
    softmax_rows_kernel[(n_rows,)](
        x,
        out,
        n_cols,
        stride_row,
        stride_col,
        BLOCK_C=next_power_of_2(n_cols),
        num_warps=num_warps,
    )


def tile_shape(n_rows: int, n_cols: int, element_size: int) -> tuple:
    """[BLOCK_R, BLOCK_C] for the tiled path.  BLOCK_R rows of one column span 128 bytes
    (a full cache line: 32 fp32 or 64 fp16/bf16 values).  When that would leave too few
    programs to fill the GPU (fewer than ~2 per H200 SM), halve it, but keep at least one
    32-byte sector (8 fp32 or 16 fp16/bf16 rows).  The tile holds 4096 elements."""
    full_line, one_sector = 128 // element_size, 32 // element_size
    block_r = min(full_line, next_power_of_2(n_rows))
    while block_r > one_sector and cdiv(n_rows, block_r) < 264:
        block_r //= 2
    block_c = min(4096 // block_r, next_power_of_2(n_cols))
    return block_r, block_c


def launch_tiles(x: torch.Tensor, out: torch.Tensor, num_warps: int) -> None:
    n_rows, n_cols = x.shape
    stride_row, stride_col = x.stride()
    BLOCK_R, BLOCK_C = tile_shape(n_rows, n_cols, x.element_size())
    # One program per block of BLOCK_R rows; the last block may run past n_rows.
    softmax_tiles_kernel[(cdiv(n_rows, BLOCK_R),)](
        x,
        out,
        n_rows,
        n_cols,
        stride_row,
        stride_col,
        BLOCK_R=BLOCK_R,
        BLOCK_C=BLOCK_C,
        num_warps=num_warps,
    )


def softmax(x, *, num_warps=4):
    """Softmax over the last dimension of a 2D fp32/fp16/bf16 tensor with any
    nonnegative strides.  Returns a fresh contiguous tensor of the same shape and dtype."""
    check_tensor(x, "x", ndim=2)
    check_option(num_warps, "num_warps", NUM_WARPS)
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(
            f"x: {n_cols} columns; this kernel supports 1 to {MAX_COLS} (one row must fit one program)"
        )

    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out  # nothing to launch
    if use_tiles(x):
        launch_tiles(x, out, num_warps)
    else:
        launch_rows(x, out, num_warps)
    return out
