"""Timers, ceilings and the environment for ``python -m checks.benchmark`` (CUDA only).

Every timer takes a zero-argument callable and returns raw samples in milliseconds,
one per timed unit, as ``triton.testing`` measures them.  The modes:

* ``graph`` (warm): ``triton.testing.do_bench_cudagraph`` as it is.  It captures the
  callable ``n`` times into one CUDA graph and times ten replays; each sample is one
  replay divided by ``n``.  Host dispatch is gone, and torch allocations inside the
  callable are served from the graph's private pool, so they cost nothing.
* ``events`` + ``cache cold``: ``triton.testing.do_bench``'s steps (rebuilt, see
  below).  It zeroes a 256 MB buffer before every call, which flushes the L2 and
  hides host overhead behind that memset kernel.
* ``events`` + ``cache warm``: triton.testing has no ready mode for this, so
  :func:`events_warm` is ``do_bench`` rebuilt from its pieces without the flush: a
  pair of CUDA events around each of many back-to-back Python calls.  When the host
  cannot keep up (small shapes), the GPU idles between the events and that idle time
  is counted, so validation, allocation and launch cost show up in the per-call time.

* A callable with a ``prepared`` method (the runner's ``TimedCall``, which rotates
  input sets) has it called before each timed call's start event, so what it does
  (marking the next inputs as changed) stays out of the events' measurement.  Cold
  mode is therefore ``do_bench`` rebuilt too (:func:`events_timed`, same steps).

* ``both``: ``graph`` and ``events`` (warm) on the same variant, one after the other.
  Graph replay is the device time; events is the per-call time a Python caller sees;
  their difference is host overhead (argument checks, allocation, launch).

Nothing here is imported before the CLI has made sure a CUDA GPU is present.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from typing import Any

import torch
import triton
import triton.testing

# Repetition settings in milliseconds of measured time (triton.testing's units).
# MAX_SAMPLES bounds the warm event loop so a JSON file stays a few MB.
SETTINGS = {
    False: {"graph_rep": 20, "events_warmup": 25, "events_rep": 100},
    True: {"graph_rep": 8, "events_warmup": 10, "events_rep": 30},  # --quick
}
MAX_SAMPLES = 2000


def synchronize() -> None:
    torch.cuda.synchronize()


def events_warm(fn, warmup: float = 25, rep: float = 100, max_samples: int = MAX_SAMPLES) -> list:
    """``triton.testing.do_bench`` without its L2 flush (see the module docstring)."""
    return events_timed(fn, warmup, rep, max_samples, flush=False)


def events_timed(fn, warmup: float, rep: float, max_samples: int = MAX_SAMPLES, flush: bool = False) -> list:
    """``do_bench``'s steps: estimate, warm up, then CUDA events around each call; with
    ``flush`` the L2 is cleared before each call (``do_bench``'s own buffer and clear),
    and ``fn.prepared()``, when ``fn`` has it, runs before each start event."""
    from triton import runtime

    prepare = getattr(fn, "prepared", None) or (lambda: None)
    cache = runtime.driver.active.get_empty_cache_for_benchmark() if flush else None

    def clear():
        if cache is not None:
            runtime.driver.active.clear_cache(cache)

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        clear()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-4)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = min(max_samples, max(1, int(rep / estimate_ms)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        clear()
        prepare()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def make_timers(timing: str, cache: str, quick: bool) -> tuple:
    """({"graph": timer} and/or {"events": timer}, description).  Each timer returns raw
    samples in milliseconds; "graph" samples are device time, "events" per-call time."""
    s = SETTINGS[bool(quick)]
    timers, said = {}, []
    if timing in ("graph", "both"):
        rep = s["graph_rep"]

        def graph(fn):
            return list(triton.testing.do_bench_cudagraph(fn, rep=rep, return_mode="all"))

        timers["graph"] = graph
        said.append(f"triton.testing.do_bench_cudagraph(rep={rep}, return_mode='all'): warm, graph replay")
    if timing in ("events", "both"):
        w, r = s["events_warmup"], s["events_rep"]
        if cache == "cold":

            def events(fn):
                return events_timed(fn, w, r, max_samples=10**9, flush=True)

            said.append(
                f"events_timed(warmup={w}, rep={r}, flush=True): triton.testing.do_bench's "
                f"steps, CUDA events per call, L2 flushed before each call"
            )
        else:

            def events(fn):
                return events_warm(fn, warmup=w, rep=r)

            said.append(
                f"events_warm(warmup={w}, rep={r}): CUDA events around each "
                f"back-to-back Python call, no L2 flush (do_bench rebuilt without "
                f"clear_cache)"
            )
        timers["events"] = events
    return timers, "; then ".join(said)


def measure_ceilings(quick: bool = False) -> dict:
    """The card's ceilings, measured once per run:
    ``triton.testing.do_bench`` medians (L2 flushed before each call, which changes
    nothing at these sizes) of a device-to-device copy of 1 GiB (bytes read + written)
    and of a bf16 8192^3 matmul through torch (cuBLAS), on random data.

    Not the run's own timer: inside a CUDA graph a tensor copy becomes a memcpy node,
    which ran at about 2.7 TB/s on an H200 against 4.2 TB/s for the copy kernel, and
    back-to-back matmul replays ran at about 680 TFLOP/s against 790 with gaps between
    calls; a ceiling must not depend on --timing.  --quick takes fewer repetitions.
    A ceiling that cannot be measured is None, with the reason in ``errors``."""
    warmup, rep = (10, 40) if quick else (25, 200)
    out: dict[str, Any] = {
        "copy_gbps": None,
        "bf16_matmul_tflops": None,
        "copy_median_us": None,
        "matmul_median_us": None,
        "method": f"triton.testing.do_bench(warmup={warmup}, rep={rep}, return_mode='median')",
        "errors": [],
    }
    try:
        n = 1 << 30
        ms = _time_copy(n, warmup, rep)  # its 2 GiB are freed on return, before the matmul
        out["copy_median_us"] = ms * 1e3
        out["copy_gbps"] = 2 * n / (ms * 1e-3) / 1e9
    except Exception as e:  # noqa: BLE001 - a missing ceiling is reported, not fatal
        out["errors"].append(f"copy: {type(e).__name__}: {e}")
    try:
        n = 8192
        ms = _time_matmul(n, warmup, rep)
        out["matmul_median_us"] = ms * 1e3
        out["matmul_size"] = n
        out["bf16_matmul_tflops"] = 2 * n**3 / (ms * 1e-3) / 1e12
    except Exception as e:  # noqa: BLE001
        out["errors"].append(f"matmul: {type(e).__name__}: {e}")
    torch.cuda.empty_cache()
    return out


def _time_copy(n: int, warmup: int, rep: int) -> float:
    """Median ms of a device-to-device copy of ``n`` random bytes."""
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    dst.copy_(src)
    torch.cuda.synchronize()
    return triton.testing.do_bench(lambda: dst.copy_(src), warmup=warmup, rep=rep, return_mode="median")


def _time_matmul(n: int, warmup: int, rep: int) -> float:
    """Median ms of a bf16 ``n``x``n``x``n`` matmul through torch, on random data."""
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    return triton.testing.do_bench(
        lambda: torch.matmul(a, b, out=c), warmup=warmup, rep=rep, return_mode="median"
    )


def _driver() -> str:
    try:
        r = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


def environment() -> dict:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "gpu_name": props.name,
        "sm_count": int(props.multi_processor_count),
        "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0) or None,
        "driver": _driver() or None,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "executable": sys.executable,
    }
