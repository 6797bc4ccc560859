"""A1: online normalization -- your exercise file.

Outline (use it as scaffolding, or delete it for more challenge):

    EMPTY = (-inf, 0.0)                 # the summary of no values at all

    summarize(values) -> (m, l)
        m = the largest value; l = sum of exp(v - m) over the values
        an empty sequence gives EMPTY

    merge(left, right) -> (m, l)
        m = max of the two maxima
        each l must be re-expressed relative to the new m before adding
        think about merging EMPTY with EMPTY: what is -inf - (-inf)?

    streaming_softmax(values, chunk_size) -> list
        reject a chunk_size that is not a positive int with ValueError
        pass 1: merge the summary of every chunk into a running state
        pass 2: exp(v - m) / l for every value; do not modify the input

Check your work:   python -S -m checks online_normalizer
Hints, one tier at a time:   python -S -m checks online_normalizer --hint
"""

import math

EMPTY = (-math.inf, 0.0)


def summarize(values):
    raise NotImplementedError("summarize: return (max, sum of exp(v - max)) of the values")


def merge(left, right):
    raise NotImplementedError("merge: rescale both denominators to the larger maximum, then add")


def streaming_softmax(values, chunk_size):
    raise NotImplementedError("streaming_softmax: merge chunk summaries, then normalize")
