"""The benchmark's kernel variants, handed from its worker to the app's compile pool
through a folder: the app's side, and the names both sides use.

The first benchmark of a workshop has no list of the variants it will need (the list is
what that benchmark leaves, see compile_ahead.py), so it used to compile them one after
another.  Now the app offers the worker a folder (the job's ``"discover"``); the worker
calls each planned call of the learner's wrapper once with Triton's compiles skipped
(checks/running/discovery.py) and writes what they asked for::

    FOLDER/offer.json     {"file", "digest", "variants": [{"qualname", "data"}, ...]}
                          written whole by the worker; no variants: nothing to compile
    FOLDER/answer.json    {"ids": [...]} written whole by the app: the identities the
                          compile pool is compiling for it ([]: declined, no pool)
    FOLDER/<id>.done      the pool's markers (checks.running.variants), and
    FOLDER/abandoned      the pool's word that it compiles nothing more (a newer save)

The worker's recorder waits for the markers of the identities answered, each wait
bounded, and compiles a variant itself when it is not told in time (no answer within
:data:`ANSWER_WAIT_S`, an ``abandoned`` marker, the folder gone).  Every failure on
either side means only that the benchmark compiles as it did before.

Standard library only: the app imports this module.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

from checks.json_files import write_json_atomic

OFFER, ANSWER = "offer.json", "answer.json"
SAID = "benchmark variants: "  # the worker's line on stderr: what discovery and the pool did
ANSWER_WAIT_S = 1.0  # how long the worker waits for the app's answer, from its offer
WAIT_LIMIT_S = 30.0  # how long the worker waits for one variant's marker
POLL_S = 0.02  # how often the app looks for the offer while it waits for one
OFFER_WAIT_S = 60.0  # after this long without an offer the app stops looking quickly


def _read(path: Path) -> Optional[dict]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_offer(folder: Any) -> Optional[dict]:
    """The worker's offer in ``folder``, or None (not written yet, or not an offer)."""
    data = _read(Path(folder) / OFFER)
    if data is None or not isinstance(data.get("variants"), list):
        return None
    found = [
        {"qualname": v["qualname"], "data": v["data"]}
        for v in data["variants"]
        if isinstance(v, dict) and isinstance(v.get("qualname"), str) and isinstance(v.get("data"), str)
    ]
    if len(found) != len(data["variants"]):
        return None
    return {"file": str(data.get("file") or ""), "digest": str(data.get("digest") or ""), "variants": found}


def write_offer(folder: Any, file: str, digest: str, found: list) -> None:
    """The worker's offer (raises OSError)."""
    write_json_atomic(Path(folder) / OFFER, {"file": file, "digest": digest, "variants": found})


def write_answer(folder: Any, ids: list) -> None:
    """The app's answer (raises OSError)."""
    write_json_atomic(Path(folder) / ANSWER, {"ids": list(ids)})


def read_answer(folder: Any) -> Optional[list]:
    """The identities the app answered, or None (no answer yet, or not one)."""
    data = _read(Path(folder) / ANSWER)
    ids = data.get("ids") if data is not None else None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return None
    return ids


def wait_answer(folder: Any, deadline: float, sleep: float = 0.002) -> list:
    """The identities answered, waiting until ``deadline`` (time.monotonic) at most;
    [] when there is none by then or the folder is gone."""
    folder = Path(folder)
    while True:
        ids = read_answer(folder)
        if ids is not None:
            return ids
        if time.monotonic() >= deadline or not folder.is_dir():
            return []
        time.sleep(sleep)


def said_in(output: str) -> Optional[dict]:
    """The worker's last word on discovery in a benchmark's output (its numbers: calls,
    discovered, offered, pool_hits, compiled_here ...), or None when it said nothing."""
    for line in reversed(output.splitlines()):
        if line.startswith(SAID):
            try:
                said = json.loads(line[len(SAID) :])
            except ValueError:
                return None
            return said if isinstance(said, dict) else None
    return None


class Door:
    """What the app's session lends a benchmark: ``submit(file, digest, variants, folder)``
    hands variants to the compile pool and returns the identities it compiles ([]: none),
    ``finish()`` is said once the benchmark is over."""

    def __init__(self, submit: Callable[[str, str, list, str], list], finish: Callable[[], None]) -> None:
        self.submit = submit
        self.finish = finish


class Handoff:
    """The app's side of one benchmark's folder: made with :meth:`open`, looked at with
    :meth:`poll` while the benchmark runs, removed with :meth:`close`."""

    def __init__(self, door: Door, folder: str) -> None:
        self.door = door
        self.folder = folder
        self.answered = False
        self.ids: list = []  # what the pool compiles for this benchmark
        self.error = ""
        self.started = time.monotonic()

    @classmethod
    def open(cls, door: Optional[Door]) -> Optional["Handoff"]:
        """A new folder for ``door``'s benchmark; None without a door or a folder."""
        if door is None:
            return None
        try:
            return cls(door, tempfile.mkdtemp(prefix="kernel-course-discovered-"))
        except OSError:
            return None

    def waiting(self) -> bool:
        """Whether an offer is still expected soon (the caller then polls often)."""
        return not self.answered and time.monotonic() - self.started < OFFER_WAIT_S

    def poll(self) -> None:
        """Answer the worker's offer once it is there: hand its variants to the pool."""
        if self.answered:
            return
        offer = read_offer(self.folder)
        if offer is None:
            return
        self.answered = True
        ids: list = []
        if offer["variants"]:
            try:
                ids = list(self.door.submit(offer["file"], offer["digest"], offer["variants"], self.folder))
            except Exception as e:  # noqa: BLE001 - no pool for it: the benchmark compiles as before
                self.error = f"{type(e).__name__}: {e}"
                ids = []
        self.ids = ids
        try:
            write_answer(self.folder, ids)
        except OSError:
            pass  # the worker stops waiting at its own bound

    def close(self) -> None:
        try:
            self.door.finish()
        except Exception as e:  # noqa: BLE001 - never the benchmark's failure
            self.error = self.error or f"{type(e).__name__}: {e}"
        shutil.rmtree(self.folder, ignore_errors=True)
