"""``python -m checks.repair.worker``: a warm process that runs a workshop's checks on one
candidate file after another (torch and triton imported once), one check at a time in the
order it is given, stopping at the first that does not pass.

Protocol: one JSON job a line on stdin, ``{"n": N, "workshop": ID, "file": PATH, "checks":
[ID, ...], "seed": S, "stop_first": true, "gpu_compile": false}`` (``gpu_compile``: an
interpreted run also compiles the kernels it launched for sm_90, as the checks do); on the
channel the parent passes (``--channel-fd``), ``{"ready": true}`` once, then ``{"n": N,
"statuses": [[ID, STATUS, MESSAGE], ...], "kernels": {ID: [NAME, ...]}}`` for each job: the
checks run, in order (the last is the first that did not pass, when one did not, with its
message), and for each check the names of the file's kernels it launched, over all its
calls; and ``"details": {ID: {...}}``, each check's record details where it did not pass
(what it saw: checks.judging.tensors.mismatch_report's facts for wrong values).
The candidate's own prints go to stderr.  End of stdin ends the worker.

A job ``{"n": N, "workshop": ID, "mutants_of": [[LABEL, PATH], ...]}`` is answered with
``{"n": N, "mutants": [{"file": LABEL, "id", "line", "operator", "before", "after",
"source"}, ...]}``: every mutant of each file (checks.mutation.generate), for the reference
match (checks.repair.reference_match).  They are made here, in a child process: the
engine's command line imports the search, and it never imports mutation testing
(pyproject.toml's import contracts).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from checks import interpreter

PASSING = ("pass", "skipped")
GPU_COMPILE = "KERNEL_COURSE_GPU_COMPILE"  # checks.judging.gpu_compile.ENV
# after these, every later CUDA call of the process fails: the candidate's fault, not the next one's
POISONED = re.compile(
    r"CUDA error|illegal memory access|device-side assert|cudaError|unspecified launch failure", re.I
)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m checks.repair.worker")
    p.add_argument("--channel-fd", type=int, required=True)
    p.add_argument("--interpret", action="store_true")
    p.add_argument("--path", action="append", default=[], help="a folder the learner's file imports from")
    args = p.parse_args(argv)
    interpreter.select(args.interpret)  # before anything imports triton
    channel = os.fdopen(args.channel_fd, "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # a print of the candidate can never be read as a message
    for folder in args.path:
        if folder not in sys.path:
            sys.path.append(folder)

    import torch

    # several workers share the cores: one thread each, or torch's pools thrash each other
    torch.set_num_threads(1)

    from checks.judging.engine import run_checks, use_interpreter

    if args.interpret:
        use_interpreter()
    gpu = not args.interpret and torch.cuda.is_available()
    if args.interpret or gpu:
        import triton  # noqa: F401 - imported once for every candidate
    if gpu:  # the CUDA context before "ready": the first candidate's time goes to its checks
        torch.zeros(1, device="cuda").add_(1)
        torch.cuda.synchronize()
    try:  # the launch seams, so the first check's launches are heard too
        import checks.judging.launches  # noqa: F401
    except ImportError:
        pass

    def send(message: dict) -> None:
        channel.write(json.dumps(message, default=str) + "\n")
        channel.flush()

    _die_with_parent()
    send({"ready": True})
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        if "mutants_of" in job:
            try:
                mutants = _mutants(job["workshop"], job["mutants_of"])
            except (OSError, SyntaxError, ValueError):  # a reference that cannot be read: no mutant
                mutants = []
            send({"n": job["n"], "mutants": mutants})
            continue
        # Compiling each candidate's kernels for sm_90 would cost more than running them:
        # only the final verification of a found change does (the checks' gpu-compile rule).
        os.environ[GPU_COMPILE] = "1" if job.get("gpu_compile") else "0"
        statuses: list = []
        kernels: dict = {}
        details: dict = {}
        for check in job["checks"]:
            seen = _Launched(job["file"])
            try:
                with _listening(seen):
                    records = run_checks(
                        job["workshop"],
                        job["file"],
                        interpret=args.interpret,
                        only=[check],
                        seed=job.get("seed"),
                    )
                bad = [r for r in records if str(r.status) not in PASSING]
                status = str(bad[0].status) if bad else ("pass" if records else "error")
                message = bad[0].message[:2000] if bad else ""
                if bad:
                    details[check] = bad[0].details
            except Exception as e:  # noqa: BLE001 - a candidate that breaks the engine fails its check
                status, message = "error", f"{type(e).__name__}: {e}"[:2000]
            statuses.append([check, status, message])
            kernels[check] = sorted(seen.names)
            if status not in PASSING and job.get("stop_first", True):
                break
        send({"n": job["n"], "statuses": statuses, "kernels": kernels, "details": details})
        if any(POISONED.search(m) for _, _, m in statuses):
            os._exit(0)  # a CUDA error leaves the context unusable: the search starts a fresh worker
    return 0


def _mutants(workshop: str, files: list) -> list:
    from checks.mutation.generate import all_mutants

    out: list = []
    for label, path in files:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        for m in all_mutants(workshop, source):
            fields = ("id", "line", "operator", "before", "after", "source")
            out.append({"file": label, **{k: getattr(m, k) for k in fields}})
    return out


def _die_with_parent() -> None:
    """Exit when the search that started this worker is gone (killed with its process group,
    which this worker is not in: a worker is killed alone when a candidate hangs)."""
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


class _Launched:
    """The names of the candidate file's kernels launched while it listens (every call
    of a check, not only its last)."""

    launch_kinds = frozenset(("jit", "interpreted", "autotuner", "heuristics", "handle"))

    def __init__(self, file: str):
        self.file = os.path.realpath(file)
        self.names: set = set()

    def around_launch(self, launch, proceed):
        if os.path.realpath(launch.file) == self.file:
            self.names.add(launch.name)
        return proceed()


def _listening(listener: _Launched):
    """Listen to launches in GPU workshops (whose checks load checks.judging.launches)."""
    import contextlib

    launches = sys.modules.get("checks.judging.launches")
    return launches.listening(listener) if launches is not None else contextlib.nullcontext()


if __name__ == "__main__":
    sys.exit(main())
