"""The repair search for the app: ``python -m checks.repair`` after a failing run, its lines read.

After a run that failed because a check failed or errored (:func:`wanted`), the workshop
screen starts one :class:`RepairSearch`: a child process in a process group of its own
(``checks.running``'s process helpers), on a private copy of the file whose content the run
checked, so that what it finds is about that content whatever the learner saves meanwhile,
with ``--jsonl``: one JSON object a line, ``begin``, ``progress`` (many), then ``result``
with the repair.  A thread reads them and hands ``on_event`` a
:class:`tui.messages.RepairProgress` (at most one per PROGRESS_EVERY seconds) and, last,
one :class:`tui.messages.RepairFinished`; never anything after a cancel.  A cancel (a newer
save, leaving the screen, quitting) kills the search at once with every process it started,
its warm workers too, though they run in process groups of their own (:func:`kill_tree`),
and reaps it; its temporary files are made in a folder of ours that goes with it.

The learner's file is only read.  Standard library only, and the engine's front doors: the
app never imports torch or triton.
"""

from __future__ import annotations

import importlib.util
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator, Optional, Union

from checks import running, workspace as ws
from tui.messages import RepairFinished, RepairProgress

REPAIR_MODULE = "checks.repair"
PROGRESS_EVERY = 0.25  # seconds: the line is updated at most about four times a second
LEADER_GRACE = 10.0  # seconds the search may take to exit after its result line
OUTPUT_GRACE = 1.0  # seconds its output may stay open after it ended (held by what it started)
TREE_EVERY = 1.0  # seconds between two readings of the processes it started
STATUSES = ("found", "reproduced", "none", "budget", "cancelled", "not-applicable")
# the run outcomes after which a failing check can be repaired (not a cancel, not a run
# that could not start or asked for a check that does not exist)
REPAIRABLE_RUNS = ("done", "crashed", "timeout")

# own_group() and kill_group(): the running room's process helpers, through its front door
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


def parents() -> dict:
    """{pid: parent pid} of every process we can see: /proc where there is one, else ps."""
    out = {}
    if os.path.isdir("/proc"):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    with open(os.path.join(entry.path, "stat"), encoding="utf-8", errors="replace") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    out[int(entry.name)] = int(fields[1])
                except (OSError, IndexError, ValueError):
                    continue  # it ended meanwhile
        return out
    try:
        listing = subprocess.run(["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return out
    for line in listing.stdout.splitlines():
        pid, _, ppid = line.strip().partition(" ")
        if pid.isdigit() and ppid.strip().isdigit():
            out[int(pid)] = int(ppid)
    return out


def descendants(pid: int) -> list:
    """The processes ``pid`` started, and theirs, all the way down."""
    children: dict = {}
    for child, parent in parents().items():
        children.setdefault(parent, []).append(child)
    out, todo = [], [pid]
    while todo:
        found = children.get(todo.pop(), [])
        out += found
        todo += found
    return out


def tree_groups(pid: int) -> set:
    """The process groups of what ``pid`` started, all the way down (never the app's own)."""
    groups = set()
    for child in descendants(pid):
        try:
            groups.add(os.getpgid(child))
        except OSError:
            continue  # it ended meanwhile
    return groups - {os.getpgrp()}


def kill_tree(proc: subprocess.Popen, known: Iterable[int] = ()) -> None:
    """Kill ``proc`` (started in a group of its own), everything in its group and every
    process it started in groups of their own (the search's warm workers: killed with the
    search alone, they would run on without it), with the groups ``known`` to have been
    among them (seen earlier: what a search that ended by itself left has no parent to
    be found by), then reap ``proc``.  Its group is stopped first, so that it starts
    nothing while its tree is read."""
    if not _processes.POSIX:  # taskkill /T ends the whole tree
        _processes.kill_group(proc)
        return
    try:
        os.killpg(proc.pid, signal.SIGSTOP)
    except OSError:
        pass  # it has ended: its group may still hold what it started
    for group in (tree_groups(proc.pid) | set(known)) - {proc.pid, os.getpgrp()}:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
    _processes.kill_group(proc)


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
        records: Optional[list] = None,
    ) -> None:
        self.workshop_id, self.path, self.content_hash = workshop_id, Path(path), content_hash
        self.generation, self.workspace = generation, Path(workspace)
        self.on_event, self.interpret, self.budget = on_event, interpret, budget
        self.module = module or REPAIR_MODULE
        self.proc: Optional[subprocess.Popen] = None
        self._lock = threading.Lock()
        self._cancelled = False
        self.thread: Optional[threading.Thread] = None
        self.groups: set = set()  # the process groups it was last seen to have started
        self.folder: Optional[Path] = None  # ours: the copy, its output, its temporary files
        # the failing run's records (dicts), its input: None until give() hands them to a
        # search started with the run (standby), whose workers warm while the checks run
        self.records: Optional[list] = records
        self.given = False  # the records were written to its input

    # --- from the screen ---
    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="repair-search", daemon=True)
        self.thread.start()

    def give(self, records: list) -> None:
        """The run it waited for failed: its records (dicts), written to its input now, or as
        soon as it has started."""
        with self._lock:
            self.records = records
            self._hand_over()

    def _hand_over(self) -> None:
        """Write the records to its input once both are there (called under the lock), from a
        thread of its own: the search reads them only once its first worker is ready, and a
        line longer than the pipe holds would block the app's thread, and cancel(), till then."""
        if self.given or self.records is None or self.proc is None or self.proc.stdin is None:
            return
        self.given = True
        stdin, line = self.proc.stdin, (json.dumps({"records": self.records}) + "\n").encode("utf-8")

        def write() -> None:
            try:
                stdin.write(line)
                stdin.close()
            except (OSError, ValueError):
                pass  # it has ended, or was killed: its reading thread says so

        threading.Thread(target=write, name="repair-records", daemon=True).start()

    @property
    def waiting(self) -> bool:
        """Started with the run, and not yet given that run's records."""
        return not self.given and self.records is None

    def cancel(self) -> None:
        """Stop at once: kill the process and everything it started, and reap it.  Nothing
        is delivered after this returns."""
        with self._lock:
            self._cancelled = True
            proc = self.proc
        if proc is not None:
            kill_tree(proc, self.groups)
        if self.folder is not None:  # now: an app that quits does not wait for the reading thread
            shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc is not None else None

    def command(self, file: Path) -> list:
        cmd = [sys.executable, "-m", self.module, self.workshop_id, "--file", str(file), "--jsonl"]
        cmd.append("--records-from-stdin")  # the failing run's records: give()
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
        self.folder = Path(folder)
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
        # its temporary files (and its workers') in our folder: removed even when it is killed
        env.update(TMPDIR=str(folder), TEMP=str(folder), TMP=str(folder))
        with open(folder / "stderr.txt", "w+b") as err:
            with self._lock:
                if self._cancelled:
                    return None, ""
                self.proc = subprocess.Popen(
                    self.command(copy),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    env=env,
                    **_processes.own_group(),
                )
                self._hand_over()
            assert self.proc.stdout is not None
            repair = self._read(self._lines(self.proc.stdout))
            try:  # the result is its last line: it is ending
                self.proc.wait(timeout=LEADER_GRACE)
            except subprocess.TimeoutExpired:
                pass
            kill_tree(self.proc, self.groups)  # nothing it started outlives it, even if it crashed
            self.proc.stdout.close()
            err.seek(0)
            tail = err.read()[-2000:].decode("utf-8", "replace").strip()
        if repair is not None:
            return relabel(repair, str(copy), str(self.path)), ""
        last = tail.splitlines()[-1] if tail else f"exit code {self.proc.returncode}"
        return None, f"the search ended without a result ({last})"

    def _lines(self, stream: IO[bytes]) -> Iterator[bytes]:
        """The lines of its output until it ends: at its end, or OUTPUT_GRACE seconds after
        the process ended where something it started holds the output open.  Meanwhile the
        groups of the processes it started are read every TREE_EVERY seconds."""
        assert self.proc is not None
        if not _processes.POSIX:
            yield from iter(stream.readline, b"")
            return
        fd, pending = stream.fileno(), b""
        ended_at, seen_at = None, 0.0
        spoke, unread = False, False  # it said something; the tree was not read since its first words
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                now = time.monotonic()
                # read at once after its first words too: by then it has started its workers
                if self.proc.poll() is None and (unread or now - seen_at >= TREE_EVERY):
                    self.groups = self.groups | tree_groups(self.proc.pid)  # a new set: cancel() reads it
                    seen_at, unread = now, False
                if selector.select(timeout=PROGRESS_EVERY):
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    unread, spoke = unread or not spoke, True
                    *lines, pending = (pending + chunk).split(b"\n")
                    yield from lines
                elif self.proc.poll() is not None:
                    ended_at = ended_at or now
                    if now - ended_at >= OUTPUT_GRACE:
                        break
        if pending:
            yield pending

    def _read(self, lines: Iterable[bytes]) -> Optional[dict]:
        """Deliver the progress lines; the result's repair (None: the output ended first)."""
        last = 0.0
        for raw in lines:
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
