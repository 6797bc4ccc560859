"""Timings for the app: run ``python -m checks.benchmark`` in a subprocess, read its JSON.

The app never imports torch or triton, so the benchmark always runs in a child
process (``--timing both`` by default: device time and per-call time).  Its payload
holds rows in ``payload["results"]``, each shaped like::

    {"op", "shape", "dtype", "variant", "role", "median_us", "p20_us", "p80_us",
     "speedup", "gbps", "tflops", "fraction_of_ceiling", "status",
     "device_us", "per_call_us", "host_us", "launch_bound", "ceiling_us", "kernels"}

(the last six only from a benchmark that measures them; older files lack them).

Committed reference results are shown beside the learner's own rows, labelled
"reference": the newest run (by the time it records) in ``results/reference/`` or
``results/`` whose rows include the op (a file may hold every op, as ``--op all``
writes).  A value that is missing is shown as unavailable, never as zero.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Optional

from checks.benchmark.statistics import fmt_throughput

REPO = Path(__file__).resolve().parent.parent
REFERENCE_DIRS = (REPO / "results" / "reference", REPO / "results")
BENCH_MODULE = "checks.benchmark"
MISSING = "—"


def available() -> bool:
    """Whether the engine provides ``python -m checks.benchmark`` (it is optional)."""
    try:
        return importlib.util.find_spec(BENCH_MODULE) is not None
    except (ImportError, ValueError):
        return False


def rows_of(payload) -> list:
    """The result rows of a benchmark payload; anything malformed is dropped."""
    if not isinstance(payload, dict):
        return []
    rows = payload.get("results")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def recorded_at(payload, path: Path) -> tuple:
    """When a results file was recorded, for ordering: its ``created`` time, else the
    date its name starts with; the name breaks ties."""
    import datetime as dt
    import re

    created = payload.get("created") if isinstance(payload, dict) else None
    when = None
    if isinstance(created, str):
        try:
            when = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
        except ValueError:
            when = None
    if when is None:
        m = re.search(r"\d{4}-\d{2}-\d{2}", path.name)
        when = dt.datetime.fromisoformat(m.group(0)) if m else dt.datetime.min
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return (when, path.name)


def load_reference(op: str, folders=None) -> tuple:
    """(rows, source file or None): the newest run with rows for ``op`` -- newest by
    the time it records (``created``), not by its name -- looking in ``folders`` in
    order (default results/reference/, then results/).  Evidence is append-only, so
    several files may exist; two of one day are told apart by their times."""
    folders = (
        REFERENCE_DIRS if folders is None else ([folders] if isinstance(folders, (str, Path)) else folders)
    )
    for folder in map(Path, folders):
        if not folder.is_dir():
            continue
        found = []
        for path in (p for p in folder.glob("*.json") if p.is_file()):
            try:
                payload = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, UnicodeDecodeError):
                continue
            rows = [r for r in rows_of(payload) if r.get("op", op) == op]
            if rows:
                found.append((recorded_at(payload, path), rows, path))
        if found:
            _, rows, path = max(found, key=lambda f: f[0])
            return rows, path
    return [], None


class BenchmarkRun:
    """One ``python -m checks.benchmark --op ID --output TMP`` run; cancellable.

    With ``worker`` (a warm ``checks.running.child.Worker``: torch and triton imported, CUDA
    started) it runs in that process, so the timings do not wait for a new process's
    imports; without one, in a new child process."""

    def __init__(
        self, op: str, workspace: Path, file: Optional[Path] = None, timeout: float = 900.0, worker=None
    ):
        self.op, self.workspace, self.file, self.timeout = op, Path(workspace), file, timeout
        self.worker = worker
        self.proc: Optional[subprocess.Popen] = None
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()
        if self.worker is not None:
            self.worker.kill()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def _in_worker(self, out: str) -> tuple:
        """(exit code, output tail) of the benchmark run in the warm worker."""
        from checks.running import run_benchmark

        argv = self.command(out)[3:]  # without "python -m checks.benchmark"
        code, tail = run_benchmark(self.worker, argv, self.timeout, self._cancelled.is_set)
        return (code if code is not None else -1), tail

    def command(self, output: str) -> list:
        cmd = [sys.executable, "-m", BENCH_MODULE, "--op", self.op, "--output", output]
        if self.file is not None:
            cmd += ["--file", str(self.file)]
        return cmd

    def run(self) -> tuple:
        """(rows, error, output tail).  Blocking: call it from a thread worker.  Rows
        come back even when the exit code is not 0 (a failed variant is still a row)."""
        if not available():
            return [], "benchmarks unavailable (this engine has no checks.benchmark)", ""
        fd, out = tempfile.mkstemp(prefix=f"bench-{self.op}-", suffix=".json")
        os.close(fd)
        os.unlink(out)  # the benchmark writes it; an absent file means it wrote nothing
        # Without --file the benchmark times YOUR file, found through the workspace.
        env = dict(os.environ, KERNEL_COURSE_WORKSPACE=str(self.workspace), PYTHONUNBUFFERED="1")
        env.pop("TRITON_INTERPRET", None)
        try:
            if self.worker is not None and self.file is not None:
                code, tail = self._in_worker(out)
                return self._result(out, code, tail)
            self.proc = subprocess.Popen(
                self.command(out),
                cwd=str(REPO),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            if self._cancelled.is_set():
                self.proc.kill()
            try:
                text, _ = self.proc.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                text, _ = self.proc.communicate()
                return [], f"benchmark timed out after {self.timeout:g} s", _tail(text)
            return self._result(out, self.proc.returncode, _tail(text))
        except OSError as e:
            return [], f"benchmarks unavailable ({e})", ""
        finally:
            try:
                os.unlink(out)
            except OSError:
                pass

    def _result(self, out: str, code: int, tail: str) -> tuple:
        if self._cancelled.is_set():
            return [], "cancelled", tail
        rows, problem = [], ""
        try:
            rows = rows_of(json.loads(Path(out).read_text(encoding="utf-8")))
        except FileNotFoundError:
            problem = "it wrote no JSON"
        except (OSError, ValueError) as e:
            problem = f"its JSON is unreadable ({e})"
        if code == 0 and rows:
            return rows, "", tail
        why = EXIT_MEANING.get(code, "it stopped before it finished" if code == -1 else f"exit code {code}")
        last = next((l for l in reversed(tail.strip().splitlines()) if l.strip()), "")
        error = (
            f"benchmark: {why}"
            + (f"; {problem}" if problem else "")
            + (f" -- {last.strip()[:160]}" if last and code != 0 else "")
        )
        if code == 0 and not rows:
            error = "benchmark produced no results"
        return rows, error, tail


EXIT_MEANING = {
    1: "a variant failed (wrong result, crash or load error)",
    2: "a variant is still TODO",
    3: "unavailable here (no CUDA GPU?)",
    64: "usage error (this engine's benchmark has a different command line)",
}


def _tail(data: bytes, limit: int = 2000) -> str:
    return (data or b"").decode("utf-8", "replace")[-limit:]


# --- formatting: numbers or an explicit "unavailable", never a made-up zero ---


def _num(v) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if v != v:  # NaN
        return None
    return float(v)


def fmt_us(v) -> str:
    x = _num(v)
    return MISSING if x is None else f"{x:,.1f}"


def fmt_median(row: dict) -> str:
    """The median, or why there is none (a variant that failed is not timed)."""
    status = row.get("status", "ok")
    if status not in (None, "ok") and _num(row.get("median_us")) is None:
        return str(status)
    return fmt_us(row.get("median_us"))


def fmt_spread(row: dict) -> str:
    lo, hi = _num(row.get("p20_us")), _num(row.get("p80_us"))
    if lo is None or hi is None:
        return MISSING
    return f"{lo:,.1f}/{hi:,.1f}"


def fmt_speedup(v) -> str:
    x = _num(v)
    return MISSING if x is None else f"{x:.2f}x"


def fmt_rate(row: dict) -> str:
    """The achieved throughput, formatted as the benchmark's own tables do."""
    return fmt_throughput(row, MISSING)


def fmt_fraction(v) -> str:
    x = _num(v)
    return MISSING if x is None else f"{x:.0%}"


def median(row: dict) -> Optional[float]:
    return _num(row.get("median_us"))


def fmt_host(row: dict) -> str:
    """Host overhead (per-call minus device time), marked when it is most of the call."""
    x = _num(row.get("host_us"))
    if x is None:
        return MISSING
    return f"{x:,.1f}" + (" launch-bound" if row.get("launch_bound") is True else "")


def fmt_per_call(row: dict) -> str:
    return fmt_us(row.get("per_call_us")) if _num(row.get("device_us")) is not None else MISSING


def fmt_kernel(row: dict) -> str:
    """The first Triton kernel's registers, spills, warps, stages and shared memory:
    "40r 0sp 4w 3st 2K" (+N more kernels); "no triton" when the call launched none."""
    ks = row.get("kernels")
    if not isinstance(ks, list):
        return MISSING
    if not ks:
        return "no triton"
    k = ks[0] if isinstance(ks[0], dict) else {}
    bits = [
        f"{k[key]}{unit}"
        for key, unit in (("n_regs", "r"), ("n_spills", "sp"), ("num_warps", "w"), ("num_stages", "st"))
        if _num(k.get(key)) is not None
    ]
    if _num(k.get("shared_bytes")) is not None:
        bits.append(f"{k['shared_bytes'] / 1024:.0f}K")
    return (" ".join(bits) or str(k.get("name", "kernel"))) + (f" +{len(ks) - 1}" if len(ks) > 1 else "")


def ceiling_time(row: dict) -> Optional[float]:
    """The roofline floor in µs: the row's own, or median x fraction of the ceiling."""
    c = _num(row.get("ceiling_us"))
    if c is not None:
        return c
    m, f = median(row), _num(row.get("fraction_of_ceiling"))
    return m * f if (m is not None and f is not None) else None


def _same_case(a: dict, b: dict) -> bool:
    return a.get("shape") == b.get("shape") and a.get("dtype") == b.get("dtype")


def markers(row: dict, rows: list, reference: list) -> dict:
    """What a row's bar is drawn against, in µs (a missing one is left out): the
    reference answer's time for the same variant (else its best candidate) at this shape
    and dtype, the PyTorch baseline's time among ``rows``, and the roofline floor."""
    out = {}
    same = [r for r in reference if _same_case(r, row) and median(r) is not None]
    ref = [r for r in same if r.get("variant") == row.get("variant")] or [
        r for r in same if r.get("role") in (None, "candidate")
    ]
    if ref:
        out["reference"] = min(t for r in ref if (t := median(r)) is not None)
    base = [
        t for r in rows if _same_case(r, row) and r.get("role") == "baseline" and (t := median(r)) is not None
    ]
    if base and row.get("role") != "baseline":
        out["baseline"] = min(base)
    c = ceiling_time(row)
    if c is not None:
        out["ceiling"] = c
    return out
