"""Timings for the app: run ``python -m checks.benchmark`` in a subprocess, read its rows.

The app never imports torch or triton, so the benchmark always runs in a child
process (``--timing both`` by default: device time and per-call time).  It streams
each row as soon as it is measured (``--stream-rows``: one JSON line per row), which
:class:`BenchmarkRun` hands to its ``on_row`` callback, and writes every row in its
payload's ``results`` at the end.  A row is ``checks.benchmark.rows.BenchRow``; rows
of older files lack its later fields, and their cells say so (``checks.benchmark.row_text``
formats every cell, the command's table and results/SUMMARY.md alike).

Committed reference results are shown beside the learner's own rows, labelled
"reference": the newest run (by the time it records) in ``results/reference/`` or
``results/`` whose rows include the op (a file may hold every op, as ``--op all``
writes).  A value that is missing is shown as unavailable, never as zero.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable, Optional

from checks.benchmark import row_text
from checks.benchmark.rows import ROW_LINE_TYPE
from checks.benchmark.statistics import add_speedups
from checks.interpreter import interpreter_env
from checks.running import DISCOVERY_LINE, RECORD_VARIANTS, benchmark_variants_file

REPO = Path(__file__).resolve().parent.parent
REFERENCE_DIRS = (REPO / "results" / "reference", REPO / "results")
BENCH_MODULE = "checks.benchmark"
# What the app times after a pass: the comparison shapes in the first dtype, the learner's
# wrapper with its defaults beside PyTorch's rows, with the quick settings, each measurement
# stopped after APP_CAP_S seconds if its interval is not narrow enough by then (so the last
# row comes within about 3 s of the pass on an H200); every shape, dtype and option of the
# sweep, sampled as long as the command's defaults, only when asked (EVERYTHING).
COMPARISON, EVERYTHING = "comparison", "all"
APP_CAP_S = 0.15
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


def read_row_line(line: str) -> Optional[dict]:
    """The row of one ``--stream-rows`` line, or None for any other line."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if (
        isinstance(message, dict)
        and message.get("type") == ROW_LINE_TYPE
        and isinstance(message.get("row"), dict)
    ):
        return message["row"]
    return None


class _Output:
    """The last characters of a run's text output, from the threads that read it."""

    def __init__(self, limit: int = 8000) -> None:
        self.parts: collections.deque = collections.deque()
        self.size, self.limit = 0, limit
        self.lock = threading.Lock()

    def add(self, text: str) -> None:
        with self.lock:
            self.parts.append(text)
            self.size += len(text)
            while self.size > self.limit and len(self.parts) > 1:
                self.size -= len(self.parts.popleft())

    def tail(self, limit: int = 2000) -> str:
        with self.lock:
            return "".join(self.parts)[-limit:]


class BenchmarkRun:
    """One ``python -m checks.benchmark --op ID --output TMP --stream-rows`` run; cancellable.

    ``on_row(row)`` is called with each row as soon as the benchmark has measured it (from
    the thread that reads the benchmark's output; never after a cancel).  With ``worker``
    (a warm ``checks.running.child.Worker``: torch and triton imported, CUDA started) it
    runs in that process, so the timings do not wait for a new process's imports, and the
    rows come through a file it follows; without one, in a new child process, the rows
    on its stdout.  In the worker it also keeps the kernel variants the benchmark compiled
    (``variants/<op>-benchmark.json`` in the state folder), which the next save's compile
    pool compiles while the checks run."""

    def __init__(
        self,
        op: str,
        workspace: Path,
        file: Optional[Path] = None,
        timeout: float = 900.0,
        worker: Any = None,
        on_row: Optional[Callable[[dict], None]] = None,
        shapes: str = COMPARISON,
    ) -> None:
        if shapes not in (COMPARISON, EVERYTHING):
            raise ValueError(f"shapes: {shapes!r} is not {COMPARISON!r} or {EVERYTHING!r}")
        self.op, self.workspace, self.file, self.timeout = op, Path(workspace), file, timeout
        self.shapes = shapes
        self.worker = worker
        self.on_row = on_row
        self.proc: Optional[subprocess.Popen] = None
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()
        if self.worker is not None:
            self.worker.kill()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def _deliver(self, row: dict, output: _Output) -> None:
        if self.on_row is None or self._cancelled.is_set():
            return
        try:
            self.on_row(row)
        except Exception as e:  # noqa: BLE001 - the reader must keep draining the pipe
            output.add(f"showing a row failed: {type(e).__name__}: {e}\n")

    def _read_stdout(self, stream: IO[bytes], output: _Output) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            row = read_row_line(line)
            if row is None:
                output.add(line)
            else:
                self._deliver(row, output)

    def _follow(self, path: str, stop: threading.Event, output: _Output) -> None:
        """Deliver the rows appended to ``path`` until ``stop`` is set and all are read."""
        pending = b""
        with open(path, "rb") as f:
            while True:
                done = stop.is_set()  # read once more after the writer has finished
                pending += f.read()
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    row = read_row_line(line.decode("utf-8", "replace"))
                    if row is not None:
                        self._deliver(row, output)
                if done:
                    return
                time.sleep(0.05)

    def _in_worker(self, out: str) -> tuple:
        """(exit code, output tail) of the benchmark run in the warm worker."""
        from checks.running import run_benchmark

        fd, rows_file = tempfile.mkstemp(prefix=f"bench-{self.op}-", suffix=".jsonl")
        os.close(fd)
        stop, output = threading.Event(), _Output()
        follower = threading.Thread(target=self._follow, args=(rows_file, stop, output), daemon=True)
        follower.start()
        try:
            argv = self.command(out, rows_file)[3:]  # without "python -m checks.benchmark"
            # the worker keeps the variants it compiles: the next save compiles them ahead
            argv.append(f"{RECORD_VARIANTS}={benchmark_variants_file(self.workspace, self.op)}")
            code, tail = run_benchmark(self.worker, argv, self.timeout, self._cancelled.is_set)
        finally:
            stop.set()
            follower.join(timeout=10)
            try:
                os.unlink(rows_file)
            except OSError:
                pass
        return (code if code is not None else -1), (output.tail() + tail)[-3000:]

    def command(self, output: str, rows_to: str = "-") -> list:
        """The benchmark's command line; its rows stream to stdout ("-") or to ``rows_to``."""
        cmd = [sys.executable, "-m", BENCH_MODULE, "--op", self.op, "--output", output]
        cmd.append("--stream-rows" if rows_to == "-" else f"--stream-rows={rows_to}")
        if self.shapes == COMPARISON:  # shorter warm-ups and rounds (--quick), each row capped
            cmd += ["--shapes", COMPARISON, "--variants", "defaults", "--quick", f"--cap-s={APP_CAP_S:g}"]
        else:
            cmd += ["--shapes", EVERYTHING, "--dtype", "all"]
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
        env = interpreter_env(
            False, dict(os.environ, KERNEL_COURSE_WORKSPACE=str(self.workspace), PYTHONUNBUFFERED="1")
        )
        try:
            if self.worker is not None and self.file is not None:
                code, tail = self._in_worker(out)
                return self._result(out, code, tail)
            return self._in_child(out, env)
        except OSError as e:
            return [], f"benchmarks unavailable ({e})", ""
        finally:
            try:
                os.unlink(out)
            except OSError:
                pass

    def _in_child(self, out: str, env: dict) -> tuple:
        """Run the benchmark in a new process, its rows read from its stdout as they come."""
        self.proc = proc = subprocess.Popen(
            self.command(out),
            cwd=str(REPO),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if self._cancelled.is_set():
            proc.kill()
        assert proc.stdout is not None and proc.stderr is not None  # both are pipes
        output = _Output()
        readers = [
            threading.Thread(target=self._read_stdout, args=(proc.stdout, output), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, output), daemon=True),
        ]
        for r in readers:
            r.start()
        try:
            proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            for r in readers:
                r.join(timeout=10)
            return [], f"benchmark timed out after {self.timeout:g} s", output.tail()
        for r in readers:  # every row is delivered before the result
            r.join(timeout=10)
        return self._result(out, proc.returncode, output.tail())

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
        said = (
            l for l in reversed(tail.strip().splitlines()) if l.strip() and not l.startswith(DISCOVERY_LINE)
        )
        last = next(said, "")  # the benchmark's own last word, not the worker's note on its variants
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


def read_performance(op: str, file: Path, timeout: float = 600) -> tuple:
    """(the performance reading's payload or None, an error or ""): ``python -m
    checks.performance`` on ``file`` in a child running Triton's interpreter (no GPU)."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "reading.json"
        try:
            done = subprocess.run(
                [sys.executable, "-m", "checks.performance", op, "--file", str(file), "--json", str(out)],
                capture_output=True,
                text=True,
                env=interpreter_env(True),
                timeout=timeout,
                cwd=REPO,
            )
        except subprocess.TimeoutExpired:
            return None, f"the performance reading took over {timeout:.0f} s"
        try:
            return json.loads(out.read_text(encoding="utf-8")), ""
        except (OSError, ValueError):
            said = (done.stdout + done.stderr).strip().splitlines()
            return None, said[-1] if said else "the performance reading failed"


def _drain(stream: IO[bytes], output: _Output) -> None:
    for raw in iter(stream.readline, b""):
        output.add(raw.decode("utf-8", "replace"))


def with_row(rows: list, row: dict) -> list:
    """``rows`` and one more streamed row, speedups filled in where a baseline has
    arrived (the final rows bring them all); copies, the rows given are unchanged."""
    out = [dict(r) for r in rows] + [dict(row)]
    try:
        return add_speedups(out)
    except (KeyError, TypeError):  # a row without the fields a speedup needs
        return [dict(r) for r in rows] + [dict(row)]


# --- cells: checks.benchmark.row_text's, with the app's mark for a missing value ---


def fmt_us(v: Any) -> str:
    return row_text.num(v, missing=MISSING)


def fmt_median(row: dict) -> str:
    """The median (and its interval), or why there is none (a failed row is not timed)."""
    return row_text.median_or_status(row, MISSING)


def fmt_spread(row: dict) -> str:
    return row_text.spread(row, MISSING)


def fmt_speedup(v: Any) -> str:
    return row_text.speedup({"speedup": v}, MISSING)


def fmt_rate(row: dict) -> str:
    return row_text.throughput(row, MISSING)


def fmt_fraction(v: Any) -> str:
    return row_text.fraction({"fraction_of_ceiling": v}, MISSING)


def fmt_host(row: dict) -> str:
    return row_text.host(row, MISSING)


def fmt_per_call(row: dict) -> str:
    return row_text.per_call(row, MISSING)


def fmt_kernel(row: dict) -> str:
    return row_text.kernel(row, MISSING)


def median(row: dict) -> Optional[float]:
    return row_text.number(row.get("median_us"))


def ceiling_time(row: dict) -> Optional[float]:
    """The roofline floor in µs: the row's own, or median x fraction of the ceiling."""
    c = row_text.number(row.get("ceiling_us"))
    if c is not None:
        return c
    m, f = median(row), row_text.number(row.get("fraction_of_ceiling"))
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
