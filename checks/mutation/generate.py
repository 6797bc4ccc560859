"""The mutants of a GPU workshop's reference answer: every edit of every operator on every
function of ``workshops/<id>/solution.py`` (the @triton.jit kernels and the wrapper's
functions), each with a stable id, in a fixed order, and a deterministic sample of them.

A mutant's id is ``<workshop>:<line>:<operator>:<before> -> <after>`` (the source line of
the solution where the edit starts; ``before`` and ``after`` with their whitespace
squeezed and cut at 60 characters; ``#2``, ``#3`` ... when the same id would repeat).
Standard library only.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from checks.mutation.operators import OPERATORS, Edit
from checks.repair.program import sites

GPU_WORKSHOPS = ("strided_softmax", "softmax_backward", "fused_gemm", "split_softmax", "streaming_attention")
REPO = Path(__file__).resolve().parents[2]
SHOWN = 60


@dataclass(frozen=True)
class Mutant:
    id: str
    workshop: str
    line: int
    operator: str
    before: str
    after: str
    source: str  # the whole mutated solution


def solution_path(workshop: str) -> Path:
    return REPO / "workshops" / workshop / "solution.py"


def _squeeze(text: str) -> str:
    text = re.sub(r"#[^\n]*", "", text)
    text = re.sub(r"\s*\n\s*", "; ", text.strip())
    text = re.sub(r"\s+", " ", text)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _offsets(lines: list) -> list:
    """The byte offset where each line starts (AST columns count UTF-8 bytes)."""
    out, total = [], 0
    for line in lines:
        out.append(total)
        total += len(line)
    return out


def splice(source: str, edit: Edit) -> tuple:
    """(mutated source, the replaced text) for ``edit`` on ``source``."""
    data = source.encode("utf-8")
    starts = _offsets(data.splitlines(keepends=True))
    last = edit.last or edit.node
    a = starts[edit.node.lineno - 1] + edit.node.col_offset  # type: ignore[attr-defined]
    b = starts[last.end_lineno - 1] + last.end_col_offset  # type: ignore[attr-defined]
    before = data[a:b].decode("utf-8")
    return (data[:a] + edit.text.encode("utf-8") + data[b:]).decode("utf-8"), before


def all_mutants(workshop: str, source: str | None = None) -> list:
    """Every valid mutant of the workshop's solution, ordered by (line, operator, id).
    An edit whose result does not parse, or parses to the solution's own AST, is dropped."""
    if source is None:
        source = solution_path(workshop).read_text(encoding="utf-8")
    tree = ast.parse(source)
    original = ast.dump(tree)
    found: list = []
    for site in sites(tree):
        for name, operator in OPERATORS.items():
            for edit in operator(site):
                mutated, before = splice(source, edit)
                try:
                    if ast.dump(ast.parse(mutated)) == original:
                        continue
                except SyntaxError:
                    continue
                line = edit.node.lineno  # type: ignore[attr-defined]
                said = edit.shown or (before, edit.text)
                found.append((line, name, _squeeze(said[0]), _squeeze(said[1]), mutated))
    found.sort(key=lambda m: (m[0], m[1], m[2], m[3]))
    mutants, seen = [], {}  # type: ignore[var-annotated]
    for line, name, before, after, mutated in found:
        base = f"{workshop}:{line}:{name}:{before} -> {after}"
        seen[base] = seen.get(base, 0) + 1
        mid = base if seen[base] == 1 else f"{base} #{seen[base]}"
        mutants.append(Mutant(mid, workshop, line, name, before, after, mutated))
    return mutants


def _rank(mutant_id: str) -> str:
    return hashlib.sha256(mutant_id.encode("utf-8")).hexdigest()


def sample(mutants: list, n: int) -> list:
    """``n`` mutants chosen the same way on every machine: the operators take turns (each
    operator's mutants in the order of a hash of their ids), so every operator is tried;
    the chosen ones come back in the full list's order."""
    if n >= len(mutants):
        return list(mutants)
    by_operator: dict = {}
    for m in mutants:
        by_operator.setdefault(m.operator, []).append(m)
    queues = [sorted(ms, key=lambda m: _rank(m.id)) for _, ms in sorted(by_operator.items())]
    chosen: set = set()
    while len(chosen) < n:
        for q in queues:
            if q and len(chosen) < n:
                chosen.add(q.pop(0).id)
    return [m for m in mutants if m.id in chosen]


def mutants_for(workshops: list, per_workshop: int) -> list:
    out: list = []
    for w in workshops:
        out += sample(all_mutants(w), per_workshop)
    return out
