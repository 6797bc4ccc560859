"""A real first benchmark on a GPU (skipped without one): the variants its worker
discovers are compiled by the app's compile pool, found in Triton's cache, and the rows
are the ones a benchmark without a pool gives (see test_benchmark_discovery.py for the
same path on a CPU, with stand-ins)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import torch

from checks.running.compile_ahead import benchmark_variants_file

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _said(tail: str) -> dict:
    lines = [l for l in tail.splitlines() if l.startswith("benchmark variants: ")]
    assert lines, tail
    return json.loads(lines[-1].split(": ", 1)[1])


def _facts(rows: list) -> list:
    keep = ("shape", "dtype", "variant", "role", "status", "max_abs_error", "rel_error")
    out = []
    for r in rows:
        kernels_of = [{k: v for k, v in x.items() if k != "launches"} for x in r.get("kernels") or []]
        out.append(({k: r.get(k) for k in keep}, kernels_of))
    return sorted(out, key=lambda x: json.dumps(x, sort_keys=True))


@needs_gpu
@pytest.mark.parametrize("op", ["strided_softmax", "streaming_attention"])
def test_a_first_benchmark_finds_its_variants_compiled_by_the_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str
) -> None:
    from checks.running import RunSession
    from tui import benchmark_child
    from workshops import catalog

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # the workers run kernels on the GPU
    workshop = catalog.get(op)
    path = tmp_path / f"{op}.py"
    shutil.copy(workshop.solution, path)

    def first_benchmark(cache: str, lend: bool) -> tuple:
        monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / cache))  # nothing compiled yet
        record = benchmark_variants_file(tmp_path, op)
        record.unlink(missing_ok=True)  # the workshop's first benchmark
        s = RunSession(
            workshop, path, workspace=tmp_path, interpret=False, compilers=4 if lend else 0, pool_size=1
        )
        try:
            s.benchmarks = True
            s.prime()  # warm workers; the compile target from the check worker
            worker = s.benchmark_worker()
            assert worker is not None and (worker.door is not None) == lend
            assert worker.wait_ready(300)  # as after a pass: the worker is warm
            t0 = time.monotonic()
            rows, error, tail = benchmark_child.BenchmarkRun(op, tmp_path, file=path, worker=worker).run()
            return rows, error, tail, time.monotonic() - t0
        finally:
            s.close()

    from checks.benchmark import ceilings as card_ceilings, timing

    # the card's ceilings measured once, before both runs (each would keep them for the next)
    measure = lambda: timing.measure_ceilings(True)
    card_ceilings.ceilings_for(card_ceilings.default_path(), timing.environment(), measure, quick=True)
    rows, error, tail, lent_s = first_benchmark("cache-lent", lend=True)
    assert rows and not error, (error, tail)
    said = _said(tail)
    assert said["offered"] >= 1 and said["answered"] == said["offered"], said
    assert said["pool_hits"] >= 1 and said["pool_hits"] == said["waits"], said
    assert said["compiled_here"] == 0 and said["cache_hits"] >= said["pool_hits"], said
    alone, error2, tail2, alone_s = first_benchmark("cache-alone", lend=False)
    assert alone and not error2, (error2, tail2)
    assert "benchmark variants: " not in tail2  # no pool: no discovery, as before
    assert _facts(rows) == _facts(alone)
    print(f"{op}: first benchmark {lent_s:.2f} s with the pool, {alone_s:.2f} s without; {said}")
