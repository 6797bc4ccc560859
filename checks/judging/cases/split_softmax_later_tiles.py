"""A2's rows whose extreme values sit in a later chunk (checks.judging.cases.later_tiles).

The merge takes the row's maximum over every chunk's ``m``.  A merge that keeps the
first chunk's maximum (or any fixed one) rescales by ``exp(m_t - m_0)``, which is exact
while no later chunk sits more than ~88 above the first: random rows, a rise of 5 per
chunk, one logit 9 above the rest all pass.  Here a later chunk (or one column of it)
sits 120 to 400 above or below the rest, or the chunks rise or fall by that much in all,
at every chunk_size, at a ragged and a chunk-multiple width.
"""

from typing import Any

import torch

from checks.judging import case
from checks.judging.case import Context, check, collect
from checks.judging.cases import later_tiles
from checks.judging.cases.split_softmax import CHUNK_SIZES, expect_split_softmax
from checks.judging.tensors import guard_bands_on, guarded


@check(
    "later-chunk-extremes",
    "a later chunk far above or below the first, chunks rising and falling, at every chunk_size "
    "(ragged and chunk-multiple widths)",
    why=(
        "a merge that keeps the first chunk's maximum is exact until a later chunk sits far above it: "
        "then exp(m_t - m) overflows and the row is lost"
    ),
    section="Kernel 2: the rescaled merge",
    cost=2,
    properties=("large-magnitudes",),
)
def later_chunk_extremes(mod: Any, ctx: Context) -> str:
    rng = ctx.rng
    generator = torch.Generator().manual_seed(rng.getrandbits(63))
    calls = []
    for i, chunk in enumerate(CHUNK_SIZES):
        # Two rows a call, each pattern beside its mirror image, the pairs taking turns so that
        # every chunk_size meets both pairs and both kinds of width: the interpreter pays per
        # program (rows x chunks), and a jump needs two chunks where a ramp wants three.
        for j in (0, 1):  # a ragged width, then a chunk-multiple one
            pair = later_tiles.PAIRS[(i + j) % 2]
            width = later_tiles.widths(rng, chunk, most_tiles=2 if pair[0] == "later-above" else 3)[j]
            profiles = later_tiles.rows(rng, width, chunk, 2, patterns=pair)
            offsets = torch.tensor([p.offsets() for p in profiles], dtype=torch.float64)
            x = torch.randn(offsets.shape, generator=generator, dtype=torch.float64) + offsets
            x = x.to(torch.float32).to(ctx.device)
            x = guarded(x) if guard_bands_on(ctx) else x
            try:
                expect_split_softmax(mod, x, ctx, chunk_size=chunk)
            except case.CheckFailed as e:
                row = (e.details.get("worst_index") or [None])[0]
                said = later_tiles.row_said(profiles, row, tile_word="chunk")
                raise case.CheckFailed(e.message + said, e.details) from None
            calls.append(f"{'/'.join(pair)} at {width} columns, chunk_size {chunk}")
    return f"{len(calls)} calls, gaps 120-400: " + "; ".join(calls)


CASES = collect(globals())
