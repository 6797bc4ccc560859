"""I2's rows whose extreme logits sit in a later column tile (checks.judging.cases.later_tiles).

The probabilities ``y`` come from logits where one later tile sits 120 to 400 above (or
below) the rest, or every tile rises (or falls) by that much in all: the row's mass then
lives in a later tile, or only in the first, and the last tiles of a rising row hold
nearly all of it.  A kernel that walks the row in tiles must take ``dot = sum(y * g)``
over every one of them.  Drawn at the tile widths of the tiled design (512 columns), a
narrower and a wider one, at a ragged and a tile-multiple width each.
"""

from typing import Any

import torch

from checks.judging import case
from checks.judging.case import Context, check, collect
from checks.judging.cases import later_tiles
from checks.judging.cases.softmax_backward import dtype_name, expect_backward

TILES = ((128, torch.float32), (512, torch.float32), (2048, torch.float16))
ROWS = 4  # one row of each pattern


@check(
    "later-tile-extremes",
    "probabilities whose mass sits in a later column tile, only in the first, rising or falling, "
    "at several tile widths (ragged and tile-multiple)",
    why=(
        "where a later tile's logits sit far above the first tile's, nearly all of y is there: a dot "
        "taken over the first tiles only, or reduced from the wrong ones, misses it"
    ),
    section="Tile ownership and addresses",
    cost=2,
    properties=("large-magnitudes",),
)
def later_tile_extremes(mod: Any, ctx: Context) -> str:
    rng = ctx.rng
    generator = torch.Generator().manual_seed(rng.getrandbits(63))
    calls = 0
    for tile, dtype in TILES:
        for width in later_tiles.widths(rng, tile):
            profiles = later_tiles.rows(rng, width, tile, ROWS)
            offsets = torch.tensor([p.offsets() for p in profiles], dtype=torch.float64)
            logits = torch.randn(offsets.shape, generator=generator, dtype=torch.float64) + offsets
            g = torch.randn(offsets.shape, generator=generator, dtype=torch.float64) * 2.0
            y = torch.softmax(logits, dim=-1).to(dtype).to(ctx.device)
            what = f"backward of {ROWS}x{width} {dtype_name(dtype)}, logits drawn for column tiles of {tile}"
            try:
                expect_backward(mod, ctx, y, g.to(dtype).to(ctx.device), what)
            except case.CheckFailed as e:
                row = (e.details.get("worst_index") or [None])[0]
                raise case.CheckFailed(e.message + later_tiles.row_said(profiles, row), e.details) from None
            calls += 1
    return f"{calls} calls: tiles of 128/512 (fp32) and 2048 (fp16), 4 patterns each, gaps 120-400"


CASES = collect(globals())
