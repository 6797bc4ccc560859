"""The checks' draws that break the benign (checks/judging/cases/later_tiles.py), driven by
hypothesis: whatever the seed, tile and pattern, a draw keeps its promises; and the
reading of I3's tile order (checks/judging/cases/fused_gemm_tile_order.py) on stores
made by hand."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from checks.judging.case import Context
from checks.judging.cases import later_tiles
from checks.judging.cases.fused_gemm_tile_order import lesson_tile_of, order_problem, tiles_stored

TILES = st.sampled_from([2, 3, 7, 16, 32, 64, 128, 256, 512, 1024, 4096])
SEEDS = st.integers(min_value=0, max_value=2**63 - 1)


@settings(max_examples=300, deadline=None)
@given(seed=SEEDS, tile=TILES, most=st.integers(min_value=2, max_value=4))
def test_widths_are_one_ragged_and_one_tile_multiple_of_two_tiles_or_more(seed, tile, most):
    import random

    ragged, multiple = later_tiles.widths(random.Random(seed), tile, most_tiles=most)
    assert ragged % tile != 0 and multiple % tile == 0
    assert 2 <= math.ceil(ragged / tile) <= most and 2 <= multiple // tile <= most


@settings(max_examples=400, deadline=None)
@given(seed=SEEDS, tile=TILES, pattern=st.sampled_from(later_tiles.PATTERNS), kind=st.sampled_from([0, 1]))
def test_every_draw_puts_its_extreme_past_the_first_tile(seed, tile, pattern, kind):
    import random

    rng = random.Random(seed)
    width = later_tiles.widths(rng, tile)[kind]
    p = later_tiles.draw(rng, pattern, width, tile)
    offsets = p.offsets()
    lo, hi = later_tiles.FP32_GAP
    assert len(offsets) == width and lo <= p.gap <= hi
    assert all(o == 0.0 for o in offsets[:tile])  # the first tile is the baseline
    if pattern in ("later-above", "later-below"):
        start, stop = p.span
        assert tile <= start < stop <= width and start // tile == (stop - 1) // tile  # within one later tile
        sign = 1.0 if pattern == "later-above" else -1.0
        assert all(o == (sign * p.gap if start <= c < stop else 0.0) for c, o in enumerate(offsets))
    else:
        steps = [offsets[c * tile] for c in range(p.tiles)]
        rising = pattern == "rising"
        assert all((b > a) if rising else (b < a) for a, b in zip(steps, steps[1:]))
        assert abs(abs(steps[-1]) - p.gap) < 1e-9  # the last tile sits the whole gap away
    assert p.said()  # a failure can always say what the row was


def test_a_one_tile_width_and_an_unknown_pattern_are_refused():
    import random

    with pytest.raises(ValueError, match="one tile"):
        later_tiles.draw(random.Random(0), "rising", 64, 64)
    with pytest.raises(ValueError, match="pattern"):
        later_tiles.draw(random.Random(0), "sideways", 128, 64)
    with pytest.raises(ValueError, match="tile"):
        later_tiles.widths(random.Random(0), 1)


def test_the_base_seed_reaches_the_draws_and_the_same_seed_draws_the_same():
    def draws(base):
        rng = Context("later-tile-extremes", base_seed=base).rng
        return [later_tiles.rows(rng, w, 256) for w in later_tiles.widths(rng, 256)]

    assert draws(0) == draws(0)
    assert draws(0) != draws(7)


def test_the_float64_gap_overflows_exp_of_a_double():
    assert later_tiles.FLOAT64_GAP[0] > math.log(np.finfo(np.float64).max)
    assert later_tiles.FP32_GAP[0] > math.log(np.finfo(np.float32).max)


# --- I3's tile order, read from stores made by hand ---------------------------------------


def _store(out, tile_m, block_n, pid_m, pid_n, pid, programs):
    """The store of tile (pid_m, pid_n) by program ``pid`` of a grid of ``programs``."""
    M, N = out.shape
    rows = np.arange(pid_m * tile_m, min(M, (pid_m + 1) * tile_m))
    cols = np.arange(pid_n * block_n, min(N, (pid_n + 1) * block_n))
    offsets = (rows[:, None] * N + cols[None, :]).reshape(-1)
    return (0, pid, programs, (out.data_ptr() + offsets * out.element_size()).astype(np.uint64))


@pytest.mark.parametrize("group_m", [1, 4, 8])
def test_the_lessons_order_passes_and_row_major_is_named(group_m):
    tile_of = lesson_tile_of()
    out = torch.empty((70, 100), dtype=torch.float16)
    nm, nn = 5, 2  # 16 x 64 tiles
    grouped = [_store(out, 16, 64, *tile_of(p, nm, nn, group_m), p, 10) for p in range(10)]
    owned, programs, tile, launched = tiles_stored(grouped, out, 16)
    assert (programs, tile, launched) == (10, (16, 64), {0})
    assert order_problem(owned, programs, (70, 100), tile, group_m, tile_of) is None
    row_major = [_store(out, 16, 64, p // nn, p % nn, p, 10) for p in range(10)]
    owned, programs, tile, _ = tiles_stored(row_major, out, 16)
    problem = order_problem(owned, programs, (70, 100), tile, group_m, tile_of)
    if group_m == 1:
        assert problem is None  # group_m = 1 is the row-major order
    else:
        assert problem is not None and "row-major" in problem[0] and problem[1]["row_major"]


def test_a_grid_of_fewer_programs_than_tiles_is_judged_by_the_same_order():
    tile_of = lesson_tile_of()
    out = torch.empty((70, 100), dtype=torch.float16)
    # 4 programs, program p storing tiles p, p + 4, p + 8 of the grouped order, in that order
    stores = [_store(out, 16, 64, *tile_of(t, 5, 2, 4), t % 4, 4) for t in range(10)]
    owned, programs, tile, _ = tiles_stored(stores, out, 16)
    assert programs == 4 and owned[0] == [tile_of(0, 5, 2, 4), tile_of(4, 5, 2, 4), tile_of(8, 5, 2, 4)]
    assert order_problem(owned, programs, (70, 100), tile, 4, tile_of) is None
    swapped = stores[4:8] + stores[:4] + stores[8:]  # each program's first two tiles the other way round
    owned, programs, tile, _ = tiles_stored(swapped, out, 16)
    assert order_problem(owned, programs, (70, 100), tile, 4, tile_of) is not None
