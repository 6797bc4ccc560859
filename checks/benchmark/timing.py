"""Timers, ceilings and the environment for ``python -m checks.benchmark`` (CUDA only).

Every timer is a :class:`~checks.benchmark.statistics.RoundTimer`: set up once per
timed callable (warm-up, capture), then rounds of samples, in milliseconds, until the
median's 95 % interval is within the timer's relative target or its time cap is spent.
The modes:

* ``graph`` (warm): ``triton.testing.do_bench_cudagraph``'s steps (:func:`graph_sampler`).
  The callable is captured ``n`` times into one CUDA graph (once); each sample is one
  replay divided by ``n``, a round ten replays.  Host dispatch is gone, and torch
  allocations inside the callable are served from the graph's private pool.
* ``events`` + ``cache warm`` (:func:`loop_sampler`): the per-call time a Python caller
  sees.  One pair of CUDA events around a loop of back-to-back calls, divided by the
  count (a pair around every call cost about 20 us of its own per call on an H200).
  What happens between calls (the rotation of input sets, see timed_calls.TimedCall) is
  inside the loop; the runner measures it on an empty candidate and takes it off.  When
  the host cannot keep up (small shapes), the GPU idles inside the loop and that time
  counts, so validation, allocation and launch cost show up in the per-call time.
* ``events`` + ``cache cold``: ``triton.testing.do_bench``'s steps (:func:`events_timed`):
  CUDA events around each call, a 256 MB buffer zeroed before each one (which flushes
  the L2 and hides host overhead behind that memset kernel); ``fn.prepared()`` (the
  rotation) runs before each start event.  A round is one such run.
* ``both``: ``graph`` and ``events`` (warm) on the same variant, one after the other.
  Graph replay is the device time; events is the per-call time a Python caller sees;
  their difference is host overhead (argument checks, allocation, launch).

Nothing here is imported before the CLI has made sure a CUDA GPU is present.
"""

from __future__ import annotations

import gc
import os
import platform
import subprocess
import sys
from typing import Any, Callable, Optional

import torch
import triton
import triton.testing

from checks.benchmark.statistics import RoundTimer

# Per measurement: replay length and replays per round of the graph timer; warm-up,
# loop length and loops per round of the loop timer, in ms of measured time (triton.testing's
# units); the loop timer's shortest span and the seconds one measurement may take; the relative half
# width of the median's 95 % interval to reach.  MAX_SAMPLES bounds a row's samples so
# a JSON file stays a few MB.
SETTINGS = {
    False: {
        "graph_rep": 20,
        "graph_replays": 10,
        "events_warmup": 25,
        "events_rep": 100,
        "loop_ms": 2,
        "loops": 5,
        "min_span_s": 0.5,
        "cap_s": 2.0,
    },
    True: {  # --quick
        "graph_rep": 4,
        "graph_replays": 10,
        "events_warmup": 10,
        "events_rep": 30,
        "loop_ms": 1,
        "loops": 4,
        "min_span_s": 0.06,
        "cap_s": 0.5,
    },
}
# The relative half width of the median's 95 % interval each measurement samples until.
# Per-call time is Python's launch path and drifts by a few per cent from second to second,
# so a quick run (the app's view after a pass) stops per-call sampling at 5 %, not 2 %.
# The host also has episodes of tens of milliseconds at up to twice the cost per call (seen
# on both cards: one round of loops 38 us per call, the next 56): a per-call measurement
# is judged by its rounds' medians and samples short rounds for "min_span_s" at least, so it
# spans several episodes instead of converging inside one (A/A disagreement p90 was 27-41 %
# when the loops of one round counted as independent samples; 1.5 % on an H100 this way).
TARGETS = {"graph": 0.01, "events": 0.02}
QUICK_TARGETS = {"graph": 0.01, "events": 0.05}
MAX_SAMPLES = 2000
MAX_LOOP_CALLS = 10_000


def synchronize() -> None:
    torch.cuda.synchronize()


def _event() -> Any:
    return torch.cuda.Event(enable_timing=True)


def _estimate_ms(fn: Callable, calls: int = 5) -> float:
    """Milliseconds per call of ``calls`` back-to-back calls (never 0)."""
    start, end = _event(), _event()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return max(start.elapsed_time(end) / calls, 1e-4)


def graph_sampler(fn: Callable, rep: float = 20, replays: int = 10) -> Callable[[], list]:
    """``do_bench_cudagraph``'s steps, captured once: warm up and estimate on a side
    stream, capture ``n = rep / estimate`` calls into one graph; each round replays it
    ``replays`` times, each sample one replay / n."""
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        fn()
        n = max(1, int(rep / _estimate_ms(fn)))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(n):
                fn()
        torch.cuda.synchronize()

    def next_round() -> list:
        pairs = [(_event(), _event()) for _ in range(replays)]
        with torch.cuda.stream(stream):
            for start, end in pairs:
                start.record()
                graph.replay()
                end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / n for start, end in pairs]

    return next_round


def loop_sampler(
    fn: Callable, warmup: float = 25, loop_ms: float = 2, loops: int = 20, max_calls: int = MAX_LOOP_CALLS
) -> Callable[[], list]:
    """Per-call time of back-to-back calls: warm up for ``warmup`` ms, then each round
    times ``loops`` loops of ``n`` calls (n so a loop lasts about ``loop_ms``), each
    between one pair of CUDA events; each sample is one loop / n."""
    fn()
    torch.cuda.synchronize()
    estimate = _estimate_ms(fn)
    for _ in range(min(max(1, int(warmup / estimate)), 10 * max_calls)):
        fn()
    n = min(max_calls, max(1, int(loop_ms / estimate)))
    calls = range(n)

    def next_round() -> list:
        pairs = [(_event(), _event()) for _ in range(loops)]
        collecting = gc.isenabled()
        gc.disable()  # as timeit does: a collection inside a loop is not the call's cost
        try:
            for start, end in pairs:
                start.record()
                for _ in calls:
                    fn()
                end.record()
        finally:
            if collecting:
                gc.enable()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / n for start, end in pairs]

    return next_round


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
    start, end = _event(), _event()
    start.record()
    for _ in range(5):
        clear()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-4)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = min(max_samples, max(1, int(rep / estimate_ms)))
    starts = [_event() for _ in range(n_repeat)]
    ends = [_event() for _ in range(n_repeat)]
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


def make_timers(timing: str, cache: str, quick: bool, cap_s: Optional[float] = None) -> tuple:
    """({"graph": RoundTimer} and/or {"events": RoundTimer}, description).  Samples are
    in milliseconds; "graph" samples are device time, "events" per-call time.  ``cap_s``:
    the seconds one measurement may take (default the settings')."""
    s = SETTINGS[bool(quick)]
    cap = s["cap_s"] if cap_s is None else float(cap_s)
    goal = QUICK_TARGETS if quick else TARGETS
    timers, said = {}, []
    if timing in ("graph", "both"):
        rep, replays = s["graph_rep"], int(s["graph_replays"])

        def graph(fn: Callable) -> Callable[[], list]:
            return graph_sampler(fn, rep, replays)

        timers["graph"] = RoundTimer(graph, goal["graph"], cap, max_samples=MAX_SAMPLES)
        said.append(
            f"graph_sampler(rep={rep}, replays={replays}): do_bench_cudagraph's steps, captured "
            f"once, rounds of replays; warm"
        )
    if timing in ("events", "both"):
        w, r = s["events_warmup"], s["events_rep"]
        if cache == "cold":

            def cold(fn: Callable) -> Callable[[], list]:
                return lambda: events_timed(fn, w, r, max_samples=10**9, flush=True)

            timers["events"] = RoundTimer(cold, goal["events"], cap, max_samples=MAX_SAMPLES)
            said.append(
                f"events_timed(warmup={w}, rep={r}, flush=True): triton.testing.do_bench's "
                f"steps, CUDA events per call, L2 flushed before each call"
            )
        else:
            loop_ms, loops, span = s["loop_ms"], int(s["loops"]), float(s["min_span_s"])

            def warm(fn: Callable) -> Callable[[], list]:
                return loop_sampler(fn, w, loop_ms, loops)

            timers["events"] = RoundTimer(
                warm,
                goal["events"],
                cap,
                harness=True,
                max_samples=MAX_SAMPLES,
                by_round=True,
                min_span_s=span,
            )
            said.append(
                f"loop_sampler(warmup={w}, loop_ms={loop_ms}, loops={loops}): one pair of CUDA "
                f"events around a loop of back-to-back Python calls, no L2 flush; the loop's own "
                f"cost per call (an empty candidate's) taken off; rounds for {span:g} s at least, "
                f"the interval over the rounds' medians"
            )
    targets = ", ".join(f"{k} {goal[k]:.0%}" for k in timers)
    said.append(
        f"each sampled in rounds until the median's 95% interval is within +-({targets}) "
        f"or {cap:g} s per measurement"
    )
    return timers, "; then ".join(said[:-1]) + "; " + said[-1]


def measure_ceilings(quick: bool = False) -> dict:
    """The card's ceilings (measured once per card: ceilings.py keeps them):
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


def _uuid(props: Any) -> "str | None":
    uuid = getattr(props, "uuid", None)
    return str(uuid) if uuid is not None else None


def _pci_bus_id(props: Any) -> "str | None":
    """domain:bus:device as nvidia-smi writes it, when torch exposes them."""
    parts = [getattr(props, f"pci_{k}_id", None) for k in ("domain", "bus", "device")]
    if any(not isinstance(p, int) for p in parts):
        return None
    return f"{parts[0]:08X}:{parts[1]:02X}:{parts[2]:02X}.0"


def l2_bytes(props=None) -> Optional[int]:
    """The current CUDA device's L2 size in bytes (None where torch does not say)."""
    props = props or torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or 0) or None


def environment() -> dict:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "gpu_name": props.name,
        "gpu_uuid": _uuid(props),
        "pci_bus_id": _pci_bus_id(props),
        "sm_count": int(props.multi_processor_count),
        "l2_bytes": l2_bytes(props),
        "driver": _driver() or None,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "executable": sys.executable,
    }
