"""The search for the smallest change that makes every check pass.

1. The baseline: which checks the file fails, and what each passing check costs (the
   caller's records, or one run of the whole suite).
2. Single edits of the error model (checks.repair.error_model), most likely first (its
   prior, raised where the failing checks' messages point at the edit's kind or line, and
   where the edit makes its line one of the right answers', checks.repair.likeness).
   Each is tried on the cheapest failing check, then on every check in slices over the
   warm workers (compiled on the GPU's, where there is one), with a time limit each, each
   slice stopping at its first check that does not pass.
3. When no single edit passes: pairs of the edits that made a failing check pass.
4. When none does and time is left: which mutant of a reference answer gives the file's
   result on its failing checks (checks.repair.reference_match), said as a reproduction.

A change is reported only when every check passed with it.  The learner's file is never
written; candidates are files in a temporary folder.  Standard library only.
"""

from __future__ import annotations

import ast
import itertools
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from checks.repair import error_model, likeness, program
from checks.repair.schedule import Gate, drain, slices
from checks.repair.variants import WRONG, changed_lines, everywhere, pair, rank, symptom, valid_variants
from checks.repair.warm import STARTUP_LIMIT, Pool
from workshops import catalog

REPO = Path(__file__).resolve().parents[2]
PASSING = ("pass", "skipped")
REFUSED = "does not compile for a GPU"  # checks.judging.gpu_compile.refuse's words (interpreted)
MAX_PAIRS_FROM = 40
MAX_WORKERS = 16  # one per core up to this: on a GPU each compiles its changes on a core of its own
# compiled workers that verify a change the interpreter passed, its checks split among them
MAX_GPU_WORKERS = 8


@dataclass
class Tried:
    candidate: error_model.Candidate
    source: str
    statuses: list  # [[check, status, message], ...] of its last try


def _result(status: str, tried: int, t0: float, **kw) -> dict:
    out = {
        "status": status,
        "says": "",
        "line": None,
        "kind": "",
        "before": "",
        "after": "",
        "diff": "",
        "tried": tried,
        "seconds": round(time.monotonic() - t0, 2),
        "note": "",
        "workers_ready_seconds": None,  # when the first warm worker could take a change
    }
    out.update(kw)
    return out


def find_repair(
    workshop: str,
    path: Path,
    *,
    interpret: bool,
    records: Optional[list] = None,
    budget: float = 60.0,
    workers: int = 0,
    seed: Optional[int] = None,
    on_progress: Optional[Callable[[dict], None]] = None,
    cancelled: Callable[[], bool] = lambda: False,
    pairs: bool = True,
    wait_for_records: Optional[Callable[[], Optional[list]]] = None,
) -> dict:
    """The smallest verified change of ``path`` that makes every check of ``workshop``
    pass, as a dict (status found/none/budget/cancelled/not-applicable, or reproduced: no
    change found, but a change of a reference answer gives the file's result; the sentence, the
    line, the before/after lines, a diff, how many changes were tried, seconds).
    ``records``: the failing run's records as dicts (else the suite runs once first).
    ``wait_for_records``: started with the run of the checks, the search starts its workers,
    then waits for that run's records (None: the run did not fail, nothing to search); its
    seconds count from then, as they do from the call without it."""
    t0 = time.monotonic()
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
        ast.parse(source)
    except (OSError, SyntaxError, ValueError) as e:
        return _result(
            "not-applicable", 0, t0, note=f"the file cannot be read as Python ({type(e).__name__})"
        )
    from checks.judging.engine import cases_for

    order = [c.id for c in cases_for(workshop)]  # cheapest first
    folder = Path(tempfile.mkdtemp(prefix="repair-"))
    n_workers = workers or max(1, min(os.cpu_count() or 1, MAX_WORKERS))
    # A change of a kernel is screened in Triton's interpreter wherever the search runs: one
    # that fails is dismissed in a fraction of the time a GPU compile takes, on every core.
    # With a GPU, a change that passes there is verified compiled, its checks split over warm
    # GPU workers; a change of the wrapper alone is screened compiled (its kernels are cached).
    gpu = not interpret and catalog.get(workshop).gpu
    folders = [str(path.resolve().parent)]
    pools: list = []
    counter = itertools.count()
    finished = threading.Event()  # the search has answered: tries still in flight say nothing

    def run(
        text: str,
        checks: list,
        limit: float,
        stop_first: bool = True,
        compile_too: bool = False,
        on_gpu: bool = False,
    ) -> Optional[dict]:
        n = next(counter)
        file = folder / f"{path.stem}_candidate_{n}.py"
        file.write_text(text, encoding="utf-8")
        job = {
            "workshop": workshop,
            "file": str(file),
            "checks": checks,
            "seed": seed,
            "stop_first": stop_first,
            "gpu_compile": compile_too,
        }
        got = (verifying if on_gpu and verifying is not None else screening).ask(job, limit)
        file.unlink(missing_ok=True)
        return got

    try:
        # every worker imports torch and triton at once, while the first runs the baseline
        verifying: Optional[Pool] = None
        if gpu:  # first: their CUDA contexts start before the interpreter's workers take the cores
            verifying = Pool(False, folder, folders, min(n_workers, MAX_GPU_WORKERS), wait_first=False)
            pools.append(verifying)
        screening = Pool(interpret or gpu, folder, folders, n_workers)
        pools.append(screening)
        if wait_for_records is not None:  # the workers warmed while the checks ran
            records = wait_for_records()
            if records is None or cancelled():
                return _result("cancelled", 0, t0, note="stopped: the run did not fail")
            t0 = time.monotonic()
        ready = _after(screening.first_ready or time.monotonic(), t0)
        ask = screening.ask
        base: dict = {}
        base_known = threading.Event()

        def in_slices(
            text: str,
            checks: list,
            weights: dict,
            on_gpu: bool,
            limit: float,
            stop_first: bool = False,
            compile_too: bool = False,
        ) -> list:
            """``checks`` run with ``text`` in slices on several workers at once (each slice
            stopping at its first check that does not pass, with ``stop_first``): each
            slice's answer, None where one did not finish."""
            width = min(n_workers, MAX_GPU_WORKERS) if on_gpu else n_workers
            parts = slices(checks, weights, width)
            answers: list = [None] * len(parts)

            def one(i: int) -> None:
                t = time.monotonic()
                got = run(
                    text, parts[i], limit, stop_first=stop_first, compile_too=compile_too, on_gpu=on_gpu
                )
                answers[i] = None if got is None else {**got, "seconds": time.monotonic() - t}

            threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(parts))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return answers

        def baseline() -> None:
            """The whole suite once, in slices: which kernels each check launches (a change
            after which a check no longer launches one of them routes around the fault
            instead of fixing it), and the records when the caller has none."""
            weights = {r["id"]: float(r.get("seconds") or 0.05) for r in records or []}
            # on a GPU the file's kernels are in Triton's cache from its verdict: this run is
            # compiled, on the GPU's workers, and leaves the interpreter's to the candidates
            answers = in_slices(source, order, weights, gpu, max(budget, 60.0))
            rank = {c: i for i, c in enumerate(order)}
            statuses = sorted(
                (s for a in answers for s in (a or {}).get("statuses", [])), key=lambda s: rank[s[0]]
            )
            wrong = [r["id"] for r in records or [] if r.get("status") in WRONG]
            if gpu and wrong:  # whether the interpreter sees the fault: its own run of those checks
                seen = run(source, wrong, max(budget, 60.0), stop_first=False)
                statuses = sorted((seen or {}).get("statuses", []), key=lambda s: rank.get(s[0], 0))
            kernels = {k: v for a in answers for k, v in (a or {}).get("kernels", {}).items()}
            # the seconds of the suite in one worker (a candidate's time limit follows them)
            base.update(
                statuses=statuses,
                kernels=kernels,
                seconds=sum((a or {}).get("seconds", 0.0) for a in answers),
            )
            base["ended"] = round(time.monotonic() - t0, 2)
            base_known.set()

        if records is None:
            baseline()
            records = [{"id": c, "status": s, "message": m} for c, s, m in base["statuses"]]
            base_seconds = base["seconds"]
        else:  # the caller's run says what fails: screening starts while the baseline runs
            threading.Thread(target=baseline, daemon=True).start()
            base_seconds = sum(float(r.get("seconds") or 0.0) for r in records)
        failing = [r["id"] for r in records if r.get("status") in WRONG]
        if not failing:
            return _result("not-applicable", 0, t0, note="no check failed: there is nothing to repair")
        seconds = {r["id"]: float(r.get("seconds") or 0.05) for r in records}
        failing.sort(key=lambda c: (seconds.get(c, 1.0), order.index(c) if c in order else 0))
        rest = [c for c in order if c not in failing]
        screen = failing + rest
        # a failing file fails fast; the fixed one runs every check: room for that on a busy machine
        limit = max(60.0, 4 * base_seconds)

        singles = error_model.candidates(source)
        # changes that make a line look like a right answer's go first (likeness.py)
        like = likeness.factor(source, likeness.known_lines(workshop))
        variants = valid_variants(source, rank(singles + everywhere(source, singles), records, source, like))
        total = len(variants)
        if on_progress:
            on_progress({"event": "begin", "candidates": total})
        found: list = []
        promising: list = []
        tried = [0]
        lock = threading.Lock()
        deadline = t0 + budget

        refused: list = []  # what the GPU compiler said of changes that passed in the interpreter
        phases: dict = {}  # seconds when the change found passed its screening, and its verification

        blind = [False]  # the interpreter skips every failing check: screen compiled instead

        def verify(text: str) -> tuple:
            """(statuses, kernels, what failed) of every check with a change that passed the
            interpreter's first check, in compiled runs of slices of the checks at once on the
            GPU workers (the failing checks first in each: a change that is no fix stops soon)."""
            answers = in_slices(text, screen, seconds, True, max(limit, 120.0), stop_first=True)
            if any(a is None for a in answers):
                return [], {}, "the verifying run did not finish"
            statuses = [s for a in answers for s in (a or {}).get("statuses", [])]
            kernels = {k: v for a in answers for k, v in (a or {}).get("kernels", {}).items()}
            bad = [m for _, st, m in statuses if st not in PASSING]
            return statuses, kernels, (bad[0] if bad else "")

        def screened(text: str, on_gpu: bool) -> Optional[dict]:
            """The cheapest failing check with ``text``; when it passes, every other check
            in slices on several workers at once (the other failing checks first), each
            slice stopping at its first check that does not pass.  In the interpreter the
            slices hold every check and compile the kernels for sm_90 too: they verify."""
            got = run(text, failing[:1], limit, on_gpu=on_gpu)
            if got is None or any(st not in PASSING for _, st, _ in got["statuses"]) or len(screen) == 1:
                return got
            if gpu and not on_gpu:
                return got  # the GPU's verification runs the others, compiled
            with gate.held(not on_gpu):  # the workers go to a change that passed a failing check
                answers = in_slices(
                    text, screen if interpret else screen[1:], seconds, on_gpu, limit, True, interpret
                )
            if any(a is None for a in answers):
                return None
            rank = {c: i for i, c in enumerate(screen)}
            statuses = [] if interpret else got["statuses"]
            statuses += [s for a in answers for s in a["statuses"]]
            kernels = {k: v for a in [got, *answers] for k, v in a.get("kernels", {}).items()}
            return {**got, "statuses": sorted(statuses, key=lambda s: rank.get(s[0], 0)), "kernels": kernels}

        kernel_lines = program.kernel_lines(source)
        gate = Gate()

        def attempt(cand: error_model.Candidate, text: str) -> None:
            if gpu and not blind[0] and base_known.is_set() and not interpreter_sees_the_fault(base, failing):
                blind[0] = True  # the interpreter passes the file's failing checks: screen on the GPU
            # a change of the wrapper alone leaves every kernel as compiled for the verdict
            # (Triton's cache has them): it runs faster compiled than interpreted
            on_gpu = blind[0] or (gpu and not any(e.node.lineno in kernel_lines for e in cand.edits))
            got = screened(text, on_gpu)
            statuses = got["statuses"] if got is not None else []
            if gpu and not on_gpu and _blind_to(statuses, failing):
                blind[0] = on_gpu = True  # the fault shows only in compiled runs: screen on the GPU
                got = screened(text, True)
                statuses = got["statuses"] if got is not None else []
            kernels = (got or {}).get("kernels", {})
            said = ""
            screened_at = time.monotonic() - t0
            if (
                gpu
                and not on_gpu
                and got is not None
                and not found
                and all(s in PASSING for _, s, _ in statuses)
            ):
                with gate.held():  # the cores go to its compiles: no new try meanwhile
                    statuses, kernels, said = verify(text)  # compiled: every check
                compiler_words = "CompilationError"  # passed interpreted, refused by the compiler
            else:
                compiler_words = REFUSED if interpret else ""
            passed = sum(s in PASSING for _, s, _ in statuses)
            passes = got is not None and passed == len(screen) and not said
            passes = passes and _same_kernels(_kernels_of(base, base_known), kernels)
            bad = [m for _, st, m in statuses if st not in PASSING]
            refusals = [m for m in bad if compiler_words and compiler_words in m]
            said = refusals[0] if refusals and len(refusals) == len(bad) else ""
            with lock:
                tried[0] += 1
                if got is None:
                    return
                if passes:
                    if not found:
                        found.append(Tried(cand, text, statuses))
                        phases.update(
                            screened=round(screened_at, 2), verified=round(time.monotonic() - t0, 2)
                        )
                elif said:
                    refused.append(said)
                elif passed > 0:
                    promising.append((passed, Tried(cand, text, statuses)))
                if on_progress and not finished.is_set():
                    on_progress(
                        {
                            "event": "progress",
                            "tried": tried[0],
                            "candidates": total,
                            "stage": stage[0],
                            "seconds": round(time.monotonic() - t0, 1),
                        }
                    )

        stage = ["single"]
        # on a GPU, a thread waiting for a compiled worker leaves an interpreting one free
        threads = n_workers + (min(n_workers, MAX_GPU_WORKERS) if gpu else 0)

        def stop() -> bool:
            return bool(found) or cancelled() or time.monotonic() > deadline

        # a find returns at once: the tries in flight end when the pools stop (below)
        drain(variants, attempt, threads, stop, gate, wait_in_flight=False)
        if not found and pairs and not cancelled() and time.monotonic() < deadline:
            stage[0] = "pair"
            best = [t for _, t in sorted(promising, key=lambda p: -p[0])][:MAX_PAIRS_FROM]
            combos = []
            for i, a in enumerate(best):
                for b in best[i + 1 :]:
                    cand = pair(a.candidate, b.candidate)
                    if cand is not None:
                        combos.append(cand)
            total += len(combos)
            drain(valid_variants(source, combos), attempt, threads, stop, gate, wait_in_flight=False)
        if found:
            return {
                **_found(found[0], source, tried[0], t0, records),
                "workers_ready_seconds": ready,
                "screened_seconds": phases.get("screened"),
                "verified_seconds": phases.get("verified"),
                # where else the seconds went: the baseline's run, the first compiled worker
                "baseline_seconds": base.get("ended"),
                "gpu_ready_seconds": _after(verifying.first_ready, t0) if verifying else None,
                # where the search's order put the change found (1: the first it tried)
                "position": next(
                    (i + 1 for i, (c, _) in enumerate(variants) if c is found[0].candidate), None
                ),
            }
        if cancelled():
            return _result("cancelled", tried[0], t0, note="stopped: the file changed")
        spent = round(time.monotonic() - t0)
        if time.monotonic() > deadline:
            return _result(
                "budget",
                tried[0],
                t0,
                note=(
                    f"no change found within the time allowed ({spent} s, {tried[0]} of {total} "
                    "changes tried; a larger budget tries the rest: --repair-budget SECONDS)"
                ),
            )
        note = (
            f"no change of one or two edits made every check pass ({tried[0]} changes tried "
            f"in {spent} s): the fix is of a kind the search does not try, or spans several lines"
        )
        if any(isinstance(r.get("details"), dict) and r["details"].get("mistake") for r in records):
            note += "; the mistake the checks name above is where to look"
        if refused:  # passed in the interpreter, refused by the GPU compiler
            note += (
                f"; {len(refused)} change{'s' if len(refused) != 1 else ''} passed in the interpreter "
                "but their kernels do not "
                f"compile for the GPU: {refused[0][:200]}"
            )
        if deadline - time.monotonic() > 1.0:  # what change of a reference answer gives the same result
            from checks.repair.reference_match import reproduce

            left = deadline - time.monotonic()
            match = reproduce(
                workshop,
                path,
                interpret=interpret,
                failing=failing,
                passing=[r["id"] for r in records if r.get("status") == "pass"],
                budget=left,
                limit=limit,
                workers=n_workers,
                seed=seed,
                cancelled=cancelled,
                ask=ask,
                on_progress=on_progress,
            )
            if match["status"] == "reproduced":
                said = {k: v for k, v in match.items() if k not in ("status", "tried", "seconds")}
                return _result("reproduced", tried[0], t0, **{**said, "note": f"{note}; {match['note']}"})
            if match["status"] == "cancelled":
                return _result("cancelled", tried[0], t0, note="stopped: the file changed")
            note += f"; {match['note']}"
        return _result("none", tried[0], t0, note=note)
    finally:
        finished.set()
        for pool in pools:
            pool.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _after(moment: Optional[float], t0: float) -> Optional[float]:
    """Seconds from ``t0`` to ``moment`` (0 for a moment before it: workers warm before the
    search's clock started); None when it never came."""
    return None if moment is None else round(max(0.0, moment - t0), 2)


def interpreter_sees_the_fault(base: dict, failing: list) -> bool:
    """Whether the interpreter's run of the file as written (the baseline) fails one of the
    checks the GPU's verdict failed at least: else a change that passes the interpreter says
    nothing of the fault."""
    wrong = {c for c, st, _ in base.get("statuses", []) if st in WRONG}
    return bool(wrong & set(failing))


def _blind_to(statuses: list, failing: list) -> bool:
    """Whether a run skipped every failing check it reached (checks that need a GPU, in
    the interpreter) while reaching one at least."""
    seen = {c: st for c, st, _ in statuses}
    reached = [c for c in failing if c in seen]
    return bool(reached) and all(seen[c] == "skipped" for c in reached)


def _kernels_of(base: dict, known: threading.Event) -> dict:
    """The baseline's kernels per check, once the baseline has run (a found candidate
    waits for it; it runs beside the first candidates)."""
    known.wait(timeout=STARTUP_LIMIT + 120)
    return base.get("kernels", {})


def _same_kernels(before: dict, after: dict) -> bool:
    """Every check that computes with kernels after the change still launches every kernel
    it launched before it (a check that now launches none, a validation that now raises
    before the launch, is not routed around anything)."""
    return all(set(names) <= set(after[check]) for check, names in before.items() if after.get(check))


def _verified(statuses: list) -> str:
    passed = sum(st == "pass" for _, st, _ in statuses)
    skipped = sum(st == "skipped" for _, st, _ in statuses)
    note = f"verified: with this change all {passed} checks that run here pass"
    return note + (f" ({skipped} cannot run here)" if skipped else "")


def _found(t: Tried, source: str, tried: int, t0: float, records: list) -> dict:
    before, after, diff = changed_lines(source, t.source)
    c = t.candidate
    seen = symptom(records)
    return _result(
        "found",
        tried,
        t0,
        says=f"line {c.line}: {c.says}" + (f" ({seen})" if seen else ""),
        line=c.line,
        kind=c.kind,
        before=before,
        after=after,
        diff=diff,
        note=_verified(t.statuses),
    )
