"""The child process that runs one job of checks: ``python -m checks.running.worker``.

Protocol (see checks/running/worker_process.py and child.py for the parent side):

* The parent passes a record channel: ``--record-fd N`` (a pipe, POSIX) or
  ``--record-file PATH`` (a file the parent tails, Windows).  Only this process
  writes JSON lines there; the learner's prints go to stdout, which the parent
  keeps only as a tail for crash reports and never parses.
* With ``--preload`` the worker imports torch and triton first (and initialises
  CUDA and launches a tiny kernel when there is a GPU: see checks/running/warmup.py), then
  says ``{"type": "ready"}``: a warm worker.  With ``--warm WORKSHOP`` it also imports
  that workshop's checks and lists them in the ready event (``cases``: id, label,
  why, section, cost, in run order), so the parent can split them between workers.
* With ``--stack-fd N`` (POSIX) the worker writes the Python stack of every thread to
  the pipe N when it receives SIGUSR1; with ``--stack-file PATH`` (elsewhere) to PATH
  shortly before the job's ``timeout``: the parent asks for it before it stops a run
  that timed out.
* It reads ONE job from stdin as a JSON line: {"workshop", "file", "interpret",
  "only", "timeout"}; any other key is passed to ``engine.run_checks`` when it
  accepts that keyword (e.g. ``seed``) and ignored otherwise.  It replaces stdin
  with an empty stream (so ``input()`` in the exercise cannot hang), then streams
  ``plan``, ``loaded``, ``begin`` and ``record`` events and ends with ``done``.
  Every event carries ``t`` (the sender's wall clock, for transfer times); a
  ``record`` event also carries ``compile_s`` and ``compiles``: the seconds Triton
  spent compiling during that check and how many kernels it compiled.
* A job ``{"benchmark": [ARG, ...]}`` instead runs ``python -m checks.benchmark ARG ...``
  in this warm process (its output goes to stdout, its JSON where its arguments say)
  and ends with ``done`` carrying the exit code: the app's timings start without a new
  process's imports and CUDA start.  ``--record-variants PATH`` among the arguments is
  the worker's own: it keeps the kernel variants the benchmark compiled in PATH.  With
  ``"discover": FOLDER`` (the app's) it first finds the variants the benchmark will need
  and hands them to the app's compile pool through FOLDER (checks/running/discovery.py).
* It exits right after the job, so no state leaks from one run into the next.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import inspect
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from checks import interpreter
from checks.judging import launches
from checks.running import events

PROTOCOL_KEYS = {"workshop", "file", "interpret", "only", "timeout", "predicted", "benchmark", "discover"}


def _channel(args):
    if args.record_fd is not None:
        f = os.fdopen(args.record_fd, "w", encoding="utf-8", buffering=1)
    else:
        f = open(args.record_file, "a", encoding="utf-8", buffering=1)

    lock = threading.Lock()  # a learner's thread may launch while the main thread reports

    def send(event) -> None:
        """Write one typed event (checks.running.events) as a JSON line, stamped with the time."""
        message = event.to_wire()
        message["t"] = time.time()
        line = json.dumps(message, default=str) + "\n"
        with lock:
            f.write(line)
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


# Listeners that stay registered for the life of the process (it ends with os._exit).
_for_life = contextlib.ExitStack()


class _CompileClock(launches.Listener):
    """Seconds Triton spends compiling (cache misses), through its compilation
    listener (checks.judging.launches sets it)."""

    def __init__(self) -> None:
        self.seconds, self.count, self.hits = 0.0, 0, 0

    def compiled(self, **info: Any) -> None:
        if info.get("cache_hit"):
            self.hits += 1
            return
        self.count += 1
        try:
            self.seconds += info["times"].total / 1e6
        except (AttributeError, KeyError):
            pass

    def take(self) -> dict:
        out = {"compile_s": round(self.seconds, 4), "compiles": self.count, "cache_hits": self.hits}
        self.seconds, self.count, self.hits = 0.0, 0, 0
        return out


def _grid_of(launch: launches.Launch) -> Optional[list]:
    """A launch's grid as a list of ints (a callable grid is asked with the launch's
    keywords, as Triton asks it); None when it cannot be read."""
    grid = launch.grid
    try:
        if callable(grid):
            grid = grid(dict(launch.kwargs))
        if isinstance(grid, int):
            grid = (grid,)
        return [int(g) for g in grid]
    except Exception:  # noqa: BLE001 - a grid we cannot read is left out, never an error
        return None


class _LaunchTally(launches.Listener):
    """Counts the launches of each kernel during the running check (the outermost ones:
    an autotuner's inner runs are not counted twice) and tells the parent which kernel
    is launching and how often so far, so a time limit can say what was running."""

    EVERY_S = 0.5

    def __init__(self, send) -> None:
        self.send = send
        self.counts: dict = {}
        self.total = 0
        self.sent_at = 0.0

    def reset(self) -> None:
        self.counts, self.total, self.sent_at = {}, 0, 0.0

    def around_launch(self, launch: launches.Launch, proceed):
        if launch.depth == 0:
            name = launch.name
            first = name not in self.counts
            self.counts[name] = self.counts.get(name, 0) + 1
            self.total += 1
            now = time.monotonic()
            if first or now - self.sent_at >= self.EVERY_S:
                self.sent_at = now
                try:
                    self.send(
                        events.Launching(
                            kernel=name, count=self.counts[name], total=self.total, grid=_grid_of(launch)
                        )
                    )
                except (OSError, ValueError):
                    pass  # the parent is gone: the launch goes on
        return proceed()


def _stack_dump(path, timeout, fd=None) -> None:
    """Arrange for the stack of every thread to be written on request: to the pipe ``fd``
    (POSIX, on SIGUSR1) or to the file ``path``."""
    if fd is not None and hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=fd, all_threads=True, chain=False)
        return
    if not path:
        return
    f = open(path, "w", encoding="utf-8")  # kept open for the life of the process
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=f, all_threads=True, chain=False)
    elif timeout:
        faulthandler.dump_traceback_later(max(0.5, float(timeout) - 0.5), file=f)


def _record_variants(job: dict) -> Any:
    """Register :class:`checks.running.variants.Recorder` to hear Triton's JIT cache hook:
    it lists the variants of the learner's kernels each check compiled, and waits for the
    ones the compile pool is compiling (``job["predicted"]``: folder and identities)."""
    from checks.running import variants

    predicted = job.get("predicted") or {}
    recorder = variants.Recorder(
        job["file"],
        predicted.get("ids") or (),
        predicted.get("folder"),
        wait_limit=float(predicted.get("wait_limit", 60.0)),
    )
    _for_life.enter_context(launches.listening(recorder))
    return recorder


def _option(argv: list, name: str) -> tuple[list, Optional[str]]:
    """``argv`` without ``name VALUE`` (or ``name=VALUE``), and VALUE (None: not there)."""
    rest, value, i = [], None, 0
    while i < len(argv):
        arg = argv[i]
        if arg == name and i + 1 < len(argv):
            value, i = argv[i + 1], i + 2
            continue
        if arg.startswith(name + "="):
            value = arg[len(name) + 1 :]
        else:
            rest.append(arg)
        i += 1
    return rest, value


@contextlib.contextmanager
def recording_benchmark_variants(argv: list, target: Optional[list], discover: Any = None) -> Iterator[list]:
    """The benchmark's arguments without ``--record-variants PATH``; with it, the variants
    of the learner's kernels (``--file``) the benchmark compiles are heard as the checks'
    are (:class:`checks.running.variants.Recorder`) and kept in PATH with the compile
    ``target`` when it ends, for the compile pool to compile after the next save (see
    checks/running/compile_ahead.py).  A benchmark that compiled none leaves PATH as it was.
    ``discover``: the app's folder for the variants the benchmark will need, found before
    it starts and compiled by the app's compile pool (checks/running/discovery.py)."""
    from checks.running import compile_ahead

    rest, to = _option(argv, compile_ahead.RECORD_VARIANTS)
    _, learner = _option(rest, "--file")
    _, op = _option(rest, "--op")
    if not to or not learner:
        yield rest
        return
    from checks.running import discovery, variants

    offered = discovery.offer(rest, discover, learner, to, target) if discover else None
    recorder = offered.recorder(learner) if offered is not None else variants.Recorder(learner)
    with launches.listening(recorder):
        yield rest
    if offered is not None:
        print(offered.line(), file=sys.stderr)
    found = recorder.take()["variants"]
    if found:
        try:
            compile_ahead.write_variants(Path(to), op or "", target, found)
        except OSError as e:
            print(f"benchmark variants not kept: {e}", file=sys.stderr)


def _benchmark(argv: list) -> int:
    """``python -m checks.benchmark`` with ``argv``, here; its exit code."""
    try:
        from checks.benchmark.cli import main as benchmark_main

        return int(benchmark_main(argv) or 0)
    except SystemExit as e:  # argparse's own exits
        return e.code if isinstance(e.code, int) else 1
    except Exception:  # noqa: BLE001 - reported as the benchmark's own crash, with its trace
        import traceback

        traceback.print_exc()
        return 1


def _accepted(fn, options: dict) -> dict:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return dict(options)
    return {k: v for k, v in options.items() if k in params}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m checks.running.worker")
    p.add_argument("--record-fd", type=int)
    p.add_argument("--record-file")
    p.add_argument("--preload", choices=("none", "cpu", "interpret", "gpu"), default="none")
    p.add_argument("--warm", default="", help="workshop whose checks to import while warming up")
    p.add_argument("--stack-file", default="")
    p.add_argument("--stack-fd", type=int)
    args = p.parse_args(argv)
    send = _channel(args)
    faulthandler.enable()  # a segfault prints the Python stack to stderr
    if hasattr(signal, "SIGUSR1"):
        _stack_dump(args.stack_file, None, args.stack_fd)

    if args.preload == "interpret":
        interpreter.select(True)  # before triton is imported; a job may not say otherwise
    from checks.judging import engine

    ready: dict = {"pid": os.getpid()}
    clock = None
    if args.preload in ("interpret", "gpu"):
        import torch
        import triton

        clock = _for_life.enter_context(launches.listening(_CompileClock()))
        try:
            from checks.running import warmup

            device = "cuda" if args.preload == "gpu" and torch.cuda.is_available() else "cpu"
            warmup.warm(device, interpret=args.preload == "interpret")  # checks imported below
            if device == "cuda":  # what the compile workers compile for
                target = triton.runtime.driver.active.get_current_target()
                ready["target"] = [target.backend, target.arch, target.warp_size]
        except Exception as e:  # noqa: BLE001 - a slower first check, not a failure
            ready["warm_error"] = f"{type(e).__name__}: {e}"
        clock.take()
    if args.warm:
        try:
            ready["cases"] = [
                {"id": c.id, "label": c.label, "why": c.why, "section": c.section, "cost": c.cost}
                for c in engine.cases_for(args.warm)
            ]
        except Exception as e:  # noqa: BLE001 - the job reports it properly
            ready["warm_error"] = f"{type(e).__name__}: {e}"
    send(events.Ready(**ready))

    line = sys.stdin.readline()
    if not line:
        return 0  # the parent closed the pipe: a warm worker never used
    job = json.loads(line)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdin = open(os.devnull, encoding="utf-8")
    if not hasattr(signal, "SIGUSR1"):
        _stack_dump(args.stack_file, job.get("timeout"))

    if isinstance(job.get("benchmark"), list):
        bench = [str(a) for a in job["benchmark"]]
        with recording_benchmark_variants(bench, ready.get("target"), job.get("discover")) as argv:
            code = _benchmark(argv)
        send(events.Done(code=code))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    interpret = bool(job.get("interpret")) or args.preload == "interpret"
    if args.preload != "interpret":
        interpreter.select(interpret)  # before the exercise is imported
    if args.preload != "gpu":
        _limit_memory()

    from checks.judging import engine
    from checks.judging.records import Record

    recorder = None
    if args.preload == "gpu" and not interpret:
        recorder = _record_variants(job)

    def on_plan(cases):
        send(
            events.Plan(
                cases=[{"id": c.id, "label": c.label, "why": c.why, "section": c.section} for c in cases]
            )
        )

    tally = _for_life.enter_context(launches.listening(_LaunchTally(send)))

    def on_begin(case):
        if clock is not None:
            clock.take()
        tally.reset()
        send(events.Begin(id=case.id))

    def on_record(rec: Record):
        extra = recorder.take() if recorder is not None else {}
        send(events.RecordEvent(record=rec, **(clock.take() if clock else {}), **extra))

    def on_loaded(content_hash: str):
        send(events.Loaded(content_hash=content_hash))

    extra = _accepted(engine.run_checks, {k: v for k, v in job.items() if k not in PROTOCOL_KEYS})
    try:
        engine.run_checks(
            job["workshop"],
            job["file"],
            interpret=interpret,
            only=job.get("only"),
            on_plan=on_plan,
            on_begin=on_begin,
            on_record=on_record,
            on_loaded=on_loaded,
            **extra,
        )
    except KeyError as e:
        send(events.Usage(message=str(e).strip("'\"")))
    send(events.Done())
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter shutdown: atexit hooks or threads left by the exercise must not
    # keep the process alive (the parent also kills the whole process group).
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
