"""I3: GEMM with bias and ReLU -- your exercise file.

    C[M, N] = cast(relu(fp32(A @ B) + fp32(bias)))        A[M, K], B[K, N], bias[N]

Outline (use it as scaffolding, or delete it for more challenge):

    @triton.jit
    def _matmul_bias_relu_kernel(
        a_ptr, b_ptr, bias_ptr, c_ptr,        # tensors (Triton passes their data pointers)
        M, N, K,                              # runtime ints
        stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
        BLOCK_M: tl.constexpr,                # = tile_m
        BLOCK_N: tl.constexpr,                # fixed by you, e.g. 64 (>= 16 for tl.dot)
        BLOCK_K: tl.constexpr,                # fixed by you, e.g. 32 (>= 16 for tl.dot)
        GROUP_M: tl.constexpr,                # = group_m
    ):
        1. pid -> (pid_m, pid_n) with grouped ordering (the same arithmetic as tile_of
           below); the last super-row may hold fewer than GROUP_M tile rows
        2. offs_m, offs_n, offs_k; pointer blocks for A and B
        3. acc = fp32 zeros [BLOCK_M, BLOCK_N]; loop over K in BLOCK_K steps:
           masked loads of A and B (rows < M, cols < N, AND the K tail), acc = tl.dot(a, b, acc)
        4. epilogue in fp32: + bias (one value per COLUMN), ReLU, then ONE cast to
           c_ptr.dtype.element_ty
        5. masked store of the tile

    matmul_bias_relu(a, b, bias, *, group_m=4, tile_m=32):
        1. validate metadata (already written below: _validate)
        2. allocate c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        3. M == 0 or N == 0: return c (nothing to launch).  K == 0 is NOT special:
           the kernel's loop runs zero times and the epilogue writes relu(bias)
        4. grid = (number of M tiles * number of N tiles,): one program per output tile
        5. launch with strides, block sizes and GROUP_M; return c

Check your work:   python -m checks fused_gemm --interpret   (or on a GPU: python -m checks fused_gemm)
Hints, one tier at a time:   python -m checks fused_gemm --hint
"""

import torch  # noqa: F401  (torch.empty for the output)
import triton  # noqa: F401  (triton.jit, triton.cdiv, triton.next_power_of_2)
import triton.language as tl  # noqa: F401  (you will need it for the kernel)

from workshops.contract import HALF_DTYPES, INT32_MAX, check_option, check_tensor, same_device, same_dtype

GROUP_M_VALUES = (1, 4, 8)
TILE_M_VALUES = (16, 32, 64)  # add 128 here if you build a wide tile for big problems


def tile_of(pid, num_pid_m, num_pid_n, group_m):
    """The output tile (pid_m, pid_n) that program ``pid`` owns, in plain Python.

    Keep this helper: a check runs the lesson's worked example through it (3 tile rows,
    2 tile columns, GROUP=2: pids 4 and 5 own (2, 0) and (2, 1)).  Your kernel must use
    the same arithmetic."""
    raise NotImplementedError(
        "tile_of: compute group_id, first_pid_m and the group's height "
        "min(num_pid_m - first_pid_m, group_m), then pid_m and pid_n"
    )


def _validate(a, b, bias, group_m, tile_m):
    """Metadata only (the contract: no value scans).  TypeError for type/dtype,
    ValueError for everything else; messages start with the argument's name."""
    check_tensor(a, "a", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    check_tensor(b, "b", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    check_tensor(bias, "bias", ndim=1, dtypes=HALF_DTYPES, contiguous=True)
    same_dtype("b", b, "a", a)
    same_dtype("bias", bias, "a", a)
    same_device("b", b, "a", a)
    same_device("bias", bias, "a", a)
    if b.shape[0] != a.shape[1]:
        raise ValueError(
            f"b: has {b.shape[0]} rows but a has {a.shape[1]} columns (a is [M, K], b must be [K, N])"
        )
    if bias.shape[0] != b.shape[1]:
        raise ValueError(
            f"bias: has {bias.shape[0]} elements but b has {b.shape[1]} columns (bias must be [N])"
        )
    check_option(group_m, "group_m", GROUP_M_VALUES)
    check_option(tile_m, "tile_m", TILE_M_VALUES)
    if a.shape[0] * b.shape[1] > INT32_MAX:
        raise ValueError(
            f"a, b: the output [{a.shape[0]}, {b.shape[1]}] has more elements "
            f"than signed 32-bit indexing allows"
        )


def matmul_bias_relu(a, b, bias, *, group_m=4, tile_m=32):
    """relu(a @ b + bias) with fp32 accumulation and one final cast to a's dtype."""
    _validate(a, b, bias, group_m, tile_m)
    raise NotImplementedError(
        "matmul_bias_relu: allocate c = torch.empty((M, N)) on a's device; return it at once "
        "when M or N is 0; otherwise launch one program per output tile of a kernel that "
        "accumulates tl.dot in fp32, adds bias, applies ReLU and casts once before the store"
    )
