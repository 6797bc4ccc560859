"""Inputs drawn to break the benign: rows whose extreme values sit in a later tile.

A softmax computed tile by tile (a chunk, a key tile) has mistakes that are exact on
ordinary rows: a maximum taken from the first tile only, a running maximum that is
never raised after the first tile.  Subtracting any constant from every logit leaves a
softmax unchanged, so such a kernel is right until a later tile holds values far enough
above the first tile's that ``exp`` of the difference overflows.  This module draws
the rows that show it, and their mirror images, for one tile width at a time:

* ``later-above``: one later tile (or one column of it) sits ``gap`` above the rest;
* ``later-below``: the same, ``gap`` below (the first tile holds the maximum);
* ``rising``: every tile sits ``gap / (tiles - 1)`` above the one before;
* ``falling``: every tile sits that far below the one before;

at a ragged width (``k * tile + r``, ``0 < r < tile``) and a tile-multiple width (``k *
tile``), of two or three tiles each.  The draws come from a ``random.Random`` the check seeds
from its id and the run's base seed (``ctx.rng``, checks.judging.case), so ``--seed N``
draws other positions, gaps and widths, the same on every machine.

Hypothesis is a test dependency, not a run-time one (a learner's machine or a GPU
host has only the project's dependencies), so the checks draw with this small seeded
generator; tests/test_later_tiles.py drives it with hypothesis to prove that every
draw keeps its promises (the extreme past the first tile, the widths ragged or not).

Standard library only: the CPU workshop's checks use it under ``python -S``.  A profile
is a list of per-column offsets; each workshop adds them to its own noise.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

PATTERNS = ("later-above", "later-below", "rising", "falling")
# Past exp's overflow of fp32 (88.7) by a margin: a difference of this size overflows.
FP32_GAP = (120.0, 400.0)
# Past float64's (709.8): the gap of the pure-Python workshop.
FLOAT64_GAP = (800.0, 2000.0)


@dataclass(frozen=True)
class Profile:
    """The offsets of one row: ``pattern`` at ``width`` columns in tiles of ``tile``.
    ``span``: the columns [start, stop) that hold the extreme (later-above/below), or
    the whole row (rising/falling); ``gap``: how far the extreme sits from the first
    tile (the last tile's rise or fall, for the ramps)."""

    pattern: str
    width: int
    tile: int
    gap: float
    span: tuple

    @property
    def tiles(self) -> int:
        return math.ceil(self.width / self.tile)

    @property
    def ragged(self) -> bool:
        return self.width % self.tile != 0

    def offsets(self) -> list:
        """One offset per column."""
        if self.pattern in ("rising", "falling"):
            step = self.gap / (self.tiles - 1)
            sign = 1.0 if self.pattern == "rising" else -1.0
            return [sign * step * (c // self.tile) for c in range(self.width)]
        sign = 1.0 if self.pattern == "later-above" else -1.0
        start, stop = self.span
        return [sign * self.gap if start <= c < stop else 0.0 for c in range(self.width)]

    def said(self, unit: str = "column", tile_word: str = "tile") -> str:
        """The row in words, for a failure's message (``unit``: what one position is,
        ``tile_word``: what a tile is called)."""
        if self.pattern in ("rising", "falling"):
            step = self.gap / (self.tiles - 1)
            return (
                f"{self.pattern}: each of its {self.tiles} {tile_word}s of {self.tile} sits {step:.0f} "
                f"{'above' if self.pattern == 'rising' else 'below'} the one before"
            )
        start, stop = self.span
        where = "above" if self.pattern == "later-above" else "below"
        held = f"{unit} {start} sits" if stop - start == 1 else f"{unit}s {start}..{stop - 1} sit"
        return (
            f"{self.pattern}: {held} {self.gap:.0f} {where} the rest ({tile_word} {start // self.tile} "
            f"of {self.tiles}, {tile_word}s of {self.tile})"
        )


def widths(rng: random.Random, tile: int, *, most_tiles: int = 3) -> tuple:
    """(a ragged width, a tile-multiple width), each of 2 to ``most_tiles`` tiles (the
    ragged one's last tile partly filled); ``tile`` of 2 or more."""
    if tile < 2 or most_tiles < 2:
        raise ValueError(f"tile {tile}, most_tiles {most_tiles}: a ragged width needs tile >= 2 and 2 tiles")
    ragged = rng.randint(1, most_tiles - 1) * tile + rng.randint(1, tile - 1)
    return ragged, rng.randint(2, most_tiles) * tile


def draw(rng: random.Random, pattern: str, width: int, tile: int, gap: tuple = FP32_GAP) -> Profile:
    """One row of ``pattern`` at ``width`` columns (at least two tiles of ``tile``)."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern: {pattern!r} is not one of {PATTERNS}")
    tiles = math.ceil(width / tile)
    if tiles < 2:
        raise ValueError(f"width: {width} columns is one tile of {tile}; a later tile needs two or more")
    size = round(rng.uniform(*gap))
    if pattern in ("rising", "falling"):
        return Profile(pattern, width, tile, float(size), (0, width))
    later = rng.randint(1, tiles - 1)
    start, stop = later * tile, min(width, (later + 1) * tile)
    if rng.random() < 0.5:  # one column of that tile, else the whole tile
        start = rng.randrange(start, stop)
        stop = start + 1
    return Profile(pattern, width, tile, float(size), (start, stop))


# The patterns two at a time, each with its mirror image: a call of two rows.
PAIRS = (("later-above", "later-below"), ("rising", "falling"))


def rows(
    rng: random.Random, width: int, tile: int, count: int = 4, gap: tuple = FP32_GAP, patterns=PATTERNS
) -> list:
    """``count`` profiles at one width, ``patterns`` in turn (row i is patterns[i % len])."""
    return [draw(rng, patterns[i % len(patterns)], width, tile, gap) for i in range(count)]


def row_said(profiles: list, row, unit: str = "column", tile_word: str = "tile") -> str:
    """'; row 2 is rising: ...' for a failure's worst row (empty when it is not known)."""
    if isinstance(row, int) and 0 <= row < len(profiles):
        return f"; row {row} is {profiles[row].said(unit, tile_word)}"
    return ""
