"""The error model's mistakes of names and values: names of one kind exchanged, padding,
exp and exp2, minimum for maximum, 16-bit types, early casts, missing masks, tl.where's
branches, start values.  Standard library only."""

from __future__ import annotations

import ast
import copy
import itertools
from typing import Iterator, Optional

from checks.repair.program import (  # the shared reading of a function
    LOG2E,
    NOT_NAMES,
    SIXTEEN_BITS,
    Candidate,
    Context,
    Edit,
    _blocks,
    _body,
    _call_name,
    _cand,
    _enclosing_call,
    _is_masky,
    _paren,
    _reads,
    _statement,
    _Swap,
    _target,
    _text,
    _walk,
    exchanged_sentence,
    in_grid,
    name_kind,
    name_sentence,
    same_kind,
    sizes_a_tile,
    tile_parameter,
)


def same_kind_name(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load) or node.id in NOT_NAMES:
            continue
        # another size's name for a tile size is no fix (a larger tile hides faults), except
        # the parameter's own name (any case) where a launch passes it: ``BLOCK_N=block_m`` -> ``block_n``
        only = tile_parameter(node, ctx).lower() if sizes_a_tile(node, ctx) else None
        for other in ctx.names:
            if same_kind(node.id, other) and only in (None, other.lower()):
                says = name_sentence(node.id, other, ctx.names)
                if name_kind(node.id, ctx.names) == "size" and in_grid(node, ctx):
                    says = (
                        f"the grid counts tiles with `{node.id}` where `{other}` belongs: it launches "
                        "the right number of programs only when the two sizes are equal; otherwise some "
                        "programs have no tile to compute, or some tiles no program"
                    )
                prior = 0.7 if name_kind(node.id, ctx.names) else 0.45
                yield _cand(ctx, "same-kind-name", node, other, says, prior)


def exchanged_arguments(ctx: Context) -> Iterator[Candidate]:
    """Two neighbouring arguments of a launch or a call passed in the other order, when they
    are of one kind: ``a.stride(1), a.stride(0)`` or ``stride_bk, stride_bn``."""
    for node in _walk(ctx):
        if not isinstance(node, ast.Call):
            continue
        for i, (a, b) in enumerate(zip(node.args, node.args[1:])):
            if not _one_kind(a, b):
                continue
            args = list(node.args)
            args[i], args[i + 1] = b, a
            new = copy.copy(node)
            new.args = args
            says = f"passes `{_text(a)}` and `{_text(b)}` in the other order"
            if "stride" in _text(a):
                says += ": each dimension gets the other's stride (the layout read as its transpose)"
            yield _cand(ctx, "exchanged-names", node, _text(new), says, 0.75)


def _one_kind(a: ast.AST, b: ast.AST) -> bool:
    """Two expressions of one kind: names of one kind, or the same call or subscript of one
    value with other constants (``x.stride(0)``, ``x.stride(1)``)."""
    if isinstance(a, ast.Name) and isinstance(b, ast.Name):
        return same_kind(a.id, b.id)
    if type(a) is not type(b) or not isinstance(a, (ast.Call, ast.Subscript)):
        return False
    strip = lambda n: ast.dump(_Consts().visit(copy.deepcopy(n)))
    return _text(a) != _text(b) and strip(a) == strip(b)


class _Consts(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Constant(value=0)


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
                says = exchanged_sentence(a, b, ctx.names)
                yield _cand(ctx, "exchanged-names", stmt.value, _paren(new), says, 0.75)
    for block in _blocks(ctx.fn):
        assigns = [s for s in block if _target(s) and isinstance(s, ast.Assign)]
        for s1, s2 in itertools.combinations(assigns, 2):
            a, b = _target(s1), _target(s2)
            if not same_kind(a, b) or _reads(s2.value, a) or _reads(s1.value, b):
                continue
            says = (
                f"`{a}` and `{b}` are computed the other way round: `{a}` gets the value that belongs "
                f"to `{b}`"
            )
            edits = (Edit(s1.value, _text(s2.value)), Edit(s2.value, _text(s1.value)))
            yield Candidate("exchanged-names", edits, s1.lineno, says, 0.75, ctx.fn.name)


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
    yield from _where_padding(ctx)
    for node in _walk(ctx):
        if _call_name(node) != "tl.load" or not any(k.arg == "mask" for k in node.keywords):  # type: ignore[attr-defined]
            continue
        other = next((k for k in node.keywords if k.arg == "other"), None)  # type: ignore[attr-defined]
        had = _pad_text(other.value if other else None)
        for fix, text in (("-inf", 'float("-inf")'), ("0.0", "0.0"), ("1.0", "1.0")):
            if fix == had:
                continue
            if fix == "-inf":
                says = (
                    f"masked-off lanes load as {had}, so they count in a maximum (a row whose values "
                    f"all lie below {had} takes it as its maximum) and each adds exp({had} - max) to a "
                    "sum of exponentials; padding with -inf keeps them out of both"
                )
            elif fix == "0.0":
                says = (
                    f"masked-off lanes load as {had}, so they add to the sums and products; padding "
                    "with 0 makes them add nothing"
                )
            else:
                says = f"masked-off lanes load as {had}, which the products they meet cannot absorb; 1.0 can"
            prior = 0.6 if fix == "1.0" else 0.8  # 0 and -inf are the usual paddings: tried first
            if other is not None:
                yield _cand(ctx, "padding", other.value, text, says, prior)
            else:
                new = copy.deepcopy(node)
                new.keywords.append(ast.keyword(arg="other", value=ast.parse(text, mode="eval").body))  # type: ignore[attr-defined]
                yield _cand(
                    ctx,
                    "padding",
                    node,
                    _text(new),
                    says.replace("load as none", "load as whatever memory holds"),
                    0.6,
                )


def exp_base(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        name = _call_name(node)
        if name not in ("tl.exp", "tl.exp2") or len(node.args) != 1:  # type: ignore[attr-defined]
            continue
        arg = _text(node.args[0])  # type: ignore[attr-defined]
        if name == "tl.exp2":
            yield _cand(
                ctx,
                "exp-base",
                node,
                f"tl.exp2(({arg}) * {LOG2E})",
                f"takes exp2 of `{arg}`, a value in natural-log units, without the factor log2(e) "
                "= 1.4427, so each weight is 2^x instead of e^x",
                0.8,
            )
            yield _cand(
                ctx, "exp-base", node, f"tl.exp({arg})", f"takes exp2 of `{arg}` where e^x is meant", 0.6
            )
        else:
            yield _cand(
                ctx,
                "exp-base",
                node,
                f"tl.exp2({arg})",
                f"takes exp of `{arg}`, a value already scaled by log2(e) for exp2, so the scale "
                "is applied twice",
                0.6,
            )


MIN_MAX = {
    "tl.max": "tl.min",
    "tl.min": "tl.max",
    "tl.maximum": "tl.minimum",
    "tl.minimum": "tl.maximum",
    "tl.sum": "tl.max",
    "min": "max",  # Python's own, in a wrapper or a CPU workshop
    "max": "min",
    "torch.amax": "torch.amin",
    "torch.amin": "torch.amax",
}


def min_max(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        name = _call_name(node)
        if name in MIN_MAX and not sizes_a_tile(node, ctx):  # a tile made larger hides faults
            fix = MIN_MAX[name]
            new = copy.deepcopy(node)
            new.func = ast.parse(fix, mode="eval").body  # type: ignore[attr-defined]
            says = f"takes `{name}` where `{fix}` is meant"
            if name == "tl.sum":
                says = "sums the values where their maximum is meant"
            yield _cand(ctx, "min-max", node, _text(new), says, 0.6)


DTYPE_FIX = {"float16": ("float32",), "bfloat16": ("float32",), "float32": ("float16",), "int32": ("int64",)}


def _dot_accumulates(ctx: Context, name: str) -> bool:
    """``name`` goes to a ``tl.dot`` as its accumulator (``tl.dot(a, b, acc)`` or ``acc=acc``)."""
    for node in _walk(ctx):
        if isinstance(node, ast.Call) and _call_name(node) == "tl.dot":
            given = node.args[2:3] + [k.value for k in node.keywords if k.arg == "acc"]
            if any(isinstance(a, ast.Name) and a.id == name for a in given):
                return True
    return False


ALLOCATIONS = ("torch.empty", "torch.zeros", "torch.full", "torch.ones")


def _scratch_dtype(ctx: Context) -> Iterator[Candidate]:
    """A buffer allocated in the input's dtype (``dtype=x.dtype``) where what it holds, partial
    sums or running statistics, must stay float32."""
    for node in _walk(ctx):
        if _call_name(node) not in ALLOCATIONS:
            continue
        for k in node.keywords:  # type: ignore[attr-defined]
            if k.arg == "dtype" and isinstance(k.value, ast.Attribute) and k.value.attr == "dtype":
                t = _target(_statement(node, ctx)) or "the buffer"
                says = (
                    f"allocates `{t}` in `{_text(k.value)}`, the input's dtype, where what it holds "
                    "(partial sums, running statistics) must stay float32: in 16 bits each value is "
                    "rounded, and past 65,504 it is inf"
                )
                yield _cand(ctx, "dtype", k.value, "torch.float32", says, 0.55)


def dtype(ctx: Context) -> Iterator[Candidate]:
    yield from _scratch_dtype(ctx)
    for node in _walk(ctx):
        if not (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("tl", "torch")
        ):
            continue
        for fix in DTYPE_FIX.get(node.attr, ()):
            call = _enclosing_call(node, ctx)
            target = _target(_statement(node, ctx))
            if (
                call in ("tl.zeros", "tl.full")
                and node.attr in SIXTEEN_BITS
                and _dot_accumulates(ctx, target)
            ):
                says = (
                    f"`{target}` is created as {node.attr} and passed to tl.dot as its accumulator: "
                    f"tl.dot adds into it at its own result type, {fix} (it refuses a 16-bit "
                    f"accumulator); `{target}` must start as {fix}"
                )
                prior = 0.85
            elif call in ("tl.zeros", "tl.full") and node.attr in SIXTEEN_BITS:
                says = (
                    f"`{target or 'the accumulator'}` is created as {node.attr}, so every partial sum "
                    f"added to it rounds to 16 bits; it must start as {fix}"
                )
                prior = 0.85
            elif call == ".to" and node.attr in SIXTEEN_BITS:
                says = (
                    f"casts to {node.attr} here, so the steps after it work on values rounded to 16 "
                    f"bits; {fix} keeps them exact"
                )
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
            says = (
                f"converts `{_text(receiver)}` to {to} here, too early: what follows works on the "
                "rounded values"
            )
            yield _cand(ctx, "early-cast", node, _paren(receiver), says, 0.5)


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
        verb = "read" if name == "tl.load" else "write"
        for m in masks:
            extra = ", other=0.0" if name == "tl.load" else ""
            text = _text(node)[:-1] + f", mask={m}{extra})"
            says = f"the {name[3:]} has no mask, so its lanes past the end of the tensor {verb} out of bounds"
            yield _cand(ctx, "mask", node, text, says, 0.7)


def where_branches(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        if _call_name(node) == "tl.where" and len(node.args) == 3:  # type: ignore[attr-defined]
            c, a, b = node.args  # type: ignore[attr-defined]
            says = (
                f"the two results of `tl.where({_text(c)}, ...)` are exchanged: the lanes where the "
                f"test holds get `{_text(b)}`'s value"
            )
            yield _cand(
                ctx, "where-branches", node, f"tl.where({_text(c)}, {_text(b)}, {_text(a)})", says, 0.6
            )


def broadcast_axis(ctx: Context) -> Iterator[Candidate]:
    """``dot[None, :]`` for ``dot[:, None]`` (and back): a per-row value laid out as a row."""
    for node in _walk(ctx):
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple)):
            continue
        parts = node.slice.elts
        if (
            len(parts) != 2
            or not all(_is_none(p) or _is_whole(p) for p in parts)
            or _is_none(parts[0]) == _is_none(parts[1])
        ):
            continue
        x = _text(node.value)
        as_row = _is_none(parts[0])  # x[None, :]: one value per column
        fixed, written = (f"{x}[:, None]", f"{x}[None, :]") if as_row else (f"{x}[None, :]", f"{x}[:, None]")
        laid, each = (
            ("row, one value per column", "row") if as_row else ("column, one value per row", "column")
        )
        says = (
            f"`{written}` lays `{x}` out as a {laid}, where it holds one value per {each}: "
            f"`{fixed}` gives each {each} its own value"
        )
        yield _cand(ctx, "broadcast-axis", node, fixed, says, 0.8)


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_whole(node: ast.AST) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and node.step is None


def _where_padding(ctx: Context) -> Iterator[Candidate]:
    """``tl.where(ok, s, 0.0)`` where the lanes masked off must be -inf (and back)."""
    for node in _walk(ctx):
        if _call_name(node) != "tl.where" or len(node.args) != 3:  # type: ignore[attr-defined]
            continue
        pad, cond = node.args[2], _text(node.args[0])  # type: ignore[attr-defined]
        had = _pad_text(pad)
        if had == "0.0":
            says = (
                f"the lanes `{cond}` leaves out take 0.0, so they count in a maximum and each adds "
                "exp(0 - max) to a sum; -inf makes them count nowhere"
            )
            yield _cand(ctx, "padding", pad, 'float("-inf")', says, 0.8)
        elif had == "-inf":
            says = f"the lanes `{cond}` leaves out take -inf, where they must add nothing (0.0)"
            yield _cand(ctx, "padding", pad, "0.0", says, 0.6)


def start_value(ctx: Context) -> Iterator[Candidate]:
    for node in _walk(ctx):
        name = _call_name(node)
        t = _target(_statement(node, ctx)) or "the running value"
        if name == "tl.zeros" and node.args:  # type: ignore[attr-defined]
            assert isinstance(node, ast.Call)
            rest = ", ".join(_text(a) for a in node.args[1:]) + "".join(
                f", {_text(k)}" for k in node.keywords
            )
            text = f'tl.full({_text(node.args[0])}, float("-inf"){", " + rest.lstrip(", ") if rest else ""})'
            says = (
                f"`{t}` starts at 0 where it must start at -inf: while every value seen is below 0, "
                "the running maximum stays 0"
            )
            yield _cand(ctx, "start-value", node, text, says, 0.9)
        elif name == "tl.full" and len(node.args) >= 2 and _pad_text(node.args[1]) == "0.0":  # type: ignore[attr-defined]
            says = (
                f"`{t}` starts at 0 where it must start at -inf: while every value seen is below 0, "
                "the running maximum stays 0"
            )
            yield _cand(ctx, "start-value", node.args[1], 'float("-inf")', says, 0.9)  # type: ignore[attr-defined]
        elif name == "tl.full" and len(node.args) >= 2 and _pad_text(node.args[1]) == "-inf":  # type: ignore[attr-defined]
            new = copy.deepcopy(node)
            new.args[1] = ast.Constant(0.0)  # type: ignore[attr-defined]
            says = f"`{t}` starts at -inf where it must start at 0"
            yield _cand(ctx, "start-value", node, _text(new), says, 0.5)


def other_value(ctx: Context) -> Iterator[Candidate]:
    """A value the kernel computed used where another value it computed before belongs
    (``1.0 / row_max`` for ``1.0 / denominator``): names without a kind of their own
    (no pointer, stride, offsets, mask, program id or size), bound in the kernel before
    the line that reads them."""
    if not ctx.site.kernel:
        return
    bound: dict = {}  # value name -> the first line that binds it
    for stmt in _body(ctx.fn):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name) and not name_kind(t.id, ctx.names):
                        bound.setdefault(t.id, node.lineno)
    for node in _walk(ctx):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in bound):
            continue
        for other, line in bound.items():
            if other != node.id and line < node.lineno and not same_kind(node.id, other):
                says = f"uses `{node.id}` where the value `{other}` belongs"
                yield _cand(ctx, "other-value", node, other, says, 0.25)
