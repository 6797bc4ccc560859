"""Every deliverable of every lesson has a check (workshops/deliverables.json).

The table maps meta.json's deliverable, cut into parts, and each bullet of the lesson's
"Done when" list to the named checks that prove it.  It fails when a workshop, a part of
its deliverable or a bullet has no entry, when an entry names no check (a measurement
may lean on the performance step instead), when it names a check id that does not
exist, or when the lesson or meta.json changed under it."""

import json
import re
from pathlib import Path

import pytest

from checks.judging.engine import cases_for
from workshops import catalog

REPO = Path(__file__).resolve().parent.parent
TABLE = json.loads((REPO / "workshops" / "deliverables.json").read_text(encoding="utf-8"))["workshops"]
WORKSHOPS = catalog.workshops()
IDS = [w.id for w in WORKSHOPS]
EVERY = ["*"]  # every check of the workshop: a bullet that asks for a run without failures
KEYS = {"part", "line", "checks", "perf", "benchmark", "beyond_checks"}


def done_when(lesson: str) -> list:
    """The bullets of the lesson's "Done when" section, each on one line."""
    lines = lesson.splitlines()
    start = lines.index("## Done when")
    bullets: list = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.startswith("- "):
            bullets.append(line[2:].strip())
        elif line.startswith("  ") and bullets:
            bullets[-1] += " " + line.strip()
    return bullets


def proof_problems(w, entry: dict, what: str) -> list:
    """What is wrong with one entry's proof: unknown keys, no check, unknown check ids, a
    performance step or benchmark that does not exist."""
    from checks.benchmark.specs import benchmarked_ops
    from checks.performance.goals import GOALS

    problems = [f"{what}: unknown key {k!r}" for k in sorted(set(entry) - KEYS)]
    ids = entry.get("checks")
    known = {c.id for c in cases_for(w.id)}
    if not isinstance(ids, list):
        return problems + [f"{what}: 'checks' must be a list of check ids"]
    if not ids and not entry.get("perf"):
        problems.append(f"{what}: names no check")
    if ids != EVERY:
        problems += [f"{what}: no check named {i!r} in {w.id}" for i in ids if i not in known]
        if len(set(ids)) != len(ids):
            problems.append(f"{what}: a check is named twice")
    if entry.get("perf") and w.id not in GOALS:
        problems.append(f"{what}: {w.id} has no performance step")
    if entry.get("benchmark") and w.id not in benchmarked_ops():
        problems.append(f"{what}: {w.id} is not benchmarked")
    if "beyond_checks" in entry and not str(entry["beyond_checks"]).strip():
        problems.append(f"{what}: 'beyond_checks' is empty")
    return problems


def test_every_workshop_has_its_deliverables_in_the_table():
    assert sorted(TABLE) == sorted(IDS)


@pytest.mark.parametrize("w", WORKSHOPS, ids=IDS)
def test_the_deliverable_is_cut_into_parts_that_each_have_a_check(w):
    parts = TABLE[w.id]["deliverable"]
    problems = [p for i, part in enumerate(parts) for p in proof_problems(w, part, f"deliverable part {i}")]
    # The parts, in order, are the whole sentence: what is left is only joining words.
    rest, at = w.deliverable, 0
    for part in parts:
        found = rest.find(part["part"], at)
        if found < 0:
            problems.append(f"{part['part']!r} is not (next) in meta.json's deliverable {w.deliverable!r}")
            continue
        rest = rest[:found] + " " * len(part["part"]) + rest[found + len(part["part"]) :]
        at = found + len(part["part"])
    left = re.sub(r"\band\b", " ", rest)
    if left.strip(" ,;"):
        problems.append(f"meta.json's deliverable {w.deliverable!r} has words no part covers: {left.split()}")
    assert not problems, problems


@pytest.mark.parametrize("w", WORKSHOPS, ids=IDS)
def test_every_done_when_line_has_a_check(w):
    bullets = done_when(w.lesson)
    entries = TABLE[w.id]["done_when"]
    assert len(entries) == len(bullets), (
        f"{w.id}: the lesson's Done when has {len(bullets)} bullets, the table {len(entries)}",
        [b[:60] for b in bullets],
    )
    problems = []
    for i, (bullet, entry) in enumerate(zip(bullets, entries)):
        what = f"{w.id} Done when #{i + 1} ({bullet[:50]!r})"
        if not bullet.startswith(entry.get("line", "\0")):
            problems.append(f"{what}: the table's line {entry.get('line')!r} does not start it")
        problems += proof_problems(w, entry, what)
        if entry["checks"] == EVERY and not re.search(r"[Ee]very check passes|no failures|exits 0", bullet):
            problems.append(f"{what}: ['*'] (every check) stands only for a bullet that asks for a clean run")
    assert not problems, problems


def test_the_table_fails_a_deliverable_without_a_check_and_an_unknown_check():
    w = catalog.get("fused_gemm")
    assert proof_problems(w, {"part": "a grouped tile sweep", "checks": []}, "x") == ["x: names no check"]
    assert proof_problems(w, {"checks": ["tile-order", "no-such-check"]}, "x") == [
        "x: no check named 'no-such-check' in fused_gemm"
    ]
    assert proof_problems(w, {"checks": [], "perf": True}, "x") == []


def test_done_when_reads_bullets_that_wrap():
    lesson = "# L\n\n## Done when\n\n- one\n  more\n- two\n\n## Next\n- not this\n"
    assert done_when(lesson) == ["one more", "two"]
