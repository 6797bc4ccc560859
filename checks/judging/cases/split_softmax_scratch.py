"""Checks of A2's scratch contract, read from the tensors handed to the learner's launches.

Scratch is every tensor a call of ``softmax`` hands to a launch besides its input and its
output (told apart by storage).  The lesson's contract for it: fp32 whatever the input
dtype; exactly ``scratch_bytes(M, N, chunk_size)`` bytes (the distinct storages handed to
the launches); and allocated per call, never kept from one call to the next.  The last is
seen by holding every earlier call's scratch while the next call runs: the allocator
cannot hand held memory out again, so a later call handed the same storage got it from a
buffer the learner's code kept (a module-level cache).  On a GPU two calls on different
streams, the case the contract guards against, must also get storages of their own.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import torch

from checks.judging import launches
from checks.judging.case import CheckFailed, Context, check, collect
from checks.judging.cases.split_softmax import call_split, split_oracle
from checks.judging.tensors import assert_close, keep_stream_busy, randn

SECTION_STATS = "Kernel 1: partial statistics"
SECTION_BYTES = "Worked example: scratch for 4x32769"
SECTION_STREAM = "Three kernels, one stream"


class _HandedTensors(launches.Listener):
    """(kernel name, tensor) for every tensor argument of this thread's outermost launches."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.handed: list = []

    def around_launch(self, launch: launches.Launch, proceed: Callable[[], Any]) -> Any:
        if launch.depth == 0 and threading.get_ident() == self.thread:
            for value in list(launch.args) + list(launch.kwargs.values()):
                if isinstance(value, torch.Tensor):
                    self.handed.append((launch.name, value))
        return proceed()


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def scratch_of_call(mod: Any, x: torch.Tensor, **options: Any) -> tuple:
    """Call the learner's softmax on ``x``: (its output, its scratch as a list of
    (kernel name, tensor) handed to a launch whose storage is neither x's nor the output's)."""
    heard = _HandedTensors()
    with launches.listening(heard):
        got = call_split(mod, x, **options)
    known = {_storage(x)} | ({_storage(got)} if isinstance(got, torch.Tensor) else set())
    scratch = [(k, t) for k, t in heard.handed if t.numel() and _storage(t) not in known]
    return got, scratch


def scratch_bytes_of(scratch: list) -> int:
    """Bytes of the distinct storages among the scratch tensors."""
    sizes = {_storage(t): t.untyped_storage().nbytes() for _, t in scratch}
    return sum(sizes.values())


def _describe(x: torch.Tensor, options: dict) -> str:
    rows, cols = x.shape
    dtype = str(x.dtype).replace("torch.", "")
    return f"softmax({rows}x{cols} {dtype}, chunk_size={options['chunk_size']})"


def _kernels(scratch: list, storage: int) -> str:
    names = sorted({k for k, t in scratch if _storage(t) == storage})
    return ", ".join(names)


def _expect_right(got, x: torch.Tensor, ctx: Context, what: str) -> None:
    assert_close(got, split_oracle(x), dtype=x.dtype, name=what, device=ctx.device)


@check(
    "scratch-fp32",
    "the scratch handed to your kernels is fp32 for fp32, fp16 and bf16 inputs",
    why="a chunk's (m, l) pair kept in a 16-bit dtype rounds m away from the maximum l was "
    "measured against, and l to 3 (fp16) or 2 (bf16) significant digits: every merged "
    "row carries that error, too small for most inputs to show and wrong all the same",
    section=SECTION_STATS,
    cost=2,
)
def scratch_fp32(mod: Any, ctx: Context) -> str:
    seen = []
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        x = randn((3, 2500), ctx=ctx, dtype=dtype)
        got, scratch = scratch_of_call(mod, x, chunk_size=1024)
        what = _describe(x, {"chunk_size": 1024})
        _expect_right(got, x, ctx, what)
        for kernel, t in scratch:
            if t.dtype != torch.float32:
                raise CheckFailed(
                    f"{what}: your wrapper handed {kernel} scratch of dtype "
                    f"{str(t.dtype).replace('torch.', '')} for {str(dtype).replace('torch.', '')} "
                    f"input; the (m, l) pairs go in fp32 scratch whatever the input dtype "
                    f"(torch.empty(..., dtype=torch.float32))",
                    {"scratch_dtype": str(t.dtype), "input_dtype": str(dtype), "kernel": kernel},
                )
        seen.append(len({_storage(t) for _, t in scratch}))
    return f"fp32 scratch for every input dtype ({max(seen)} scratch storage(s) per call)"


BYTES_SHAPES = ((3, 5000, 256, torch.float16), (2, 1025, 1024, torch.float32), (1, 1, 4096, torch.bfloat16))


@check(
    "scratch-bytes",
    "the scratch one call hands its kernels is exactly scratch_bytes(M, N, chunk_size) bytes",
    why="scratch_bytes is the contract's promise of what a call allocates: one fp32 (m, l) "
    "pair per chunk per row and one merged pair per row, 8 * M * (T + 1) bytes",
    section=SECTION_BYTES,
    cost=2,
)
def scratch_bytes_match(mod: Any, ctx: Context) -> str:
    notes = []
    for rows, cols, chunk, dtype in BYTES_SHAPES:
        x = randn((rows, cols), ctx=ctx, dtype=dtype)
        got, scratch = scratch_of_call(mod, x, chunk_size=chunk)
        what = _describe(x, {"chunk_size": chunk})
        _expect_right(got, x, ctx, what)
        promised = mod.scratch_bytes(rows, cols, chunk)
        handed = scratch_bytes_of(scratch)
        if handed != promised:
            storages = len({_storage(t) for _, t in scratch})
            raise CheckFailed(
                f"{what}: your wrapper handed its kernels {handed:,} bytes of scratch "
                f"({storages} allocation(s) besides x and the output), but "
                f"scratch_bytes({rows}, {cols}, {chunk}) says {promised:,}",
                {"scratch_bytes": promised, "handed_bytes": handed, "allocations": storages},
            )
        notes.append(f"{rows}x{cols}/{chunk}: {handed} bytes")
    return "; ".join(notes)


@check(
    "scratch-per-call",
    "each call gets scratch of its own: interleaved calls of two shapes (and, on a GPU, "
    "two calls on different streams) never share a scratch buffer",
    why="scratch kept from one call to the next (a module-level cache) is shared by every "
    "call: a second call on another stream overwrites the statistics the first still reads",
    section=SECTION_STREAM,
    cost=3,
)
def scratch_per_call(mod: Any, ctx: Context) -> str:
    calls = (
        (randn((3, 2500), ctx=ctx), 1024),
        (randn((5, 700), ctx=ctx, dtype=torch.float16, scale=2.0), 256),
        (randn((3, 2500), ctx=ctx, scale=3.0, offset=1.0), 1024),  # call 0's shape again
        (randn((5, 700), ctx=ctx, dtype=torch.float16, offset=-4.0), 256),  # call 1's again
    )
    held: dict = {}  # storage -> (call number, what); the tensors in `kept` keep them alive
    kept = []
    for number, (x, chunk) in enumerate(calls, 1):
        got, scratch = scratch_of_call(mod, x, chunk_size=chunk)
        what = _describe(x, {"chunk_size": chunk})
        _expect_right(got, x, ctx, f"call {number}, {what}")
        _refuse_shared(scratch, held, f"call {number} ({what})")
        for _, t in scratch:
            held.setdefault(_storage(t), (number, what))
        kept.append(scratch)
    if ctx.device == "cuda":
        _two_streams(mod, ctx, held)
        return "four interleaved calls and two calls on different streams each had scratch of their own"
    return "four interleaved calls each had scratch of their own (on a GPU, two streams too)"


def _refuse_shared(scratch: list, held: dict, this: str) -> None:
    for storage in {_storage(t) for _, t in scratch}:
        if storage in held:
            number, what = held[storage]
            raise CheckFailed(
                f"{this}: your wrapper handed {_kernels(scratch, storage)} the scratch buffer "
                f"that call {number} ({what}) used, while that call's scratch was still held: "
                f"a buffer kept from one call to the next. Allocate scratch with torch.empty "
                f"inside softmax on every call",
                {"shared_with_call": number},
            )


def _two_streams(mod: Any, ctx: Context, held: dict) -> None:
    """One call on a side stream kept busy, one on the current stream meanwhile: both
    right after the side stream syncs, each with scratch of its own."""
    xs = randn((4, 3000), ctx=ctx, scale=2.0)
    xm = randn((4, 3000), ctx=ctx, offset=3.0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        keep_stream_busy()  # the side call's kernels wait behind this
        got_side, scratch_side = scratch_of_call(mod, xs, chunk_size=1024)
    _refuse_shared(scratch_side, held, "a call on a side stream")
    got_main, scratch_main = scratch_of_call(mod, xm, chunk_size=1024)
    torch.cuda.synchronize()
    shared = {_storage(t) for _, t in scratch_main} & {_storage(t) for _, t in scratch_side}
    if shared:
        raise CheckFailed(
            f"a call on the current stream was handed the scratch buffer a call on another "
            f"stream was still using ({_kernels(scratch_main, min(shared))}): the two calls "
            f"overwrite each other's (m, l) pairs. Allocate scratch inside softmax on every call",
            {"shared_across_streams": True},
        )
    _expect_right(got_side, xs, ctx, "the call on a side stream")
    _expect_right(got_main, xm, ctx, "the call on the current stream while the side stream was busy")


CASES = collect(globals())
