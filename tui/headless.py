"""The app's check loop without Textual: tui.watch -> checks.running.RunSession.

The same session as the workshop screen's loop (tui/run_loop.py): every batch of
changes from :func:`tui.watch.saves` is a save handed to the session (which skips it if
its content hash did not change, cancels the stale run and runs the checks in its
thread); the events of current runs are kept here with their arrival times; after a
current run the pool is primed for the next save.  The latency benchmark drives this on
a machine with no Textual and no watchfiles (the watch then polls).

    session = HeadlessSession(workshop, path, workspace=folder, interpret=False)
    session.start()
    ...                       # save the file; session.wait_finished(digest)
    session.close()
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any, Optional

from checks.running import End, Event, Plan, RecordEvent, RunSession
from tui import watch


class HeadlessSession:
    def __init__(
        self,
        workshop: Any,
        path: Path,
        *,
        workspace: Path,
        interpret: bool,
        timeout: float = 300.0,
        pool_size: Optional[int] = None,
        compilers: Optional[int] = None,
        benchmarks: bool = False,
        poll: bool = False,
    ) -> None:
        self.workshop, self.path = workshop, Path(path)
        self.poll = poll
        self.controller = RunSession(
            workshop,
            self.path,
            workspace=workspace,
            interpret=interpret,
            post=self._post,
            timeout=timeout,
            record=False,
            pool_size=pool_size,
            compilers=compilers,
        )
        self.controller.benchmarks = benchmarks
        self.messages: list = []  # (monotonic arrival time, event), current runs only
        self.batches: list = []  # monotonic times the watcher reported a change
        self.watching = threading.Event()
        self.primed = threading.Event()
        self._cond = threading.Condition()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop: Optional[asyncio.Event] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def runs_started(self) -> int:
        return self.controller.runs_started

    @property
    def saves_skipped(self) -> int:
        return self.controller.saves_skipped

    # --- the loop (its own thread, like the app's event loop) ---
    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()
        if not self.watching.wait(30):
            raise RuntimeError("the watcher did not start")

    def _main(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._watch())

    async def _watch(self) -> None:
        self._stop = asyncio.Event()
        async for changes in watch.saves(
            self.path.parent, self.path.name, poll=self.poll, stop_event=self._stop
        ):
            first = not self.watching.is_set()
            if changes:
                self.batches.append(time.monotonic())
            if changes or first:
                self.request_run(force=first)
            self.watching.set()

    def request_run(self, force: bool = False) -> bool:
        primed = self.primed.is_set()
        self.primed.clear()  # before the run's thread can prime again
        started = self.controller.save(force) is not None
        if not started:
            if primed:
                self.primed.set()
            with self._cond:
                self._cond.notify_all()
        return started

    def _post(self, event: Event) -> None:
        if not self.controller.is_current(event.generation):
            return  # a stale run: never counted as current
        with self._cond:
            self.messages.append((time.monotonic(), event))
            self._cond.notify_all()
        if isinstance(event, End):
            if self.controller.saved_during():
                assert self._loop is not None  # runs are started from the loop's watch
                self._loop.call_soon_threadsafe(self.request_run)
                return
            self.controller.prime()  # in this thread, as the app's prime worker
            self.primed.set()

    # --- for the caller ---
    def wait_ready(self, timeout: float = 300.0) -> bool:
        """Until the pool for the next save is primed and every worker in it is ready."""
        if not self.primed.wait(timeout):
            return False
        c = self.controller
        return c.pool.wait_ready(c.preload, self.workshop.id, timeout) and c.bench_pool.wait_ready(
            "gpu", "", timeout
        )

    def wait_finished(self, digest: str, since: float, timeout: float) -> Optional[dict]:
        """The current run of ``digest`` that finished after ``since``: the arrival time
        of its first record (``first``), of its End (``last``), that event
        (``finished``) and the run's records as they arrived (``records``); None on a
        timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                done = [
                    (t, m)
                    for t, m in self.messages
                    if t >= since and isinstance(m, End) and m.content_hash == digest
                ]
                if done:
                    t_end, fin = done[-1]
                    arrived = [
                        (t, m.record)
                        for t, m in self.messages
                        if t >= since and m.generation == fin.generation and isinstance(m, RecordEvent)
                    ]
                    return {
                        "first": arrived[0][0] if arrived else t_end,
                        "last": t_end,
                        "finished": fin,
                        "records": [r for _, r in arrived],
                        "order": [r.id for _, r in arrived],
                    }
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(min(left, 0.5))

    def ready_seconds(self) -> Optional[float]:
        """How long the last run's worker took to start and warm up (before the save)."""
        return self.controller.last_ready_s

    def messages_plan(self, generation: int) -> list:
        """The cases of the last plan the run ``generation`` posted."""
        with self._cond:
            plans = [m.cases for _, m in self.messages if m.generation == generation and isinstance(m, Plan)]
        return plans[-1] if plans else []

    def close(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self.controller.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
