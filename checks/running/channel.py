"""A warm Python process fed JSON lines on its stdin that answers JSON lines on a pipe of
its own (``--channel-fd N``): the mutation runner's and the repair search's workers.  Its
stdout stays free for what the learner's code prints; its stderr goes to a file.
Standard library only."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Optional

from checks.running import processes

REPO = Path(__file__).resolve().parents[2]


class ChannelProcess:
    """``python -m <module> --channel-fd N <args>`` in a process group of its own.
    ``messages`` holds its answers, then None once the process is gone."""

    def __init__(self, module: str, args: list, env: dict, stderr: Path):
        r, w = os.pipe()
        self.stderr = open(stderr, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, "--channel-fd", str(w), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            pass_fds=(w,),
            cwd=str(REPO),
            env=env,
            **processes.own_group(),
        )
        os.close(w)
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(r,), daemon=True).start()
        self.done = 0  # jobs answered (a caller restarts a worker after so many)

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "r", encoding="utf-8") as f:
            for line in f:
                try:
                    self.messages.put(json.loads(line))
                except ValueError:
                    continue
        self.messages.put(None)  # the process is gone

    def submit(self, job: dict) -> bool:
        """Send one job; False if the process no longer reads."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except OSError:
            return False
        return True

    def next_message(self, timeout: float) -> Optional[dict]:
        """The next answer, or None when none came within ``timeout`` seconds or the
        process is gone."""
        try:
            return self.messages.get(timeout=max(timeout, 0.01))
        except queue.Empty:
            return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, kill: bool = True) -> None:
        """Kill its process group (``kill=False``: close its stdin and let it finish first,
        killing it after 20 s)."""
        if not kill and self.alive():
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                kill = True
        if kill or self.alive():
            processes.kill_group(self.proc)
        self.stderr.close()
