"""The error model: the mistakes learners make in a kernel and its wrapper, as edits of the
file's AST that would undo them.  Each candidate carries the sentence that names the
mistake's mechanism in the file's own names ("the loop never advances `b_ptrs`, so every
pass reads the same first tile"), said only after the checks pass with the edit.

    kind             the mistake it undoes
    boundary         a comparison off by one (< for <=, > for >=) or inverted (== for !=)
    arithmetic       + for -, * for /, // for /
    constant         an integer one off (a loop bound, an axis, a program_id axis), 0/1
    same-kind-name   one name for another of its kind (a_ptrs/b_ptrs, stride_am/stride_ak,
                     pid_m/pid_n, offs_m/offs_n, M/N) at one place
    exchanged-names  two names of one kind exchanged in one statement, or two definitions
    overwrite        ``acc = x`` where ``acc += x`` (or ``tl.dot(a, b, acc)``) accumulates
    pointer-advance  a pointer a loop loads through but never advances
    floor-division   ``a // b`` where a ceiling division counts a last, partial tile
    clamp            a ``min``/``max`` around a grid or a bound that the formula has not
    extra-operand    an extra factor or term
    missing-factor   a term of an address without its stride or size, a product without its scale
    padding          a masked load's ``other=`` value
    exp-base         exp for exp2 (a missing or extra log2(e))
    min-max          the minimum for the maximum
    dtype            float16 for float32 (an accumulator, a cast, an allocation)
    early-cast       a ``.to(...)`` that rounds too early
    order            two steps applied in the other order
    mask             a load or store without the mask its siblings use
    where-branches   tl.where's two results exchanged
    start-value      a running maximum started at 0 instead of -inf (or the reverse)
    extra-step       a statement applied one time too many
    grid-axes        a launch grid's two axes exchanged

Standard library only.
"""

from __future__ import annotations

import ast
import copy
import itertools
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

from checks.mutation.generate import sites
from checks.mutation.operators import Edit, Site

LOG2E = "1.4426950408889634"
NOT_NAMES = {"tl", "triton", "torch", "range", "min", "max", "len", "float", "int", "math", "np", "self"}
SIXTEEN_BITS = {"float16", "bfloat16"}


@dataclass(frozen=True)
class Candidate:
    kind: str
    edits: tuple  # non-overlapping Edits of one source
    line: int
    says: str  # the mistake's mechanism, in the file's names (without "line N: ")
    prior: float  # how likely the mistake is a priori; higher is tried first
    function: str = ""


@dataclass
class Context:
    """What the operators need to know about one function of the file."""

    site: Site
    parents: dict = field(default_factory=dict)
    names: list = field(default_factory=list)  # names the function binds or reads, in order
    ceil_div: str = "triton.cdiv"  # how this function spells a ceiling division

    @property
    def fn(self) -> ast.FunctionDef:
        return self.site.fn

    def up(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


ATOMS = (ast.Name, ast.Constant, ast.Call, ast.Attribute, ast.Subscript, ast.Tuple, ast.List)


def _paren(node: ast.AST) -> str:
    """A replacement for an expression: parenthesized unless it is an atom, so it binds as
    the expression it replaces did."""
    return _text(node) if isinstance(node, ATOMS) else f"({_text(node)})"


def _call_name(node: ast.AST) -> str:
    """``tl.load``, ``range``, ``.to`` (a method), or '' for anything else."""
    if not isinstance(node, ast.Call):
        return ""
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        if isinstance(f.value, ast.Name) and f.value.id in ("tl", "triton", "torch", "math"):
            return f"{f.value.id}.{f.attr}"
        return f".{f.attr}"
    return ""


def _body(fn: ast.FunctionDef) -> list:
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def _walk(ctx: Context) -> Iterator[ast.AST]:
    for stmt in _body(ctx.fn):
        yield from ast.walk(stmt)


def context_of(site: Site, module: ast.Module) -> Context:
    parents: dict = {}
    for node in ast.walk(site.fn):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    names: list = [a.arg for a in site.fn.args.args + site.fn.args.kwonlyargs]
    for node in ast.walk(site.fn):
        if isinstance(node, ast.Name) and node.id not in names and node.id not in NOT_NAMES:
            names.append(node.id)
    imported = {
        a.asname or a.name for n in module.body if isinstance(n, ast.ImportFrom) for a in n.names
    }
    ceil = "tl.cdiv" if site.kernel else ("cdiv" if "cdiv" in imported else "triton.cdiv")
    return Context(site, parents, names, ceil)


def _keyword_of(node: ast.AST, ctx: Context) -> str:
    """The keyword argument ``node`` sits under (``mask``, ``other``, ``axis``), or ''."""
    for parent in ctx.up(node):
        if isinstance(parent, ast.keyword):
            return parent.arg or ""
        if isinstance(parent, (ast.Call, ast.stmt)):
            return ""
    return ""


def _enclosing_call(node: ast.AST, ctx: Context) -> str:
    for parent in ctx.up(node):
        if isinstance(parent, ast.Call):
            return _call_name(parent)
        if isinstance(parent, ast.stmt):
            return ""
    return ""


def _statement(node: ast.AST, ctx: Context) -> Optional[ast.stmt]:
    for parent in ctx.up(node):
        if isinstance(parent, ast.stmt):
            return parent
    return None


def _target(stmt: Optional[ast.AST]) -> str:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    return ""


MASKY = ("mask", "_ok", "exists", "valid", "inside", "in_bounds", "keep")


def _is_masky(name: str) -> bool:
    return any(m in name.lower() for m in MASKY)


def _in_mask(node: ast.AST, ctx: Context) -> bool:
    if _keyword_of(node, ctx) == "mask" or _is_masky(_target(_statement(node, ctx))):
        return True
    for parent in ctx.up(node):
        if isinstance(parent, ast.Call) and _call_name(parent) == "tl.where":
            return bool(parent.args) and any(n is node for n in ast.walk(parent.args[0]))
    return False


def _in_range(node: ast.AST, ctx: Context) -> Optional[ast.For]:
    """The for loop whose ``range(...)`` holds ``node``."""
    for parent in ctx.up(node):
        if isinstance(parent, ast.For):
            return parent if any(n is node for n in ast.walk(parent.iter)) else None
    return None


def _loop_word(loop: ast.For) -> str:
    var = _text(loop.target)
    return f"the loop over `{var}`"


def _accumulated(loop: ast.AST) -> str:
    """The first name the loop's body updates from its own value (``acc = f(acc, ...)``)."""
    for s in ast.walk(loop):
        t = _target(s)
        if t and (isinstance(s, ast.AugAssign) or (isinstance(s, ast.Assign) and _reads(s.value, t))):
            if "ptr" not in t:
                return t
    return ""


def _loop_sentence(loop: ast.For, fewer: bool) -> str:
    acc = _accumulated(loop)
    if fewer:
        tail = f", so the last tile never reaches `{acc}`" if acc else ", so the last tile is never processed"
        return f"{_loop_word(loop)} stops one pass early{tail}"
    tail = f", so `{acc}` takes in a tile past the end" if acc else ", past the last tile"
    return f"{_loop_word(loop)} runs one pass too many{tail}"


def _subtracted(node: ast.AST, ctx: Context) -> bool:
    parent = ctx.parents.get(node)
    return isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Sub) and parent.right is node


def _neutral(node: ast.AST, new: object, ctx: Context) -> bool:
    """``x - 0``, ``x + 0``, ``x * 1``: an operand the edit only neutralizes."""
    parent = ctx.parents.get(node)
    if not isinstance(parent, ast.BinOp) or parent.right is not node:
        return False
    return (new == 0 and isinstance(parent.op, (ast.Add, ast.Sub))) or (
        new == 1 and isinstance(parent.op, (ast.Mult, ast.Div, ast.FloorDiv))
    )


# -- the sentences of names of one kind ---------------------------------------------------


def same_kind(a: str, b: str) -> bool:
    """Two names of one kind: the same tokens but one (``a_ptrs``/``b_ptrs``,
    ``stride_am``/``stride_ak``, ``pid_m``/``pid_n``), or two short names of one case
    (``M``/``N``, ``Q``/``K``)."""
    if a == b:
        return False
    ta, tb = a.split("_"), b.split("_")
    if len(ta) != len(tb):
        return False
    diff = [i for i in range(len(ta)) if ta[i] != tb[i]]
    if len(diff) != 1:
        return False
    x, y = ta[diff[0]], tb[diff[0]]
    if not x or not y:
        return False
    if len(ta) == 1:
        return len(x) <= 2 and len(y) <= 2 and x.isupper() == y.isupper()
    return x.isupper() == y.isupper()


def name_sentence(wrong: str, right: str) -> str:
    w = wrong.lower()
    if "stride" in w:
        return f"uses the stride `{wrong}` where `{right}` belongs, so that dimension is walked with another dimension's step"
    if w.endswith(("ptr", "ptrs")) or (len(wrong) == 1 and wrong.isupper() and wrong in "QKVO"):
        return f"goes through `{wrong}` where `{right}` is meant, so it reaches the wrong tensor's memory"
    if "pid" in w or "program" in w:
        return f"takes `{wrong}` where `{right}` is meant, so the program's tile is placed along the wrong axis"
    if w.startswith("off") or w.startswith("idx") or w.startswith("cols") or w.startswith("rows"):
        return f"indexes with `{wrong}` where `{right}` is meant, so that dimension takes the other dimension's offsets"
    if _is_masky(wrong):
        return f"masks with `{wrong}` where `{right}` is meant, so that dimension is bounded by the other one's test"
    if len(wrong) <= 2 or wrong.startswith(("BLOCK", "block", "n_", "num_")):
        return (
            f"uses `{wrong}` where `{right}` is the size that belongs there, so it is right only "
            f"when the two are equal"
        )
    return f"uses `{wrong}` where `{right}` is meant"


# -- the operators ------------------------------------------------------------------------

Operator = Callable[[Context], Iterator[Candidate]]


def _cand(ctx: Context, kind: str, node: ast.AST, text: str, says: str, prior: float, **kw) -> Candidate:
    parent = ctx.parents.get(node)
    if text.startswith("(") and isinstance(parent, (ast.Call, ast.keyword, ast.Assign, ast.AugAssign, ast.Return)):
        try:
            if ast.dump(ast.parse(text[1:-1], mode="eval")) == ast.dump(ast.parse(text, mode="eval")):
                text = text[1:-1]  # an argument or a whole value needs no parentheses
        except SyntaxError:
            pass
    return Candidate(kind, (Edit(node, text, **kw),), node.lineno, says, prior, ctx.fn.name)  # type: ignore[attr-defined]


BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
SIGN = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


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
                says = f"the mask {shown} lets one element past the end through (both sides equal); `{fix}` keeps the lanes inside"
            if _causal(node):
                says = (
                    f"the causal test {shown} "
                    + ("leaves out the diagonal: a query no longer sees its own key" if had in ("<", ">") else "is off by one at the diagonal")
                )
            yield _cand(ctx, "boundary", node, _paren(new), says, 0.9 if where else 0.75)


def _causal(node: ast.Compare) -> bool:
    names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    return len(names) == 2 and all(n.startswith("offs") for n in names)


ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div}
VERB = {ast.Add: "adds", ast.Sub: "subtracts", ast.Mult: "multiplies by", ast.Div: "divides by", ast.FloorDiv: "floor-divides by"}


def arithmetic(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in ARITH:
            new = copy.copy(node)
            new.op = ARITH[type(node.op)]()
            right = node.right if isinstance(node, ast.BinOp) else node.value
            says = f"`{_text(node)}` {VERB[type(node.op)]} `{_text(right)}` where the formula {VERB[type(new.op)]} it"
            text = _paren(new) if isinstance(node, ast.BinOp) else _text(new)
            yield _cand(ctx, "arithmetic", node, text, says, 0.55)


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
                else:
                    says = f"the constant {node.value} should be {new}"
                yield _cand(ctx, "constant", node, repr(new), says, prior)
        elif isinstance(node.value, float):
            for new in (0.0, 1.0, 0.5, 2.0):
                if new != node.value:
                    yield _cand(ctx, "constant", node, repr(new), f"the constant {node.value} should be {new}", 0.3)


def same_kind_name(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load) or node.id in NOT_NAMES:
            continue
        for other in ctx.names:
            if same_kind(node.id, other):
                says = name_sentence(node.id, other)
                prior = 0.45 if says.startswith("uses `") else 0.7
                yield _cand(ctx, "same-kind-name", node, other, says, prior)


class _Swap(ast.NodeTransformer):
    def __init__(self, a: str, b: str):
        self.a, self.b = a, b

    def visit_Name(self, node: ast.Name) -> ast.AST:
        swap = {self.a: self.b, self.b: self.a}
        return ast.Name(id=swap.get(node.id, node.id), ctx=node.ctx)


def exchanged_names(ctx: Context) -> Iterator[Candidate]:
    """Two names of one kind exchanged everywhere in one statement (a launch's strides, a
    mask's rows and columns), or two definitions that compute each other's value."""
    for stmt in _walk(ctx):
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return)) or stmt.value is None:
            continue
        read = list(dict.fromkeys(n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)))
        for a, b in itertools.combinations(read, 2):
            if same_kind(a, b):
                new = _Swap(a, b).visit(copy.deepcopy(stmt.value))
                says = f"`{a}` and `{b}` are exchanged here: " + name_sentence(a, b).split(", ", 1)[-1]
                yield _cand(ctx, "exchanged-names", stmt.value, _paren(new), says, 0.75)
    for block in _blocks(ctx.fn):
        assigns = [s for s in block if _target(s) and isinstance(s, ast.Assign)]
        for s1, s2 in itertools.combinations(assigns, 2):
            a, b = _target(s1), _target(s2)
            if not same_kind(a, b) or _reads(s2.value, a) or _reads(s1.value, b):
                continue
            says = f"`{a}` and `{b}` are computed the other way round: `{a}` gets the value that belongs to `{b}`"
            edits = (Edit(s1.value, _text(s2.value)), Edit(s2.value, _text(s1.value)))
            yield Candidate("exchanged-names", edits, s1.lineno, says, 0.75, ctx.fn.name)


def _reads(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _blocks(fn: ast.AST) -> list:
    return [n.body for n in ast.walk(fn) if isinstance(getattr(n, "body", None), list)] + [
        n.orelse for n in ast.walk(fn) if isinstance(getattr(n, "orelse", None), list) and n.orelse
    ]


def _loops(ctx: Context) -> Iterator[ast.For]:
    for node in _walk(ctx):
        if isinstance(node, (ast.For, ast.While)):
            yield node  # type: ignore[misc]


def overwrite(ctx: Context) -> Iterator[Candidate]:
    for loop in _loops(ctx):
        before = {_target(s) for s in _body(ctx.fn) if s.lineno < loop.lineno}  # bound before the loop
        for stmt in loop.body:
            t = _target(stmt)
            if not t or not isinstance(stmt, ast.Assign) or t not in before or _reads(stmt.value, t):
                continue
            value = stmt.value
            says = (
                f"overwrites `{t}` on every pass of {_loop_word(loop) if isinstance(loop, ast.For) else 'the loop'} "
                f"instead of adding to it, so only the last pass's contribution is kept"
            )
            if _call_name(value) == "tl.dot" and len(value.args) == 2 and not value.keywords:  # type: ignore[attr-defined]
                new = copy.deepcopy(value)
                new.args.append(ast.Name(id=t, ctx=ast.Load()))  # type: ignore[attr-defined]
                yield _cand(ctx, "overwrite", value, _text(new), says, 0.9)
            yield _cand(ctx, "overwrite", stmt, f"{t} += {_text(value)}", says, 0.85)


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
            if _call_name(n) == "tl.load" and n.args and isinstance(n.args[0], ast.Name)  # type: ignore[attr-defined]
        ]
        last = max((s for s in loop.body if isinstance(s, ast.AugAssign)), key=lambda s: s.lineno)
        indent = " " * last.col_offset
        for p in dict.fromkeys(loaded):
            if p in steps:
                continue
            definition = _defined_by(ctx, p)
            strides = [n.id for n in ast.walk(definition) if isinstance(n, ast.Name) and "stride" in n.id.lower()] if definition else []
            for sibling, step in steps.items():
                used = [n.id for n in ast.walk(step) if isinstance(n, ast.Name) and "stride" in n.id.lower()]
                options = [step] if not used else [_Swap(used[0], s).visit(copy.deepcopy(step)) for s in dict.fromkeys(strides)]
                for option in options:
                    text = f"{_text(last)}\n{indent}{p} += {_text(option)}"
                    says = f"the loop never advances `{p}` (it advances `{sibling}`), so every pass loads the same first tile through `{p}`"
                    yield Candidate("pointer-advance", (Edit(last, text),), loop.lineno, says, 0.85, ctx.fn.name)


def floor_division(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
            says = (
                f"`{_text(node)}` rounds down, so a last, partial {'tile' if 'BLOCK' in _text(node.right).upper() else 'block'} "
                f"is never counted; a ceiling division counts it"
            )
            yield _cand(ctx, "floor-division", node, f"{ctx.ceil_div}({_text(node.left)}, {_text(node.right)})", says, 0.8)
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
                elif name in ("min", "tl.minimum"):
                    says = f"caps `{_text(kept)}` at `{_text(dropped)}` with {name}: past that, the rest is never reached"
                else:
                    says = f"raises `{_text(kept)}` to at least `{_text(dropped)}` with {name}, which the formula does not do"
                yield _cand(ctx, "clamp", node, _paren(kept), says, 0.6 if isinstance(dropped, ast.Constant) else 0.4)


def extra_operand(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if not isinstance(node, ast.BinOp) or not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv)):
            continue
        word = {ast.Add: "term", ast.Sub: "term", ast.Mult: "factor", ast.Div: "divisor", ast.FloorDiv: "divisor"}[type(node.op)]
        loop = _in_range(node, ctx)
        if loop is not None and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(loop, ast.For):
            says = _loop_sentence(loop, fewer=isinstance(node.op, ast.Sub)) + f" (`{_text(node)}`)"
            yield _cand(ctx, "extra-operand", node, _paren(node.left), says, 0.85)
            continue
        yield _cand(
            ctx, "extra-operand", node, _paren(node.left),
            f"`{_text(node)}` has the extra {word} `{_text(node.right)}`: it is applied where the formula has none", 0.5,
        )
        if isinstance(node.op, (ast.Add, ast.Mult)):
            yield _cand(
                ctx, "extra-operand", node, _paren(node.right),
                f"`{_text(node)}` has the extra {word} `{_text(node.left)}`: it is applied where the formula has none", 0.45,
            )


def _addressy(stmt: Optional[ast.AST]) -> bool:
    t = _target(stmt).lower()
    return any(w in t for w in ("ptr", "addr", "off", "idx", "base", "start"))


def _factors(ctx: Context) -> list:
    """Names that scale another: strides, sizes, scales."""
    return [
        n for n in ctx.names
        if "stride" in n.lower() or "scale" in n.lower() or n.lower().startswith(("n_", "num_"))
        or (len(n) == 1 and n.isupper()) or n.startswith("BLOCK")
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
    for stmt in _walk(ctx):
        if isinstance(stmt, ast.Assign) and _call_name(stmt.value) == "tl.dot":
            for f in (n for n in factors if "scale" in n.lower()):
                says = f"`{_target(stmt)}` is never multiplied by `{f}`: the scale is missing"
                yield _cand(ctx, "missing-factor", stmt.value, f"{_text(stmt.value)} * {f}", says, 0.6)


PADS = {"0.0": 'float("-inf")', "-inf": "0.0"}


def _pad_text(node: Optional[ast.AST]) -> str:
    if node is None:
        return "none"
    t = _text(node).replace(" ", "")
    if t in ("-float('inf')", 'float("-inf")', "float('-inf')", '-float("inf")'):
        return "-inf"
    if t in ("0", "0.0"):
        return "0.0"
    return t


def padding(ctx: Context) -> Iterator[Candidate]:
    if not ctx.site.kernel:
        return
    for node in _walk(ctx):
        if _call_name(node) != "tl.load" or not any(k.arg == "mask" for k in node.keywords):  # type: ignore[attr-defined]
            continue
        other = next((k for k in node.keywords if k.arg == "other"), None)  # type: ignore[attr-defined]
        had = _pad_text(other.value if other else None)
        for fix, text in (("-inf", 'float("-inf")'), ("0.0", "0.0"), ("1.0", "1.0")):
            if fix == had:
                continue
            if fix == "-inf":
                says = f"masked-off lanes load as {had}, so they count in a maximum (a row whose values all lie below {had} takes it as its maximum); padding with -inf keeps them out"
            elif fix == "0.0":
                says = f"masked-off lanes load as {had}, so they add to the sums and products; padding with 0 makes them add nothing"
            else:
                says = f"masked-off lanes load as {had} where the computation needs 1.0 there"
            if other is not None:
                yield _cand(ctx, "padding", other.value, text, says, 0.8)
            else:
                new = copy.deepcopy(node)
                new.keywords.append(ast.keyword(arg="other", value=ast.parse(text, mode="eval").body))  # type: ignore[attr-defined]
                yield _cand(ctx, "padding", node, _text(new), says.replace("load as none", "load as whatever memory holds"), 0.6)


def exp_base(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        name = _call_name(node)
        if name not in ("tl.exp", "tl.exp2") or len(node.args) != 1:  # type: ignore[attr-defined]
            continue
        arg = _text(node.args[0])  # type: ignore[attr-defined]
        if name == "tl.exp2":
            yield _cand(
                ctx, "exp-base", node, f"tl.exp2(({arg}) * {LOG2E})",
                f"takes exp2 of `{arg}`, a value in natural-log units, without the factor log2(e) = 1.4427, so each weight is 2^x instead of e^x",
                0.8,
            )
            yield _cand(ctx, "exp-base", node, f"tl.exp({arg})", f"takes exp2 of `{arg}` where e^x is meant", 0.6)
        else:
            yield _cand(
                ctx, "exp-base", node, f"tl.exp2({arg})",
                f"takes exp of `{arg}`, a value already scaled by log2(e) for exp2, so the scale is applied twice", 0.6,
            )


MIN_MAX = {"tl.max": "tl.min", "tl.min": "tl.max", "tl.maximum": "tl.minimum", "tl.minimum": "tl.maximum", "tl.sum": "tl.max"}


def min_max(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        name = _call_name(node)
        if name in MIN_MAX:
            fix = MIN_MAX[name]
            new = copy.deepcopy(node)
            new.func = ast.parse(fix, mode="eval").body  # type: ignore[attr-defined]
            says = f"takes `{name}` where `{fix}` is meant"
            if name == "tl.sum":
                says = "sums the values where their maximum is meant"
            yield _cand(ctx, "min-max", node, _text(new), says, 0.6)


DTYPE_FIX = {"float16": ("float32",), "bfloat16": ("float32",), "float32": ("float16",), "int32": ("int64",)}


def dtype(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("tl", "torch")):
            continue
        for fix in DTYPE_FIX.get(node.attr, ()):
            call = _enclosing_call(node, ctx)
            target = _target(_statement(node, ctx))
            if call in ("tl.zeros", "tl.full") and node.attr in SIXTEEN_BITS:
                says = f"`{target or 'the accumulator'}` is created as {node.attr}, so every partial sum added to it rounds to 16 bits; it must start as {fix}"
                prior = 0.85
            elif call == ".to" and node.attr in SIXTEEN_BITS:
                says = f"casts to {node.attr} here, so the steps after it work on values rounded to 16 bits; {fix} keeps them exact"
                prior = 0.7
            elif node.attr == "int32":
                says = "computes an offset in int32, which overflows past 2^31 elements; int64 holds it"
                prior = 0.6
            else:
                says = f"uses {node.value.id}.{node.attr} where {node.value.id}.{fix} is needed"
                prior = 0.45
            yield _cand(ctx, "dtype", node, f"{node.value.id}.{fix}", says, prior)


def early_cast(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if _call_name(node) == ".to" and node.args:  # type: ignore[attr-defined]
            receiver = node.func.value  # type: ignore[attr-defined]
            to = _text(node.args[0])  # type: ignore[attr-defined]
            says = f"converts `{_text(receiver)}` to {to} here, too early: what follows works on the rounded values"
            yield _cand(ctx, "early-cast", node, _paren(receiver), says, 0.5)


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
                        says = "applies the ReLU before adding the bias; the bias goes in first, then the ReLU"
                    edit = Edit(first, f"{a} = {_text(g_of_x)}\n{indent}{b} = {_text(f_of_a)}", last=second)
                    yield Candidate("order", (edit,), first.lineno, says, 0.65, ctx.fn.name)
            elif a == b and _reads(second.value, a) and _reads(first.value, a):  # x = f(x); x = g(x)
                indent = " " * first.col_offset
                edit = Edit(first, f"{_text(second)}\n{indent}{_text(first)}", last=second)
                says = f"applies `{_text(first.value)}` before `{_text(second.value)}`; the formula takes them the other way round"
                yield Candidate("order", (edit,), first.lineno, says, 0.55, ctx.fn.name)


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


def mask(ctx: Context) -> Iterator[Candidate]:
    """A load or store without a mask, given each mask the function uses elsewhere."""
    if not ctx.site.kernel:
        return
    masks: list = []
    for node in _walk(ctx):
        if _call_name(node) in ("tl.load", "tl.store"):
            for k in node.keywords:  # type: ignore[attr-defined]
                if k.arg == "mask" and _text(k.value) not in masks:
                    masks.append(_text(k.value))
    named = [n for n in ctx.names if _is_masky(n)]
    masks += [n for n in named if n not in masks]
    masks += [f"{a}[:, None] & {b}[None, :]" for a, b in itertools.permutations(named, 2)]
    for node in _walk(ctx):
        name = _call_name(node)
        if name not in ("tl.load", "tl.store") or any(k.arg == "mask" for k in node.keywords):  # type: ignore[attr-defined]
            continue
        verb = "reads" if name == "tl.load" else "writes"
        for m in masks:
            extra = ", other=0.0" if name == "tl.load" else ""
            text = _text(node)[:-1] + f", mask={m}{extra})"
            says = f"the {name[3:]} has no mask, so its lanes past the end of the tensor {verb} out of bounds"
            yield _cand(ctx, "mask", node, text, says, 0.7)


def where_branches(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if _call_name(node) == "tl.where" and len(node.args) == 3:  # type: ignore[attr-defined]
            c, a, b = node.args  # type: ignore[attr-defined]
            says = f"the two results of `tl.where({_text(c)}, ...)` are exchanged: the lanes where the test holds get `{_text(b)}`'s value"
            yield _cand(ctx, "where-branches", node, f"tl.where({_text(c)}, {_text(b)}, {_text(a)})", says, 0.6)


def start_value(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        name = _call_name(node)
        t = _target(_statement(node, ctx)) or "the running value"
        if name == "tl.zeros" and node.args:  # type: ignore[attr-defined]
            rest = ", ".join(_text(a) for a in node.args[1:]) + "".join(f", {_text(k)}" for k in node.keywords)  # type: ignore[attr-defined]
            text = f'tl.full({_text(node.args[0])}, float("-inf"){", " + rest.lstrip(", ") if rest else ""})'  # type: ignore[attr-defined]
            says = f"`{t}` starts at 0 where it must start at -inf: while every value seen is below 0, the running maximum stays 0"
            yield _cand(ctx, "start-value", node, text, says, 0.7)
        elif name == "tl.full" and len(node.args) >= 2 and _pad_text(node.args[1]) == "-inf":  # type: ignore[attr-defined]
            new = copy.deepcopy(node)
            new.args[1] = ast.Constant(0.0)  # type: ignore[attr-defined]
            says = f"`{t}` starts at -inf where it must start at 0"
            yield _cand(ctx, "start-value", node, _text(new), says, 0.5)


def extra_step(ctx: Context) -> Iterator[Candidate]:
    if not ctx.site.kernel:
        return
    for stmt in _walk(ctx):
        t = _target(stmt)
        if t and (isinstance(stmt, ast.AugAssign) or (isinstance(stmt, ast.Assign) and _reads(stmt.value, t))):
            says = f"`{_text(stmt)}` is a step too many: it changes `{t}` where the formula leaves it as it is"
            yield _cand(ctx, "extra-step", stmt, "pass", says, 0.35)


def grid_axes(ctx: Context) -> Iterator[Candidate]:
    if ctx.site.kernel:
        return
    for node in _walk(ctx):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            grid = node.func.slice
            if isinstance(grid, ast.Tuple) and len(grid.elts) == 2:
                a, b = grid.elts
                says = f"the grid puts `{_text(a)}` programs along axis 0 and `{_text(b)}` along axis 1, the other way round from how the kernel reads tl.program_id"
                yield _cand(ctx, "grid-axes", grid, f"({_text(b)}, {_text(a)})", says, 0.6)


OPERATORS: dict = {
    "boundary": boundary,
    "arithmetic": arithmetic,
    "constant": constant,
    "same-kind-name": same_kind_name,
    "exchanged-names": exchanged_names,
    "overwrite": overwrite,
    "pointer-advance": pointer_advance,
    "floor-division": floor_division,
    "clamp": clamp,
    "extra-operand": extra_operand,
    "missing-factor": missing_factor,
    "padding": padding,
    "exp-base": exp_base,
    "min-max": min_max,
    "dtype": dtype,
    "early-cast": early_cast,
    "order": order,
    "mask": mask,
    "where-branches": where_branches,
    "start-value": start_value,
    "extra-step": extra_step,
    "grid-axes": grid_axes,
}


def candidates(source: str) -> list:
    """Every candidate change of ``source``'s top-level functions, each a valid program that
    differs from ``source``; unordered (the search orders them)."""
    tree = ast.parse(source)
    out: list = []
    for site in sites(tree):
        ctx = context_of(site, tree)
        for operator in OPERATORS.values():
            out.extend(operator(ctx))
    return out
