"""The benchmark worker's side of handing its kernel variants to the app's compile pool
(see checks/running/handoff.py for the folder and the app's side).

Before the benchmark times anything, :func:`offer` calls each planned call of the
learner's wrapper once (checks.benchmark.planned) under a listener whose ``compiling``
hook -- Triton's public ``knobs.runtime.jit_cache_hook`` -- returns True: Triton then
neither compiles nor launches the kernel (``JITFunction.run`` returns None), so the pass
costs only the wrapper's Python and its allocations, and it hears every variant the
timed calls will ask for.  The outputs of that pass are garbage; nothing is timed or
judged from it.  An autotuned kernel is not called at all (its autotuner would time
skipped launches and keep the config they chose).

Why it runs before every benchmark the app offers it to, not only the first: an edit
can change the variants the benchmark needs (a block size, a number of warps), and the
"every shape and dtype" run needs many the quick run never recorded; the pass costs no
compile and no launch, and the pool is handed the variants only when one of them is not
in the benchmark's last list (``variants/<op>-benchmark.json``, which the save's compile
pool already compiled): otherwise the benchmark runs exactly as before.

With variants to hand, the worker writes the offer and goes on at once; the first time
the benchmark compiles an offered variant, :class:`AnsweredRecorder` reads the app's
answer (waiting :data:`handoff.ANSWER_WAIT_S` from the offer at most) and then waits
for the pool's markers, each wait bounded.  Whatever goes wrong -- the pass raises, the
folder cannot be written, no answer, a newer save -- the benchmark compiles for itself,
as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

from checks.judging import launches
from checks.running import handoff, variants

DISCOVERY_LIMIT_S = 5.0  # the pass stops calling after this long (what it heard is kept)


class Discovering(launches.Listener):
    """Heard while the planned calls run once, in the thread that runs them: every
    variant of the learner's kernels (as :class:`variants.Recorder` hears them), every
    compile skipped, every autotuner left uncalled."""

    launch_kinds = frozenset((launches.AUTOTUNER,))

    def __init__(self, learner_file: Any) -> None:
        self.recorder = variants.Recorder(learner_file)
        self.thread = threading.get_ident()
        self.skipped = 0
        self.autotuned = 0

    def compiling(self, **info: Any) -> Optional[bool]:
        if threading.get_ident() != self.thread:
            return None
        self.recorder.compiling(**info)  # it expects nothing: it only records
        self.skipped += 1
        return True  # neither compiled nor launched

    def around_launch(self, launch: launches.Launch, proceed: Any) -> Any:
        if launch.kind == launches.AUTOTUNER and threading.get_ident() == self.thread:
            self.autotuned += 1
            return None
        return proceed()

    def found(self) -> list:
        """The variants heard, each once, in the order first asked for."""
        out, seen = [], set()
        for v in self.recorder.variants:
            if v["id"] not in seen:
                seen.add(v["id"])
                out.append({"qualname": v["qualname"], "data": v["data"]})
        return out


def discover(argv: list, learner: Any, limit_s: float = DISCOVERY_LIMIT_S) -> tuple[list, dict]:
    """(variants, what the pass did): each planned call of ``python -m checks.benchmark
    ARGV`` called once with Triton's compiles skipped.  A call that raises is counted and
    passed over; raises only what planning the calls raises (a usage error, say)."""
    from checks.benchmark.calls_ahead import planned_calls

    listener = Discovering(learner)
    stats: dict = {"calls": 0, "raised": 0, "stopped": False}
    t0 = time.monotonic()

    def in_time() -> bool:
        if time.monotonic() - t0 <= limit_s:
            return True
        stats["stopped"] = True
        return False

    with contextlib.redirect_stdout(io.StringIO()), launches.listening(listener):
        calls = planned_calls(argv, in_time)
        try:
            for _, call in calls:
                if not in_time():
                    break
                stats["calls"] += 1
                try:
                    call()
                except Exception:  # noqa: BLE001 - garbage in, perhaps an error out: what it asked for is kept
                    stats["raised"] += 1
        finally:
            calls.close()
    found = listener.found()
    stats.update(
        discovered=len(found),
        skipped=listener.skipped,
        autotuned=listener.autotuned,
        discover_s=round(time.monotonic() - t0, 4),
    )
    return found, stats


def _known(path: Optional[str], target: Optional[list]) -> set:
    """The identities in the benchmark's last list, when it was kept for ``target``."""
    from checks.running.compile_ahead import read_variants

    if not path or not target:
        return set()
    found, kept_for = read_variants(Path(path))
    if kept_for != list(target):
        return set()
    return {variants.identity(v["qualname"], v["data"]) for v in found}


class AnsweredRecorder(variants.Recorder):
    """A benchmark's :class:`variants.Recorder` that learns what to wait for from the app's
    answer, read the first time the benchmark compiles an offered variant; it also counts
    the learner's kernels Triton compiled here and those it found in its cache."""

    def __init__(
        self, learner_file: Any, folder: Any, offered: list, deadline: float, wait_limit: float
    ) -> None:
        super().__init__(learner_file, wait_limit=wait_limit)
        self.answer_folder = Path(folder)
        self.offered = set(offered)
        self.deadline = deadline
        self.answer: Optional[list] = None  # None: not read yet
        self.compiled_here = 0
        self.compile_s = 0.0  # spent compiling them here
        self.cache_hits = 0
        self.gave_up = False

    def before_compiling(self, ident: str) -> None:
        if self.answer is not None or ident not in self.offered:
            return
        self.answer = handoff.wait_answer(self.answer_folder, self.deadline)
        accepted = set(self.answer) & self.offered
        if accepted:
            self.folder = self.answer_folder
            self.expected = accepted

    def _wait_for(self, ident: str) -> None:
        t0 = time.monotonic()
        super()._wait_for(ident)
        if time.monotonic() - t0 >= self.wait_limit:  # the pool is not keeping up
            self.expected.clear()
            self.gave_up = True

    def compiled(self, **info: Any) -> None:
        fn = getattr(getattr(info.get("src"), "fn", None), "fn", None)
        code = getattr(fn, "__code__", None)
        if code is None or not variants.same_file(code.co_filename, self.learner_file):
            return
        if info.get("cache_hit"):
            self.cache_hits += 1
        else:
            self.compiled_here += 1
            total = getattr(info.get("times"), "total", None)
            self.compile_s += total / 1e6 if isinstance(total, (int, float)) else 0.0

    def summary(self) -> dict:
        return {
            "answered": len(self.answer) if self.answer is not None else None,
            "waits": self.waits,
            "pool_hits": self.hits,
            "wait_s": round(self.waited_s, 4),
            "gave_up": self.gave_up,
            "compiled_here": self.compiled_here,
            "compile_s": round(self.compile_s, 4),
            "cache_hits": self.cache_hits,
        }


class Offer:
    """What one benchmark's discovery did: the variants offered (none: nothing new, or
    no discovery) and the pass's numbers; :meth:`recorder` is the benchmark's recorder."""

    def __init__(self, folder: str, ids: list, stats: dict) -> None:
        self.folder, self.ids, self.stats = folder, ids, stats
        self.deadline = time.monotonic() + handoff.ANSWER_WAIT_S
        self.heard: Optional[AnsweredRecorder] = None

    def recorder(self, learner: Any) -> variants.Recorder:
        self.heard = AnsweredRecorder(learner, self.folder, self.ids, self.deadline, handoff.WAIT_LIMIT_S)
        return self.heard

    def line(self) -> str:
        """One line for the benchmark's output: what discovery and the pool did."""
        import json

        said = dict(self.stats, offered=len(self.ids), **(self.heard.summary() if self.heard else {}))
        return handoff.SAID + json.dumps(said, sort_keys=True)


def offer(
    argv: list, folder: Any, learner: Any, known: Optional[str], target: Optional[list]
) -> Optional[Offer]:
    """Discover the variants of ``python -m checks.benchmark ARGV`` and offer them in the
    app's ``folder`` when one is not in the list at ``known`` (kept for ``target``);
    None when there is no folder or discovery failed.  Never raises: a failure is said
    on stderr and means the benchmark compiles for itself."""
    if not folder or not Path(folder).is_dir():
        return None
    try:
        digest = hashlib.sha256(Path(learner).read_bytes()).hexdigest()
        found, stats = discover(argv, learner)
        fresh = {variants.identity(v["qualname"], v["data"]) for v in found} - _known(known, target)
        offered = found if fresh else []
        stats["new"] = len(fresh)
        handoff.write_offer(folder, str(learner), digest, offered)
    except (Exception, SystemExit) as e:  # noqa: BLE001 - no discovery: the benchmark runs as before
        with contextlib.suppress(OSError):
            handoff.write_offer(folder, str(learner), "", [])  # the app stops looking
        print(f"{handoff.SAID}not discovered ({type(e).__name__}: {e})", file=sys.stderr)
        return None
    return Offer(str(folder), [variants.identity(v["qualname"], v["data"]) for v in offered], stats)
