"""Right answers of other designs than the reference (``workshops/<id>/right/*.py``):
one launch per head, persistent programs, column tiles with an online max, several rows
per program, block pointers, a tiled two-pass backward.  Each runs every check of its
workshop in a worker process: in Triton's interpreter here, on the GPU where there is
one (there the checks that need a GPU run too, and each must end within 10 s less its
compile time).  A check that refuses one of them refuses a right answer for its design."""

import pytest
import torch

from checks.interpreter import interpreter_env
from checks.judging.engine import cases_for
from checks.running.child import ChildRun, Worker
from workshops import catalog

RIGHT = [(w, path) for w in catalog.workshops() for path in w.right_versions()]
ON_GPU = torch.cuda.is_available()
CHECK_SECONDS = 10.0  # the most one check of a right answer may take on an H200


def test_every_design_the_issue_names_is_kept():
    kept = {(w.id, p.stem) for w, p in RIGHT}
    assert {
        ("streaming_attention", "per_head_launches"),
        ("strided_softmax", "persistent_programs"),
        ("strided_softmax", "column_tiles_online"),
        ("strided_softmax", "rows_per_program"),
        ("fused_gemm", "block_pointers"),
        ("softmax_backward", "tiled_two_pass"),
    } <= kept
    for _, path in RIGHT:
        head = path.read_text().split('"""')[1]
        assert head.startswith("RIGHT, another design: ") and len(head) > 150, path


def _run(w, path):
    if ON_GPU:
        worker = Worker(preload="gpu", env=interpreter_env(False))
    else:
        worker = Worker(preload="interpret")
    run = ChildRun(w.id, path, interpret=not ON_GPU, worker=worker, timeout=600)
    return run, run.run()


@pytest.mark.parametrize("w, path", RIGHT, ids=[f"{w.id}-{p.stem}" for w, p in RIGHT])
def test_a_right_answer_of_another_design_passes_every_check(w, path):
    run, records = _run(w, path)
    assert run.outcome == "done", [(r.id, r.message[:300]) for r in records if r.status != "pass"]
    assert {r.id for r in records} == {c.id for c in cases_for(w.id)}
    gpu_only = {c.id for c in cases_for(w.id) if not c.interpreter}
    refused = [
        (r.id, r.status, r.message[:400])
        for r in records
        if r.status != "pass" and not (r.status == "skipped" and not ON_GPU and r.id in gpu_only)
    ]
    assert not refused, refused
    if ON_GPU:
        slow = {
            r.id: (r.seconds, run.timings[r.id].get("compile_s"))
            for r in records
            if r.seconds - (run.timings[r.id].get("compile_s") or 0.0) > CHECK_SECONDS
        }
        assert not slow, f"checks over {CHECK_SECONDS:g} s (seconds, of which compiling): {slow}"
