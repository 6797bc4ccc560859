"""Metadata validation shared by the GPU workshops' wrappers, and two integer helpers.

The contract: wrappers validate metadata but never scan values (that would
add GPU work).  Wrong type or dtype -> TypeError; wrong shape, stride, option,
device, ``requires_grad`` under autograd, or a size past the limits -> ValueError.
Every message starts with the argument's name.

Kernels run on CUDA tensors, or on CPU tensors in Triton's interpreter (see
:func:`set_interpret`).

Per-call cost.  A small kernel's GPU time is a few microseconds, so what a caller pays
per call is mostly host time: validation, allocation, Triton's launch dispatch and the
driver launch (measured phase by phase in workshops/worksheet.md).  :func:`check_tensor`
keeps validation near the floor: it remembers the metadata it has accepted -- (dtype,
device, shape, strides, storage offset) with the rule it was checked against -- so a
repeat call costs one tuple and one set lookup; only ``requires_grad`` is re-read every
call.  Kernels are launched the ordinary way, ``kernel[grid](...)``.
"""

from __future__ import annotations

from typing import Optional

import torch
from triton import knobs

INT32_MAX = 2**31 - 1
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
HALF_DTYPES = (torch.float16, torch.bfloat16)


# --- where kernels run -------------------------------------------------------------------
#
# Triton chooses its interpreter when a kernel is decorated, from its public switch, the
# TRITON_INTERPRET environment variable (``triton.knobs.runtime.interpret``).  The
# wrappers need the same answer on every call -- which device the tensors must be on --
# and reading the environment costs a microsecond or more each time, so the answer is a
# plain value here: whoever selects the interpreter says so with set_interpret; until
# then it is Triton's switch, read once, on first use.
_interpret: Optional[bool] = None


def set_interpret(on: bool) -> None:
    """Say whether kernels run in Triton's interpreter (CPU tensors) or on a GPU (CUDA
    tensors).  Call it when you choose the mode, before the wrappers are called; the
    kernels themselves follow TRITON_INTERPRET, which must be set before they are
    decorated."""
    global _interpret
    _interpret = bool(on)


def interpreting() -> bool:
    """True when kernels run in Triton's interpreter (see :func:`set_interpret`)."""
    if _interpret is None:
        set_interpret(knobs.runtime.interpret)
    return _interpret


def kernel_device_type() -> str:
    return "cpu" if interpreting() else "cuda"


# Metadata that passed check_tensor: (dtype, device, shape, strides, offset, rule).
_ACCEPTED: set = set()
_ACCEPTED_MAX = 4096


def check_tensor(
    t, name: str, *, ndim: int, dtypes=FLOAT_DTYPES, contiguous: bool = False, int32_offsets: bool = True
) -> None:
    """Type, dtype, device, rank, requires_grad, strides; ``int32_offsets`` (the default):
    every element offset of ``t`` fits a signed 32-bit index.  A wrapper whose kernel
    computes its large offsets in 64 bits passes False and checks what remains 32-bit."""
    if isinstance(t, torch.Tensor):
        key = (
            t.dtype,
            t.device,
            t.shape,
            t.stride(),
            t.storage_offset(),
            ndim,
            dtypes,
            contiguous,
            int32_offsets,
            interpreting(),
        )
        if key in _ACCEPTED:  # seen and accepted before: only requires_grad can differ
            if t.requires_grad and torch.is_grad_enabled():
                _reject_requires_grad(name)
            return
        _check_tensor_slow(t, name, ndim, dtypes, contiguous, int32_offsets)
        if len(_ACCEPTED) >= _ACCEPTED_MAX:
            _ACCEPTED.clear()
        _ACCEPTED.add(key)
        return
    _check_tensor_slow(t, name, ndim, dtypes, contiguous, int32_offsets)


def _reject_requires_grad(name: str) -> None:
    raise ValueError(
        f"{name}: requires_grad is set while autograd is enabled; these "
        f"kernels register no backward (detach it or use torch.no_grad())"
    )


def _check_tensor_slow(t, name: str, ndim: int, dtypes, contiguous: bool, int32_offsets: bool) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        allowed = "/".join(str(d).replace("torch.", "") for d in dtypes)
        raise TypeError(
            f"{name}: dtype {str(t.dtype).replace('torch.', '')} is not supported (use {allowed})"
        )
    want = kernel_device_type()
    if t.device.type != want:
        hint = " (run with --interpret to use CPU tensors)" if want == "cuda" else ""
        raise ValueError(f"{name}: tensor is on {t.device}, expected a {want} tensor{hint}")
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}D tensor, got {t.dim()}D with shape {tuple(t.shape)}")
    if t.requires_grad and torch.is_grad_enabled():
        _reject_requires_grad(name)
    if any(s < 0 for s in t.stride()):
        raise ValueError(f"{name}: negative strides {tuple(t.stride())} are not supported")
    if contiguous and not t.is_contiguous():
        raise ValueError(
            f"{name}: must be contiguous, got strides {tuple(t.stride())} for shape {tuple(t.shape)}"
        )
    if not int32_offsets:
        return
    # The largest element offset the kernel can form must fit a signed 32-bit index.
    span = sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if n > 0)
    if t.storage_offset() + span > INT32_MAX or t.numel() > INT32_MAX:
        raise ValueError(f"{name}: address span does not fit signed 32-bit indexing")


def same_device(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    if t.device != ref.device:
        raise ValueError(f"{name}: on {t.device} but {ref_name} is on {ref.device}")


def same_dtype(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    if t.dtype != ref.dtype:
        raise TypeError(f"{name}: dtype {t.dtype} differs from {ref_name}'s {ref.dtype}")


def check_option(value, name: str, allowed) -> None:
    """An option that must be one of a few ints (bools are not ints here)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected one of {list(allowed)}, got {value!r}")
    if value not in allowed:
        raise ValueError(f"{name}: {value} is not supported; use one of {list(allowed)}")


def check_bool(value, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected a bool, got {type(value).__name__} {value!r}")


# --- grid arithmetic --------------------------------------------------------------------


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for ints.  triton.cdiv does the same but, in Triton 3.6, through a
    constexpr-function wrapper that costs about a microsecond per call on the host."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1), as plain int arithmetic."""
    return 1 << (n - 1).bit_length() if n > 1 else 1
