"""WRONG on purpose: merge forgets that both sides can be empty.

With m = max(-inf, -inf) = -inf, exp(m_left - m) is exp(-inf + inf) = exp(nan) = nan,
and 0.0 * nan is nan: merging two empty summaries gives (-inf, nan), which then
poisons every later merge.
"""

import math

EMPTY = (-math.inf, 0.0)


def summarize(values):
    values = list(values)
    if not values:
        return EMPTY
    m = max(values)
    return (m, math.fsum(math.exp(v - m) for v in values))


def merge(left, right):
    m = max(left[0], right[0])
    return (m, left[1] * math.exp(left[0] - m) + right[1] * math.exp(right[0] - m))


def streaming_softmax(values, chunk_size):
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0:
        raise ValueError("chunk_size must be a positive int")
    values = list(values)
    state = EMPTY
    for i in range(0, len(values), chunk_size):
        state = merge(state, summarize(values[i : i + chunk_size]))
    m, l = state
    return [math.exp(v - m) / l for v in values]
