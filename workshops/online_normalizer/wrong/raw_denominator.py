"""WRONG on purpose: merge adds the raw denominators.

Each l is a sum of exp(x - m) for its own m, so the two sums are in different
units unless the maxima happen to be equal.  (2, 2) + (4, 1) gives (4, 3)
instead of (4, 1 + 2*exp(-2)).
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
    return (max(left[0], right[0]), left[1] + right[1])


def streaming_softmax(values, chunk_size):
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0:
        raise ValueError("chunk_size must be a positive int")
    values = list(values)
    state = EMPTY
    for i in range(0, len(values), chunk_size):
        state = merge(state, summarize(values[i : i + chunk_size]))
    m, l = state
    return [math.exp(v - m) / l for v in values]
