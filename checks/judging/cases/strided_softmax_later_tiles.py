"""I1's rows whose extreme values sit in a later column tile (checks.judging.cases.later_tiles).

The layout-aware path sweeps a transposed row in column tiles; a maximum taken from the
first tile only (or a running maximum never raised after it) is exact on every row whose
first tile is within ~88 of its maximum, which random rows always are.  Here a later
tile sits 120 to 400 above (or below) the rest, or every tile rises (or falls) by that
much in all, drawn for column tiles of 128, 256 and 512 (4096-element tiles of 32, 16 and 8
rows: the reference's fp32 tile of 8 rows is 512 wide, its fp16 tile of 16 rows 256), at a
ragged and a tile-multiple width, on transposes (the tiled path) and contiguous rows.
"""

from typing import Any

import torch

from checks.judging import case
from checks.judging.case import Context, check, collect
from checks.judging.cases import later_tiles
from checks.judging.cases.strided_softmax import SECTION_TILES, expect_softmax
from checks.judging.tensors import guard_bands_on, guarded

# (column-tile width, dtype) the rows are drawn for: 4096-element tiles of 32, 8 and 16 rows.
TILES = ((128, torch.float32), (512, torch.float32), (256, torch.float16))
ROWS = 8  # two rows of each pattern; 8 rows are one sector of fp32 rows (the reference's BLOCK_R)


def later_tile_input(
    ctx: Context, profiles: list, dtype: torch.dtype, generator: torch.Generator, *, transposed: bool
):
    """Rows of N(0, 1) noise plus each profile's offsets: a transpose of a contiguous
    [width, rows] tensor (strides (1, rows)), or a contiguous [rows, width] one."""
    offsets = torch.tensor([p.offsets() for p in profiles], dtype=torch.float64)
    x = torch.randn(offsets.shape, generator=generator, dtype=torch.float64) + offsets
    x = (x.t().contiguous() if transposed else x).to(dtype).to(ctx.device)
    x = guarded(x) if guard_bands_on(ctx) else x
    return x.t() if transposed else x


@check(
    "later-tile-extremes",
    "rows whose later column tile sits far above or below the first, rising and falling, at every "
    "tile width (ragged and tile-multiple, transposed and contiguous)",
    why=(
        "a maximum taken from the first column tile, or never raised after it, is exact until a later "
        "tile holds values far above the first tile's: then exp(x - m) overflows"
    ),
    section=SECTION_TILES,
    cost=2,
    properties=("strided", "large-magnitudes"),
)
def later_tile_extremes(mod: Any, ctx: Context) -> str:
    rng = ctx.rng
    generator = torch.Generator().manual_seed(rng.getrandbits(63))
    calls = 0
    for tile, dtype in TILES:
        for width in later_tiles.widths(rng, tile):
            profiles = later_tiles.rows(rng, width, tile, ROWS)
            transposed = calls != 1  # one contiguous call: the row kernel's path
            x = later_tile_input(ctx, profiles, dtype, generator, transposed=transposed)
            what = f"{'x.t()' if transposed else 'x'} of rows drawn for column tiles of {tile}"
            try:
                expect_softmax(mod, x, what)
            except case.CheckFailed as e:
                row = (e.details.get("worst_index") or [None])[0]
                raise case.CheckFailed(e.message + later_tiles.row_said(profiles, row), e.details) from None
            calls += 1
    return f"{calls} calls: tiles of 128/512 (fp32) and 256 (fp16), 4 patterns each, gaps 120-400"


CASES = collect(globals())
