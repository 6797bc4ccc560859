"""Verdicts of the speed targets on a run's rows.

The targets themselves live in each op's spec module (``checks/benchmark/shapes/<op>.py``):

* ``TARGETS``: dicts with ``shape``, ``dtype``, ``kind``, ``target`` and ``what``, and
  ``causal`` where an attention shape comes in both flavours.  kind ``"fraction"`` =
  the best candidate's fraction of the roofline floor (>= target); ``"vs_baseline"`` /
  ``"vs_peer"`` = the fastest baseline's / peer's time over the best candidate's
  (>= target); ``"causal_over_full"`` = best causal candidate over best full candidate
  (<= target).  Judged on device time (graph replay).
* ``REFERENCE_COURSE``: shape -> (PyTorch baseline us, best answer us) of
  triton-cuda-lab, the reference course, measured on the same H200 (graph timing, warm
  L2) at the op's default dtype (``DTYPES[0]``); ``REFERENCE_COURSE_CAUSAL`` picks the
  causal or full rows of an attention shape.  The best candidate must be no slower.
  ``REFERENCE_COURSE_CARD`` (default ``"H200"``) is the card those figures were measured
  on: on another card (the run's GPU name does not contain it) the target is not judged,
  and its row says which card measured it and which card ran (``met`` is None).
* ``EVENTS_PER_CALL_FACTOR`` (default 1.3): at each comparison shape, the best
  candidate's per-call time (events timing) within this factor of the baseline's.

A shape name in a target also matches "<name>-causal" / "<name>-full" rows (the causal
flag then selects among them).  Targets whose shape and dtype were not run are left
out, not reported as missed.  Pure Python: rows and definitions in, verdicts out.
"""

from __future__ import annotations

from typing import Optional

from checks.benchmark.statistics import causal_flag, finite

EVENTS_PER_CALL_FACTOR = 1.3
KINDS = ("fraction", "vs_baseline", "vs_peer", "causal_over_full")


def definitions(spec) -> dict:
    """The target definitions of one spec module, as plain data."""
    return {
        "targets": [dict(t) for t in getattr(spec, "TARGETS", [])],
        "reference_course": dict(getattr(spec, "REFERENCE_COURSE", {})),
        "reference_course_causal": getattr(spec, "REFERENCE_COURSE_CAUSAL", None),
        "reference_course_card": getattr(spec, "REFERENCE_COURSE_CARD", "H200"),
        "default_dtype": list(spec.DTYPES)[0],
        "events_factor": getattr(spec, "EVENTS_PER_CALL_FACTOR", EVENTS_PER_CALL_FACTOR),
    }


def _shape_matches(row: dict, shape: str) -> bool:
    name = row["shape"]
    return name == shape or (name.startswith(shape + "-") and causal_flag(row) is not None)


def _device_time(row: dict, timing: str) -> Optional[float]:
    return row.get("median_us") if timing in ("graph", "both") else None


def _per_call_time(row: dict, timing: str) -> Optional[float]:
    if timing == "both":
        return row.get("per_call_us")
    return row.get("per_call_us") or row.get("median_us") if timing == "events" else None


def _ok(rows, op, time_of, shape=None, dtype=None, role=None, causal=None) -> list:
    """(time, row) of the passing rows that match, with a time."""
    out = []
    for r in rows:
        if r["op"] != op or r["status"] != "ok":
            continue
        t = finite(time_of(r))
        if not t:
            continue
        if shape is not None and not _shape_matches(r, shape):
            continue
        if dtype is not None and r["dtype"] != dtype:
            continue
        if role is not None and r["role"] != role:
            continue
        if causal is not None and causal_flag(r) is not causal:
            continue
        out.append((t, r))
    return out


def _present(rows, op, shape, dtype) -> bool:
    """Was this op/shape/dtype measured at all (so a missing number is a miss)?"""
    return any(r["op"] == op and r["dtype"] == dtype and _shape_matches(r, shape) for r in rows)


def _best(pairs) -> Optional[float]:
    return min(t for t, _ in pairs) if pairs else None


def _verdict(op, what, target, measured, cmp, timing, shape, dtype, unit) -> dict:
    measured = finite(measured)
    met = measured is not None and (measured >= target if cmp == ">=" else measured <= target)
    t = {
        "op": op,
        "what": what,
        "target": target,
        "measured": measured,
        "met": bool(met),
        "comparison": cmp,
        "unit": unit,
        "timing": timing,
        "shape": shape,
        "dtype": dtype,
    }
    if measured is None:
        t["note"] = "not measured (no passing candidate or reference row)"
    return t


def _device_targets(rows: list, op: str, d: dict, timing: str, card: str = "") -> list:
    out = []
    time_of = lambda r: _device_time(r, timing)
    for t in d["targets"]:
        shape, dtype, causal = t["shape"], t["dtype"], t.get("causal")
        if t["kind"] not in KINDS:
            raise ValueError(f"{op}: unknown target kind {t['kind']!r}")
        if not _present(rows, op, shape, dtype):
            continue
        cands = _ok(rows, op, time_of, shape, dtype, "candidate", causal)
        kind, measured, unit, cmp = t["kind"], None, "x", ">="
        if kind == "fraction":
            unit = "fraction of roofline"
            measured = max((r["fraction_of_ceiling"] or 0 for _, r in cands), default=None)
        elif kind in ("vs_baseline", "vs_peer"):
            best, other = _best(cands), _best(_ok(rows, op, time_of, shape, dtype, kind[3:], causal))
            if best and other:
                measured = other / best
        else:  # causal_over_full
            cmp = "<="
            c = _best(_ok(rows, op, time_of, shape, dtype, "candidate", True))
            f = _best(_ok(rows, op, time_of, shape, dtype, "candidate", False))
            if c and f:
                measured = c / f
        out.append(_verdict(op, t["what"], t["target"], measured, cmp, "graph", shape, dtype, unit))
    dtype, causal = d["default_dtype"], d["reference_course_causal"]
    for shape, (their_base, their_best) in d["reference_course"].items():
        if not _present(rows, op, shape, dtype):
            continue
        pairs = _ok(rows, op, time_of, shape, dtype, "candidate", causal)
        best = _best(pairs)
        label = f"{shape} {dtype}{' causal' if causal else ''}"
        verdict = _verdict(
            op,
            f"{label}: best candidate no slower than triton-cuda-lab, the reference course "
            f"({their_best} us; its baseline {their_base} us)",
            their_best,
            best,
            "<=",
            "graph",
            shape,
            dtype,
            "us",
        )
        measured_on = d.get("reference_course_card", "H200")
        if card and measured_on.lower() not in card.lower():
            verdict["met"] = None  # a time measured on one card says nothing of another
            verdict["note"] = f"measured on an {measured_on}; this is an {card}: not judged here"
            out.append(verdict)
            continue
        out.append(_colder_note(verdict, pairs))
    return out


def _colder_note(verdict: dict, pairs: list) -> dict:
    """A missed time whose best row rotated through more than the L2 says so, with the
    same candidate's time on one input set (warm L2, as the reference course's harness
    keeps it): both ways, so the row says why it missed."""
    if verdict["met"] or not pairs:
        return verdict
    _, row = min(pairs, key=lambda p: p[0])
    one_set = finite(row.get("one_set_device_us"))
    if not row.get("colder_than_label") or one_set is None:
        return verdict
    ws, l2 = row.get("working_set_bytes") or 0, row.get("l2_bytes") or 0
    verdict["measured_one_set"] = one_set
    verdict["note"] = (
        f"its timed calls rotate through {ws / 2**20:.0f} MiB, more than the {l2 / 2**20:.0f} MiB L2: "
        f"colder than the reference course's harness; on one input set (warm L2) {one_set:.3g} us, "
        + ("within" if one_set <= verdict["target"] else "still past")
        + " the target"
    )
    return verdict


def _per_call_targets(rows: list, op: str, d: dict, timing: str) -> list:
    out, dtype, factor = [], d["default_dtype"], d["events_factor"]
    time_of = lambda r: _per_call_time(r, timing)
    comp = [r for r in rows if r["op"] == op and r["shape_role"] == "comparison" and r["dtype"] == dtype]
    for shape in dict.fromkeys(r["shape"] for r in comp):
        for causal in dict.fromkeys(causal_flag(r) for r in comp if r["shape"] == shape):
            best = _best(_ok(rows, op, time_of, shape, dtype, "candidate", causal))
            base = _best(_ok(rows, op, time_of, shape, dtype, "baseline", causal))
            ratio = best / base if (best and base) else None
            mode = "" if causal is None else ("causal" if causal else "full")
            label = f"{shape} {dtype}" + (f" {mode}" if mode and mode not in shape else "")
            out.append(
                _verdict(
                    op,
                    f"{label}: per-call time (events) within {factor}x of the PyTorch baseline",
                    factor,
                    ratio,
                    "<=",
                    "events",
                    shape,
                    dtype,
                    "x baseline time",
                )
            )
    return out


def evaluate_targets(rows: list, timing: str, defs: dict, card: str = "") -> list:
    """Verdicts on ``rows`` of a run with this timing ("graph", "events" or "both"), for
    every op in ``defs`` (op -> :func:`definitions`) that has rows.  ``card``: the GPU's
    name (a target measured on another card is not judged; '' judges every target)."""
    out = []
    ops = [op for op in defs if any(r["op"] == op for r in rows)]
    if timing in ("graph", "both"):
        for op in ops:
            out += _device_targets(rows, op, defs[op], timing, card)
    if timing in ("events", "both"):
        for op in ops:
            out += _per_call_targets(rows, op, defs[op], timing)
    return out
