"""A1 online normalization: the classic mistakes, each an oracle of the wrong computation
on plain Python floats.  Standard library only (the checks run under ``python -S``)."""

from __future__ import annotations

import math
from typing import Any, Optional

from checks.judging.mistakes import Call, Mistake
from checks.judging.relations import Quantity

SUMMARY = "The summary (m, l)"
MERGE = "Deriving the merge"
EMPTY_CHUNKS = "Empty chunks and merge trees"
STREAMING = "The streaming softmax"

EMPTY = (-math.inf, 0.0)
STATE_REL = 1e-12  # as the checks compare a state (m, l)
PROB_REL = 1e-9  # as the checks compare probabilities
MAX_VALUES = 100_000  # a longer list is not diagnosed


def _state(value: Any) -> Optional[tuple]:
    if not (isinstance(value, tuple) and len(value) == 2):
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return None
    return float(value[0]), float(value[1])


def _floats(values: Any) -> Optional[list]:
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        return None
    return out if len(out) <= MAX_VALUES else None


def _same(got: float, want: float, rel: float) -> bool:
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    if math.isinf(want) or math.isinf(got):
        return got == want
    return math.isclose(got, want, rel_tol=rel, abs_tol=1e-300)


def summarize(values: list) -> tuple:
    if not values:
        return EMPTY
    m = max(values)
    return m, math.fsum(math.exp(v - m) for v in values)


def merge(left: tuple, right: tuple) -> tuple:
    m = max(left[0], right[0])
    if m == -math.inf:
        return EMPTY
    return m, left[1] * math.exp(left[0] - m) + right[1] * math.exp(right[0] - m)


def softmax(values: list) -> list:
    m = max(values)
    e = [math.exp(v - m) for v in values]
    s = math.fsum(e)
    return [x / s for x in e]


def _merge_args(call: Call) -> Optional[tuple]:
    left, right_ = _state(call.argument(0, "left")), _state(call.argument(1, "right"))
    return None if left is None or right_ is None else (left, right_)


def _stream_args(call: Call) -> Optional[tuple]:
    values = _floats(call.argument(0, "values"))
    chunk = call.argument(1, "chunk_size")
    if values is None or not values or isinstance(chunk, bool) or not isinstance(chunk, int) or chunk <= 0:
        return None
    return values, chunk


def right(call: Call):
    if call.function == "merge":
        found = _merge_args(call)
        return None if found is None else merge(*found)
    if call.function == "summarize":
        values = _floats(call.argument(0, "values"))
        return None if values is None else summarize(values)
    if call.function == "streaming_softmax":
        stream = _stream_args(call)
        return None if stream is None else softmax(stream[0])
    return None


SOFTMAX_FUNCTIONS = ("streaming_softmax",)


def quantities(call: Call) -> list:
    """The sum l of exp(v - max) over the whole stream (a factor equal to it: no division)."""
    stream = _stream_args(call) if call.function == "streaming_softmax" else None
    if stream is None:
        return []
    m = max(stream[0])
    l = math.fsum(math.exp(v - m) for v in stream[0])
    return [
        Quantity(
            "the sum l of exp(v - max) over all values", "all", l, missing="the division by l is missing"
        )
    ]


def agrees(call: Call, expected) -> bool:
    got = call.result
    if call.function == "streaming_softmax":
        if not isinstance(got, list) or len(got) != len(expected):
            return False
        return all(
            isinstance(g, (int, float)) and _same(float(g), w, PROB_REL) for g, w in zip(got, expected)
        )
    state = _state(got)
    return state is not None and all(_same(g, w, STATE_REL) for g, w in zip(state, expected))


def _raw_denominators(call: Call):
    if call.function == "merge":
        found = _merge_args(call)
        return None if found is None else (max(found[0][0], found[1][0]), found[0][1] + found[1][1])
    stream = _stream_args(call)
    if stream is None:
        return None
    values, chunk = stream
    chunks = [values[i : i + chunk] for i in range(0, len(values), chunk)]
    m = max(values)
    l = math.fsum(summarize(c)[1] for c in chunks)  # each relative to its own chunk's maximum
    return [math.exp(v - m) / l for v in values]


def _unguarded_empty_merge(call: Call):
    found = _merge_args(call)
    if found is None or max(found[0][0], found[1][0]) != -math.inf:
        return None
    return (-math.inf, math.nan)  # exp(-inf - (-inf)) = exp(nan), and 0 * nan = nan


def _summary_not_relative(call: Call):
    values = _floats(call.argument(0, "values"))
    if not values:
        return None
    try:
        return max(values), math.fsum(math.exp(v) for v in values)
    except OverflowError:
        return None


def _chunks_normalized_locally(call: Call):
    stream = _stream_args(call)
    if stream is None:
        return None
    values, chunk = stream
    return [p for i in range(0, len(values), chunk) for p in softmax(values[i : i + chunk])]


RAW = dict(
    id="raw-denominator",
    sentence=(
        "Your merge adds the two denominators as they are, without rescaling them to the larger maximum."
    ),
    where="merge: l = l_left * exp(m_left - m) + l_right * exp(m_right - m), with m the larger maximum",
    section=MERGE,
    why=(
        "each l is a sum of exp(x - m) for its own m, so the two sums are in different units unless the "
        "maxima are equal: (2, 2) + (4, 1) is (4, 1 + 2 exp(-2)), not (4, 3)"
    ),
)

MISTAKES = [
    Mistake(function="merge", oracle=_raw_denominators, **RAW),
    Mistake(
        id="empty-merge-nan",
        function="merge",
        sentence="Your merge of two empty summaries returns NaN instead of the empty state (-inf, 0).",
        where="merge: when both maxima are -inf, return (-inf, 0.0) before computing exp(m_left - m)",
        section=EMPTY_CHUNKS,
        why="exp(-inf - (-inf)) is exp(NaN), and 0 * NaN is NaN, which then poisons every later merge",
        oracle=_unguarded_empty_merge,
    ),
    Mistake(
        id="summary-not-relative",
        function="summarize",
        sentence="Your summary sums exp(x) instead of exp(x - m), relative to the chunk's own maximum.",
        where="summarize: l = sum(exp(v - m)) with m = max(values)",
        section=SUMMARY,
        why=(
            "(m, l) means l = sum exp(x - m); summed without the shift it is in other units and overflows "
            "past 709"
        ),
        oracle=_summary_not_relative,
    ),
    Mistake(function="streaming_softmax", oracle=_raw_denominators, **RAW),
    Mistake(
        id="chunks-normalized-locally",
        function="streaming_softmax",
        sentence=(
            "Your streaming softmax normalizes each chunk by its own (m, l) instead of the merged state."
        ),
        where="pass 2: every value uses the final merged (m, l), exp(v - m) / l",
        section=STREAMING,
        why="each chunk's own softmax sums to 1, so the whole list sums to the number of chunks",
        oracle=_chunks_normalized_locally,
    ),
]
