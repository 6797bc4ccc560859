"""A failing check that no classic mistake explains: what relation holds instead.

:func:`relation_for` takes the check's recent contract calls (checks.judging.mistakes.Recorder),
finds the most recent one whose result the right computation does not match, and relates
the two with checks.judging.relations.  A workshop's mistakes module may declare

* ``quantities(call)``: the named quantities of the problem on that call (a list of
  checks.judging.relations.Quantity), so a factor that equals one is named;
* ``SOFTMAX_FUNCTIONS``: the contract functions whose result's rows must sum to 1;
* ``trivially_right_rows(call)``: how many first rows almost any mistake leaves right
  (causal attention's row 0), so "only the first rows are right" is not said of them.

:func:`annotate_relation` puts the relation on the record (``details["relation"]``).
Standard library at import time (the CPU workshop relates plain lists).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from checks.judging import relations, relations_plain
from checks.judging.mistakes import Call, oracles_of

# A failure of wrong values carries one of these facts (checks.judging.tensors.mismatch_report,
# the CPU workshop's list comparison): only then is a relation looked for.
NUMERIC_FACTS = ("mismatched", "wrong_probabilities")
TOLERANCE_SCALE = 2.0  # a relation's values are recomputed in float64: allow a little more than the check


def _tolerance(result: Any) -> tuple:
    dtype = getattr(result, "dtype", None)
    if dtype is None:
        return relations.ATOL, relations.RTOL
    from checks.judging.tensors import TOLERANCES, tolerance

    if dtype not in TOLERANCES:
        return relations.ATOL, relations.RTOL
    tol = tolerance(dtype, TOLERANCE_SCALE)
    return tol["atol"], tol["rtol"]


def relation_for(
    workshop_id: str, calls: Iterable[Call], tiles: Sequence[int] = ()
) -> Optional[relations.Relation]:
    """The relation between the most recent wrong result among ``calls`` and the right
    one (None: no call is known wrong, or no relation holds).  Never raises."""
    try:
        module = oracles_of(workshop_id)
    except Exception:  # noqa: BLE001 - no oracles (e.g. torch missing): nothing to relate
        return None
    if module is None:
        return None
    for call in reversed(list(calls)):
        try:
            right = module.right(call)
            if right is None or module.agrees(call, right):
                continue
            softmax = call.function in getattr(module, "SOFTMAX_FUNCTIONS", ())
            quantities = module.quantities(call) if hasattr(module, "quantities") else ()
            if isinstance(right, list):
                return relations_plain.relate_lists(
                    call.result, right, atol=1e-9, rtol=1e-6, sums_to_one=softmax, quantities=quantities
                )
            if isinstance(right, (tuple, int, float)):
                return None  # a state or a count: no tensor relation
            swapped = read_with_swapped_strides(module, call)
            if swapped is not None:
                return swapped
            atol, rtol = _tolerance(call.result)
            trivial = module.trivially_right_rows(call) if hasattr(module, "trivially_right_rows") else 0
            return _with_poisoned_gaps(
                call,
                relations.relate(
                    call.result,
                    right,
                    atol=atol,
                    rtol=rtol,
                    quantities=quantities,
                    tiles=tiles,
                    softmax=softmax,
                    trivially_right=trivial,
                ),
            )
        except Exception:  # noqa: BLE001 - a relation is extra evidence; a failure to find one says nothing
            return None
    return None


def _swapped_view(t: Any) -> Any:
    """``t`` read with its last two strides exchanged (same storage and offset), or None
    when that is no different or reaches past the storage."""
    if not hasattr(t, "untyped_storage") or t.dim() < 2 or t.numel() == 0:
        return None
    shape, strides = tuple(t.shape), list(t.stride())
    if shape[-1] < 2 or shape[-2] < 2 or strides[-1] == strides[-2]:
        return None
    strides[-1], strides[-2] = strides[-2], strides[-1]
    last = t.storage_offset() + sum((n - 1) * s for n, s in zip(shape, strides))
    if min(strides) < 0 or last >= t.untyped_storage().nbytes() // t.element_size():
        return None
    return t.as_strided(shape, strides, t.storage_offset())


def read_with_swapped_strides(module: Any, call: Call) -> Optional[relations.Relation]:
    """When the learner's result is the right answer for one input read with its last two
    strides exchanged (row and column, or token and feature), say so: the kernel takes
    that tensor's strides in the other order."""
    if not hasattr(call.result, "dtype"):
        return None
    names = list(call.names) + [f"argument {i + 1}" for i in range(len(call.names), len(call.args))]
    places = [(i, names[i], a) for i, a in enumerate(call.args)] + [(k, k, a) for k, a in call.kwargs.items()]
    for where, name, value in places:
        view = _swapped_view(value)
        if view is None:
            continue
        args, kwargs = list(call.args), dict(call.kwargs)
        if isinstance(where, int):
            args[where] = view
        else:
            kwargs[where] = view
        other = Call(call.function, tuple(args), kwargs, call.result, call.names)
        expected = module.right(other)
        if expected is None or isinstance(expected, (list, tuple, int, float)):
            continue
        if not module.agrees(other, expected):
            continue
        s = tuple(value.stride())
        return relations.Relation(
            "strides-swapped",
            f"Your result is the right answer for {name} read with its last two strides exchanged "
            f"({s[-1]} where {s[-2]} belongs, and {s[-2]} where {s[-1]} belongs): the kernel takes "
            f"{name}'s row and column strides in the other order; pass them in the order the kernel "
            f"declares them, each multiplying its own index.",
            {"argument": name, "strides": list(s)},
        )
    return None


def _with_poisoned_gaps(call: Call, relation: Optional[relations.Relation]) -> Optional[relations.Relation]:
    """A NaN where the right value is finite, on a call given a view whose buffer holds NaN
    around and between its elements (as the layout checks build them): say that a load at
    a wrong address reads exactly that."""
    if relation is None or relation.id != "not-finite":
        return relation
    values = list(call.args) + list(call.kwargs.values())
    parked = [
        name
        for name, t in zip(call.names or [f"argument {i}" for i in range(len(values))], values)
        if _view_in_nan(t)
    ]
    if not parked:
        return relation
    sentence = (
        f"{relation.sentence} Here {' and '.join(parked)} {'is a view' if len(parked) == 1 else 'are views'} "
        f"inside a buffer of NaN: a load at an address outside the view (another tensor's strides, "
        f"a stride of 1 assumed, a missing offset) reads NaN."
    )
    return relations.Relation(relation.id, sentence, relation.evidence)


def _view_in_nan(t: Any) -> bool:
    """A non-contiguous tensor, finite itself, whose storage holds NaN."""
    try:
        if not hasattr(t, "untyped_storage") or t.is_contiguous() or not t.dtype.is_floating_point:
            return False
        import torch

        storage = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())
        return bool(torch.isnan(storage).any()) and bool(torch.isfinite(t).all())
    except Exception:  # noqa: BLE001 - a hint, never a failure
        return False


def written_into_input(calls: list) -> Optional[relations.Relation]:
    """The last call returned one of its own inputs, written in place: the right answer is
    computed from the inputs after the call, so no relation to it means anything."""
    if not calls:
        return None
    call = calls[-1]
    result = call.result
    if not hasattr(result, "untyped_storage") or not result.numel():
        return None
    where = result.untyped_storage().data_ptr()
    named = list(zip(call.names, call.args)) if call.names else []
    named += [(f"argument {i + 1}", a) for i, a in enumerate(call.args[len(named) :])]
    named += list(call.kwargs.items())
    for name, value in named:
        if value is not result and not hasattr(value, "untyped_storage"):
            continue
        if value is result or (value.numel() and value.untyped_storage().data_ptr() == where):
            return relations.Relation(
                "written-into-input",
                f"Your result is the input {name} itself, written in place: the right answer is "
                f"computed from the inputs after your call, so these numbers compare with an "
                f"overwritten {name}; write the result to a fresh tensor.",
                {"input": name},
            )
    return None


def annotate_relation(record: Any, relation: relations.Relation) -> None:
    """The relation's sentence opens the failure's message (the numbers stay)."""
    record.message = f"{relation.sentence} — {record.message}" if record.message else relation.sentence
    record.details = {**record.details, "relation": relation.details()}


def launches_text(launches: list) -> str:
    """'softmax_kernel on grid (256,) = 256 programs (BLOCK=128)', one launch per kind
    counted once ('(3 launches)')."""
    said: list = []
    for launch in launches:
        grid = launch.get("grid")
        tiles = ", ".join(f"{k}={v}" for k, v in sorted((launch.get("tiles") or {}).items()))
        text = f"{launch.get('kernel')} on " + (
            f"grid {tuple(grid)} = {_count_programs(grid)}" if grid else "a grid that could not be read"
        )
        text += f" ({tiles})" if tiles else ""
        count = int(launch.get("count", 1))
        if said and said[-1][0] == text:
            said[-1][1] += count
        else:
            said.append([text, count])
    parts = [text + (f" ({n} launches)" if n > 1 else "") for text, n in said[:6]]
    return "; ".join(parts) + (f" and {len(said) - 6} more" if len(said) > 6 else "")


def _count_programs(grid: Sequence[int]) -> str:
    n = 1
    for g in grid:
        n *= int(g)
    return "1 program" if n == 1 else f"{n} programs"


def shapes_text(call: Optional[Call]) -> str:
    """'x (900, 64) float32, chunk_size 256': the call's arguments as a failure names them."""
    if call is None:
        return ""
    parts = []
    for i, value in enumerate(list(call.args) + list(call.kwargs.values())):
        if i >= len(call.args):
            name = list(call.kwargs)[i - len(call.args)]
        else:
            name = call.names[i] if i < len(call.names) else f"argument {i}"
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            strides = tuple(value.stride()) if hasattr(value, "stride") else ()
            parts.append(
                f"{name} {tuple(value.shape)} {str(value.dtype).replace('torch.', '')} strides {strides}"
            )
        elif isinstance(value, (int, float, bool)):
            parts.append(f"{name} = {value}")
    return ", ".join(parts[:6])


def explain(
    record: Any, workshop_id: str, calls: list, launches: list, attempted: Optional[Call] = None
) -> None:
    """Give a failing ``record`` what no classic mistake said: the relation its numbers
    hold to the right ones, and (for a wrong value or an access out of bounds) the
    learner's launches beside the call's shapes."""
    details = record.details if isinstance(record.details, dict) else {}
    verdict = details.get("verdict")
    numeric = any(key in details for key in NUMERIC_FACTS)  # not a refusal missed, an alias, ...
    if "mistake" not in details and verdict is None and numeric:
        tiles = sorted({v for launch in launches for v in (launch.get("tiles") or {}).values()})
        found = written_into_input(calls) or relation_for(workshop_id, calls, tiles)
        if found is not None:
            annotate_relation(record, found)
    details = record.details
    wrong_value = "mismatched" in details or "relation" in details or "mistake" in details
    if not launches or "launches" in details or not (wrong_value or verdict == "out-of-bounds"):
        return
    record.details = {**details, "launches": launches}
    # the call that made the access out of bounds never returned: the one begun last
    shapes = shapes_text(attempted if verdict == "out-of-bounds" else (calls[-1] if calls else None))
    record.message += f"\nYour launches: {launches_text(launches)}" + (f"; for {shapes}" if shapes else "")
