"""The progress file under concurrent writers ("two app instances on one workspace"),
and a corrupt progress file: set aside and reported, never fatal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from checks import workspace as ws

REPO = Path(__file__).resolve().parent.parent
WRITERS, UPDATES = 4, 25

# One process: wait for the start signal (so all of them contend at once), then
# record UPDATES workshops of its own, one at a time.
WRITER = textwrap.dedent("""
    import os, sys, time
    from checks import workspace as ws
    workspace, go, k, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    end = time.monotonic() + 30
    while not os.path.exists(go):
        if time.monotonic() > end:
            sys.exit("no start signal")
        time.sleep(0.001)
    for i in range(n):
        ws.record_progress(f"w{k}-{i:02d}", "passed" if i % 2 else "failing", f"hash-{k}-{i}",
                           workspace=workspace, note="concurrency")
""")

# A reader meanwhile (the browse screen of another instance): it must never see a
# half-written file, which load_progress would take for a corrupt one and set aside.
READER = textwrap.dedent("""
    import json, os, sys, time
    from checks import workspace as ws
    workspace, go, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    while not os.path.exists(go):
        time.sleep(0.001)
    reads, warnings = 0, []
    while not os.path.exists(stop):
        data, warning = ws.load_progress(workspace)
        reads += 1
        if warning or not isinstance(data, dict):
            warnings.append(str(warning))
    print(json.dumps({"reads": reads, "warnings": warnings}))
""")


def _spawn(script: str, *args) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_concurrent_writers_lose_no_update_and_never_corrupt_the_file(tmp_path):
    workspace = tmp_path / "workspace"
    go, stop = tmp_path / "go", tmp_path / "stop"
    writers = [_spawn(WRITER, workspace, go, k, UPDATES) for k in range(WRITERS)]
    reader = _spawn(READER, workspace, go, stop)
    try:
        time.sleep(0.3)  # let the interpreters start, then: go
        go.touch()
        outs = [w.communicate(timeout=60) for w in writers]
        stop.touch()
        reader_out, reader_err = reader.communicate(timeout=30)
    finally:
        for p in writers + [reader]:
            if p.poll() is None:
                p.kill()
                p.wait()
    for w, (_, err) in zip(writers, outs):
        assert w.returncode == 0, err
    assert reader.returncode == 0, reader_err

    progress, warning = ws.load_progress(workspace)
    assert warning is None
    expected = {f"w{k}-{i:02d}" for k in range(WRITERS) for i in range(UPDATES)}
    assert set(progress) == expected, f"lost: {sorted(expected - set(progress))}"
    for key, entry in progress.items():
        k, i = (int(x) for x in key[1:].split("-"))
        assert entry["content_hash"] == f"hash-{k}-{i}"
        assert entry["status"] == ("passed" if i % 2 else "failing")
        assert entry["note"] == "concurrency" and entry["when"]

    state = ws.progress_path(workspace).parent
    assert sorted(p.name for p in state.iterdir()) == ["progress.json"], (
        "a lock, temporary or set-aside file was left behind"
    )
    seen = json.loads(reader_out.strip().splitlines()[-1])
    assert seen["reads"] > 0 and seen["warnings"] == [], seen


def test_a_corrupt_progress_file_is_set_aside_and_reported(tmp_path):
    workspace = tmp_path / "workspace"
    p = ws.progress_path(workspace)
    p.parent.mkdir(parents=True)
    for junk in ("{not json", "[1, 2, 3]", "\x00\x00", ""):
        p.write_text(junk, encoding="utf-8")
        progress, warning = ws.load_progress(workspace)
        assert progress == {}
        assert warning and "unreadable" in warning and "set aside as" in warning, warning
        assert not p.exists()
        aside = Path(warning.rsplit("set aside as ", 1)[1])
        assert aside.exists() and aside.parent == p.parent
        assert aside.read_text(encoding="utf-8") == junk  # kept, for the learner
        aside.unlink()

    # two corrupt files within one second: both copies are kept
    kept = []
    for junk in ("{first", "{second"):
        p.write_text(junk, encoding="utf-8")
        _, warning = ws.load_progress(workspace)
        kept.append(Path(warning.rsplit("set aside as ", 1)[1]))
    assert kept[0] != kept[1] and [k.read_text() for k in kept] == ["{first", "{second"]
    for k in kept:
        k.unlink()

    # not fatal for a writer either: the next update starts a fresh, valid file
    p.write_text("{not json", encoding="utf-8")
    heard = []
    data = ws.record_progress("online_normalizer", "passed", "abc", workspace=workspace, warn=heard.append)
    assert data["online_normalizer"]["status"] == "passed"
    assert len(heard) == 1 and "set aside" in heard[0]
    progress, warning = ws.load_progress(workspace)
    assert warning is None and progress["online_normalizer"]["content_hash"] == "abc"
    assert list(p.parent.glob("progress.corrupt-*.json")), "the corrupt file was not kept"


def test_a_lock_left_by_a_crashed_process_does_not_block_for_ever(tmp_path):
    """A lock file older than the lock's timeout is taken over, not waited on."""
    workspace = tmp_path / "workspace"
    p = ws.progress_path(workspace)
    p.parent.mkdir(parents=True)
    lock = p.with_suffix(".lock")
    lock.touch()
    old = time.time() - 60
    os.utime(lock, (old, old))
    t0 = time.monotonic()
    ws.record_progress("online_normalizer", "todo", "h", workspace=workspace)
    assert time.monotonic() - t0 < 2
    assert not lock.exists()
    progress, warning = ws.load_progress(workspace)
    assert warning is None and progress["online_normalizer"]["status"] == "todo"


def test_one_function_writes_the_progress_file(tmp_path, monkeypatch):
    """update_progress is the file's only writer: the only call of the atomic writer in
    checks/workspace.py, no other module of the engine or the app names the file, and
    every recorder (status, result, hints, a reset) goes through it."""
    import ast

    from workshops import catalog

    tree = ast.parse((REPO / "checks" / "workspace.py").read_text(encoding="utf-8"))
    writers = {
        f.name
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef)
        for call in ast.walk(f)
        if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "write_json_atomic"
    }
    # record_last_run writes the other file of the folder, last-run.json, and only it
    assert writers == {"update_progress", "record_last_run"}
    last = next(f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "record_last_run")
    assert "last_run_path" in ast.unparse(last) and "progress_path" not in ast.unparse(last)
    for room in ("checks", "tui"):
        for path in (REPO / room).rglob("*.py"):
            if path.name != "workspace.py":
                text = path.read_text(encoding="utf-8")
                assert "progress.json" not in text and "progress_path" not in text, path

    calls = []
    real = ws.update_progress
    monkeypatch.setattr(ws, "update_progress", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    workspace = tmp_path / "workspace"
    a1 = catalog.get("online_normalizer")
    ws.record_progress(a1.id, "todo", "h", workspace)
    ws.record_result(a1.id, "todo", 0, 11, "h", workspace)
    ws.record_hints(a1.id, 1, workspace)
    ws.ensure_exercise(a1, workspace)
    ws.reset(a1, workspace)
    assert calls == [a1.id] * 4
    entry = ws.load_progress(workspace)[0][a1.id]
    assert entry["status"] == "todo" and entry["hints_shown"] == 1 and entry["history"][0]["event"] == "reset"
