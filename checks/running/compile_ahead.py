"""Compiling ahead for a workshop's runs: the kernel variants the last run needed,
handed to the compile pool (checks/running/compile_pool.py) the moment a save lands.

Two lists are kept in the state folder, each with the GPU's compile target, so the first
save after the app starts is compiled ahead too: ``variants/<workshop>.json``, what the
last finished run of the checks compiled, and ``variants/<workshop>-benchmark.json``, what
the app's last benchmark of the learner's file compiled (other warps, block sizes and
shapes; written by the benchmark's worker, see checks/running/worker.py).  A save hands
the pool the checks' variants first (the verdict comes first), then the benchmark's, so
the timings of a passing run find their kernels compiled.
Standard library only: the app imports this module.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Optional

from checks import workspace as ws
from checks.json_files import write_json_atomic
from checks.running.compile_pool import CompilePool
from checks.running.variants import identity

RECORD_VARIANTS = "--record-variants"  # the benchmark's argument its worker takes out


def variants_file(workspace: Path, workshop_id: str, benchmark: bool = False) -> Path:
    """Where the variants of a workshop's checks (or of its benchmark) are kept."""
    name = f"{workshop_id}-benchmark.json" if benchmark else f"{workshop_id}.json"
    return ws.state_dir(workspace) / "variants" / name


def benchmark_variants_file(workspace: Path, workshop_id: str) -> Path:
    """Where the app's benchmark of the workshop keeps the variants it compiled."""
    return variants_file(workspace, workshop_id, benchmark=True)


def read_variants(path: Path) -> tuple[list, Optional[list]]:
    """(variants, compile target) kept in ``path``; ([], None) when it is absent or not
    a list of variants."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], None
    found = data.get("variants") if isinstance(data, dict) else None
    if not isinstance(found, list) or not all(
        isinstance(v, dict) and isinstance(v.get("qualname"), str) and isinstance(v.get("data"), str)
        for v in found
    ):
        return [], None
    target = data.get("target")
    return found, (target if isinstance(target, list) and len(target) == 3 else None)


def write_variants(path: Path, workshop_id: str, target: Optional[list], found: list) -> list:
    """Keep ``found`` ({"qualname", "data", ...}) in ``path``, each variant once, in the
    order first compiled; the variants written.  Raises OSError."""
    kept, seen = [], set()
    for v in found:
        ident = identity(v["qualname"], v["data"])
        if ident not in seen:
            seen.add(ident)
            kept.append({"qualname": v["qualname"], "data": v["data"]})
    write_json_atomic(Path(path), {"workshop": workshop_id, "target": target, "variants": kept})
    return kept


class CompileAhead:
    """The compile pool of one workshop's runs (none when ``compilers`` is 0) and the
    variants it compiles: those of the last finished run, in check order, then those of
    the last benchmark."""

    def __init__(
        self,
        workshop_id: str,
        path: Path,
        workspace: Path,
        *,
        compilers: int,
        timeout: float,
        compile_pool: Optional[CompilePool] = None,
    ) -> None:
        self.workshop_id = workshop_id
        self.path = Path(path)
        self.workspace = Path(workspace)
        self.compilers = compilers
        self.timeout = timeout
        self.own_pool = compile_pool is None and compilers > 0
        self.pool: Optional[CompilePool] = compile_pool
        if self.own_pool:
            self.pool = CompilePool(compilers)
        self.target: Optional[list] = None  # the GPU's compile target: backend, arch, warp size
        self.variants: list = self.load()
        self.last: dict = {}  # the compile pool's summary of the last run
        self.planned: list = []  # the variants handed to the pool by the last start()
        self.left_folder: Optional[str] = None  # markers of a job left compiling for the benchmark
        self.benchmark_job: Any = None  # the variants a benchmark discovered, being compiled

    def file(self, benchmark: bool = False) -> Path:
        return variants_file(self.workspace, self.workshop_id, benchmark)

    def load(self) -> list:
        if not self.compilers:
            return []
        found, target = read_variants(self.file())
        if target is not None:
            self.target = target
        return found

    def benchmark_variants(self) -> list:
        """The variants the last benchmark compiled, when they were compiled for this
        GPU (the benchmark's worker rewrites the file, so it is read at every save)."""
        if not self.compilers:
            return []
        found, target = read_variants(self.file(benchmark=True))
        return found if target is not None and target == self.target else []

    def keep(self, found: list) -> None:
        """Remember the variants a finished run compiled (for the next save)."""
        if not found or not self.compilers:
            return  # a run that compiled nothing (a load error) predicts nothing new
        kept = [{"qualname": v["qualname"], "data": v["data"]} for v in found]
        if kept == self.variants:
            return  # a kernel edit that kept every variant: the file already says so
        self.variants = kept
        try:
            write_variants(self.file(), self.workshop_id, self.target, kept)
        except OSError:
            pass  # only the first save after a restart is slower

    def start(self, digest: str) -> tuple[Any, Optional[dict]]:
        """Hand the checks' then the benchmark's variants to the compile pool: (the job,
        the ``predicted`` option for the check worker, which waits only for the checks'
        variants), or (None, None) when there is nothing to compile."""
        self._drop_left()
        if self.pool is None or not self.target:
            return None, None
        self.planned = list(self.variants) + self.benchmark_variants()
        if not self.planned:
            return None, None
        folder = tempfile.mkdtemp(prefix="kernel-course-variants-")
        job = self.pool.submit(self.path, digest, self.target, self.planned, folder)
        checks = {identity(v["qualname"], v["data"]) for v in self.variants}
        ids = [i for i in job.ids if i in checks]
        return job, {"folder": folder, "ids": ids, "wait_limit": min(60.0, self.timeout)}

    def done(self, job: Any, predicted: Optional[dict], current: bool, benchmark_next: bool = False) -> None:
        """A run is over: keep the pool's summary (of a current run), stop what is left
        -- unless the benchmark follows (``benchmark_next``): then the pool goes on with
        the benchmark's variants until the next save."""
        if job is None:
            if current:
                self.last = {}
            return
        assert predicted is not None  # start() gives a job with its folder
        if current:
            self.last = dict(job.summary(), benchmark_variants=len(job.ids) - len(predicted["ids"]))
        if job.finished_at is None and self.pool is not None and self.pool.job is job:
            if current and benchmark_next:
                self.left_folder = predicted["folder"]
                return
            self.pool.cancel()  # what is left was never asked for
        shutil.rmtree(predicted["folder"], ignore_errors=True)

    def offers_benchmark(self) -> bool:
        """Whether a benchmark may hand the variants it discovers to the pool: there is
        one, with workers, and the GPU's compile target is known."""
        return self.pool is not None and bool(self.compilers) and bool(self.target)

    def compile_for_benchmark(self, path: str, digest: str, found: list, folder: str) -> list:
        """Hand the pool the variants a benchmark discovered (its markers go to ``folder``):
        the identities it compiles, in order ([]: none).  The job left compiling for the
        benchmark (those of its last list) is replaced: these are what it needs now."""
        if not self.offers_benchmark() or not found:
            return []
        assert self.pool is not None and self.target  # offers_benchmark
        job = self.pool.submit(Path(path), digest, self.target, found, folder)
        self._drop_left()
        self.benchmark_job = job
        return list(job.ids)

    def benchmark_ended(self) -> None:
        """The benchmark is over: what the pool has not compiled for it is not needed."""
        job, self.benchmark_job = self.benchmark_job, None
        if job is not None and job.finished_at is None and self.pool is not None:
            self.pool.cancel(job)  # only while it is the pool's job: a newer save's stays

    def _drop_left(self) -> None:
        folder, self.left_folder = self.left_folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def cancel(self) -> None:
        """A newer save: what the pool compiles is for the older content."""
        if self.pool is not None:
            self.pool.cancel()
        self._drop_left()

    def warm(self) -> None:
        if self.pool is not None and self.target:
            self.pool.warm(self.target)

    def close(self) -> None:
        if self.own_pool and self.pool is not None:
            self.pool.close()
        self._drop_left()
