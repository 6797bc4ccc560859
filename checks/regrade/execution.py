"""One submission's run, on whichever machine the Dask worker is: the single-run path in a
process of its own, so a regrade gives exactly the verdict a single run gives::

    python -m checks <workshop> --file <copy> --json <records> --seed N --timeout T

The learner's file is copied into a fresh temporary workspace (its state folder lies beside
it, inside the same temporary folder, removed afterwards); the check process starts a
session of its own (a kill of its group, or of anything it started, stays there); its
output is read as it comes and only its first and last bytes are kept; on a CPU worker an
address-space limit (``resource.setrlimit``, set in the child before Python starts) turns
a runaway allocation into a ``MemoryError``.  The check process applies the time limit
to the learner's code itself (``--timeout``: a hang ends with the line it was stuck at);
this module stops the whole process tree if even that does not end in time.

Not a sandbox: the learner's code runs as the user running the worker, with their files
and network (the README says how to isolate it).

Standard library only (psutil, when importable, finds the processes to stop).
"""

from __future__ import annotations

import collections
import importlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

from checks.judging.records import plural
from checks.regrade import verdicts
from checks.running import processes

REPO = Path(__file__).resolve().parents[2]
HEAD_BYTES, TAIL_BYTES = 8 * 1024, 56 * 1024
GRACE_S = 30.0  # past the checks' own --timeout: starting Python and writing the records
BENCH_LIMIT_S = 600.0
# Sets the address-space limit, then becomes the check process (exec: no Python code runs
# between fork and exec in the worker, whose threads make preexec_fn unsafe).
# A hard limit already lower than asked for is kept (only root may raise it).
LIMITED_EXEC = (
    "import os, resource, sys\n"
    "n = int(sys.argv[1])\n"
    "hard = resource.getrlimit(resource.RLIMIT_AS)[1]\n"
    "n = n if hard == resource.RLIM_INFINITY else min(n, hard)\n"
    "resource.setrlimit(resource.RLIMIT_AS, (n, n))\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)

_running: set = set()  # the check processes this worker has running now (stop_all)
_running_lock = threading.Lock()


class CappedOutput:
    """Drain a pipe as it fills (a flood must not block the child on a full pipe) and
    keep its first HEAD_BYTES and last TAIL_BYTES; count the rest."""

    def __init__(self, stream) -> None:
        self.head = bytearray()
        self.tail: collections.deque = collections.deque()
        self.tail_size = 0
        self.total = 0
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            self.total += len(chunk)
            if len(self.head) < HEAD_BYTES:
                room = HEAD_BYTES - len(self.head)
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail.append(chunk)
                self.tail_size += len(chunk)
                while self.tail_size - len(self.tail[0]) >= TAIL_BYTES:
                    self.tail_size -= len(self.tail.popleft())

    def text(self) -> str:
        self.thread.join(timeout=2)
        tail = b"".join(self.tail)[-TAIL_BYTES:]
        cut = self.total - len(self.head) - len(tail)
        middle = f"\n[... {plural(cut, 'byte')} of output left out ...]\n".encode() if cut > 0 else b""
        return (bytes(self.head) + middle + tail).decode("utf-8", "replace")


def _descendants(pid: int) -> list:
    """Every process ``pid`` started, in whatever group (psutil comes with Dask)."""
    try:
        psutil = importlib.import_module("psutil")
    except ImportError:
        return []
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def stop_tree(proc: subprocess.Popen) -> None:
    """Kill the check process, its session's group, and every process it started in
    groups of their own (the check worker that runs the learner's code)."""
    rest = _descendants(proc.pid)
    processes.kill_group(proc)
    for p in rest:
        try:
            p.kill()
        except Exception:  # noqa: BLE001 - already gone, or not ours to kill
            pass


def stop_all() -> int:
    """Stop every check process this worker is running (an interrupted regrade)."""
    with _running_lock:
        running = list(_running)
    for proc in running:
        stop_tree(proc)
    return len(running)


def run_limited(cmd: list, *, env: dict, limit_s: float, memory_bytes: int = 0) -> dict:
    """Run ``cmd`` from the repository root in a session of its own, output captured with
    a cap, stopped (with everything it started) after ``limit_s``."""
    if memory_bytes and os.name == "posix":
        cmd = [sys.executable, "-c", LIMITED_EXEC, str(memory_bytes), *cmd]
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=str(REPO),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **processes.own_group(),
    )
    with _running_lock:
        _running.add(proc)
    out = CappedOutput(proc.stdout)
    timed_out = False
    try:
        proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # the checks' own worker is killed by the check process; anything left is stopped
        stop_tree(proc)
        with _running_lock:
            _running.discard(proc)
    return {
        "returncode": None if timed_out else proc.returncode,
        "timed_out": timed_out,
        "seconds": round(time.monotonic() - started, 3),
        "output": out.text(),
        "output_bytes": out.total,
    }


def _read_json(path: Path) -> Optional[dict]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _tail(text: str, limit: int = 4000) -> str:
    return text[-limit:]


def child_env(workspace: Path, seed: int, gpu: Optional[str]) -> dict:
    env = dict(os.environ)
    env["KERNEL_COURSE_WORKSPACE"] = str(workspace)
    env["KERNEL_COURSE_SEED"] = str(seed)
    env["PYTHONUNBUFFERED"] = "1"
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    return env


def check_command(
    workshop: str, copy: Path, records: Path, seed: int, timeout: float, repair_s: float = 0.0
) -> list:
    """The single run's command line (with ``--repair`` when a search budget is given)."""
    repair = ["--repair", "--repair-budget", f"{repair_s:g}"] if repair_s > 0 else []
    return [
        sys.executable,
        "-m",
        "checks",
        workshop,
        "--file",
        str(copy),
        "--json",
        str(records),
        "--seed",
        str(seed),
        "--timeout",
        f"{timeout:g}",
        *repair,
    ]


def run_submission(
    job: dict, gpu: Optional[str] = None, worker: str = "", scratch: Optional[str] = None
) -> dict:
    """Grade one submission; never raises for anything the submission does.

    ``job``: learner, workshop, source (the file's bytes), sha256, seed, timeout,
    memory_bytes (0: none; the driver leaves it out for a task on a GPU: CUDA maps far
    more address space than any sensible limit), bench, repair_s (seconds of repair
    search for a failing file; 0: none).  ``gpu``: the CUDA device the check process may use
    (its CUDA_VISIBLE_DEVICES), or None to keep the worker's own setting.  ``scratch``: the
    folder to make the temporary workspace in (a Dask worker's own, which the next worker
    clears if this one is killed before it removes the workspace)."""
    import hashlib

    source: bytes = job["source"]
    seed, timeout = int(job["seed"]), float(job["timeout"])
    memory = int(job.get("memory_bytes") or 0)
    result: dict = {
        "learner": job["learner"],
        "workshop": job["workshop"],
        "sha256": hashlib.sha256(source).hexdigest(),
        "seed": seed,
        "timeout_s": timeout,
        "memory_limit_bytes": memory,
        "host": socket.gethostname(),
        "worker": worker,
        "gpu": gpu,
        "python": platform.python_version(),
    }
    with tempfile.TemporaryDirectory(prefix=f"regrade-{job['workshop']}-", dir=scratch) as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        copy = workspace / f"{job['workshop']}.py"
        copy.write_bytes(source)
        records_path = Path(tmp) / "records.json"
        repair_s = float(job.get("repair_s") or 0.0)
        cmd = check_command(job["workshop"], copy, records_path, seed, timeout, repair_s)
        env = child_env(workspace, seed, gpu)
        limit = timeout + max(GRACE_S, timeout / 4) + (repair_s + GRACE_S if repair_s else 0.0)
        run = run_limited(cmd, env=env, limit_s=limit, memory_bytes=memory)
        payload = _read_json(records_path)
        result["seconds"] = run["seconds"]
        result["output_bytes"] = run["output_bytes"]
        result["command"] = ["python", "-m", "checks", *cmd[3:]]
        if payload is not None and "records" in payload:
            records = verdicts.records_from_json(payload)
            result.update(verdicts.from_records(records))
            result["exit_code"] = payload.get("exit_code", run["returncode"])
            result["summary"] = payload.get("summary", "")
            interpreted = bool(payload.get("environment", {}).get("interpret"))
            result["mode"] = "interpreter" if interpreted else ("GPU" if gpu_workshop(job) else "CPU")
            result["records"] = payload["records"]
            if job["workshop"] in payload.get("repairs", {}):
                result["repair"] = payload["repairs"][job["workshop"]]
        else:
            result.update(
                verdicts.without_records(
                    run["returncode"], run["timed_out"], timeout + GRACE_S, run["output"]
                )
            )
            result["exit_code"] = run["returncode"]
            result["summary"] = ""
            result["mode"] = ""
            result["records"] = []
        if result["outcome"] not in ("passed", "passed here"):
            result["output_tail"] = _tail(run["output"])
        if job.get("bench"):
            result["bench"] = bench(job, copy, Path(tmp), env, result)
    result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return result


def gpu_workshop(job: dict) -> bool:
    from workshops import catalog

    return catalog.get(job["workshop"]).gpu


def bench(job: dict, copy: Path, tmp: Path, env: dict, result: dict) -> dict:
    """The timings of a passing GPU submission (``python -m checks.benchmark``), or why
    there are none."""
    from checks.benchmark.specs import benchmarked_ops

    if job["workshop"] not in benchmarked_ops():
        return {"skipped": "not a benchmarked GPU workshop"}
    if result["outcome"] not in ("passed", "passed here"):
        return {"skipped": "timed only when every check that can run passes"}
    if result.get("mode") != "GPU":
        return {"skipped": "no CUDA GPU on this worker: timings need one"}
    out = tmp / "bench.json"
    cmd = [sys.executable, "-m", "checks.benchmark", "--op", job["workshop"], "--file", str(copy)]
    run = run_limited(cmd + ["--output", str(out), "--quick"], env=env, limit_s=BENCH_LIMIT_S)
    payload = _read_json(out)
    if payload is None:
        why = "timed out" if run["timed_out"] else f"exit code {run['returncode']}"
        return {"exit_code": run["returncode"], "error": why, "output_tail": _tail(run["output"], 2000)}
    rows = [
        {k: r.get(k) for k in ("shape", "dtype", "variant", "status", "refused", "median_us", "rel_error")}
        for r in payload.get("results", [])
        if r.get("role") == "candidate"
    ]
    targets = payload.get("targets", [])
    return {
        "exit_code": payload.get("exit_code", run["returncode"]),
        "seconds": run["seconds"],
        "candidates": rows,
        "targets_met": sum(bool(t.get("met")) for t in targets),
        "targets": len(targets),
    }
