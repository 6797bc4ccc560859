"""The error model's mistakes of a loop's running state and of a tile's place: a carried
value left without the rescale another carried value gets, a running sum the loop carries
but nothing divides by, a loop bound that stops at the start of a tile instead of its end,
a tile's first index compared where each row's own index belongs, a grouped order's last
group taken as full, partial sums of exponentials merged without their rescale.  Standard
library only."""

from __future__ import annotations

import ast
from typing import Iterator, Optional

from checks.repair.program import (  # the shared reading of a function
    Candidate,
    Context,
    _cand,
    _reads,
    _target,
    _text,
    _walk,
    name_kind,
)


def _updates(loop: ast.AST) -> list:
    """The loop body's statements that update a name from its own value: (name, statement)."""
    out = []
    for s in ast.walk(loop):
        t = _target(s)
        if t and (isinstance(s, ast.AugAssign) or (isinstance(s, ast.Assign) and _reads(s.value, t))):
            out.append((t, s))
    return out


def _rescale(name: str, s: ast.AST) -> Optional[ast.AST]:
    """``F`` of ``name = name * F + T`` (or ``name = name * F``), else None."""
    value = s.value if isinstance(s, ast.Assign) else None
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        value = value.left
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        if isinstance(value.left, ast.Name) and value.left.id == name:
            return value.right
    return None


def _added_only(name: str, s: ast.AST) -> Optional[ast.AST]:
    """``T`` of ``name = name + T`` or ``name += T``, else None."""
    if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add):
        return s.value
    value = s.value if isinstance(s, ast.Assign) else None
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        if isinstance(value.left, ast.Name) and value.left.id == name:
            return value.right
    return None


def _shapes_of(factor: ast.AST) -> list:
    """The factor as written, bare, and as a column (``alpha``, ``alpha[:, None]``)."""
    base = factor.value if isinstance(factor, ast.Subscript) else factor
    texts = [_text(factor), _text(base), f"{_text(base)}[:, None]"]
    return list(dict.fromkeys(texts))


def missing_rescale(ctx: Context) -> Iterator[Candidate]:
    """``acc = acc + p @ v`` in a loop where ``l_i = l_i * alpha + ...``: the accumulator kept
    at the old maximum's scale when the running maximum grows."""
    if not ctx.site.kernel:
        return
    for loop in (n for n in _walk(ctx) if isinstance(n, (ast.For, ast.While))):
        updates = _updates(loop)
        factors = [(t, f) for t, s in updates if (f := _rescale(t, s)) is not None]
        if not factors:  # none rescaled yet: the factor from the running maximum's own update
            factors = [("", ast.parse(f, mode="eval").body) for f in _max_rescales(ctx, loop)]
        for name, s in updates:
            term = _added_only(name, s)
            if term is None:
                continue
            for scaled, factor in factors:
                if scaled == name:
                    continue
                for shown in _shapes_of(factor):
                    says = (
                        f"`{name}` is carried over the loop without the rescale `{_text(factor)}` that "
                        f"`{scaled}` gets: when the running maximum grows, what `{name}` already holds "
                        "stays scaled to the old maximum"
                    )
                    if not scaled:
                        says = (
                            f"`{name}` keeps what it holds measured against the old maximum when the "
                            f"running maximum grows: it must be rescaled by `{_text(factor)}` before the "
                            "new terms are added"
                        )
                    text = f"{name} = {name} * {shown} + {_text(term)}"
                    yield _cand(ctx, "missing-rescale", s, text, says, 0.75)


def _max_rescales(ctx: Context, loop: ast.AST) -> list:
    """``tl.exp(m - m_new)`` for a loop that updates a running maximum ``m_new =
    tl.maximum(m, ...)`` (``tl.exp2`` where the file uses it)."""
    exp = "tl.exp2" if any(_text(n) == "tl.exp2" for n in _walk(ctx)) else "tl.exp"
    out = []
    for s in ast.walk(loop):
        if (
            isinstance(s, ast.Assign)
            and isinstance(s.value, ast.Call)
            and _text(s.value.func) == "tl.maximum"
        ):
            old = s.value.args[0] if s.value.args else None
            if isinstance(old, ast.Name) and _target(s):
                out.append(f"{exp}({old.id} - {_target(s)})")
    return out


def unused_denominator(ctx: Context) -> Iterator[Candidate]:
    """``out = acc`` after a loop that carries ``l_i``, a running sum nothing reads after it:
    the division by the denominator left out."""
    if not ctx.site.kernel:
        return
    body = ctx.fn.body
    for i, loop in enumerate(body):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        after = body[i + 1 :]
        carried = [
            t for t, s in _updates(loop) if _added_only(t, s) is not None or _rescale(t, s) is not None
        ]
        unread = [t for t in carried if not any(_reads(s, t) for s in after) and "ptr" not in t]
        for stmt in after:
            if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name)):
                continue
            if stmt.value.id not in carried:
                continue
            for denominator in unread:
                for shown in (denominator, f"{denominator}[:, None]"):
                    says = (
                        f"`{denominator}`, the running sum the loop carries, is never used after it: "
                        f"`{stmt.value.id}` is the numerator only, and must be divided by it"
                    )
                    yield _cand(
                        ctx, "unused-denominator", stmt.value, f"{stmt.value.id} / {shown}", says, 0.7
                    )


def _tile_start(node: ast.AST) -> Optional[tuple]:
    """``(P, B)`` of ``P * B`` where ``B`` names a tile size and ``P`` a tile index."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        p, b = node.left, node.right
        if isinstance(p, ast.Name) and isinstance(b, ast.Name) and name_kind(b.id) == "size":
            if name_kind(p.id) not in ("size", "stride"):
                return p.id, b.id
    return None


def _bounds_a_loop(node: ast.AST, ctx: Context) -> bool:
    """``node`` is in a ``range(...)`` or in the value of a name a ``range(...)`` reads."""
    loops = [n for n in _walk(ctx) if isinstance(n, ast.For)]
    for parent in ctx.up(node):
        if any(parent is loop.iter for loop in loops):
            return True
        if isinstance(parent, ast.Assign):
            t = _target(parent)
            return bool(t) and any(_reads(loop.iter, t) for loop in loops)
    return False


def tile_end(ctx: Context) -> Iterator[Candidate]:
    """A loop bound ``start_m * BLOCK_M`` (where tile ``start_m`` starts) meant to be its end,
    ``(start_m + 1) * BLOCK_M``: the loop stops one tile early."""
    if not ctx.site.kernel:
        return
    for node in _walk(ctx):
        found = _tile_start(node)
        if found is None or not _bounds_a_loop(node, ctx):
            continue
        p, b = found
        says = (
            f"the loop stops at `{p} * {b}`, where tile `{p}` starts, so that tile's own elements "
            f"never reach it; tile `{p}` ends at `({p} + 1) * {b}`"
        )
        yield _cand(ctx, "tile-end", node, f"({p} + 1) * {b}", says, 0.7)


def tile_start_for_rows(ctx: Context) -> Iterator[Candidate]:
    """``offs_n[None, :] <= start_m * BLOCK_M`` where each row's own index belongs
    (``offs_m[:, None]``, defined as ``start_m * BLOCK_M + tl.arange(...)``)."""
    if not ctx.site.kernel:
        return
    offsets = {}
    for s in _walk(ctx):
        t = _target(s)
        if (
            t
            and isinstance(s, ast.Assign)
            and isinstance(s.value, ast.BinOp)
            and isinstance(s.value.op, ast.Add)
        ):
            start = _tile_start(s.value.left)
            if start is not None:
                offsets[start] = t
    for node in _walk(ctx):
        if not isinstance(node, ast.Compare) or len(node.comparators) != 1:
            continue
        for side in (node.left, node.comparators[0]):
            start = _tile_start(side)
            if start not in offsets:
                continue
            own = offsets[start]
            for shown in (f"{own}[:, None]", f"{own}[None, :]", own):
                says = (
                    f"compares with `{_text(side)}`, the first index of the tile, where each one's own "
                    f"index `{own}` belongs: every row or column of the tile is tested as its first one"
                )
                yield _cand(ctx, "tile-start", side, shown, says, 0.7)


def last_group_size(ctx: Context) -> Iterator[Candidate]:
    """``group_size_m = GROUP_M`` in a grouped launch order, where the last group holds only
    the rows left: ``min(num_pid_m - first_pid_m, GROUP_M)``."""
    names = set(ctx.names)
    firsts = {}
    for s in _walk(ctx):
        t = _target(s)
        if t and isinstance(s, ast.Assign) and t.startswith(("first", "start")):
            firsts[t] = s.value
    counts = [n for n in ctx.names if n.startswith("num_") and "group" not in n]
    minimum = "tl.minimum" if ctx.site.kernel else "min"
    for s in _walk(ctx):
        if not (
            isinstance(s, ast.Assign) and isinstance(s.value, ast.Name) and "group" in _target(s).lower()
        ):
            continue
        size = s.value.id
        for first, value in firsts.items():
            if not _reads(value, size) or first not in names:
                continue
            for count in counts:
                says = (
                    f"`{_target(s)}` is `{size}` for every group, but the last group holds only the "
                    f"`{count} - {first}` rows left: its extra programs land past the end, and tiles "
                    "of that group are never computed"
                )
                yield _cand(ctx, "last-group", s.value, f"{minimum}({count} - {first}, {size})", says, 0.6)


def merge_rescale(ctx: Context) -> Iterator[Candidate]:
    """``tl.sum(l_t)`` beside ``m = tl.max(m_t)``: partial sums of exponentials, each measured
    against its own chunk's maximum, added without rescaling them to the overall one."""
    if not ctx.site.kernel:
        return
    maxima = [
        (_target(s), s.value.args[0])
        for s in _walk(ctx)
        if isinstance(s, ast.Assign)
        and isinstance(s.value, ast.Call)
        and _text(s.value.func) == "tl.max"
        and s.value.args
        and isinstance(s.value.args[0], ast.Name)
    ]
    exp = "tl.exp2" if any(_text(n) == "tl.exp2" for n in _walk(ctx)) else "tl.exp"
    for node in _walk(ctx):
        if not (isinstance(node, ast.Call) and _text(node.func) == "tl.sum" and node.args):
            continue
        sums = node.args[0]
        if not isinstance(sums, ast.Name):
            continue
        for overall, per_chunk in maxima:
            if per_chunk.id == sums.id or not overall:
                continue
            says = (
                f"adds the partial sums `{sums.id}` as they are, but each was measured against its own "
                f"maximum in `{per_chunk.id}`: rescaled to the overall maximum `{overall}` first, "
                f"`{sums.id} * {exp}({per_chunk.id} - {overall})`, they add up to the row's sum"
            )
            yield _cand(
                ctx, "merge-rescale", sums, f"{sums.id} * {exp}({per_chunk.id} - {overall})", says, 0.7
            )
