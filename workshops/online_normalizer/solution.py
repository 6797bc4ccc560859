"""Reference answer for A1, online normalization (pure Python, standard library only).

A chunk of logits is summarized by (m, l): its maximum m and l = sum(exp(x - m)).
Two summaries are merged by re-expressing both relative to the larger maximum.
"""

import math

# The summary of nothing: no maximum yet, and nothing added to the denominator.
EMPTY = (-math.inf, 0.0)


def summarize(values):
    """(m, l) of a sequence of finite floats; (-inf, 0.0) for an empty one."""
    values = list(values)
    if not values:
        return EMPTY
    m = max(values)
    l = math.fsum(math.exp(v - m) for v in values)  # every term <= 1: no overflow
    return (m, l)


def merge(left, right):
    """Combine two summaries.  Each l is scaled by exp(its m - new m) <= 1, so an old
    contribution shrinks when a larger maximum arrives instead of overflowing."""
    m_left, l_left = left
    m_right, l_right = right
    m = max(m_left, m_right)
    if m == -math.inf:
        # Both empty.  exp(-inf - (-inf)) would be exp(nan) = nan: return the identity.
        return EMPTY
    scale_left = math.exp(m_left - m)  # exp(-inf) == 0.0 for an empty side
    scale_right = math.exp(m_right - m)
    return (m, l_left * scale_left + l_right * scale_right)


def streaming_softmax(values, chunk_size):
    """Softmax of ``values`` computed chunk by chunk with a running (m, l) summary.

    Pass 1 reads each chunk once and merges its summary into the running state.
    Pass 2 normalizes with the final (m, l).  The input is not modified."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0:
        raise ValueError(f"chunk_size: expected a positive int, got {chunk_size!r}")
    values = list(values)  # a copy: the caller's list is left unchanged
    state = EMPTY
    for start in range(0, len(values), chunk_size):
        state = merge(state, summarize(values[start : start + chunk_size]))
    m, l = state
    return [math.exp(v - m) / l for v in values]
