"""The house style is checked, not hoped for: ruff's lint rules (pyflakes, pycodestyle,
bugbear, blind excepts, and no stale noqa) and its formatter, as configured in
pyproject.toml, over every room of the repository."""

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
