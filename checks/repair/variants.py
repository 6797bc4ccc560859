"""The candidates as programs: edits spliced into the source, one mistake copied to several
places as one candidate, the variants that parse and differ, their order given the failing
run's words, and the lines a change removes and adds.  Standard library only."""

from __future__ import annotations

import ast
import difflib
import json
import re
from typing import Callable, Optional

from checks.repair import error_model
from checks.repair.program import function_lines

WRONG = ("fail", "error", "not run")  # statuses a repair must turn into a pass

# What a failing run's words say about the kind of the mistake: its candidates go first
# (whole words: "inf" must not match "information").
HINTS = {
    r"out-of-bounds|out of bounds|past the end": (
        "mask",
        "boundary",
        "padding",
        "constant",
        "missing-factor",
    ),
    r"never stored|no program stored|not written|never written": (
        "floor-division",
        "clamp",
        "boundary",
        "grid-axes",
        "constant",
    ),
    r"\bnan\b|\binf\b|-inf\b": ("padding", "start-value", "exp-base", "boundary"),
    r"\b16 bits\b|\bfp16\b|\bbf16\b|\brounds?\b": ("dtype", "early-cast"),
    r"\bstrides?\b|\btranspose": ("same-kind-name", "exchanged-names", "missing-factor", "foreign-strides"),
    r"\bconstant\b|\bterm\b|\bfactor\b|\bscale\b": (
        "extra-operand",
        "missing-factor",
        "missing-weight",
        "constant",
        "square-root",
    ),
    r"power of (two|2)|power-of-two": ("constant", "arithmetic", "clamp"),
    r"rescal|running maxim|\balpha\b": ("missing-rescale", "start-value"),
    r"denominator|divid|normali[sz]": ("unused-denominator", "missing-factor"),
    r"causal|diagonal": ("tile-end", "tile-start", "boundary"),
}

# Words that name one kind of edit alone: a message that says them points there strongly.
STRONG_HINTS = {r"sqrt|square root": ("square-root",)}


def apply(source: str, edits: tuple) -> str:
    """``source`` with every edit spliced in (edits must not overlap)."""
    data = source.encode("utf-8")
    for a, b, text in reversed(_spans(data, _line_starts(data), edits)):
        data = data[:a] + text + data[b:]
    return data.decode("utf-8")


def _line_starts(data: bytes) -> list:
    starts, total = [], 0
    for line in data.splitlines(keepends=True):
        starts.append(total)
        total += len(line)
    return starts


def _spans(data: bytes, starts: list, edits: tuple) -> list:
    """(start, end, new bytes) of each edit in ``data``, in order; ValueError if two overlap."""
    spans = []
    for e in edits:
        last = e.last or e.node
        a = starts[e.node.lineno - 1] + e.node.col_offset
        b = starts[last.end_lineno - 1] + last.end_col_offset
        text = e.text
        if a > 0 and data[a - 1 : a] == b"(" and data[b : b + 1] == b")" and _wrapped(text):
            text = text[1:-1]  # the source's own parentheses already hold it: no ((...))
        spans.append((a, b, text.encode("utf-8")))
    spans.sort()
    for (_, b, _), (a, _, _) in zip(spans, spans[1:]):
        if a < b:
            raise ValueError("overlapping edits")
    return spans


def _wrapped(text: str) -> bool:
    """``text`` is one parenthesized expression: ``(a < b)``, not ``(a) + (b)``."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and i < len(text) - 1:
            return False
    return True


def _slice(source: str, lines: set) -> set:
    """The lines of the statements whose values flow into the statements on ``lines`` (a
    backward slice inside each function, by names): where a fault the checks point at
    can come from."""
    out: set = set()
    for fn in ast.parse(source).body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        stmts = [
            s
            for s in ast.walk(fn)
            if isinstance(s, (ast.Assign, ast.AugAssign, ast.Expr, ast.For, ast.Return))
        ]
        wanted = set()
        for s in stmts:
            if (
                s.lineno in lines
                or (s.end_lineno or s.lineno) in lines
                or any(s.lineno <= x <= (s.end_lineno or 0) for x in lines)
            ):
                wanted |= {n.id for n in ast.walk(s) if isinstance(n, ast.Name)}
        grew = True
        while grew:
            grew = False
            for s in stmts:
                targets = s.targets if isinstance(s, ast.Assign) else [getattr(s, "target", None)]
                bound = {
                    n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)
                }
                if bound & wanted and s.lineno not in out:
                    out.add(s.lineno)
                    reads = {n.id for n in ast.walk(s) if isinstance(n, ast.Name)} - wanted
                    if reads:
                        wanted |= reads
                    grew = True
    return out


def _guards(source: str, lines: set) -> set:
    """The lines of the tests that decide whether the statements on ``lines`` run: an
    ``if`` around a ``raise`` the checks saw, a loop's header around a named load."""
    out: set = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.If, ast.While, ast.For)):
            inner = {n.lineno for s in node.body for n in ast.walk(s) if hasattr(n, "lineno")}
            if inner & lines:
                out.add(node.lineno)
    return out


def rank(
    cands: list,
    records: list,
    source: str = "",
    likeness: Callable[[error_model.Candidate], float] = lambda c: 1.0,
) -> list:
    """The candidates, most likely first: the prior, raised for the kinds the failing
    checks' words point at, for the lines and functions they name and for the lines whose
    values flow into those, times ``likeness`` (checks.repair.likeness: how much the change
    makes the line look like a right answer's)."""
    words = " ".join(
        f"{r.get('message', '')} {json.dumps(r.get('details', {}), default=str)}".lower()
        for r in records
        if r.get("status") in WRONG
    )
    favoured: set = set()
    for pattern, kinds in HINTS.items():
        if re.search(pattern, words):
            favoured.update(kinds)
    strong = {k for pattern, kinds in STRONG_HINTS.items() if re.search(pattern, words) for k in kinds}
    named = [(int(m.group(1)), m.group(2)) for m in re.finditer(r"line (\d+)(?:, in (\w+))?", words)]
    lines = {line for line, _ in named}
    lines |= _guards(source, lines) if source else set()
    functions = {fn for _, fn in named if fn}
    feeding = _slice(source, lines) if source else set()

    def score(c: error_model.Candidate) -> float:
        return (
            c.prior
            * (1.3 if c.kind in favoured else 1.0)
            * (2.0 if c.kind in strong else 1.0)
            * (1.25 if c.line in lines else 1.0)
            * (1.15 if c.line in feeding else 1.0)
            * (1.1 if c.function.lower() in functions else 1.0)
            * likeness(c)
        )

    return sorted(cands, key=lambda c: (-score(c), c.line))


def everywhere(source: str, cands: list) -> list:
    """One mistake copied to several places: for each edit that makes the same change of the
    same text at two or more places, a candidate that makes it at all of them."""
    data = source.encode("utf-8")
    starts = _line_starts(data)
    groups: dict = {}
    for c in cands:
        if len(c.edits) != 1:
            continue
        e = c.edits[0]
        last = e.last or e.node
        a = starts[e.node.lineno - 1] + e.node.col_offset
        b = starts[last.end_lineno - 1] + last.end_col_offset
        groups.setdefault((c.kind, data[a:b], e.text), []).append(c)
    reads: dict = {}  # (function, name) -> how many times the function reads the name
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, ast.FunctionDef):
            for n in ast.walk(fn):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    reads[(fn.name, n.id)] = reads.get((fn.name, n.id), 0) + 1
    out = []
    for same in groups.values():
        lines = sorted({c.line for c in same})
        if len(lines) < 2:
            continue
        first = min(same, key=lambda c: c.line)
        names = {e.node.id for c in same for e in c.edits if isinstance(e.node, ast.Name)}
        if len(names) == 1 and len(same) >= reads.get((first.function, names.pop()), 0):
            continue  # a name replaced at every read: its value is what differs, not its uses
        others = ", ".join(str(n) for n in lines[1:])
        out.append(
            error_model.Candidate(
                first.kind,
                tuple(c.edits[0] for c in same),
                first.line,
                f"{first.says} (the same mistake again at line{'s' if len(lines) > 2 else ''} {others})",
                first.prior,
                first.function,
            )
        )
    return out + _per_statement(cands)


# kinds whose mistake a learner repeats on every axis of one statement: ``(M // BLOCK_M) *
# (N // BLOCK_N)`` is one mistake, fixed by no single edit, and so is ``bias_ptr + rows,
# mask=row_ok`` for ``bias_ptr + cols, mask=col_ok`` (one axis for the other, named twice)
PER_STATEMENT = ("floor-division", "same-kind-name")


def _per_statement(cands: list) -> list:
    """For a kind of :data:`PER_STATEMENT`, one candidate making its edits at every place of
    one line: each floor division rounded up, or each name of one axis replaced by the same
    other axis's (``row`` -> ``col`` in ``rows`` and ``row_ok`` alike)."""
    groups: dict = {}
    for c in cands:
        if c.kind not in PER_STATEMENT or len(c.edits) != 1:
            continue
        e = c.edits[0]
        if (
            c.kind == "floor-division"
            and isinstance(e.node, ast.BinOp)
            and isinstance(e.node.op, ast.FloorDiv)
        ):
            groups.setdefault((c.kind, c.line, ""), {})[id(e.node)] = c
        elif c.kind == "same-kind-name" and isinstance(e.node, ast.Name):
            core = _core_change(e.node.id, e.text)
            if core:
                groups.setdefault((c.kind, c.line, core), {}).setdefault(e.node.id, c)
    out = []
    for (kind, line, _), chosen in sorted(groups.items(), key=lambda g: (g[0][1], g[0][0], g[0][2])):
        same = list(chosen.values())
        if len(same) < 2 or len({c.edits[0].node.id for c in same if kind != "floor-division"}) == 1:
            continue
        first = same[0]
        if kind == "floor-division":
            also = ", ".join(f"`{ast.unparse(c.edits[0].node)}`" for c in same[1:])
            says = f"{first.says} (and so {'does' if len(same) == 2 else 'do'} {also} on the same line)"
        else:
            also = ", ".join(f"`{c.edits[0].node.id}` for `{c.edits[0].text}`" for c in same[1:])
            says = f"{first.says} (and, on the same line, {also})"
        out.append(
            error_model.Candidate(
                kind, tuple(c.edits[0] for c in same), line, says, first.prior, first.function
            )
        )
    return out


def _core_change(old: str, new: str) -> str:
    """``row->col`` for ``rows``/``cols`` and ``row_ok``/``col_ok``: the two names without
    what they share at both ends; '' when nothing is shared (no axis to speak of)."""
    a = 0
    while a < min(len(old), len(new)) and old[a] == new[a]:
        a += 1
    b = 0
    while b < min(len(old), len(new)) - a and old[-1 - b] == new[-1 - b]:
        b += 1
    if a + b == 0:
        return ""
    return f"{old[a : len(old) - b]}->{new[a : len(new) - b]}"


def valid_variants(source: str, cands: list) -> list:
    """(candidate, its source) for each candidate that parses and changes the program; one
    per distinct program (the likelier one kept).  Only the functions a candidate edits are
    parsed again (a search weighs a thousand candidates before its first try)."""
    data = source.encode("utf-8")
    starts = _line_starts(data)
    functions = []  # (first byte, end byte, the function's syntax dumped) of each top-level one
    for first, last, _ in function_lines(ast.parse(source)):
        end = starts[last] if last < len(starts) else len(data)
        functions.append((starts[first - 1], end, ast.dump(ast.parse(data[starts[first - 1] : end]))))
    seen: set = set()
    out = []
    for c in cands:
        try:
            spans = _spans(data, starts, c.edits)
        except ValueError:
            continue
        new = data
        for a, b, text in reversed(spans):
            new = new[:a] + text + new[b:]
        touched = [f for f in functions if any(f[0] <= a and b <= f[1] for a, b, _ in spans)]
        if not _inside(spans, touched):
            touched = []  # an edit outside every function: the whole file is read again
        try:
            if touched:
                key = []
                for fa, fb, _ in touched:
                    shift = sum(len(t) - (b - a) for a, b, t in spans if b <= fa)
                    inside = sum(len(t) - (b - a) for a, b, t in spans if fa <= a and b <= fb)
                    after = ast.dump(ast.parse(new[fa + shift : fb + shift + inside]))
                    key.append((fa, after))
                if all(after == f[2] for (_, after), f in zip(key, touched)):
                    continue  # the same program
                dumped: object = tuple(key)
            else:
                dumped = ast.dump(ast.parse(new))
                if dumped == ast.dump(ast.parse(source)):
                    continue
        except (SyntaxError, ValueError):
            continue
        if dumped in seen:
            continue
        seen.add(dumped)
        out.append((c, new.decode("utf-8")))
    return out


def _inside(spans: list, functions: list) -> bool:
    """Every edit lies inside one of ``functions``."""
    return all(any(fa <= a and b <= fb for fa, fb, _ in functions) for a, b, _ in spans)


def changed_lines(before: str, after: str) -> tuple:
    """(the lines the change removes, the lines it adds, a unified diff)."""
    a, b = before.splitlines(), after.splitlines()
    removed, added = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "equal":
            removed += a[i1:i2]
            added += b[j1:j2]
    diff = "\n".join(difflib.unified_diff(a, b, "your file", "with the change", n=1, lineterm=""))
    return "\n".join(removed), "\n".join(added), diff


SYMPTOMS = (
    (r"out-of-bounds (load|store)[^\n]*?line (\d+)", "the checks saw an out-of-bounds {0} at line {1}"),
    (r"out-of-bounds (load|store)", "the checks saw an out-of-bounds {0}"),
    (r"(never stored|no program stored|never written)", "the checks saw output elements no program stored"),
    (r"\bnan\b", "the checks saw NaN in the output"),
)


def symptom(records: list) -> str:
    """What the first failing check saw, in a few words, to tie the cause to the effect."""
    for r in records:
        if r.get("status") not in WRONG:
            continue
        text = str(r.get("message", ""))
        for pattern, words in SYMPTOMS:
            m = re.search(pattern, text, re.IGNORECASE)
            if m:
                return words.format(*m.groups())
        return ""
    return ""


def pair(a: error_model.Candidate, b: error_model.Candidate) -> Optional[error_model.Candidate]:
    """``a`` and ``b`` made together, as one candidate (None: one mistake twice on a line)."""
    if a.line == b.line and a.kind == b.kind:
        return None
    first, second = sorted((a, b), key=lambda c: c.line)
    says = f"{first.says}; and line {second.line}: {second.says}"
    return error_model.Candidate(
        f"{first.kind}+{second.kind}",
        first.edits + second.edits,
        first.line,
        says,
        first.prior * second.prior,
        first.function,
    )
