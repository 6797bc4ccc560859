"""How much a candidate change makes the learner's lines look like lines of the course's
right answers (the workshop's solution and its right designs), as a factor of the search's
order: a change that turns a line unlike any right answer's into one that a right answer
has is likely the fix; one that changes a line a right answer has word for word is not.

Lines are compared twice: as written (spaces and comments aside), and as a skeleton with
every bare name replaced by ``_`` (so ``o = r * n + c`` matches ``offs = row * n_cols +
cols``: a learner's own names do not hide the shape the lesson teaches).  Nothing is ever
taken from a right answer into the learner's file: the factor only orders the candidates,
each of which is the learner's own line with one edit, verified by the checks.
Standard library only.
"""

from __future__ import annotations

import ast
import keyword
import re
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable

from checks.repair.error_model import Candidate
from checks.repair.variants import apply

WORKSHOPS = Path(__file__).resolve().parents[2] / "workshops"
KEPT_NAMES = frozenset(("tl", "triton", "torch", "math", "range", "min", "max", "None", "True", "False"))
# the factors (the error model's priors span about 0.3 to 1.0)
BECOMES_EXACT, LEAVES_EXACT = 4.0, 0.6
BECOMES_SHAPE, LEAVES_SHAPE = 2.0, 0.8

_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def plain(line: str) -> str:
    """``line`` as Python writes it back (no comment, no redundant parentheses, one way of
    spacing) where it parses alone or as a block's header, else without its spaces."""
    text = line.strip()
    # a statement, a block's header, an argument (``x + 1,``), a continued sum (``+ (h * s)``)
    tries = [(text, False), (text + " pass", True), (text.rstrip(","), False)]
    if text[:1] in "+-*/%&|":
        tries.insert(0, ("_ " + text, False))
    for attempt, header in tries:
        try:
            tree = ast.parse(attempt)
        except (SyntaxError, ValueError):
            continue
        if len(tree.body) == 1:
            written = ast.unparse(tree)
            return written.splitlines()[0] if header else written
    if "#" in text and "'" not in text and '"' not in text:
        text = text[: text.index("#")]
    return "".join(text.split())


def skeleton(line: str) -> str:
    """``plain(line)`` with each bare name (not an attribute, keyword or kept name) as ``_``."""

    def name(m: re.Match) -> str:
        word = m.group(0)
        return word if keyword.iskeyword(word) or word in KEPT_NAMES else "_"

    return _NAME.sub(name, plain(line))


def right_answers(workshop: str) -> list:
    """The paths of the workshop's right answers: its solution, then its right designs."""
    folder = WORKSHOPS / workshop
    return [p for p in [folder / "solution.py", *sorted((folder / "right").glob("*.py"))] if p.is_file()]


@lru_cache(maxsize=16)
def known_lines(workshop: str) -> tuple:
    """(the plain lines, the skeletons) of the workshop's right answers."""
    return lines_of(p.read_text(encoding="utf-8") for p in right_answers(workshop))


def lines_of(sources: Iterable[str]) -> tuple:
    exact, shapes = set(), set()
    for text in sources:
        for line in text.splitlines():
            if plain(line):
                exact.add(plain(line))
                shapes.add(skeleton(line))
    return frozenset(exact), frozenset(shapes)


def factor(source: str, known: tuple) -> Callable[[Candidate], float]:
    """For a candidate of ``source``: how much likelier its change is, given ``known`` (the
    right answers' lines, as :func:`lines_of` gives them)."""
    exact, shapes = known
    lines = source.splitlines()

    def of(c: Candidate) -> float:
        try:
            after = apply(source, c.edits).splitlines()
        except ValueError:  # overlapping edits: no such program
            return 1.0
        if len(after) != len(lines):
            return 1.0  # an edit over several lines: no line to compare
        f = 1.0
        for n in sorted({e.node.lineno for e in c.edits}):
            old, new = lines[n - 1], after[n - 1]
            f *= _change(plain(old), plain(new), exact, BECOMES_EXACT, LEAVES_EXACT)
            f *= _change(skeleton(old), skeleton(new), shapes, BECOMES_SHAPE, LEAVES_SHAPE)
        return f

    return of


def _change(before: str, after: str, known: frozenset, becomes: float, leaves: float) -> float:
    if after in known and before not in known:
        return becomes
    if before in known and after not in known:
        return leaves
    return 1.0
