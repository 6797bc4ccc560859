"""What the compiler made of a variant: the Triton kernels one call launched, with their
registers, spills, shared memory, warps and stages.

Triton 3.6 has no public "kernel launched" hook, so :func:`recording_launches` wraps
``JITFunction.run`` for the length of one call and keeps its return value: the
``CompiledKernel`` that ran (``JITFunction.run`` is what ``kernel[grid](...)``, the
autotuner and ``@triton.heuristics`` all end in).  After a launch the compiled kernel
has ``n_regs`` and ``n_spills`` (read back from the loaded binary) and ``metadata``
with ``shared`` (bytes), ``num_warps`` and ``num_stages``.  The wrapper is removed when
the call returns, whatever else (the provenance check) wrapped ``run`` before it.

Kernels run by Triton's interpreter (``TRITON_INTERPRET=1``) are not ``JITFunction``s
and are not recorded; PyTorch's own kernels never are.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Optional

FACT_FIELDS = ("n_regs", "n_spills", "shared_bytes", "num_warps", "num_stages")


def _int(x) -> Optional[int]:
    if isinstance(x, bool):
        return None
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def kernel_name(jit_fn, compiled=None) -> str:
    for obj in (jit_fn, getattr(jit_fn, "fn", None)):
        name = getattr(obj, "__name__", None)
        if isinstance(name, str) and name:
            return name
    name = getattr(compiled, "name", None)
    return name if isinstance(name, str) and name else "kernel"


def kernel_facts(compiled, name: str = "kernel") -> dict:
    """One compiled kernel's resources; a fact the object does not carry is None (a
    kernel whose binary was never loaded has no register count yet)."""
    meta = getattr(compiled, "metadata", None)
    return {
        "name": name,
        "n_regs": _int(getattr(compiled, "n_regs", None)),
        "n_spills": _int(getattr(compiled, "n_spills", None)),
        "shared_bytes": _int(getattr(meta, "shared", None)),
        "num_warps": _int(getattr(meta, "num_warps", None)),
        "num_stages": _int(getattr(meta, "num_stages", None)),
        "launches": 1,
    }


def summarize_launches(launched: list) -> list:
    """[(jit_fn, compiled)] in launch order -> one facts dict per distinct compiled
    kernel, first launch first, with how many times one call launched it."""
    out, seen = [], {}
    for jit_fn, compiled in launched:
        key = id(compiled)
        if key in seen:
            seen[key]["launches"] += 1
            continue
        facts = kernel_facts(compiled, kernel_name(jit_fn, compiled))
        seen[key] = facts
        out.append(facts)
    return out


@contextmanager
def recording_launches():
    """Within the block, every non-warmup ``JITFunction.run`` appends (jit_fn, compiled)
    to the yielded list."""
    from triton.runtime.jit import JITFunction

    launched: list = []
    original = JITFunction.__dict__["run"]

    def run(self, *args, **kwargs):
        compiled = original(self, *args, **kwargs)
        if compiled is not None and not kwargs.get("warmup", False):
            launched.append((self, compiled))
        return compiled

    run.__wrapped__ = original
    JITFunction.run = run
    try:
        yield launched
    finally:
        if JITFunction.__dict__.get("run") is run:
            JITFunction.run = original


def capture_kernels(fn: Callable) -> list:
    """Call ``fn`` once and return the facts of the Triton kernels it launched ([] for a
    variant that launched none, a PyTorch baseline say)."""
    with recording_launches() as launched:
        fn()
    return summarize_launches(launched)


def describe(kernels) -> str:
    """A short line: "_softmax: 32 regs, 0 spills, 1.0 KiB smem, 4 warps, 3 stages"."""
    if not kernels:
        return "-"
    parts = []
    for k in kernels:
        bits = []
        if k.get("n_regs") is not None:
            bits.append(f"{k['n_regs']} regs")
        if k.get("n_spills") is not None:
            bits.append(f"{k['n_spills']} spills")
        if k.get("shared_bytes") is not None:
            bits.append(f"{k['shared_bytes'] / 1024:.1f} KiB smem")
        if k.get("num_warps") is not None:
            bits.append(f"{k['num_warps']} warps")
        if k.get("num_stages") is not None:
            bits.append(f"{k['num_stages']} stages")
        times = f" x{k['launches']}" if (k.get("launches") or 1) > 1 else ""
        parts.append(f"{k.get('name', 'kernel')}{times}: {', '.join(bits) or 'no facts'}")
    return "; ".join(parts)


def brief(kernels) -> str:
    """A table cell: "32r 0sp 4w 3st 1.0K" for the first kernel, "+N" for more kernels;
    "-" when nothing was recorded, "no triton" when the call launched no Triton kernel."""
    if kernels is None:
        return "-"
    if not kernels:
        return "no triton"
    k = kernels[0]
    bits = []
    for key, unit in (("n_regs", "r"), ("n_spills", "sp"), ("num_warps", "w"), ("num_stages", "st")):
        if k.get(key) is not None:
            bits.append(f"{k[key]}{unit}")
    if k.get("shared_bytes") is not None:
        bits.append(f"{k['shared_bytes'] / 1024:.0f}K")
    more = f" +{len(kernels) - 1}" if len(kernels) > 1 else ""
    return (" ".join(bits) or k.get("name", "kernel")) + more
