"""The error model's mistakes of control and arithmetic: bounds, comparisons, loops that
stop early or overwrite, pointers never advanced, divisions, clamps, extra or missing operands,
steps in the wrong order, launch grids.  Standard library only."""

from __future__ import annotations

import ast
import copy
from typing import Iterator, Optional

from checks.repair.program import (  # the shared reading of a function
    Candidate,
    Context,
    Edit,
    _body,
    _call_name,
    _cand,
    _enclosing_call,
    _in_mask,
    _in_range,
    _keyword_of,
    _loop_sentence,
    _loop_word,
    _loops,
    _neutral,
    _paren,
    _reads,
    _statement,
    _subtracted,
    _Swap,
    _target,
    _text,
    _walk,
    in_grid,
    sizes_a_tile,
)

BOUNDARY = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}
SIGN = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def _dimension_of(node: ast.AST, ctx: Context) -> str:
    """'the stride', 'the size' when ``node`` picks a dimension: ``x.stride(0)``,
    ``x.shape[1]``, ``x.size(0)``; else ''."""
    parent = ctx.parents.get(node)
    if (
        isinstance(parent, ast.Subscript)
        and isinstance(parent.value, ast.Attribute)
        and parent.value.attr == "shape"
    ):
        return "the size"
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr in ("stride", "size")
    ):
        return f"the {parent.func.attr}"
    return ""


def boundary(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if not isinstance(node, ast.Compare):
            continue
        for i, op in enumerate(node.ops):
            if type(op) not in BOUNDARY:
                continue
            ops = list(node.ops)
            ops[i] = BOUNDARY[type(op)]()
            new = copy.copy(node)
            new.ops = ops
            had, fix = SIGN[type(op)], SIGN[type(ops[i])]
            shown = f"`{_text(node)}`"
            if had in ("==", "!="):
                says = f"the test {shown} is inverted: it holds exactly where `{fix}` would not"
            elif len(had) == 2:
                says = (
                    f"{shown} also holds where both sides are equal, one index past the bound; "
                    f"`{fix}` stops before it"
                )
            else:
                says = f"{shown} leaves out the index where both sides are equal, which `{fix}` keeps"
            where = "mask" if _in_mask(node, ctx) else ""
            if where and len(had) == 2:
                says = (
                    f"the mask {shown} lets one element past the end through (both sides equal); "
                    f"`{fix}` keeps the lanes inside"
                )
            if _causal(node):
                says = f"the causal test {shown} " + (
                    "leaves out the diagonal: a query no longer sees its own key"
                    if had in ("<", ">")
                    else "is off by one at the diagonal"
                )
            yield _cand(ctx, "boundary", node, _paren(new), says, 0.9 if where else 0.75)


def _causal(node: ast.Compare) -> bool:
    names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    return len(names) == 2 and all(n.startswith("offs") for n in names)


ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div}
VERB = {
    ast.Add: "adds",
    ast.Sub: "subtracts",
    ast.Mult: "multiplies by",
    ast.Div: "divides by",
    ast.FloorDiv: "floor-divides by",
}


def arithmetic(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in ARITH:
            new = copy.copy(node)
            new.op = ARITH[type(node.op)]()
            right = node.right if isinstance(node, ast.BinOp) else node.value
            says = (
                f"`{_text(node)}` {VERB[type(node.op)]} `{_text(right)}` where the formula "
                f"{VERB[type(new.op)]} it"
            )
            text = _paren(new) if isinstance(node, ast.BinOp) else _text(new)
            yield _cand(ctx, "arithmetic", node, text, says, 0.55)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Sub, ast.Div)):
            flipped = ast.BinOp(left=node.right, op=node.op, right=node.left)
            what = (
                "the difference's sign is flipped"
                if isinstance(node.op, ast.Sub)
                else "the ratio is inverted"
            )
            says = f"`{_text(node)}` takes its operands the other way round: {what}"
            says += f" (`{_text(flipped)}` is meant)"
            yield _cand(ctx, "arithmetic", node, _paren(flipped), says, 0.65)


def _int_values(v: int) -> list:
    return [1] if v == 0 else ([0, 2] if v == 1 else [v + 1, v - 1])


def constant(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
            continue
        if isinstance(node.value, int):
            kw = _keyword_of(node, ctx)
            call = _enclosing_call(node, ctx)
            loop = _in_range(node, ctx)
            for new in _int_values(node.value):
                prior = 0.5
                if kw == "axis":
                    says = (
                        f"reduces along axis {node.value} where the reduction runs along axis {new} "
                        f"({'along each row' if new == 1 else 'down each column'})"
                    )
                    prior = 0.85
                elif _dimension_of(node, ctx):
                    what = _dimension_of(node, ctx)
                    says = (
                        f"reads {what} of dimension {node.value} where dimension {new} is meant, so "
                        f"rows and columns are taken for each other"
                    )
                    prior = 0.8
                elif call == "tl.program_id":
                    says = (
                        f"reads `tl.program_id({node.value})`, the program's number along grid axis "
                        f"{node.value}, where its position along axis {new} is meant"
                    )
                    prior = 0.8
                elif loop is not None:
                    if _neutral(node, new, ctx):
                        continue  # ``- 0``: the extra operand's candidate says it better
                    args = loop.iter.args if isinstance(loop.iter, ast.Call) else []
                    if len(args) >= 2 and args[0] is node:
                        says = f"{_loop_word(loop)} starts at {node.value} where it starts at {new}"
                    else:
                        says = _loop_sentence(loop, fewer=(new > node.value) != _subtracted(node, ctx))
                    prior = 0.8
                elif kw:
                    says = f"passes `{kw}={node.value}` where `{kw}={new}` is meant"
                elif call:
                    says = f"gives `{call.lstrip('.')}(...)` {node.value} where {new} is meant"
                else:
                    says = f"the constant {node.value} should be {new}"
                yield _cand(ctx, "constant", node, repr(new), says, prior)
        elif isinstance(node.value, float):
            for new in (0.0, 1.0, 0.5, 2.0):
                if new != node.value:
                    yield _cand(
                        ctx, "constant", node, repr(new), f"the constant {node.value} should be {new}", 0.3
                    )


def overwrite(ctx: Context) -> Iterator[Candidate]:
    for loop in _loops(ctx):
        before = {_target(s) for s in _body(ctx.fn) if s.lineno < loop.lineno}  # bound before the loop
        for stmt in loop.body:
            t = _target(stmt)
            if not t or not isinstance(stmt, ast.Assign) or t not in before or _reads(stmt.value, t):
                continue
            value = stmt.value
            says = (
                f"overwrites `{t}` on every pass of "
                f"{_loop_word(loop) if isinstance(loop, ast.For) else 'the loop'} "
                f"instead of adding to it, so only the last pass's contribution is kept"
            )
            if _call_name(value) == "tl.dot" and len(value.args) == 2 and not value.keywords:  # type: ignore[attr-defined]
                new = copy.deepcopy(value)
                new.args.append(ast.Name(id=t, ctx=ast.Load()))  # type: ignore[attr-defined]
                yield _cand(ctx, "overwrite", value, _text(new), says, 1.1)
            yield _cand(ctx, "overwrite", stmt, f"{t} += {_text(value)}", says, 1.05)


def _advanced(loop: ast.AST) -> dict:
    """{name: the step's expression} for every ``name += step`` in the loop's body."""
    return {
        s.target.id: s.value
        for s in ast.walk(loop)
        if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add) and isinstance(s.target, ast.Name)
    }


def _defined_by(ctx: Context, name: str) -> Optional[ast.AST]:
    for s in _walk(ctx):
        if isinstance(s, ast.Assign) and _target(s) == name:
            return s.value
    return None


def _strides_in(definition: Optional[ast.AST]) -> list:
    """The strides of an address's definition: the names called stride, and the names that
    multiply an offsets term (``ks[:, None] * s_bk``: a learner's own short names)."""
    if definition is None:
        return []
    out = [n.id for n in ast.walk(definition) if isinstance(n, ast.Name) and "stride" in n.id.lower()]
    for n in ast.walk(definition):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            for side, other in ((n.left, n.right), (n.right, n.left)):
                if isinstance(side, ast.Name) and isinstance(other, ast.Subscript):
                    out.append(side.id)
    return list(dict.fromkeys(out))


def pointer_advance(ctx: Context) -> Iterator[Candidate]:
    """A name the loop loads through (``tl.load(p, ...)``) and never advances, while it
    advances a sibling: add the sibling's step with the strides of ``p``'s definition."""
    if not ctx.site.kernel:
        return
    for loop in _loops(ctx):
        steps = _advanced(loop)
        if not steps:
            continue
        loaded = [
            n.args[0].id
            for n in ast.walk(loop)
            if isinstance(n, ast.Call)
            and _call_name(n) == "tl.load"
            and n.args
            and isinstance(n.args[0], ast.Name)
        ]
        last = max((s for s in loop.body if isinstance(s, ast.AugAssign)), key=lambda s: s.lineno)
        indent = " " * last.col_offset
        for p in dict.fromkeys(loaded):
            if p in steps:
                continue
            definition = _defined_by(ctx, p)
            strides = _strides_in(definition) if definition else []
            for sibling, step in steps.items():
                known = set(_strides_in(_defined_by(ctx, sibling)))
                used = [
                    n.id
                    for n in ast.walk(step)
                    if isinstance(n, ast.Name) and ("stride" in n.id.lower() or n.id in known)
                ]
                options = (
                    [step]
                    if not used
                    else [_Swap(used[0], s).visit(copy.deepcopy(step)) for s in dict.fromkeys(strides)]
                )
                for option in options:
                    text = f"{_text(last)}\n{indent}{p} += {_text(option)}"
                    says = (
                        f"the loop at line {loop.lineno} never advances `{p}` (it advances `{sibling}`), "
                        f"so every pass loads the same first tile through `{p}`"
                    )
                    at = (last.end_lineno or last.lineno) + 1  # where the missing step goes
                    yield Candidate("pointer-advance", (Edit(last, text),), at, says, 1.1, ctx.fn.name)


def floor_division(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
            says = (
                f"`{_text(node)}` rounds down, so a last, partial "
                f"{'tile' if 'BLOCK' in _text(node.right).upper() else 'block'} "
                f"is never counted; a ceiling division counts it"
            )
            yield _cand(
                ctx,
                "floor-division",
                node,
                f"{ctx.ceil_div}({_text(node.left)}, {_text(node.right)})",
                says,
                0.8,
            )
        elif _call_name(node) in ("tl.cdiv", "triton.cdiv", "cdiv") and len(node.args) == 2:  # type: ignore[attr-defined]
            a, b = node.args  # type: ignore[attr-defined]
            says = f"`{_text(node)}` rounds up where the count of whole blocks is meant"
            yield _cand(ctx, "floor-division", node, f"({_text(a)} // {_text(b)})", says, 0.4)


def clamp(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        name = _call_name(node)
        if name in ("min", "max", "tl.minimum", "tl.maximum") and len(node.args) == 2:  # type: ignore[attr-defined]
            for keep, drop in ((0, 1), (1, 0)):
                kept, dropped = node.args[keep], node.args[drop]  # type: ignore[attr-defined]
                if name in ("tl.maximum",) and isinstance(dropped, ast.Constant) and dropped.value == 0:
                    says = f"applies `{_text(node)}` (a ReLU) where the formula has none"
                elif name in ("min", "tl.minimum") and in_grid(node, ctx):
                    says = (
                        f"caps the grid at `{_text(dropped)}` programs: the work past the first "
                        f"`{_text(dropped)}` programs' share is never computed"
                    )
                elif name in ("min", "tl.minimum") and sizes_a_tile(node, ctx):
                    continue  # a tile size without its cap (or fixed at it) hides a fault, never fixes it
                elif name in ("min", "tl.minimum"):
                    says = (
                        f"caps `{_text(kept)}` at `{_text(dropped)}` with {name}: past that, the rest "
                        "is never reached"
                    )
                else:
                    says = (
                        f"raises `{_text(kept)}` to at least `{_text(dropped)}` with {name}, which "
                        "the formula does not do"
                    )
                prior = 0.8 if in_grid(node, ctx) else (0.6 if isinstance(dropped, ast.Constant) else 0.4)
                yield _cand(ctx, "clamp", node, _paren(kept), says, prior)


def extra_operand(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if not isinstance(node, ast.BinOp) or not isinstance(
            node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.BitAnd, ast.BitOr)
        ):
            continue
        word = {
            ast.Add: "term",
            ast.Sub: "term",
            ast.Mult: "factor",
            ast.Div: "divisor",
            ast.FloorDiv: "divisor",
            ast.BitAnd: "test",
            ast.BitOr: "test",
        }[type(node.op)]
        loop = _in_range(node, ctx)
        if loop is not None and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(loop, ast.For):
            says = _loop_sentence(loop, fewer=isinstance(node.op, ast.Sub)) + f" (`{_text(node)}`)"
            yield _cand(ctx, "extra-operand", node, _paren(node.left), says, 1.0)
            continue
        yield _cand(
            ctx,
            "extra-operand",
            node,
            _paren(node.left),
            f"`{_text(node)}` has the extra {word} `{_text(node.right)}`: it is applied where the "
            "formula has none",
            0.5,
        )
        if isinstance(node.op, (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr)):
            yield _cand(
                ctx,
                "extra-operand",
                node,
                _paren(node.right),
                f"`{_text(node)}` has the extra {word} `{_text(node.left)}`: it is applied where "
                "the formula has none",
                0.45,
            )


def extra_condition(ctx: Context) -> Iterator[Candidate]:
    """A test with a condition too many: ``M == 0 or N == 0 or K == 0`` for ``M == 0 or N == 0``."""
    for node in _walk(ctx):
        if isinstance(node, ast.BoolOp) and len(node.values) >= 2:
            word = "or" if isinstance(node.op, ast.Or) else "and"
            for i, extra in enumerate(node.values):
                kept = node.values[:i] + node.values[i + 1 :]
                text = _text(kept[0]) if len(kept) == 1 else _text(ast.BoolOp(op=node.op, values=kept))
                says = (
                    f"`{_text(node)}` has the extra condition `{word} {_text(extra)}`, which the "
                    "contract does not"
                )
                yield _cand(ctx, "extra-operand", node, f"({text})", says, 0.6)


def _addressy(stmt: Optional[ast.AST]) -> bool:
    """A statement that computes an address or an offset: its target's name says so, or
    it adds to a pointer."""
    t = _target(stmt).lower()
    if any(w in t for w in ("ptr", "addr", "off", "idx", "base", "start")):
        return True
    value = getattr(stmt, "value", None)
    return value is not None and any(
        isinstance(n, ast.Name) and ("ptr" in n.id.lower() or n.id in ("Q", "K", "V", "Out"))
        for n in ast.walk(value)
    )


def _factors(ctx: Context) -> list:
    """Names that scale another: strides, sizes, scales."""
    return [
        n
        for n in ctx.names
        if "stride" in n.lower()
        or "scale" in n.lower()
        or n.lower().startswith(("n_", "num_"))
        or (len(n) == 1 and n.isupper())
        or n.startswith("BLOCK")
    ]


def missing_factor(ctx: Context) -> Iterator[Candidate]:
    """A term of an address or a product that lacks its factor: ``row`` for ``row * n_cols``,
    ``tl.dot(q, k)`` for ``tl.dot(q, k) * scale``."""
    factors = _factors(ctx)
    for node in _walk(ctx):
        if not isinstance(node, ast.BinOp) or not isinstance(node.op, (ast.Add, ast.Sub)):
            continue
        stmt = _statement(node, ctx)
        if not _addressy(stmt):
            continue
        for operand in (node.left, node.right):
            if not isinstance(operand, (ast.Name, ast.Subscript)) or isinstance(operand, ast.BinOp):
                continue
            for f in factors:
                if _reads(operand, f):
                    continue
                says = (
                    f"`{_text(operand)}` is missing its factor `{f}`: it counts in single elements where "
                    f"each step is `{f}` elements apart"
                )
                yield _cand(ctx, "missing-factor", operand, f"{_text(operand)} * {f}", says, 0.55)
    for assign in _walk(ctx):
        if isinstance(assign, ast.Assign) and _call_name(assign.value) == "tl.dot":
            for f in (n for n in factors if "scale" in n.lower()):
                says = f"`{_target(assign)}` is never multiplied by `{f}`: the scale is missing"
                yield _cand(ctx, "missing-factor", assign.value, f"{_text(assign.value)} * {f}", says, 0.6)
