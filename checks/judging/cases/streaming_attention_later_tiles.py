"""A3's scores whose extreme values sit in a later key tile (checks.judging.cases.later_tiles).

A running maximum taken from the first key tile and never raised is exact while no later
tile scores more than ~88 above it: rising scores, one key 40 above the rest and logits
near +/-1000 that rise by 10 along the sequence all pass.  Here the keys carry two
profiles drawn for the call's block_n: in k[:, 0] a later tile (or one key of it) sits
120 to 400 above the rest, in k[:, 1] every tile rises by that much in all.  Query rows
take turns: q = (+a, 0), (-a, 0), (0, +a), (0, -a) (the rest noise), so the rows see the
jump above and below, the ramp rising and falling.  Both block_n, a ragged and a
tile-multiple length each, causal and full in turn.
"""

import dataclasses
import math
from typing import Any

import torch

from checks.judging import case
from checks.judging.case import Context, check, collect
from checks.judging.cases import later_tiles
from checks.judging.cases.streaming_attention import FP16, run_attention
from checks.judging.tensors import guard_bands_on, guarded

D = 16  # the other D=16 checks' compiled variants
A = 10.0  # |q| along the profile's dimension: logit = A * k / sqrt(D)
MIRROR = {"later-above": "later-below", "rising": "falling"}


def later_tile_qkv(ctx: Context, jump: Any, ramp: Any, generator: torch.Generator) -> tuple:
    """q, k, v [N, D] (fp16): k[:, 0] and k[:, 1] carry the two profiles as logits seen by
    a query row of A along that dimension; q's rows take the four sign/dimension turns."""
    n = jump.width
    q = torch.randn(n, D, generator=generator, dtype=torch.float64) * 0.5
    k = torch.randn(n, D, generator=generator, dtype=torch.float64) * 0.5
    v = torch.randn(n, D, generator=generator, dtype=torch.float64)
    per_logit = math.sqrt(D) / A
    k[:, 0] = torch.tensor(jump.offsets(), dtype=torch.float64) * per_logit
    k[:, 1] = torch.tensor(ramp.offsets(), dtype=torch.float64) * per_logit
    q[:, :2] = 0.0
    turn = torch.arange(n) % 4
    q[turn == 0, 0], q[turn == 1, 0], q[turn == 2, 1], q[turn == 3, 1] = A, -A, A, -A
    out = []
    for t in (q, k, v):
        t = t.to(FP16).to(ctx.device)
        out.append(guarded(t) if guard_bands_on(ctx) else t)
    return tuple(out)


def row_profiles(jump: Any, ramp: Any) -> list:
    """What query rows 0..3 see (then in turn): the jump, its mirror, the ramp, its mirror."""
    flip = lambda p: dataclasses.replace(p, pattern=MIRROR[p.pattern])
    return [jump, flip(jump), ramp, flip(ramp)]


@check(
    "later-tile-extremes",
    "a later key tile far above or below the first, scores rising and falling tile by tile "
    "(both block_n, ragged and tile-multiple lengths)",
    why=(
        "a running maximum taken from the first key tile and never raised is exact until a later tile "
        "scores far above it: then exp(s - m) overflows and the row is lost"
    ),
    section="The recurrence: (m, l, acc) across key tiles",
    cost=2,
    properties=("large-magnitudes",),
)
def later_tile_extremes(mod: Any, ctx: Context) -> str:
    rng = ctx.rng
    generator = torch.Generator().manual_seed(rng.getrandbits(63))
    said = []
    for i, (block_n, kind) in enumerate(((32, 0), (32, 1), (64, 0), (64, 1))):
        causal = i in (1, 2)  # each block_n and each kind of length meets both
        n = later_tiles.widths(rng, block_n)[kind]
        jump = later_tiles.draw(rng, "later-above", n, block_n)
        ramp = later_tiles.draw(rng, "rising", n, block_n)
        q, k, v = later_tile_qkv(ctx, jump, ramp, generator)
        try:
            run_attention(mod, q, k, v, causal=causal, block_n=block_n, what="keys drawn for their tiles: ")
        except case.CheckFailed as e:
            row = (e.details.get("worst_index") or [None])[0]
            extra = (
                f"; query row {row} sees {row_profiles(jump, ramp)[row % 4].said('key')}"
                if isinstance(row, int)
                else ""
            )
            raise case.CheckFailed(e.message + extra, e.details) from None
        said.append(f"N={n}, block_n={block_n}, causal={causal}")
    return "; ".join(said)


CASES = collect(globals())
