"""Tensor helpers for the GPU workshops' checks: tolerances, poison, mismatch reports.

Imported only by GPU cases (it imports torch).  The elementwise tolerances are those of
checks/judging/tolerances.py (the one table, which says why each is what it is), keyed
here by torch dtype.
"""

from __future__ import annotations

import hashlib
import math
import os
from typing import Optional

import torch

from checks.judging import tolerances
from checks.judging.case import CheckFailed, note_comparison

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}

TOLERANCES = {
    dtype: tolerances.elementwise(name) for name, dtype in {**DTYPES, "fp64": torch.float64}.items()
}

# A value no correct kernel produces for these ops; outputs are pre-filled with it so an
# element that was never written stands out.  Finite, so it survives every dtype.
POISON = -12345.0


def tolerance(dtype: torch.dtype, scale: float = 1.0) -> dict:
    """atol and rtol for a torch dtype, times ``scale`` (KeyError for a dtype without one)."""
    t = TOLERANCES[dtype]
    return dict(atol=t["atol"] * scale, rtol=t["rtol"] * scale)


def randn(shape, *, ctx, dtype=torch.float32, scale: float = 1.0, offset: float = 0.0) -> torch.Tensor:
    """Seeded normal values drawn on the CPU (same numbers everywhere), moved to ctx.device.

    On a GPU the tensor sits inside a guard band of NaN (see :func:`guarded`), so a
    kernel that reads past its input pulls NaN into its output and fails the check.
    (In the interpreter the out-of-bounds detector does this job exactly.)"""
    x = torch.randn(*shape, generator=ctx.torch_generator(), dtype=torch.float64) * scale + offset
    x = x.to(dtype).to(ctx.device)
    return guarded(x) if guard_bands_on(ctx) else x


GUARD_ELEMENTS = 4096  # per side; a multiple of 128 keeps every dtype's 16-byte alignment


def keep_stream_busy() -> None:
    """Queue about 10 ms of work on the current CUDA stream (fp32 matmuls), so that a
    launch on another stream, or a read before this stream is synchronized, sees inputs
    not yet written: a race then shows as a wrong answer."""
    a = torch.full((4096, 4096), 1e-3, device="cuda")
    b = torch.empty_like(a)
    for _ in range(5):  # about 2 ms each on an H100-class GPU
        torch.mm(a, a, out=b)


def guard_bands_on(ctx) -> bool:
    return ctx.device == "cuda" or os.environ.get("CHECKS_GUARD_BANDS") == "1"


def guarded(t: torch.Tensor, sentinel: float = float("nan")) -> torch.Tensor:
    """A copy of ``t`` (same shape, strides and values) placed in the middle of a larger
    buffer whose other elements hold ``sentinel``."""
    if t.numel() == 0:
        return t
    span = sum((n - 1) * st for n, st in zip(t.shape, t.stride())) + 1
    buf = torch.full((GUARD_ELEMENTS + span + GUARD_ELEMENTS,), sentinel, dtype=t.dtype, device=t.device)
    view = buf.as_strided(t.shape, t.stride(), GUARD_ELEMENTS)
    view.copy_(t)
    return view


def guard_intact(t: torch.Tensor) -> bool:
    """True when the guard band around a :func:`guarded` tensor still holds only NaN
    (a kernel wrote nothing past either end of its input)."""
    storage = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())
    head, tail = storage[:GUARD_ELEMENTS], storage[-GUARD_ELEMENTS:]
    return bool(torch.isnan(head).all() and torch.isnan(tail).all())


def poisoned_allocator(shape, dtype, device: "torch.device | str") -> None:
    """Leave a block of poison where the caching allocator will look next: allocate a
    tensor of the output's size filled with POISON and free it.  On CUDA the next
    allocation of that size usually gets the same block back, so elements a kernel
    never writes still hold the poison and are reported as never written."""
    numel = math.prod(shape)
    if numel:
        torch.full((numel,), POISON, dtype=dtype, device=device)  # freed at once


def _fmt(v: float) -> str:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    return f"{v:.6g}"


def _ranges(idx: list, limit: int = 4) -> str:
    """[0,1,2,5,7,8] -> '0-2, 5, 7-8'."""
    if not idx:
        return ""
    out, start, prev = [], idx[0], idx[0]
    for i in idx[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    more = f" (+{len(out) - limit} more)" if len(out) > limit else ""
    return ", ".join(out[:limit]) + more


def _digest(shape: tuple, bad: torch.Tensor) -> str:
    """12 hex digits of a sha1 of the shape and the flat indices of the wrong elements."""
    flat = bad.reshape(-1).nonzero().flatten().tolist()
    return hashlib.sha1(f"{shape} {flat}".encode("ascii")).hexdigest()[:12]


def _matches_on_device(got: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> bool:
    """The same test as the report's, in float64 on the GPU: every element within tolerance."""
    if got.shape != expected.shape:
        return False
    g = got.detach().to(torch.float64)
    e = expected.detach().to(g.device, torch.float64)
    return bool(((g - e).abs() <= atol + rtol * e.abs()).all())  # NaN compares False


def mismatch_report(
    got: torch.Tensor, expected: torch.Tensor, *, atol: float, rtol: float, max_listed: int = 5
) -> Optional[dict]:
    """None when ``got`` matches ``expected`` within tolerance, else a dict of facts.

    ``expected`` is the float64 oracle.  The facts: count and fraction of mismatches,
    the worst wrong element (the largest absolute error among the wrong ones: its
    index, values and error), the largest relative error among them, the first few
    mismatches, NaN/Inf counts, elements left at the poison value, which elements are
    wrong (a digest) and the sum of their values, and (for 2D) the rows and columns affected.
    """
    # The poison as the output's dtype stores it (-12345 is -12344 in fp16, -12352 in bf16).
    poison = float(torch.tensor(POISON, dtype=got.dtype)) if got.dtype.is_floating_point else POISON
    if got.device.type != "cpu" and _matches_on_device(got, expected, atol, rtol):
        note_comparison()  # (a pass needs no facts: its float64 copy would cost more than the kernel)
        return None
    g = got.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    diff = (g - e).abs()
    bad = ~(diff <= atol + rtol * e.abs())  # NaN compares False, so NaN is bad
    n_bad = int(bad.sum())
    if n_bad == 0:
        note_comparison()  # values that matched: a pass of this check says something about values
        return None
    numel = g.numel()
    finite = torch.where(torch.isfinite(diff), diff, torch.zeros_like(diff))
    # A wrong element whose error is not a number (NaN or Inf where the oracle is finite,
    # or a finite value where it is infinite) is worse than any finite error: the first
    # of them is the worst, so a NaN is never reported as an error of 0.
    not_finite = (bad & ~torch.isfinite(diff)).reshape(-1)
    if bool(not_finite.any()):
        flat_worst = int(not_finite.nonzero()[0])
    else:
        flat_worst = int(torch.argmax(torch.where(bad, finite, torch.zeros_like(finite)).reshape(-1)))
    worst_idx = [int(i) for i in torch.unravel_index(torch.tensor(flat_worst), g.shape)] if g.dim() else []
    rel = finite / e.abs().clamp_min(1e-30)
    worst_err = float(diff.reshape(-1)[flat_worst])
    bad_positions = bad.nonzero().tolist()
    facts = {
        "mismatched": n_bad,
        "total": numel,
        "fraction": n_bad / max(numel, 1),
        # the worst wrong element's own error: a larger one elsewhere is within its tolerance
        "max_abs_error": worst_err,
        "max_rel_error": (
            worst_err
            if not math.isfinite(worst_err)
            else float(torch.where(bad, rel, torch.zeros_like(rel)).max())
        ),
        "not_finite": int(not_finite.sum()),
        "worst_index": worst_idx,
        "worst_got": float(g.reshape(-1)[flat_worst]),
        "worst_expected": float(e.reshape(-1)[flat_worst]),
        "first_mismatches": [
            {"index": p, "got": float(g[tuple(p)]), "expected": float(e[tuple(p)])}
            for p in bad_positions[:max_listed]
        ],
        "nan": int(torch.isnan(g).sum()),
        "inf": int(torch.isinf(g).sum()),
        "unwritten": int((g == poison).sum()),
        "atol": atol,
        "rtol": rtol,
        # what identifies this output among wrong ones (the repair's reference match):
        # which elements are wrong, and the sum of their finite values
        "wrong_digest": _digest(tuple(g.shape), bad),
        "wrong_sum": float(torch.where(bad & torch.isfinite(g), g, torch.zeros_like(g)).sum()),
    }
    if g.dim() == 2:
        rows = bad.any(dim=1).nonzero().flatten().tolist()
        cols = bad.any(dim=0).nonzero().flatten().tolist()
        facts["rows_affected"] = _ranges(rows)
        facts["cols_affected"] = _ranges(cols)
        facts["n_rows_affected"] = len(rows)
        facts["n_cols_affected"] = len(cols)
        facts["map"] = error_map(bad)
        facts["map_scale"] = map_scale(tuple(bad.shape))
    return facts


MAP_LINES, MAP_CHARS = 8, 32  # the error map's most lines, and most characters a line


def _edges(n: int, cells: int) -> list:
    """Where each of ``cells`` near-equal bands of ``n`` rows (or columns) starts, and the end."""
    cells = min(cells, n)
    return [round(i * n / cells) for i in range(cells + 1)]


def error_map(bad: torch.Tensor, rows: int = MAP_LINES, cols: int = MAP_CHARS) -> list:
    """A downsampled picture of where a 2D output is wrong: one string per row band,
    '#' where any element in the cell is wrong, '.' where all are right."""
    R, C = bad.shape
    r_edges, c_edges = _edges(R, rows), _edges(C, cols)
    out = []
    for i in range(len(r_edges) - 1):
        band = bad[r_edges[i] : r_edges[i + 1]]
        line = "".join(
            "#" if bool(band[:, c_edges[j] : c_edges[j + 1]].any()) else "." for j in range(len(c_edges) - 1)
        )
        out.append(line)
    return out


def map_scale(shape: tuple, rows: int = MAP_LINES, cols: int = MAP_CHARS) -> dict:
    """How much of a ``shape`` (rows, columns) output one line and one character of its
    :func:`error_map` stand for: the output's size, the map's lines and characters."""
    R, C = shape
    return {"rows": R, "cols": C, "lines": min(rows, R), "chars": min(cols, C)}


def describe(facts: dict) -> str:
    """One or two lines a learner can act on."""
    parts = [f"{facts['mismatched']} of {facts['total']} elements wrong ({100 * facts['fraction']:.1f}%)"]
    if facts.get("unwritten"):
        parts.append(f"{facts['unwritten']} never written (still hold the poison {POISON:g})")
    if facts.get("nan") or facts.get("inf"):
        parts.append(f"{facts['nan']} NaN, {facts['inf']} Inf")
    if "rows_affected" in facts:
        parts.append(f"rows {facts['rows_affected']}; cols {facts['cols_affected']}")
    tol = f"tol atol={facts['atol']:.1e} rtol={facts['rtol']:.1e}"
    worst = f"got {_fmt(facts['worst_got'])}, expected {_fmt(facts['worst_expected'])}"
    if math.isfinite(facts["max_abs_error"]):
        parts.append(
            f"worst at {facts['worst_index']}: {worst} (abs err {_fmt(facts['max_abs_error'])}, {tol})"
        )
    else:  # a NaN or an Inf: no error size means anything; say which element
        parts.append(
            f"worst at {facts['worst_index']} (the first element whose error is not a finite number): "
            f"{worst} ({tol})"
        )
    return "; ".join(parts)


def expect_tensor(got, *, shape, dtype, device: str, name: str = "output", contiguous: bool = True):
    """Fail with a clear message when metadata is wrong (before comparing values)."""
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{name} should be a torch.Tensor, got {type(got).__name__}")
    if tuple(got.shape) != tuple(shape):
        raise CheckFailed(
            f"{name} has shape {tuple(got.shape)}, expected {tuple(shape)}",
            {"got_shape": list(got.shape), "expected_shape": list(shape)},
        )
    if got.dtype != dtype:
        raise CheckFailed(f"{name} has dtype {got.dtype}, expected {dtype}")
    if got.device.type != device:
        raise CheckFailed(f"{name} is on {got.device}, expected a {device} tensor")
    if contiguous and not got.is_contiguous():
        raise CheckFailed(
            f"{name} has strides {tuple(got.stride())}; the contract says a fresh contiguous output"
        )


def assert_close(
    got,
    expected64: torch.Tensor,
    *,
    dtype: torch.dtype,
    name: str = "output",
    scale: float = 1.0,
    device: Optional[str] = None,
):
    """Compare with the float64 oracle using the dtype's tolerance; metadata first."""
    expect_tensor(
        got,
        shape=expected64.shape,
        dtype=dtype,
        device=device or got.device.type if isinstance(got, torch.Tensor) else "cpu",
        name=name,
    )
    tol = tolerance(dtype, scale)
    facts = mismatch_report(got, expected64, **tol)
    if facts is not None:
        raise CheckFailed(f"{name}: {describe(facts)}", facts)


def assert_not_alias(out: torch.Tensor, *inputs: torch.Tensor, names: tuple = ()):
    """The output shares no memory with any input (``names``: the inputs' parameter names)."""
    for i, t in enumerate(inputs):
        if t.numel() and out.numel() and out.untyped_storage().data_ptr() == t.untyped_storage().data_ptr():
            name = names[i] if i < len(names) else f"input {i}"
            raise CheckFailed(
                f"the output shares memory with {name} (it is {name} or a view of it, written in "
                f"place); the contract asks for a fresh output"
            )


def expect_rejects(fn, exc_types, words, what: str):
    """Call fn(); it must raise one of exc_types whose message mentions one of words."""
    try:
        fn()
    except exc_types as e:
        msg = str(e).lower()
        if words and not any(w.lower() in msg for w in words):
            raise CheckFailed(
                f"{what}: raised {type(e).__name__} ({e}) but the message does not "
                f"name the argument ({' or '.join(words)})"
            ) from None
        return f"rejected with {type(e).__name__}"
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001 - any other error is a wrong rejection
        raise CheckFailed(
            f"{what}: expected {'/'.join(t.__name__ for t in exc_types)}, got {type(e).__name__}: {e}"
        ) from None
    raise CheckFailed(f"{what}: accepted without an error; the contract says it must be rejected")
