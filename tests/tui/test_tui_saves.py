"""Editor save patterns through the app (headless, on the CPU workshop online_normalizer).

Every way an editor saves must start exactly one current run of the new content; a
save that changes nothing, or a change to any other file in the workspace, starts
none; and a burst of saves ends with the LAST content's result on screen, with no
stale result ever displayed as current.  Also: what a run checks is exactly the content
its hash names (no cached .pyc of an older save, no save slipping in between the hash
and the import), and --poll sees a second save made within the same second.

Observables (no fixed sleeps for positive outcomes; every wait has a deadline):

* ``screen.runs_started`` / ``controller.generation``: runs started;
* ``screen.saves_skipped``: watcher batches whose content had not changed -- it also
  tells the test that the watcher has handled a save (so "no run" is proven after the
  save was seen, not after an arbitrary sleep);
* spies on ``CheckController.begin`` (each run started: its digest) and
  ``ResultsPanel.finish`` (each result displayed as current: its digest and rows);
* a spy on ``tui.watch.saves`` (every batch of changes the watcher hands the screen).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from checks import workspace as ws
from checks.running.events import Loaded
from workshops import catalog

from tui_helpers import digest_of, editor_save, wait_for, wait_for_run, wait_for_watch

A1 = catalog.get("online_normalizer")
RIGHT = A1.solution.read_text()
WRONG = (A1.folder / "wrong" / "raw_denominator.py").read_text()


def run(coro):
    return asyncio.run(coro)


# --- save patterns ------------------------------------------------------------------


def write_in_place(path: Path, text: str) -> None:
    """open(path, 'w').write(text): truncate, then write (same inode)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def safe_write(path: Path, text: str) -> None:
    """vim / JetBrains "safe write": a temporary file in the same folder, renamed over."""
    editor_save(path, text)


def delete_and_create(path: Path, text: str) -> None:
    """Some editors and tools: remove the file, then create it anew."""
    os.remove(path)
    with open(path, "x", encoding="utf-8") as f:
        f.write(text)


PATTERNS = {"in-place": write_in_place, "safe-write": safe_write, "delete-create": delete_and_create}


# --- spies ----------------------------------------------------------------------------


class Spy:
    """Records the runs begun and the results displayed as current."""

    def __init__(self, monkeypatch):
        from checks.running import RunSession as CheckController
        from tui.widgets.results import ResultsPanel

        self.begun: list = []  # (generation, digest) of each run started
        self.shown: list = []  # one dict per result displayed as current
        spy = self
        begin, finish = CheckController.begin, ResultsPanel.finish

        def spy_begin(controller, digest):
            generation = begin(controller, digest)
            spy.begun.append((generation, digest))
            return generation

        def spy_finish(panel, outcome, records, digest, error=""):
            c = panel.screen.controller
            finish(panel, outcome, records, digest, error)
            spy.shown.append(
                {
                    "digest": digest,
                    "outcome": outcome,
                    "statuses": [r.status for r in records],
                    "latest_started": c.started_hash,
                    "generation": c.generation,
                    "at": time.monotonic(),
                }
            )

        monkeypatch.setattr(CheckController, "begin", spy_begin)
        monkeypatch.setattr(ResultsPanel, "finish", spy_finish)


@pytest.fixture
def child_runs(monkeypatch):
    """Every ChildRun the app's controller creates, in order."""
    import checks.running.session as runner

    made = []

    class Recorded(runner.ChildRun):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(runner, "ChildRun", Recorded)
    return made


def kind_of(statuses: list) -> str:
    if statuses and set(statuses) == {"pass"}:
        return "right"
    if "fail" in statuses:
        return "wrong"
    return "other"


async def screen_of(pilot):
    app = pilot.app
    screen = await wait_for(
        pilot, lambda: getattr(app.screen, "controller", None) and app.screen, 10, "the workshop"
    )
    await wait_for_watch(pilot)
    return screen


async def expect_no_run(pilot, screen, save, what: str):
    """Do ``save`` (which leaves the exercise's content as it was); wait until the
    watcher has handled it (saves_skipped goes up), then check no run started."""
    runs, gen, skipped = screen.runs_started, screen.controller.generation, screen.saves_skipped
    save()
    await wait_for(pilot, lambda: screen.saves_skipped > skipped, 15, f"the watcher to see {what}")
    await pilot.pause(0.1)
    assert screen.runs_started == runs, f"{what} started a run"
    assert screen.controller.generation == gen, f"{what} started a run"


# --- (a) (b) (c) (d): each save pattern ------------------------------------------------


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_save_pattern_runs_the_new_content_and_an_unchanged_save_runs_nothing(
    make_app, workspace, monkeypatch, pattern
):
    """Wrong, then right, then the same right again, each saved the same way: the first
    two each show the result of exactly that content; the third starts no run."""
    save = PATTERNS[pattern]
    path = workspace / A1.exercise_name
    spy = Spy(monkeypatch)

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await screen_of(pilot)
            panel = await wait_for_run(pilot, digest_of(path))  # the starter
            assert set(panel.statuses()) == {"todo"}

            for text, expected in ((WRONG, "wrong"), (RIGHT, "right")):
                n_shown = len(spy.shown)
                save(path, text)
                digest = ws.content_hash(text.encode())
                panel = await wait_for_run(pilot, digest, 30)
                assert digest_of(path) == digest
                assert kind_of(panel.statuses()) == expected, panel.statuses()
                assert digest[:8] in str(screen.query_one("#run-status").render())
                # every result displayed since the save is of a run that was current then
                for shown in spy.shown[n_shown:]:
                    assert shown["digest"] == shown["latest_started"], shown
                assert spy.shown[-1]["digest"] == digest

            # (d) the same content saved again the same way: the watcher sees it, no run
            shown_before = len(spy.shown)
            await expect_no_run(pilot, screen, lambda: save(path, RIGHT), f"an unchanged {pattern} save")
            assert len(spy.shown) == shown_before and panel.digest == digest_of(path)
            assert set(panel.statuses()) == {"pass"}

            if pattern == "delete-create":
                # the file gone for a while: a re-run asks for it back, the app carries on
                os.remove(path)
                await pilot.press("space")
                await wait_for(
                    pilot,
                    lambda: any("is missing" in n.message for n in app._notifications),
                    5,
                    "the missing-file notice",
                )
                with open(path, "x", encoding="utf-8") as f:
                    f.write(WRONG + "\n# back again\n")
                panel = await wait_for_run(pilot, digest_of(path), 30)
                assert kind_of(panel.statuses()) == "wrong"

    run(body())


# --- (e) a burst of saves ----------------------------------------------------------


@pytest.mark.parametrize("pattern,last", [("safe-write", "wrong"), ("in-place", "right")])
def test_fifty_saves_in_two_seconds_show_only_the_last_content(
    make_app, workspace, monkeypatch, child_runs, pattern, last
):
    """Fifty saves, alternating wrong and right (each one unique), within two seconds.
    The result on screen at the end is the LAST content's, with its hash; every result
    displayed on the way was of the latest run started at that moment (a stale run's
    result is never shown as current); and every run is over, no process left."""
    save = PATTERNS[pattern]
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(RIGHT)
    spy = Spy(monkeypatch)
    n = 50
    first = "right" if last == "wrong" else "wrong"  # alternate so the 50th is `last`
    texts = [((WRONG, "wrong") if (i % 2 == 0) == (first == "wrong") else (RIGHT, "right")) for i in range(n)]
    assert texts[-1][1] == last
    texts = [(f"{t}\n# save {i}\n", k) for i, (t, k) in enumerate(texts)]
    kind = {ws.content_hash(t.encode()): k for t, k in texts}
    kind[ws.content_hash(RIGHT.encode())] = "right"

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await screen_of(pilot)
            await wait_for_run(pilot, digest_of(path))
            began_before = len(spy.begun)

            t0 = time.monotonic()
            for i, (text, _) in enumerate(texts):
                save(path, text)
                await asyncio.sleep(max(0.0, t0 + (i + 1) * 0.03 - time.monotonic()))
            burst = time.monotonic() - t0
            final = digest_of(path)
            assert final == ws.content_hash(texts[-1][0].encode())

            panel = await wait_for_run(pilot, final, 30)
            assert panel.outcome == "done"
            assert kind_of(panel.statuses()) == last, panel.statuses()
            assert panel.digest == final == screen.controller.started_hash
            assert final[:8] in str(screen.query_one("#run-status").render())
            assert screen.last.content_hash == final

            # every run is over and its process gone (a warm worker waits for the next)
            await wait_for(
                pilot,
                lambda: child_runs and all(not r.worker.alive() for r in child_runs),
                10,
                "every run's worker to exit",
            )
            began = spy.begun[began_before:]
            # a burst starts at most one run per save (the last run may have been started
            # for an earlier save and found the last content when it imported: it then
            # carries the last content's hash, checked above as started_hash)
            assert 1 <= len(began) <= n
            if pattern == "safe-write":
                # atomic saves: every run started was of a content that was really saved
                assert all(d in kind for _, d in began), "a run of a torn read"
            # nothing stale was ever displayed as current; what was shown matched its content
            for shown in spy.shown:
                assert shown["digest"] == shown["latest_started"], shown
                if shown["digest"] in kind and shown["outcome"] == "done":
                    assert kind_of(shown["statuses"]) == kind[shown["digest"]], shown
            assert spy.shown[-1]["digest"] == final
            # and it stays so: no late result of an older run replaces it
            await pilot.pause(0.3)
            assert panel.digest == final and spy.shown[-1]["digest"] == final
            print(
                f"\n{pattern}: {n} saves in {burst:.2f} s -> {len(began)} runs started, "
                f"{len(spy.shown)} results shown"
            )
            # (how fast the burst itself went depends on the machine: reported above, not
            # asserted -- what must hold is which results are shown)

    run(body())


# --- (f) other files in the workspace ----------------------------------------------


def test_changes_to_other_files_start_no_run(make_app, workspace, monkeypatch):
    """Another .py, editor temp and swap files, a backup, the app's own export written
    into the workspace, a __pycache__ folder and a same-named file in a subfolder: the
    watcher hands none of them to the screen, and no run starts.  A final unchanged save
    of the exercise proves the watcher had seen everything before the check."""
    import tui.watch

    path = workspace / A1.exercise_name
    batches: list = []
    real_saves = tui.watch.saves

    async def recording_saves(*a, **k):
        async for changes in real_saves(*a, **k):
            batches.append(set(changes))
            yield changes

    monkeypatch.setattr(tui.watch, "saves", recording_saves)

    async def body():
        app = make_app(open_workshop=A1.id, results_dir=workspace)  # exports land in the workspace
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await screen_of(pilot)
            await wait_for_run(pilot, digest_of(path))
            runs, gen = screen.runs_started, screen.controller.generation
            seen = len(batches)
            stem = path.stem

            # another exercise-like .py, edited several ways
            other = workspace / "scratch.py"
            other.write_text(RIGHT)
            editor_save(other, WRONG)
            other.write_text(RIGHT + "\n# more\n")
            # vim: swap file, its 4913 probe, a backup~
            swp = workspace / f".{path.name}.swp"
            swp.write_bytes(b"b0VIM 9.0" + b"\0" * 4096)
            (workspace / "4913").write_text("")
            os.remove(workspace / "4913")
            (workspace / f"{path.name}~").write_text(RIGHT)
            swp.unlink()
            # a JetBrains-style temp file left beside the exercise
            (workspace / f"{path.name}___jb_tmp___").write_text(WRONG)
            # a results export, by hand and by the app itself ('o')
            (workspace / f"{stem}-results.json").write_text("{}")
            await pilot.press("o")
            await wait_for(pilot, lambda: list(workspace.glob(f"{A1.id}-*.json")), 10, "the export")
            # a __pycache__ folder with a compiled copy of the exercise
            cache = workspace / "__pycache__"
            cache.mkdir(exist_ok=True)
            (cache / f"{stem}.cpython-311.pyc").write_bytes(b"\0" * 64)
            # a file with the exercise's own name, but in a subfolder
            sub = workspace / "old"
            sub.mkdir()
            (sub / path.name).write_text(WRONG)
            editor_save(sub / path.name, WRONG + "\n# again\n")

            # the sentinel: the exercise saved unchanged (the watcher must see this one)
            await expect_no_run(
                pilot, screen, lambda: editor_save(path, path.read_text()), "the sentinel save"
            )
            assert screen.runs_started == runs and screen.controller.generation == gen
            handed = [p for b in batches[seen:] for _change, p in b]
            assert handed, "the watcher handed over nothing, not even the sentinel"
            assert {Path(p) for p in handed} == {path}, handed

    run(body())


# --- what is hashed is what runs --------------------------------------------------------

# A wrong answer of exactly the reference's size (a typo-sized edit).
SAME_SIZE_WRONG = RIGHT.replace("scale_right = math.exp(m_right - m)", "scale_right = math.exp(m - m_right)")


def save_with_mtime(path: Path, text: str, mtime: float) -> None:
    """A safe-write save whose file carries ``mtime`` (two saves within one second, or a
    file system with coarse timestamps)."""
    tmp = path.with_name(f".{path.name}.pinned.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.utime(tmp, (mtime, mtime))
    os.replace(tmp, path)


def test_two_saves_of_equal_size_in_one_second_check_the_new_code(make_app, workspace, monkeypatch):
    """Python trusts a cached .pyc when the source's size and whole-second mtime match:
    a typo fix saved within the same second as the previous save must still be checked
    as the new code, not the cached old one (bytecode writing on, as for a learner)."""
    assert len(SAME_SIZE_WRONG) == len(RIGHT) and SAME_SIZE_WRONG != RIGHT
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    pinned = int(time.time()) - 5
    save_with_mtime(path, RIGHT, pinned)

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(120, 40)) as pilot:
            await screen_of(pilot)
            panel = await wait_for_run(pilot, digest_of(path))
            assert set(panel.statuses()) == {"pass"}
            save_with_mtime(path, SAME_SIZE_WRONG, pinned)
            panel = await wait_for_run(pilot, digest_of(path), 30)
            assert "fail" in panel.statuses(), panel.statuses()

    run(body())


@pytest.mark.parametrize("order", ["relabel-first", "batch-first"])
def test_a_save_racing_the_run_start_is_never_shown_under_the_older_hash(
    make_app, workspace, monkeypatch, order
):
    """The app hashes the file, then a worker imports it a moment later: a save in
    between means the run checks newer content than its hash says.  Here the watcher is
    replaced by the test, which hands the screen its batches at moments a real watcher
    can produce: A is saved and its run starts; B (wrong) is saved before the worker
    imports; once B is being checked, A is saved back and one batch covers both saves
    (content A again).  The screen must end showing A's own result (PASS) under A's
    hash, never B's FAIL labelled as A.

    relabel-first: the run has said which content it imported before that batch is
    handled; batch-first: the batch is handled before (the run's thread is held at that
    point), so it is compared with A and skipped, and only the finished run can notice."""
    import threading

    import checks.running.session as runner
    import tui.watch

    spy = Spy(monkeypatch)

    async def test_driven_saves(*a, **k):
        yield set()  # "the watch is in place"
        await asyncio.Event().wait()  # then nothing: the test calls request_run()

    monkeypatch.setattr(tui.watch, "saves", test_driven_saves)

    hold, imported, armed = threading.Event(), threading.Event(), threading.Event()
    b_saved = threading.Event()

    class Held(runner.ChildRun):
        def events(self):
            if armed.is_set():  # the job goes out (and the worker reads the file) after B's save
                b_saved.wait(20)
            for ev in super().events():
                if isinstance(ev, Loaded) and armed.is_set():
                    imported.set()
                    if order == "batch-first":
                        hold.wait(20)
                yield ev

    monkeypatch.setattr(runner, "ChildRun", Held)

    path = workspace / A1.exercise_name
    a_text, b_text = RIGHT + "\n# A\n", WRONG + "\n# B\n"
    a, b = ws.content_hash(a_text.encode()), ws.content_hash(b_text.encode())

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await screen_of(pilot)
            panel = await wait_for_run(pilot, digest_of(path))  # the starter
            editor_save(path, a_text)
            armed.set()
            assert screen.request_run()  # the batch of save A
            editor_save(path, b_text)  # before the run's worker reads the file
            b_saved.set()
            await wait_for(pilot, imported.is_set, 15, "the worker to import B")
            if order == "relabel-first":
                await wait_for(pilot, lambda: panel.records, 15, "B's first record")
            editor_save(path, a_text)
            started = screen.request_run()  # one batch: B, then A
            assert started == (order == "relabel-first")
            hold.set()
            panel = await wait_for_run(pilot, a, 30)
            assert set(panel.statuses()) == {"pass"}, panel.statuses()
            await wait_for(pilot, lambda: not screen.controller.running(), 10, "the runs to end")
            assert panel.digest == a and set(panel.statuses()) == {"pass"}
            for shown in spy.shown:  # B's result, if shown, under B's hash
                expected = {a: "right", b: "wrong"}.get(shown["digest"])
                if expected and shown["outcome"] == "done":
                    assert kind_of(shown["statuses"]) == expected, shown
            if order == "batch-first":  # the held run finished, current, as B's
                assert any(sh["digest"] == b for sh in spy.shown)
            progress, _ = ws.load_progress(workspace)
            assert progress[A1.id]["content_hash"] == a
            assert progress[A1.id]["status"] == "passed"

    try:
        run(body())
    finally:
        hold.set()


# --- poll mode (file systems that send no events) ----------------------------------------


def test_poll_mode_sees_a_second_save_within_the_same_second(make_app, workspace):
    """--poll: a save whose timestamp falls in the same second as the previous save's
    (a quick fix right after a save) is seen too: the result shown is the last one's.
    The second save's mtime is pinned 1 µs from the first's, so the test does not
    depend on when in a second it runs (nor on how long the first run takes)."""
    path = workspace / A1.exercise_name

    async def body():
        app = make_app(open_workshop=A1.id, poll=True)
        async with app.run_test(size=(120, 40)) as pilot:
            await screen_of(pilot)
            await wait_for_run(pilot, digest_of(path))
            editor_save(path, WRONG)
            panel = await wait_for_run(pilot, digest_of(path), 15)  # the first save's result
            assert "fail" in panel.statuses()
            first = path.stat().st_mtime_ns
            second = first + 1000 if first % 10**9 < 10**9 - 1000 else first - 1000
            tmp = path.with_name(f".{path.name}.second.tmp")
            tmp.write_text(RIGHT, encoding="utf-8")
            os.utime(tmp, ns=(second, second))
            os.replace(tmp, path)
            panel = await wait_for_run(pilot, digest_of(path), 15)
            assert set(panel.statuses()) == {"pass"}, panel.statuses()

    run(body())
