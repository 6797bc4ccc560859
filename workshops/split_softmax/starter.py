"""A2: wide-row split softmax -- your exercise file.

Outline (use it as scaffolding, or delete it for more challenge):

    A row of N columns is cut into T = ceil(N / chunk_size) chunks.  Program (row, tile)
    owns columns tile*CHUNK .. tile*CHUNK + CHUNK - 1; the ones >= N are masked off.

    @triton.jit
    def _partial_stats_kernel(x_ptr, partial_ptr, n_cols, num_tiles, CHUNK: tl.constexpr)
        grid (rows, T).  Load the chunk as fp32 (what must masked lanes read so they
        lose the max and add nothing to the sum?).  Store the chunk's m and
        l = sum(exp(x - m)) into scratch slot row * num_tiles + tile.

    @triton.jit
    def _merge_kernel(partial_ptr, row_stats_ptr, num_tiles, BLOCK_T: tl.constexpr)
        grid (rows,).  Load the row's T pairs (BLOCK_T = next power of 2 >= T, masked),
        combine them with A1's merge -- every l_i re-expressed relative to the row's
        maximum before adding -- and store the row's (m, l).

    @triton.jit
    def _normalize_kernel(x_ptr, row_stats_ptr, out_ptr, n_cols, CHUNK: tl.constexpr)
        grid (rows, T).  Load the row's (m, l), reread the chunk, store
        exp(x - m) / l converted to out's dtype, masked.

    CHUNK and BLOCK_T are tl.constexpr: they size tl.arange.  n_cols and num_tiles are
    ordinary runtime ints.

    softmax(x, *, chunk_size=1024):
        1. validate x and chunk_size (written below)
        2. out = torch.empty((rows, N), dtype=x.dtype, device=x.device);
           zero rows -> return out without launching anything
        3. T = triton.cdiv(N, chunk_size); fp32 scratch on x's device for one (m, l)
           per chunk per row and one merged (m, l) per row
        4. launch the three kernels, in order, on the current stream (no synchronize:
           same-stream order is the producer/consumer dependency)
        5. return out

    scratch_bytes(M, N, chunk_size): the bytes of that fp32 scratch.

Check your work:   python -m checks split_softmax --interpret   (or on a GPU without --interpret)
Hints, one tier at a time:   python -m checks split_softmax --hint
"""

import torch  # noqa: F401  (you will need it for the output and the scratch)
import triton  # noqa: F401
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
    _check_int(M, "M", 0)
    _check_int(N, "N", 1, MAX_COLS)
    check_option(chunk_size, "chunk_size", CHUNK_SIZES)
    raise NotImplementedError(
        "scratch_bytes: count the fp32 (m, l) pairs softmax stores -- one per chunk per row "
        "plus one merged pair per row -- with T = ceil(N / chunk_size), and return their bytes"
    )


def softmax(x, *, chunk_size=1024):
    check_tensor(x, "x", ndim=2, contiguous=True)
    check_option(chunk_size, "chunk_size", CHUNK_SIZES)
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x: {n_cols} columns is outside the supported 1 to {MAX_COLS}")
    raise NotImplementedError(
        "softmax: allocate the output and the fp32 scratch, then launch partial stats "
        "(grid rows x T), merge (grid rows) and normalize (grid rows x T) in that order"
    )
