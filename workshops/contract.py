"""Metadata validation shared by the GPU workshops' wrappers (starters and answers).

The seed's contract: wrappers validate metadata but never scan values (that would
add GPU work).  Wrong type or dtype -> TypeError; wrong shape, stride, option,
device, ``requires_grad`` under autograd, or a size past the limits -> ValueError.
Every message starts with the argument's name.

Kernels run on CUDA tensors, or on CPU tensors when Triton's interpreter is on
(``TRITON_INTERPRET=1``, set by ``python -m checks --interpret``).
"""
from __future__ import annotations

import os

import torch

INT32_MAX = 2**31 - 1
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
HALF_DTYPES = (torch.float16, torch.bfloat16)


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def kernel_device_type() -> str:
    return "cpu" if interpreting() else "cuda"


def check_tensor(t, name: str, *, ndim: int, dtypes=FLOAT_DTYPES, contiguous: bool = False) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        allowed = "/".join(str(d).replace("torch.", "") for d in dtypes)
        raise TypeError(f"{name}: dtype {str(t.dtype).replace('torch.', '')} is not supported "
                        f"(use {allowed})")
    want = kernel_device_type()
    if t.device.type != want:
        hint = " (run with --interpret to use CPU tensors)" if want == "cuda" else ""
        raise ValueError(f"{name}: tensor is on {t.device}, expected a {want} tensor{hint}")
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}D tensor, got {t.dim()}D with shape "
                         f"{tuple(t.shape)}")
    if t.requires_grad and torch.is_grad_enabled():
        raise ValueError(f"{name}: requires_grad is set while autograd is enabled; these "
                         f"kernels register no backward (detach it or use torch.no_grad())")
    if any(s < 0 for s in t.stride()):
        raise ValueError(f"{name}: negative strides {tuple(t.stride())} are not supported")
    if contiguous and not t.is_contiguous():
        raise ValueError(f"{name}: must be contiguous, got strides {tuple(t.stride())} for "
                         f"shape {tuple(t.shape)}")
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
