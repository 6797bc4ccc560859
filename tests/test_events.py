"""The worker's messages are typed (checks.running.events): each JSON line is checked against
its dataclass when it is read, and a run yields those dataclasses in order."""

import pytest

from checks.judging.records import Record
from checks.running import events
from checks.running.child import ChildRun
from workshops import catalog

REC = {"workshop": "w", "id": "c", "label": "l", "status": "pass"}


@pytest.mark.parametrize(
    "event",
    [
        events.Ready(pid=7, cases=[{"id": "c"}]),
        events.Plan(cases=[{"id": "c", "label": "l", "why": "", "section": ""}]),
        events.Loaded(content_hash="ab" * 32),
        events.Begin(id="c"),
        events.RecordEvent(record=Record(**REC), compile_s=0.5, compiles=2),
        events.Usage(message="unknown check id"),
        events.Done(),
    ],
)
def test_every_wire_message_round_trips(event):
    assert events.from_wire(event.to_wire()) == event
    assert event.to_wire()["type"] == event.type


@pytest.mark.parametrize(
    "message,why",
    [
        ({"type": "oops"}, "unknown worker message type"),
        ({"type": "plan"}, "cases"),
        ({"type": "begin", "id": "c", "extra": 1}, "extra"),
        ({"type": "record", "record": "PASS"}, "record"),
        ({"type": "record", "record": {**REC, "status": "passed"}}, "status"),
        (["type", "done"], "JSON object"),
    ],
)
def test_a_message_that_is_not_one_is_refused_with_the_reason(message, why):
    with pytest.raises(ValueError, match=why):
        events.from_wire(message)


def test_a_run_yields_typed_events_in_order():
    w = catalog.get("online_normalizer")
    run = ChildRun(w.id, w.solution, timeout=60)
    seen = list(run.events())
    kinds = [type(e) for e in seen]
    assert kinds[0] is events.Plan and kinds[1] is events.Loaded and kinds[-1] is events.End
    records = [e.record for e in seen if isinstance(e, events.RecordEvent)]
    assert [r.id for r in records] == [c["id"] for c in seen[0].cases]
    assert all(r.status == "pass" for r in records) and seen[-1].outcome == "done"
