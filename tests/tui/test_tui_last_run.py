"""The last run's statuses are one record for the command line and the app: what the
command line says changed ("Changed since the last run") is against the app's last run too,
and the app's newly passing / newly failing marks are against the command line's."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from checks import workspace as ws
from workshops import catalog

from tui_helpers import digest_of, wait_for, wait_for_run

A1 = catalog.get("online_normalizer")
REPO = Path(__file__).resolve().parents[2]
WRONG = A1.folder / "wrong" / "raw_denominator.py"


def command_line(workspace: Path) -> subprocess.CompletedProcess:
    """``python -m checks online_normalizer --workspace WORKSPACE``, as a learner runs it."""
    return subprocess.run(
        [sys.executable, "-m", "checks", A1.id, "--workspace", str(workspace)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_line_compares_with_the_apps_last_run(make_app, workspace):
    workspace.mkdir(parents=True)
    path = workspace / A1.exercise_name
    path.write_text(WRONG.read_text(encoding="utf-8"), encoding="utf-8")

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(100, 30)) as pilot:
            panel = await wait_for_run(pilot, digest_of(path))
            assert "fail" in panel.statuses()
            await wait_for(pilot, lambda: ws.last_statuses(workspace, A1.id), 10, "the last run kept")

    asyncio.run(body())
    kept = ws.last_statuses(workspace, A1.id)
    assert "fail" in kept.values()
    path.write_text(A1.solution.read_text(encoding="utf-8"), encoding="utf-8")
    done = command_line(workspace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Changed since the last run" in done.stdout and "newly passing" in done.stdout, done.stdout
    assert set(ws.last_statuses(workspace, A1.id).values()) == {"pass"}


def test_the_app_marks_changes_against_the_command_lines_last_run(make_app, workspace):
    workspace.mkdir(parents=True)
    path = workspace / A1.exercise_name
    path.write_text(WRONG.read_text(encoding="utf-8"), encoding="utf-8")
    done = command_line(workspace)
    assert done.returncode == 1, done.stdout + done.stderr
    failing = {c for c, s in ws.last_statuses(workspace, A1.id).items() if s == "fail"}
    assert failing
    path.write_text(A1.solution.read_text(encoding="utf-8"), encoding="utf-8")

    async def body():
        app = make_app(open_workshop=A1.id)
        async with app.run_test(size=(100, 30)) as pilot:
            panel = await wait_for_run(pilot, digest_of(path))
            assert set(panel.statuses()) == {"pass"}
            for check in failing:
                assert panel.change_of(panel.records[check]) == "newly passing", check

    asyncio.run(body())
