"""The one catalog of workshops, read from the workshop folders.

Each folder under ``workshops/`` that holds a ``meta.json`` is a workshop.  Nothing
else lists workshops.  Standard library only (the CPU workshop runs under ``python -S``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent
LEVELS = ("intermediate", "advanced")
REQUIRED = (
    "id",
    "code",
    "level",
    "title",
    "device",
    "prerequisite",
    "requires",
    "deliverable",
    "sessions",
    "functions",
)


@dataclass(frozen=True)
class Workshop:
    id: str
    code: str
    level: str
    title: str
    device: str  # "CPU" or "GPU"
    prerequisite: str  # in words, for the learner
    requires: tuple  # the ids of the workshops to pass first (the app's next-workshop order)
    deliverable: str
    sessions: str  # suggested study sessions, e.g. "2-4"
    functions: tuple  # the contract's public functions, e.g. ("softmax",)
    folder: Path
    # PyTorch ops (aten names) the lesson allows inside the learner's functions, beyond
    # allocation, views and layout copies (checks.judging.provenance.ALLOWED_OPS).
    allowed_torch_ops: tuple = ()
    # Each kept wrong answer (file name in wrong/) -> the check ids that must reject it.
    wrong_answers: tuple = ()

    @property
    def gpu(self) -> bool:
        return self.device == "GPU"

    @property
    def starter(self) -> Path:
        return self.folder / "starter.py"

    @property
    def solution(self) -> Path:
        return self.folder / "solution.py"

    @property
    def exercise_name(self) -> str:
        """File name of the learner's copy in the workspace."""
        return f"{self.id}.py"

    def wrong_versions(self) -> list:
        d = self.folder / "wrong"
        return sorted(d.glob("*.py")) if d.is_dir() else []

    def right_versions(self) -> list:
        """Right answers of other designs than the reference (right/*.py): each must pass
        every check, so no check refuses a right answer for its design."""
        d = self.folder / "right"
        return sorted(d.glob("*.py")) if d.is_dir() else []

    def read(self, name: str) -> str:
        p = self.folder / name
        return p.read_text(encoding="utf-8") if p.exists() else ""

    @property
    def lesson(self) -> str:
        return self.read("lesson.md")

    @property
    def explanation(self) -> str:
        return self.read("explanation.md")

    @property
    def hints(self) -> list:
        """Tiers from a nudge to nearly the answer: the '## ' sections of hints.md."""
        return split_sections(self.read("hints.md"))


def lesson_headings(workshop_id: str) -> list:
    """The ``## `` headings of a workshop's lesson ([] for an unknown workshop)."""
    try:
        lesson = get(workshop_id).lesson
    except KeyError:
        return []
    return [line[3:].strip() for line in lesson.splitlines() if line.startswith("## ")]


def split_sections(markdown: str) -> list:
    """Split on level-2 headings; each item is one section's text, heading included."""
    parts = re.split(r"(?m)^(?=## )", markdown)
    return [p.strip() for p in parts if p.strip().startswith("## ")]


def _load(folder: Path) -> Workshop:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    missing = [k for k in REQUIRED if k not in meta]
    if missing:
        raise ValueError(f"{folder / 'meta.json'}: missing {missing}")
    if meta["id"] != folder.name:
        raise ValueError(f"{folder / 'meta.json'}: id {meta['id']!r} differs from folder name")
    if meta["level"] not in LEVELS or meta["device"] not in ("CPU", "GPU"):
        raise ValueError(f"{folder / 'meta.json'}: bad level or device")
    wrong = meta.get("wrong_answers", {})
    if not isinstance(wrong, dict) or not all(isinstance(v, list) and v for v in wrong.values()):
        raise ValueError(
            f"{folder / 'meta.json'}: wrong_answers must map each file in wrong/ "
            f"to a non-empty list of check ids"
        )
    requires = meta["requires"]
    if not isinstance(requires, list) or not all(isinstance(i, str) for i in requires):
        raise ValueError(f"{folder / 'meta.json'}: requires must be a list of workshop ids")
    return Workshop(
        folder=folder,
        functions=tuple(meta.pop("functions")),
        requires=tuple(requires),
        allowed_torch_ops=tuple(meta.get("allowed_torch_ops", ())),
        wrong_answers=tuple((name, tuple(ids)) for name, ids in sorted(wrong.items())),
        **{k: meta[k] for k in REQUIRED if k not in ("functions", "requires")},
    )


def check_requires(found: list) -> None:
    """Every id in a ``requires`` names a workshop, and no workshop requires itself,
    directly or through others (a cycle would never be suggested)."""
    by_id = {w.id: w for w in found}
    for w in found:
        unknown = [i for i in w.requires if i not in by_id]
        if unknown:
            raise ValueError(
                f"{w.folder / 'meta.json'}: requires: unknown workshop id {unknown[0]!r} "
                f"(known: {', '.join(sorted(by_id))})"
            )
    for w in found:
        seen, todo = set(), list(w.requires)
        while todo:
            i = todo.pop()
            if i == w.id:
                raise ValueError(f"{w.folder / 'meta.json'}: requires: {w.id!r} would come before itself")
            if i not in seen:
                seen.add(i)
                todo.extend(by_id[i].requires)


_CACHE: Optional[list] = None


def workshops() -> list:
    """All workshops, intermediate before advanced, by code (I1..I3, A1..A3)."""
    global _CACHE
    if _CACHE is None:
        found = [_load(d) for d in sorted(ROOT.iterdir()) if (d / "meta.json").is_file()]
        check_requires(found)
        _CACHE = sorted(found, key=lambda w: (LEVELS.index(w.level), w.code))
    return list(_CACHE)


def get(workshop_id: str) -> Workshop:
    for w in workshops():
        if w.id == workshop_id or w.code.lower() == workshop_id.lower():
            return w
    known = ", ".join(w.id for w in workshops())
    raise KeyError(f"unknown workshop {workshop_id!r}; known: {known}")
