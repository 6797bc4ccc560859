"""The house style is checked, not hoped for: ruff's lint rules (pyflakes, pycodestyle,
bugbear, blind excepts, and no stale noqa) and its formatter, as configured in
pyproject.toml, over every room of the repository; and mypy over checks/ and tui/."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def ruff(*args):
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_lint_is_clean():
    r = ruff("check", "--output-format", "concise", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_formatting_is_ruffs():
    r = ruff("format", "--check", ".")
    assert r.returncode == 0, "run `.venv/bin/ruff format .`\n" + r.stdout + r.stderr


def test_types_check():
    """mypy, as configured in pyproject.toml ([tool.mypy]), finds no errors, and it read
    every module of checks/ and tui/."""
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, "run `.venv/bin/mypy`\n" + r.stdout + r.stderr
    checked = re.search(r"Success: no issues found in (\d+) source files", r.stdout)
    assert checked, r.stdout + r.stderr
    modules = [p for room in ("checks", "tui") for p in (REPO / room).rglob("*.py")]
    assert int(checked[1]) == len(modules), r.stdout
