"""Where no edit of the learner's file makes every check pass: which change of the
reference answer (or of a kept right design) gives the learner's result.

1. The learner's file runs on its failing checks once more, in a warm repair worker
   (checks.repair.worker), and each failing check's signature is taken: its status, and
   what it saw.  For wrong values that is the output, through
   checks.judging.tensors.mismatch_report's facts: which elements are wrong (a digest),
   the worst element and the first few with their values, the sum of the wrong values,
   the NaN/Inf/never-written counts.  A failure without such facts (an exception, a
   rejection missed, a changed input) carries no output to the record: its verdict (the
   message's first line) stands for it, without paths, line numbers and the file's own
   function names ("message"), or failing that with every number left out ("pattern").
2. Every mutant of ``workshops/<w>/solution.py`` and of each ``right/*.py``
   (checks.mutation.generate, made in the worker) runs on those checks alone, one at a
   time, cheapest first, with the search's time limit; one whose signature differs is
   dropped at that check.  One that fails every one of them with the same signature
   then runs on the checks the learner's file passes (stopped at the first that does
   not pass): a match fails exactly the same checks.  Mutants whose changed statement
   the learner's file holds go first, then those of the files most like it.
3. The best match (output before message before pattern) is said in a sentence that
   names the check, the change in the reference's own words and its line; the
   reference's line before and after the change are fields, for a key to reveal.

The search stops at the first match as good as the learner's signature allows, when the
time is spent, or when ``cancelled()``.  A reproduction is not a verified repair: it
says what the learner's code does, in the reference's terms.  Standard library only.
"""

from __future__ import annotations

import ast
import difflib
import math
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from checks.repair.schedule import drain
from checks.repair.search import PASSING, REPO
from checks.repair.variants import WRONG, changed_lines
from checks.repair.warm import Pool

TIERS = ("output", "message", "pattern")  # best first
# the facts of two outputs that must be equal (their values need only agree within the check's tolerance)
SAME_FACTS = ("mismatched", "total", "wrong_digest", "worst_index", "nan", "inf", "unwritten")
ASK_LIMIT = 60.0  # seconds for the worker to make every mutant


def signature(status: str, message: str, details: Optional[dict], names: frozenset = frozenset()) -> dict:
    """What one failing check saw, comparable between two files (``names``: the functions
    the file defines, left out of its message)."""
    details = details or {}
    said = _plain(message, names)
    sig: dict = {"status": str(status), "message": said, "pattern": _numberless(said)}
    if "wrong_digest" in details:  # the output reached the record: it is the signature
        sig["output"] = {
            k: details.get(k)
            for k in SAME_FACTS + ("worst_got", "wrong_sum", "first_mismatches", "atol", "rtol")
        }
    return sig


def defined(source: str) -> frozenset:
    """The names of the functions and classes a file defines at its top level."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return frozenset()
    return frozenset(n.name for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))


def _plain(message: str, names: frozenset = frozenset()) -> str:
    """The verdict (a message's first line: the lines after it say how the file's own
    launches and code led there, which differs between designs) without what names the
    file: its paths, line numbers and the names of its functions."""
    lines = str(message).strip().splitlines()
    text = re.sub(r"[\w./\\-]+\.py\b", "FILE", lines[0] if lines else "")
    text = re.sub(r"\blines? \d+(-\d+)?", "line N", text)
    if names:
        text = re.sub(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b", "FN", text)
    return text.strip()


def _numberless(said: str) -> str:
    """Used only where no output reached the record: the verdict, every number left out."""
    return re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", said)


def _close(a, b, atol: float, rtol: float) -> bool:
    if not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return a == b
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return str(a) == str(b)
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b))


def _same_output(a: dict, b: dict) -> bool:
    if any(a.get(k) != b.get(k) for k in SAME_FACTS):
        return False
    atol, rtol = float(a.get("atol") or 0.0), float(a.get("rtol") or 0.0)
    if not _close(a.get("worst_got"), b.get("worst_got"), atol, rtol):
        return False
    firsts = zip(a.get("first_mismatches") or [], b.get("first_mismatches") or [])
    if not all(x["index"] == y["index"] and _close(x["got"], y["got"], atol, rtol) for x, y in firsts):
        return False
    n = int(a.get("mismatched") or 0)  # a sum of n values: n elements' tolerance
    return _close(a.get("wrong_sum"), b.get("wrong_sum"), n * atol, rtol)


def compare(learner: dict, other: dict) -> Optional[str]:
    """How well ``other`` reproduces ``learner`` on one check: a tier of TIERS, or None."""
    if learner["status"] != other["status"]:
        return None
    if "output" in learner or "output" in other:
        both = "output" in learner and "output" in other
        return "output" if both and _same_output(learner["output"], other["output"]) else None
    if learner["message"] == other["message"]:
        return "message"
    return "pattern" if learner["pattern"] == other["pattern"] else None


def _signatures(got: Optional[dict], names: frozenset) -> dict:
    """{check: signature} of a worker's answer, for the checks that did not pass."""
    if got is None:
        return {}
    details = got.get("details") or {}
    return {c: signature(s, m, details.get(c), names) for c, s, m in got["statuses"] if s in WRONG}


def references(workshop: str) -> list:
    """(label, path) of the reference answer and of each kept right design."""
    folder = REPO / "workshops" / workshop
    found = [("solution.py", folder / "solution.py")]
    found += [(f"right/{p.name}", p) for p in sorted((folder / "right").glob("*.py"))]
    return [(label, p) for label, p in found if p.is_file()]


def _statements(source: str, line: int = 0) -> set:
    """The simple statements of ``source`` as ``ast.unparse`` writes them (spaces and
    redundant parentheses aside); with ``line``, only those that span it."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt)
        and not hasattr(node, "body")  # not a loop, a branch, a function: only their lines
        and (not line or node.lineno <= line <= (node.end_lineno or node.lineno))
    }


def order_mutants(mutants: list, learner_source: str, sources: dict) -> list:
    """Most likely first: mutants whose changed statement the learner's file holds, then
    those of the reference file most like the learner's, each file's in line order."""
    mine = _statements(learner_source)
    likeness = {
        label: difflib.SequenceMatcher(None, learner_source.splitlines(), src.splitlines()).ratio()
        for label, src in sources.items()
    }

    def key(m: dict) -> tuple:
        changed = _statements(m["source"], m["line"])
        return (not (changed and changed <= mine), -likeness[m["file"]], m["file"], m["line"])

    return sorted(mutants, key=key)


def describe(m: dict) -> str:
    """The mutant's change in the reference's own words."""
    before, after = _unwrapped(m["before"]), _unwrapped(m["after"])
    op = m["operator"]
    if op == "stride-swap":
        names = list(dict.fromkeys(re.findall(r"\w*stride\w*", m["before"])))[:2]
        return f"`{names[0]}` and `{names[1]}` swapped" if len(names) == 2 else f"`{after}` for `{before}`"
    if op == "mask-drop":
        return f"`{after}` without its `{before[before.index('(') + 6 : -1]}`"
    if op == "epilogue-order":
        return f"the two steps `{before}` done in the other order"
    if op == "grid-halve":
        return f"half the programs launched (grid `{m['after']}`)"
    if op == "grid-cap":
        return f"at most 64 programs launched (grid `{m['after']}`)"
    return f"`{after}` where it has `{before}`"


def _unwrapped(text: str) -> str:
    """``(a + b)`` -> ``a + b`` when the outer parentheses enclose the whole text."""
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and i < len(text) - 1:
                return text
        return text[1:-1]
    return text


def sentence(m: dict, tiers: list, checks: list, labels: dict) -> str:
    """Said of the check the mutant reproduces best (``tiers``: how, for each of ``checks``)."""
    i = min(range(len(checks)), key=lambda j: (TIERS.index(tiers[j]), j))
    what = labels.get(checks[i], checks[i])
    where = "the reference" if m["file"] == "solution.py" else f"the right design {m['file']}"
    if tiers[i] == "pattern":
        head = f"your check {what} fails the way {where} does"
    else:
        head = f"your result on {what} is what {where} gives"
    more = len(checks) - 1
    also = f" (and it fails your {more} other failing check{'s' if more > 1 else ''} the same way)"
    return f"{head} with {describe(m)} (line {m['line']} of {m['file']})" + (also if more else "")


def reproduce(
    workshop: str,
    path: Path,
    *,
    interpret: bool,
    failing: Optional[list] = None,
    passing: Optional[list] = None,
    budget: float = 60.0,
    limit: float = 60.0,
    workers: int = 0,
    seed: Optional[int] = None,
    cancelled: Callable[[], bool] = lambda: False,
    ask: Optional[Callable[[dict, float], Optional[dict]]] = None,
    on_progress: Optional[Callable[[dict], None]] = None,
) -> dict:
    """The change of a reference answer that reproduces what ``path`` does on its failing
    checks: a dict with ``status`` (reproduced / none / budget / cancelled), and where
    reproduced, ``says``, ``line`` (the reference's), ``before``/``after`` (the reference's
    line and the changed one), ``diff``, ``reference`` (its file), ``mutant`` (its id),
    ``match`` (output / message / pattern); ``tried`` mutants and ``note`` always.
    ``failing``: the failing checks' ids (else the file runs on every check first);
    ``passing``: those it passes (else they run once, when a first mutant matches);
    ``ask(job, limit)``: a warm repair worker's answer (find_repair lends its own)."""
    t0 = time.monotonic()
    deadline = t0 + budget
    path = Path(path)
    folder = Path(tempfile.mkdtemp(prefix="reference-match-"))
    n = workers or max(1, min(os.cpu_count() or 1, 8))
    pool = None
    try:
        if ask is None:
            pool = Pool(interpret, folder, [str(path.resolve().parent)], n)
            ask = pool.ask
        run = _Run(workshop, seed, limit, deadline, n, cancelled, ask, folder, t0)
        return run.search(path, failing, passing, on_progress)
    finally:
        if pool is not None:
            pool.stop()
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class _Run:
    workshop: str
    seed: Optional[int]
    limit: float
    deadline: float
    n: int
    cancelled: Callable[[], bool]
    ask: Callable[[dict, float], Optional[dict]]
    folder: Path
    t0: float
    tried: int = 0

    def result(self, status: str, note: str, **kw) -> dict:
        seconds = round(time.monotonic() - self.t0, 2)
        return {"status": status, "tried": self.tried, "seconds": seconds, "note": note, **kw}

    def job(self, file: Path, checks: list, stop_first: bool = False) -> dict:
        return {
            "workshop": self.workshop,
            "file": str(file),
            "checks": checks,
            "seed": self.seed,
            "stop_first": stop_first,
            "gpu_compile": False,
        }

    def passes(self, file: Path, checks: list) -> bool:
        """Every one of ``checks`` passes (or cannot run here) with ``file``."""
        if not checks:
            return True
        left = max(self.deadline - time.monotonic(), 1.0)
        got = self.ask(self.job(file, checks, stop_first=True), min(max(self.limit, 120.0), left))
        statuses = (got or {}).get("statuses", [])
        return len(statuses) == len(checks) and all(s in PASSING for _, s, _ in statuses)

    def search(self, path: Path, failing: Optional[list], passing: Optional[list], on_progress) -> dict:
        from checks.judging.engine import cases_for

        cases = cases_for(self.workshop)  # cheapest first
        labels = {c.id: c.label for c in cases}
        source = path.read_text(encoding="utf-8")
        as_written = self.folder / f"{path.stem}_as_written.py"
        as_written.write_text(source, encoding="utf-8")
        checks = list(failing) if failing else [c.id for c in cases]
        if self.cancelled():
            return self.result("cancelled", "stopped before any mutant ran")
        got = self.ask(self.job(as_written, checks), self.limit if failing else max(self.limit, 120.0))
        if got is None:
            return self.result("none", "your file's checks ran past the time limit: nothing to compare")
        if passing is None and not failing:  # every check ran
            passing = [c for c, s, _ in got["statuses"] if s == "pass"]
        mine = _signatures(got, defined(source))
        failing = [c for c in checks if c in mine]
        if not failing:
            return self.result("none", "no check failed when your file ran again: nothing to compare")
        # the best match there can be: the output where it reached the record, else the message
        best = max(TIERS.index(compare(mine[c], mine[c]) or "pattern") for c in failing)
        files = references(self.workshop)
        sources = {label: p.read_text(encoding="utf-8") for label, p in files}
        names = {label: defined(text) for label, text in sources.items()}
        made = self.ask(
            {"workshop": self.workshop, "mutants_of": [[label, str(p)] for label, p in files]}, ASK_LIMIT
        )
        if made is None or not made.get("mutants"):
            return self.result("none", "no mutant of the reference could be made")
        mutants = order_mutants(made["mutants"], source, sources)
        found: list = []  # (worst tier's index, place in the order, mutant, each check's tier)
        lock = threading.Lock()
        started: list = []  # the mutants taken up (the rest were left for want of time)

        def stop(before: int = len(mutants)) -> bool:
            """Time to stop: a match as good as there can be of a mutant ordered before
            ``before`` (one that comes first in the order is never cut short by a later one)."""
            done = any(f[0] <= best and f[1] < before for f in found)
            return done or self.cancelled() or time.monotonic() > self.deadline

        mine_passing = {"checks": passing}
        asking = threading.Lock()

        def learner_passes() -> list:
            """The checks the learner's file passes (they run once, when a mutant first
            matches on the failing ones, unless the caller said)."""
            with asking:
                if mine_passing["checks"] is None:
                    others = [c.id for c in cases if c.id not in failing]
                    got = self.ask(self.job(as_written, others), max(self.limit, 120.0))
                    mine_passing["checks"] = [c for c, s, _ in (got or {}).get("statuses", []) if s == "pass"]
                return mine_passing["checks"] or []

        def attempt(k: int, m: dict) -> None:
            started.append(k)
            file = self.folder / f"reference_mutant_{k}.py"
            file.write_text(m["source"], encoding="utf-8")
            tiers = []
            for check in failing:  # cheapest first: most mutants are told apart by the first
                if stop(k):
                    return
                left = max(self.deadline - time.monotonic(), 1.0)
                answer = self.ask(self.job(file, [check]), min(self.limit, left))
                theirs = _signatures(answer, names[m["file"]]).get(check)
                tier = compare(mine[check], theirs) if theirs else None
                if tier is None:
                    break
                tiers.append(TIERS.index(tier))
            if len(tiers) == len(failing):  # and it fails no check the learner's file passes
                tiers = tiers if not stop(k) and self.passes(file, learner_passes()) else []
            file.unlink(missing_ok=True)
            with lock:
                self.tried += 1
                if len(tiers) == len(failing):
                    found.append((max(tiers), k, m, [TIERS[t] for t in tiers]))
                if on_progress:
                    on_progress(
                        {
                            "event": "progress",
                            "stage": "reference",
                            "tried": self.tried,
                            "candidates": len(mutants),
                            "seconds": round(time.monotonic() - self.t0, 1),
                        }
                    )

        drain(list(enumerate(mutants)), attempt, self.n, stop)
        seconds = time.monotonic() - self.t0
        spent = f"{self.tried} of {len(mutants)} mutants of the reference answers tried in {seconds:.0f} s"
        if found:
            tier, _, m, tiers = min(found, key=lambda f: (f[0], f[1]))
            return self.reproduced(m, TIERS[tier], tiers, sources[m["file"]], failing, labels, spent)
        if self.cancelled():
            return self.result("cancelled", f"stopped: {spent}")
        if len(started) < len(mutants):
            return self.result(
                "budget", f"no change of a reference gave your result in the time allowed ({spent})"
            )
        return self.result(
            "none", f"no one-operator change of a reference answer gives your result either ({spent})"
        )

    def reproduced(
        self, m: dict, tier: str, tiers: list, reference: str, failing: list, labels: dict, spent: str
    ) -> dict:
        before, after, _ = changed_lines(reference, m["source"])
        diff = difflib.unified_diff(
            reference.splitlines(), m["source"].splitlines(), m["file"], "with the change", n=0, lineterm=""
        )
        return self.result(
            "reproduced",
            f"a reproduction, not a verified repair: the reference with this change gives what your "
            f"file gives on its failing checks ({tier} match; {spent}); your code is not the "
            f"reference, so its fix may be elsewhere",
            says=sentence(m, tiers, failing, labels),
            line=m["line"],
            kind="reference-mutant",
            before=before,
            after=after,
            diff="\n".join(diff),
            reference=m["file"],
            mutant=m["id"],
            match=tier,
        )
