"""What the error model reads in a function: its candidates' shape (:class:`Candidate`), the
context of a node (the call, keyword, loop and statement around it), names of one kind, and
the sentences that name loops and names.  Standard library only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional


@dataclass(frozen=True)
class Edit:
    """Replace the source span of ``node`` (or of ``node`` .. ``last``) with ``text``."""

    node: ast.AST
    text: str
    last: ast.AST | None = None
    shown: tuple | None = None  # (before, after) for the mutant's id, when not the span's text


@dataclass(frozen=True)
class Site:
    """One function to mutate: its node and whether it is a @triton.jit kernel."""

    fn: ast.FunctionDef
    kernel: bool


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Attribute) and target.attr == "jit":
            return True
        if isinstance(target, ast.Name) and target.id == "jit":
            return True
    return False


def sites(tree: ast.Module) -> list:
    """The module's top-level functions, kernels marked."""
    return [Site(fn, _is_kernel(fn)) for fn in tree.body if isinstance(fn, ast.FunctionDef)]


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
    kernels: dict = field(default_factory=dict)  # the file's kernels: name -> parameter names
    modules: frozenset = frozenset()  # the modules the file imports by name (math, torch, ...)
    addresses: tuple = ()  # (pointer, its terms' texts) of each address in the file's kernels
    tiles: Optional[tuple] = None  # sizes_a_tile's reading of the function, once made

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
    imported = {a.asname or a.name for n in module.body if isinstance(n, ast.ImportFrom) for a in n.names}
    ceil = "tl.cdiv" if site.kernel else ("cdiv" if "cdiv" in imported else "triton.cdiv")
    kernels = {
        fn.name: [a.arg for a in fn.args.args]
        for fn in module.body
        if isinstance(fn, ast.FunctionDef) and _is_kernel(fn)
    }
    modules = frozenset(a.asname or a.name for n in module.body if isinstance(n, ast.Import) for a in n.names)
    addresses = tuple(
        (terms[0].id, tuple(_text(t) for t in terms[1:]))
        for fn in module.body
        if isinstance(fn, ast.FunctionDef) and _is_kernel(fn)
        for node in ast.walk(fn)
        if (terms := address_terms(node))
    )
    return Context(site, parents, names, ceil, kernels, modules, addresses)


def function_lines(tree: ast.Module) -> list:
    """(first line with its decorators, last line, the function) of each top-level function."""
    return [
        (min([fn.lineno, *(d.lineno for d in fn.decorator_list)]), fn.end_lineno or fn.lineno, fn)
        for fn in tree.body
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def kernel_lines(source: str) -> set:
    """The line numbers of the file's @triton.jit functions, decorators to last line."""
    return {
        line
        for first, last, fn in function_lines(ast.parse(source))
        if isinstance(fn, ast.FunctionDef) and _is_kernel(fn)
        for line in range(first, last + 1)
    }


def address_terms(node: ast.AST) -> list:
    """``[x_ptr, row * n_cols, cols]`` for the address ``x_ptr + row * n_cols + cols`` (a sum
    whose first term is a name ending in ``_ptr``), else []."""
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, ast.Add):
        return []
    terms: list = []

    def flatten(n: ast.AST) -> None:
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            flatten(n.left)
            flatten(n.right)
        else:
            terms.append(n)

    flatten(node)
    first = terms[0]
    return terms if isinstance(first, ast.Name) and first.id.endswith("_ptr") else []


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


def tile_sizes(ctx: Context) -> set:
    """The names the function passes to a launch as a constexpr-looking argument (an
    upper-case parameter such as ``BLOCK_K``, or one named for a block or a tile): its tile
    sizes.  A cap on one is about the GPU's registers and shared memory, never the fault."""
    return {value.id for _, value in _tile_arguments(ctx) if isinstance(value, ast.Name)}


def _tile_arguments(ctx: Context) -> list:
    """(parameter, value) of each launch argument of the function that sizes a tile."""
    out: list = []
    for node in _walk(ctx):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
            continue
        launched = node.func.value.id if isinstance(node.func.value, ast.Name) else ""
        params = ctx.kernels.get(launched, [])
        pairs = [(k.arg or "", k.value) for k in node.keywords]
        pairs += [(params[i] if i < len(params) else "", a) for i, a in enumerate(node.args)]
        out += [
            (param, value)
            for param, value in pairs
            if (param.isupper() or any(w in param.lower() for w in ("block", "tile")))
            and not param.lower().startswith(("num", "n_"))  # a count of tiles sizes none
        ]
    return out


def tile_parameter(node: ast.AST, ctx: Context) -> str:
    """The kernel parameter a launch passes ``node`` for, when ``node`` is that tile-size
    argument itself (``BLOCK_N=BLOCK_M``: the ``BLOCK_M`` there is passed for ``BLOCK_N``)."""
    return next((param for param, value in _tile_arguments(ctx) if value is node), "")


def sizes_a_tile(node: ast.AST, ctx: Context) -> bool:
    """``node`` is part of a tile size: in the statement that computes one, or the value a
    launch passes for one.  An edit there that makes a tile larger (a cap dropped, min for
    max, another size's name) lets one tile hold a whole test and hides the fault it was to
    fix, so the error model proposes none there."""
    if ctx.tiles is None:  # read once per function: (the tile sizes' names, the nodes passed for them)
        ctx.tiles = (tile_sizes(ctx), {id(n) for _, v in _tile_arguments(ctx) for n in ast.walk(v)})
    names, passed = ctx.tiles
    target = _target(_statement(node, ctx))
    return id(node) in passed or target in names or _names_a_tile(target)


def _names_a_tile(name: str) -> bool:
    """``block_c``, ``BLOCK_K``, ``tile_rows``: a size computed where no launch is in sight
    (a helper that returns the tile's shape) still sizes a tile."""
    return name.lower().startswith(("block", "tile"))


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
    ``stride_am``/``stride_ak``, ``pid_m``/``pid_n``), two short names of one case
    (``M``/``N``, ``Q``/``K``), or a tile's two axes (``rows``/``cols``)."""
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
        axes = {x, y} in ({"row", "col"}, {"rows", "cols"})  # a tile's two axes, by their words
        return axes or (len(x) <= 2 and len(y) <= 2 and x.isupper() == y.isupper())
    return x.isupper() == y.isupper()


def name_kind(name: str, names: Iterable = ()) -> str:
    """What a name stands for, from how it is spelled: stride, pointer, program, offsets,
    mask, size, or '' (anything else).  ``names``: the function's names (Q, K and V are
    attention's tensors only beside one another; K alone is GEMM's inner size)."""
    n = name.lower()
    if "stride" in n:
        return "stride"
    attention = {"Q", "V"} <= set(names)
    if n.endswith(("ptr", "ptrs")) or (attention and name in ("Q", "K", "V", "Out")):
        return "pointer"
    if "pid" in n or "program" in n:
        return "program"
    if n.startswith(("off", "idx", "cols", "rows")):
        return "offsets"
    if _is_masky(name):
        return "mask"
    if len(name) <= 2 or name.startswith(("BLOCK", "block", "n_", "num_")):
        return "size"
    return ""


def in_grid(node: ast.AST, ctx: Context) -> bool:
    """Inside a launch's grid: ``kernel[(...)]`` or a value assigned to a name ``grid``."""
    if "grid" in _target(_statement(node, ctx)).lower():
        return True
    return any(
        isinstance(p, ast.Subscript) and isinstance(ctx.parents.get(p), ast.Call) for p in ctx.up(node)
    )


# What using one name of a kind where another belongs does, and what exchanging two does.
ONE_FOR_ANOTHER = {
    "stride": "so that dimension is walked with the other dimension's step",
    "pointer": "so it reaches the other tensor's memory",
    "program": "so the program's tile is placed along the other axis",
    "offsets": "so that dimension of the tile takes the other dimension's offsets",
    "mask": "so that dimension is bounded by the other one's test",
    "size": "so it is right only when the two sizes are equal",
}
EXCHANGED = {
    "stride": "each dimension is walked with the other's step (the layout read as its transpose)",
    "pointer": "each operand is read from the other's memory",
    "program": "tile rows and tile columns are exchanged",
    "offsets": "rows take the column offsets and columns the row offsets",
    "mask": "rows are bounded by the column test and columns by the row test",
    "size": "each bound uses the other dimension's size, right only when the two are equal",
}


def name_sentence(wrong: str, right: str, names: Iterable = ()) -> str:
    effect = ONE_FOR_ANOTHER.get(name_kind(wrong, names), "")
    return f"uses `{wrong}` where `{right}` belongs" + (f", {effect}" if effect else "")


def exchanged_sentence(a: str, b: str, names: Iterable = ()) -> str:
    effect = EXCHANGED.get(name_kind(a, names), "")
    return f"`{a}` and `{b}` are exchanged" + (f": {effect}" if effect else "")


# -- the operators ------------------------------------------------------------------------

Operator = Callable[[Context], Iterator[Candidate]]


def _cand(ctx: Context, kind: str, node: ast.AST, text: str, says: str, prior: float, **kw) -> Candidate:
    parent = ctx.parents.get(node)
    if text.startswith("(") and isinstance(
        parent, (ast.Call, ast.keyword, ast.Assign, ast.AugAssign, ast.Return)
    ):
        try:
            if ast.dump(ast.parse(text[1:-1], mode="eval")) == ast.dump(ast.parse(text, mode="eval")):
                text = text[1:-1]  # an argument or a whole value needs no parentheses
        except SyntaxError:
            pass
    return Candidate(kind, (Edit(node, text, **kw),), node.lineno, says, prior, ctx.fn.name)  # type: ignore[attr-defined]


class _Swap(ast.NodeTransformer):
    def __init__(self, a: str, b: str):
        self.a, self.b = a, b

    def visit_Name(self, node: ast.Name) -> ast.AST:
        swap = {self.a: self.b, self.b: self.a}
        return ast.Name(id=swap.get(node.id, node.id), ctx=node.ctx)


def _reads(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _blocks(fn: ast.AST) -> list:
    """Every statement list of the function: bodies, and else branches that are not empty."""
    out = []
    for n in ast.walk(fn):
        for name in ("body", "orelse"):
            block = getattr(n, name, None)
            if isinstance(block, list) and block:
                out.append(block)
    return out


def _loops(ctx: Context) -> Iterator[ast.For]:
    for node in _walk(ctx):
        if isinstance(node, (ast.For, ast.While)):
            yield node  # type: ignore[misc]
