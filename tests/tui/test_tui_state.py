"""Progress that carries (best result, hints, reset history, next workshop, course
progress), the export (where, what, which mode), and the results panel's readings of
a record (a hang with its place, a load error as one row), without a check run where
none is needed."""

from __future__ import annotations

import asyncio
import json
import os
import stat

from checks import workspace as ws
from checks.judging.records import Record
from checks.running import RunRecords
from tui import export
from workshops import catalog

A1 = catalog.get("online_normalizer")


def rec(status, id_="c", **kw):
    return Record(workshop=A1.id, id=id_, label=kw.pop("label", id_), status=status, **kw)


# --- progress state -----------------------------------------------------------------


def test_best_result_hints_and_reset_history_are_kept(tmp_path):
    space = tmp_path / "ws"
    ws.ensure_exercise(A1, space)
    ws.record_progress(A1.id, "failing", "h1", space)
    ws.record_result(A1.id, "failing", 3, 11, "h1", space)
    ws.record_progress(A1.id, "passed", "h2", space)
    ws.record_result(A1.id, "passed", 11, 11, "h2", space)
    ws.record_hints(A1.id, 2, space)
    ws.record_hints(A1.id, 1, space)  # never fewer than revealed
    ws.reset(A1, space)
    ws.record_progress(A1.id, "todo", "h3", space)  # the starter again
    ws.record_result(A1.id, "todo", 0, 11, "h3", space)
    entry = ws.load_progress(space)[0][A1.id]
    assert entry["status"] == "todo"
    assert entry["best"]["status"] == "passed" and entry["best"]["passed"] == 11
    assert entry["hints_shown"] == 2
    assert [h["event"] for h in entry["history"]] == ["reset"] and entry["history"][0]["backup"]
    # the progress file has an ordinary mode
    mode = stat.S_IMODE(os.stat(ws.progress_path(space)).st_mode)
    assert mode == 0o644 & ~_umask()


def test_next_workshop_follows_prerequisites_and_course_progress_counts_levels():
    all_ = catalog.workshops()
    by = {w.code: w for w in all_}
    assert by["A3"].requires == (by["I3"].id, by["A1"].id)  # "A2 helpful" is not required
    nxt = ws.next_workshops(by["A1"], all_, {})
    assert nxt[0].code == "A2"  # builds on A1 first
    assert by["A3"] not in nxt  # I3 not passed yet
    progress = {
        by["I3"].id: {"status": "passed"},
        by["A1"].id: {"status": "todo", "best": {"status": "passed"}},
    }
    assert by["A3"] in ws.next_workshops(by["A1"], all_, progress)
    levels = dict((lvl, (n, k)) for lvl, n, k in ws.level_progress(all_, progress))
    assert levels == {"intermediate": (1, 3), "advanced": (1, 3)}


# --- export -----------------------------------------------------------------------


def test_export_outcome_counts_place_and_mode(tmp_path, make_app):
    assert export.outcome_word("done", [rec("pass"), rec("pass")]) == "passed"
    assert export.outcome_word("done", [rec("pass"), rec("fail")]) == "failed"
    assert export.outcome_word("done", [rec("pass"), rec("todo")]) == "incomplete"
    assert export.outcome_word("timeout", [rec("pass"), rec("error")]) == "failed"
    assert export.outcome_word("done", [rec("error", "load")]) == "failed"
    assert export.outcome_word("done", [rec("pass"), rec("skipped")]) == "passed here"
    assert export.outcome_word("cancelled", [rec("pass"), rec("not run", "d")]) == "not run"
    assert export.outcome_word("done", [rec("skipped")]) == "unavailable"
    last = RunRecords(content_hash="ab" * 32)
    for r in [rec("pass", "a"), rec("fail", "b"), rec("todo", "c")]:
        last.add(r)
    last.outcome = "done"
    data = export.payload(A1, tmp_path / "x.py", last, {}, False)
    assert data["outcome"] == "failed" and data["run_outcome"] == "done"
    assert data["counts"] == {"pass": 1, "fail": 1, "todo": 1, "error": 0, "skipped": 0, "not run": 0}
    assert data["summary"] == "failed: 1 of 3 checks failed"
    path = export.write(tmp_path / "out", data)
    again = export.write(tmp_path / "out", data)
    assert path != again and json.loads(path.read_text())["counts"]["fail"] == 1
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644 & ~_umask()
    assert not list((tmp_path / "out").glob(".*"))  # no temporary file left
    # by default beside the workspace's state folder, never in the course checkout
    from tui.app import CourseApp

    app = CourseApp(workspace=tmp_path / "mine", gpu=False)
    assert app.results_dir == tmp_path / ".mine-state" / "exports"


def test_cli_export_dir(monkeypatch, tmp_path):
    import tui.__main__ as entry

    seen = {}
    monkeypatch.setattr(entry, "missing_terminal", lambda: "")  # pytest's stdin is none
    monkeypatch.setattr("tui.app.CourseApp.run", lambda self: seen.update(dir=self.results_dir))
    assert entry.main(["--workspace", str(tmp_path / "w"), "--export-dir", str(tmp_path / "e")]) == 0
    assert seen["dir"] == (tmp_path / "e").resolve()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# --- the results panel's readings ------------------------------------------------


def test_results_panel_hang_place_load_error_and_columns():
    from textual.app import App, ComposeResult

    from tui.widgets.record_text import story
    from tui.widgets.results import ResultsPanel

    plan = [{"id": f"c{i}", "label": f"check number {i} with a fairly long label"} for i in range(32)]

    class One(App):
        def compose(self) -> ComposeResult:
            yield ResultsPanel()

    async def body():
        app = One()
        async with app.run_test(size=(120, 30)) as pilot:
            panel = app.query_one(ResultsPanel)
            # a hang with its place: the table says where, the story too
            panel.start(plan[:2], "f" * 64)
            panel.started("c0")
            hang = rec(
                "error",
                "c0",
                label=plan[0]["label"],
                message="timed out: stopped after 3 s (an infinite loop, or far too slow)",
                seconds=3.2,
                details={"stuck_at": {"file": "/w/online_normalizer.py", "line": 12, "function": "merge"}},
            )
            panel.add(hang)
            await pilot.pause()
            cell = str(panel.table.get_cell_at((0, 3)))
            assert cell == "timed out after 3.2 s at online_normalizer.py:12 in merge"
            assert "Stuck at online_normalizer.py:12 in merge" in story(hang).plain
            # the Check column holds the id, whole; the Message column the rest of the width
            assert str(panel.table.get_cell_at((0, 1))) == "c0"
            assert panel.message_w > 60

            # a load error: one row with the line, counts that agree
            panel.start(plan, "e" * 64)
            assert panel.table.row_count == 32
            load = rec(
                "error",
                "load",
                label="import online_normalizer.py",
                message="SyntaxError in online_normalizer.py, line 3: invalid syntax",
            )
            panel.add(load)
            panel.finish("done", [load], "e" * 64)
            await pilot.pause()
            assert panel.table.row_count == 1
            assert str(panel.table.get_cell_at((0, 0))) == "ERROR"
            assert "line 3" in str(panel.table.get_cell_at((0, 3)))
            assert str(app.query_one("#run-count").render()) == "0/32 ran"
            bar = app.query_one("#run-progress")
            assert (bar.total, bar.progress) == (32, 0)
            said = str(app.query_one("#run-status").render())
            assert "does not import (line 3)" in said and "none of the 32 checks ran" in said

            # narrow: the time column folds away, the message column stays
            await pilot.resize_terminal(60, 30)
            await pilot.pause()
            assert [str(k.value) for k in panel.table.columns] == ["status", "check", "message"]
            cut = str(panel.table.get_cell("load", "message"))
            assert cut.endswith("…") and load.message.startswith(cut[:-1])  # cut with a sign
            await pilot.resize_terminal(120, 30)
            await pilot.pause()
            assert [str(k.value) for k in panel.table.columns] == ["status", "check", "time", "message"]
            assert "line 3" in str(panel.table.get_cell("load", "message"))

    asyncio.run(body())


def test_contents_width_follows_the_headings():
    """The contents panel is as wide as its longest heading needs, for every lesson
    (so at 200 columns no heading is cut), and the layout picks by size."""
    from tui import layout

    for w in catalog.workshops():
        heads = layout.headings(w.lesson)
        assert heads, w.id
        need = max(4 * (lvl - 1) + 3 + len(t) for lvl, t in heads) + 4
        assert layout.contents_width(w.lesson) == max(16, need), (w.id, need)
    assert layout.headings("# A\n```\n# not a heading\n```\n## B\n") == [(1, "A"), (2, "B")]
    assert [layout.size_class(*s) for s in ((80, 24), (120, 40), (200, 60), (200, 24))] == [
        "-compact",
        "-normal",
        "-wide",
        "-compact",
    ]
