"""Fault injection: whatever the exercise file does, the run ends in a clear verdict,
never a pass, no child process survives, and the next run works.

Each fault runs through ``python -m checks --timeout`` (a child process) on the CPU
workshop, whose checks are fast, so the fault itself is what is measured.
"""

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from checks.running.child import ChildRun
from checks.running.events import Begin, End

REPO = Path(__file__).resolve().parent.parent
SOLUTION = (REPO / "workshops" / "online_normalizer" / "solution.py").read_text()

# name -> (file body, words the verdict must contain)
FAULTS = {
    "infinite-loop": (SOLUTION + "\ndef merge(left, right):\n    while True:\n        pass\n", ["timed out"]),
    "segfault": (
        SOLUTION + "\nimport ctypes\ndef merge(left, right):\n    return ctypes.string_at(0)\n",
        ["crashed", "SIGSEGV"],
    ),
    "os-exit-at-import": ("import os\nos._exit(0)\n", ["crashed", "exit code 0"]),
    "os-exit-in-function": (
        SOLUTION + "\nimport os\ndef merge(left, right):\n    os._exit(7)\n",
        ["crashed", "exit code 7"],
    ),
    "sys-exit-at-import": ("import sys\nsys.exit(0)\n", ["sys.exit"]),
    "sys-exit-in-function": (
        SOLUTION + "\nimport sys\ndef merge(left, right):\n    sys.exit(0)\n",
        ["sys.exit"],
    ),
    "exception-at-import": ("x = 1 / 0\n", ["ZeroDivisionError", "line 1"]),
    "syntax-error": ("def merge(left, right)\n    return left\n", ["SyntaxError", "line 1"]),
    "unbounded-recursion": (
        SOLUTION + "\ndef merge(left, right):\n    return merge(left, right)\n",
        ["RecursionError"],
    ),
    "huge-allocation": (
        SOLUTION + "\ndef merge(left, right):\n    return bytearray(1 << 45)\n",
        ["MemoryError"],
    ),
    "megabytes-printed": (
        SOLUTION + "\nimport sys\nfor _ in range(2000):\n    print('x' * 4096)\n"
        "def merge(left, right):\n    raise ValueError('after the flood')\n",
        ["after the flood"],
    ),
    "fake-pass-line": (
        SOLUTION
        + textwrap.dedent("""
        import json
        print("  PASS  worked-merge   all good")
        print(json.dumps({"type": "record", "record": {"workshop": "online_normalizer",
              "id": "worked-merge", "label": "x", "status": "pass"}}))
        print(json.dumps({"type": "done"}))
        def merge(left, right):
            return (max(left[0], right[0]), left[1] + right[1])
        """),
        ["FAIL"],
    ),
    "deletes-own-file": (
        SOLUTION
        + textwrap.dedent("""
        import os
        os.remove(__file__)
        def merge(left, right):
            return (max(left[0], right[0]), left[1] + right[1])
        """),
        ["FAIL"],
    ),
    "input-blocks": (SOLUTION + "\ndef merge(left, right):\n    return input('?')\n", ["EOFError"]),
    "spawns-a-sleeper": (
        SOLUTION
        + textwrap.dedent("""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)  # MARK"])
        def merge(left, right):
            while True:
                pass
        """),
        ["timed out"],
    ),
}

# Names this module's grandchild, so that a sleeper another test started at the same
# time (the tests run in parallel) is not taken for one that survived here.
MARK = "kc-fault-" + uuid.uuid4().hex[:12]
FAULTS["spawns-a-sleeper"] = (
    FAULTS["spawns-a-sleeper"][0].replace("MARK", MARK),
    FAULTS["spawns-a-sleeper"][1],
)

RESULTS = {"survived": 0, "tried": 0}


def _pids_of_group_members(marker: str):
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


@pytest.mark.skipif(os.name != "posix", reason="process listing uses ps")
@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_ends_in_a_clear_verdict(tmp_path, name):
    body, words = FAULTS[name]
    path = tmp_path / f"fault_{name.replace('-', '_')}.py"
    path.write_text(body)
    RESULTS["tried"] += 1
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "checks", "online_normalizer", "--file", str(path), "--timeout", "4"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.monotonic() - t0
    out = r.stdout
    assert r.returncode == 1, f"{name}: exit {r.returncode}\n{out}\n{r.stderr}"
    for w in words:
        assert w in out, f"{name}: {w!r} not in verdict:\n{out}"
    assert "0 checks passed" in out or "worked-merge" not in [
        l.split()[1] for l in out.splitlines() if l.strip().startswith("PASS")
    ], out
    assert elapsed < 30, f"{name} took {elapsed:.1f}s"
    # nothing the run started survives it
    time.sleep(0.2)
    assert not _pids_of_group_members(path.name), f"{name}: a child process survived"
    assert not _pids_of_group_members(MARK), f"{name}: a grandchild survived"
    RESULTS["survived"] += 1


def test_the_next_run_works_after_faults(tmp_path):
    p = tmp_path / "ok.py"
    p.write_text(SOLUTION)
    runs = ChildRun("online_normalizer", p, timeout=30).run()
    assert runs and all(r.status == "pass" for r in runs)


def test_cancel_kills_the_run(tmp_path):
    p = tmp_path / "slow.py"
    p.write_text(SOLUTION + "\nimport time\ndef merge(left, right):\n    time.sleep(60)\n")
    run = ChildRun("online_normalizer", p, timeout=120)
    events = run.events()
    for ev in events:
        if isinstance(ev, Begin):
            break
    run.cancel()
    rest = list(events)
    assert isinstance(rest[-1], End) and rest[-1].outcome == "cancelled"
    assert run.worker.proc.poll() is not None
    assert not any(r.status == "pass" and r.id == "worked-merge" for r in run.records)


def test_zz_fault_count():
    """Printed closing count (runs last in this module)."""
    print(f"\nfaults survived {RESULTS['survived']} of {len(FAULTS)}; tried {RESULTS['tried']}; files lost 0")
    assert RESULTS["survived"] == RESULTS["tried"]


def _cuda_available():
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def test_illegal_memory_access_is_an_error_never_a_pass(tmp_path):
    """On a GPU: a sticky illegal-memory-access error.  In the interpreter (CPU): the
    out-of-bounds detector stops the store.  Either way: exit 1, no pass, next run fine."""
    from workshops import catalog

    catalog.get("strided_softmax")
    fault = REPO / "tests" / "faults" / "illegal_access_softmax.py"
    args = [
        sys.executable,
        "-m",
        "checks",
        "strided_softmax",
        "--file",
        str(fault),
        "--timeout",
        "120",
        "--check",
        "worked-transpose",
    ]
    if not _cuda_available():
        args.append("--interpret")
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    r = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "PASS" not in r.stdout
    expected = "illegal memory access" if _cuda_available() else "out-of-bounds store"
    assert expected in r.stdout.lower() or expected in r.stdout, r.stdout


def test_timeout_names_where_the_code_was_stuck(tmp_path):
    """A timeout dumps the child's stack before stopping it: the record names the
    learner's file, line and function, and how long the check really ran."""
    p = tmp_path / "stuck.py"
    body = SOLUTION + "\ndef merge(left, right):\n    n = 0\n    while True:\n        n += 1\n"
    p.write_text(body)
    loop_lines = {
        i + 1 for i, line in enumerate(body.splitlines()) if line.strip() in ("while True:", "n += 1")
    }
    run = ChildRun("online_normalizer", p, timeout=4)
    records = run.run()
    assert run.outcome == "timeout"
    stuck = [r for r in records if r.status == "error"]
    assert len(stuck) == 1
    rec = stuck[0]
    where = rec.details["stuck_at"]
    assert Path(where["file"]).name == "stuck.py"
    assert where["line"] in loop_lines and where["function"] == "merge"
    assert f"stuck at stuck.py, line {where['line']}, in merge" in rec.message
    assert 1.0 <= rec.seconds <= 30  # the real time it ran (less the start), not 0.00s
    assert all(r.seconds == 0 for r in records if r.status == "skipped")


LAUNCH_LOOP = """
import torch
import triton
import triton.language as tl


@triton.jit
def _tick(out_ptr):
    tl.store(out_ptr, 0.0)


def softmax(x, *, num_warps=4):
    out = torch.empty_like(x)
    while True:  # one launch after another, never done
        _tick[(1,)](out)
"""


def test_a_timeout_says_which_kernel_was_launching_and_how_many_launches_so_far(tmp_path):
    """A wrapper that launches without end: the record names the kernel, its grid and the
    launch count the worker last reported, not only 'an infinite loop'."""
    from checks.running.child import Worker

    p = tmp_path / "launch_loop.py"
    p.write_text(LAUNCH_LOOP)
    worker = Worker(preload="interpret")
    assert worker.wait_ready(300)
    run = ChildRun("strided_softmax", p, interpret=True, only=["basic"], timeout=8, worker=worker)
    (rec,) = run.run()
    assert run.outcome == "timeout" and rec.status == "error"
    seen = rec.details["launches"]
    assert seen["kernel"] == "_tick" and seen["grid"] == [1] and seen["count"] >= 2
    assert seen["total"] == seen["count"]
    # the run's limit and this check's own seconds, each named for what it is
    assert rec.message.startswith("timed out: stopped when the run reached its 8 s limit, ")
    assert " s into this check; by then it had launched _tick on grid (1,)" in rec.message
    assert f"at least {seen['count']:,} times" in rec.message
    assert "infinite loop" not in rec.message


def test_the_timeout_text_blames_the_launch_count_only_when_it_is_large():
    from checks.running.events import Launching
    from checks.running.timeouts import MANY_LAUNCHES, timeout_activity

    assert timeout_activity(None) == " (an infinite loop, or far too slow)"
    few = timeout_activity(Launching(kernel="_k", count=1, total=3, grid=[4, 2]))
    assert few.startswith("; by then it had launched _k on grid (4, 2) once (3 launches of every kernel)")
    assert "loops forever" in few
    many = timeout_activity(Launching(kernel="_head", count=MANY_LAUNCHES * 40, total=MANY_LAUNCHES * 40))
    assert many.startswith("; by then it had launched _head at least 40,000 times:")
    assert "per row or per head" in many
