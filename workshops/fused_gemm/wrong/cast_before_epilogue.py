"""WRONG on purpose: the accumulator is cast to the input dtype BEFORE the epilogue.

The learner's reasoning: "the output is fp16 anyway, so convert the tile as soon as the
dot products are done and do the cheap bias/ReLU work in 16 bits."  That rounds twice:
once when the fp32 accumulator becomes fp16, again when the fp16 bias is added.  The
contract asks for ONE rounding after the fp32 epilogue.  With acc = 2048 + 1 = 2049
(not representable in fp16: it rounds to 2048) and bias = -2048, the contract's answer
is relu(2049 - 2048) = 1, this version writes relu(2048 - 2048) = 0.
"""

import torch
import triton
import triton.language as tl

from workshops.contract import HALF_DTYPES, INT32_MAX, check_option, check_tensor, same_device, same_dtype

GROUP_M_VALUES = (1, 4, 8)
# 16/32/64 are the contract's tile heights.  128 is an extra, wide-tile option for large
# problems on Hopper: 128x256x64 tiles, 8 warps and 3 pipeline stages (Triton emits wgmma).
TILE_M_VALUES = (16, 32, 64, 128)

# tile_m -> (widest BLOCK_N, widest BLOCK_K, num_warps, num_stages).  Fixed, small tuning
# space: no autotuning on any call.  BLOCK_N and BLOCK_K shrink for small N and K below.
_CONFIGS = {
    16: (64, 32, 4, 3),
    32: (64, 32, 4, 3),
    64: (64, 32, 4, 3),
    128: (256, 64, 8, 3),
}


def tile_of(pid, num_pid_m, num_pid_n, group_m):
    """The output tile (pid_m, pid_n) that program ``pid`` owns: the kernel's own
    mapping, in plain Python, so it can be checked (and printed) on the CPU."""
    num_pid_in_group = group_m * num_pid_n  # programs in one full super-row
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * group_m
    group_size_m = min(num_pid_m - first_pid_m, group_m)  # the last group may be short
    local = pid % num_pid_in_group
    pid_m = first_pid_m + local % group_size_m  # walk down the group's tile rows...
    pid_n = local // group_size_m  # ...then step one tile column right
    return pid_m, pid_n


@triton.jit
def _matmul_bias_relu_kernel(
    a_ptr,
    b_ptr,
    bias_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # --- which output tile is mine (grouped ordering; same arithmetic as tile_of) ---
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    local = pid % num_pid_in_group
    pid_m = first_pid_m + local % group_size_m
    pid_n = local // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # rows of A and C
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # columns of B, C and bias
    offs_k = tl.arange(0, BLOCK_K)
    row_ok = offs_m < M
    col_ok = offs_n < N
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    # --- main loop: fp32 accumulator, K in BLOCK_K steps, the last step masked ---
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K  # columns of A still to read
        a = tl.load(a_ptrs, mask=row_ok[:, None] & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)  # fp16/bf16 in, fp32 accumulate
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # --- epilogue: the output is 16-bit, so work in 16 bits from here on ---
    acc16 = acc.to(c_ptr.dtype.element_ty)  # "the output is 16-bit anyway"
    bias = tl.load(bias_ptr + offs_n, mask=col_ok, other=0.0)
    biased = acc16 + bias[None, :]  # 16-bit add: a second rounding
    out = tl.maximum(biased, 0.0).to(c_ptr.dtype.element_ty)

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, out, mask=row_ok[:, None] & col_ok[None, :])


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
    """relu(a @ b + bias) with fp32 accumulation, in a's dtype.

    a: [M, K], b: [K, N], bias: [N]; contiguous fp16 or bf16 tensors on one device.
    group_m (1/4/8): tile rows per super-row of the grouped launch order.
    tile_m (16/32/64, or 128 for the wide Hopper tile): BLOCK_M of one program."""
    _validate(a, b, bias, group_m, tile_m)
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)  # fresh and contiguous
    if M == 0 or N == 0:
        return c  # nothing to write; no empty launch

    widest_n, widest_k, num_warps, num_stages = _CONFIGS[tile_m]
    # tl.dot needs K >= 16 on sm_90 (M and N may be smaller); no tiles much wider than N or K.
    block_n = min(widest_n, max(16, triton.next_power_of_2(N)))
    block_k = min(widest_k, max(16, triton.next_power_of_2(K)))
    num_tiles = triton.cdiv(M, tile_m) * triton.cdiv(N, block_n)  # one program per tile
    _matmul_bias_relu_kernel[(num_tiles,)](
        a,
        b,
        bias,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=tile_m,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
        GROUP_M=group_m,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return c
