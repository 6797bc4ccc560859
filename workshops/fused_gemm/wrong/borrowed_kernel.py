"""WRONG on purpose: the reference answer's wrapper (and so its kernel) does the work.

The learner's reasoning: "the validation is mine; the kernel launch is the course's own,
so it must be right."  The numbers are right, but the kernel that produced them was
defined in another file: the own-kernel check names it and the file it came from.
"""

import torch  # noqa: F401  (torch.empty for the output)
import triton  # noqa: F401  (triton.jit, triton.cdiv, triton.next_power_of_2)
import triton.language as tl  # noqa: F401  (you will need it for the kernel)

from workshops.contract import HALF_DTYPES, INT32_MAX, check_option, check_tensor, same_device, same_dtype
from workshops.fused_gemm.solution import matmul_bias_relu as _reference_matmul_bias_relu

GROUP_M_VALUES = (1, 4, 8)
TILE_M_VALUES = (16, 32, 64)  # add 128 here if you build a wide tile for big problems


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
    return _reference_matmul_bias_relu(a, b, bias, group_m=group_m, tile_m=tile_m)
