"""I2: softmax backward -- your exercise file.

Outline (use it as scaffolding, or delete it for more challenge):

    @triton.jit
    def _softmax_backward_kernel(
        y_ptr, g_ptr, dx_ptr,            # y, grad_output, and the fresh output
        n_rows, n_cols,
        y_stride_row, y_stride_col,      # y's own strides
        g_stride_row, g_stride_col,      # grad_output's own strides (may differ from y's)
        BLOCK_COLS: tl.constexpr,        # next power of two >= n_cols: one whole row
        ROWS_PER_PROGRAM: tl.constexpr,  # optional: several narrow rows per program
    ):
        which rows does this program own?  cols = tl.arange(0, BLOCK_COLS)
        mask = (row < n_rows) & (col < n_cols)
        load y and g with THEIR OWN strides (other=0.0), convert both to fp32
        dot = sum over the row of y * g                   (fp32, one number per row)
        dx = y * (g - dot)
        store dx.to(output dtype) at row * n_cols + col   (the output is contiguous)

    backward(y, grad_output, *, num_warps=4):
        1. validate metadata (already written below)
        2. dx = torch.empty(y.shape, dtype=y.dtype, device=y.device)
        3. zero rows: return dx without launching (a grid of 0 programs is invalid)
        4. BLOCK_COLS = triton.next_power_of_2(n_cols); grid = one program per row
           (or per group of rows)
        5. launch with both tensors' strides and num_warps=num_warps; return dx

Check your work (no GPU? add --interpret):
    python -m checks softmax_backward
Hints, one tier at a time:
    python -m checks softmax_backward --hint
"""

import torch  # noqa: F401  (you will need these for the output and the kernel)
import triton  # noqa: F401
import triton.language as tl  # noqa: F401

from workshops.contract import check_option, check_tensor, same_device, same_dtype

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
    raise NotImplementedError(
        "backward: allocate a fresh contiguous output, return it at once for zero rows, "
        "then launch a Triton kernel (one program per row) that loads y and grad_output "
        "with their own strides, computes dot = sum(y * g) in fp32 and stores "
        "y * (g - dot) cast to the input dtype"
    )
