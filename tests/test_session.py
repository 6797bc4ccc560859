"""One run session (checks.running.RunSession) fed saves, one event vocabulary from the
worker to the screen, and one record store per run (checks.running.RunRecords).

The session's runs use the CPU workshop (its checks take milliseconds); the sharded
run's merging is shown with stand-in shards."""

import threading
import time
import types

import pytest

from checks import workspace as ws
from checks.judging.records import Record
from checks.running import Begin, End, Loaded, Plan, RecordEvent, RunRecords, RunSession, ShardedRun, events
from workshops import catalog

A1 = catalog.get("online_normalizer")
SOLUTION = A1.solution.read_text()
HANGS = SOLUTION + "\nimport time as _t\ndef merge(left, right):\n    _t.sleep(120)\n"


def rec(cid: str, status: str = "pass") -> Record:
    return Record(workshop="w", id=cid, label=cid, status=status)


def cases(*ids: str) -> list:
    return [{"id": i, "label": i, "why": "", "section": ""} for i in ids]


# --- the events ---


def test_a_wire_line_is_stamped_with_its_run_and_the_imported_hash_wins():
    begin = events.from_wire({"type": "begin", "id": "c"}, generation=3, content_hash="aa")
    assert begin == Begin(id="c", generation=3, content_hash="aa")
    loaded = events.from_wire({"type": "loaded", "content_hash": "bb"}, generation=3, content_hash="aa")
    assert loaded.generation == 3 and loaded.content_hash == "bb"  # the bytes the worker imported
    assert "generation" not in Begin(id="c").to_wire()  # the worker's lines leave them out
    assert End(outcome="done", error="progress not saved").error == "progress not saved"


# --- the record store ---


def test_a_runs_records_are_kept_once_by_check_id_in_plan_order():
    run = RunRecords(generation=2, content_hash="aa")
    assert not run and run.records == [] and run.outcome == "running"
    run.set_plan(cases("a", "b", "c"))
    first_b, load = rec("b"), rec("load", "error")
    assert run.add(first_b) and run.add(load) and run.add(rec("a"))
    assert not run.add(rec("b", "fail"))  # a check has one record
    assert [r.id for r in run.records] == ["a", "b", "load"]  # planned in plan order, then the rest
    assert run.get("b") is first_b and "a" in run and "c" not in run and len(run) == 3
    assert [r.id for r in run] == ["a", "b", "load"]


# --- a sharded run ---


def shard(evs: list, records: object = None) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        events=lambda: iter(evs),
        records=records,
        outcome=events.RunOutcome.DONE,
        usage_error="",
        worker=None,
        cancel=lambda: None,
    )


def test_one_shard_passes_its_events_and_its_records_through():
    store = RunRecords(generation=1, content_hash="aa")
    stamp = {"generation": 1, "content_hash": "aa"}
    evs = [
        Plan(cases=cases("a"), **stamp),
        Loaded(**stamp),
        Begin(id="a", **stamp),
        RecordEvent(record=rec("a"), **stamp),
        End(outcome="done", **stamp),
    ]
    run = ShardedRun([shard(evs, store)])
    seen = list(run.events())
    assert len(seen) == len(evs) and all(a is b for a, b in zip(seen, evs))  # not one re-wrapped
    assert run.records is store and run.outcome == "done" and run.plan == cases("a")


def test_several_shards_release_their_own_record_events_in_plan_order():
    stamp = {"generation": 4, "content_hash": "aa"}
    late_a = RecordEvent(record=rec("a"), **stamp)
    b = RecordEvent(record=rec("b"), **stamp)
    one = shard([Plan(cases=cases("a"), **stamp), Loaded(**stamp), late_a, End(outcome="done", **stamp)])
    two = shard([Plan(cases=cases("b"), **stamp), Loaded(**stamp), b, End(outcome="done", **stamp)])
    store = RunRecords(generation=4, content_hash="aa")
    run = ShardedRun([one, two], ["a", "b"], records=store)
    seen = list(run.events())
    records = [e for e in seen if isinstance(e, RecordEvent)]
    assert records[0] is late_a and records[1] is b  # in check order, as the shards sent them
    plan, end = seen[0], seen[-1]
    assert isinstance(plan, Plan) and plan.cases == cases("a", "b") and plan.generation == 4
    assert isinstance(end, End) and end.shards == 2 and end.generation == 4 and end.content_hash == "aa"
    assert run.records is store and [r.id for r in store] == ["a", "b"] and store.outcome == "done"


# --- the session ---


class Posted:
    """What a session posts, and a wait for the End of one generation."""

    def __init__(self) -> None:
        self.events: list = []
        self.cond = threading.Condition()

    def __call__(self, event) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def end_of(self, generation: int, timeout: float = 60) -> End:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = [e for e in self.events if isinstance(e, End) and e.generation == generation]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail(f"no End of run {generation}: {[type(e).__name__ for e in self.events]}")
                self.cond.wait(left)

    def of(self, generation: int) -> list:
        with self.cond:
            return [e for e in self.events if e.generation == generation]


def test_a_save_runs_once_and_its_records_are_kept_in_one_place(tmp_path):
    path = tmp_path / A1.exercise_name
    path.write_text(SOLUTION)
    posted = Posted()
    session = RunSession(A1, path, workspace=tmp_path, interpret=False, post=posted, timeout=60)
    try:
        digest = session.save()
        assert digest == ws.content_hash(path.read_bytes()) and session.generation == 1
        assert session.save() is None and session.saves_skipped == 1  # the same content: no run
        assert session.save(content=path.read_bytes()) is None and session.saves_skipped == 2
        end = posted.end_of(1)
        assert end.outcome == "done" and end.error == ""
        run = posted.of(1)
        assert isinstance(run[0], Plan) and run[-1] is end
        assert all(e.content_hash == digest for e in run)  # every event names its run
        arrived = [e.record for e in run if isinstance(e, RecordEvent)]
        kept = session.records_of(1)
        assert kept is not None and kept.records == arrived and kept.outcome == "done"
        assert [r.id for r in arrived] == [c["id"] for c in run[0].cases]
        assert session.runs_started == 1 and not session.saved_during()
        progress, _ = ws.load_progress(tmp_path)
        assert progress[A1.id]["content_hash"] == digest and progress[A1.id]["status"] == "passed"
    finally:
        session.close()


def test_a_newer_save_cancels_the_stale_run(tmp_path):
    path = tmp_path / A1.exercise_name
    path.write_text(HANGS)
    posted = Posted()
    session = RunSession(A1, path, workspace=tmp_path, interpret=False, post=posted, timeout=60)
    try:
        stale = session.save()
        deadline = time.monotonic() + 60
        while not any(isinstance(e, Begin) for e in posted.of(1)) and time.monotonic() < deadline:
            time.sleep(0.05)
        path.write_text(SOLUTION)
        assert session.saved_during()  # the file changed since run 1 started
        fresh = session.save()
        assert fresh not in (None, stale) and session.generation == 2
        assert posted.end_of(1).outcome == "cancelled" and not session.is_current(1)
        cancelled = session.records_of(1)
        assert cancelled is not None and "pass" not in {r.status for r in cancelled if r.id == "worked-merge"}
        assert posted.end_of(2).outcome == "done"
        assert {r.status for r in session.records_of(2)} == {"pass"}
    finally:
        session.close()
