"""Running the checks on mutants: a few warm workers (checks.mutation.worker), each fed
one mutant file after another, stopped and replaced when a mutant runs past its time
limit or kills its process, and replaced every few mutants to keep memory bounded.
Standard library only.
"""

from __future__ import annotations

import queue
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from checks.interpreter import interpreter_env
from checks.mutation import classify
from checks.mutation.generate import Mutant
from checks.running.channel import ChannelProcess

DEFAULT_LIMIT = 90.0  # seconds per mutant; the reference answers take 6-18 s interpreted
RESTART_EVERY = 12  # mutants per worker process


def _worker(stderr_path: Path) -> ChannelProcess:
    """A warm mutation worker (checks.mutation.worker), interpreted."""
    return ChannelProcess("checks.mutation.worker", [], interpreter_env(True), stderr_path)


def contract_checks(workshop: str) -> list:
    """The ids of the workshop's argument checks (checks/judging/cases/<id>_arguments.py)."""
    import importlib

    try:
        mod = importlib.import_module(f"checks.judging.cases.{workshop}_arguments")
    except ImportError:
        return []
    return [c.id for c in getattr(mod, "CASES", [])]


def _run_one(worker: ChannelProcess, n: int, mutant: Mutant, folder: Path, limit: float) -> dict:
    path = folder / f"mutant_{n}.py"
    path.write_text(mutant.source, encoding="utf-8")
    t0 = time.monotonic()
    worker.submit({"n": n, "workshop": mutant.workshop, "file": str(path)})
    running = ""
    while True:
        left = limit - (time.monotonic() - t0)
        message = worker.next_message(left) if left > 0 else None
        if message is None and left > 0 and worker.alive():
            continue
        if message is None:
            gone = not worker.alive()
            return {
                "status": classify.CRASHED if gone else classify.TIMED_OUT,
                "running": running,
                "seconds": round(time.monotonic() - t0, 1),
                "records": [],
            }
        if message.get("n") != n:
            continue
        if "begin" in message:
            running = message["begin"]
            continue
        return {"status": None, "seconds": round(time.monotonic() - t0, 1), "records": message["records"]}


def run_mutants(
    mutants: list,
    *,
    processes_n: int = 2,
    limit: float = DEFAULT_LIMIT,
    on_result: Optional[Callable[[Mutant, dict], None]] = None,
) -> dict:
    """{mutant id: result} for every mutant: its status (checks.mutation.classify), the
    failing checks and what explains each, its seconds."""
    jobs: queue.Queue = queue.Queue()
    for n, m in enumerate(mutants):
        jobs.put((n, m))
    results: dict = {}
    lock = threading.Lock()
    contracts = {w: contract_checks(w) for w in {m.workshop for m in mutants}}
    folder = Path(tempfile.mkdtemp(prefix="mutants-"))

    def slot(k: int) -> None:
        worker: Optional[ChannelProcess] = None
        own = folder / f"slot{k}"
        own.mkdir()
        while True:
            try:
                n, m = jobs.get_nowait()
            except queue.Empty:
                break
            if worker is None or worker.done >= RESTART_EVERY:
                if worker is not None:
                    worker.stop(kill=False)
                worker = _worker(folder / f"slot{k}.stderr")
            raw = _run_one(worker, n, m, own, limit)
            worker.done += 1
            if raw["status"] is None:
                result = classify.classify(raw["records"], contracts[m.workshop])
                result["records"] = raw["records"]  # dropped from the report: see report.build
            else:
                worker.stop(kill=True)
                worker = None
                result = {"status": raw["status"], "misattributed": False, "failing": []}
                if raw.get("running"):
                    result["running"] = raw["running"]
            result["seconds"] = raw["seconds"]
            with lock:
                results[m.id] = result
                if on_result:
                    on_result(m, result)
        if worker is not None:
            worker.stop(kill=False)

    threads = [threading.Thread(target=slot, args=(k,)) for k in range(max(1, processes_n))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
