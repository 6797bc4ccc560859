"""Which submissions a cohort folder holds.

SUBMISSIONS/<learner>/<workshop_id>.py, one folder per learner, files named as in the
workspace.  A file that names no known workshop is reported with the reason, never
guessed (``A1.py``, ``Strided_Softmax.py`` and ``strided_softmax (1).py`` are reported, not
graded).  Hidden files and folders, and ``__pycache__``, are passed over in silence.

Standard library only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from workshops import catalog


@dataclass(frozen=True)
class Submission:
    learner: str
    workshop: str
    path: Path
    sha256: str
    source: bytes = field(default=b"", repr=False)  # the bytes hashed: the bytes graded

    @property
    def key(self) -> tuple:
        return (self.learner, self.workshop)


@dataclass(frozen=True)
class Unmatched:
    """A file or folder in the cohort that is not graded, and why."""

    learner: str  # "" for an entry directly under SUBMISSIONS
    path: Path
    reason: str

    def to_dict(self) -> dict:
        return {"learner": self.learner, "file": self.path.name, "reason": self.reason}


def _skipped(p: Path) -> bool:
    return p.name.startswith(".") or p.name == "__pycache__"


def _why_not(name: str, known: dict) -> str:
    """Why a file in a learner's folder is not graded."""
    stem, suffix = (name[:-3], ".py") if name.endswith(".py") else (Path(name).stem, Path(name).suffix)
    if suffix != ".py":
        return f"not a Python file: workshop files are named <workshop_id>.py ({', '.join(sorted(known))})"
    codes = {w.code.lower(): w.id for w in known.values()}
    if stem.lower() in codes:
        return f"names a workshop by its code, not its id: rename it {codes[stem.lower()]}.py"
    close = [i for i in known if i.lower() == stem.lower()]
    if close:
        return f"names no known workshop (ids are lower case: {close[0]}.py)"
    return f"names no known workshop (known: {', '.join(sorted(known))})"


def discover(root: Path) -> tuple:
    """(submissions, unmatched) under ``root``, both sorted by learner then name.
    Raises ``NotADirectoryError`` when ``root`` is not a folder."""
    root = Path(root)
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is not a folder")
    known = {w.id: w for w in catalog.workshops()}
    found: list = []
    unmatched: list = []
    for entry in sorted(root.iterdir()):
        if _skipped(entry):
            continue
        if not entry.is_dir():
            unmatched.append(
                Unmatched("", entry, "not in a learner's folder: put it in SUBMISSIONS/<learner>/")
            )
            continue
        for f in sorted(entry.iterdir()):
            if _skipped(f):
                continue
            if f.is_dir():
                unmatched.append(Unmatched(entry.name, f, "a folder: workshop files lie directly in it"))
            elif f.suffix == ".py" and f.stem in known:
                try:
                    data = f.read_bytes()
                except OSError as e:
                    unmatched.append(Unmatched(entry.name, f, f"cannot be read: {e.strerror or e}"))
                    continue
                found.append(Submission(entry.name, f.stem, f, hashlib.sha256(data).hexdigest(), data))
            else:
                unmatched.append(Unmatched(entry.name, f, _why_not(f.name, known)))
    return found, unmatched


def is_gpu_workshop(workshop_id: str) -> bool:
    return catalog.get(workshop_id).gpu
