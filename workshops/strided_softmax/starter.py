"""I1: strided softmax -- your exercise file.

Outline (use it as scaffolding, or delete it for more challenge):

    @triton.jit
    def softmax_rows_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col,
                            BLOCK_C: tl.constexpr):
        # tl.constexpr: BLOCK_C only (a power of two >= n_cols; tl.arange needs it at
        # compile time).  n_cols and both strides are ordinary runtime ints.
        row = program id 0                     # one program per row
        cols = 0 .. BLOCK_C-1, masked by cols < n_cols
        load address:  x_ptr + row * stride_row + cols * stride_col    (BOTH strides)
        masked lanes load -inf; convert to fp32
        stable softmax: subtract the row max, exp, divide by the sum
        store address: out_ptr + row * n_cols + cols                   (the OUTPUT's layout)
        cast back to the output dtype when storing

    softmax(x, *, num_warps=4)
        1. validate metadata (written for you below)
        2. allocate out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        3. zero rows: return out without launching
        4. launch grid (rows,) with BLOCK_C = triton.next_power_of_2(cols) and
           num_warps=num_warps; pass x.stride(0), x.stride(1)
        5. return out

    Later (performance, see the lesson's "The layout-aware path"): when the column stride
    is larger than the row stride (a transpose), a second kernel that owns a block of
    rows and sweeps [BLOCK_R, BLOCK_C] tiles reads memory far better.

Check your work:   python -m checks strided_softmax --interpret     (or without --interpret on a GPU)
Hints, one tier at a time:   python -m checks strided_softmax --hint
Measure afterwards:   python -m checks.benchmark --op strided_softmax
"""

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

    raise NotImplementedError(
        "softmax: write a @triton.jit kernel that loads x_ptr + row*stride_row + col*stride_col "
        "(both strides), computes a stable fp32 softmax, and stores to out_ptr + row*n_cols + col; "
        "then allocate a contiguous output here, return it early for zero rows, and launch one "
        "program per row"
    )
