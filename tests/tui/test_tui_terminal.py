"""One run in a real terminal (tmux): start, open a workshop, hand the file to $EDITOR
(App.suspend), see the checks pass, quit; no worker process is left behind."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from workshops import catalog

REPO = Path(__file__).resolve().parents[2]


def _pane(session: str) -> str:
    return subprocess.run(
        ["tmux", "-L", session, "capture-pane", "-p", "-t", session], capture_output=True, text=True
    ).stdout


def _wait(session: str, text: str, timeout: float = 30) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pane = _pane(session)
        if text in pane:
            return pane
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared; the pane was:\n{_pane(session)}")


@pytest.mark.skipif(
    shutil.which("tmux") is None or not Path("/proc/self/environ").exists(),
    reason="needs tmux and /proc (Linux)",
)
@pytest.mark.parametrize("size", [(80, 24), (130, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_real_terminal_session(tmp_path, size):
    w = catalog.get("online_normalizer")
    session = f"kc-test-{uuid.uuid4().hex[:8]}"  # also names a tmux server of its own (-L)
    done = tmp_path / "exit-code"
    # a non-interactive "editor": it writes the reference answer into the file it is given
    editor = f"cp {shlex.quote(str(w.solution))}"
    app = (
        f"cd {shlex.quote(str(REPO))} && KC_TEST_TAG={session} EDITOR={shlex.quote(editor)} "
        f"{shlex.quote(sys.executable)} -m tui --workspace {shlex.quote(str(tmp_path / 'ws'))} "
        f"--open A1; echo $? > {shlex.quote(str(done))}"
    )
    subprocess.run(
        [
            "tmux",
            "-L",
            session,
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            str(size[0]),
            "-y",
            str(size[1]),
            app,
        ],
        check=True,
    )
    try:
        _wait(session, "11 TODO")
        subprocess.run(["tmux", "-L", session, "send-keys", "-t", session, "e"], check=True)
        pane = _wait(session, "11/11 passed")
        # as a person sees it: the completion, the next workshop's key, PASS rows
        assert "Passed: A1: all 11 checks ran and passed." in pane and "n opens A2" in pane, pane
        # the lesson keeps the focus after a pass: on a compact terminal (tmux may draw
        # the app at its default 80x24) the results are a strip of a few rows
        assert pane.count("PASS") >= 2, pane
        assert max(len(line) for line in pane.splitlines()) <= size[0]
        assert _tagged(session), "the app and its warm worker should carry the tag"
        subprocess.run(["tmux", "-L", session, "send-keys", "-t", session, "C-q"], check=True)
        end = time.monotonic() + 15
        while not done.exists() and time.monotonic() < end:
            time.sleep(0.2)
        assert done.read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "-L", session, "kill-session", "-t", session], capture_output=True)
    # no process that inherited this session's tag (the app's workers) outlives the app
    time.sleep(0.5)
    assert _tagged(session) == []


def _tagged(tag: str) -> list:
    out = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"KC_TEST_TAG={tag}".encode() in env.read_bytes().split(b"\0"):
                out.append(int(env.parent.name))
        except OSError:
            pass
    return out
