"""Relation functions (checks/judging/relations.py) on synthetic results."""

from __future__ import annotations

import math

import numpy as np
import pytest

from checks.judging import relations as rel, relations_plain as plain


@pytest.fixture
def want():
    return np.random.default_rng(0).normal(size=(12, 40))


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_equal_results_have_no_relation(want):
    assert rel.relate(want.copy(), want) is None


def test_negated(want):
    assert rel.relate(-want, want).id == "negated"


def test_one_factor_overall(want):
    found = rel.relate(want * 3.0, want)
    assert found.id == "factor" and found.evidence["factors"][0] == pytest.approx(3.0)
    # a factor above 1 may be terms added again (a loop whose loads stay put): said as a cause
    assert "adds the same terms more than once" in found.sentence
    assert "adds the same terms" not in rel.relate(want * 0.5, want).sentence


def test_factor_per_row_named_by_a_quantity(want):
    p = softmax(want)
    l = np.exp(want - want.max(axis=1, keepdims=True)).sum(axis=1)
    q = rel.Quantity("the row's sum of exp", "row", l, missing="the division by l is missing")
    found = rel.relate(p * l[:, None], p, quantities=[q])
    assert found.id == "factor-per-row"
    assert "equal to the row's sum of exp: the division by l is missing" in found.sentence
    # the inverse of a quantity is named too
    found = rel.relate(p / l[:, None], p, quantities=[q])
    assert "1 / (the row's sum of exp)" in found.sentence


def test_factor_per_column(want):
    c = np.linspace(0.5, 2.0, want.shape[1])
    assert rel.relate(want * c[None, :], want).id == "factor-per-column"


def test_scalar_quantity_named(want):
    q = rel.Quantity("sqrt(D)", "all", math.sqrt(64), missing="the scale 1/sqrt(D) is missing")
    found = rel.relate(want * 8.0, want, quantities=[q])
    assert "equal to sqrt(D)" in found.sentence


def test_offsets(want):
    assert rel.relate(want + 0.5, want).id == "offset"
    d = np.arange(want.shape[0], dtype=float)[:, None] + 1
    assert rel.relate(want + d, want).id == "offset-per-row"


def test_rows_shifted_repeated_swapped(want):
    shifted = np.roll(want, -1, axis=0)
    shifted[-1] = want[-1]  # the last row keeps its own answer (nothing past it)
    assert rel.relate(shifted, want).id == "rows-shifted"
    found = rel.relate(np.repeat(want[:1], want.shape[0], axis=0), want)
    assert found.id == "rows-repeated" and found.evidence["row"] == 0
    swapped = want[[1, 0] + list(range(2, want.shape[0]))]
    assert rel.relate(swapped, want).id in ("rows-swapped", "rows-shifted")
    assert rel.relate(want[::-1].copy(), want).id == "rows-swapped"


def test_transposed():
    w = np.random.default_rng(1).normal(size=(9, 9))
    assert rel.relate(w.T.copy(), w).id == "transposed"


def test_columns_shifted(want):
    got = np.roll(want, 2, axis=1)
    got[:, :2] = want[:, :2]
    found = rel.relate(got, want)
    assert found.id == "columns-shifted" and "Column i" in found.sentence


def test_last_partial_tile(want):
    got = want.copy()
    got[:, 32:] = 0.0  # width 40, tile 32: columns 32-39 are the partial tile
    found = rel.relate(got, want, tiles=[32])
    assert found.id == "last-partial-column-tile" and found.evidence == {"tile": 32, "first": 32, "size": 40}
    assert "-inf for a maximum" in found.sentence


def test_every_kth_tile():
    w = np.random.default_rng(2).normal(size=(4, 128))
    got = w.copy()
    for b in (1, 3, 5, 7):
        got[:, b * 16 : (b + 1) * 16] += 1.0 + np.random.default_rng(b).random((4, 16))
    found = rel.relate(got, w, tiles=[16])
    assert found.id == "column-tiles" and found.evidence["blocks"] == [1, 3, 5, 7]
    assert "(every second tile)" in found.sentence


def test_not_finite_says_where_first(want):
    got = want.copy()
    got[3, 7] = np.nan
    got[5, 1] = np.inf
    found = rel.relate(got, want)
    assert found.id == "not-finite" and found.evidence["first"] == [3, 7] and found.evidence["count"] == 2
    # a K loop that drops a tile leaves large partial sums uncancelled: among the causes said
    assert "a sum whose large terms no longer cancel" in found.sentence


def test_only_first_row_right(want):
    got = want.copy()
    got[1:] += np.random.default_rng(3).random(got[1:].shape) + 0.1
    found = rel.relate(got, want)
    assert found.id == "only-first-rows" and found.sentence.startswith("Only row 0")


def test_softmax_rows_not_summing_to_one(want):
    p = softmax(want)
    got = p.copy()
    got[:, :5] += np.random.default_rng(4).random((want.shape[0], 5)) * 0.1
    assert rel.relate(got, p) is None  # only a softmax's rows must sum to 1
    assert rel.relate(got, p, softmax=True).id == "not-normalized"


def test_no_relation_for_noise(want):
    noisy = want + np.random.default_rng(5).normal(size=want.shape)
    assert rel.relate(noisy, want) is None


def test_torch_tensors_are_read():
    torch = pytest.importorskip("torch")
    w = torch.randn(6, 8, dtype=torch.float32)
    assert rel.relate(-w, w.double()).id == "negated"


def test_list_subset_without_numpy():
    w = [0.1, 0.2, 0.7]
    assert plain.relate_lists([-v for v in w], w).id == "negated"
    assert plain.relate_lists([2 * v for v in w], w).id == "factor"
    assert plain.relate_lists([v + 1 for v in w], w).id == "offset"
    assert plain.relate_lists([0.1, float("nan"), 0.7], w).evidence["first"] == [1]
    assert plain.relate_lists([0.1, 0.3, 0.7], w, sums_to_one=True).id == "not-normalized"
    assert plain.relate_lists(list(w), w) is None


def test_relation_details_have_the_shape_others_read(want):
    d = rel.relate(-want, want).details()
    assert set(d) == {"id", "sentence", "evidence"}


def test_all_zero(want):
    assert rel.relate(np.zeros_like(want), want).id == "zero"


def test_a_constant_per_row_or_column_needs_more_than_one_element_each():
    w = np.array([[0.25, 0.75]])
    got = np.array([[0.3, -1.0]])
    assert rel.relate(got, w) is None  # one row: "a factor per column" would fit anything
    one_column = np.array([[0.5], [0.2], [0.9]])
    assert rel.relate(one_column + np.array([[1.0], [2.0], [3.0]]), one_column) is None


def test_only_first_rows_is_not_said_of_rows_any_mistake_leaves_right(want):
    got = want.copy()
    got[1:] += 1.0 + np.random.default_rng(6).random(got[1:].shape)
    assert rel.relate(got, want, trivially_right=1) is None
    got[1] = want[1]
    assert rel.relate(got, want, trivially_right=1).evidence["right_rows"] == 2


def test_a_softmax_whose_sum_counts_padding_lanes_is_told_so_only_on_a_ragged_width():
    # padding lanes loaded as 0 add exp(0 - max) to each row's sum: every row comes out smaller
    rng = np.random.default_rng(3)
    for width, told in ((100, True), (128, False)):
        x = rng.normal(size=(12, width))
        p = softmax(x)
        pad = 128 - width if told else 28  # a power-of-two width has no padding lanes of its own
        e = np.exp(x - x.max(axis=1, keepdims=True))
        got = e / (e.sum(axis=1) + pad * np.exp(-x.max(axis=1)))[:, None]
        found = rel.relate(got, p)
        assert found is not None and found.id == "factor-per-row"
        assert ("loaded as 0 rather than -inf" in found.sentence) is told
