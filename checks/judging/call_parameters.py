"""What separates failing from passing checks, read over every number of their calls.

:mod:`checks.judging.properties` says a property (ragged, strided, causal, ...) that every
failing check has and no passing check has.  A mistake can hang on a number no property
names: a K loop that stops after one tile fails only where K is past one tile.  So the
engine also keeps the numbers of the same calls :func:`properties.observed` reads (the
failing call of a failing or erring check, every call of a passing check that compared
values): :func:`noted` puts them on the record as ``details["parameters"]``, a list with
one dict per call, name -> number.  A call's numbers are

* each tensor argument's sizes and (for a dimension of more than one element) strides,
  named by the function's parameter: ``a's rows``, ``a's column stride``, ``bias's
  length``, ``q.shape[2]``.  Where the workshop's reference answer documents the sizes
  with letters (``a: [M, K], b: [K, N]`` in its docstring), a size is named by its
  letter too, ``K (a's columns)``, and a letter already named (b's rows, K) is not
  repeated;
* the length of a list of numbers (the CPU workshop's values);
* each int, float or bool argument, defaults included, by its parameter name.

:func:`separating` then looks for one simple predicate that is true of every failing
check's call and false of every passing call that has its parameters (a call without
them is no evidence either way), simplest first:

0. exact facts about one number: a bool's value, a size that is 0, a size not a multiple
   of 16, 32, 64 or 128 (the smallest that holds; else 8, 4 or 2, the largest that
   holds), a stride of 0, a stride other than 1;
1. a threshold at a power of two between the passing and the failing values (``K >
   32``), or one value shared by every failing call that is a power of two;
2. a comparison of two sizes or int arguments (``K > N``, ``M != N``);
3. a threshold at an observed value, or one shared value, that is no power of two.

The sentence names the predicate, "Fails only where K (a's columns) > 32", and says what
to look at only where the predicate's kind implies it: the masks for a size not a
multiple of a tile, the strides for a stride, what reaches the tiles past the first for
a size above a power of two of 16 or more.

It is said only with enough evidence not to be a coincidence: at least two failing
checks, and at least two passing checks whose calls have the predicate's parameters.
One failing call is never enough: a single call's numbers always sit at some extreme of
the others', and some threshold would "separate" it.  Two names that hold the same
number in every call are one parameter (the first name is kept); where predicates on two
different parameters hold at the simplest tier that holds, the checks cannot tell which
one matters, and nothing is said.

A declared or observed property that separates wins: its sentence is written for its
case and says what to look at, and :func:`properties.separating` asks this module only
when no property separates.  Standard library only (tensors are read by duck typing).
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import operator
import re
from typing import Any, Iterable, NamedTuple, Optional

MIN_FAILING = 2  # failing checks, each with its call's numbers
MIN_PASSING = 2  # passing checks whose calls have the predicate's parameters
MAX_NUMBERS = 32  # names kept per call
TILES = (16, 32, 64, 128)  # "not a multiple of" these first, the smallest that holds
SMALL_BLOCKS = (8, 4, 2)  # then these, the largest that holds
MASKS = (
    "look at the last, partial tile: its masks, its padding value, and whether a program or a loop "
    "step reaches it at all"
)
STRIDES = "look at the strides each address uses: every tensor with its own"
PAST_ONE_TILE = (
    "look at what reaches the tiles past the first, the loop or the grid (its bound, the offsets "
    "each step advances, what one step carries to the next)"
)


# --- the numbers of a call ----------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def letters(workshop_id: str, function: str) -> dict:
    """``{"a": ("M", "K"), "b": ("K", "N"), "bias": ("N",)}``: the sizes the reference
    answer's docstring of ``function`` names by letters (``a: [M, K]``), else {}."""
    try:
        from workshops import catalog

        tree = ast.parse(catalog.get(workshop_id).solution.read_text(encoding="utf-8"))
    except Exception:  # noqa: BLE001 - no reference answer to read: sizes go by position
        return {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            doc = ast.get_docstring(node) or ""
            found = re.findall(r"\b(\w+): \[(\w+(?:, \w+)*)\]", doc)
            return {name: tuple(dims.split(", ")) for name, dims in found}
    return {}


def _arguments(call: Any, module: Any) -> list:
    """(parameter name, value) of ``call``, defaults included where the function's
    signature can be read."""
    args, kwargs = tuple(getattr(call, "args", ())), dict(getattr(call, "kwargs", {}))
    function = getattr(module, str(getattr(call, "function", "")), None) if module is not None else None
    if callable(function):
        try:
            bound = inspect.signature(inspect.unwrap(function)).bind(*args, **kwargs)
            bound.apply_defaults()
            return list(bound.arguments.items())
        except (TypeError, ValueError):
            pass
    names = tuple(getattr(call, "names", ()))
    positional = [(names[i] if i < len(names) else f"argument {i}", v) for i, v in enumerate(args)]
    return positional + list(kwargs.items())


def _subject(name: str) -> str:
    """``name`` as the subject of "is": "the number of x's columns", "K (a's columns)"."""
    return f"the number of {name}" if name.endswith(("'s columns", "'s rows")) else name


def _dimension(name: str, i: int, ndim: int) -> tuple:
    """(size name, stride name) of dimension ``i`` of an ``ndim``-D tensor ``name``."""
    if ndim == 1:
        return f"{name}'s length", f"{name}'s stride"
    if ndim == 2:
        return (
            (f"{name}'s rows", f"{name}'s row stride")
            if i == 0
            else (
                f"{name}'s columns",
                f"{name}'s column stride",
            )
        )
    return f"{name}.shape[{i}]", f"{name}.stride({i})"


def numbers_of(call: Any, workshop_id: str = "", module: Any = None) -> dict:
    """``{"M (a's rows)": 64, "K (a's columns)": 33, ..., "tile_m": 32}``: the numbers of
    one call (see the module's docstring)."""
    named = letters(workshop_id, str(getattr(call, "function", ""))) if workshop_id else {}
    found: dict = {}
    used: set = set()
    for name, value in _arguments(call, module):
        if isinstance(value, bool):
            found[name] = value
        elif isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
            found[name] = value
        elif isinstance(value, (list, tuple)) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
        ):
            found[f"{name}'s length"] = len(value)
        elif hasattr(value, "shape") and hasattr(value, "stride"):
            shape = tuple(int(n) for n in value.shape)
            strides = tuple(int(s) for s in value.stride()) if 0 not in shape else ()
            dims = named.get(name, ())
            for i, size in enumerate(shape):
                size_name, stride_name = _dimension(name, i, len(shape))
                letter = dims[i] if len(dims) == len(shape) else None
                if letter is not None and letter in used:
                    continue  # b's rows is K, already named by a's columns
                if letter is not None:
                    used.add(letter)
                found[f"{letter} ({size_name})" if letter else size_name] = size
            for i, stride in enumerate(strides):
                if shape[i] > 1:  # one element: its stride says nothing
                    found[_dimension(name, i, len(shape))[1]] = stride
    return dict(list(found.items())[:MAX_NUMBERS])


def parameters(calls: Iterable, workshop_id: str = "", module: Any = None) -> list:
    """One dict of numbers per call that has any (see :func:`numbers_of`)."""
    return [n for n in (numbers_of(c, workshop_id, module) for c in calls) if n]


def noted(details: dict, calls: Iterable, workshop_id: str, module: Any = None) -> dict:
    """``details`` with ``"parameters"``: the numbers of ``calls`` (unchanged when none).
    ``module``: the learner's module, for the defaults of the arguments not passed."""
    found = parameters(calls, workshop_id, getattr(module, "recorded_module", module))
    return {**details, "parameters": found} if found else details


# --- the predicate that separates ---------------------------------------------------------


class Predicate(NamedTuple):
    tier: int  # 0 simplest (see the module's docstring)
    names: tuple  # the parameters it reads: one, or two compared
    op: str  # "==", "!=", ">", "<", or "%" (not a multiple of value)
    value: Any  # the constant the one parameter is compared with (None for two)
    text: str  # "K (a's columns) > 32"
    hint: str = ""  # what to look at, or ""


COMPARE = {"==": operator.eq, "!=": operator.ne, ">": operator.gt, "<": operator.lt}


def _kind(name: str, values: list) -> str:
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "other"
    if "stride" in name:
        return "stride"
    if "'s " in name or ".shape[" in name:
        return "size"
    return "int" if all(isinstance(v, int) for v in values) else "float"


def _power_of_two(n: float) -> bool:
    return n >= 1 and float(n).is_integer() and int(n) & (int(n) - 1) == 0


def _shown(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else f"{n:g}"


def _one(name: str, kind: str, failing: list, passing: list) -> list:
    """The predicates on one parameter that its failing values suggest."""
    found: list = []
    if kind == "bool":
        if len(set(failing)) == 1:
            found.append(Predicate(0, (name,), "==", failing[0], f"{name} is {failing[0]}"))
        return found
    if kind == "stride":
        found.append(Predicate(0, (name,), "==", 0, f"{name} is 0", STRIDES))
        found.append(Predicate(0, (name,), "!=", 1, f"{name} is not 1", STRIDES))
        return found
    integral = kind in ("size", "int")
    if integral and all(v == 0 for v in failing):
        found.append(Predicate(0, (name,), "==", 0, f"{_subject(name)} is 0"))
    if integral:
        tiles = [c for c in TILES + SMALL_BLOCKS if all(v % c for v in failing)]
        tiles = [c for c in tiles if all(v % c == 0 for v in passing)]
        if tiles:
            text = f"{_subject(name)} is not a multiple of {tiles[0]}"
            found.append(Predicate(0, (name,), "%", tiles[0], text, MASKS))
    if not passing:
        return found
    low, high = max(passing), min(failing)
    if high > low:  # every failing value above every passing one
        twos = [2**e for e in range(0, 40) if low <= 2**e < high] if integral else []
        c = twos[0] if twos else low
        hint = PAST_ONE_TILE if kind == "size" and twos and c >= TILES[0] else ""
        found.append(Predicate(1 if twos else 3, (name,), ">", c, f"{name} > {_shown(c)}", hint))
    low, high = max(failing), min(passing)
    if low < high:  # every failing value below every passing one
        twos = [2**e for e in range(0, 40) if low < 2**e <= high] if integral else []
        c = twos[-1] if twos else high
        found.append(Predicate(1 if twos else 3, (name,), "<", c, f"{name} < {_shown(c)}"))
    if len(set(failing)) == 1 and failing[0] != 0 and failing[0] not in passing:
        c = failing[0]
        found.append(Predicate(1 if _power_of_two(c) else 3, (name,), "==", c, f"{name} is {_shown(c)}"))
    return found


def _pairs(names: list, kinds: dict) -> list:
    """``p > q`` and ``p != q`` for two sizes or int arguments (in the calls' order)."""
    sized = [n for n in names if kinds[n] in ("size", "int")]
    found = []
    for i, p in enumerate(sized):
        for q in sized[i + 1 :]:
            found.append(Predicate(2, (p, q), ">", None, f"{p} > {q}"))
            found.append(Predicate(2, (q, p), ">", None, f"{q} > {p}"))
            found.append(Predicate(2, (p, q), "!=", None, f"{p} != {q}"))
    return found


def _holds(predicate: Predicate, numbers: dict) -> bool:
    """Whether ``predicate`` holds of one call's ``numbers`` (False without its names)."""
    if not all(n in numbers for n in predicate.names):
        return False
    x = numbers[predicate.names[0]]
    y = numbers[predicate.names[1]] if len(predicate.names) > 1 else predicate.value
    if predicate.op == "%":
        return bool(x % y != 0)
    return bool(COMPARE[predicate.op](x, y))


def _numbers(record: Any) -> Optional[list]:
    details = record.details if isinstance(getattr(record, "details", None), dict) else {}
    found = details.get("parameters")
    if not isinstance(found, list) or not found or not all(isinstance(d, dict) for d in found):
        return None
    return found


def _aliases(calls: list, names: list) -> set:
    """Names that hold the same number as an earlier name in every call."""
    dropped: set = set()
    for i, p in enumerate(names):
        for q in names[:i]:
            if q not in dropped and all((p in d) == (q in d) and d.get(p) == d.get(q) for d in calls):
                dropped.add(p)
                break
    return dropped


def _decides(predicate: Predicate, failing: list, passing: list) -> bool:
    """True of every failing check's call, false of every passing call with its
    parameters, and such calls in at least MIN_PASSING passing checks."""
    if not all(_holds(predicate, d) for calls in failing for d in calls):
        return False
    witnesses = [calls for calls in passing if any(all(n in d for n in predicate.names) for d in calls)]
    if len(witnesses) < MIN_PASSING:
        return False
    return not any(_holds(predicate, d) for calls in witnesses for d in calls)


def separating(records: list) -> Optional[str]:
    """'Fails only where K (a's columns) > 32: look at ...', or None: the simplest predicate
    over the calls' numbers (``details["parameters"]``) true of every failing check and
    false of every passing one (rules in the module's docstring)."""
    failing_records = [r for r in records if str(r.status) in ("fail", "error")]
    failing = [_numbers(r) for r in failing_records]
    passing = [n for n in (_numbers(r) for r in records if str(r.status) == "pass") if n is not None]
    if len(failing) < MIN_FAILING or len(passing) < MIN_PASSING:
        return None
    every_failing = [f for f in failing if f is not None]
    if len(every_failing) < len(failing):
        return None  # a failing check without numbers: "only where" cannot be said
    failing_calls = [d for calls in every_failing for d in calls]
    passing_calls = [d for calls in passing for d in calls]
    every = failing_calls + passing_calls
    names = list(dict.fromkeys(n for d in every for n in d))
    names = [n for n in names if all(n in d for d in failing_calls)]
    dropped = _aliases(every, names)
    names = [n for n in names if n not in dropped]
    kinds = {n: _kind(n, [d[n] for d in every if n in d]) for n in names}
    names = [n for n in names if kinds[n] != "other"]
    candidates = []
    for n in names:
        seen_failing = [d[n] for d in failing_calls]
        seen_passing = [d[n] for d in passing_calls if n in d]
        candidates += _one(n, kinds[n], seen_failing, seen_passing)
    candidates += _pairs(names, kinds)
    held = [p for p in candidates if _decides(p, every_failing, passing)]
    if not held:
        return None
    best = min(p.tier for p in held)
    simplest = [p for p in held if p.tier == best]
    if len({frozenset(p.names) for p in simplest}) > 1:
        return None  # two parameters separate as simply: the checks cannot tell which
    chosen = simplest[0]
    return f"Fails only where {chosen.text}" + (f": {chosen.hint}." if chosen.hint else ".")
