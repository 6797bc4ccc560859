"""``python -m tui`` says a bad workspace as a usage error (exit 64) before any screen
opens, naming where the path came from, instead of opening a workshop that waits forever
on a file watcher that could not start."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import REPO

import tui.__main__ as entry


def _no_app(monkeypatch):
    """The entry point with a terminal, and an app that must never start."""
    monkeypatch.setattr(entry, "missing_terminal", lambda: "")
    monkeypatch.setattr("tui.app.CourseApp.run", lambda self: pytest.fail("the app started"))


def _usage_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as raised:
        entry.main(argv)
    assert raised.value.code == 64
    return capsys.readouterr().err


def test_dev_null_as_workspace_is_a_usage_error_before_the_terminal_is_asked_for():
    """As a learner types it: no terminal either (captured output), and the bad argument
    is what is said first, with exit status 64, not the missing terminal's 2."""
    done = subprocess.run(
        [sys.executable, "-m", "tui", "--workspace", os.devnull],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 64, done.stderr
    assert f"--workspace {os.devnull}: is not a folder" in done.stderr
    assert "needs a terminal" not in done.stderr


def test_a_file_as_workspace_is_a_usage_error(monkeypatch, capsys, tmp_path):
    _no_app(monkeypatch)
    notes = tmp_path / "notes.txt"
    notes.write_text("x\n")
    err = _usage_error(capsys, ["--workspace", str(notes)])
    assert f"--workspace {notes}: is a file, not a folder" in err
    assert notes.read_text() == "x\n" and not (tmp_path / ".notes.txt-state").exists()


def test_a_workspace_that_cannot_be_created_is_a_usage_error(monkeypatch, capsys, tmp_path):
    _no_app(monkeypatch)
    (tmp_path / "notes.txt").write_text("x\n")
    under_a_file = tmp_path / "notes.txt" / "kernels"
    err = _usage_error(capsys, ["--workspace", str(under_a_file)])
    assert f"--workspace {under_a_file}: cannot be created: {tmp_path / 'notes.txt'} is not a folder" in err


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder nobody here can create files in: one made read-only, or (for root, whom
    permissions do not stop) a sysfs folder."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir(mode=0o555)
        return folder
    for folder in (Path("/sys/kernel"), Path("/sys")):
        try:
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError:
            return folder
    pytest.skip("no folder here refuses new files to root")


def test_a_workspace_nobody_can_write_in_is_a_usage_error(monkeypatch, capsys, tmp_path):
    _no_app(monkeypatch)
    folder = _unwritable_folder(tmp_path)
    err = _usage_error(capsys, ["--workspace", str(folder)])
    assert f"--workspace {folder}: is a folder you cannot write in" in err


def test_the_environment_variable_is_named_when_it_is_the_bad_one(monkeypatch, capsys):
    _no_app(monkeypatch)
    monkeypatch.setenv("KERNEL_COURSE_WORKSPACE", os.devnull)
    err = _usage_error(capsys, [])
    assert f"KERNEL_COURSE_WORKSPACE={os.devnull}: is not a folder" in err


def test_an_export_dir_that_is_a_file_is_a_usage_error(monkeypatch, capsys, tmp_path):
    _no_app(monkeypatch)
    err = _usage_error(capsys, ["--workspace", str(tmp_path / "w"), "--export-dir", os.devnull])
    assert f"--export-dir {os.devnull}: is not a folder" in err


def test_a_new_workspace_that_can_be_made_starts_the_app_and_is_left_to_it(monkeypatch, tmp_path):
    """A folder that does not exist yet but can be made is no error; nothing is created
    before the app runs (it makes the folder on its first save)."""
    seen = {}
    monkeypatch.setattr(entry, "missing_terminal", lambda: "")
    monkeypatch.setattr("tui.app.CourseApp.run", lambda self: seen.update(workspace=self.workspace))
    assert entry.main(["--workspace", str(tmp_path / "new" / "kernels")]) == 0
    assert seen["workspace"] == (tmp_path / "new" / "kernels").resolve()
    assert not (tmp_path / "new").exists()
