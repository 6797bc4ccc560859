"""Metadata validation and a cheap launch path shared by the GPU workshops' wrappers.

The contract: wrappers validate metadata but never scan values (that would
add GPU work).  Wrong type or dtype -> TypeError; wrong shape, stride, option,
device, ``requires_grad`` under autograd, or a size past the limits -> ValueError.
Every message starts with the argument's name.

Kernels run on CUDA tensors, or on CPU tensors when Triton's interpreter is on
(``TRITON_INTERPRET=1``, set by ``python -m checks --interpret``).

Per-call cost.  A small kernel's GPU time is a few microseconds, so what a caller pays
per call is mostly host time: validation, allocation, Triton's launch dispatch and the
driver launch.  Two tools here keep that near the floor (measured phase by phase in
workshops/worksheet.md):

* :func:`check_tensor` remembers the metadata it has accepted -- (dtype, device, shape,
  strides, storage offset) with the rule it was checked against -- so a repeat call
  costs one tuple and one dict lookup; only ``requires_grad`` is re-read every call.
* :class:`Launcher` wraps a ``@triton.jit`` kernel.  The first call of each
  specialization goes through ``kernel[grid](...)`` (compile, cache) and keeps the
  ``CompiledKernel`` it returns; later calls with the same specialization launch that
  handle directly, skipping the JIT's argument binding and cache-key work.
"""

from __future__ import annotations

import os

import torch
import triton

INT32_MAX = 2**31 - 1
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
HALF_DTYPES = (torch.float16, torch.bfloat16)


try:  # os.environ.get costs ~1.4 us (key encoding); the mapping behind it is a plain dict
    _ENV, _INTERPRET_KEY = os.environ._data, os.environ.encodekey("TRITON_INTERPRET")
    _ONE = os.environ.encodevalue("1")
except AttributeError:  # pragma: no cover - a Python without os.environ._data
    _ENV, _INTERPRET_KEY, _ONE = os.environ, "TRITON_INTERPRET", "1"


def interpreting() -> bool:
    return _ENV.get(_INTERPRET_KEY) == _ONE


def kernel_device_type() -> str:
    return "cpu" if interpreting() else "cuda"


# Metadata that passed check_tensor: (dtype, device, shape, strides, offset, rule).
_ACCEPTED: set = set()
_ACCEPTED_MAX = 4096


def check_tensor(t, name: str, *, ndim: int, dtypes=FLOAT_DTYPES, contiguous: bool = False) -> None:
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
            interpreting(),
        )
        if key in _ACCEPTED:  # seen and accepted before: only requires_grad can differ
            if t.requires_grad and torch.is_grad_enabled():
                _reject_requires_grad(name)
            return
        _check_tensor_slow(t, name, ndim, dtypes, contiguous)
        if len(_ACCEPTED) >= _ACCEPTED_MAX:
            _ACCEPTED.clear()
        _ACCEPTED.add(key)
        return
    _check_tensor_slow(t, name, ndim, dtypes, contiguous)


def _reject_requires_grad(name: str) -> None:
    raise ValueError(
        f"{name}: requires_grad is set while autograd is enabled; these "
        f"kernels register no backward (detach it or use torch.no_grad())"
    )


def _check_tensor_slow(t, name: str, ndim: int, dtypes, contiguous: bool) -> None:
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


# --- launching ------------------------------------------------------------------------


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for ints.  triton.cdiv does the same but, in Triton 3.6, through a
    constexpr-function wrapper that costs about a microsecond per call on the host."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1), as plain int arithmetic."""
    return 1 << (n - 1).bit_length() if n > 1 else 1


def _pristine_jit_run():
    from triton.runtime.jit import JITFunction

    run = JITFunction.run
    while hasattr(run, "__wrapped__"):
        run = run.__wrapped__
    return run


def _spec(a):
    """What Triton 3.6 specializes a runtime argument on, or more: a tensor's dtype and
    16-byte alignment; an int's value 1, divisibility by 16 and integer width."""
    t = type(a)
    if t is int:
        return (a == 1, a % 16 == 0, -(2**31) <= a < 2**31, a < 2**63)
    if t is float or t is bool:
        return t
    return (a.dtype, a.data_ptr() % 16 == 0)


class Launcher:
    """``launcher(grid, *args, **constexprs_and_options)`` does what
    ``kernel[grid](*args, **constexprs_and_options)`` does, cheaper when repeated.

    ``args`` are the kernel's runtime parameters, in order; every ``tl.constexpr``
    parameter must come after them and be passed by keyword, with the launch options
    (``num_warps``, ``num_stages``).  The handle cache is keyed by the current device,
    the keywords, and what Triton specializes each runtime argument on (a superset of
    Triton's own key, so two calls that share a key always share Triton's compiled
    kernel).  Calls go through ``kernel[grid]`` -- nothing skipped -- under Triton's
    interpreter, on a Triton other than the 3.6 this was measured on, while launch hooks
    are set, and while anything (a profiler, the checks' provenance recorder) has
    wrapped ``JITFunction.run`` to observe launches."""

    def __init__(self, kernel):
        from triton.runtime.jit import JITFunction

        self.kernel = kernel
        self.handles: dict = {}
        version = tuple(int(p) for p in triton.__version__.split(".")[:2])
        self.direct = isinstance(kernel, JITFunction) and version == (3, 6)
        if self.direct:
            params = kernel.params
            n_runtime = sum(1 for p in params if not p.is_constexpr)
            if any(p.is_constexpr for p in params[:n_runtime]):
                raise TypeError(f"{kernel.__name__}: constexpr parameters must come last")
            self.n_runtime = n_runtime
            self.constexpr_names = tuple(p.name for p in params[n_runtime:])
            self._pristine = _pristine_jit_run()
            self._driver = None

    def __call__(self, grid, *args, **meta):
        if not self.direct:
            return self.kernel[grid](*args, **meta)
        from triton import knobs
        from triton.runtime.jit import JITFunction

        hooks = knobs.runtime
        if (
            JITFunction.run is not self._pristine
            or hooks.launch_enter_hook is not None
            or hooks.launch_exit_hook is not None
        ):
            return self.kernel[grid](*args, **meta)  # someone is watching launches
        if self._driver is None:
            from triton.runtime import driver

            self._driver = (driver.active.get_current_device, driver.active.get_current_stream)
        get_device, get_stream = self._driver
        device = get_device()
        key = (device, tuple(meta.items()), tuple(map(_spec, args)))
        handle = self.handles.get(key)
        if handle is None:
            compiled = self.kernel[grid](*args, **meta)  # compiles (once) and launches
            if any(name not in meta for name in self.constexpr_names):
                return compiled  # a defaulted constexpr: no handle
            constexprs = tuple(meta[name] for name in self.constexpr_names)
            self.handles[key] = (compiled, constexprs)
            return compiled
        compiled, constexprs = handle
        g1 = grid[1] if len(grid) > 1 else 1
        g2 = grid[2] if len(grid) > 2 else 1
        compiled.run(
            grid[0],
            g1,
            g2,
            get_stream(device),
            compiled.function,
            compiled.packed_metadata,
            None,
            None,
            None,
            *args,
            *constexprs,
        )
        return compiled
