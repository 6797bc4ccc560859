"""The mutation operators: each finds the places of one function's AST it can change and
says, for each, which span of the source to replace and with what text.

A mutation is a splice of the original source (its line numbers and comments stay), not
a re-printed module: ``ast.unparse`` writes only the replaced node.  Standard library only.

    operator          what it changes
    arith             + <-> -, * <-> / (also in ``+=``)
    compare           < <-> <=, > <-> >=, == <-> !=
    constant          an integer n -> n + 1, n - 1; 0 <-> 1; a float -> 0.0 (0.0 -> 1.0)
    mask-drop         a tl.load / tl.store without its mask (and padding)
    padding           a load's ``other=`` -> 0.0 (0.0 -> -inf)
    stride-swap       the first two different stride names of an expression or a launch swapped
    grid-halve        one axis of a launch grid halved
    grid-cap          one axis of a launch grid capped at 64 programs
    epilogue-order    ``a = f(x); b = g(a)`` -> ``a = g(x); b = f(a)`` (kernels)
    dtype             tl.float32 -> tl.float16, torch.float32 -> torch.float16
    drop-factor       ``x * y`` -> ``x``, ``x / y`` -> ``x`` (kernels: a dropped rescale or division)
"""

from __future__ import annotations

import ast
import copy
from typing import Callable, Iterator, TypeGuard

from checks.repair.program import Edit, Site

GRID_CAP = 64


Operator = Callable[[Site], Iterator[Edit]]


def _replaced(node: ast.AST, **changes) -> ast.AST:
    """A copy of ``node`` with fields changed (the original tree stays as parsed)."""
    new = copy.copy(node)
    for name, value in changes.items():
        setattr(new, name, value)
    return new


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def _parenthesized(node: ast.AST) -> str:
    """A replacement for an expression node: parenthesized, so it binds as the node did."""
    return f"({_text(node)})"


def _is_tl_call(node: ast.AST, names: tuple | None) -> TypeGuard[ast.Call]:
    """``tl.<name>(...)`` for a name in ``names`` (None: any)."""
    f = node.func if isinstance(node, ast.Call) else None
    return (
        isinstance(f, ast.Attribute)
        and (names is None or f.attr in names)
        and isinstance(f.value, ast.Name)
        and f.value.id == "tl"
    )


def _body_nodes(site: Site) -> Iterator[ast.AST]:
    """Every node of the function's body (not its decorators, arguments or docstring), in
    a fixed order."""
    body = site.fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    for stmt in body:
        yield from ast.walk(stmt)


ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}


def arith(site: Site) -> Iterator[Edit]:
    for node in _body_nodes(site):
        if isinstance(node, ast.BinOp) and type(node.op) in ARITH:
            yield Edit(node, _parenthesized(_replaced(node, op=ARITH[type(node.op)]())))
        elif isinstance(node, ast.AugAssign) and type(node.op) in ARITH:
            yield Edit(node, _text(_replaced(node, op=ARITH[type(node.op)]())))


COMPARE = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}


def compare(site: Site) -> Iterator[Edit]:
    for node in _body_nodes(site):
        if not isinstance(node, ast.Compare):
            continue
        for i, op in enumerate(node.ops):
            if type(op) in COMPARE:
                ops = list(node.ops)
                ops[i] = COMPARE[type(op)]()
                yield Edit(node, _parenthesized(_replaced(node, ops=ops)))


def _constant_values(value) -> list:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return []
    if isinstance(value, int):
        return [1] if value == 0 else ([0, 2] if value == 1 else [value + 1, value - 1])
    if value == 0.0:
        return [1.0]
    return [0.0, value + 1.0] if value == 1.0 else [0.0]


def constant(site: Site) -> Iterator[Edit]:
    for node in _body_nodes(site):
        if isinstance(node, ast.Constant):
            for new in _constant_values(node.value):
                yield Edit(node, repr(new))


def mask_drop(site: Site) -> Iterator[Edit]:
    if not site.kernel:
        return
    for node in _body_nodes(site):
        if _is_tl_call(node, ("load", "store")) and any(k.arg == "mask" for k in node.keywords):
            kept = [k for k in node.keywords if k.arg not in ("mask", "other")]
            dropped = ", ".join(_text(k) for k in node.keywords if k.arg in ("mask", "other"))
            name = _text(node.func)
            yield Edit(
                node, _text(_replaced(node, keywords=kept)), shown=(f"{name}(..., {dropped})", f"{name}(...)")
            )


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


def padding(site: Site) -> Iterator[Edit]:
    if not site.kernel:
        return
    for node in _body_nodes(site):
        if not _is_tl_call(node, ("load",)):
            continue
        for k in node.keywords:
            if k.arg == "other":
                yield Edit(k.value, '-float("inf")' if _is_zero(k.value) else "0.0")


def _stride_names(node: ast.AST) -> list:
    """The distinct stride names an expression reads, in order of appearance."""
    seen: list = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and "stride" in n.id.lower() and n.id not in seen:
            seen.append(n.id)
    return seen


class _Rename(ast.NodeTransformer):
    def __init__(self, swap: dict):
        self.swap = swap

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(id=self.swap.get(node.id, node.id), ctx=node.ctx)


def _swapped(node: ast.AST, a: str, b: str) -> ast.AST:
    return _Rename({a: b, b: a}).visit(copy.deepcopy(node))


def stride_swap(site: Site) -> Iterator[Edit]:
    """In a kernel: an address expression (an outermost + or a call's argument) reading two
    strides. In a wrapper: a launch's arguments, two stride names swapped."""
    for node in _body_nodes(site):
        if site.kernel and isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return)):
            value = node.value
            if value is None:
                continue
            names = _stride_names(value)
            if len(names) >= 2:
                yield Edit(value, _parenthesized(_swapped(value, names[0], names[1])))
        elif not site.kernel and _is_launch(node):
            names = [a.id for a in node.args if isinstance(a, ast.Name) and "stride" in a.id.lower()]
            names = list(dict.fromkeys(names))
            if len(names) >= 2:
                yield Edit(node, _text(_swapped(node, names[0], names[1])))


def _is_launch(node: ast.AST) -> TypeGuard[ast.Call]:
    """``kernel[grid](...)``."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)


def _grid_edits(site: Site, change: Callable[[str], str]) -> Iterator[Edit]:
    if site.kernel:
        return
    for node in _body_nodes(site):
        if not _is_launch(node):
            continue
        grid = node.func.slice  # type: ignore[attr-defined]
        if isinstance(grid, ast.Tuple):
            for i, axis in enumerate(grid.elts):
                elts = list(grid.elts)
                elts[i] = ast.parse(change(_text(axis)), mode="eval").body
                yield Edit(grid, _text(ast.Tuple(elts=elts, ctx=ast.Load())))
        else:  # a name bound to a tuple: its first axis
            g = _text(grid)
            yield Edit(grid, f"({change(f'{g}[0]')},) + tuple({g}[1:])")


def grid_halve(site: Site) -> Iterator[Edit]:
    yield from _grid_edits(site, lambda axis: f"max(({axis}) // 2, 1)")


def grid_cap(site: Site) -> Iterator[Edit]:
    yield from _grid_edits(site, lambda axis: f"min({axis}, {GRID_CAP})")


def _single_target(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _reads(node: ast.AST, name: str) -> int:
    return sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _carried(value: ast.AST) -> str | None:
    """The name a step is applied to: ``x + c``, ``f(x, ...)`` or ``x.f(...)``."""
    target: ast.expr | None
    if isinstance(value, ast.BinOp):
        target = value.left
    elif (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and not _is_tl_call(value, None)
    ):
        target = value.func.value  # x.f(...)
    elif isinstance(value, ast.Call):
        target = value.args[0] if value.args else None
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def epilogue_order(site: Site) -> Iterator[Edit]:
    """Two steps applied to one value in the other order: ``a = f(x); b = g(a)`` becomes
    ``a = g(x); b = f(a)`` (relu before the bias), where each step is an operator, a call
    or a method applied to the value carried from the step before (its left operand,
    first argument or receiver)."""
    if not site.kernel:
        return
    blocks = [n.body for n in ast.walk(site.fn) if hasattr(n, "body") and isinstance(n.body, list)]
    for body in blocks:
        for first, second in zip(body, body[1:]):
            a, b = _single_target(first), _single_target(second)
            if a is None or b is None or a == b or _loads(first) or _loads(second):
                continue
            x = _carried(first.value)
            if x is None or _carried(second.value) != a or _reads(second.value, a) != 1:
                continue
            if _reads(first.value, x) != 1:
                continue
            g_of_x = _Rename({a: x}).visit(_copy(second.value))
            f_of_a = _Rename({x: a}).visit(_copy(first.value))
            indent = " " * first.col_offset
            yield Edit(first, f"{a} = {_text(g_of_x)}\n{indent}{b} = {_text(f_of_a)}", last=second)


def _loads(stmt: ast.stmt) -> bool:
    return any(_is_tl_call(n, ("load",)) for n in ast.walk(stmt))


def _copy(node: ast.AST) -> ast.AST:
    return copy.deepcopy(node)


DTYPES = {("tl", "float32"): "float16", ("torch", "float32"): "float16"}


def dtype(site: Site) -> Iterator[Edit]:
    for node in _body_nodes(site):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            new = DTYPES.get((node.value.id, node.attr))
            if new is not None:
                yield Edit(node, f"{node.value.id}.{new}")


def drop_factor(site: Site) -> Iterator[Edit]:
    if not site.kernel:
        return
    for node in _body_nodes(site):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            yield Edit(node, _parenthesized(node.left))


OPERATORS: dict[str, Operator] = {
    "arith": arith,
    "compare": compare,
    "constant": constant,
    "mask-drop": mask_drop,
    "padding": padding,
    "stride-swap": stride_swap,
    "grid-halve": grid_halve,
    "grid-cap": grid_cap,
    "epilogue-order": epilogue_order,
    "dtype": dtype,
    "drop-factor": drop_factor,
}
