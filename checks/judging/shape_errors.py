"""Errors of tile shapes that do not fit together, said in plain words.

Triton refuses to combine two tiles whose shapes do not broadcast ("Cannot
make_shape_compatible: incompatible dimensions at index 0: 16 and 64", and its relatives
for broadcasts and stores) without naming the shapes or where the odd one came from, and
the line it points at is where the shapes met, often not the line of the mistake.
:func:`plain` puts in front of such a message the line and the expression where the
shapes met, the two shapes, and -- when a name used there was made earlier in the same
kernel by a reduction along an axis, a ``tl.arange`` or a load -- that earlier line and
why its shape is what it is.  Triton's own words follow.

The shapes come from the error's frames: Triton's semantic layer (the operands'
shapes), the kernel's own frame in the interpreter or the code generator's scope in
compiled mode (each name's shape); the earlier line comes from the ``ast`` of the
learner's file.  Standard library only.
"""

from __future__ import annotations

import ast
import linecache
import os
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from checks.judging.records import exception_chain

REDUCTIONS = ("sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum")
CONVERSIONS = ("to", "cast")  # x.to(tl.float32) keeps x's shape
SHOWN_CHARS = 60  # the longest expression quoted in a message

_COMPATIBLE = re.compile(
    r"Cannot make_shape_compatible: incompatible dimensions at index (\d+): (\d+) and (\d+)"
)
_EXPAND = re.compile(
    r"Cannot broadcast, the expanded size of the tensor \((\d+)\) must match .*?dimension (\d+)"
)
_RANK = re.compile(r"Cannot broadcast, rank mismatch")
_POINTER = re.compile(r"Expected pointer argument to have shape (.+?) but got (.+)")
_BRACKETS = re.compile(r"\[([^\]]*)\]")


@dataclass
class Clash:
    """Two shapes that do not fit: ``a`` and ``b`` (None when unknown), and where they
    differ (``index``, ``sizes``: a's and b's sizes there) when one axis says it."""

    kind: str  # "combine", "spread" (a to b) or "pointer" (a value b through pointers a)
    a: Optional[tuple] = None
    b: Optional[tuple] = None
    index: Optional[int] = None
    sizes: Optional[tuple] = None
    roles: tuple = ("", "")  # what a and b are, e.g. ("pointers", "the mask")


@dataclass
class Site:
    """Where the shapes met: the file's line, the kernel, the expression's position
    (line, end line, column, end column) when known, and the shapes of its names."""

    line: int
    function: str
    position: Optional[tuple] = None
    shapes: dict = field(default_factory=dict)


def plain(exc: BaseException, path: Any, message: str) -> str:
    """``message`` (Triton's words for ``exc``) with, in front, what a shape error of the
    learner's file ``path`` means; ``message`` unchanged for any other error."""
    try:
        said = explain(exc, Path(path)) if path else None
    except Exception:  # noqa: BLE001 - a message is never lost to its explanation
        said = None
    return f"{said}\nTriton's words: {message}" if said else message


def explain(exc: BaseException, path: Path) -> Optional[str]:
    """The plain sentences for a shape error of ``path`` in ``exc``'s chain, or None."""
    chain = exception_chain(exc)
    clash = next((c for c in map(_clash, reversed(chain)) if c is not None), None)
    site = _site(chain, path) if clash is not None else None
    if clash is None or site is None:
        return None
    text = "".join(linecache.getlines(str(path))) or path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    func = _innermost(tree, site.line, (ast.FunctionDef, ast.AsyncFunctionDef))
    stmt = _innermost(func or tree, site.line, (ast.stmt,))
    expr = _expression(stmt, site.position) if stmt is not None else None
    shown = _quoted(text, expr or stmt) or text.splitlines()[site.line - 1].strip()
    where = f"Shape mismatch on line {site.line} of {path.name} (in {site.function}): `{shown}`"
    said = [f"{where} {_clash_words(clash)}"]
    if func is not None and stmt is not None:
        said += _origins(text, func, stmt, expr or stmt, clash, site)
    return "\n".join(said)


# --- the error: which shapes met ---------------------------------------------------------


def _shape(value: Any) -> Optional[tuple]:
    """A Triton tensor's shape as ints (() for a scalar), or None for anything else."""
    kind = getattr(value, "type", None)
    if kind is None or not callable(getattr(kind, "is_block", None)):
        return None
    if not kind.is_block():
        return ()
    return tuple(int(getattr(d, "value", d)) for d in kind.shape)


def _ints(values: Any) -> Optional[tuple]:
    try:
        return tuple(int(getattr(d, "value", d)) for d in values)
    except (TypeError, ValueError):
        return None


def _frames(exc: BaseException) -> list:
    return [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]


def _clash(exc: BaseException) -> Optional[Clash]:
    """The shapes that did not fit, if ``exc`` is Triton's shape error."""
    text = str(getattr(exc, "error_message", None) or exc)
    frames = _frames(exc)
    names = [f.f_code.co_name for f in frames]
    m = _COMPATIBLE.search(text)
    if m:
        index, left, right = (int(g) for g in m.groups())
        clash = Clash("combine", index=index, sizes=(left, right))
        if "broadcast_impl_value" in names:
            at = names.index("broadcast_impl_value")
            here = frames[at].f_locals
            clash.a, clash.b = _ints(here.get("lhs_shape", ())), _ints(here.get("rhs_shape", ()))
            caller = frames[at - 1].f_locals if at > 0 else {}
            if names[at - 1 : at] == ["binary_op_type_checking_impl"]:  # the operands as written
                a, b = _shape(caller.get("lhs")), _shape(caller.get("rhs"))
                if a and b:
                    clash.a, clash.b = a, b
            clash.roles = _roles(frames, names, clash.b)
        return clash
    m = _POINTER.search(text)
    if m:
        wanted, got = (tuple(int(d) for d in re.findall(r"\d+", s)) for s in m.groups())
        return Clash("pointer", a=got, b=wanted)
    m = _EXPAND.search(text) or _RANK.search(text)
    if m:
        shapes = [tuple(int(d) for d in re.findall(r"\d+", s)) for s in _BRACKETS.findall(text)[-2:]]
        clash = Clash("spread", *(shapes if len(shapes) == 2 else (None, None)))
        if "broadcast_impl_shape" in names:
            here = frames[names.index("broadcast_impl_shape")].f_locals
            clash.a, clash.b = _ints(here.get("src_shape", ())), _ints(here.get("shape", ()))
        if m.re is _EXPAND and clash.a and clash.b:
            clash.index = int(m.group(2))
            clash.sizes = (clash.a[clash.index], clash.b[clash.index])
        return clash
    return None


def _roles(frames: list, names: list, other: Optional[tuple]) -> tuple:
    """What the two sides are in a load or a store: the pointers, and the value, the
    mask or ``other`` (whichever has the second side's shape)."""
    for api in ("_store_legacy", "_load_legacy"):
        if api in names:
            held = frames[names.index(api)].f_locals
            for name, role in (("val", "the value"), ("mask", "the mask"), ("other", "`other`")):
                shape = _shape(held.get(name))
                if shape and other and _aligned(shape, len(other)) == other:
                    return ("the pointers", role)
            return ("the pointers", "the value or mask" if api == "_store_legacy" else "the mask or `other`")
    return ("", "")


def _aligned(shape: tuple, rank: int) -> tuple:
    return (1,) * (rank - len(shape)) + tuple(shape)


def _fmt(shape: Optional[tuple]) -> str:
    return "()" if not shape else "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _clash_words(c: Clash) -> str:
    if c.kind == "pointer":
        return (
            f"stores a value of shape {_fmt(c.b)} through pointers of shape {_fmt(c.a)}: the value "
            "is spread to the pointers' shape, never the pointers to the value's."
        )
    if c.kind == "spread":
        head = f"must spread a tile of shape {_fmt(c.a)} to shape {_fmt(c.b)}"
        if c.index is None or not c.sizes:
            return f"{head}, which has another number of axes." if c.a and c.b else f"{head}."
        have, need = c.sizes
        return (
            f"{head}; along axis {c.index} it has {have} where {need} is needed (only a size of 1 is spread)."
        )
    assert c.sizes is not None and c.index is not None
    left, right = c.sizes
    rule = "sizes combine only when they are equal or one of them is 1."
    if c.a is None or c.b is None:
        return f"combines tiles with {left} and {right} along axis {c.index}; {rule}"
    first, second = (
        f"{role} of shape {_fmt(s)}" if role else _fmt(s) for role, s in zip(c.roles, (c.a, c.b))
    )
    what = f"combines {first} with {second}" if any(c.roles) else f"combines shapes {first} and {second}"
    return f"{what}; along axis {c.index} they have {left} and {right}, and {rule}"


# --- where they met ----------------------------------------------------------------------


def _site(chain: list, path: Path) -> Optional[Site]:
    """The learner's line where the shapes met: the compiler's node (compiled mode), else
    the deepest frame of ``path`` (the interpreter runs the kernel's own Python)."""
    target = os.path.realpath(path)
    for e in reversed(chain):  # innermost first: the node that really failed
        src, node = getattr(e, "src", None), getattr(e, "node", None)
        if isinstance(src, str) and src.strip() and hasattr(node, "lineno"):
            return _compiled_site(chain, src, node, path)
    for e in reversed(chain):
        hits = [
            (f, n, tb)
            for f, n, tb in _walk(e.__traceback__)
            if os.path.realpath(f.f_code.co_filename) == target
        ]
        if hits:
            frame, lineno, tb = hits[-1]
            site = Site(lineno, frame.f_code.co_name, shapes=_named_shapes(frame.f_locals))
            try:
                pos = list(frame.f_code.co_positions())[tb.tb_lasti // 2]
                site.position = pos if pos[0] == lineno and None not in pos else None
            except (AttributeError, IndexError):
                pass
            return site
    return None


def _walk(tb: Any) -> list:
    out = []
    while tb is not None:
        out.append((tb.tb_frame, tb.tb_lineno, tb))
        tb = tb.tb_next
    return out


def _named_shapes(scope: Any) -> dict:
    out = {}
    for name, value in dict(scope).items():
        shape = _shape(value)
        if shape is not None:
            out[name] = shape
    return out


def _compiled_site(chain: list, src: str, node: Any, path: Path) -> Optional[Site]:
    """The file's line of a compiler error (its node counts lines from the kernel's
    ``def``), its expression's position, and the code generator's scope at the error."""
    head = src.lstrip().splitlines()[0].strip()
    lines = linecache.getlines(str(path)) or path.read_text(encoding="utf-8").splitlines(True)
    start = next((i for i, line in enumerate(lines) if line.strip() == head), None)
    if start is None:
        return None
    indent = len(lines[start]) - len(lines[start].lstrip())
    first = len(src) - len(src.lstrip("\n"))  # blank lines before the def in src
    offset = start - src[:first].count("\n")
    site = Site(offset + node.lineno, head.split("(")[0].replace("def", "").strip())
    if getattr(node, "end_lineno", None) is not None and node.end_col_offset is not None:
        site.position = (
            offset + node.lineno,
            offset + node.end_lineno,
            indent + node.col_offset,
            indent + node.end_col_offset,
        )
    site.shapes = _generator_scope(chain)
    return site


def _generator_scope(chain: list) -> dict:
    """The shapes of the names the code generator held when the innermost error was
    raised.  Triton drops its own frames from the tracebacks it raises, but the frames
    of its semantic layer left in them still lead back (``f_back``) to the generator."""
    for e in reversed(chain):
        for frame, _, _ in reversed(_walk(e.__traceback__)):
            f = frame
            while f is not None:
                scope = getattr(f.f_locals.get("self"), "lscope", None)
                if isinstance(scope, dict):
                    return _named_shapes(scope)
                f = f.f_back
    return {}


# --- the learner's file: the expression and where its names came from ---------------------


def _innermost(tree: ast.AST, line: int, kinds: tuple) -> Any:
    found = [
        n for n in ast.walk(tree) if isinstance(n, kinds) and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]
    return min(found, key=lambda n: (n.end_lineno or n.lineno) - n.lineno, default=None)


def _expression(stmt: ast.AST, position: Optional[tuple]) -> Optional[ast.AST]:
    if position is None:
        return None
    for n in ast.walk(stmt):
        if isinstance(n, ast.expr) and (n.lineno, n.end_lineno, n.col_offset, n.end_col_offset) == tuple(
            position
        ):
            return n
    return None


def _quoted(text: str, node: Any) -> str:
    said = " ".join((ast.get_source_segment(text, node) or "").split()) if node is not None else ""
    return said if len(said) <= SHOWN_CHARS else said[: SHOWN_CHARS - 1] + "…"


def _callee(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _made_by(value: ast.AST) -> Optional[tuple]:
    """("reduction", call, axis, keep_dims), ("arange", call) or ("load", call): what made
    a value, through conversions (``.to(...)``) that keep its shape; else None."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in CONVERSIONS
    ):
        value = value.func.value
    if isinstance(value, ast.Call):
        name = _callee(value.func)
        if name in REDUCTIONS:
            axis = _axis(value)
            keep = any(
                k.arg == "keep_dims" and getattr(k.value, "value", False) is True for k in value.keywords
            )
            return ("reduction", value, axis, keep) if axis is not None else None
        if name in ("load", "arange"):
            return (name, value)
    if isinstance(value, (ast.BinOp, ast.UnaryOp)):
        calls = [_callee(n.func) for n in ast.walk(value) if isinstance(n, ast.Call)]
        if "arange" in calls and not set(calls) & {"load", *REDUCTIONS}:  # pid * BLOCK + tl.arange(0, BLOCK)
            return (
                "arange",
                next(n for n in ast.walk(value) if isinstance(n, ast.Call) and _callee(n.func) == "arange"),
            )
    return None


def _axis(call: ast.Call) -> Optional[int]:
    given = next((k.value for k in call.keywords if k.arg == "axis"), None)
    if given is None:  # tl.sum(x, 1), or x.sum(1) on a tensor
        on_tensor = isinstance(call.func, ast.Attribute) and not (
            isinstance(call.func.value, ast.Name) and call.func.value.id in ("tl", "language")
        )
        position = 0 if on_tensor and len(call.args) == 1 else 1
        given = call.args[position] if len(call.args) > position else None
    try:
        axis = ast.literal_eval(given) if given is not None else None
    except ValueError:
        return None
    return axis if isinstance(axis, int) and not isinstance(axis, bool) else None


def _origin(func: ast.AST, name: str, before: int) -> Optional[ast.Assign]:
    """The last ``name = ...`` of ``func`` on a line before ``before``."""
    found = [
        n
        for n in ast.walk(func)
        if isinstance(n, ast.Assign)
        and n.lineno < before
        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
    ]
    return max(found, key=lambda n: n.lineno, default=None)


def _origins(text: str, func: ast.AST, stmt: ast.stmt, expr: ast.AST, clash: Clash, site: Site) -> list:
    """A sentence for each name of ``expr`` made earlier by a reduction, an arange or a
    load that accounts for one side of the clash (reductions first: the usual culprit)."""
    names = sorted(
        (n for n in ast.walk(expr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    found: list = []
    for name in dict.fromkeys(n.id for n in names):
        origin = _origin(func, name, stmt.lineno)
        made = _made_by(origin.value) if origin is not None else None
        if origin is None or made is None:
            continue
        shape = site.shapes.get(name)
        side = _side(shape, clash)
        if shape is not None and side is None:
            continue  # its shape fits both sides: not the odd one
        found.append(
            (("reduction", "arange", "load").index(made[0]), origin.lineno, name, origin, made, shape, side)
        )
    if any(f[0] == 0 for f in found):
        found = [f for f in found if f[0] == 0]
    said: list = []
    sides: set = set()
    for _, line, name, origin, made, shape, side in sorted(found, key=lambda f: f[:2]):
        if side in sides and side is not None or len(said) == 2:
            continue
        sides.add(side)
        head = f"`{name}` comes from line {line}, `{_quoted(text, origin.value)}`: "
        said.append(head + _why(made, shape, side, clash) + ".")
    return said


def _side(shape: Optional[tuple], clash: Clash) -> Optional[int]:
    """Which side of the clash (0 or 1) a name's shape accounts for, or None."""
    if shape is None or not shape:
        return None
    if clash.sizes is not None:  # the sizes where the sides differ: the one it has
        left, right = clash.sizes
        has = set(shape)
        return 0 if left in has and right not in has else 1 if right in has and left not in has else None
    for i, side in enumerate((clash.a, clash.b)):
        if side and _aligned(shape, len(side)) == side:
            return i
    return None


def _need(clash: Clash, side: Optional[int]) -> tuple:
    """(the size the other side has where they differ, the axis, the clash's rank)."""
    if side is None or clash.sizes is None or clash.index is None:
        return None, None, None
    rank = len(clash.a or clash.b or ()) or None
    return clash.sizes[1 - side], clash.index, rank


def _why(made: tuple, shape: Optional[tuple], side: Optional[int], clash: Clash) -> str:
    need, index, rank = _need(clash, side)
    kind = made[0]
    if kind == "reduction":
        _, _, axis, keep = made
        rank_in = None if shape is None else len(shape) + (0 if keep else 1)
        if rank_in and axis < 0:
            axis += rank_in
        if rank_in == 2 and not keep and axis in (0, 1):
            per, other = ("column", "row") if axis == 0 else ("row", "column")
            why = f"reducing along axis {axis} leaves one value per {per} (shape {_fmt(shape)})"
            if need is not None and rank == 2 and index in (0, 1):
                why += f", where this line needs one per {('row', 'column')[index]} ({need})"
            return f"{why}; axis={1 - axis} leaves one per {other}"
        why = f"reducing along axis {axis} " + (
            "keeps that axis with size 1" if keep else "removes that axis"
        )
        why += f", leaving shape {_fmt(shape)}" if shape is not None else ""
    elif kind == "arange":
        why = f"it holds {shape[0]} values (shape {_fmt(shape)})" if shape else "it is one-dimensional"
    else:
        why = "a load has the shape of its pointers" + (f", {_fmt(shape)} here" if shape else "")
    return why + (f", where this line needs {need} along axis {index}" if need is not None else "")
