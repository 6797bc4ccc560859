"""WRONG on purpose: streaming_softmax keeps the first chunk's maximum for the whole stream.

summarize and merge are right.  streaming_softmax summarizes the first chunk, keeps its
maximum m, and adds exp(x - m) of every later chunk to l: "once m is fixed, no sum needs
rescaling".  Softmax does not care which constant is subtracted, so this is exact as
long as no later chunk holds a value more than ~709 above the first chunk's maximum
(where exp overflows a double): the checks' logits in [-1000, 1000] usually start high
enough, and rows near 1000 start at their maximum.  A later chunk far above the first
raises OverflowError.
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
    if not values:
        return []
    m, l = summarize(values[:chunk_size])  # the bug: later chunks never raise m
    for start in range(chunk_size, len(values), chunk_size):
        l += math.fsum(math.exp(v - m) for v in values[start : start + chunk_size])
    return [math.exp(v - m) / l for v in values]
