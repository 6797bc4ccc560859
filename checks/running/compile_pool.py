"""A pool of compile workers: every kernel variant a check run will need, compiled once,
in parallel, on the CPU, the moment a save lands.

Standard library only, and no torch: the app imports this module.

After an edit, compiling is most of a check run's time, and it is CPU work: a suite
needs some fifty variants of the learner's kernels, each a code generator, LLVM and
ptxas run.  The variants are known before the run starts -- the last run of the same
workshop compiled them (:class:`checks.running.variants.Recorder` lists them), and a kernel
edit rarely changes argument types or block sizes -- so the pool compiles them
(``python -m checks.running.compile_worker`` processes, torch and triton imported, warmed for
the GPU's target) into Triton's cache while the one check worker runs the checks in
order.  The check worker waits for a predicted variant's marker file instead of
compiling it again; a variant nobody predicted compiles there on demand, as it would
without a pool.  This is how PyTorch's Inductor compiles its own Triton kernels.

    pool = CompilePool(compile_workers())
    pool.warm(target)                        # from the check worker's ready event
    job = pool.submit(path, digest, target, variants, folder)
    job.ids                                  # what the check worker may wait for
    pool.cancel()                            # a newer save: the rest is not compiled

Variants are handed out one at a time, in the order the checks need them, so the
first check's variants are compiled first.  A worker that dies or hangs is replaced,
and its variant marked failed (the check worker then compiles it itself).
"""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

from checks.interpreter import interpreter_env
from checks.running import processes, variants as variant_names

REPO = Path(__file__).resolve().parents[2]
MAX_COMPILERS = 16
COMPILERS_ENV = "KERNEL_COURSE_COMPILERS"
GIB_PER_COMPILER = 1.5  # a worker with torch and triton imported, compiling


class SettingError(ValueError):
    """An environment setting that is not what it must be; the message names it."""


def env_count(name: str, allow_zero: bool = False) -> Optional[int]:
    """The integer in ``$name``, None when unset; a clear error naming it otherwise."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    least = 0 if allow_zero else 1
    if not text.isdigit() or int(text) < least:
        what = "a whole number, 0 or more" if allow_zero else "a positive whole number"
        raise SettingError(f"{name} must be {what} (it is {raw!r})")
    return int(text)


def machine_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine_memory_gib() -> Optional[float]:
    """The machine's memory in GiB, or None where the platform does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (AttributeError, ValueError, OSError):
        return None


def compile_workers(cores: Optional[int] = None, memory_gib: Optional[float] = None) -> int:
    """How many compile workers this machine runs: every core but two (one runs the
    checks, one is the learner's), at most 16, at most one per 1.5 GiB of memory;
    ``KERNEL_COURSE_COMPILERS=N`` sets it (0: no pool)."""
    env = env_count(COMPILERS_ENV, allow_zero=True)
    if env is not None:
        return env
    cores = machine_cores() if cores is None else cores
    n = min(MAX_COMPILERS, cores - 2)
    mem = machine_memory_gib() if memory_gib is None else memory_gib
    if mem is not None:
        n = min(n, int(mem // GIB_PER_COMPILER))
    return max(0, n)


class CompileWorker:
    """One ``python -m checks.running.compile_worker`` process: a request, then its answer."""

    def __init__(self, env: Optional[dict] = None):
        # compiled for the GPU, never interpreted
        child_env = interpreter_env(False, dict(os.environ if env is None else env, PYTHONUNBUFFERED="1"))
        kwargs: dict = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        kwargs.update(processes.own_group())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "checks.running.compile_worker"], cwd=str(REPO), env=child_env, **kwargs
        )
        self.replies: "queue.Queue" = queue.Queue()
        self.warmed_for: Optional[tuple] = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None  # started with stdout=PIPE
        for line in self.proc.stdout:
            try:
                self.replies.put(json.loads(line))
            except ValueError:
                continue
        self.replies.put(None)

    def request(self, message: dict, limit: float, stale=lambda: False) -> Optional[dict]:
        """Send ``message`` and wait for the answer: None when the worker died, took
        longer than ``limit`` seconds, or ``stale()`` held for 5 s (then it is killed)."""
        stdin = self.proc.stdin
        assert stdin is not None  # started with stdin=PIPE
        try:
            stdin.write((json.dumps(message) + "\n").encode())
            stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return None
        t0 = time.monotonic()
        stale_since = None
        while True:
            try:
                reply = self.replies.get(timeout=0.05)
            except queue.Empty:
                now = time.monotonic()
                if stale():
                    stale_since = stale_since or now
                if now - t0 > limit or (stale_since and now - stale_since > 5.0):
                    self.kill()
                    return None
                continue
            if reply is None:
                return None
            if reply.get("op") == "ready":
                continue
            return reply

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        processes.kill_group(self.proc)


class CompileJob:
    """The variants of one save, being compiled: what is done, failed, and how long."""

    def __init__(self, ids: list, folder):
        self.ids = list(ids)
        self.folder = Path(folder)
        self.compiled = 0
        self.failed = 0
        self.compile_s = 0.0  # summed over workers
        self.errors: list = []
        self.started = time.monotonic()
        self.finished_at: Optional[float] = None
        self.cancelled = False
        self._lock = threading.Lock()

    def settle(self, ident: str, reply: Optional[dict]) -> None:
        with self._lock:
            if reply is not None and reply.get("ok"):
                self.compiled += 1
            else:
                self.failed += 1
                if reply is None:
                    variant_names.write_marker(self.folder, ident, False, "the compile worker stopped")
                elif reply.get("error") and len(self.errors) < 5:
                    self.errors.append(reply["error"])
            self.compile_s += (reply or {}).get("seconds") or 0.0
            if self.compiled + self.failed == len(self.ids):
                self.finished_at = time.monotonic()

    def summary(self) -> dict:
        end = self.finished_at
        return {
            "variants": len(self.ids),
            "compiled": self.compiled,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "compile_s": round(self.compile_s, 4),
            "wall_s": round(end - self.started, 4) if end else None,
            "errors": list(self.errors),
        }


class CompilePool:
    """``size`` compile workers, started at once, fed one variant at a time."""

    def __init__(self, size: int, env: Optional[dict] = None, limit: float = 120.0):
        self.size = max(0, int(size))
        self.env = env
        self.limit = limit  # seconds one variant may take before its worker is replaced
        self.target: Optional[tuple] = None
        self.job: Optional[CompileJob] = None
        self._items: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self.workers: list = []
        for _ in range(self.size):
            w = CompileWorker(env)
            self.workers.append(w)
            threading.Thread(target=self._serve, args=(len(self.workers) - 1,), daemon=True).start()

    def warm(self, target) -> None:
        """Compile a tiny kernel for ``target`` in every worker, while nothing else runs."""
        with self._cond:
            self.target = tuple(target) if target else None
            self._cond.notify_all()

    def submit(self, path, digest: str, target, variants: list, folder) -> CompileJob:
        """Compile ``variants`` ({"qualname", "data"}, in the order the checks need them)
        of the exercise at ``path`` (whose bytes hash to ``digest``) for ``target``;
        markers go to ``folder``.  Cancels the job before it."""
        seen, items = set(), []
        for v in variants:
            ident = variant_names.identity(v["qualname"], v["data"])
            if ident not in seen:
                seen.add(ident)
                items.append((ident, v))
        job = CompileJob([i for i, _ in items], folder)
        with self._cond:
            self._cancel_locked()
            self.target = tuple(target)
            self.job = job
            for ident, v in items:
                message = {
                    "op": "compile",
                    "id": ident,
                    "file": str(path),
                    "digest": digest,
                    "qualname": v["qualname"],
                    "data": v["data"],
                    "target": list(target),
                    "folder": str(folder),
                }
                self._items.append((job, ident, message))
            if not items:
                job.finished_at = job.started
            self._cond.notify_all()
        return job

    def _cancel_locked(self) -> None:
        if self.job is not None and self.job.finished_at is None:
            self.job.cancelled = True
            try:
                (self.job.folder / variant_names.ABANDONED).touch()
            except OSError:
                pass  # the run's folder is gone: nobody waits
        self._items.clear()

    def cancel(self, job: Optional[CompileJob] = None) -> None:
        """Compile nothing more of the current job (with ``job``: only if it is that one)."""
        with self._cond:
            if job is None or self.job is job:
                self._cancel_locked()

    def _next(self, k: int):
        with self._cond:
            while not self._closed:
                w = self.workers[k]
                if self._items:
                    return self._items.popleft()
                if self.target is not None and w.warmed_for != self.target:
                    return ("warm", self.target)
                self._cond.wait()
            return None

    def _serve(self, k: int) -> None:
        while True:
            item = self._next(k)
            if item is None:
                return
            w = self.workers[k]
            if item[0] == "warm":
                if w.request({"op": "warm", "target": list(item[1])}, self.limit) is not None:
                    w.warmed_for = item[1]
                else:
                    w.warmed_for = item[1]  # not again and again; a compile will tell
                    self._replace(k)
                continue
            job, ident, message = item
            if job.cancelled:
                continue
            reply = w.request(message, self.limit, stale=lambda: job.cancelled)
            w.warmed_for = tuple(message["target"])
            if reply is None:
                self._replace(k)
            job.settle(ident, reply)

    def _replace(self, k: int) -> None:
        with self._cond:
            old = self.workers[k]
            if self._closed:
                return
            self.workers[k] = CompileWorker(self.env)
        old.kill()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cancel_locked()
            self._cond.notify_all()
            workers = list(self.workers)
        for w in workers:
            w.kill()
