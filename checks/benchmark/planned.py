"""What a benchmark run will call, without timing or judging anything: the shapes it
selects (the runner's own choice, :func:`planned_shapes`), the seed of each shape's
inputs (:func:`stable_seed`) and which variants of a shape are the learner's calls; for a
command line of ``python -m checks.benchmark``, each call of the learner's wrapper it will
time is in checks.benchmark.calls_ahead (which reads the command line: this module stands
below it, and below the runner).

The app's benchmark worker calls each planned call once while Triton's compiles are
skipped (see checks/running/discovery.py): the kernel variants those calls ask for are
then known before the first row is timed, and the app's compile pool compiles them in
parallel.  The inputs are made as the runner makes them (same spec, shapes, dtypes,
variants), so the calls specialize as the timed ones will; nothing here is compared with
an oracle or timed, and only the learner's candidates are called (PyTorch's baselines
and peers compile no kernel of the learner's file).
"""

from __future__ import annotations

import zlib
from typing import Any

from checks.benchmark.kernels import CACHED_HANDLE, first_view


def planned_shapes(spec: Any, shapes: str) -> list:
    """The spec's shapes a run with ``--shapes shapes`` measures, in the order it measures
    them: the comparison shapes first."""
    selected = [s for s in spec.SHAPES if shapes == "all" or s.get("role") == shapes]
    selected.sort(key=lambda s: s.get("role") != "comparison")
    return selected


def stable_seed(op: str, shape: str, dtype: str, base: int = 0) -> int:
    """The seed of one shape's inputs: the same on every machine and in every run."""
    return (zlib.crc32(f"{op}/{shape}/{dtype}".encode()) + base) % (2**31 - 1)


def torch_dtype(name: str) -> Any:
    """The torch dtype of a benchmark dtype name (fp32, fp16, bf16)."""
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def calls_of(variants: list, sweep: bool) -> list:
    """The learner's candidates among a shape's variants, as the run keeps them; a
    cached-handle twin calls the same wrapper as its candidate and is left out."""
    kept = variants if sweep else first_view(variants)
    return [
        v
        for v in kept
        if v.get("role", "candidate") == "candidate"
        and (v.get("config") or {}).get("launch") != CACHED_HANDLE
        and callable(v.get("fn"))
    ]
