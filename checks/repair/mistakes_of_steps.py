"""The error model's mistakes of steps: two steps in the other order, a term outside the call
it belongs in, a statement a step too many, a launch grid's axes exchanged, a square root left
out of a scale, an exponential of values with no maximum subtracted, a constant factor without
the parentheses that make it scale a whole sum.  Standard library only."""

from __future__ import annotations

import ast
import copy
from typing import Iterator, Optional

from checks.repair.program import (  # the shared reading of a function
    Candidate,
    Context,
    Edit,
    _blocks,
    _call_name,
    _cand,
    _paren,
    _reads,
    _target,
    _text,
    _walk,
)


def order(ctx: Context) -> Iterator[Candidate]:
    """Two adjacent steps in the other order: ``a = f(x); b = g(a)`` as ``a = g(x); b = f(a)``
    (relu before the bias), or two statements exchanged where the second reads the first."""
    for block in _blocks(ctx.fn):
        for first, second in zip(block, block[1:]):
            a, b = _target(first), _target(second)
            if not a or not b or not isinstance(first, ast.Assign) or not isinstance(second, ast.Assign):
                continue
            if a != b and _reads(second.value, a):
                x = _carried(first.value)
                if x and _carried(second.value) == a:
                    g_of_x = _Rename({a: x}).visit(copy.deepcopy(second.value))
                    f_of_a = _Rename({x: a}).visit(copy.deepcopy(first.value))
                    indent = " " * first.col_offset
                    says = (
                        f"applies `{_text(first.value)}` before `{_text(second.value)}`; the formula "
                        f"takes the two steps the other way round"
                    )
                    if any(_call_name(n) == "tl.maximum" for n in ast.walk(first.value)):
                        says = (
                            "applies the ReLU before adding the bias; the bias goes in first, then the ReLU"
                        )
                    edit = Edit(first, f"{a} = {_text(g_of_x)}\n{indent}{b} = {_text(f_of_a)}", last=second)
                    yield Candidate("order", (edit,), first.lineno, says, 0.65, ctx.fn.name)
            elif a == b and _reads(second.value, a) and _reads(first.value, a):  # x = f(x); x = g(x)
                indent = " " * first.col_offset
                edit = Edit(first, f"{_text(second)}\n{indent}{_text(first)}", last=second)
                says = (
                    f"applies `{_text(first.value)}` before `{_text(second.value)}`; the formula "
                    "takes them the other way round"
                )
                yield Candidate("order", (edit,), first.lineno, says, 0.55, ctx.fn.name)


def inside_out(ctx: Context) -> Iterator[Candidate]:
    """A term added outside a call that belongs inside it, or the reverse:
    ``tl.maximum(acc, 0.0) + bias`` for ``tl.maximum(acc + bias, 0.0)``."""
    for node in _walk(ctx):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.left, ast.Call)
            and node.left.args
            and _call_name(node.left).startswith(("tl.", "."))
        ):
            call = copy.deepcopy(node.left)
            call.args[0] = ast.BinOp(left=call.args[0], op=node.op, right=node.right)
            says = (
                f"applies `{_call_name(node.left)}` before the `{_text(node.right)}` term; the formula "
                f"puts the term inside: `{_text(call)}`"
            )
            if _call_name(node.left) == "tl.maximum":
                says = (
                    f"applies the ReLU before adding `{_text(node.right)}`; it goes in first, then the ReLU"
                )
            yield _cand(ctx, "order", node, _text(call), says, 0.75)
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.BinOp):
            inner = node.args[0]
            call = copy.deepcopy(node)
            call.args[0] = inner.left
            moved = ast.BinOp(left=call, op=inner.op, right=inner.right)
            says = (
                f"puts the `{_text(inner.right)}` term inside `{_call_name(node)}`; the formula "
                "applies it after"
            )
            yield _cand(ctx, "order", node, _paren(moved), says, 0.55)


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping: dict):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(id=self.mapping.get(node.id, node.id), ctx=node.ctx)


def _carried(value: ast.AST) -> Optional[str]:
    if isinstance(value, ast.BinOp):
        target: Optional[ast.AST] = value.left
    elif isinstance(value, ast.Call) and value.args:
        target = value.args[0]
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def extra_step(ctx: Context) -> Iterator[Candidate]:
    if not ctx.site.kernel:
        return
    for stmt in _walk(ctx):
        t = _target(stmt)
        if t and (
            isinstance(stmt, ast.AugAssign) or (isinstance(stmt, ast.Assign) and _reads(stmt.value, t))
        ):
            says = (
                f"`{_text(stmt)}` is a step too many: it changes `{t}` where the formula leaves it as it is"
            )
            yield _cand(ctx, "extra-step", stmt, "pass", says, 0.35)


def grid_axes(ctx: Context) -> Iterator[Candidate]:
    if ctx.site.kernel:
        return
    for node in _walk(ctx):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            grid = node.func.slice
            if isinstance(grid, ast.Tuple) and len(grid.elts) == 2:
                a, b = grid.elts
                says = (
                    f"the grid puts `{_text(a)}` programs along axis 0 and `{_text(b)}` along axis 1, "
                    "the other way round from how the kernel reads tl.program_id"
                )
                yield _cand(ctx, "grid-axes", grid, f"({_text(b)}, {_text(a)})", says, 0.6)


SQUARE_ROOTS = ("math.sqrt", "tl.sqrt", "torch.sqrt", "np.sqrt", "numpy.sqrt")


def square_root(ctx: Context) -> Iterator[Candidate]:
    """A square root left out of a divisor (``1.0 / d`` for ``1.0 / math.sqrt(d)``, in a
    wrapper, where a scale is computed) or one taken where the value itself is meant."""
    has_math = "math" in ctx.modules
    for node in _walk(ctx):
        name = _call_name(node)
        if name in SQUARE_ROOTS and len(node.args) == 1:  # type: ignore[attr-defined]
            arg = node.args[0]  # type: ignore[attr-defined]
            yield _cand(
                ctx,
                "square-root",
                node,
                _paren(arg),
                f"takes the square root of `{_text(arg)}` where `{_text(arg)}` itself is meant",
                0.35,
            )
        elif (
            not ctx.site.kernel
            and isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and _call_name(node.right) not in SQUARE_ROOTS
            and not isinstance(node.right, ast.Constant)
        ):
            d = _text(node.right)
            root = f"math.sqrt({d})" if has_math else f"{_paren(node.right)} ** 0.5"
            yield _cand(
                ctx,
                "square-root",
                node,
                f"({_paren(node.left)} / {root})",
                f"divides by `{d}` where the formula divides by its square root, sqrt({d})",
                0.6 if _is_one(node.left) else 0.35,  # a reciprocal is how a scale is written
            )


def _is_one(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in (1, 1.0)


EXPS = ("tl.exp", "tl.exp2")


def max_not_subtracted(ctx: Context) -> Iterator[Candidate]:
    """``tl.exp(x)`` of the raw values where softmax takes ``tl.exp(x - max)``: the maximum a
    line computes (``row_max = tl.max(x, ...)``) subtracted, or the row's maximum taken
    in place, along a row (1D) or along axis 1 of a tile (2D)."""
    maxima = {
        _target(node): node.value
        for node in _walk(ctx)
        if isinstance(node, ast.Assign) and _call_name(node.value) == "tl.max" and _target(node)
    }
    for node in _walk(ctx):
        if not (
            isinstance(node, ast.Call)
            and _call_name(node) in EXPS
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Name)
        ):
            continue
        x, fn = node.args[0].id, _call_name(node)
        of_x = [m for m, value in maxima.items() if value.args and _text(value.args[0]) == x]  # type: ignore[attr-defined]
        known = of_x + [m for m in _maximum_like(ctx) if m not in of_x]  # a maximum loaded, not computed
        shifts = [m for name in known for m in (name, f"{name}[:, None]")] or [
            f"tl.max({x}, axis=0)",
            f"tl.max({x}, axis=1)[:, None]",
        ]
        for shift in shifts:
            if known:
                says = (
                    f"`{fn}({x})` is not measured against the maximum `{shift.split('[')[0]}` the kernel "
                    f"has: what is built from it is off by a factor {fn}({shift.split('[')[0]}) from "
                    f"what is built with `{x} - {shift}` (and past about 88 it overflows float32)"
                )
            else:
                says = (
                    f"`{fn}({x})` takes the raw values: past about 88 it overflows float32 (inf / inf is "
                    f"NaN) and far below 0 every term underflows to 0; `{fn}({x} - {shift})` keeps every "
                    "term at most 1"
                )
            yield _cand(ctx, "max-not-subtracted", node, f"{fn}({x} - {shift})", says, 0.7)


def _maximum_like(ctx: Context) -> list:
    """Names the function assigns that are spelled as a maximum (``m``, ``m_i``, ``row_max``)."""
    names = [_target(n) for n in _walk(ctx) if isinstance(n, ast.Assign) and _target(n)]
    return list(dict.fromkeys(n for n in names if n in ("m", "m_i", "mx") or "max" in n.lower()))


def precedence(ctx: Context) -> Iterator[Candidate]:
    """``row * num_tiles + tile * 2`` where ``(row * num_tiles + tile) * 2`` is meant: a
    constant factor that binds to the last term only, for want of parentheses."""
    for node in _walk(ctx):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
            continue
        right = node.right
        if not (
            isinstance(right, ast.BinOp)
            and isinstance(right.op, ast.Mult)
            and isinstance(right.right, ast.Constant)
            and isinstance(right.right.value, int)
            and right.right.value > 1
        ):
            continue
        terms = _sum_terms(node.left)
        for j in range(len(terms)):  # the parentheses may open at any term (after a pointer, say)
            whole = " + ".join([*terms[j:], _text(right.left)])
            head = " + ".join(terms[:j])
            says = (
                f"`* {_text(right.right)}` scales only `{_text(right.left)}` where the whole `{whole}` "
                "is meant: without parentheses the product binds first"
            )
            text = f"({whole}) * {_text(right.right)}"
            yield _cand(ctx, "precedence", node, f"{head} + {text}" if head else text, says, 0.5)


def _sum_terms(node: ast.AST) -> list:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _sum_terms(node.left) + _sum_terms(node.right)
    return [_text(node)]
