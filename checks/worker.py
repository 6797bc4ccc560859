"""The child process that runs one job of checks: ``python -m checks.worker``.

Protocol (see checks/child.py for the parent side):

* The parent passes a record channel: ``--record-fd N`` (a pipe, POSIX) or
  ``--record-file PATH`` (a file the parent tails, Windows).  Only this process
  writes JSON lines there; the learner's prints go to stdout, which the parent
  keeps only as a tail for crash reports and never parses.
* With ``--preload`` the worker imports torch and triton first (and initialises
  CUDA when there is a GPU), then says ``{"type": "ready"}``: a warm worker.
* It reads ONE job from stdin as a JSON line: {"workshop", "file", "interpret", "only"},
  replaces stdin with an empty stream (so ``input()`` in the exercise cannot hang),
  then streams ``plan``, ``begin`` and ``record`` events and ends with ``done``.
* It exits right after the job, so no state leaks from one run into the next.
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys


def _channel(args):
    if args.record_fd is not None:
        f = os.fdopen(args.record_fd, "w", encoding="utf-8", buffering=1)
    else:
        f = open(args.record_file, "a", encoding="utf-8", buffering=1)

    def send(event: dict) -> None:
        f.write(json.dumps(event, default=str) + "\n")
        f.flush()
    return send


def _limit_memory() -> None:
    """Cap the address space of CPU-only runs so a runaway allocation becomes a
    MemoryError instead of taking the machine down.  CUDA reserves huge virtual
    ranges, so GPU runs are left alone."""
    try:
        import resource
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        cap = int(total * 0.6)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or soft > cap:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, ValueError, OSError, AttributeError):
        pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m checks.worker")
    p.add_argument("--record-fd", type=int)
    p.add_argument("--record-file")
    p.add_argument("--preload", choices=("none", "cpu", "interpret", "gpu"), default="none")
    args = p.parse_args(argv)
    send = _channel(args)
    faulthandler.enable()           # a segfault prints the Python stack to stderr

    if args.preload == "interpret":
        os.environ["TRITON_INTERPRET"] = "1"
    from checks import engine  # noqa: F401 - part of being warm
    if args.preload in ("interpret", "gpu"):
        import torch
        import triton  # noqa: F401
        if args.preload == "gpu" and torch.cuda.is_available():
            torch.zeros(1, device="cuda")      # create the CUDA context now, not on the first check
    send({"type": "ready", "pid": os.getpid()})

    line = sys.stdin.readline()
    if not line:
        return 0                    # the parent closed the pipe: a warm worker never used
    job = json.loads(line)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdin = open(os.devnull, encoding="utf-8")

    if job.get("interpret"):
        os.environ["TRITON_INTERPRET"] = "1"
    if args.preload != "gpu":
        _limit_memory()

    from checks import engine
    from checks.records import Record

    def on_plan(cases):
        send({"type": "plan", "cases": [{"id": c.id, "label": c.label, "why": c.why,
                                          "section": c.section} for c in cases]})

    def on_begin(case):
        send({"type": "begin", "id": case.id})

    def on_record(rec: Record):
        send({"type": "record", "record": rec.to_dict()})

    def on_loaded(content_hash: str):
        send({"type": "loaded", "content_hash": content_hash})

    try:
        engine.run_checks(job["workshop"], job["file"], interpret=bool(job.get("interpret")),
                          only=job.get("only"), on_plan=on_plan, on_begin=on_begin,
                          on_record=on_record, on_loaded=on_loaded)
    except KeyError as e:
        send({"type": "usage", "message": str(e).strip("'\"")})
    send({"type": "done"})
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter shutdown: atexit hooks or threads left by the exercise must not
    # keep the process alive (the parent also kills the whole process group).
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
