"""The repair search after a failing run (tui.screens.workshop_repair): the line under the
results while it looks and once it found the change, f and the change's screen, the
search killed by a save, by leaving and by quitting (no process left), an older search's
result never shown for newer content, and the export's "repair".

The search is a stand-in (tests/tui/fake_repair.py) except in the last test, which runs
``python -m checks.repair`` on a kept wrong answer."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.text import Text

from checks.judging import Record
from tui import repair_child
from tui.messages import RepairFinished, RepairProgress
from workshops import catalog

from tui_helpers import digest_of, save, wait_for, wait_for_run

HERE = Path(__file__).resolve().parent
A1 = catalog.get("online_normalizer")
WRONG = (A1.folder / "wrong" / "raw_denominator.py").read_text(encoding="utf-8")
OTHER_WRONG = (A1.folder / "wrong" / "empty_nan.py").read_text(encoding="utf-8")


def gone(pid: int) -> bool:
    """The process ended: no such process, or one that is dead and waits to be reaped by
    init (a child of a search its own parent outlived cannot be reaped by the app)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """The stand-in search, its arguments and pids written under tmp_path; ``fake.set(
    status=..., steps=..., delay=...)`` before the search starts."""
    monkeypatch.setattr(repair_child, "REPAIR_MODULE", "fake_repair")
    monkeypatch.setenv("PYTHONPATH", str(HERE))
    args, pids = tmp_path / "repair-args.jsonl", tmp_path / "repair-pids"
    monkeypatch.setenv("FAKE_REPAIR_ARGS", str(args))
    monkeypatch.setenv("FAKE_REPAIR_PIDS", str(pids))

    def set_(**kw):
        for k, v in kw.items():
            monkeypatch.setenv(f"FAKE_REPAIR_{k.upper()}", str(v))

    def started() -> list:
        return [json.loads(line) for line in args.read_text().splitlines()] if args.exists() else []

    def read_pids() -> tuple:
        """(the search, a worker in its group, a worker in a session of its own)"""
        text = pids.read_text() if pids.exists() else ""
        return tuple(int(p) for p in text.split())

    return SimpleNamespace(set=set_, started=started, pids=read_pids)


def line_of(app):
    from tui.widgets.repair import RepairLine

    return app.screen.query_one(RepairLine)


def said(app) -> str:
    line = line_of(app)
    return str(line.render()) if line.display else ""


def said_flat(app) -> str:
    """What the line says, its wrapped lines joined."""
    return " ".join(said(app).split())


def footer_keys(screen) -> list:
    footer = screen.query_one("Footer")
    return [f"{k.key_display} {k.description}" for k in footer.query("*") if hasattr(k, "key_display")]


async def _failing(pilot, workspace, text: str = WRONG) -> Path:
    path = workspace / A1.exercise_name
    await wait_for_run(pilot, digest_of(path))  # the starter's run: TODO, no search
    await save(pilot, path, text)
    await wait_for_run(pilot, digest_of(path))
    return path


# --- after a failing run ---


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_line_says_how_far_then_what_it_found_and_f_shows_the_change(make_app, fake, size, tmp_path):
    from tui.screens.repair import RepairScreen

    records_file = tmp_path / "repair-records.jsonl"
    fake.set(status="found", steps=6, delay=0.3, records=records_file)

    async def body():
        app = make_app(open_workshop=A1.id, repair=True)
        async with app.run_test(size=size) as pilot:
            path = app.workspace / A1.exercise_name
            await wait_for_run(pilot, digest_of(path))
            assert fake.started() == [] and not line_of(app).display  # a TODO: no search
            assert "f Fix" not in footer_keys(app.screen)
            path = await _failing(pilot, app.workspace)
            await wait_for(pilot, lambda: "tried" in said(app), 90, "the search's progress")
            assert said_flat(app).startswith("Looking for the smallest change that makes every check pass")
            assert "of 6" in said(app)
            await wait_for(pilot, lambda: "press f to see the change" in said(app), 15, "the repair")
            shown = said(app)
            assert shown.startswith("line ") and "raw denominator" in said_flat(app)
            for row in shown.splitlines():  # fitted to its width: nothing cut, at most an ellipsis
                assert len(row) <= line_of(app).content_size.width, row
            line = line_of(app)
            assert line.region.bottom <= app.size.height - 1, "under the footer"
            await wait_for(pilot, lambda: "f Fix" in footer_keys(app.screen), 5, "f in the footer")
            # it searched a copy of the content that failed, with the arguments of its contract
            (argv,) = fake.started()
            assert argv[0] == A1.id and "--jsonl" in argv and "--interpret" not in argv
            # the failing run's records on its input: the search starts from the verdict shown
            (given,) = [json.loads(x)["records"] for x in records_file.read_text().splitlines()]
            assert {(r["id"], r["status"]) for r in given} == {
                (r.id, str(r.status)) for r in app.screen.query_one("ResultsPanel").records.values()
            }
            assert any(r["status"] == "fail" for r in given)
            copy = Path(argv[argv.index("--file") + 1])
            assert copy.name == path.name and copy != path and not copy.exists()  # removed after
            await pilot.press("f")
            await wait_for(pilot, lambda: isinstance(app.screen, RepairScreen), 5, "the change's screen")
            text = str(app.screen.query_one("#repair-text").render())
            repair = app.screen.repair
            assert repair["before"] in text and repair["after"] in text and "raw denominator" in text
            assert str(path) in repair["diff"] and str(copy) not in repair["diff"]  # said as the learner's
            await pilot.press("f")  # f closes it, as escape and q do
            await wait_for(pilot, lambda: not isinstance(app.screen, RepairScreen), 5, "closed")
            assert path.read_text(encoding="utf-8") == WRONG  # the learner's file is not changed

    asyncio.run(body())


def test_a_search_started_with_the_run_gets_its_records_and_a_pass_stops_it(
    make_app, fake, tmp_path, monkeypatch
):
    """Where cores are to spare (KERNEL_COURSE_REPAIR_STANDBY=1 here), the search starts when
    a run begins and waits for its records: the failing run's search is given them at the
    run's end and says its repair; the passing run's is stopped with the run."""
    monkeypatch.setenv("KERNEL_COURSE_REPAIR_STANDBY", "1")
    records_file = tmp_path / "repair-records.jsonl"
    fake.set(status="found", steps=2, delay=0.1, records=records_file)
    right = (A1.folder / "solution.py").read_text(encoding="utf-8")
    given: list = []
    give = repair_child.RepairSearch.give
    monkeypatch.setattr(repair_child.RepairSearch, "give", lambda self, r: (given.append(r), give(self, r)))

    async def body():
        app = make_app(open_workshop=A1.id, repair=True)
        async with app.run_test(size=(120, 40)) as pilot:
            path = app.workspace / A1.exercise_name
            await wait_for_run(pilot, digest_of(path))  # the starter: TODO, its search stopped
            assert app.screen.repair_search is None and not given
            await save(pilot, path, WRONG)
            await wait_for_run(pilot, digest_of(path))
            await wait_for(pilot, lambda: "press f to see the change" in said(app), 20, "the repair")
            # started with the run, handed the records when it ended: what its input read
            assert len(given) == 1 and any(r["status"] == "fail" for r in given[0])
            lines = [json.loads(x)["records"] for x in records_file.read_text().splitlines() if x.strip()]
            assert lines == given
            await save(pilot, path, right)
            await wait_for_run(pilot, digest_of(path))
            await wait_for(pilot, lambda: app.screen.repair_search is None, 10, "no search after a pass")
            await wait_for(pilot, lambda: gone(fake.pids()[0]), 10, "the passing run's search stopped")
            assert len(given) == 1 and not line_of(app).display and "f Fix" not in footer_keys(app.screen)

    asyncio.run(body())


@pytest.mark.parametrize("status", ["none", "budget", "crash"])
def test_without_a_repair_the_line_is_dim_and_f_does_nothing(make_app, fake, tmp_path, status):
    from tui.screens.workshop import WorkshopScreen

    # a search that crashes leaves no worker behind (it ran long enough to be seen starting them)
    fake.set(status=status, steps=3, delay=0.6 if status == "crash" else 0)

    async def body():
        app = make_app(open_workshop=A1.id, repair=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await _failing(pilot, app.workspace)
            await wait_for(pilot, lambda: "nothing" in line_of(app).classes, 15, "the search's end")
            if status == "crash":
                assert said_flat(app).startswith("No fix suggested: the search ended without a result")
                assert "the fake search broke" in said_flat(app)
                assert all(gone(p) for p in fake.pids()), "a worker outlived the search that crashed"
            else:
                assert said_flat(app).startswith("no change of one or two edits made every check pass")
            assert "press f" not in said(app)
            screen = app.screen
            assert not screen.check_action("show_repair", ())
            assert "f Fix" not in footer_keys(screen)
            await pilot.press("f")
            await pilot.pause(0.3)
            assert app.screen is screen and isinstance(app.screen, WorkshopScreen)

    asyncio.run(body())


@pytest.mark.parametrize("how", ["save", "leave", "quit"])
def test_a_save_leaving_or_quitting_kills_the_search_at_once(make_app, fake, how):
    """The search and both of its workers, the one in a process group of its own too."""
    fake.set(status="found", steps=1000, delay=0.2)

    async def body():
        app = make_app(open_workshop=A1.id, repair=True)
        async with app.run_test(size=(100, 30)) as pilot:
            path = await _failing(pilot, app.workspace)
            pids = await wait_for(pilot, fake.pids, 15, "the search's process")
            await wait_for(pilot, lambda: "tried" in said(app), 90, "the search's progress")
            assert not any(gone(p) for p in pids)
            folder = app.screen.repair_search.folder  # ours, with the copy it searches
            assert folder is not None and folder.is_dir()
            if how == "save":
                await save(pilot, path, A1.solution.read_text(encoding="utf-8"))
                await wait_for(pilot, lambda: all(gone(p) for p in pids), 5, "the search killed")
                panel = await wait_for_run(pilot, digest_of(path))
                assert set(panel.statuses()) == {"pass"}
                assert not line_of(app).display and len(fake.started()) == 1
            elif how == "leave":
                await pilot.press("escape")
                await wait_for(pilot, lambda: all(gone(p) for p in pids), 5, "the search killed")
            else:
                await pilot.press("ctrl+q")
        if how == "quit":
            assert all(gone(p) for p in pids), "the search outlived the app"
        assert not folder.exists()  # removed with it, even when the app quits at once
        with pytest.raises(ProcessLookupError):  # reaped: no zombie of the app's child
            os.kill(pids[0], 0)

    asyncio.run(body())


def test_an_older_search_is_never_shown_for_newer_content(make_app, fake):
    fake.set(status="found", steps=1000, delay=0.2)

    async def body():
        app = make_app(open_workshop=A1.id, repair=True)
        async with app.run_test(size=(100, 30)) as pilot:
            path = await _failing(pilot, app.workspace)
            old_digest = digest_of(path)
            await wait_for(pilot, fake.pids, 15, "the first search")
            screen = app.screen
            old = screen.repair_search
            old_pid = old.pid
            # a newer failing save: the first search is killed, another starts for it
            await save(pilot, path, OTHER_WRONG)
            await wait_for_run(pilot, digest_of(path))
            await wait_for(pilot, lambda: gone(old_pid), 5, "the first search killed")
            await wait_for(pilot, lambda: len(fake.started()) == 2, 15, "the second search")
            # what the first one would have said arrives late: it is dropped
            late = {"status": "found", "says": "line 1: OLD", "before": "a", "after": "b", "diff": ""}
            screen.post_message(_update(RepairFinished(old.generation, old_digest, late)))
            screen.post_message(_update(RepairProgress(old.generation, old_digest, 999, 1000)))
            await pilot.pause(0.5)
            assert "OLD" not in said(app) and "999" not in said(app)
            assert screen.repair_found is None and screen.repair_for(old_digest) is None

    asyncio.run(body())


def _update(event):
    from tui.screens.workshop_repair import RepairUpdate

    return RepairUpdate(event)


def test_the_export_holds_the_repair_of_the_exported_content(make_app, fake, tmp_path):
    fake.set(status="found", steps=2, delay=0)

    async def body():
        app = make_app(open_workshop=A1.id, repair=True)
        async with app.run_test(size=(120, 40)) as pilot:
            path = app.workspace / A1.exercise_name
            await wait_for_run(pilot, digest_of(path))
            await pilot.press("o")  # the starter's run: no search, no "repair"
            first = await wait_for(pilot, lambda: sorted((tmp_path / "exports").glob("*.json")), 10, "export")
            assert "repair" not in json.loads(first[0].read_text())
            await _failing(pilot, app.workspace)
            await wait_for(pilot, lambda: app.screen.repair_found, 15, "the repair")
            await pilot.press("o")
            files = await wait_for(
                pilot,
                lambda: [p for p in (tmp_path / "exports").glob("*.json") if p not in first],
                10,
                "export",
            )
            data = json.loads(files[0].read_text())
            assert data["content_hash"] == digest_of(path) and data["outcome"] == "failed"
            assert data["repair"] == app.screen.repair_found
            assert data["repair"]["status"] == "found" and data["repair"]["says"].startswith("line ")
            assert not list((tmp_path / "exports").glob("*.tmp*"))  # written atomically

    asyncio.run(body())


# --- the parts ---


def _record(check_id: str, status: str) -> Record:
    return Record(workshop=A1.id, id=check_id, label=check_id, status=status)


def test_which_runs_are_searched():
    fail, ok = _record("rows", "fail"), _record("cols", "pass")
    assert repair_child.wanted("done", [ok, fail])
    assert repair_child.wanted("timeout", [ok, _record("big", "error")])
    assert not repair_child.wanted("done", [ok])  # passed
    assert not repair_child.wanted("cancelled", [ok, fail])
    assert not repair_child.wanted("done", [fail, _record("other", "todo")])  # a TODO is left
    assert not repair_child.wanted("crashed", [_record("load", "error")])  # did not import
    assert not repair_child.wanted("done", [])


def test_the_command_follows_the_contract(tmp_path):
    search = repair_child.RepairSearch(
        "strided_softmax", tmp_path / "x.py", "0" * 64, 1, tmp_path, lambda e: None, interpret=True, budget=30
    )
    assert search.command(tmp_path / "copy.py")[1:] == [
        "-m",
        "checks.repair",
        "strided_softmax",
        "--file",
        str(tmp_path / "copy.py"),
        "--jsonl",
        "--records-from-stdin",
        "--interpret",
        "--budget",
        "30",
    ]
    assert repair_child.available("no_such_module_here") is False


def test_a_search_without_the_app_delivers_progress_then_its_repair(fake, tmp_path):
    """RepairSearch alone: progress at most ~4 a second, then the result, the file only read."""
    fake.set(status="found", steps=40, delay=0.02)
    path = tmp_path / "online_normalizer.py"
    path.write_text(WRONG, encoding="utf-8")
    before = path.stat().st_mtime_ns
    events, done = [], threading.Event()

    def got(event):
        events.append(event)
        if isinstance(event, RepairFinished):
            done.set()

    records = [_record("rows", "fail").to_dict()]
    search = repair_child.RepairSearch(A1.id, path, digest_of(path), 7, tmp_path, got, records=records)
    search.start()
    assert done.wait(30)
    progress = [e for e in events if isinstance(e, RepairProgress)]
    assert progress[0].tried == 0 and progress[0].candidates == 40  # begin
    assert 2 <= len(progress) <= 8, progress  # 0.8 s of progress lines, not 40 updates
    final = events[-1]
    assert final.generation == 7 and final.repair["status"] == "found" and final.error == ""
    assert path.stat().st_mtime_ns == before and path.read_text(encoding="utf-8") == WRONG


def test_records_longer_than_a_pipe_holds_never_block_the_app(fake, tmp_path):
    """give() from the app's thread returns at once though the search reads its input only
    once its workers are ready, and a line of records is longer than the pipe holds; the
    search then reads it whole."""
    records_file = tmp_path / "records.jsonl"
    fake.set(status="found", steps=1, read_after=1.5, records=records_file)
    path = tmp_path / "online_normalizer.py"
    path.write_text(WRONG, encoding="utf-8")
    done = threading.Event()
    search = repair_child.RepairSearch(
        A1.id, path, digest_of(path), 3, tmp_path, lambda e: isinstance(e, RepairFinished) and done.set()
    )
    search.start()
    deadline = time.monotonic() + 10
    while search.proc is None and time.monotonic() < deadline:
        time.sleep(0.02)
    many = [{**_record(f"check-{i}", "fail").to_dict(), "message": "x" * 2000} for i in range(400)]
    t = time.monotonic()
    search.give(many)
    assert time.monotonic() - t < 0.5  # about 800 KB: a blocking write would wait 1.5 s
    assert done.wait(30)
    (line,) = records_file.read_text().splitlines()
    assert len(json.loads(line)["records"]) == 400


def test_a_search_of_a_file_saved_since_does_not_start(fake, tmp_path):
    path = tmp_path / "online_normalizer.py"
    path.write_text(WRONG, encoding="utf-8")
    done = threading.Event()
    got = []
    search = repair_child.RepairSearch(
        A1.id, path, "0" * 64, 1, tmp_path, lambda e: (got.append(e), done.set()), records=[]
    )
    search.start()
    assert done.wait(10)
    assert got[0].repair is None and got[0].error == "" and fake.started() == []


@pytest.mark.parametrize("width", [20, 38, 78])
def test_the_text_is_wrapped_and_ends_in_an_ellipsis_where_cut(width):
    from tui.widgets.repair import fit

    sentence = "line 41: the K loop stops one tile early, so the last BLOCK_K columns never reach " * 3
    text = fit(Text(sentence.strip()), width, 3)
    rows = text.plain.split("\n")
    assert len(rows) <= 3 and all(len(r) <= width for r in rows)
    assert rows[-1].endswith("…")
    short = fit(Text("line 3: a short one"), width, 3).plain
    assert "…" not in short and short.replace("\n", " ") == "line 3: a short one"


# --- the real search ---


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return any(not gone(pid) for pid in _members(group))


def _members(group: int) -> list:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group:
                out.append(int(entry.name))
    return out


def test_the_real_search_on_a_kept_wrong_answer_then_a_one_line_mistake(make_app, tmp_path):
    """python -m checks.repair itself, in Triton's interpreter as the app's runs were
    (slower: a minute or two on two cores): a search killed by a newer save takes its warm
    workers with it (they run in process groups of their own), and the newer content's
    search ends with what the app shows of it: the sentence and f, or the note."""
    from tui.screens.repair import RepairScreen

    assert repair_child.available(), "python -m checks.repair is missing"
    i1 = catalog.get("strided_softmax")
    first = i1.folder / "wrong" / "max_not_subtracted.py"
    # the newer save: the reference answer with its store's mask left out (a search that ends
    # in seconds with a verified change, where a kept wrong answer of several lines searches
    # until every candidate is tried)
    second = tmp_path / "unmasked_store.py"
    store = "tl.store(out_addrs, probs.to(out_ptr.dtype.element_ty), mask=in_row)"
    reference = (i1.folder / "solution.py").read_text()
    assert store in reference
    second.write_text(reference.replace(store, "tl.store(out_addrs, probs.to(out_ptr.dtype.element_ty))"))

    async def body():
        app = make_app(open_workshop=i1.id, repair=True)
        async with app.run_test(size=(80, 24)) as pilot:
            path = app.workspace / i1.exercise_name
            await wait_for(pilot, lambda: app.screen.watching, 30, "the watch")
            shutil.copyfile(first, path)
            await wait_for_run(pilot, digest_of(path), timeout=240)
            search = app.screen.repair_search
            assert app.screen.interpret and search is not None and "--interpret" in search.command(path)
            await wait_for(pilot, lambda: search.groups, 120, "the search's workers")
            groups, leader = set(search.groups), search.pid
            assert groups and all(_group_alive(g) for g in groups)
            shutil.copyfile(second, path)  # a newer save: the search and its workers end at once
            await wait_for(pilot, lambda: gone(leader), 10, "the first search killed")
            await wait_for(pilot, lambda: not any(_group_alive(g) for g in groups), 10, "its workers killed")
            await wait_for_run(pilot, digest_of(path), timeout=240)
            await wait_for(pilot, lambda: line_of(app).state in ("found", "nothing"), 300, "the search")
            repair = app.screen.repair_for(digest_of(path))
            assert repair is not None, said(app)
            assert repair["status"] == "found" and repair["line"] == 54, repair
            assert "the store has no mask" in repair["says"] and "press f to see the change" in said(app)
            assert "mask=in_row" in repair["after"] and "mask" not in repair["before"]
            await pilot.press("f")
            await wait_for(pilot, lambda: isinstance(app.screen, RepairScreen), 5, "the change")
            await pilot.press("escape")
            assert path.read_bytes() == second.read_bytes()

    asyncio.run(body())


def test_a_reproduction_is_kept_and_said_with_its_note_and_no_f():
    """No edit of the file passed, but a change of a reference answer gives its result:
    the app keeps that result and says the sentence and that it is not a verified fix."""
    from tui.repair_child import normal_repair
    from tui.widgets.repair import note_of

    repair = {
        "status": "reproduced",
        "says": "your result on contiguous rows is what the reference gives with `numerators` "
        "where it has `numerators * (1.0 / denominator)` (line 49 of solution.py)",
        "note": "a reproduction, not a verified repair",
        "line": 49,
    }
    kept = normal_repair(repair)
    assert kept is not None and kept["status"] == "reproduced"
    said = note_of(kept)
    assert said.startswith("your result on contiguous rows is what the reference gives with `numerators`")
    assert "not a verified repair" in said
