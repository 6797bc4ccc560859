"""Run checks in a child process: time limits, crash reports, cancellation, warm workers.

Standard library only, and no torch: the app imports this module.

    run = ChildRun("online_normalizer", path, interpret=False, timeout=10)
    for event in run.events():       # checks.running.events: Plan, Loaded, Begin, RecordEvent ..., End
        ...
    run.records                      # every selected check has exactly one record (RunRecords)

A crash (segfault, ``os._exit``), a timeout or a cancel still yields one record per
planned check: the running check gets an ``error`` saying what happened (with the
tail of stderr), the checks that never ran are ``not run`` -- never ``pass``.

The worker process itself (its start, record channel, stack dump and kill) is
checks.running.worker_process.Worker, named here too (``child.Worker``): a run with no
worker of its own starts one through this module's name.  Platform differences
(process groups, the record channel) live there.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

from checks.judging.records import Record
from checks.running import events
from checks.running.handoff import POLL_S, Handoff
from checks.running.run_records import RunRecords
from checks.running.timeouts import stuck_at, timeout_activity
from checks.running.worker_process import Worker


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except (ValueError, AttributeError):
        return f"signal {-code}"


class ChildRun:
    """One run of a workshop's checks in a worker process."""

    def __init__(
        self,
        workshop_id: str,
        path: str | os.PathLike[str],
        *,
        interpret: bool = False,
        only: Optional[list] = None,
        timeout: Optional[float] = None,
        worker: Optional[Worker] = None,
        records: Optional[RunRecords] = None,
    ) -> None:
        self.workshop_id = workshop_id
        self.path = Path(path).resolve()
        self.interpret = interpret
        self.only = list(only) if only else None
        self.timeout = timeout
        self.worker = worker
        # where its verdicts go; its generation and content hash stamp its events
        self.records = records if records is not None else RunRecords()
        self.plan: list = []
        self.current: Optional[str] = None
        self.outcome = events.RunOutcome.RUNNING
        self.usage_error = ""
        self.content_hash: Optional[str] = None  # of the bytes the worker imported
        self.options: dict = {}  # extra run_checks keywords (e.g. seed), passed through
        # per check id: seconds (the engine's), compile_s, compiles, transfer_s (worker
        # to here), began / arrived (monotonic, this process)
        self.timings: dict = {}
        # kernel variants of the learner's file, in the order the checks compiled them
        # (checks.running.variants): what the compile pool compiles ahead after the next save
        self.variants: list = []
        self._began: dict = {}
        # the running check's latest launch, as the worker last said (None: none yet)
        self.launching: Optional[events.Launching] = None
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop the run now (safe from any thread); events() ends with outcome 'cancelled'."""
        self._cancel.set()
        if self.worker is not None:
            self.worker.kill()

    def _synthesize(self, why: str, details: dict, seconds: float = 0.0) -> list:
        """Records for the planned checks that produced none."""
        out = []
        for c in self.plan:
            if c["id"] in self.records:
                continue
            running = c["id"] == self.current
            out.append(
                Record(
                    workshop=self.workshop_id,
                    id=c["id"],
                    label=c["label"],
                    status="error" if running else "not run",
                    message=why if running else f"not run: {why.split(':')[0]}",
                    why=c.get("why", ""),
                    section=c.get("section", ""),
                    details=details if running else {},
                    seconds=round(seconds, 3) if running else 0.0,
                )
            )
        if self.current is None:
            # Died outside any check: while importing the exercise (or between checks).
            out.insert(
                0,
                Record(
                    workshop=self.workshop_id,
                    id="load" if not self.records else "run",
                    label=f"import {self.path.name}" if not self.records else "the run",
                    status="error",
                    message=why,
                    details=details,
                    seconds=round(seconds, 3),
                ),
            )
        return out

    def events(self) -> Iterator[events.Event]:
        if self.worker is None:
            self.worker = Worker(preload="none")
        w = self.worker
        started = time.monotonic()
        try:
            w.send_job(
                {
                    **self.options,
                    "workshop": self.workshop_id,
                    "file": str(self.path),
                    "interpret": self.interpret,
                    "only": self.only,
                    "timeout": self.timeout,
                },
                stamp=self.stamp(),
            )
        except (BrokenPipeError, OSError):
            pass  # the worker died before the job; reported below as a crash
        deadline = started + self.timeout if self.timeout else None
        finished = False
        while not finished:
            if self._cancel.is_set():
                self.outcome = events.RunOutcome.CANCELLED
                break
            wait = 0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic()))
            try:
                ev = w.events.get(timeout=wait)
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    self.outcome = events.RunOutcome.TIMEOUT
                    break
                continue
            if isinstance(ev, events.Ready):  # not yet read by anyone: note when it came
                if w.ready_at is None:
                    w.ready_at, w.ready_info = time.monotonic(), ev
            elif isinstance(ev, events.Plan):
                self.plan = ev.cases
                self.records.set_plan(ev.cases)
                yield ev
            elif isinstance(ev, events.Loaded):
                self.content_hash = ev.content_hash
                if ev.content_hash is not None:
                    self.records.content_hash = ev.content_hash
                yield ev
            elif isinstance(ev, events.Begin):
                self.current = ev.id
                self._began[ev.id] = time.monotonic()
                self.launching = None
                yield ev
            elif isinstance(ev, events.Launching):
                self.launching = ev  # kept for a time limit's message; not yielded
            elif isinstance(ev, events.RecordEvent):
                rec = ev.record
                self.records.add(rec)
                self.variants += [dict(v, check=rec.id) for v in ev.variants or ()]
                self.current = None
                self.timings[rec.id] = {
                    "seconds": rec.seconds,
                    "compile_s": ev.compile_s,
                    "compiles": ev.compiles,
                    "wait_s": ev.wait_s,
                    "variants": len(ev.variants or ()),
                    "arrived": time.monotonic(),
                    "began": self._began.get(rec.id),
                    "transfer_s": (round(max(0.0, time.time() - ev.t), 4) if ev.t is not None else None),
                }
                yield ev
            elif isinstance(ev, events.Usage):
                self.outcome, self.usage_error = events.RunOutcome.USAGE, ev.message
            elif isinstance(ev, events.Done):
                self.outcome = events.RunOutcome.DONE
                finished = True
            elif isinstance(ev, events.Eof):
                try:
                    w.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
                # A cancel kills the worker, which closes the pipe: that is not a crash.
                self.outcome = (
                    events.RunOutcome.CANCELLED if self._cancel.is_set() else events.RunOutcome.CRASHED
                )
                finished = True
        stack = w.dump_stack() if self.outcome == "timeout" else ""
        w.kill()  # the job is over: nothing the exercise started may survive it
        elapsed = time.monotonic() - started
        if self.outcome in ("crashed", "timeout"):
            ran = elapsed
            if self.current is not None and self.current in self._began:
                ran = time.monotonic() - self._began[self.current]
            if self.outcome == "timeout":
                # the limit is the whole run's; the record's seconds are this check's own
                why = (
                    f"timed out: stopped when the run reached its {self.timeout:g} s limit, "
                    f"{ran:.1f} s into this check" + timeout_activity(self.launching)
                )
                details: dict = {"timeout_seconds": self.timeout, "elapsed_seconds": round(ran, 3)}
                if self.launching is not None:
                    details["launches"] = {
                        "kernel": self.launching.kernel,
                        "count": self.launching.count,
                        "total": self.launching.total,
                        "grid": self.launching.grid,
                    }
                stuck = stuck_at(stack, self.path)
                if stuck is not None:
                    details["stuck_at"] = stuck
                    why += (
                        f"; stuck at {Path(stuck['file']).name}, line {stuck['line']}, in {stuck['function']}"
                    )
                if stack.strip():
                    details["stack"] = stack[-4000:]
            else:
                code = w.proc.returncode
                how = _signal_name(code) if code is not None and code < 0 else f"exit code {code}"
                why = f"crashed: the process running your code died ({how})"
                details = {"returncode": code}
            err = w.stderr.text()
            if err.strip():
                why += f"; last stderr:\n{err.strip()}"
                details["stderr_tail"] = err
            out_tail = w.stdout.text(500)
            if out_tail.strip():
                details["stdout_tail"] = out_tail
            for rec in self._synthesize(why, details, ran):
                self.records.add(rec)
                yield events.RecordEvent(record=rec, **self.stamp())
        self.records.outcome = self.outcome
        yield events.End(
            outcome=self.outcome, seconds=round(elapsed, 3), stdout_bytes=w.stdout.total, **self.stamp()
        )

    def stamp(self) -> dict:
        """What this run's own events carry: its generation and content hash."""
        return {"generation": self.records.generation, "content_hash": self.records.content_hash}

    def run(self) -> list:
        for _ in self.events():
            pass
        return self.records.records


def run_benchmark(worker: Worker, argv: list, timeout: float, cancelled=lambda: False) -> tuple:
    """Run ``python -m checks.benchmark ARGV`` in the warm ``worker``: (exit code, or
    None when it crashed, timed out or was cancelled; the tail of its output).  The
    worker is killed afterwards, as after a check run.  With ``worker.door`` (the app's
    compile pool, lent by the session) the worker is offered a folder to hand the
    variants it will need to that pool (checks/running/handoff.py)."""
    handoff = Handoff.open(getattr(worker, "door", None))
    job: dict = {"benchmark": list(argv)}
    if handoff is not None:
        job["discover"] = handoff.folder
    try:
        worker.send_job(job)
    except (BrokenPipeError, OSError):
        pass
    deadline = time.monotonic() + timeout
    code = None
    try:
        while time.monotonic() < deadline and not cancelled():
            if handoff is not None:
                handoff.poll()
            quick = handoff is not None and handoff.waiting()
            try:
                ev = worker.events.get(timeout=POLL_S if quick else 0.1)
            except queue.Empty:
                continue
            if isinstance(ev, events.Done):
                code = ev.code
                break
            if isinstance(ev, events.Eof):
                break
    finally:
        worker.kill()
        if handoff is not None:
            handoff.close()
    return code, (worker.stdout.text(3000) + worker.stderr.text(1500)).strip()


def preload_for(gpu_workshop: bool, interpret: bool) -> str:
    if not gpu_workshop:
        return "cpu"
    return "interpret" if interpret else "gpu"
