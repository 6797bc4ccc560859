"""An author's checks of a workshop folder, before any code runs: every file a learner
or the app needs is there, every check names a lesson section that exists, and the
kept wrong answers match the map in ``meta.json``.  Used by ``--self-check`` (which
then runs every file) and by the test suite.  A missing file is an error, never ''."""

from __future__ import annotations

from checks.engine import cases_for

REQUIRED_FILES = ("meta.json", "lesson.md", "hints.md", "explanation.md", "starter.py", "solution.py")


def folder_problems(w) -> list:
    """What is wrong with workshop ``w``'s folder, as sentences (empty when nothing)."""
    problems = [f"{w.id}: {name} is missing" for name in REQUIRED_FILES if not (w.folder / name).is_file()]
    for name in REQUIRED_FILES[1:4]:
        p = w.folder / name
        if p.is_file() and not p.read_text(encoding="utf-8").strip():
            problems.append(f"{w.id}: {name} is empty")
    if (w.folder / "hints.md").is_file() and len(w.hints) < 2:
        problems.append(f"{w.id}: hints.md needs at least two '## ' tiers")
    files = {p.name for p in w.wrong_versions()}
    listed = {name for name, _ in w.wrong_answers}
    for name in sorted(files - listed):
        problems.append(f"{w.id}: wrong/{name} is not in meta.json's wrong_answers")
    for name in sorted(listed - files):
        problems.append(f"{w.id}: meta.json lists wrong/{name}, which does not exist")
    try:
        cases = cases_for(w.id)
    except Exception as e:  # noqa: BLE001 - a broken case module is the author's to fix
        return problems + [f"{w.id}: its checks do not load: {type(e).__name__}: {e}"]
    known = {c.id for c in cases}
    for name, ids in w.wrong_answers:
        for i in sorted(set(ids) - known):
            problems.append(
                f"{w.id}: meta.json says check {i!r} catches wrong/{name}, but there is no such check"
            )
    headings = {line[3:].strip() for line in w.lesson.splitlines() if line.startswith("## ")}
    for c in cases:
        if c.section not in headings:
            problems.append(
                f"{w.id}: check {c.id!r} names lesson section {c.section!r}, which lesson.md does not have"
            )
        if not c.why:
            problems.append(f"{w.id}: check {c.id!r} does not say why it matters")
    return problems


def missed_catches(w, wrong_name: str, records) -> list:
    """The checks meta.json names for ``wrong_name`` that did not reject it (a check
    skipped here, e.g. GPU-only in the interpreter, is not counted as a miss)."""
    wanted = dict(w.wrong_answers).get(wrong_name, ())
    by_id = {r.id: r for r in records}
    return [i for i in wanted if i in by_id and by_id[i].status not in ("fail", "error", "skipped")]
