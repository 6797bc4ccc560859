"""What the timed calls of a candidate did: a timing is taken only of calls that work
(the witness of timed calls; checks.judging.provenance witnesses the correctness call).

A candidate may pass the correctness call and then skip the work while it is timed: a
memo that returns an earlier output, a result computed once and handed back, kernels
launched on a side stream the timer does not wait for.  Each makes a timing that is
not the kernel's (such timings read 0.01 us, 700 % to 35,000 % of
the copy ceiling).  So the runner times a :class:`TimedCall` instead of the variant:

* it rotates among input sets whose values differ, and marks the next set's tensors
  as modified in place before each call (``torch.autograd.graph.increment_version``,
  public and free: no kernel), so a cache keyed on storage and version misses;
* it keeps the last output of each set, which the runner compares with the oracle
  after timing;
* :func:`counting_launches` counts, per call, the launches of kernels defined in the
  candidate's file on the stream being timed.  In a CUDA graph capture a launch is a
  kernel node of the graph (PyTorch exposes no public list of a graph's nodes), so
  the same count proves the captured graph holds the candidate's kernels.

The launches are heard through checks.judging.launches for the length of one timing,
and only the count is kept, so listening adds about a microsecond to a launch.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator, Optional

from checks.judging import launches

SKIPS_WORK = "skips-work"
CACHED_OUTPUT = "cached-output"


class TimedCall:
    """A zero-argument callable for the timers: call ``i`` runs ``fns[i % len(fns)]``.

    Its own cost per call is what the per-call timer's loop adds to every call (the
    runner measures it with :meth:`empty`, the same rotation around no work): one
    version bump of the next set's tensors, a counter and an output slot."""

    def __init__(self, fns: list, tensors: list):
        self.fns = fns
        self.tensors = [tuple(ts) for ts in tensors]  # tensors[k]: the inputs set k's fn reads
        self.calls = 0
        self.idle_calls = 0  # calls that launched none of the candidate's kernels
        self.outputs: list = [None] * len(fns)
        self.counter: Optional["LaunchCounter"] = None
        self._prepared = False
        self._bump: Optional[Callable] = None

    def empty(self) -> "TimedCall":
        """The same rotation over the same tensors around calls that do nothing: timed,
        it measures the harness's own cost per call."""
        return TimedCall([_nothing] * len(self.fns), list(self.tensors))

    def prepare(self) -> None:
        """Mark the next call's inputs as changed: one call of
        ``torch.autograd.graph.increment_version`` with the set's tensors (well under a
        microsecond on the host, no kernel; inside a graph capture it costs nothing at
        replay)."""
        ts = self.tensors[self.calls % len(self.fns)]
        if not ts:
            return
        if self._bump is None:
            self._bump = _version_bumper(ts)  # it bumps these once itself
        else:
            self._bump(ts)

    def __call__(self):
        k = self.calls % len(self.fns)
        if not self._prepared:
            self.prepare()
        self._prepared = False
        counter = self.counter
        if counter is None:
            out = self.fns[k]()
        else:
            before = counter.count
            counter.call_begins()
            out = self.fns[k]()
            if counter.count == before:
                self.idle_calls += 1
        self.outputs[k] = out
        self.calls += 1
        return out

    def prepared(self) -> None:
        """The per-call events timer's hook: prepare the next call now, before its
        start event."""
        self.prepare()
        self._prepared = True


def _nothing() -> None:
    return None


def _version_bumper(first: tuple) -> Callable:
    """Bump ``first`` and return the bumper: ``torch.autograd.graph.increment_version``,
    which takes a list of tensors in one call, or, on a torch that takes one tensor at a
    time, a loop over it."""
    import torch

    bump = torch.autograd.graph.increment_version
    try:
        bump(first)
        return bump
    except TypeError:

        def each(ts: tuple) -> None:
            for t in ts:
                bump(t)

        each(first)
        return each


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


class LaunchCounter:
    """Launches of the candidate's kernels on the stream each call began on.  The stream
    is compared on the first launches and then on one in 64 (reading the current stream
    costs about as much as the rest of the count; a side stream is used every call)."""

    CHECK_FIRST, CHECK_EVERY = 32, 64

    def __init__(self, path: str, stream: Optional[Callable] = None):
        self.path, self.count = str(path), 0
        self._own: dict = {}  # id(kernel object) -> defined in the candidate's file
        self._stream = stream  # () -> the current stream's handle; None: no streams here
        self._call_stream = None
        self.off_stream = 0

    def _checking(self) -> bool:
        n = self.count + self.off_stream
        return self._stream is not None and (n < self.CHECK_FIRST or n % self.CHECK_EVERY == 0)

    def call_begins(self) -> None:
        stream = self._stream
        self._call_stream = stream() if stream is not None and self._checking() else None

    def own(self, kernel: Any) -> bool:
        key = id(kernel)
        if key not in self._own:
            fn = launches.python_function(kernel)
            self._own[key] = fn is not None and _same_file(fn.__code__.co_filename, self.path)
        return self._own[key]

    def saw(self, kernel: Any) -> None:
        if not self.own(kernel):
            return
        if self._call_stream is not None and self._stream() != self._call_stream:
            self.off_stream += 1  # a side stream: work the timer does not wait for
            return
        self.count += 1


class _Counting(launches.Listener):
    """Each outermost launch (an autotuner's or a handle's inner ones are the same call's)."""

    def __init__(self, counter: LaunchCounter):
        self.counter = counter

    def around_launch(self, launch: launches.Launch, proceed: Callable[[], Any]) -> Any:
        if launch.depth == 0:
            self.counter.saw(launch.kernel)
        return proceed()


@contextlib.contextmanager
def counting_launches(path: Any, timed: TimedCall, device: str = "cpu") -> Iterator[LaunchCounter]:
    """Count the candidate's own launches while the block runs (see the module doc)."""
    stream = None
    if device == "cuda":
        import torch

        def stream() -> Any:
            return torch.cuda.current_stream().cuda_stream

    counter = LaunchCounter(path, stream)
    timed.counter = counter
    try:
        with launches.listening(_Counting(counter)):
            yield counter
    finally:
        timed.counter = None


def skipped_work(timed: TimedCall, counter: LaunchCounter) -> Optional[str]:
    """Why the timed calls are not a timing of the candidate's work, or None."""
    if timed.calls and timed.idle_calls:
        side = (
            f"; {counter.off_stream} launch(es) went to another CUDA stream, which the timer "
            f"does not wait for"
            if counter.off_stream
            else ""
        )
        return (
            f"{timed.idle_calls} of {timed.calls} timed calls launched no kernel of your file "
            f"on the timed stream{side}. Every timed call must do the work: an output kept "
            f"from an earlier call, or computed once, is not a timing of your kernel"
        )
    return None
