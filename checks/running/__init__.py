"""Running: the checks in processes of their own, fed and watched from the app.

    worker.py          ``python -m checks.running.worker``: one job of checks (or a benchmark)
    child.py           the parent's side of a worker: time limits, crashes, cancellation
    processes.py       a worker's own process group, and killing it (POSIX or Windows)
    events.py          the typed messages a worker sends, one JSON line each
    warmup.py          what a worker pays before a save arrives (imports, witness, CUDA)
    pool.py            warm workers kept ready; checks sharded over several of them
    variants.py        the kernel variants a run compiled, and waiting for the compile pool
    compile_pool.py    compile workers: every variant of a save compiled once, in parallel
    compile_worker.py  ``python -m checks.running.compile_worker``: one such process

The app's side (child, pool, compile_pool, processes, events) is standard library only: the app
never imports torch or triton.
"""

from checks.running import events
from checks.running.child import ChildRun, Worker, preload_for, run_benchmark
from checks.running.compile_pool import CompilePool, SettingError, compile_workers, env_count
from checks.running.pool import ShardedRun, WorkerPool, pool_size, split

__all__ = [
    "ChildRun",
    "CompilePool",
    "SettingError",
    "ShardedRun",
    "Worker",
    "WorkerPool",
    "compile_workers",
    "env_count",
    "events",
    "pool_size",
    "preload_for",
    "run_benchmark",
    "split",
]
