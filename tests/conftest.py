"""Test session setup.

* GPU workshops run in Triton's interpreter: TRITON_INTERPRET must be set before any
  kernel is decorated, so it is set here, before a test imports triton.
* Tests never touch the real workspace: KERNEL_COURSE_WORKSPACE points to a temporary one.
* Every starter must be byte-identical at the end of the session.
"""

import hashlib
import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ["TRITON_INTERPRET"] = "1"
_WS = tempfile.mkdtemp(prefix="kernel-course-tests-")
os.environ["KERNEL_COURSE_WORKSPACE"] = os.path.join(_WS, "workspace")

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _starter_hashes():
    return {
        p: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((REPO / "workshops").glob("*/starter.py"))
    }


_BEFORE = _starter_hashes()


@pytest.fixture(scope="session", autouse=True)
def starters_never_change():
    yield
    after = _starter_hashes()
    changed = [str(p) for p in _BEFORE if after.get(p) != _BEFORE[p]]
    assert not changed, f"starters were modified by the test run: {changed}"


@pytest.fixture
def repo():
    return REPO


def pytest_terminal_summary(terminalreporter):
    """The fault-injection closing count, printed even under -q."""
    mod = sys.modules.get("test_faults") or sys.modules.get("tests.test_faults")
    if mod is not None and mod.RESULTS["tried"]:
        r = mod.RESULTS
        extra = sys.modules.get("test_bad_inputs") or sys.modules.get("tests.test_bad_inputs")
        tried = getattr(extra, "TRIED", {}).get("n", 0) if extra else 0
        after = _starter_hashes()
        lost = sum(after.get(p) != h for p, h in _BEFORE.items())
        terminalreporter.write_line(
            f"fault injection: faults survived {r['survived']} of {r['tried']}; "
            f"bad inputs tried {tried}; files lost {lost}"
        )
