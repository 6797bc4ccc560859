"""A3's deliverable "without a full score tensor", read from what the learner's launches
were handed and (in Triton's interpreter) what they stored.

Scores computed by PyTorch already fail own-kernel.  A kernel can still materialize them:
a wrapper that allocates an [N, N] buffer (or a [programs, BLOCK_M, N] one, the same
bytes) and hands it to a launch that stores every score before a second pass normalizes
them.  The answer is right, but the memory traffic the lesson is about, N^2 elements, is
back.  Here no tensor handed to a launch besides q, k, v and the output may hold N^2
bytes (half an fp16 score matrix, or the causal half of one), and in the interpreter the
launches may not store that many bytes in all; the output and per-row statistics are a
few N x D.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import torch

from checks.judging import launches
from checks.judging.case import CheckFailed, Context, check, collect
from checks.judging.cases.streaming_attention import make_qkv, run_attention

N, D = 192, 16  # N^2 bytes = 36 KiB; q, k, v and the output are 6 KiB each


class HandedAndStored(launches.Listener):
    """The tensors handed to this thread's outermost launches, by kernel, and the bytes its
    interpreted launches stored."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.handed: list = []
        self.stored_bytes = 0

    def around_launch(self, launch: Any, proceed: Callable[[], Any]) -> Any:
        if launch.depth == 0 and threading.get_ident() == self.thread:
            for value in list(launch.args) + list(launch.kwargs.values()):
                if isinstance(value, torch.Tensor):
                    self.handed.append((launch.name, value))
        return proceed()

    def stored(self, access: Any) -> None:
        if threading.get_ident() == self.thread and access.kind == "store":
            self.stored_bytes += int(access.addrs.size) * int(access.elem)


@check(
    "no-score-tensor",
    "no N x N score buffer: what your launches are handed and store stays a few N x D "
    "(N=192, causal and full)",
    why=(
        "the point of streaming attention is never to hold the N x N scores in memory: a kernel that "
        "stores them in a scratch buffer and reads them back gets the answer right and the traffic wrong"
    ),
    section="The problem: attention without the score matrix",
    cost=1,
)
def no_score_tensor(mod: Any, ctx: Context) -> str:
    q, k, v = make_qkv(ctx, N, D)
    limit = N * N
    said = []
    for causal in (False, True):
        heard = HandedAndStored()
        with launches.listening(heard):
            got = run_attention(mod, q, k, v, causal=causal, block_n=64)
        known = {t.untyped_storage().data_ptr() for t in (q, k, v, got)}
        extra = {
            t.untyped_storage().data_ptr(): (name, t.untyped_storage().nbytes())
            for name, t in heard.handed
            if t.numel() and t.untyped_storage().data_ptr() not in known
        }
        for name, nbytes in extra.values():
            if nbytes >= limit:
                raise CheckFailed(
                    f"attention(N={N}, D={D}, causal={causal}) handed {name} a buffer of {nbytes:,} bytes "
                    f"besides q, k, v and the output: N x N = {N * N:,} scores need no memory at all in "
                    f"streaming attention; keep one [BLOCK_M, block_n] tile of them in registers and fold "
                    f"it into (m, l, acc) before the next",
                    {"kernel": name, "bytes": nbytes, "limit": limit},
                )
        if ctx.interpret and heard.stored_bytes >= limit:
            raise CheckFailed(
                f"attention(N={N}, D={D}, causal={causal}): your kernels stored "
                f"{heard.stored_bytes:,} bytes, where the output is {got.numel() * got.element_size():,}; "
                f"that is the memory of the N x N scores ({N * N:,} elements): keep each score tile "
                f"in registers instead",
                {"stored_bytes": heard.stored_bytes, "limit": limit},
            )
        scratch = sum(nbytes for _, nbytes in extra.values())
        stored = f", {heard.stored_bytes:,} bytes stored" if ctx.interpret else ""
        said.append(f"causal={causal}: {scratch:,} bytes of scratch{stored}")
    return f"N={N}: " + "; ".join(said) + f" (limit {limit:,})"


CASES = collect(globals())
