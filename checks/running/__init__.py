"""Running: the checks in processes of their own, fed and watched from the app.

    session.py         a workshop's runs on one file, fed saves: generations, stale-run
                       cancellation, warm workers, compile-ahead, shards (what the app drives)
    run_records.py     one run's records by check id, in plan order (read by all)
    events.py          the typed events of a run, from the worker's JSON lines to the screen
    worker.py          ``python -m checks.running.worker``: one job of checks (or a benchmark)
    child.py           the parent's side of a run: time limits, crashes, cancellation
    worker_process.py  a started worker process: its record pipe, stack dumps, output tails
    channel.py         a warm process fed JSON lines (the mutation and repair workers)
    processes.py       a worker's own process group, and killing it (POSIX or Windows)
    warmup.py          what a worker pays before a save arrives (imports, witness, CUDA)
    pool.py            warm workers kept ready; checks sharded over several of them
    variants.py        the kernel variants a run compiled, and waiting for the compile pool
    compile_ahead.py   the last run's variants (then the last benchmark's) handed to the
                       compile pool after a save
    compile_pool.py    compile workers: every variant of a save compiled once, in parallel
    compile_worker.py  ``python -m checks.running.compile_worker``: one such process
    handoff.py         the folder through which a benchmark hands the variants it will
                       need to the compile pool (the app's side)
    discovery.py       the benchmark worker's side: its planned calls run once with
                       Triton's compiles skipped, the variants they ask for offered

This module is the room's front door: the app imports the running room only from here.
The app's side (session, child, pool, compile_pool, handoff, processes, events) is standard
library only: the app never imports torch or triton.
"""

from checks.running import events, processes
from checks.running.child import ChildRun, Worker, preload_for, run_benchmark
from checks.running.compile_ahead import RECORD_VARIANTS, benchmark_variants_file
from checks.running.compile_pool import CompilePool, SettingError, compile_workers, env_count
from checks.running.events import Begin, End, Event, Loaded, Plan, RecordEvent, RunOutcome
from checks.running.handoff import SAID as DISCOVERY_LINE, said_in as discovery_said
from checks.running.pool import ShardedRun, WorkerPool, pool_size, split
from checks.running.run_records import RunRecords
from checks.running.session import RunSession, progress_status

__all__ = [
    "DISCOVERY_LINE",
    "RECORD_VARIANTS",
    "Begin",
    "ChildRun",
    "CompilePool",
    "End",
    "Event",
    "Loaded",
    "Plan",
    "RecordEvent",
    "RunOutcome",
    "RunRecords",
    "RunSession",
    "SettingError",
    "ShardedRun",
    "Worker",
    "WorkerPool",
    "benchmark_variants_file",
    "compile_workers",
    "discovery_said",
    "env_count",
    "events",
    "processes",
    "pool_size",
    "preload_for",
    "progress_status",
    "run_benchmark",
    "split",
]
