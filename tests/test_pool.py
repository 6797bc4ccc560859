"""Checks sharded over several warm workers: records in check order, one cancel stops
every shard, the split and the pool size follow the rules, extra keywords pass through.

Runs on the CPU workshop (checks take milliseconds), with the pool size forced above 1,
and on a small GPU workshop in Triton's interpreter, sharded as the app shards it
without a GPU (two workers here).
"""

import glob
import inspect
import os
import tempfile
import threading
import time

from checks.judging import engine
from checks.running import RunSession as CheckController
from checks.running.child import ChildRun, Worker
from checks.running.events import (
    Begin as CheckStarted,
    End as RunFinished,
    Plan as CheckPlanned,
    RecordEvent as RecordArrived,
)
from checks.running.pool import MAX_INTERPRETERS, pool_size, split
from workshops import catalog

A1 = catalog.get("online_normalizer")
SOLUTION = A1.solution.read_text()
# worked-merge (the first check) is slow, so later checks finish before it
SLOW_FIRST = SOLUTION + (
    "\nimport time as _t\n_merge = merge\n"
    "def merge(left, right):\n"
    "    if tuple(left) == (2, 2) and tuple(right) == (4, 1):\n"
    "        _t.sleep(0.8)\n"
    "    return _merge(left, right)\n"
)
HANGS = SOLUTION + "\nimport time as _t\ndef merge(left, right):\n    _t.sleep(120)\n"

I2 = catalog.get("softmax_backward")  # the quickest GPU workshop in the interpreter
I2_SOLUTION = I2.solution.read_text()
# own-kernel (the first check) calls backward on 4x33: slow, so later checks finish before it
I2_SLOW_FIRST = I2_SOLUTION + (
    "\nimport time as _t\n_backward = backward\n"
    "def backward(y, grad_output, **options):\n"
    "    if tuple(getattr(y, 'shape', ())) == (4, 33):\n"
    "        _t.sleep(1.0)\n"
    "    return _backward(y, grad_output, **options)\n"
)
I2_HANGS = I2_SOLUTION + "\nimport time as _t\ndef backward(y, grad_output, **options):\n    _t.sleep(120)\n"


def controller(tmp_path, text, size):
    path = tmp_path / A1.exercise_name
    path.write_text(text)
    return CheckController(
        A1, path, workspace=tmp_path, interpret=False, record=False, pool_size=size, timeout=60
    )


def interpreted(tmp_path, text):
    """The app's controller for I2 without a GPU: its own choice of workers."""
    path = tmp_path / I2.exercise_name
    path.write_text(text)
    return CheckController(I2, path, workspace=tmp_path, interpret=True, record=False, timeout=120)


def kinds(messages):
    return [type(m).__name__ for m in messages]  # for the failure's message


def records(messages) -> list:
    return [m.record for m in messages if isinstance(m, RecordArrived)]


def test_split_keeps_run_order_and_spreads_the_first_checks():
    ids = [f"c{i}" for i in range(10)]
    shards = split(ids, 3)
    assert sorted(i for s in shards for i in s) == sorted(ids)
    for s in shards:
        assert s == sorted(s, key=ids.index)  # each shard in run order
    assert {s[0] for s in shards} == {"c0", "c1", "c2"}  # the first three start at once
    # a known slow check gets a shard to itself
    heavy = split(ids, 3, {"c0": 9.0})
    assert heavy[0] == ["c0"]
    assert split(["a"], 4) == [["a"]] and split(ids, 1) == [ids]


def test_shards_balance_by_the_last_run_seconds():
    ids = ["c0", "c1", "c2", "c3", "c4"]
    # in run order, the long last check would land on a busy shard (6 s against 2 s);
    # longest first, it gets a shard of its own and the shards end together
    assert split(ids, 2, {"c0": 1, "c1": 1, "c2": 1, "c3": 1, "c4": 4}) == [["c4"], ["c0", "c1", "c2", "c3"]]
    # I3's suite, interpreted (seconds of one run): the critical shard is within one short
    # check of half the total, and every shard runs in run order
    est = {"own": 0.9, "basic": 0.3, "tiles": 1.7, "wide": 1.3, "sweep": 0.8, "group": 0.4, "k": 0.2}
    order = list(est)
    shards = split(order, 2, est)
    loads = [sum(est[i] for i in s) for s in shards]
    assert sorted(i for s in shards for i in s) == sorted(order)
    assert max(loads) - sum(loads) / 2 <= min(est.values())
    for s in shards:
        assert s == sorted(s, key=order.index)
    assert any(s[0] == "own" for s in shards)  # the first check is first on its worker


def test_pool_size_follows_the_machine(monkeypatch):
    monkeypatch.delenv("KERNEL_COURSE_POOL", raising=False)
    # on a GPU: about one worker per two cores, capped by the GPU's memory
    assert pool_size(gpu=True, cores=2, gpu_gib=80) == 1  # nothing gets slower on a 2-core machine
    assert pool_size(gpu=True, cores=16, gpu_gib=141) == 8
    assert pool_size(gpu=True, cores=16, gpu_gib=16) == 2  # GPU memory caps it
    monkeypatch.setenv("KERNEL_COURSE_POOL", "3")
    assert pool_size(cores=2) == 3
    assert pool_size(gpu=True, cores=16, gpu_gib=141) == 3


def test_interpreter_pool_follows_the_cores(monkeypatch):
    monkeypatch.delenv("KERNEL_COURSE_POOL", raising=False)
    # the interpreter needs no GPU context: one worker per core
    assert pool_size(gpu=False, cores=2, memory_gib=24) == 2
    assert pool_size(cores=1, memory_gib=24) == 1
    assert pool_size(cores=12, memory_gib=64) == 12
    assert pool_size(cores=128, memory_gib=512) == MAX_INTERPRETERS
    assert pool_size(cores=8, memory_gib=3.5) == 3  # memory caps it
    assert pool_size(cores=8, memory_gib=0.5) == 1


def test_an_interpreted_run_is_sharded_over_every_core(tmp_path, monkeypatch):
    monkeypatch.delenv("KERNEL_COURSE_POOL", raising=False)
    c = interpreted(tmp_path, I2_SOLUTION)
    assert c.pool_size == pool_size(gpu=False) and c.compilers == 0
    c.close()
    cpu = controller(tmp_path, SOLUTION, None)  # the CPU workshop: milliseconds, one worker
    assert cpu.pool_size == 1
    cpu.close()


def run_once(c) -> list:
    c.prime()
    assert c.pool.wait_ready(c.preload, c.workshop.id, timeout=120)
    digest = c.read_hash()
    gen = c.begin(digest)
    messages: list = []
    c.execute(gen, digest, messages.append)
    return messages


def test_interpreted_shards_release_records_in_check_order(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_COURSE_POOL", "2")
    c = interpreted(tmp_path, I2_SLOW_FIRST)
    try:
        assert c.pool_size == 2
        messages = run_once(c)
        assert isinstance(messages[0], CheckPlanned), kinds(messages)
        assert isinstance(messages[-1], RunFinished) and messages[-1].outcome == "done", kinds(messages)
        plan = [x["id"] for x in messages[0].cases]
        assert [r.id for r in records(messages)] == plan
        assert {r.status for r in records(messages)} == {"pass", "skipped"}  # skipped: CUDA streams
        t = c.last_timings
        assert c.last_shards == 2 and {v["shard"] for v in t.values()} == {0, 1}
        # side by side: the other shard finished a check while the first one slept
        first = t[plan[0]]
        assert any(v["arrived"] < first["arrived"] for v in t.values() if v["shard"] != first["shard"])
        # the next run's shards follow this run's seconds per check
        estimates = dict(c.estimates)
        assert set(estimates) == set(plan) and estimates[plan[0]] >= 1.0
        messages = run_once(c)
        assert [r.id for r in records(messages)] == plan
        by_shard: dict = {}
        for cid, v in c.last_timings.items():
            by_shard.setdefault(v["shard"], []).append(cid)
        got = sorted(sorted(s, key=plan.index) for s in by_shard.values())
        assert got == sorted(split(plan, 2, estimates))
    finally:
        c.close()


def test_newer_save_cancels_both_interpreted_shards(tmp_path, monkeypatch):
    made = []

    class Tracked(Worker):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    import checks.running.pool

    monkeypatch.setattr(checks.running.pool, "Worker", Tracked)
    monkeypatch.setenv("KERNEL_COURSE_POOL", "2")
    c = interpreted(tmp_path, I2_HANGS)
    messages: list = []
    digest = c.read_hash()
    gen = c.begin(digest)
    th = threading.Thread(target=c.execute, args=(gen, digest, messages.append), daemon=True)
    th.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and sum(isinstance(m, CheckStarted) for m in messages) < 2:
        time.sleep(0.05)
    assert sum(isinstance(m, CheckStarted) for m in messages) >= 2, kinds(messages)
    assert len(made) == 2 and all(w.alive() for w in made)
    (tmp_path / I2.exercise_name).write_text(I2_SOLUTION)  # the newer save
    c.begin(c.read_hash())
    th.join(30)
    assert not th.is_alive()
    assert all(not w.alive() for w in made)  # both shards stopped
    fin = messages[-1]
    assert isinstance(fin, RunFinished) and fin.outcome == "cancelled"
    assert not any(r.status == "pass" for r in records(messages))
    c.close()


def test_sharded_records_arrive_in_check_order(tmp_path):
    c = controller(tmp_path, SLOW_FIRST, 3)
    assert c.pool_size == 3
    c.prime()
    assert c.pool.wait_ready(c.preload, A1.id, timeout=60)
    digest = c.read_hash()
    gen = c.begin(digest)
    messages = []
    c.execute(gen, digest, messages.append)
    try:
        assert c.last_shards == 3
        assert isinstance(messages[0], CheckPlanned), kinds(messages)
        assert isinstance(messages[-1], RunFinished), kinds(messages)
        plan = [x["id"] for x in messages[0].cases]
        assert [r.id for r in records(messages)] == plan
        assert messages[-1].outcome == "done"
        assert {r.status for r in records(messages)} == {"pass"}
        # the shards really ran side by side: a later check was done before the first
        t = c.last_timings
        shard_of_first = t[plan[0]]["shard"]
        assert len({v["shard"] for v in t.values()}) == 3
        assert any(v["arrived"] < t[plan[0]]["arrived"] for k, v in t.items() if v["shard"] != shard_of_first)
        # and the same verdicts as one worker gives
        single = ChildRun(A1.id, c.path, timeout=60).run()
        assert [(r.id, r.status) for r in single] == [(r.id, r.status) for r in records(messages)]
    finally:
        c.close()


def test_newer_save_cancels_every_shard(tmp_path, monkeypatch):
    made = []

    class Tracked(Worker):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    import checks.running.pool

    monkeypatch.setattr(checks.running.pool, "Worker", Tracked)
    c = controller(tmp_path, HANGS, 3)
    messages = []
    digest = c.read_hash()
    gen = c.begin(digest)
    th = threading.Thread(target=c.execute, args=(gen, digest, messages.append), daemon=True)
    th.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(isinstance(m, CheckStarted) for m in messages) < 3:
        time.sleep(0.05)
    assert sum(isinstance(m, CheckStarted) for m in messages) >= 3, kinds(messages)
    assert len(made) == 3 and all(w.alive() for w in made)
    (tmp_path / A1.exercise_name).write_text(SOLUTION)  # the newer save
    c.begin(c.read_hash())
    th.join(30)
    assert not th.is_alive()
    assert all(not w.alive() for w in made)  # every shard stopped
    fin = messages[-1]
    assert isinstance(fin, RunFinished) and fin.outcome == "cancelled"
    assert not c.is_current(fin.generation)
    assert not any(r.status == "pass" and r.id == "worked-merge" for r in records(messages))
    c.close()


def test_extra_keywords_pass_through_to_the_engine(tmp_path):
    path = tmp_path / A1.exercise_name
    path.write_text(SOLUTION)
    run = ChildRun(A1.id, path, timeout=60)
    run.options = {"seed": 5, "no_such_keyword": 1}  # unknown: ignored
    records = run.run()
    assert run.outcome == "done" and records and {r.status for r in records} == {"pass"}
    if "seed" in inspect.signature(engine.run_checks).parameters:
        assert all(r.seed == 5 for r in records)


def test_a_ready_worker_lists_the_workshop_checks():
    w = Worker(preload="cpu", warm=A1.id)
    try:
        assert w.wait_ready(60)
        ids = [c["id"] for c in w.ready_info.cases]
        assert ids == [c.id for c in engine.cases_for(A1.id)]
    finally:
        w.kill()


def test_a_worker_killed_with_its_parent_leaves_no_temporary_files(tmp_path):
    """The time limit's stack dump comes through a pipe, not a file: a check process killed
    by a regrade's own limit (no clean-up runs) must not leave a file per worker behind."""
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "checks-*")))
    worker = Worker(preload="cpu", warm=A1.id)
    try:
        assert worker.wait_ready(60)
        assert set(glob.glob(os.path.join(tempfile.gettempdir(), "checks-*"))) <= before
    finally:
        worker.kill()
