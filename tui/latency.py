"""Save-to-verdict latency, measured side by side: ``python -m tui.latency``.

It edits an exercise file the way an editor does (write a temporary file, rename it
over the old one), then measures the time from that save to the first and to the
last verdict along two paths, in one run:

* ``warm``: the app's path -- a watcher on the workspace folder notices the save, the
  content hash is compared, and the job goes to an already-started worker from
  :class:`checks.child.WarmPool` (torch and triton imported, CUDA initialised);
* ``fresh``: a new ``python -m checks --file`` process, as a learner at the shell.

Scenarios: the CPU workshop; a GPU workshop (strided softmax) with an edit that
changes the kernel source, so Triton recompiles; and a save that changes nothing
(the warm path must start no run).  The worker and watcher are the same code the app
uses; Textual itself is not needed, so this also runs on the GPU machine.

Prints a table and writes JSON (``--output``, default results/local/latency-*.json).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from checks.child import ChildRun, WarmPool, gpu_present, preload_for
from checks.records import write_json_atomic
from checks.workspace import content_hash
from workshops import catalog

REPO = Path(__file__).resolve().parent.parent


def editor_save(path: Path, text: str) -> float:
    """Write like vim or a JetBrains IDE: temporary file, then rename over.  Returns the
    monotonic time at which the save completed."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".swp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return time.monotonic()


class Watcher:
    """Polls the folder for the file's (mtime, size, inode) -- the portable fallback the
    app uses with --poll; watchfiles, when installed, is used instead."""

    def __init__(self, path: Path, interval: float = 0.02):
        self.path, self.interval = path, interval
        self.event = threading.Event()
        self._stop = threading.Event()
        self.kind = "poll"
        try:
            import watchfiles  # noqa: F401
            self.kind = "watchfiles"
        except ImportError:
            pass
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        time.sleep(0.3)       # let the watcher settle before the first save

    def _sig(self):
        try:
            st = self.path.stat()
            return (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            return None

    def _run(self):
        if self.kind == "watchfiles":
            import watchfiles
            for changes in watchfiles.watch(self.path.parent, stop_event=self._stop,
                                            debounce=5, step=5, rust_timeout=100):
                if any(Path(p).name == self.path.name for _, p in changes):
                    self.event.set()
            return
        last = self._sig()
        while not self._stop.is_set():
            sig = self._sig()
            if sig != last and sig is not None:
                last = sig
                self.event.set()
            time.sleep(self.interval)

    def wait(self, timeout: float) -> bool:
        ok = self.event.wait(timeout)
        self.event.clear()
        return ok

    def stop(self):
        self._stop.set()


def warm_run(w, path: Path, text: str, pool: WarmPool, watcher: Watcher, last_hash: list,
             interpret: bool, timeout: float) -> dict:
    preload = preload_for(w.gpu, interpret)
    worker = pool.prime(preload)
    worker.wait_ready(timeout=300)
    saved = editor_save(path, text)
    if not watcher.wait(timeout=10):
        return {"error": "the watcher saw no change"}
    noticed = time.monotonic()
    h = content_hash(path.read_bytes())
    if h == last_hash[0]:
        return {"ran": False, "notice_s": noticed - saved}
    last_hash[0] = h
    run = ChildRun(w.id, path, interpret=interpret, timeout=timeout, worker=pool.take(preload))
    first = None
    for ev in run.events():
        if ev["type"] == "record" and first is None:
            first = time.monotonic()
    end = time.monotonic()
    return {"ran": True, "notice_s": noticed - saved, "first_s": (first or end) - saved,
            "last_s": end - saved, "checks": len(run.records),
            "statuses": sorted({r.status for r in run.records})}


def fresh_run(w, path: Path, text: str, interpret: bool, timeout: float) -> dict:
    saved = editor_save(path, text)
    cmd = [sys.executable, "-m", "checks", w.id, "--file", str(path)]
    if interpret:
        cmd.append("--interpret")
    env = dict(os.environ, PYTHONUNBUFFERED="1", NO_COLOR="1")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    first = None
    mark = re.compile(r"^\s+(PASS|FAIL|TODO|ERROR|SKIP)\s")
    for line in proc.stdout:
        if first is None and mark.match(line):
            first = time.monotonic()
    proc.wait(timeout=timeout)
    end = time.monotonic()
    return {"ran": True, "first_s": (first or end) - saved, "last_s": end - saved,
            "exit_code": proc.returncode}


def edits_for(w, n: int, kernel_edit: bool) -> list:
    """n distinct versions of the reference answer.  With kernel_edit, a comment inside
    the first @triton.jit function changes, which changes its source and so its cache
    key: Triton recompiles that kernel, as after a learner's real edit."""
    src = w.solution.read_text(encoding="utf-8")
    out = []
    for i in range(n):
        stamp = f"{time.time_ns()}-{i}"
        if kernel_edit and "@triton.jit" in src:
            head, tail = src.split("@triton.jit", 1)
            sig_end = tail.index(":\n") + 2            # end of the kernel's def line(s)
            text = head + "@triton.jit" + tail[:sig_end] + f"    # edit {stamp}\n" + tail[sig_end:]
        else:
            text = src + f"\n# edit {stamp}\n"
        out.append(text)
    return out


def measure(workshop_id: str, repeats: int, interpret: bool, timeout: float, pool: WarmPool,
            work: Path) -> list:
    w = catalog.get(workshop_id)
    path = work / w.exercise_name
    path.write_text(w.solution.read_text(encoding="utf-8"), encoding="utf-8")
    watcher = Watcher(path)
    rows = []
    last_hash = [content_hash(path.read_bytes())]
    try:
        kernel_edit = w.gpu
        # One warm-up of each path (compiles shared kernels once, fills the OS cache).
        warm_run(w, path, edits_for(w, 1, kernel_edit)[0], pool, watcher, last_hash, interpret, timeout)
        fresh_run(w, path, edits_for(w, 1, kernel_edit)[0], interpret, timeout)
        for i, text in enumerate(edits_for(w, repeats, kernel_edit)):
            for mode in ("warm", "fresh"):           # interleaved, so drift hits both
                text_i = text + f"# {mode}\n"
                r = (warm_run(w, path, text_i, pool, watcher, last_hash, interpret, timeout)
                     if mode == "warm" else fresh_run(w, path, text_i, interpret, timeout))
                rows.append({"workshop": w.id, "scenario": "kernel edit" if kernel_edit else "edit",
                             "path": mode, "repeat": i, **r})
        # A save that changes nothing: the warm path notices it and starts no run.
        same = path.read_text(encoding="utf-8")
        last_hash[0] = content_hash(same.encode("utf-8"))    # the app has seen this content
        r = warm_run(w, path, same, pool, watcher, last_hash, interpret, timeout)
        rows.append({"workshop": w.id, "scenario": "unchanged save", "path": "warm", "repeat": 0, **r})
    finally:
        watcher.stop()
    return rows


def summarize(rows: list) -> list:
    out = []
    keys = sorted({(r["workshop"], r["scenario"], r["path"]) for r in rows})
    for wid, scen, mode in keys:
        rs = [r for r in rows if (r["workshop"], r["scenario"], r["path"]) == (wid, scen, mode)]
        ran = [r for r in rs if r.get("ran")]
        row = {"workshop": wid, "scenario": scen, "path": mode, "n": len(rs),
               "runs_started": len(ran)}
        if ran:
            row["first_median_s"] = round(statistics.median(r["first_s"] for r in ran), 3)
            row["last_median_s"] = round(statistics.median(r["last_s"] for r in ran), 3)
        out.append(row)
    # ratios side by side
    for row in out:
        if row["path"] == "warm" and "last_median_s" in row:
            fresh = [r for r in out if r["workshop"] == row["workshop"] and r["path"] == "fresh"
                     and r["scenario"] == row["scenario"] and "last_median_s" in r]
            if fresh:
                row["speedup_last_vs_fresh"] = round(fresh[0]["last_median_s"] / row["last_median_s"], 2)
                row["speedup_first_vs_fresh"] = round(fresh[0]["first_median_s"] / row["first_median_s"], 2)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tui.latency", description=__doc__.split("\n\n")[0])
    p.add_argument("--workshops", default="online_normalizer,strided_softmax",
                   help="comma-separated workshop ids (default: the CPU workshop and strided_softmax)")
    p.add_argument("--repeats", type=int, default=3, help="measured saves per path (default 3)")
    p.add_argument("--timeout", type=float, default=300.0, help="per-run limit in seconds")
    p.add_argument("--output", type=Path, help="JSON path (default results/local/latency-<time>.json)")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats: must be at least 1")
    ids = [s.strip() for s in args.workshops.split(",") if s.strip()]
    for i in ids:
        try:
            catalog.get(i)
        except KeyError as e:
            p.error(f"--workshops: {e}")
    gpu = gpu_present()
    pool = WarmPool()
    rows = []
    with tempfile.TemporaryDirectory(prefix="latency-ws-") as d:
        try:
            for wid in ids:
                w = catalog.get(wid)
                interpret = w.gpu and not gpu
                rows += measure(wid, args.repeats, interpret, args.timeout, pool, Path(d))
        finally:
            pool.close()
    table = summarize(rows)
    print(f"{'workshop':<20} {'scenario':<15} {'path':<6} {'runs':>4} {'first (s)':>10} "
          f"{'last (s)':>9} {'x fresh (last)':>15}")
    for r in table:
        print(f"{r['workshop']:<20} {r['scenario']:<15} {r['path']:<6} {r['runs_started']:>4} "
              f"{r.get('first_median_s', float('nan')):>10.3f} {r.get('last_median_s', float('nan')):>9.3f} "
              f"{r.get('speedup_last_vs_fresh', ''):>15}")
    payload = {"schema": "kernel-course/latency", "version": 1,
               "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "machine": {"python": platform.python_version(), "platform": platform.platform(),
                           "cpus": os.cpu_count(), "gpu": gpu},
               "summary": table, "runs": rows}
    out = args.output or REPO / "results" / "local" / f"latency-{time.strftime('%Y%m%d-%H%M%S')}.json"
    write_json_atomic(out, payload)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
