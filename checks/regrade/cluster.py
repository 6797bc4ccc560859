"""The Dask cluster a regrade runs on, and the task each worker runs.

* A machine with GPUs: an embedded ``LocalCluster`` with one single-threaded worker per
  GPU, each holding that GPU as a resource (``{"GPU": 1}``); a GPU workshop's task asks
  for ``{"GPU": 1}``, so one submission per GPU at a time, and its check process gets
  ``CUDA_VISIBLE_DEVICES`` of its worker's GPU.  ``--per-gpu N`` starts N such workers
  per GPU: N submissions share one GPU (its memory is large and a submission's time is
  mostly compiling on the CPU).
* A machine without one: ``--workers N`` single-threaded CPU workers; the check
  processes run the GPU workshops in Triton's interpreter.
* ``--scheduler ADDRESS``: a running cluster (dask-jobqueue on Slurm or PBS, or
  ``dask scheduler`` and ``dask worker`` by hand).  Workers started with ``--resources
  GPU=1`` hold a GPU each and keep the CUDA_VISIBLE_DEVICES their batch system gave them;
  with no such worker, every task runs on the CPU.

A worker that dies while it runs a task (the task's process killed it, memory, a lost
node) makes Dask raise at once (``allowed-failures`` 0 on the embedded scheduler); the
driver retries the task once and then reports it lost (cli.py).  Dask hands a worker
more tasks than it has threads when it can (even tasks that wait for its GPU), and a
worker's death fails every task handed to it; so the driver keeps no more tasks in flight
than the cluster has threads (:meth:`Plan.slots`): a submission that kills its worker
takes no other submission with it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Iterator, Optional

import dask
from distributed import Client, LocalCluster, get_worker

from checks.judging.records import plural
from checks.regrade import execution


@dataclass
class Plan:
    """How the tasks are spread: the kind of cluster, its workers, the GPUs."""

    kind: str  # "local-gpu", "local-cpu" or "scheduler"
    workers: int
    gpus: list = field(default_factory=list)  # device id of each worker, in worker order (local-gpu)
    gpu_workers: int = 0  # workers holding a GPU resource
    address: str = ""
    start_s: float = 0.0

    @property
    def gpu_of_worker(self) -> dict:
        """Worker name -> the device id its tasks' check processes see (local-gpu only;
        a scheduler's workers keep the CUDA_VISIBLE_DEVICES their batch system set)."""
        return {i: gpu for i, gpu in enumerate(self.gpus)} if self.kind == "local-gpu" else {}

    def resources_for(self, gpu_workshop: bool) -> Optional[dict]:
        return {"GPU": 1} if gpu_workshop and self.gpu_workers else None

    def describe(self) -> str:
        if self.kind == "local-gpu":
            distinct = sorted(set(self.gpus), key=self.gpus.index)
            per = len(self.gpus) // max(1, len(distinct))
            each = "one per GPU" if per == 1 else f"{per} per GPU"
            workers = plural(self.workers, "worker")
            return f"embedded Dask LocalCluster: {workers}, {each} ({', '.join(distinct)})"
        if self.kind == "local-cpu":
            return (
                f"embedded Dask LocalCluster: {plural(self.workers, 'CPU worker')} "
                "(GPU workshops in Triton's interpreter)"
            )
        return (
            f"Dask scheduler {self.address}: {plural(self.workers, 'worker')} now, "
            f"{self.gpu_workers} holding a GPU resource"
        )

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "workers": self.workers,
            "gpus": self.gpus,
            "gpu_workers": self.gpu_workers,
            "address": self.address,
            "start_s": round(self.start_s, 3),
            "description": self.describe(),
        }


def grade(job: dict, gpu_of_worker: dict) -> dict:
    """The task: grade one submission on this worker, on its GPU when it has one."""
    worker = get_worker()
    gpu = gpu_of_worker.get(worker.name)
    return execution.run_submission(
        job, gpu=None if gpu is None else str(gpu), worker=str(worker.name), scratch=worker.local_directory
    )


def _workers(client: Client) -> list:
    """Every worker's info (a newer Client returns only the first few unless asked)."""
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:  # an older distributed: it always returns them all
        info = client.scheduler_info()
    return list(info.get("workers", {}).values())


def slots(client: Client) -> int:
    """How many tasks may be in flight now: per worker, its GPUs when it holds a GPU
    resource (one submission per GPU), else its threads; at least 1."""
    try:
        workers = _workers(client)
    except Exception:  # noqa: BLE001 - the scheduler is unreachable: keep going one at a time
        return 1
    total = 0
    for w in workers:
        gpus = int((w.get("resources") or {}).get("GPU", 0))
        total += gpus if gpus >= 1 else int(w.get("nthreads", 1))
    return max(1, total)


def _gpu_resource_workers(client: Client) -> tuple:
    workers = _workers(client)
    return len(workers), sum(1 for w in workers if (w.get("resources") or {}).get("GPU", 0) >= 1)


@contextlib.contextmanager
def open_cluster(
    *, scheduler: str = "", gpus: list, cpu_workers: int, per_gpu: int = 1, say=print
) -> Iterator[tuple[Client, Plan]]:
    """(client, plan) for the run; the embedded cluster is closed afterwards."""
    started = time.monotonic()
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        if scheduler:
            client = Client(scheduler, timeout="60s")
            try:
                if not _workers(client):
                    say(f"waiting for a worker to join the scheduler at {scheduler} ...")
                    client.wait_for_workers(1)
                n, with_gpu = _gpu_resource_workers(client)
                plan = Plan("scheduler", n, gpu_workers=with_gpu, address=scheduler)
                plan.start_s = time.monotonic() - started
                yield client, plan
            finally:
                client.close()
            return
        if gpus:
            each = [g for _ in range(per_gpu) for g in gpus]  # worker i checks on GPU each[i]
            plan = Plan("local-gpu", len(each), gpus=each, gpu_workers=len(each))
            resources: Optional[dict] = {"GPU": 1}
        else:
            plan = Plan("local-cpu", cpu_workers)
            resources = None
        cluster = LocalCluster(
            n_workers=plan.workers,
            threads_per_worker=1,
            processes=True,
            resources=resources,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,  # a lost worker is reported by the driver, in its words
        )
        try:
            client = Client(cluster)
            try:
                plan.address = str(cluster.scheduler_address)
                plan.start_s = time.monotonic() - started
                yield client, plan
            finally:
                client.close()
        finally:
            cluster.close()


def stop_running(client: Client) -> None:
    """Stop the check processes every worker has running (an interrupted regrade)."""
    with contextlib.suppress(Exception):
        client.run(execution.stop_all)
