"""RIGHT, another design: block pointers (``tl.make_block_ptr``).

Each program still owns one output tile in the grouped launch order, but A, B and C
are addressed through block pointers: a block pointer knows its tensor's shape and
strides, ``tl.advance`` moves it one K step, and ``boundary_check`` with
``padding_option="zero"`` replaces the hand-written masks (a tile hanging past M, N or
K reads zeros; the store writes only the elements inside C).  The epilogue is the
same: fp32 bias, ReLU, one cast.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import (
    HALF_DTYPES,
    INT32_MAX,
    cdiv,
    check_option,
    check_tensor,
    next_power_of_2,
    same_device,
    same_dtype,
)

GROUP_M_VALUES = (1, 4, 8)
TILE_M_VALUES = (16, 32, 64, 128)
WIDEST_N, WIDEST_K = 64, 32


def tile_of(pid, num_pid_m, num_pid_n, group_m):
    """The (tile row, tile column) program ``pid`` owns: the kernel's grouped order."""
    per_group = group_m * num_pid_n
    first_m = (pid // per_group) * group_m
    group_rows = min(num_pid_m - first_m, group_m)
    return first_m + (pid % per_group) % group_rows, (pid % per_group) // group_rows


@triton.jit
def _block_pointer_gemm_kernel(
    a_ptr,
    b_ptr,
    bias_ptr,
    c_ptr,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % group_rows
    tile_n = (pid % per_group) // group_rows

    a_block = tl.make_block_ptr(
        a_ptr, shape=(M, K), strides=(K, 1), offsets=(tile_m * BLOCK_M, 0),
        block_shape=(BLOCK_M, BLOCK_K), order=(1, 0),
    )  # fmt: skip
    b_block = tl.make_block_ptr(
        b_ptr, shape=(K, N), strides=(N, 1), offsets=(0, tile_n * BLOCK_N),
        block_shape=(BLOCK_K, BLOCK_N), order=(1, 0),
    )  # fmt: skip
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_block = tl.advance(a_block, (0, BLOCK_K))
        b_block = tl.advance(b_block, (BLOCK_K, 0))

    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    out = tl.maximum(acc + bias[None, :], 0.0).to(c_ptr.dtype.element_ty)
    c_block = tl.make_block_ptr(
        c_ptr, shape=(M, N), strides=(N, 1), offsets=(tile_m * BLOCK_M, tile_n * BLOCK_N),
        block_shape=(BLOCK_M, BLOCK_N), order=(1, 0),
    )  # fmt: skip
    tl.store(c_block, out, boundary_check=(0, 1))


def _validate(a, b, bias, group_m, tile_m):
    check_tensor(a, "a", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    check_tensor(b, "b", ndim=2, dtypes=HALF_DTYPES, contiguous=True)
    check_tensor(bias, "bias", ndim=1, dtypes=HALF_DTYPES, contiguous=True)
    same_dtype("b", b, "a", a)
    same_dtype("bias", bias, "a", a)
    same_device("b", b, "a", a)
    same_device("bias", bias, "a", a)
    if b.shape[0] != a.shape[1]:
        raise ValueError(f"b: has {b.shape[0]} rows but a has {a.shape[1]} columns (b must be [K, N])")
    if bias.shape[0] != b.shape[1]:
        raise ValueError(f"bias: has {bias.shape[0]} elements but b has {b.shape[1]} columns")
    check_option(group_m, "group_m", GROUP_M_VALUES)
    check_option(tile_m, "tile_m", TILE_M_VALUES)
    if a.shape[0] * b.shape[1] > INT32_MAX:
        raise ValueError(f"a, b: the output [{a.shape[0]}, {b.shape[1]}] passes 32-bit indexing")


def matmul_bias_relu(a, b, bias, *, group_m=4, tile_m=32):
    """relu(a @ b + bias): fp32 accumulation and epilogue, one cast to a's dtype."""
    _validate(a, b, bias, group_m, tile_m)
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    block_n = min(WIDEST_N, max(16, next_power_of_2(N)))
    block_k = min(WIDEST_K, max(16, next_power_of_2(K)))
    _block_pointer_gemm_kernel[(cdiv(M, tile_m) * cdiv(N, block_n),)](
        a, b, bias, c, M, N, K,
        BLOCK_M=tile_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m,
        num_warps=8 if tile_m == 128 else 4, num_stages=3,
    )  # fmt: skip
    return c
