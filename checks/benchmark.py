"""``python -m checks.benchmark``: time the GPU workshops' answers after correctness passes.

    python -m checks.benchmark --op strided_softmax                 # your file, graph timing
    python -m checks.benchmark --op all --solution --timing graph   # the reference answers
    python -m checks.benchmark --op all --solution --timing events --dtype all

Each operation's benchmark spec lives in ``checks/benchmarks/<op>.py`` (SHAPES, DTYPES,
make_inputs, oracle, work, variants).  For every selected shape and dtype, every
variant (the learner's candidates, the PyTorch baseline, peers) is first run once and
compared with the spec's float64 oracle; only a variant that passes is timed, through
``triton.testing`` (see ``checks/bench_timing.py`` for what each timing mode means).
The result is one JSON file (schema ``results/schema/benchmark.schema.json``) with raw
samples, statistics, errors, achieved GB/s or TFLOP/s against ceilings measured in the
same run, speedups, the environment and the sha256 of every measured file.

Exit codes: 0 everything ran and passed; 1 a variant failed (wrong result, crash, load
error); 2 a variant is still TODO and nothing failed; 3 no CUDA GPU (or
``TRITON_INTERPRET=1``) or nothing to run; 64 a usage error.

This module imports torch only after the arguments are checked; the payload builder,
statistics, correctness comparison, target verdicts and the per-op runner take their
timer and device as arguments so they are testable on a CPU.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Callable, Optional

from checks.records import (EXIT_PASS, EXIT_TODO, EXIT_UNAVAILABLE, EXIT_USAGE, EXIT_WRONG, UsageParser,
                            write_json_atomic)

REPO = Path(__file__).resolve().parent.parent
SCHEMA = "kernel-course/benchmark"
VERSION = 1
OPS = ("strided_softmax", "softmax_backward", "fused_gemm", "split_softmax",
       "streaming_attention")
DTYPE_NAMES = ("fp32", "fp16", "bf16")
ROLES = ("candidate", "baseline", "peer")
STATUSES = ("ok", "failed", "skipped")

# --- correctness: the one table of thresholds ------------------------------------------
# Pass/fail is the relative error norm ||out - ref|| / ||ref|| against the spec's float64
# oracle (computed from the very inputs the variant saw, so only the kernel's arithmetic
# and the output's rounding count).  Rounding a result to fp16 alone gives about 3e-4 and
# to bf16 about 2e-3 (u/sqrt(3)); fp32 softmax-like arithmetic lands near 1e-7.
REL_TOL = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1.5e-2}
# Matmul-ish ops add rounding of their own: the GEMM peer (cuBLAS) may reduce in reduced
# precision, and attention converts P to the input dtype before P@V (as FlashAttention does).
TOL_SCALE = {"fused_gemm": 2.0, "streaming_attention": 2.0}


def tolerance(op: str, dtype: str) -> float:
    return REL_TOL[dtype] * TOL_SCALE.get(op, 1.0)


# --- targets (evaluated with --solution) ----------------------------------------------
# The targets for the reference answers on an H200.  Kernel-speed targets are
# judged on graph timing (warm replay: what the roofline and the seed's table measure);
# an events run is judged on the per-call target below.  kind: "fraction" = best
# candidate's fraction of the roofline floor; "vs_baseline" / "vs_peer" = the fastest
# baseline's / peer's median over the best candidate's (>= target); "causal_over_full" =
# best causal candidate over best full candidate (<= target).  causal selects attention
# rows by their causal flag (shape params or variant config).
ROOFLINE_TARGETS = [
    dict(op="strided_softmax", shape="16384x8192", dtype="fp32", kind="fraction", target=0.85,
         what="16384x8192 fp32 contiguous: best candidate >= 85% of copy bandwidth"),
    dict(op="strided_softmax", shape="16384x8192-t", dtype="fp32", kind="vs_baseline", target=2.0,
         what="16384x8192 fp32 transposed view: best candidate >= 2x torch.softmax"),
    dict(op="softmax_backward", shape="16384x8192", dtype="fp16", kind="fraction", target=0.85,
         what="16384x8192 fp16: best candidate >= 85% of copy bandwidth (3 streams)"),
    dict(op="softmax_backward", shape="16384x8192", dtype="fp16", kind="vs_peer", target=1.5,
         what="16384x8192 fp16: best candidate >= 1.5x aten _softmax_backward_data"),
    dict(op="fused_gemm", shape="4096x4096x4096", dtype="fp16", kind="vs_peer", target=0.8,
         what="4096^3 fp16: best candidate >= 0.8x cuBLAS relu(addmm)"),
    dict(op="fused_gemm", shape="4096x4096x4096", dtype="bf16", kind="vs_peer", target=0.8,
         what="4096^3 bf16: best candidate >= 0.8x cuBLAS relu(addmm)"),
    dict(op="split_softmax", shape="4x131072", dtype="fp32", kind="vs_baseline", target=3.0,
         what="4x131072 fp32: best candidate >= 3x torch.softmax"),
    dict(op="split_softmax", shape="1024x131072", dtype="fp32", kind="vs_baseline", target=1.2,
         what="1024x131072 fp32: best candidate >= 1.2x torch.softmax"),
    dict(op="streaming_attention", shape="2048x64", dtype="fp16", causal=True, kind="vs_baseline",
         target=1.0, what="N=2048 D=64 fp16 causal: best candidate no slower than SDPA"),
    dict(op="streaming_attention", shape="2048x64", dtype="fp16", causal=False, kind="vs_baseline",
         target=1.0, what="N=2048 D=64 fp16 full: best candidate no slower than SDPA"),
    dict(op="streaming_attention", shape="2048x64", dtype="fp16", kind="causal_over_full",
         target=0.6, what="N=2048 D=64 fp16: causal takes <= 0.6x the time of full"),
]
# FIGURES.md, "The seed course's own reference answers on the same H200 (graph timing,
# warm L2)": shape -> (PyTorch baseline us, reference answer's best variant us).  Judged
# at each op's default dtype (the spec's DTYPES[0]; the GEMM row is fp16) on graph
# timing; attention rows are the causal ones.
SEED_REFERENCE = {
    "strided_softmax": {"256x257": (5.37, 2.59), "1024x1024": (13.70, 8.30)},
    "softmax_backward": {"256x1025": (17.40, 2.13), "1024x4097": (80.21, 9.86)},
    "fused_gemm": {"127x65x33": (16.27, 3.23), "512x512x512": (28.17, 8.43)},
    "split_softmax": {"4x32769": (12.13, 5.13), "64x131072": (32.86, 14.09)},
    "streaming_attention": {"129x32": (8.11, 4.57), "512x64": (10.36, 10.02)},
}
SEED_CAUSAL = {"streaming_attention": True}
# Events timing at the comparison shapes: per-call time within this factor of the baseline.
EVENTS_PER_CALL_FACTOR = 1.5


# Where inputs live and kernels run; the tests set "cpu" to drive the whole command
# with a fake spec and a fake timer.
DEVICE = "cuda"


class UsageError(Exception):
    pass


# --- statistics and rows ---------------------------------------------------------------

def _finite(x) -> Optional[float]:
    """A JSON-safe number: None for None, NaN and infinities."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def quantile(xs: list, q: float) -> float:
    """Linear interpolation between order statistics (triton.testing's and numpy's default)."""
    xs = sorted(xs)
    point = q * (len(xs) - 1)
    lo, hi = math.floor(point), math.ceil(point)
    return xs[lo] + (point - lo) * (xs[hi] - xs[lo])


def sample_stats(samples_ms: list) -> dict:
    """Raw samples (ms, as triton.testing returns them) -> microsecond statistics."""
    us = [float(s) * 1e3 for s in samples_ms]
    if not us:
        raise ValueError("no timing samples")
    return {
        "samples_us": [round(u, 4) for u in us],
        "median_us": quantile(us, 0.5),
        "p20_us": quantile(us, 0.2),
        "p80_us": quantile(us, 0.8),
        "min_us": min(us),
        "max_us": max(us),
        "mean_us": sum(us) / len(us),
    }


TIMING_FIELDS = ("median_us", "p20_us", "p80_us", "min_us", "max_us", "mean_us")


def new_row(op: str, shape: Optional[dict], dtype: Optional[str], variant: str, role: str,
            config: Optional[dict] = None) -> dict:
    params = {k: v for k, v in (shape or {}).items() if k not in ("name", "role")}
    return {
        "op": op,
        "shape": shape["name"] if shape else "(all)",
        "shape_role": shape.get("role") if shape else None,
        "params": _jsonable(params),
        "dtype": dtype,
        "variant": variant,
        "role": role if role in ROLES else "candidate",
        "config": _jsonable(config or {}),
        "status": "ok",
        "message": "",
        "tolerance": tolerance(op, dtype) if dtype in REL_TOL else None,
        "max_abs_error": None,
        "rel_error": None,
        "samples_us": [],
        **{k: None for k in TIMING_FIELDS},
        "bytes": None,
        "flops": None,
        "gbps": None,
        "tflops": None,
        "fraction_of_ceiling": None,
        "bound": None,
        "speedup": None,
    }


def _jsonable(d):
    return json.loads(json.dumps(d, default=str))


def add_throughput(row: dict, work: dict, ceilings: dict) -> dict:
    """Achieved GB/s and TFLOP/s, and the fraction of the roofline floor: the floor time
    is max(bytes / copy bandwidth, flops / bf16 matmul rate) (just the bandwidth term
    for a memory-bound op whose flops are None); fraction = floor / median."""
    nbytes = work.get("bytes") if work else None
    flops = work.get("flops") if work else None
    row["bytes"] = int(nbytes) if nbytes is not None else None
    row["flops"] = int(flops) if flops is not None else None
    med = row.get("median_us")
    if not med or med <= 0:
        return row
    if nbytes:
        row["gbps"] = nbytes / med / 1e3            # bytes per us -> GB/s
    if flops:
        row["tflops"] = flops / med / 1e6           # flop per us -> TFLOP/s
    bw = (ceilings or {}).get("copy_gbps")
    rate = (ceilings or {}).get("bf16_matmul_tflops")
    t_bytes = nbytes / (bw * 1e3) if (nbytes and bw) else None      # us
    t_flops = flops / (rate * 1e6) if (flops and rate) else None     # us
    if t_bytes is not None or t_flops is not None:
        if not flops or t_flops is not None:        # with flops, the matmul rate must be known
            row["fraction_of_ceiling"] = max(t for t in (t_bytes, t_flops) if t is not None) / med
        # which term sets the floor decides what the tables show: GB/s or TFLOP/s
        row["bound"] = "compute" if (t_flops or 0) > (t_bytes or 0) else "memory"
    return row


def _causal(row: dict):
    """An attention row's causal flag, wherever the spec put it (shape or config)."""
    for where in (row.get("params") or {}, row.get("config") or {}):
        if "causal" in where:
            return bool(where["causal"])
    name = str(row.get("shape", ""))
    if name.endswith("-causal"):
        return True
    if name.endswith("-full"):
        return False
    return None


def _group(row: dict) -> tuple:
    return (row["op"], row["shape"], row["dtype"], _causal(row))


def add_speedups(rows: list) -> list:
    """speedup = the baseline's median / this variant's median, within one op, shape,
    dtype (and causal flag, for attention whose spec puts it in the variant config)."""
    base = {}
    for r in rows:
        if r["role"] == "baseline" and r["status"] == "ok" and r["median_us"]:
            base.setdefault(_group(r), r["median_us"])
    for r in rows:
        b = base.get(_group(r))
        r["speedup"] = b / r["median_us"] if (b and r["status"] == "ok" and r["median_us"]) else None
    return rows


def exit_code(rows: list) -> int:
    statuses = {r["status"] for r in rows}
    if not rows:
        return EXIT_UNAVAILABLE
    if "failed" in statuses:
        return EXIT_WRONG
    if "skipped" in statuses:
        return EXIT_TODO
    return EXIT_PASS


# --- correctness -------------------------------------------------------------------------

def compare(out, ref, op: str, dtype: str) -> tuple:
    """(max_abs_error, rel_error, ok, message) of a variant's output against the oracle."""
    import torch
    if not isinstance(out, torch.Tensor):
        return None, None, False, f"returned {type(out).__name__}, not a tensor"
    if tuple(out.shape) != tuple(ref.shape):
        return None, None, False, f"output shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    got = out.detach().to(device=ref.device, dtype=torch.float64)
    ref = ref.to(torch.float64)
    diff = got - ref
    bad = int((~torch.isfinite(got)).sum())
    max_abs = float(diff.abs().max()) if diff.numel() else 0.0
    ref_norm = float(torch.linalg.vector_norm(ref)) if ref.numel() else 0.0
    diff_norm = float(torch.linalg.vector_norm(diff)) if diff.numel() else 0.0
    rel = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm == 0 else math.inf)
    tol = tolerance(op, dtype)
    if bad:
        return max_abs, rel, False, f"{bad} non-finite output element(s)"
    if not rel <= tol:
        return max_abs, rel, False, (f"wrong result: relative error {rel:.3g} > {tol:.3g} "
                                     f"({dtype}); max abs error {max_abs:.3g}")
    return max_abs, rel, True, ""


def _classify(exc: BaseException, path: Optional[Path]) -> tuple:
    """(status, message) for an exception a variant raised: the learner's own
    NotImplementedError is a TODO (skipped); anything else is a failure."""
    from checks.engine import _raised_in, _where
    where = _where(exc, path) if path else ""
    if isinstance(exc, NotImplementedError) and path is not None and _raised_in(exc, path):
        return "skipped", f"TODO: {exc}" if str(exc) else "TODO: not implemented yet"
    if isinstance(exc, NotImplementedError):
        return "failed", f"NotImplementedError raised by a library, not your TODO{where}: {exc}"
    return "failed", f"{type(exc).__name__}{where}: {str(exc).strip()[:2000]}"


def stable_seed(op: str, shape: str, dtype: str, base: int = 0) -> int:
    return (zlib.crc32(f"{op}/{shape}/{dtype}".encode()) + base) % (2**31 - 1)


# --- the per-op runner -------------------------------------------------------------------

def run_op(op: str, spec, mod, path: Optional[Path], *, dtypes: list, shapes: str = "all",
           timer: Callable, ceilings: Optional[dict] = None, device: str = "cuda",
           sync: Callable = lambda: None, warm_calls: int = 3, seed: int = 0,
           log: Callable = lambda s: None, load_error: Optional[str] = None) -> list:
    """Check and time every variant of ``spec`` for the selected shapes and dtypes.

    ``mod`` is the learner's (or the solution's) module loaded from ``path``;
    ``timer(fn) -> samples in ms``; ``sync`` waits for the device.  Returns result rows
    (speedups filled in).  Never raises for a variant's failure."""
    import torch
    dmap = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    if load_error is not None:
        row = new_row(op, None, None, "(load)", "candidate")
        row.update(status="failed", message=load_error)
        return [row]
    rows: list = []
    broken = None       # a sticky CUDA error: nothing after it can run in this process
    selected = [s for s in spec.SHAPES if shapes == "all" or s.get("role") == shapes]
    for shape in selected:
        for dname in dtypes:
            dtype = dmap[dname]
            inputs = ref = work = None
            if broken:
                row = new_row(op, shape, dname, "(variants)", "candidate")
                row.update(status="failed", message=f"not run: an earlier CUDA error broke this "
                                                    f"process ({broken})")
                rows.append(row)
                log(_progress(row))
                continue
            try:
                inputs = spec.make_inputs(shape, dtype, device, stable_seed(op, shape["name"], dname, seed))
                ref = spec.oracle(inputs, shape)
                work = spec.work(shape, dtype)
                variants = spec.variants(mod, inputs, shape)
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # noqa: BLE001 - the spec or the module broke; record it
                status, msg = _classify(e, path)
                broken = broken or _cuda_broken(device)
                row = new_row(op, shape, dname, "(variants)", "candidate")
                row.update(status=status, message=f"could not set up this shape: {msg}"
                           if status == "failed" else msg)
                rows.append(row)
                log(_progress(row))
                continue
            for v in variants:
                row = new_row(op, shape, dname, str(v.get("name", "?")), v.get("role", "candidate"),
                              v.get("config"))
                rows.append(row)
                if broken:
                    row.update(status="failed", message=f"not run: an earlier CUDA error broke "
                                                        f"this process ({broken})")
                    log(_progress(row))
                    continue
                try:
                    fn = v["fn"]
                    out = fn()
                    sync()
                    max_abs, rel, ok, msg = compare(out, ref, op, dname)
                    del out
                except KeyboardInterrupt:
                    raise
                except BaseException as e:  # noqa: BLE001 - any crash is this variant's verdict
                    status, msg = _classify(e, path)
                    row.update(status=status, message=msg)
                    broken = broken or _cuda_broken(device)
                    log(_progress(row))
                    continue
                row.update(max_abs_error=_finite(max_abs), rel_error=_finite(rel))
                if not ok:
                    row.update(status="failed", message=msg)
                    log(_progress(row))
                    continue
                try:
                    for _ in range(warm_calls):          # compilation and autotuning stay out
                        fn()
                    sync()
                    row.update(sample_stats(timer(fn)))
                except KeyboardInterrupt:
                    raise
                except BaseException as e:  # noqa: BLE001
                    status, msg = _classify(e, path)
                    row.update(status="failed", message=f"timing failed: {msg}")
                    broken = broken or _cuda_broken(device)
                    log(_progress(row))
                    continue
                add_throughput(row, work, ceilings or {})
                log(_progress(row))
            del inputs, ref, variants
            if device == "cuda" and not broken:
                try:
                    torch.cuda.empty_cache()
                except Exception as e:  # noqa: BLE001 - a sticky error surfaced here
                    broken = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return add_speedups(rows)


def _cuda_broken(device: str) -> Optional[str]:
    """The sticky CUDA error left by a crash (an illegal address, say), or None."""
    if device != "cuda":
        return None
    import torch
    try:
        torch.cuda.synchronize()
        return None
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _progress(row: dict) -> str:
    head = f"  {row['op']} {row['shape']} {row['dtype'] or ''} {row['variant']} [{row['role']}]"
    if row["status"] == "ok":
        return f"{head}: {row['median_us']:.2f} us (rel err {row['rel_error']:.1e})"
    return f"{head}: {row['status'].upper()} {row['message'].splitlines()[0] if row['message'] else ''}"


# --- targets -----------------------------------------------------------------------------

def _ok(rows, op, shape=None, dtype=None, role=None, causal=None, prefix=False):
    out = []
    for r in rows:
        if r["op"] != op or r["status"] != "ok" or not r["median_us"]:
            continue
        if shape is not None:
            name = r["shape"]
            if not (name == shape or (prefix and name.startswith(shape + "-")
                                      and _causal(r) is not None)):
                continue
        if dtype is not None and r["dtype"] != dtype:
            continue
        if role is not None and r["role"] != role:
            continue
        if causal is not None and _causal(r) is not causal:
            continue
        out.append(r)
    return out


def _present(rows, op, shape, dtype, prefix=False) -> bool:
    """Was this op/shape/dtype measured at all (so a missing number is a miss)?"""
    return any(r["op"] == op and r["dtype"] == dtype and
               (r["shape"] == shape or (prefix and r["shape"].startswith(shape + "-")))
               for r in rows)


def _best(rs):
    return min(rs, key=lambda r: r["median_us"]) if rs else None


def _verdict(op, what, target, measured, cmp, timing, shape, dtype, unit, note="") -> dict:
    measured = _finite(measured)
    met = measured is not None and (measured >= target if cmp == ">=" else measured <= target)
    t = {"op": op, "what": what, "target": target, "measured": measured, "met": bool(met),
         "comparison": cmp, "unit": unit, "timing": timing, "shape": shape, "dtype": dtype}
    if measured is None:
        t["note"] = note or "not measured (no passing candidate or reference row)"
    return t


def evaluate_targets(rows: list, timing: str, default_dtypes: dict) -> list:
    """Verdicts of the issue's targets on these rows; targets whose shape and dtype were
    not run at all are left out (not reported as missed)."""
    targets = []
    if timing == "graph":
        for t in ROOFLINE_TARGETS:
            op, shape, dtype = t["op"], t["shape"], t["dtype"]
            pre = op == "streaming_attention"
            if not _present(rows, op, shape, dtype, prefix=pre):
                continue
            causal = t.get("causal")
            cands = _ok(rows, op, shape, dtype, "candidate", causal, prefix=pre)
            best = _best(cands)
            kind, measured, unit, cmp = t["kind"], None, "x", ">="
            if kind == "fraction":
                unit = "fraction of roofline"
                measured = max((c["fraction_of_ceiling"] or 0 for c in cands), default=None)
            elif kind in ("vs_baseline", "vs_peer"):
                other = _best(_ok(rows, op, shape, dtype, kind[3:], causal, prefix=pre))
                if best and other:
                    measured = other["median_us"] / best["median_us"]
            elif kind == "causal_over_full":
                cmp = "<="
                c = _best(_ok(rows, op, shape, dtype, "candidate", True, prefix=pre))
                f = _best(_ok(rows, op, shape, dtype, "candidate", False, prefix=pre))
                if c and f:
                    measured = c["median_us"] / f["median_us"]
            targets.append(_verdict(op, t["what"], t["target"], measured, cmp, timing, shape,
                                    dtype, unit))
        for op, table in SEED_REFERENCE.items():
            dtype = default_dtypes.get(op)
            causal = SEED_CAUSAL.get(op)
            pre = causal is not None
            for shape, (seed_base, seed_best) in table.items():
                if dtype is None or not _present(rows, op, shape, dtype, prefix=pre):
                    continue
                best = _best(_ok(rows, op, shape, dtype, "candidate", causal, prefix=pre))
                label = f"{shape} {dtype}{' causal' if causal else ''}"
                v = _verdict(op, f"{label}: best candidate no slower than the seed course's "
                                 f"answer ({seed_best} us; its baseline {seed_base} us)",
                             seed_best, best["median_us"] if best else None, "<=", timing,
                             shape, dtype, "us")
                targets.append(v)
    elif timing == "events":
        for op in sorted({r["op"] for r in rows}):
            dtype = default_dtypes.get(op)
            comp = [r for r in rows if r["op"] == op and r["shape_role"] == "comparison"
                    and r["dtype"] == dtype]
            for shape in dict.fromkeys(r["shape"] for r in comp):
                for causal in dict.fromkeys(_causal(r) for r in comp if r["shape"] == shape):
                    best = _best(_ok(rows, op, shape, dtype, "candidate", causal))
                    base = _best(_ok(rows, op, shape, dtype, "baseline", causal))
                    ratio = best["median_us"] / base["median_us"] if (best and base) else None
                    mode = "" if causal is None else ("causal" if causal else "full")
                    label = f"{shape} {dtype}" + (f" {mode}" if mode and mode not in shape else "")
                    targets.append(_verdict(
                        op, f"{label}: per-call time (events) within "
                            f"{EVENTS_PER_CALL_FACTOR}x of the PyTorch baseline",
                        EVENTS_PER_CALL_FACTOR, ratio, "<=", timing, shape, dtype,
                        "x baseline time"))
    return targets


# --- payload -----------------------------------------------------------------------------

def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def rel_path(path: Path) -> str:
    p = Path(path).resolve()
    try:
        return p.relative_to(REPO).as_posix()
    except ValueError:
        return str(p)


def source_hashes(paths) -> dict:
    return {rel_path(p): sha256_file(p) for p in paths if p and Path(p).is_file()}


def git_commit() -> Optional[str]:
    """The checkout's commit (read-only), or None outside a git checkout."""
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                           text=True, timeout=10)
        return r.stdout.strip() or None if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def build_payload(*, command: list, timing: str, cache: str, target: str, environment: dict,
                  hashes: dict, ceilings: dict, results: list, targets: Optional[list] = None,
                  method: str = "", quick: bool = False, created: Optional[str] = None,
                  commit: Optional[str] = None, notes: Optional[list] = None) -> dict:
    payload = {
        "schema": SCHEMA,
        "version": VERSION,
        "created": created or time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": list(command),
        "timing": timing,
        "cache": cache,
        "quick": bool(quick),
        "method": method,
        "target": target,
        "commit": commit,
        "environment": environment,
        "source_hashes": hashes,
        "ceilings": ceilings,
        "tolerances": {"rel_error": REL_TOL, "scale_by_op": TOL_SCALE},
        "results": results,
        "targets": targets or [],
        "notes": notes or [],
        "exit_code": exit_code(results),
    }
    return _clean(payload)


def _clean(x):
    """NaN and infinities are not JSON: they become null."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


# --- printing ----------------------------------------------------------------------------

def _fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def table_rows(rows: list) -> list:
    """The printed columns of one op's rows (strings)."""
    out = []
    for r in rows:
        if r["tflops"] is not None and (r.get("bound") == "compute" or r["gbps"] is None):
            achieved = f"{r['tflops']:.1f} TFLOP/s"
        elif r["gbps"] is not None:
            achieved = f"{r['gbps']:.0f} GB/s"
        else:
            achieved = "-"
        spread = (f"{r['p20_us']:.2f}-{r['p80_us']:.2f}" if r["p20_us"] is not None else "-")
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {r['message'].splitlines()[0][:70] if r['message'] else ''}"
        cfg = ",".join(f"{k}={v}" for k, v in (r.get("config") or {}).items())
        out.append([r["variant"] + (f" ({cfg})" if cfg and cfg not in r["variant"] else ""),
                    r["role"], r["shape"], r["dtype"] or "-", _fmt(r["median_us"]), spread,
                    _fmt(r["speedup"], ".2f") + ("x" if r["speedup"] is not None else ""),
                    achieved,
                    _fmt(r["fraction_of_ceiling"] * 100 if r["fraction_of_ceiling"] is not None
                         else None, ".0f") + ("%" if r["fraction_of_ceiling"] is not None else ""),
                    status])
    return out


HEADERS = ["variant", "role", "shape", "dtype", "median us", "p20-p80 us", "speedup",
           "achieved", "% ceiling", "status"]


def print_table(title: str, rows: list, stream=None) -> None:
    """A Rich table when Rich is importable, else aligned plain text."""
    stream = stream or sys.stdout
    body = table_rows(rows)
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        Console = None
    if Console is not None:
        tty = stream.isatty() and not os.environ.get("NO_COLOR")
        console = Console(file=stream, width=None if tty else 170, no_color=not tty,
                          highlight=False)
        t = Table(title=title, title_justify="left")
        for h in HEADERS:
            t.add_column(h, justify="right" if h in ("median us", "p20-p80 us", "speedup",
                                                     "achieved", "% ceiling") else "left")
        for line in body:
            style = None if line[-1] == "ok" else ("red" if line[-1].startswith("failed") else "yellow")
            t.add_row(*line, style=style)
        console.print(t)
        return
    widths = [max(len(h), *(len(l[i]) for l in body)) for i, h in enumerate(HEADERS)]
    print(title, file=stream)
    print("  ".join(h.ljust(w) for h, w in zip(HEADERS, widths)), file=stream)
    for l in body:
        print("  ".join(c.ljust(w) for c, w in zip(l, widths)), file=stream)


def print_targets(targets: list, stream=None) -> None:
    stream = stream or sys.stdout
    if not targets:
        return
    print("Targets:", file=stream)
    for t in targets:
        m = "-" if t["measured"] is None else f"{t['measured']:.3g}"
        print(f"  {'met   ' if t['met'] else 'MISSED'} {t['op']}: {t['what']} "
              f"(measured {m} {t['comparison']} {t['target']} {t['unit']})", file=stream)


# --- the command line --------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="python -m checks.benchmark",
                description="Time the GPU workshops' kernels after checking them against a "
                            "float64 oracle; write the evidence as JSON.",
                epilog="exit codes: 0 all ran and passed, 1 a variant failed, 2 TODO, "
                       "3 no CUDA GPU or nothing to run, 64 usage error")
    p.add_argument("--op", choices=("all",) + OPS, help="the operation to benchmark, or all")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--solution", action="store_true", help="time the reference answer")
    who.add_argument("--file", type=Path, metavar="PATH", help="time this file (one --op)")
    p.add_argument("--workspace", type=Path, metavar="DIR", help="folder of your exercise files")
    p.add_argument("--timing", choices=("graph", "events"), default="graph",
                   help="graph: warm CUDA-graph replay; events: CUDA events around repeated "
                        "Python calls (default graph)")
    p.add_argument("--cache", choices=("warm", "cold"), default="warm",
                   help="cold: flush the L2 before every call (triton.testing.do_bench; "
                        "events timing only; default warm)")
    p.add_argument("--dtype", choices=DTYPE_NAMES + ("all",),
                   help="dtype to time (default: each op's first; all: each op's list)")
    p.add_argument("--shapes", choices=("comparison", "roofline", "all"), default="all",
                   help="which of the spec's shapes (default all)")
    p.add_argument("--output", type=Path, metavar="PATH",
                   help="JSON file to write (default results/local/<op>-<timing>-<stamp>.json)")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--list", action="store_true", help="list the ops, their shapes and dtypes")
    return p


def validate(args) -> None:
    if args.list:
        return
    if args.op is None:
        raise UsageError("--op: name an operation or 'all' (see --list)")
    if args.file is not None:
        if args.op == "all":
            raise UsageError("--file: needs one --op, not 'all'")
        if not args.file.is_file():
            raise UsageError(f"--file: {args.file} does not exist")
    if args.timing == "graph" and args.cache == "cold":
        raise UsageError("--cache: cold applies to --timing events (do_bench flushes the L2 "
                         "before each call); graph replay is warm")
    if args.output is not None and args.output.is_dir():
        raise UsageError(f"--output: {args.output} is a folder; give a file path")


def cuda_problem() -> Optional[str]:
    """Why timings cannot run here, or None."""
    if os.environ.get("TRITON_INTERPRET", "0") == "1":
        return ("timings need a CUDA GPU: TRITON_INTERPRET=1 runs kernels in Triton's "
                "interpreter on the CPU, which has nothing worth timing; unset it on a GPU machine")
    try:
        import torch
        import triton  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"timings need a CUDA GPU with torch and triton ({type(e).__name__}: {e})"
    if not torch.cuda.is_available():
        return ("timings need a CUDA GPU, and none is available here (torch.cuda.is_available() "
                "is False); check correctness with `python -m checks <op> --interpret` instead")
    return None


def load_spec(op: str):
    """The op's benchmark spec module, checks/benchmarks/<op>.py (tests replace this)."""
    import importlib
    return importlib.import_module(f"checks.benchmarks.{op}")


def spec_problem(op: str) -> Optional[str]:
    try:
        spec = load_spec(op)
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("checks.benchmarks"):
            return f"no benchmark spec yet (checks/benchmarks/{op}.py)"
        return f"its spec cannot be imported ({e})"
    except Exception as e:  # noqa: BLE001
        return f"its spec cannot be imported ({type(e).__name__}: {e})"
    missing = [n for n in ("SHAPES", "DTYPES", "make_inputs", "oracle", "work", "variants")
               if not hasattr(spec, n)]
    return f"its spec lacks {', '.join(missing)}" if missing else None


def target_file(op: str, args) -> Path:
    from workshops import catalog
    if args.file is not None:
        return args.file
    w = catalog.get(op)
    if args.solution:
        return w.solution
    from checks import workspace
    return workspace.ensure_exercise(w, args.workspace)


def default_output(op: str, timing: str, cache: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    mode = timing + ("-cold" if cache == "cold" else "")
    return REPO / "results" / "local" / f"{op}-{mode}-{stamp}.json"


def cmd_list() -> int:
    for op in OPS:
        problem = spec_problem(op)
        if problem:
            print(f"{op}: {problem}")
            continue
        spec = load_spec(op)
        print(f"{op}: dtypes {', '.join(spec.DTYPES)} (default {spec.DTYPES[0]})")
        for s in spec.SHAPES:
            params = ", ".join(f"{k}={v}" for k, v in s.items() if k not in ("name", "role"))
            print(f"    {s['role']:<10} {s['name']:<18} {params}")
    return 0


def run(args, argv: list) -> int:
    import torch

    from checks import bench_timing
    from checks.engine import LoadError, load_exercise

    t_start = time.perf_counter()
    sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)
    ops = list(OPS) if args.op == "all" else [args.op]
    notes, plan = [], []
    for op in ops:
        problem = spec_problem(op)
        if problem is None:
            spec = load_spec(op)
            if args.dtype in (None, "all"):
                dtypes = list(spec.DTYPES[:1] if args.dtype is None else spec.DTYPES)
            elif args.dtype in spec.DTYPES:
                dtypes = [args.dtype]
            else:
                if args.op != "all":
                    raise UsageError(f"--dtype: {op} is benchmarked in {', '.join(spec.DTYPES)}, "
                                     f"not {args.dtype}")
                problem = f"not benchmarked in {args.dtype}"
        if problem is None:
            try:
                path = target_file(op, args)
            except KeyError:
                problem = "its workshop is not in the catalog yet"
        if problem is not None:
            notes.append(f"{op}: skipped, {problem}")
            print(f"{op}: skipped, {problem}")
            continue
        plan.append((op, spec, dtypes, Path(path)))
    if not plan:
        print("nothing to run")
        return EXIT_UNAVAILABLE

    output = args.output or default_output(args.op, args.timing, args.cache)
    target = "file" if args.file else ("solution" if args.solution else "learner")
    timer, method = bench_timing.make_timer(args.timing, args.cache, args.quick)
    env = bench_timing.environment()
    print(f"{env['gpu_name']} ({env['sm_count']} SMs), torch {env['torch']}, triton "
          f"{env['triton']}; timing {args.timing}, cache {args.cache}"
          f"{', quick' if args.quick else ''}; target {target}")
    print("measuring ceilings (1 GiB device copy, bf16 8192^3 matmul)...")
    ceilings = bench_timing.measure_ceilings(args.quick)
    print(f"  copy {_fmt(ceilings['copy_gbps'], '.0f')} GB/s; bf16 matmul "
          f"{_fmt(ceilings['bf16_matmul_tflops'], '.0f')} TFLOP/s"
          + (f"; errors: {ceilings['errors']}" if ceilings["errors"] else ""))

    all_rows, hashed = [], [Path(__file__), Path(bench_timing.__file__)]
    for op, spec, dtypes, path in plan:
        print(f"\n{op}: {rel_path(path)} ({', '.join(dtypes)}; shapes {args.shapes})")
        hashed += [path, Path(spec.__file__)]
        load_error, mod = None, None
        try:
            mod = load_exercise(path)
        except LoadError as e:
            load_error = str(e)
        rows = run_op(op, spec, mod, path, dtypes=dtypes, shapes=args.shapes, timer=timer,
                      ceilings=ceilings, device=DEVICE, sync=sync,
                      log=lambda s: print(s, flush=True), load_error=load_error)
        print_table(f"{op} ({args.timing} timing, {args.cache} L2)", rows)
        all_rows += rows

    default_dtypes = {op: spec.DTYPES[0] for op, spec, _, _ in plan}
    targets = evaluate_targets(all_rows, args.timing, default_dtypes) if args.solution else []
    payload = build_payload(
        command=["python", "-m", "checks.benchmark", *argv], timing=args.timing,
        cache=args.cache, target=target, environment=env, hashes=source_hashes(hashed),
        ceilings=ceilings, results=all_rows, targets=targets, method=method, quick=args.quick,
        commit=git_commit(), notes=notes)
    write_json_atomic(output, payload)
    print()
    print_targets(targets)
    counts = {s: sum(r["status"] == s for r in all_rows) for s in STATUSES}
    print(f"{counts['ok']} variants timed; {counts['failed']} failed; {counts['skipped']} TODO. "
          f"({time.perf_counter() - t_start:.0f} s)")
    print(f"results written to {output}")
    return exit_code(all_rows)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        validate(args)
        if args.list:
            return cmd_list()
        problem = cuda_problem()
        if problem:
            print(f"python -m checks.benchmark: {problem}")
            print("nothing was timed or written")
            return EXIT_UNAVAILABLE
        return run(args, argv)
    except UsageError as e:
        print(f"python -m checks.benchmark: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
