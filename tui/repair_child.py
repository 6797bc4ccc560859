"""The repair search for the app: ``python -m checks.repair`` after a failing run, its lines read.

After a run that failed because a check failed or errored (:func:`wanted`), the workshop
screen starts one :class:`RepairSearch`: a child process in a process group of its own
(``checks.running``'s process helpers), on a private copy of the file whose content the run
checked, so that what it finds is about that content whatever the learner saves meanwhile,
with ``--jsonl``: one JSON object a line, ``begin``, ``progress`` (many), then ``result``
with the repair.  A thread reads them and hands ``on_event`` a
:class:`tui.messages.RepairProgress` (at most one per PROGRESS_EVERY seconds) and, last,
one :class:`tui.messages.RepairFinished`; never anything after a cancel.  A cancel (a newer
save, leaving the screen, quitting) kills the whole group at once and reaps its leader.

The learner's file is only read.  Standard library only, and the engine's front doors: the
app never imports torch or triton.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Callable, Optional, Union

from checks import running, workspace as ws
from tui.messages import RepairFinished, RepairProgress

REPAIR_MODULE = "checks.repair"
PROGRESS_EVERY = 0.25  # seconds: the line is updated at most about four times a second
LEADER_GRACE = 10.0  # seconds the search may take to exit after its result line
STATUSES = ("found", "none", "budget", "cancelled", "not-applicable")
# the run outcomes after which a failing check can be repaired (not a cancel, not a run
# that could not start or asked for a check that does not exist)
REPAIRABLE_RUNS = ("done", "crashed", "timeout")

# own_group() and kill_group() of checks/running/processes.py: the app reaches the running
# room through its front door (pyproject's import contracts), which loads that module but
# does not re-export its helpers yet
_processes = running.processes

RepairEvent = Union[RepairProgress, RepairFinished]


def available(module: Optional[str] = None) -> bool:
    """Whether ``python -m <module>`` can run (the engine's repair search is optional).
    Found without importing the package: its import may be heavy."""
    module = module or REPAIR_MODULE
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    if spec.submodule_search_locations is None:  # a plain module
        return True
    return any((Path(folder) / "__main__.py").is_file() for folder in spec.submodule_search_locations)


def wanted(run_outcome: str, records: list) -> bool:
    """A search is worth starting after this run: it ended by itself (not cancelled) with a
    check that failed or errored, every check written (no TODO left), the file imported."""
    if str(run_outcome) not in REPAIRABLE_RUNS or not records:
        return False
    statuses = {r.status for r in records}
    if "todo" in statuses or any(r.id == "load" for r in records):
        return False
    return bool(statuses & {"fail", "error"})


def read_line(line: str) -> Optional[dict]:
    """The message of one ``--jsonl`` line (a dict with an ``event``), else None."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) and isinstance(message.get("event"), str) else None


def count(value: object) -> int:
    """A count from a line: a whole number >= 0, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def normal_repair(repair: object) -> Optional[dict]:
    """The result's repair as the app shows it: a dict with a known ``status``, its text
    fields strings (missing ones empty); None when the line held no such dict."""
    if not isinstance(repair, dict) or repair.get("status") not in STATUSES:
        return None
    out = dict(repair)
    for key in ("says", "kind", "before", "after", "diff", "note"):
        value = out.get(key)
        out[key] = value if isinstance(value, str) else ""
    return out


def relabel(repair: dict, private: str, learner: str) -> dict:
    """The repair with the private copy's path said as the learner's file."""
    return {k: v.replace(private, learner) if isinstance(v, str) else v for k, v in repair.items()}


class RepairSearch:
    """One ``python -m checks.repair WORKSHOP --file COPY --jsonl`` run; cancellable.

    ``path`` is the learner's file and ``content_hash`` the content the failing run
    checked: the search runs on a copy of that content, and not at all when the file
    holds something else by now (a newer save, whose own run is coming).  ``on_event``
    is called from the reading thread."""

    def __init__(
        self,
        workshop_id: str,
        path: Path,
        content_hash: str,
        generation: int,
        workspace: Path,
        on_event: Callable[[RepairEvent], None],
        interpret: bool = False,
        budget: Optional[float] = None,
        module: Optional[str] = None,
    ) -> None:
        self.workshop_id, self.path, self.content_hash = workshop_id, Path(path), content_hash
        self.generation, self.workspace = generation, Path(workspace)
        self.on_event, self.interpret, self.budget = on_event, interpret, budget
        self.module = module or REPAIR_MODULE
        self.proc: Optional[subprocess.Popen] = None
        self._lock = threading.Lock()
        self._cancelled = False
        self.thread: Optional[threading.Thread] = None

    # --- from the screen ---
    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="repair-search", daemon=True)
        self.thread.start()

    def cancel(self) -> None:
        """Stop at once: kill the process and everything it started, and reap it.  Nothing
        is delivered after this returns."""
        with self._lock:
            self._cancelled = True
            proc = self.proc
        if proc is not None:
            _processes.kill_group(proc)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc is not None else None

    def command(self, file: Path) -> list:
        cmd = [sys.executable, "-m", self.module, self.workshop_id, "--file", str(file), "--jsonl"]
        if self.interpret:
            cmd.append("--interpret")
        if self.budget is not None:
            cmd += ["--budget", f"{self.budget:g}"]
        return cmd

    # --- the reading thread ---
    def _deliver(self, event: RepairEvent) -> None:
        with self._lock:  # a cancel that has returned is never followed by an event
            if not self._cancelled:
                self.on_event(event)

    def _run(self) -> None:
        folder = tempfile.mkdtemp(prefix="kernel-course-repair-")
        try:
            repair, error = self._search(Path(folder))
        except OSError as e:
            repair, error = None, f"the search could not start ({e})"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        self._deliver(RepairFinished(self.generation, self.content_hash, repair, error))

    def _search(self, folder: Path) -> tuple:
        """(repair or None, error): ("", None) when there is nothing to search."""
        data = self.path.read_bytes()
        if ws.content_hash(data) != self.content_hash:
            return None, ""  # saved since the run: the newer content's run is coming
        copy = folder / self.path.name
        copy.write_bytes(data)
        env = dict(os.environ, KERNEL_COURSE_WORKSPACE=str(self.workspace), PYTHONUNBUFFERED="1")
        with open(folder / "stderr.txt", "w+b") as err:
            with self._lock:
                if self._cancelled:
                    return None, ""
                self.proc = subprocess.Popen(
                    self.command(copy),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    env=env,
                    **_processes.own_group(),
                )
            assert self.proc.stdout is not None
            # once it has ended, nothing it started may outlive it, nor keep its output open
            threading.Thread(target=self._reap, args=(self.proc,), name="repair-reap", daemon=True).start()
            repair = self._read(self.proc.stdout)
            try:  # the result is its last line: it is ending
                self.proc.wait(timeout=LEADER_GRACE)
            except subprocess.TimeoutExpired:
                pass
            _processes.kill_group(self.proc)  # and nothing it started outlives it
            self.proc.stdout.close()
            err.seek(0)
            tail = err.read()[-2000:].decode("utf-8", "replace").strip()
        if repair is not None:
            return relabel(repair, str(copy), str(self.path)), ""
        last = tail.splitlines()[-1] if tail else f"exit code {self.proc.returncode}"
        return None, f"the search ended without a result ({last})"

    @staticmethod
    def _reap(proc: subprocess.Popen) -> None:
        proc.wait()
        _processes.kill_group(proc)

    def _read(self, stream: IO[bytes]) -> Optional[dict]:
        """Deliver the progress lines; the result's repair (None: the stream ended first)."""
        last = 0.0
        for raw in iter(stream.readline, b""):
            message = read_line(raw.decode("utf-8", "replace"))
            if message is None:
                continue
            event = message["event"]
            if event == "result":
                return normal_repair(message.get("repair"))
            if event in ("begin", "progress"):
                now = time.monotonic()
                if event == "progress" and now - last < PROGRESS_EVERY:
                    continue
                last = now
                self._deliver(
                    RepairProgress(
                        self.generation,
                        self.content_hash,
                        count(message.get("tried")),
                        count(message.get("candidates")),
                        str(message.get("stage") or ""),
                    )
                )
        return None
