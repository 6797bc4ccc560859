"""The error model's mistakes of which tensor: one tensor's strides in another's
addresses, a factor of a loaded tensor left out of a formula, two tensors passed to a
launch in the other order, an address without a term the file's other addresses have or
with one term unlike theirs, one tile's offsets bounded by another bound in one of its
masks.  Standard library only."""

from __future__ import annotations

import ast
import re
from typing import Iterator, Optional

from checks.repair.program import (  # the shared reading of a function
    Candidate,
    Context,
    Edit,
    _call_name,
    _cand,
    _paren,
    _reads,
    _statement,
    _target,
    _text,
    _walk,
    address_terms,
    name_kind,
)

# ``y_stride_row`` / ``stride_y_row``: (tensor, axis)
STRIDE = (
    re.compile(r"^(?P<t>\w+?)_stride_?(?P<axis>\w*)$"),
    re.compile(r"^stride_(?P<t>[a-z]+)_(?P<axis>\w+)$"),
    re.compile(r"^stride_(?P<t>[a-z])(?P<axis>[bhnmkdz])$"),  # stride_kn: k's stride along n
)
ROW_WORDS = ("row", "m", "0", "r")


def _stride_of(name: str) -> Optional[tuple]:
    for pattern in STRIDE:
        m = pattern.match(name)
        if m:
            return m.group("t").lower(), m.group("axis")
    return None


def _base_pointer(address: ast.AST, known: list) -> str:
    """The pointer an address is built on (``g_ptr`` in ``g_ptr + r * s + c``, ``V`` in
    attention's ``V + offs_n * stride_vn``), or ''."""
    names = [
        n.id
        for n in ast.walk(address)
        if isinstance(n, ast.Name) and ("ptr" in n.id.lower() or name_kind(n.id, known) == "pointer")
    ]
    return names[0] if len(set(names)) == 1 else ""


def _tensor_of(pointer: str) -> str:
    return re.sub(r"_?ptrs?$", "", pointer, flags=re.IGNORECASE).lower()


def _addresses(ctx: Context) -> Iterator[tuple]:
    """(node, address, pointer): a load's or a store's address built on one pointer, and an
    offsets assignment named for one (``g_offsets = ...`` beside ``g_ptr``)."""
    pointers = {_tensor_of(n): n for n in ctx.names if "ptr" in n.lower()}
    for node in _walk(ctx):
        if _call_name(node) in ("tl.load", "tl.store") and node.args:  # type: ignore[attr-defined]
            address = node.args[0]  # type: ignore[attr-defined]
            pointer = _base_pointer(address, ctx.names)
            if pointer:
                yield node, address, pointer
        elif isinstance(node, ast.Assign) and _target(node):
            head = re.match(r"^(\w+?)_(offs|offsets|off|addrs|addresses|idx)$", _target(node))
            if head and head.group(1) in pointers:
                yield node, node.value, pointers[head.group(1)]


def foreign_strides(ctx: Context) -> Iterator[Candidate]:
    """A load or store whose address is built on one tensor's pointer with another tensor's
    strides (``g_ptr + r * y_stride_row``): every such stride of the statement replaced by
    the pointer's own, or, for a fresh output with no strides of its own, the row stride by
    the row's length."""
    for node, address, pointer in _addresses(ctx):
        tensor = _tensor_of(pointer)
        if not tensor:
            continue
        foreign = [
            n
            for n in ast.walk(address)
            if isinstance(n, ast.Name) and (s := _stride_of(n.id)) and s[0] != tensor
        ]
        if not foreign:
            continue
        other = _stride_of(foreign[0].id)[0]  # type: ignore[index]
        own = {}
        for n in foreign:
            _, axis = _stride_of(n.id)  # type: ignore[misc]
            mine = next((c for c in ctx.names if _stride_of(c) == (tensor, axis)), None)
            if mine is None and axis.lower() in ROW_WORDS:
                mine = next((c for c in ("n_cols", "N", "n") if c in ctx.names), None)
            if mine is None:
                break
            own[n] = mine
        else:
            edits = tuple(Edit(n, own[n]) for n in foreign)
            used = ", ".join(f"`{name}`" for name in dict.fromkeys(n.id for n in foreign))
            if all(_stride_of(v) for v in own.values()):
                says = (
                    f"`{pointer}`'s addresses are built with `{other}`'s strides ({used}): each tensor "
                    "must be addressed with its own strides"
                )
            else:  # a fresh output: its rows are a row's length apart
                says = (
                    f"`{pointer}`'s addresses are built with `{other}`'s strides ({used}), but `{tensor}` "
                    f"is a fresh tensor of its own: its rows are `{own[foreign[0]]}` elements apart"
                )
            yield Candidate("foreign-strides", edits, node.lineno, says, 0.7, ctx.fn.name)


def _loaded(ctx: Context) -> list:
    """Names the function assigns from ``tl.load`` (a ``.to(...)`` after it included)."""
    out = []
    for stmt in _walk(ctx):
        if isinstance(stmt, ast.Assign) and _target(stmt):
            value = stmt.value
            while _call_name(value) == ".to" and isinstance(value, ast.Call):
                value = value.func.value  # type: ignore[attr-defined]
            if _call_name(value) == "tl.load" and _target(stmt) not in out:
                out.append(_target(stmt))
    return out


def missing_weight(ctx: Context) -> Iterator[Candidate]:
    """A formula that leaves out a loaded tensor's factor: ``tl.sum(g)`` for
    ``tl.sum(y * g)``, ``dx = g - dot`` for ``dx = y * (g - dot)``."""
    loaded = _loaded(ctx)
    if len(loaded) < 2:
        return
    for node in _walk(ctx):
        if _call_name(node) in ("tl.sum", "tl.cumsum") and node.args:  # type: ignore[attr-defined]
            operand = node.args[0]  # type: ignore[attr-defined]
            for w in loaded:
                if _reads(operand, w) or not any(_reads(operand, o) for o in loaded):
                    continue
                says = (
                    f"`{_text(node)}` sums `{_text(operand)}` alone where each term is weighted by `{w}`: "
                    f"the reduction runs over `{w} * {_paren(operand)}`"
                )
                yield _cand(ctx, "missing-weight", operand, f"{w} * {_paren(operand)}", says, 0.55)
        if isinstance(node, ast.Assign) and _target(node) and isinstance(node.value, ast.BinOp):
            stmt = _statement(node.value, ctx)
            if stmt is not node or _target(node) in loaded:
                continue
            for w in loaded:
                if _reads(node.value, w) or not any(_reads(node.value, o) for o in loaded):
                    continue
                says = (
                    f"`{_target(node)}` is missing the factor `{w}`: it is `{_text(node.value)}` where the "
                    f"formula multiplies that by `{w}`"
                )
                yield _cand(ctx, "missing-weight", node.value, f"{w} * ({_text(node.value)})", says, 0.5)


def _kernel_params(ctx: Context, call: ast.Call) -> list:
    """The parameters of the kernel a launch ``kernel[grid](...)`` calls, if it is in the file."""
    f = call.func
    if isinstance(f, ast.Subscript) and isinstance(f.value, ast.Name):
        return list(ctx.kernels.get(f.value.id, []))
    return []


def exchanged_tensors(ctx: Context) -> Iterator[Candidate]:
    """Two tensors passed to a launch in the other order: the kernel's parameters at their
    places are both pointers (``grad_output, y`` where the kernel takes ``y_ptr, g_ptr``)."""
    for node in _walk(ctx):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Subscript):
            continue
        params = _kernel_params(ctx, node)
        for i, (a, b) in enumerate(zip(node.args, node.args[1:])):
            if not (isinstance(a, ast.Name) and isinstance(b, ast.Name)) or i + 1 >= len(params):
                continue
            if "ptr" not in params[i].lower() or "ptr" not in params[i + 1].lower():
                continue
            says = (
                f"passes `{a.id}` and `{b.id}` in the other order: the kernel reads `{a.id}` as "
                f"`{params[i]}` and `{b.id}` as `{params[i + 1]}`"
            )
            edits = (Edit(a, b.id), Edit(b, a.id))
            yield Candidate("exchanged-tensors", edits, a.lineno, says, 0.7, ctx.fn.name)


def _whole_addresses(ctx: Context) -> Iterator[tuple]:
    """(node, its terms) of each whole address of a kernel (not a part of a longer sum)."""
    if not ctx.site.kernel:
        return
    for node in _walk(ctx):
        terms = address_terms(node)
        parent = ctx.parents.get(node)
        if terms and not (isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add)):
            yield node, terms


def missing_term(ctx: Context) -> Iterator[Candidate]:
    """An address without a term the file's other addresses have: ``x_ptr + cols`` where
    another address of the file is ``out_ptr + row * n_cols + cols`` (the row term left
    out: every program reads row 0), offered with this function's own names only."""
    bound = set(ctx.names)
    for node, terms in _whole_addresses(ctx):
        pointer, mine = terms[0].id, [_text(t) for t in terms[1:]]
        seen: set = set()
        for other_pointer, theirs in ctx.addresses:
            extra = [t for t in theirs if t not in mine]
            if not extra or not set(mine) <= set(theirs) or tuple(theirs) in seen:
                continue
            names = {
                n.id for t in extra for n in ast.walk(ast.parse(t, mode="eval")) if isinstance(n, ast.Name)
            }
            if not names <= bound:
                continue
            seen.add(tuple(theirs))
            shown = " + ".join(extra)
            yield _cand(
                ctx,
                "missing-term",
                node,
                " + ".join([pointer, *theirs]),
                f"the address `{_text(node)}` leaves out the term `{shown}` that your address "
                f"`{' + '.join([other_pointer, *theirs])}` has",
                0.45 if any(not t.isdigit() for t in extra) else 0.3,
            )


def _bounded(ctx: Context) -> dict:
    """The masks' tests ``offs < bound`` (or ``<=``) of this function, by the offsets'
    name: ``offs_k[None, :] < k_left`` -> {"offs_k": [(the bound's node, its text)]}."""
    out: dict = {}
    for node in _walk(ctx):
        if not (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Lt, ast.LtE))
        ):
            continue
        offsets = [n.id for n in ast.walk(node.left) if isinstance(n, ast.Name)]
        if len(offsets) == 1 and name_kind(offsets[0]) == "offsets":
            out.setdefault(offsets[0], []).append((node.comparators[0], _text(node.comparators[0])))
    return out


def _moves_in(loop: Optional[ast.AST], bound: ast.AST) -> bool:
    """``bound`` reads a name the loop assigns (its counter or a value of its body)."""
    if loop is None:
        return False
    assigned = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return any(isinstance(n, ast.Name) and n.id in assigned for n in ast.walk(bound))


def mask_bound(ctx: Context) -> Iterator[Candidate]:
    """One tile's offsets tested against another bound in one mask than in the others:
    ``offs_k[None, :] < K`` in a K loop whose other load tests ``offs_k[:, None] < k_left``."""
    if not ctx.site.kernel:
        return
    for offsets, tests in _bounded(ctx).items():
        for node, text in tests:
            loop = next((p for p in ctx.up(node) if isinstance(p, (ast.For, ast.While))), None)
            for other, other_node in {t: n for n, t in tests}.items():
                if other == text:
                    continue
                line = other_node.lineno
                if _moves_in(loop, other_node) and not _moves_in(loop, node):
                    says = (
                        f"bounds `{offsets}` by `{text}`, which stays the same on every pass of the "
                        f"loop, where line {line} bounds it by `{other}`, which moves with it: "
                        f"`{offsets}` counts from the current tile, so against `{text}` the last "
                        "tile's lanes past the end pass the mask"
                    )
                else:
                    says = (
                        f"bounds `{offsets}` by `{text}` where line {line} bounds the same offsets by "
                        f"`{other}`: one tile's lanes are let through here and stopped there"
                    )
                yield _cand(ctx, "mask-bound", node, other, says, 0.7)


def other_term(ctx: Context) -> Iterator[Candidate]:
    """An address of a pointer with one term unlike the file's other address of that pointer
    (``x_ptr + row * CHUNK + cols`` beside ``x_ptr + row * n_cols + cols``): the term of the
    other address, offered with this function's own names only."""
    bound = set(ctx.names)
    for node, terms in _whole_addresses(ctx):
        pointer, mine = terms[0].id, [_text(t) for t in terms[1:]]
        for other_pointer, theirs in ctx.addresses:
            if other_pointer != pointer or len(theirs) != len(mine):
                continue
            differ = [i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b]
            if len(differ) != 1:
                continue
            i = differ[0]
            names = {n.id for n in ast.walk(ast.parse(theirs[i], mode="eval")) if isinstance(n, ast.Name)}
            if not names <= bound:
                continue
            says = (
                f"the address `{_text(node)}` has the term `{mine[i]}` where your other address of "
                f"`{pointer}`, `{' + '.join([pointer, *theirs])}`, has `{theirs[i]}`: this one walks "
                f"`{pointer}` with another step"
            )
            yield _cand(ctx, "other-term", terms[i + 1], theirs[i], says, 0.5)
