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
# One check worker per run unless a test asks for more (the sharding tests set or clear
# this themselves): on a 2-core machine running four test workers, two check workers per
# app or CLI run only add torch imports that wait for the same cores.
os.environ.setdefault("KERNEL_COURSE_POOL", "1")
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
def no_gpu(monkeypatch):
    """The test's child processes see no CUDA GPU (CUDA_VISIBLE_DEVICES=""), so a test of
    what a learner without one sees holds on a GPU machine too.  This process's own
    answer is settled first: hiding the GPU here cannot change it for later tests."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.cuda.is_available()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")


@pytest.fixture
def repo():
    return REPO


def _fault_counts() -> dict:
    """This process's fault-injection counts (the test modules keep them)."""
    faults = sys.modules.get("test_faults") or sys.modules.get("tests.test_faults")
    extra = sys.modules.get("test_bad_inputs") or sys.modules.get("tests.test_bad_inputs")
    r = faults.RESULTS if faults is not None else {}
    return {
        "survived": r.get("survived", 0),
        "tried": r.get("tried", 0),
        "bad_inputs": getattr(extra, "TRIED", {}).get("n", 0) if extra else 0,
    }


_FROM_WORKERS: list = []  # under pytest-xdist: each worker's counts, gathered here


def pytest_sessionfinish(session):
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker: hand the counts to the controller
        output["fault_counts"] = _fault_counts()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    counts = getattr(node, "workeroutput", {}).get("fault_counts")
    if counts:
        _FROM_WORKERS.append(counts)


def pytest_terminal_summary(terminalreporter):
    """The fault-injection closing count, printed even under -q."""
    parts = [_fault_counts(), *_FROM_WORKERS]
    total = {k: sum(p[k] for p in parts) for k in ("survived", "tried", "bad_inputs")}
    if total["tried"]:
        after = _starter_hashes()
        lost = sum(after.get(p) != h for p, h in _BEFORE.items())
        terminalreporter.write_line(
            f"fault injection: faults survived {total['survived']} of {total['tried']}; "
            f"bad inputs tried {total['bad_inputs']}; files lost {lost}"
        )
