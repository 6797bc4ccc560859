"""Fixtures of the app's headless tests (helpers live in tui_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path) -> Path:
    return tmp_path / "workspace"


@pytest.fixture
def make_app(tmp_path, workspace):
    """CourseApp on a temporary workspace, exporting into tmp_path/exports, no GPU, and no
    repair search after a failing run (repair=True turns it on: tests/tui/test_tui_repair.py)."""
    from tui.app import CourseApp

    def make(**kwargs):
        kwargs.setdefault("workspace", workspace)
        kwargs.setdefault("results_dir", tmp_path / "exports")
        kwargs.setdefault("gpu", False)
        kwargs.setdefault("repair", False)
        return CourseApp(**kwargs)

    return make


def pytest_configure(config):
    """pytest-textual-snapshot writes its HTML report into the current directory on a
    failure; keep it out of the repository unless a path was given."""
    import tempfile

    if getattr(config.option, "snapshot_report", None) == "snapshot_report.html":
        config.option.snapshot_report = str(
            Path(tempfile.gettempdir()) / "kernel-course-snapshot-report.html"
        )
