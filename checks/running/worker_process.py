"""A warm worker process, the parent's side: ``python -m checks.running.worker`` started,
its record channel read into an event queue, its output drained, its stack asked for, killed.

Standard library only, and no torch: the app imports this module (through
checks.running.child, whose runs hand their jobs to these workers).

    w = Worker(preload="gpu", warm="strided_softmax")
    w.wait_ready()                   # its imports done (w.ready_info: events.Ready)
    w.send_job({...}); w.events      # the job's events (checks.running.events), then Eof
    w.kill()                         # it and everything it started

Platform differences (process groups, the record channel) live in this module only.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

from checks.interpreter import interpreter_env
from checks.running import events, processes

REPO = Path(__file__).resolve().parents[2]
POSIX = processes.POSIX
TAIL_BYTES = 64 * 1024


class _Tail:
    """Drain a stream continuously (a learner printing megabytes must not block on a
    full pipe) and keep only its last bytes."""

    def __init__(self, stream):
        self.buf: collections.deque[bytes] = collections.deque()
        self.size = 0
        self.total = 0
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream):
        for chunk in iter(lambda: stream.read1(8192) if hasattr(stream, "read1") else stream.read(8192), b""):
            with self.lock:
                self.buf.append(chunk)
                self.size += len(chunk)
                self.total += len(chunk)
                while self.size > TAIL_BYTES and len(self.buf) > 1:
                    self.size -= len(self.buf.popleft())

    def text(self, limit: int = 1500) -> str:
        self.thread.join(timeout=0.5)
        with self.lock:
            data = b"".join(self.buf)
        return data.decode("utf-8", "replace")[-limit:]


class Worker:
    """A started ``python -m checks.running.worker`` process waiting for one job."""

    def __init__(self, preload: str = "none", env: Optional[dict] = None, warm: str = ""):
        self.preload = preload
        self.warm = warm
        # the ready event (pid, the warmed workshop's cases, the GPU's target); {} before
        self.ready_info: Optional[events.Ready] = None
        self.events: "queue.Queue" = queue.Queue()
        # what the job's events carry besides their lines: the run's generation and
        # content hash (the worker's own from its Loaded line on)
        self.stamp: dict = {}
        child_env = dict(os.environ if env is None else env)
        if preload == "interpret":  # else the job says, and the worker chooses
            child_env = interpreter_env(True, child_env)
        child_env.setdefault("PYTHONUNBUFFERED", "1")
        args = (
            [sys.executable]
            + (["-S"] if sys.flags.no_site else [])
            + ["-m", "checks.running.worker", "--preload", preload]
        )
        if warm:
            args += ["--warm", warm]
        kwargs: dict[str, Any] = dict(
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(REPO),
            env=child_env,
        )
        kwargs.update(processes.own_group())
        self._record_file = self._stack_file = None
        self._stack: Optional[_Tail] = None
        if POSIX:  # two pipes: the records, and the stack written on SIGUSR1 (no files to clean up)
            r, w = os.pipe()
            stack_r, stack_w = os.pipe()
            args += ["--record-fd", str(w), "--stack-fd", str(stack_w)]
            kwargs.update(pass_fds=(w, stack_w))
        else:  # Windows: no fd passing; the worker appends to files the parent reads
            fd, self._record_file = tempfile.mkstemp(prefix="checks-records-", suffix=".jsonl")
            os.close(fd)
            fd, self._stack_file = tempfile.mkstemp(prefix="checks-stack-", suffix=".txt")
            os.close(fd)
            args += ["--record-file", self._record_file, "--stack-file", self._stack_file]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(args, **kwargs)
        self.stdout = _Tail(self.proc.stdout)
        self.stderr = _Tail(self.proc.stderr)
        if POSIX:
            os.close(w)
            os.close(stack_w)
            self._stack = _Tail(os.fdopen(stack_r, "rb"))
            threading.Thread(target=self._read_pipe, args=(r,), daemon=True).start()
        else:
            threading.Thread(target=self._read_file, daemon=True).start()
        self.ready_at: Optional[float] = None
        # a benchmark's way to the app's compile pool (checks.running.handoff.Door), or None
        self.door: Any = None

    # --- the record channel ---
    def _put_line(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        try:
            ev = events.from_wire(json.loads(line), **self.stamp)
        except ValueError:
            return  # only the worker writes here; a line that is no worker message is ignored
        if isinstance(ev, events.Loaded) and ev.content_hash is not None and self.stamp:
            self.stamp = dict(self.stamp, content_hash=ev.content_hash)
        self.events.put(ev)

    def _read_pipe(self, fd: int):
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                self._put_line(line)
        self.events.put(events.Eof())

    def _read_file(self) -> None:
        assert self._record_file is not None  # Windows: the worker appends to it
        pos = 0
        while True:
            with open(self._record_file, encoding="utf-8", errors="replace") as f:
                f.seek(pos)
                while True:
                    line = f.readline()
                    if not line.endswith("\n"):
                        break
                    pos = f.tell()
                    self._put_line(line)
            if self.proc.poll() is not None:
                self._remove_files()
                self.events.put(events.Eof())
                return
            time.sleep(0.02)

    def wait_ready(self, timeout: float = 120.0) -> bool:
        """Block until the worker has finished its imports (or died)."""
        if self.ready_at is not None:
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                ev = self.events.get(timeout=0.05)
            except queue.Empty:
                if self.proc.poll() is not None:
                    return False
                continue
            if isinstance(ev, events.Ready):
                self.ready_at = time.monotonic()
                self.ready_info = ev
                return True
            self.events.put(ev)
            return False
        return False

    def send_job(self, job: dict, stamp: Optional[dict] = None) -> None:
        """Hand the worker its job; ``stamp``: fields its events carry (see ``stamp``)."""
        self.stamp = {k: v for k, v in (stamp or {}).items() if v is not None}
        stdin = self.proc.stdin
        assert stdin is not None  # started with stdin=PIPE
        stdin.write((json.dumps(job) + "\n").encode())
        stdin.flush()
        stdin.close()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def dump_stack(self, wait: float = 1.0) -> str:
        """Ask the running worker for the Python stack of its threads (POSIX: SIGUSR1,
        answered by faulthandler even inside an endless loop) and return the text."""
        if self._stack is not None:
            return self._stack_from_pipe(self._stack, wait)
        deadline, size = time.monotonic() + wait, -1
        while time.monotonic() < deadline:
            time.sleep(0.05)
            try:
                now = os.path.getsize(self._stack_file or "")
            except OSError:
                return ""
            if now and now == size:
                break  # written and no longer growing
            size = now
        try:
            with open(self._stack_file or "", encoding="utf-8", errors="replace") as f:
                return f.read()[-20000:]
        except OSError:
            return ""

    def _stack_from_pipe(self, tail: "_Tail", wait: float) -> str:
        """SIGUSR1 to the worker, then what its stack pipe brought since, once it stops growing."""
        before = tail.total
        if self.alive():
            try:
                os.kill(self.proc.pid, signal.SIGUSR1)
            except (ProcessLookupError, PermissionError):
                return ""
        deadline, size = time.monotonic() + wait, before
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = tail.total
            if now > before and now == size:
                break  # written and no longer growing
            size = now
        with tail.lock:
            data = b"".join(tail.buf)
        fresh = min(tail.total - before, len(data))
        return data[len(data) - fresh :].decode("utf-8", "replace")[-20000:] if fresh else ""

    def kill(self) -> None:
        """Kill the worker and everything it started (its whole process group)."""
        processes.kill_group(self.proc)
        self._remove_files()

    def _remove_files(self) -> None:
        """Remove the temporary files the worker was handed (once it ended or was killed)."""
        for leftover in (self._record_file, self._stack_file):
            if leftover:
                try:
                    os.unlink(leftover)
                except OSError:
                    pass
