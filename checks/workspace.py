"""The learner's workspace: copies of the starters, never the starters themselves.

Default folder: ``workspace/`` at the repository root (git-ignored), or the
``KERNEL_COURSE_WORKSPACE`` environment variable, or ``--workspace``.  Backups and
the progress file live beside it in ``.<name>-state/``, never inside it, so a
watcher on the workspace sees only the learner's own edits.

Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

from checks.json_files import ordinary_file_mode, write_json_atomic
from workshops.catalog import Workshop

REPO = Path(__file__).resolve().parent.parent


def default_workspace() -> Path:
    env = os.environ.get("KERNEL_COURSE_WORKSPACE")
    return Path(env).expanduser().resolve() if env else REPO / "workspace"


def state_dir(workspace: Path) -> Path:
    workspace = Path(workspace).resolve()
    return workspace.parent / f".{workspace.name}-state"


def exercise_path(w: Workshop, workspace: Optional[Path] = None) -> Path:
    return Path(workspace or default_workspace()) / w.exercise_name


def _starter_copy(w: Workshop, path: Path) -> str:
    """A copy of the starter in a temporary file beside ``path``, with the mode the
    learner's editor would give a new file (the umask's), not mkstemp's private 0600."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    shutil.copyfile(w.starter, tmp)
    os.chmod(tmp, ordinary_file_mode())
    return tmp


def ensure_exercise(w: Workshop, workspace: Optional[Path] = None) -> Path:
    """The learner's file, created from the starter on first use (never overwritten)."""
    path = exercise_path(w, workspace)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Copy through a temporary file so a half-written copy never appears.
        tmp = _starter_copy(w, path)
        try:
            os.link(tmp, path)  # fails if the learner's file appeared meanwhile
        except FileExistsError:
            pass
        except OSError:  # file systems without hard links
            if not path.exists():
                os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


def backup(path: Path, workspace: Optional[Path] = None) -> Optional[Path]:
    """Copy the learner's file into the state folder's backups; returns the copy."""
    path = Path(path)
    if not path.exists():
        return None
    d = state_dir(workspace or path.parent) / "backups"
    d.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    dest = d / f"{path.stem}.{stamp}.{content_hash(path.read_bytes())[:8]}.py"
    shutil.copy2(path, dest)
    return dest


def reset(w: Workshop, workspace: Optional[Path] = None) -> tuple:
    """Restore the starter into the learner's file; returns (path, backup or None).
    The progress entry keeps its best result and notes the reset in its history."""
    path = exercise_path(w, workspace)
    saved = backup(path, workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.replace(_starter_copy(w, path), path)
    try:
        update_progress(
            w.id,
            lambda e: _history(e, {"event": "reset", "when": _now(), "backup": saved.name if saved else ""}),
            workspace or path.parent,
        )
    except (OSError, TimeoutError):
        pass  # the reset itself succeeded; history is a nicety
    return path, saved


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- progress: one small JSON file, written atomically, tolerant of corruption ---


def progress_path(workspace: Optional[Path] = None) -> Path:
    return state_dir(workspace or default_workspace()) / "progress.json"


def load_progress(workspace: Optional[Path] = None) -> tuple:
    """(progress dict, warning or None).  A corrupted file is moved aside, not fatal."""
    p = progress_path(workspace)
    if not p.exists():
        return {}, None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data, None
    except (ValueError, OSError) as e:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = p.with_name(f"progress.corrupt-{stamp}.json")
        n = 2
        while aside.exists():  # never over an earlier copy set aside this second
            aside = p.with_name(f"progress.corrupt-{stamp}-{n}.json")
            n += 1
        moved_to: Optional[Path] = aside
        try:
            os.replace(p, aside)
        except OSError:
            moved_to = None
        return {}, f"progress file was unreadable ({e}); set aside as {moved_to}"


def update_progress(
    workshop_id: str,
    change: Callable[[dict], None],
    workspace: Optional[Path] = None,
    warn: Optional[Callable[[str], None]] = None,
) -> dict:
    """The one writer of the progress file: read it, let ``change`` edit one workshop's
    entry in place, write it back atomically, all under a lock file (so two app
    instances, or the app and the CLI, do not lose each other's updates).  ``warn``
    hears about a corrupt file that was set aside on the way.  Returns the whole file."""
    p = progress_path(workspace)
    p.parent.mkdir(parents=True, exist_ok=True)
    with _Lock(p.with_suffix(".lock")):
        data, warning = load_progress(workspace)
        if warning and warn is not None:
            warn(warning)
        entry = data.get(workshop_id) if isinstance(data.get(workshop_id), dict) else {}
        change(entry)
        data[workshop_id] = entry
        write_json_atomic(p, data)
    return data


def record_progress(
    workshop_id: str,
    status: str,
    content: str = "",
    workspace: Optional[Path] = None,
    note: str = "",
    warn: Optional[Callable[[str], None]] = None,
) -> dict:
    """Merge one workshop's latest status into the progress file; returns the whole file."""

    def change(entry):
        # keep what the entry knows beyond the latest run (best result, hints, history)
        entry.update(status=status, when=_now(), content_hash=content, note=note)
        _better_best(entry, {"status": status, "when": entry["when"], "content_hash": content})

    return update_progress(workshop_id, change, workspace, warn)


# --- beyond the latest status: best result, hints revealed, history ---

STATUS_RANK = {"passed": 3, "failing": 1, "todo": 1, "unavailable": 0}
HISTORY_KEEP = 20


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def _better_best(entry: dict, result: dict) -> None:
    """Keep ``result`` as the entry's best if it beats the best so far: a pass beats
    anything, then more checks passed."""
    old = entry.get("best") if isinstance(entry.get("best"), dict) else None

    def key(r):
        return (STATUS_RANK.get(r.get("status"), 0), r.get("passed", -1))

    if old is None or key(result) > key(old):
        entry["best"] = dict(result)
    elif old.get("status") == result.get("status") and "passed" in result and "passed" not in old:
        entry["best"] = {**old, **result}  # the same result, now with its counts


def _history(entry: dict, event: dict) -> None:
    entry["history"] = (list(entry.get("history") or []) + [event])[-HISTORY_KEEP:]


def record_result(
    workshop_id: str,
    status: str,
    passed: int,
    total: int,
    content: str = "",
    workspace: Optional[Path] = None,
) -> dict:
    """Offer one run's counts as the workshop's best result (kept across resets)."""
    result = {"status": status, "passed": passed, "total": total, "when": _now(), "content_hash": content}
    return update_progress(workshop_id, lambda e: _better_best(e, result), workspace)[workshop_id]


def record_hints(workshop_id: str, shown: int, workspace: Optional[Path] = None) -> dict:
    """Remember how many hint tiers the learner has revealed (never fewer)."""

    def change(e):
        e["hints_shown"] = max(int(e.get("hints_shown") or 0), int(shown))

    return update_progress(workshop_id, change, workspace)[workshop_id]


def hints_shown(progress: dict, workshop_id: str) -> int:
    entry = progress.get(workshop_id)
    try:
        return int(entry.get("hints_shown") or 0) if isinstance(entry, dict) else 0
    except (TypeError, ValueError):
        return 0


def passed_ids(progress: dict) -> set:
    return {
        k
        for k, e in progress.items()
        if isinstance(e, dict)
        and (
            e.get("status") == "passed"
            or (isinstance(e.get("best"), dict) and e["best"].get("status") == "passed")
        )
    }


def level_progress(workshops: list, progress: dict) -> list:
    """[(level, passed, total)] in catalog order: a workshop counts once it has passed."""
    done = passed_ids(progress)
    out: dict = {}
    for w in workshops:
        n, k = out.get(w.level, (0, 0))
        out[w.level] = (n + (w.id in done), k + 1)
    return [(level, n, k) for level, (n, k) in out.items()]


def next_workshops(current: Workshop, workshops: list, progress: dict) -> list:
    """Workshops to suggest after ``current`` passes: not yet passed, every workshop its
    meta.json ``requires`` passed (counting ``current``); those that build on ``current`` first."""
    done = passed_ids(progress) | {current.id}
    ready = [w for w in workshops if w.id not in done and set(w.requires) <= done]
    return sorted(ready, key=lambda w: (current.id not in w.requires, workshops.index(w)))


class _Lock:
    """A tiny cross-platform lock: exclusive creation of a file, with a stale timeout."""

    def __init__(self, path: Path, timeout: float = 5.0):
        self.path, self.timeout = Path(path), timeout

    def __enter__(self):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                os.close(fd)
                return self
            except FileExistsError:
                try:
                    if time.time() - self.path.stat().st_mtime > self.timeout:
                        os.unlink(self.path)  # left by a crashed process
                        continue
                except OSError:
                    continue
                if time.monotonic() > deadline:
                    raise TimeoutError(f"progress lock {self.path} is held by another process") from None
                time.sleep(0.02)

    def __exit__(self, *exc):
        try:
            os.unlink(self.path)
        except OSError:
            pass


# --- the last run's statuses, shared by the command line and the app ---
def last_run_path(workspace: Path) -> Path:
    return state_dir(workspace) / "last-run.json"


def load_last_run(workspace: Path) -> dict:
    """{workshop id: [{"id", "status"}, ...]} of the last run of each workshop's file, by
    the command line or the app, whichever ran it last ({} when there is none)."""
    try:
        data = json.loads(last_run_path(workspace).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def last_statuses(workspace: Path, workshop_id: str) -> dict:
    """{check id: status} of the workshop's last run ({} when there is none)."""
    entries = load_last_run(workspace).get(workshop_id)
    if not isinstance(entries, list):
        return {}
    return {e["id"]: e["status"] for e in entries if isinstance(e, dict) and "id" in e and "status" in e}


def record_last_run(workspace: Path, workshop_id: str, records: list) -> None:
    """Keep this run's statuses as the workshop's last run (written atomically)."""
    data = load_last_run(workspace)
    data[workshop_id] = [{"id": r.id, "status": r.status} for r in records]
    write_json_atomic(last_run_path(workspace), data)
