"""Named checks for A1, online normalization.  Standard library only (runs under python -S).

The oracle is the textbook softmax computed with math.fsum; floats are compared with
a relative tolerance of 1e-12 (the only rounding is in exp and a few additions).
"""

import math

from checks.judging.case import CheckFailed, check, collect
from checks.judging.cases import later_tiles

EMPTY = (-math.inf, 0.0)
REL = 1e-12


def _close(a, b, rel=REL):
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-300)


def _state(got, what):
    if not (isinstance(got, tuple) and len(got) == 2):
        raise CheckFailed(f"{what} should return a tuple (m, l), got {got!r}")
    m, l = got
    if not all(isinstance(x, (int, float)) for x in (m, l)):
        raise CheckFailed(f"{what} should return two numbers, got {got!r}")
    return float(m), float(l)


def _expect_state(got, expected, what):
    m, l = _state(got, what)
    if math.isnan(m) or math.isnan(l):
        raise CheckFailed(f"{what} returned NaN: {got!r}; expected {expected!r}")
    if not (_close(m, expected[0]) and _close(l, expected[1])):
        raise CheckFailed(
            f"{what} returned (m={m!r}, l={l!r}); expected (m={expected[0]!r}, l={expected[1]!r})",
            {"got": [m, l], "expected": list(expected)},
        )


def _softmax(values):
    m = max(values)
    e = [math.exp(v - m) for v in values]
    s = math.fsum(e)
    return [x / s for x in e]


def _expect_probs(got, values, what):
    if not isinstance(got, list):
        raise CheckFailed(f"{what} should return a list, got {type(got).__name__}")
    if len(got) != len(values):
        raise CheckFailed(f"{what} returned {len(got)} values for {len(values)} inputs")
    want = _softmax(values)
    bad = [
        i
        for i, (g, w) in enumerate(zip(got, want))
        if not (isinstance(g, (int, float)) and math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-300))
    ]
    if bad:
        i = bad[0]
        raise CheckFailed(
            f"{what}: {len(bad)} of {len(values)} probabilities wrong; first at "
            f"index {i}: got {got[i]!r}, expected {want[i]!r}; sum of got = "
            f"{math.fsum(x for x in got if isinstance(x, (int, float)))!r}",
            {"wrong_probabilities": len(bad), "first_index": i},
        )


def _logits(rng, n, lo=-1000.0, hi=1000.0):
    return [rng.uniform(lo, hi) for _ in range(n)]


@check(
    "worked-merge",
    "merge((2, 2), (4, 1)) is (4, 1 + 2*exp(-2))",
    why=(
        "the lesson's worked merge: each sum is rescaled to the larger maximum before they are "
        "added, 1 + 2*exp(2 - 4)"
    ),
    section="Deriving the merge",
)
def worked_merge(mod, ctx):
    _expect_state(
        mod.merge((2.0, 2.0), (4.0, 1.0)), (4.0, 1.0 + 2.0 * math.exp(-2.0)), "merge((2, 2), (4, 1))"
    )
    _expect_state(
        mod.merge((4.0, 1.0), (2.0, 2.0)), (4.0, 1.0 + 2.0 * math.exp(-2.0)), "merge((4, 1), (2, 2))"
    )


@check(
    "summarize-empty",
    "summarize([]) is the empty state (-inf, 0.0)",
    why="max() of an empty sequence raises; the empty state must be the merge identity",
    section="Empty chunks and merge trees",
)
def summarize_empty(mod, ctx):
    _expect_state(mod.summarize([]), EMPTY, "summarize([])")


@check(
    "summarize-values",
    "summarize gives (max, sum of exp(v - max))",
    why="a summary relative to anything but the chunk's own maximum can overflow",
    section="The summary (m, l)",
)
def summarize_values(mod, ctx):
    _expect_state(mod.summarize([5.0]), (5.0, 1.0), "summarize([5.0])")
    rng = ctx.rng
    for n in (2, 7, 33):
        values = _logits(rng, n)
        m = max(values)
        _expect_state(
            mod.summarize(values),
            (m, math.fsum(math.exp(v - m) for v in values)),
            f"summarize of {n} logits in [-1000, 1000]",
        )


@check(
    "empty-identity",
    "merging the empty state on either side changes nothing",
    why="the first merge of a stream starts from the empty state",
    section="Empty chunks and merge trees",
)
def empty_identity(mod, ctx):
    s = (3.0, 1.5)
    _expect_state(mod.merge(EMPTY, s), s, "merge(EMPTY, (3, 1.5))")
    _expect_state(mod.merge(s, EMPTY), s, "merge((3, 1.5), EMPTY)")
    big = (-999.0, 2.0)
    _expect_state(mod.merge(EMPTY, big), big, "merge(EMPTY, (-999, 2))")


@check(
    "empty-empty",
    "merging two empty states gives the empty state, not NaN",
    why="exp(-inf - (-inf)) is exp(NaN): an unguarded merge poisons the whole stream",
    section="Empty chunks and merge trees",
)
def empty_empty(mod, ctx):
    _expect_state(mod.merge(EMPTY, EMPTY), EMPTY, "merge(EMPTY, EMPTY)")
    _expect_state(
        mod.merge(mod.merge(EMPTY, EMPTY), (1.0, 1.0)), (1.0, 1.0), "merge(merge(EMPTY, EMPTY), (1, 1))"
    )


@check(
    "growing-maximum",
    "a newer, larger maximum shrinks old contributions",
    why="a newer, larger maximum: every earlier sum must be rescaled to it",
    section="Deriving the merge",
)
def growing_maximum(mod, ctx):
    state = EMPTY
    values = [float(v) for v in range(0, 1001, 50)]  # every chunk raises the maximum
    for v in values:
        state = mod.merge(state, mod.summarize([v]))
    _expect_state(
        state,
        (1000.0, math.fsum(math.exp(v - 1000.0) for v in values)),
        "merging single-value summaries 0, 50, ..., 1000 in order",
    )


@check(
    "merge-order",
    "the merge is order- and tree-independent, even with very different maxima",
    why="chunks finish in any order on a GPU; the result must not depend on it",
    section="Empty chunks and merge trees",
)
def merge_order(mod, ctx):
    rng = ctx.rng
    chunks = [
        _logits(rng, 5, -1000, -990),
        _logits(rng, 3, -5, 5),
        _logits(rng, 4, 990, 1000),
        [],
        _logits(rng, 2, -500, 500),
    ]
    flat = [v for c in chunks for v in c]
    m = max(flat)
    expected = (m, math.fsum(math.exp(v - m) for v in flat))
    s = [mod.summarize(c) for c in chunks]
    left = s[0]
    for x in s[1:]:
        left = mod.merge(left, x)
    _expect_state(left, expected, "left-to-right merge of 5 chunks")
    right = s[-1]
    for x in reversed(s[:-1]):
        right = mod.merge(x, right)
    _expect_state(right, expected, "right-to-left merge of 5 chunks")
    tree = mod.merge(mod.merge(s[0], s[3]), mod.merge(mod.merge(s[2], s[1]), s[4]))
    _expect_state(tree, expected, "a merge tree of 5 chunks")


@check(
    "partition-invariance",
    "streaming_softmax matches softmax for every chunk size, logits near +/-1000",
    why="a wrong merge shows only when chunk boundaries change the running maximum",
    section="The summary (m, l)",
)
def partition_invariance(mod, ctx):
    rng = ctx.rng
    values = _logits(rng, 37, -1000, 1000) + [999.5, -999.5, 1000.0]
    for chunk in (1, 2, 3, 7, 16, len(values), len(values) + 5):
        got = mod.streaming_softmax(values, chunk)
        _expect_probs(got, values, f"streaming_softmax(40 logits, chunk_size={chunk})")
    near = [1000.0 - 0.01 * i for i in range(20)]
    _expect_probs(mod.streaming_softmax(near, 3), near, "streaming_softmax(20 logits near 1000, 3)")
    later_chunk_extremes(mod, rng)


def later_chunk_extremes(mod, rng):
    """Streams whose extreme values sit in a later chunk (checks.judging.cases.later_tiles):
    a later chunk 800 to 2000 above or below the first, or chunks rising or falling by that
    much in all, at chunk sizes 2, 3, 7 and 16, ragged and chunk-multiple lengths.  A
    maximum taken from the first chunk and never raised is exact until a later chunk sits
    more than 709 above it, where exp overflows a double: random logits in [-1000, 1000]
    usually start high enough to hide it."""
    for chunk in (2, 3, 7, 16):
        for n in later_tiles.widths(rng, chunk):
            base = rng.uniform(-1000.0, 1000.0)
            for profile in later_tiles.rows(rng, n, chunk, gap=later_tiles.FLOAT64_GAP):
                values = [base + rng.uniform(-3.0, 3.0) + o for o in profile.offsets()]
                said = profile.said("value", "chunk")
                what = f"streaming_softmax({n} logits near {base:.0f}, chunk_size={chunk}): {said}"
                try:
                    got = mod.streaming_softmax(values, chunk)
                except ArithmeticError as e:  # math.exp past 709.78 raises OverflowError
                    raise CheckFailed(
                        f"{what}: raised {type(e).__name__} ({e}); exp must only ever see x - m <= 0, "
                        f"with m the largest value of every chunk so far"
                    ) from None
                _expect_probs(got, values, what)


@check(
    "empty-input",
    "streaming_softmax([]) is []",
    why="an empty stream has no maximum: dividing by l = 0 must not happen",
    section="Empty chunks and merge trees",
)
def empty_input(mod, ctx):
    got = mod.streaming_softmax([], 4)
    if got != []:
        raise CheckFailed(f"streaming_softmax([], 4) returned {got!r}, expected []")


@check(
    "input-unchanged",
    "streaming_softmax leaves its input list unchanged",
    why="callers keep using their logits after normalizing them",
    section="What it does and does not save",
)
def input_unchanged(mod, ctx):
    values = _logits(ctx.rng, 10)
    before = list(values)
    mod.streaming_softmax(values, 3)
    if values != before:
        raise CheckFailed("streaming_softmax modified the list it was given")


@check(
    "bad-chunk-size",
    "a chunk size that is not a positive int is rejected with ValueError",
    why="chunk_size=0 loops forever and 2.5 silently truncates",
    section="Done when",
)
def bad_chunk_size(mod, ctx):
    for bad in (0, -3, 2.5, "4", None, True):
        try:
            mod.streaming_softmax([1.0, 2.0], bad)
        except ValueError:
            continue
        except NotImplementedError:
            raise
        except Exception as e:  # noqa: BLE001
            raise CheckFailed(
                f"chunk_size={bad!r}: expected ValueError, got {type(e).__name__}: {e}"
            ) from None
        raise CheckFailed(f"chunk_size={bad!r} was accepted; it must raise ValueError")


CASES = collect(globals())
