"""Compiling ahead for a workshop's runs: the kernel variants the last run needed,
handed to the compile pool (checks/running/compile_pool.py) the moment a save lands.

The variants are kept in the state folder (``variants/<workshop>.json``) with the GPU's
compile target, so the first save after the app starts is compiled ahead too.
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


class CompileAhead:
    """The compile pool of one workshop's runs (none when ``compilers`` is 0) and the
    variants it compiles: those of the last finished run, in check order."""

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

    def file(self) -> Path:
        return ws.state_dir(self.workspace) / "variants" / f"{self.workshop_id}.json"

    def load(self) -> list:
        if not self.compilers:
            return []
        try:
            data = json.loads(self.file().read_text(encoding="utf-8"))
            found = data.get("variants") if isinstance(data, dict) else None
        except (OSError, ValueError):
            return []
        if not isinstance(found, list) or not all(
            isinstance(v, dict) and isinstance(v.get("qualname"), str) and isinstance(v.get("data"), str)
            for v in found
        ):
            return []
        target = data.get("target")
        if isinstance(target, list) and len(target) == 3:
            self.target = target
        return found

    def keep(self, found: list) -> None:
        """Remember the variants a finished run compiled (for the next save)."""
        if not found or not self.compilers:
            return  # a run that compiled nothing (a load error) predicts nothing new
        kept = [{"qualname": v["qualname"], "data": v["data"]} for v in found]
        if kept == self.variants:
            return  # a kernel edit that kept every variant: the file already says so
        self.variants = kept
        try:
            write_json_atomic(
                self.file(), {"workshop": self.workshop_id, "target": self.target, "variants": self.variants}
            )
        except OSError:
            pass  # only the first save after a restart is slower

    def start(self, digest: str) -> tuple[Any, Optional[dict]]:
        """Hand the last run's variants to the compile pool: (the job, the ``predicted``
        option for the check worker), or (None, None) when there is nothing to compile."""
        if self.pool is None or not self.variants or not self.target:
            return None, None
        folder = tempfile.mkdtemp(prefix="kernel-course-variants-")
        job = self.pool.submit(self.path, digest, self.target, self.variants, folder)
        return job, {"folder": folder, "ids": job.ids, "wait_limit": min(60.0, self.timeout)}

    def done(self, job: Any, predicted: Optional[dict], current: bool) -> None:
        """A run is over: keep the pool's summary (of a current run), stop what is left."""
        if job is None:
            if current:
                self.last = {}
            return
        if current:
            self.last = job.summary()
        if job.finished_at is None and self.pool is not None and self.pool.job is job:
            self.pool.cancel()  # what is left was never asked for
        assert predicted is not None  # start() gives a job with its folder
        shutil.rmtree(predicted["folder"], ignore_errors=True)

    def cancel(self) -> None:
        """A newer save: what the pool compiles is for the older content."""
        if self.pool is not None:
            self.pool.cancel()

    def warm(self) -> None:
        if self.pool is not None and self.target:
            self.pool.warm(self.target)

    def close(self) -> None:
        if self.own_pool and self.pool is not None:
            self.pool.close()
