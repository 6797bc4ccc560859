"""The learner's timed saves, kept per workshop, and how a new timing compares with them.

Every benchmark of a saved file is one *save*: when it was timed, the file's content hash,
and its timed rows reduced to what a comparison needs (the row key -- op, shape, dtype,
variant, role, timing mode -- the median and its noise: the 95 % interval of the median,
``median_low_us``/``median_high_us``, where the row has one, else the p20/p80 spread).
The saves live in ``<state folder>/history/<workshop>.json``, written atomically, the last
:data:`KEEP` of them.  A save of the same content as the previous one replaces it.  A
file that cannot be read is set aside as ``*.corrupt`` and the history starts afresh.

:func:`compare` tells a row's change against the previous save that timed the same row
and against the learner's best for it, and whether each change is beyond the noise.

Standard library only (the app and the command line both use it).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from checks.json_files import write_json_atomic

SCHEMA, VERSION = "kernel-course/benchmark-history", 1
KEEP = 50
KEY_FIELDS = ("op", "shape", "dtype", "variant", "role", "timing")
INTERVAL = ("median_low_us", "median_high_us")
SPREAD = ("p20_us", "p80_us")
NOT_CANDIDATES = ("baseline", "peer")
SPARKS = "▁▂▃▄▅▆▇█"

RowKey = tuple


@dataclass(frozen=True)
class Save:
    """One timed save: ``rows`` are reduced rows (see :func:`reduce_row`); ``passed``:
    whether the checks of that content passed (the last run of it that says; a history
    written before this was kept has none, and only passing saves were timed then)."""

    when: str
    content_hash: str
    rows: list = field(default_factory=list)
    passed: bool = True

    def to_dict(self) -> dict:
        return {
            "when": self.when,
            "content_hash": self.content_hash,
            "passed": self.passed,
            "rows": [dict(r) for r in self.rows],
        }


@dataclass(frozen=True)
class Delta:
    """A row's change against one earlier timing of the same row key."""

    then_us: float
    ratio: float  # now / then - 1: negative is faster
    beyond_noise: Optional[bool]  # None: neither intervals nor spreads to judge by
    when: str
    content_hash: str


@dataclass(frozen=True)
class Change:
    """A row against the previous save that timed it (``last``) and the learner's best
    (``best``); either is None when no earlier save timed the row."""

    key: RowKey
    now_us: float
    last: Optional[Delta]
    best: Optional[Delta]


# --- rows ---


def _num(v: object) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def timing_mode(row: dict) -> Optional[str]:
    """What the row's median measures: its own ``timing`` field, else graph replay when
    it has a device time, else CUDA events when it has only a per-call time."""
    if isinstance(row.get("timing"), str):
        return row["timing"]
    if _num(row.get("device_us")) is not None:
        return "graph"
    if _num(row.get("per_call_us")) is not None:
        return "events"
    return None


def row_key(row: dict) -> RowKey:
    """The fields that make two rows the same measurement of the same kernel."""
    return tuple(row.get(k) for k in KEY_FIELDS[:-1]) + (timing_mode(row),)


def is_timed(row: dict) -> bool:
    """A row that ran and was timed (a failed or TODO row is out of every comparison)."""
    median = _num(row.get("median_us"))
    return row.get("status", "ok") in (None, "ok") and median is not None and median > 0


def is_candidate(row: dict) -> bool:
    """The learner's own kernel (not the PyTorch baseline or a peer)."""
    return row.get("role") not in NOT_CANDIDATES


def reduce_row(row: dict) -> dict:
    """The row key, the median, and the interval or spread it has (both numbers or neither)."""
    out = {k: v for k, v in zip(KEY_FIELDS, row_key(row))}
    out["median_us"] = _num(row.get("median_us"))
    for fields in (INTERVAL, SPREAD):
        pair = _pair(row, fields)
        if pair is not None:
            out.update(zip(fields, pair))
    return out


# --- the store ---


def history_path(state_dir: Path, workshop_id: str) -> Path:
    return Path(state_dir) / "history" / f"{workshop_id}.json"


def _set_aside(path: Path) -> Optional[Path]:
    """Move an unreadable history to ``<name>.<time>.corrupt`` (never over an earlier one)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.stem}.{stamp}.corrupt")
    n = 2
    while aside.exists():
        aside = path.with_name(f"{path.stem}.{stamp}-{n}.corrupt")
        n += 1
    try:
        os.replace(path, aside)
    except OSError:
        return None
    return aside


def _parse(data: object) -> list:
    """The saves of a history file's JSON; ValueError when it is not one."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("saves"), list):
        raise ValueError("not a benchmark history")
    saves = []
    for s in data["saves"]:
        if not (
            isinstance(s, dict)
            and isinstance(s.get("when"), str)
            and isinstance(s.get("content_hash"), str)
            and isinstance(s.get("rows"), list)
            and all(isinstance(r, dict) and _num(r.get("median_us")) is not None for r in s["rows"])
            and isinstance(s.get("passed", True), bool)
        ):
            raise ValueError("a save is malformed")
        saves.append(Save(s["when"], s["content_hash"], [dict(r) for r in s["rows"]], s.get("passed", True)))
    return saves


def load(state_dir: Path, workshop_id: str) -> list:
    """The workshop's saves, oldest first; [] when there are none.  An unreadable file is
    set aside as ``*.corrupt`` (the next save starts a new history)."""
    path = history_path(state_dir, workshop_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError:
        return []
    try:
        return _parse(json.loads(text))
    except (ValueError, UnicodeDecodeError):
        _set_aside(path)
        return []


def record_save(
    state_dir: Path,
    workshop_id: str,
    content_hash: str,
    rows: list,
    when: Optional[str] = None,
    *,
    passed: bool = True,
) -> Path:
    """Add one timed save (its timed rows, reduced) to the workshop's history and return
    the history file; ``passed``: whether the checks of this content passed (a save that
    did not is compared with, never a best).  The same content as the previous save
    replaces that save; only the last KEEP saves are kept; a benchmark with no timed row
    adds nothing.  Two writers at once keep the later one's file (the history is a
    nicety, never the learner's work)."""
    path = history_path(state_dir, workshop_id)
    reduced = [reduce_row(r) for r in rows if isinstance(r, dict) and is_timed(r)]
    if not reduced:
        return path
    saves = load(state_dir, workshop_id)
    save = Save(when or time.strftime("%Y-%m-%dT%H:%M:%S%z"), content_hash, reduced, bool(passed))
    if saves and saves[-1].content_hash == content_hash:
        saves[-1] = save
    else:
        saves.append(save)
    return _write(path, workshop_id, saves)


def _write(path: Path, workshop_id: str, saves: list) -> Path:
    data = {
        "schema": SCHEMA,
        "version": VERSION,
        "workshop": workshop_id,
        "saves": [s.to_dict() for s in saves[-KEEP:]],
    }
    return write_json_atomic(path, data)


def record_checks(state_dir: Path, workshop_id: str, content_hash: str, passed: bool) -> list:
    """A check run of ``content_hash`` ended: its saves now say whether their checks
    passed (a content timed when its checks passed and failing them later, after the
    checks grew or on another machine, stops being a best).  Returns the saves; the file
    is rewritten only when a save changed."""
    saves = load(state_dir, workshop_id)
    if not any(s.content_hash == content_hash and s.passed != passed for s in saves):
        return saves
    saves = [
        Save(s.when, s.content_hash, s.rows, bool(passed)) if s.content_hash == content_hash else s
        for s in saves
    ]
    _write(history_path(state_dir, workshop_id), workshop_id, saves)
    return saves


def earlier(saves: list, content_hash: str) -> list:
    """The saves before the latest one of ``content_hash`` (all of them when there is none):
    what a benchmark of that content is compared with."""
    for i in range(len(saves) - 1, -1, -1):
        if saves[i].content_hash == content_hash:
            return saves[:i]
    return list(saves)


# --- comparing ---


def _pair(row: dict, fields: tuple) -> Optional[tuple]:
    lo, hi = (_num(row.get(k)) for k in fields)
    return None if lo is None or hi is None else (lo, hi)


def beyond_noise(a: dict, b: dict) -> Optional[bool]:
    """Whether two timings of a row differ beyond their noise: their 95 % intervals of the
    median do not overlap; without intervals on both, the medians differ by more than the
    combined spread (half of each one's p20..p80 width, added).  None: nothing to judge by."""
    ia, ib = _pair(a, INTERVAL), _pair(b, INTERVAL)
    if ia is not None and ib is not None:
        return ia[1] < ib[0] or ib[1] < ia[0]
    sa, sb = _pair(a, SPREAD), _pair(b, SPREAD)
    ma, mb = _num(a.get("median_us")), _num(b.get("median_us"))
    if sa is None or sb is None or ma is None or mb is None:
        return None
    return abs(ma - mb) > (sa[1] - sa[0]) / 2 + (sb[1] - sb[0]) / 2


def _delta(row: dict, then: dict, save: Save) -> Delta:
    now, before = float(row["median_us"]), float(then["median_us"])
    return Delta(before, now / before - 1.0, beyond_noise(row, then), save.when, save.content_hash)


def compare(row: dict, history: list) -> Change:
    """``row`` (a benchmark row, whole or reduced) against the earlier saves ``history``
    (oldest first, without the save ``row`` belongs to; see :func:`earlier`): the change
    against the latest save that timed the same row key, and against the fastest one whose
    checks passed (a wrong kernel's time is never the best)."""
    key, mine = row_key(row), reduce_row(row)
    found = [(s, r) for s in history for r in s.rows if row_key(r) == key and _num(r.get("median_us"))]
    now = mine["median_us"]
    if not found or now is None:
        return Change(key, now if now is not None else math.nan, None, None)
    last_save, last_row = found[-1]
    right = [(s, r) for s, r in found if s.passed]
    if not right:
        return Change(key, now, _delta(mine, last_row, last_save), None)
    best_save, best_row = min(right, key=lambda f: float(f[1]["median_us"]))
    return Change(key, now, _delta(mine, last_row, last_save), _delta(mine, best_row, best_save))


def fmt_delta(delta: Optional[Delta], missing: str = "—", short: bool = False) -> str:
    """``-12 % (beyond noise)``, ``+1 % (noise)``, ``+3 % (noise unknown)``; ``short``:
    ``-12 %``, ``+1 % noise``, ``+3 % ?``.  ``missing`` when there is nothing to compare."""
    if delta is None:
        return missing
    pct = delta.ratio * 100
    number = "±0 %" if round(pct) == 0 else f"{pct:+.0f} %"
    if short:
        return number + {True: "", False: " noise", None: " ?"}[delta.beyond_noise]
    noise = {True: "beyond noise", False: "noise", None: "noise unknown"}[delta.beyond_noise]
    return f"{number} ({noise})"


# --- the main variant's course over the saves ---


def _size(row: dict) -> tuple:
    params = row.get("params")
    product = 1.0
    for v in params.values() if isinstance(params, dict) else ():
        x = _num(v)
        product *= x if x is not None and x > 0 else 1.0
    return tuple(_num(row.get(k)) or 0.0 for k in ("flops", "bytes")) + (product,)


def main_case(rows: list) -> Optional[tuple]:
    """(shape, dtype) of the lesson's main measurement: the largest shape the spec marks
    "roofline" (else the largest shape), by work then by its parameters, in the first
    dtype timed there; None without a timed candidate row."""
    mine = [r for r in rows if isinstance(r, dict) and is_candidate(r) and is_timed(r)]
    if not mine:
        return None
    marked = [r for r in mine if r.get("shape_role") == "roofline"] or mine
    top = max(marked, key=_size)  # the first of equals: the spec's order
    shape = top.get("shape")
    dtype = next(r.get("dtype") for r in marked if r.get("shape") == shape)
    return shape, dtype


def series(saves: list, case: tuple) -> list:
    """[(save, µs)]: the fastest candidate row at ``case`` (shape, dtype) in each save that
    timed one, oldest first."""
    out = []
    for s in saves:
        times = [
            float(r["median_us"])
            for r in s.rows
            if is_candidate(r) and (r.get("shape"), r.get("dtype")) == tuple(case)
        ]
        if times:
            out.append((s, min(times)))
    return out


def sparkline(values: list) -> str:
    """One block character per value, taller for slower (the lowest value is ▁)."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    if hi == lo:
        return SPARKS[0] * len(values)
    top = len(SPARKS) - 1
    return "".join(SPARKS[int(round((v - lo) / (hi - lo) * top))] for v in values)


def chart_line(saves: list, case: Optional[tuple], width: int = 80) -> str:
    """One line, at most ``width`` characters: the fastest candidate's time at the main
    case over the last saves that fit, as a sparkline with the first and last times;
    "" with fewer than two saves to draw."""
    if case is None:
        return ""
    points = series(saves, case)
    if len(points) < 2:
        return ""
    label = f"yours at {' '.join(str(x) for x in case if x)}"
    for n in range(len(points), 1, -1):
        shown = [t for _, t in points[-n:]]
        line = f"{label}, last {n} saves: {sparkline(shown)} {shown[0]:,.1f} → {shown[-1]:,.1f} µs"
        if len(line) <= width:
            return line
    shown = [t for _, t in points[-2:]]
    return f"{sparkline(shown)} {shown[0]:,.1f} → {shown[-1]:,.1f} µs"[:width]
