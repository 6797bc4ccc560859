"""A3 streaming attention: the classic mistakes, each a float64 oracle of the wrong computation.

Every oracle works on [N, D] and on [B, H, N, D] alike (the matrix products batch over
the leading dimensions)."""

from __future__ import annotations

import math
from typing import Optional

import torch

from checks.judging.mistakes import Call, Mistake, Variants, quantities as named
from checks.judging.mistakes.compare import (
    F64,
    Partial,
    agrees as _agrees,
    as64,
    rounded,
    rows_known,
    unwritten_suffix,
)

OWNERSHIP = "Who owns what: programs, tiles and the state"
RECURRENCE = "The recurrence: (m, l, acc) across key tiles"
WORKED = "Worked example: logits [0, 0, log 2]"
CAUSAL = "Causal attention and the diagonal"
RAGGED = "Ragged lengths and masks"
PROBLEM = "The problem: attention without the score matrix"
PRECISION = "Precision: P in the input dtype"

MAX_WORK = 1 << 28  # heads * N * N * D above this: not diagnosed (its oracles would take too long)
QUERY_BLOCKS = (16, 32, 64, 128)  # plausible BLOCK_M values of a learner's launch


class _Inputs:
    """q, k, v as float64 with the call's options."""

    def __init__(self, call: Call):
        q, k, v = (call.argument(i, name) for i, name in enumerate("qkv"))
        self.dtype = q.dtype
        self.q, self.k, self.v = as64(q), as64(k), as64(v)
        self.causal = bool(call.kwargs.get("causal", call.args[3] if len(call.args) > 3 else False))
        self.block_n = call.kwargs.get("block_n", call.args[4] if len(call.args) > 4 else 32)
        self.n, self.d = self.q.shape[-2], self.q.shape[-1]

    def scores(self, scale: Optional[float] = None) -> torch.Tensor:
        s = self.q @ self.k.transpose(-1, -2) * (1 / math.sqrt(self.d) if scale is None else scale)
        return self.masked(s) if self.causal else s

    def masked(self, s: torch.Tensor, diagonal: int = 1) -> torch.Tensor:
        future = torch.ones(self.n, self.n, dtype=torch.bool).triu(diagonal)
        return s.masked_fill(future, float("-inf"))


def _inputs(call: Call) -> Optional[_Inputs]:
    q, k, v = (call.argument(i, name) for i, name in enumerate("qkv"))
    if not all(isinstance(t, torch.Tensor) for t in (q, k, v)):
        return None
    if q.dim() not in (2, 4) or q.shape != k.shape or q.shape != v.shape or q.numel() == 0:
        return None
    heads = q.numel() // (q.shape[-1] * q.shape[-2])
    if heads * q.shape[-2] * q.shape[-2] * q.shape[-1] > MAX_WORK:
        return None
    return _Inputs(call)


def attend(s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(s, dim=-1) @ v


def right(call: Call):
    found = _inputs(call)
    return None if found is None else attend(found.scores(), found.v)


def agrees(call: Call, expected) -> bool:
    return _agrees(call.result, expected)


def trivially_right_rows(call: Call) -> int:
    """Causal row 0 attends to key 0 alone (out[0] = v[0]): a wrong scale leaves it right."""
    found = _inputs(call)
    return 1 if found is not None and found.causal else 0


def quantities(call: Call) -> list:
    found = _inputs(call)
    return [] if found is None else named.attention(found.q, found.k, found.causal)


def _causal_excludes_diagonal(call: Call):
    found = _inputs(call)
    if found is None or not found.causal:
        return None
    s = found.masked(found.q @ found.k.transpose(-1, -2) / math.sqrt(found.d), diagonal=0)
    return attend(s, found.v)  # row 0 has no key left: NaN, as in the kernel


def _causal_ignored(call: Call):
    found = _inputs(call)
    if found is None or not found.causal:
        return None
    return attend(found.q @ found.k.transpose(-1, -2) / math.sqrt(found.d), found.v)


def _scale_forgotten(call: Call):
    found = _inputs(call)
    return None if found is None else attend(found.scores(scale=1.0), found.v)


def _scaled_by(factor):
    """An oracle: attention whose scores are scaled by ``factor(D, N)`` instead of 1/sqrt(D)."""

    def oracle(call: Call):
        found = _inputs(call)
        if found is None:
            return None
        scale = factor(found.d, found.n)
        return None if scale is None else attend(found.scores(scale=scale), found.v)  # None: N = D

    return oracle


def streamed(
    s: torch.Tensor,
    v: torch.Tensor,
    block_n: int,
    *,
    rescale_acc: bool = True,
    reset_acc: bool = False,
    in_fp16: tuple = (),
) -> torch.Tensor:
    """The recurrence over key tiles of ``block_n``, in float64, as a kernel runs it.

    ``rescale_acc=False`` leaves out acc * alpha (l is still rescaled); ``reset_acc`` starts
    acc from zero at every tile (only the last tile's values reach it).  ``in_fp16`` names
    the state ("acc", "l") a kernel keeps in fp16 between key tiles: it is rounded to fp16
    after every tile's update, and overflows to inf past 65,504 as the kernel's does."""
    n = s.shape[-1]
    m = torch.full(s.shape[:-1], float("-inf"), dtype=F64)
    l = torch.zeros(s.shape[:-1], dtype=F64)
    acc = torch.zeros(s.shape[:-1] + (v.shape[-1],), dtype=F64)
    for start in range(0, n, block_n):
        tile = s[..., start : start + block_n]
        m_new = torch.maximum(m, tile.amax(dim=-1))
        alpha = torch.where(m == float("-inf"), torch.zeros_like(m), torch.exp(m - m_new))
        p = torch.exp(tile - m_new[..., None])
        l = l * alpha + p.sum(dim=-1)
        kept = torch.zeros_like(acc) if reset_acc else acc * alpha[..., None] if rescale_acc else acc
        acc = kept + p @ v[..., start : start + block_n, :]
        if "l" in in_fp16:
            l = rounded(l, torch.float16)
        if "acc" in in_fp16:
            acc = rounded(acc, torch.float16)
        m = m_new
    return acc / l[..., None]


def accumulator_not_rescaled(s: torch.Tensor, v: torch.Tensor, block_n: int) -> torch.Tensor:
    """The recurrence over key tiles of ``block_n`` with l rescaled by alpha but acc not."""
    return streamed(s, v, block_n, rescale_acc=False)


def _tiled(call: Call) -> Optional[_Inputs]:
    """The call's inputs when its block_n is a usable tile size."""
    found = _inputs(call)
    if found is None or not isinstance(found.block_n, int) or found.block_n <= 0:
        return None
    return found


def _accumulator_not_rescaled(call: Call):
    found = _tiled(call)
    if found is None or found.n <= found.block_n:
        return None
    return accumulator_not_rescaled(found.scores(), found.v, found.block_n)


def _accumulator_reset(call: Call):
    """acc zeroed at every key tile.  Full attention only: a causal kernel skips the tiles
    past its query block's diagonal, which depends on its BLOCK_M."""
    found = _tiled(call)
    if found is None or found.causal or found.n <= found.block_n:
        return None
    return streamed(found.scores(), found.v, found.block_n, reset_acc=True)


def _state_in_fp16(call: Call, name: str):
    """The kernel that keeps ``name`` ("acc" or "l") in fp16 between key tiles."""
    found = _tiled(call)
    if found is None:
        return None
    return streamed(found.scores(), found.v, found.block_n, in_fp16=(name,))


def _accumulator_in_fp16(call: Call):
    return _state_in_fp16(call, "acc")


def _denominator_in_fp16(call: Call):
    return _state_in_fp16(call, "l")


def _tail_scores_not_masked(call: Call):
    """Keys past N in the last key tile load as zeros and score 0 instead of -inf: each
    adds exp(0 - m) to l (and nothing to acc, its value being 0 too)."""
    found = _tiled(call)
    if found is None or found.causal:
        return None
    phantoms = -found.n % found.block_n
    if not phantoms:
        return None
    s = found.scores()
    m = torch.clamp_min(s.amax(dim=-1, keepdim=True), 0.0)  # the phantoms' 0 takes part in the max
    weights = torch.exp(s - m)
    return (weights @ found.v) / (weights.sum(dim=-1, keepdim=True) + phantoms * torch.exp(-m))


def _scores_in_fp16(call: Call):
    found = _inputs(call)
    if found is None or found.dtype != torch.float16:
        return None
    s = rounded(found.q @ found.k.transpose(-1, -2), torch.float16) / math.sqrt(found.d)
    return attend(found.masked(s) if found.causal else s, found.v)


def _max_from_zero(call: Call):
    """m_i started at 0, not -inf: weights exp(s - max(0, row max)) in fp32 (P maybe in 16 bits)."""
    found = _inputs(call)
    if found is None:
        return None
    s = found.scores()
    p = torch.exp((s - s.amax(dim=-1, keepdim=True).clamp_min(0.0)).to(torch.float32)).to(F64)
    l = p.sum(dim=-1, keepdim=True)
    return Variants([rounded(p, found.dtype) @ found.v / l, p @ found.v / l])  # P in 16 bits, or fp32


def _causal_from_block_start(call: Call):
    """Each row of a block of BLOCK_M rows sees the keys 0..the block's first row only."""
    found = _inputs(call)
    if found is None or not found.causal:
        return None
    s, rows = found.q @ found.k.transpose(-1, -2) / math.sqrt(found.d), torch.arange(found.n)
    limits = ((rows // bm * bm)[:, None] for bm in QUERY_BLOCKS)
    return Variants(attend(s.masked_fill(rows[None, :] > limit, float("-inf")), found.v) for limit in limits)


def _key_tile_skipped(call: Call):
    """One tile of keys left out: for every row (a loop bound one tile short), or for each
    query block, the tile before its diagonal or its last one (causal tile skipping)."""
    found = _tiled(call)
    tiles = 0 if found is None else -(-found.n // found.block_n)
    if found is None or tiles < 2 or (tiles + 8) * found.q.numel() * found.n > 4 * MAX_WORK:
        return None
    rows, bn = torch.arange(found.n), found.block_n
    key_tile = (rows // bn)[None, :]
    masks = [key_tile == t for t in range(tiles)]
    for bm in QUERY_BLOCKS if found.causal else ():
        start = rows // bm * bm  # each query row's block: its diagonal starts there
        masks += [
            key_tile == (start // bn - 1)[:, None],
            key_tile == ((start + bm).clamp_max(found.n) - 1)[:, None] // bn,
        ]
    s = found.scores()
    return Variants(attend(s.masked_fill(skipped, float("-inf")), found.v) for skipped in masks)


def _unwritten_rows(call: Call) -> Optional[tuple]:
    found, got = _inputs(call), call.result
    if found is None or not isinstance(got, torch.Tensor) or got.shape != found.q.shape:
        return None
    expected = attend(found.scores(), found.v)
    first = unwritten_suffix(got, expected)
    return None if first is None else (expected, first, found.n)


def _floor_grid(first: int, n: int) -> bool:
    return any(n % b and first == n - n % b for b in QUERY_BLOCKS)


def _grid_misses_tail(call: Call):
    found = _unwritten_rows(call)
    if found is None or not _floor_grid(found[1], found[2]):
        return None
    expected, first, _ = found
    return Partial(expected, rows_known(tuple(expected.shape), first))


def _capped_grid(call: Call):
    found = _unwritten_rows(call)
    if found is None or found[1] % 16 or _floor_grid(found[1], found[2]):
        return None
    expected, first, _ = found
    return Partial(expected, rows_known(tuple(expected.shape), first))


MISTAKES = [
    Mistake(
        id="causal-excludes-diagonal",
        function="attention",
        sentence="Your causal mask keeps keys j < i; query i must also see its own key (j <= i).",
        where="the causal mask: tl.where(offs_n[None, :] <= offs_m[:, None], s, -inf)",
        section=CAUSAL,
        why=(
            "with a strict mask row i averages keys 0..i-1 only, and row 0 sees no key at all: its "
            "maximum stays -inf and exp(-inf - (-inf)) makes it NaN"
        ),
        oracle=_causal_excludes_diagonal,
    ),
    Mistake(
        id="causal-ignored",
        function="attention",
        sentence="Your kernel ignores causal=True: every query row attends to future keys.",
        where="the key-tile loop: with causal=True, set s[i, j] = -inf where j > i",
        section=CAUSAL,
        why="causal row i must depend on keys 0..i only; without the mask it averages the whole sequence",
        oracle=_causal_ignored,
    ),
    Mistake(
        id="causal-from-block-start",
        function="attention",
        sentence="Your causal mask compares the keys with the query block's first row, not with each "
        "row's own index.",
        where="the causal mask: tl.where(offs_n[None, :] <= offs_m[:, None], s, -inf), offs_m the "
        "block's rows",
        section=CAUSAL,
        why="row i sees keys 0..i; compared with the block's first row, every row of the block sees only "
        "the keys of that first row and gets its answer",
        oracle=_causal_from_block_start,
    ),
    Mistake(
        id="accumulator-not-rescaled",
        function="attention",
        sentence="Your kernel rescales l by alpha = exp(m_old - m_new) when the maximum rises, but not acc.",
        where="the key-tile update: acc = acc * alpha[:, None] before adding p @ v",
        section=WORKED,
        why=(
            "l and acc are both sums of exp(s - m_old); after the maximum rises both must shrink by alpha, "
            "or acc mixes two scales (the worked example gives 7 instead of 6)"
        ),
        oracle=_accumulator_not_rescaled,
    ),
    Mistake(
        id="tail-scores-not-masked",
        function="attention",
        sentence="Your kernel gives the keys past N in the last key tile a score of 0 instead of -inf.",
        where="the last key tile: s = tl.where(offs_n[None, :] < N, s, -inf) after the masked loads",
        section=RAGGED,
        why=(
            "a key loaded as zeros scores q . 0 = 0, not 'absent': each phantom key adds exp(0 - m) to the "
            "denominator, so every row comes out too small whenever N is not a multiple of block_n"
        ),
        oracle=_tail_scores_not_masked,
    ),
    Mistake(
        id="scale-forgotten",
        function="attention",
        sentence="Your kernel leaves out the scale 1/sqrt(D) from the scores.",
        where="the scores: s = q @ k^T * (1 / sqrt(D))",
        section=PROBLEM,
        why="without the scale every logit is sqrt(D) times too large, so the weights are far too peaked",
        oracle=_scale_forgotten,
    ),
    Mistake(
        id="accumulator-reset-each-tile",
        function="attention",
        sentence="Your kernel starts acc from zero at every key tile: only the last tile's values reach "
        "the output.",
        where="the update: acc = acc * alpha[:, None] + tl.dot(p, v), acc set to zeros once, before the loop",
        section=RECURRENCE,
        why="the numerator forgets every earlier key tile while the denominator l keeps them all, so "
        "each output is the last tile's share of the answer",
        oracle=_accumulator_reset,
    ),
    Mistake(
        id="exp-of-base-2-scores",
        function="attention",
        sentence="Your scores carry the factor log2(e) meant for tl.exp2, but your kernel takes tl.exp "
        "of them.",
        where="the exponentials: tl.exp2(s * log2(e)) or tl.exp(s), never tl.exp(s * log2(e))",
        section=PROBLEM,
        why="exp(s * log2(e)) is exp(s) raised to the power 1.44: every weight is too peaked, as if "
        "the scale were 1.44 / sqrt(D)",
        oracle=_scaled_by(lambda d, n: math.log2(math.e) / math.sqrt(d)),
    ),
    Mistake(
        id="exp2-of-natural-scores",
        function="attention",
        sentence="Your kernel takes tl.exp2 of scores that were not multiplied by log2(e).",
        where="the scale: qk_scale = log2(e) / sqrt(D) when the exponentials are tl.exp2",
        section=PROBLEM,
        why="exp2(s) is exp(s * ln 2): every weight is too flat, as if the scale were 0.69 / sqrt(D)",
        oracle=_scaled_by(lambda d, n: math.log(2) / math.sqrt(d)),
    ),
    Mistake(
        id="scale-one-over-d",
        function="attention",
        sentence="Your kernel scales the scores by 1/D; the scale is 1/sqrt(D).",
        where="the scores: s = q @ k^T * (1 / sqrt(D))",
        section=PROBLEM,
        why="1/D is sqrt(D) times too small a scale, so the weights are far too flat",
        oracle=_scaled_by(lambda d, n: 1.0 / d),
    ),
    Mistake(
        id="scale-by-length",
        function="attention",
        sentence="Your kernel scales the scores by 1/sqrt(N), the sequence length; the scale is 1/sqrt(D), "
        "the head dimension.",
        where="the scores: s = q @ k^T * (1 / sqrt(D)), D = q.shape[-1]",
        section=PROBLEM,
        why="the scale keeps a dot product of D terms at unit size, whatever the sequence length: with N "
        "in its place the weights' sharpness changes with N",
        oracle=_scaled_by(lambda d, n: 1.0 / math.sqrt(n) if n != d else None),
    ),
    Mistake(
        id="scores-in-fp16",
        function="attention",
        sentence="Your kernel keeps the scores q . k in fp16; they must stay fp32.",
        where="the score tile: keep tl.dot(q, tl.trans(k)) in fp32 (no .to(tl.float16))",
        section=RECURRENCE,
        why="fp16 stops at 65,504: a larger q . k becomes inf, and inf - inf turns the row into NaN",
        oracle=_scores_in_fp16,
    ),
    Mistake(
        id="accumulator-in-fp16",
        function="attention",
        sentence="Your kernel keeps the running numerator acc in fp16 between key tiles; it must stay fp32.",
        where="the state: acc = tl.zeros([BLOCK_M, D], tl.float32), and p @ v accumulated in fp32",
        section=PRECISION,
        why=(
            "acc is a sum of weighted values, not yet their average: it grows by about |v| per key, "
            "and past fp16's 65,504 it is inf where the answer (acc / l) is small"
        ),
        oracle=_accumulator_in_fp16,
    ),
    Mistake(
        id="denominator-in-fp16",
        function="attention",
        sentence="Your kernel keeps the running denominator l in fp16 between key tiles; it must stay fp32.",
        where="the state: l = tl.zeros([BLOCK_M], tl.float32), updated in fp32",
        section=PRECISION,
        why=(
            "fp16 keeps 11 significant bits: once l is about 1, a tile whose weights add up to less than "
            "half of fp16's spacing there (2^-11) adds nothing, so many faint keys are lost and every "
            "output comes out too large"
        ),
        oracle=_denominator_in_fp16,
    ),
    Mistake(
        id="max-starts-at-zero",
        function="attention",
        sentence="Your kernel starts the running maximum m_i at 0 instead of -inf.",
        where="the state: m_i = tl.full([BLOCK_M], float('-inf'), tl.float32), the empty maximum",
        section=RECURRENCE,
        why="the maximum is then max(0, the row's scores): where every score of a row lies far below 0 the "
        "weights exp(s - 0) underflow (in fp32, or when P is cast to 16 bits), so the row comes out 0, or "
        "NaN from 0 / 0, instead of its average",
        oracle=_max_from_zero,
    ),
    Mistake(
        id="key-tile-skipped",
        function="attention",
        sentence="Your kernel leaves out one tile of keys that some rows need: a key loop that stops one "
        "tile short or starts one tile late.",
        where="the key loops' bounds: range(0, N, BLOCK_N) for full rows; with causal tile skipping, the "
        "tiles before the diagonal up to its start, the diagonal's from there to min(N, start + BLOCK_M)",
        section=RECURRENCE,
        why="every key a row may see must pass through the recurrence once; a missing tile's keys "
        "are absent from both the numerator and the denominator",
        oracle=_key_tile_skipped,
    ),
    Mistake(
        id="grid-misses-tail",
        function="attention",
        sentence=(
            "Your grid rounds the query blocks down (N // BLOCK_M), so the last partial block is never "
            "written."
        ),
        where="the grid: cdiv(N, BLOCK_M) query blocks",
        section=OWNERSHIP,
        why="the rows of a partial last query block belong to no program and keep whatever memory held",
        oracle=_grid_misses_tail,
    ),
    Mistake(
        id="capped-grid",
        function="attention",
        sentence=(
            "Your launch grid has fewer programs than the query blocks need, so the last rows are never "
            "written."
        ),
        where="the grid: one program per BLOCK_M query rows (per head), however long the sequence",
        section=OWNERSHIP,
        why=(
            "a capped grid covers only the first query rows; every row past the cap keeps whatever memory "
            "held"
        ),
        oracle=_capped_grid,
    ),
]
