"""Faults through the app (headless, CPU workshop online_normalizer, short run limit).

For each fault saved over a passing solution: the table shows ERROR/FAIL rows and
never all PASS, the app answers a key press while and after the fault runs, no
process the run started survives it, and the next save of the correct solution shows
all PASS again.  The fault bodies are those of tests/test_faults.py (the CLI suite).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import textwrap
import time
import uuid

import pytest

from checks import workspace as ws
from workshops import catalog

from tui_helpers import digest_of, ready_workers, save, wait_for, wait_for_run, wait_for_watch

A1 = catalog.get("online_normalizer")
SOLUTION = A1.solution.read_text()
TIMEOUT = 3.0  # the app's per-run limit here (its --timeout)
MARK = "kc-tui-fault-" + uuid.uuid4().hex[:12]  # names the grandchild a fault starts

# name -> (file body, words the messages must contain, the run's outcome)
FAULTS = {
    "segfault": (
        SOLUTION + "\nimport ctypes\ndef merge(left, right):\n    return ctypes.string_at(0)\n",
        ["crashed", "SIGSEGV"],
        "crashed",
    ),
    "os-exit-at-import": ("import os\nos._exit(0)\n", ["crashed", "exit code 0"], "crashed"),
    "sys-exit-in-function": (
        SOLUTION + "\nimport sys\ndef merge(left, right):\n    sys.exit(0)\n",
        ["sys.exit"],
        "done",
    ),
    # an infinite loop that has started a process of its own first: both must go
    "infinite-loop": (
        SOLUTION
        + textwrap.dedent(f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)  # {MARK}"])
        def merge(left, right):
            while True:
                pass
        """),
        ["timed out"],
        "timeout",
    ),
    "syntax-error": ("def merge(left, right)\n    return left\n", ["SyntaxError", "line 1"], "done"),
    "megabytes-printed": (
        SOLUTION + "\nimport sys\nfor _ in range(2000):\n    print('x' * 4096)\n"
        "def merge(left, right):\n    raise ValueError('after the flood')\n",
        ["after the flood"],
        "done",
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
        "done",
    ),
}


@pytest.fixture
def workers(monkeypatch):
    """Every check worker process the app starts (warm or not), in order."""
    import checks.running.child as child

    made = []

    class Tracked(child.Worker):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(child, "Worker", Tracked)
    try:  # the sharding pool, where it exists, names it too
        import checks.running.pool as pool

        monkeypatch.setattr(pool, "Worker", Tracked)
    except ImportError:
        pass
    return made


def processes():
    """(pid, pgid, args) of every live process (zombies have exited: left out)."""
    # -ww: full command lines (without it ps may cut them at the terminal's width,
    # and a marker at the end of one would go unseen)
    out = subprocess.run(
        ["ps", "-ww", "-eo", "pid=,pgid=,stat=,args="], capture_output=True, text=True, check=True
    ).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and not parts[2].startswith("Z"):
            rows.append((int(parts[0]), int(parts[1]), parts[3]))
    return rows


def survivors(dead_workers, path) -> list:
    """Processes left over from runs that are over: a member of a finished worker's
    process group (what the learner's code started), or anything naming the fault's
    marker or the exercise file (as tests/test_faults.py looks for)."""
    groups = {w.proc.pid for w in dead_workers}
    return [
        (pid, args)
        for pid, pgid, args in processes()
        if (pgid in groups or MARK in args or str(path) in args) and "ps -ww" not in args
    ]


def cells(panel) -> list:
    """The status words of the rows (without the mark of a change since the last run)."""
    return [str(panel.table.get_cell_at((i, 0))).rstrip(" ▲▼") for i in range(panel.table.row_count)]


async def bench_key_answered(pilot):
    """'t' toggles the lesson's contents (state on the screen): the key is handled at
    once.  (A CPU workshop has no benchmark key to press.)"""
    viewer = pilot.app.screen.query_one("#lesson")
    before = viewer.show_table_of_contents
    t0 = time.perf_counter()
    await pilot.press("t")
    assert viewer.show_table_of_contents is (not before), "the 't' key was not handled"
    await pilot.press("t")
    assert viewer.show_table_of_contents is before
    return time.perf_counter() - t0


async def settled_survivors(pilot, dead, path, timeout: float = 5.0) -> list:
    """The survivors, once there are none or ``timeout`` has passed (a killed process
    takes a moment to leave the process table)."""
    end = time.monotonic() + timeout
    while True:
        left = survivors(dead, path)
        if not left or time.monotonic() > end:
            return left
        await pilot.pause(0.1)


@pytest.mark.skipif(os.name != "posix", reason="process listing uses ps")
@pytest.mark.parametrize("name", list(FAULTS))
def test_fault_through_the_app(make_app, workspace, workers, name):
    body, words, outcome = FAULTS[name]
    path = workspace / A1.exercise_name
    workspace.mkdir(parents=True)
    path.write_text(SOLUTION)

    async def run_it():
        app = make_app(open_workshop=A1.id, check_timeout=TIMEOUT)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for_watch(pilot)
            screen = app.screen
            panel = await wait_for_run(pilot, digest_of(path))
            assert set(panel.statuses()) == {"pass"}  # the baseline

            # the fault, saved over it
            await save(pilot, path, body)
            fault = digest_of(path)
            if name == "infinite-loop":
                await wait_for(
                    pilot,
                    lambda: screen.controller.running() and any(MARK in a for _, _, a in processes()),
                    10,
                    "the looping run and its grandchild",
                )
                await bench_key_answered(pilot)  # while the run loops
            panel = await wait_for_run(pilot, fault, TIMEOUT + 30)
            statuses = panel.statuses()
            shown = cells(panel)
            assert panel.outcome == outcome, (panel.outcome, statuses)
            assert set(statuses) != {"pass"} and ({"ERROR", "FAIL"} & set(shown)), shown
            assert {"fail", "error"} & set(statuses)
            text = " ".join(r.message + " " + r.status.upper() for r in panel.records.values())
            for w in words:
                assert w in text, f"{name}: {w!r} not in {text[:2000]!r}"
            if name == "fake-pass-line":  # the imitation is not a verdict
                assert panel.records["worked-merge"].status == "fail"
            assert fault[:8] in str(screen.query_one("#run-status").render())
            progress, _ = ws.load_progress(workspace)
            assert progress[A1.id]["content_hash"] == fault
            assert progress[A1.id]["status"] == "failing"
            # the app answers keys after the fault
            await bench_key_answered(pilot)
            # nothing the fault's run started survives it (the next warm worker waits)
            ready = lambda: set(ready_workers(screen.controller.pool))
            await wait_for(
                pilot,
                lambda: all(not w.alive() for w in workers if w not in ready()),
                10,
                "the fault's worker to be gone",
            )
            dead = [w for w in workers if w not in ready()]
            assert dead
            left = await settled_survivors(pilot, dead, path)
            assert not left, f"{name}: processes survived: {left}"

            # the correct solution again: all PASS
            await save(pilot, path, SOLUTION)
            panel = await wait_for_run(pilot, digest_of(path), 30)
            assert panel.outcome == "done" and set(panel.statuses()) == {"pass"}
            assert set(cells(panel)) == {"PASS"}
        # the app has exited: no worker of it is left
        assert all(not w.alive() for w in workers)
        assert not survivors(workers, path)

    asyncio.run(run_it())
