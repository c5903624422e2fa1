"""The rounding bounds of tests/_tolerances.py hold, and are not vacuous."""

import itertools

import numpy as np
import pytest
import torch

from tests._tolerances import (
    Exact,
    U,
    assert_differ,
    assert_identical,
    assert_same_predictions,
    gamma,
    identical,
    matmul_bound,
    probability_bound,
    reassociation_bound,
)


def _orderings(x, rng):
    """Float32 sums of ``x`` in orders that round differently, each as float64."""
    x = x.astype(np.float32)
    by_size = x[np.argsort(np.abs(x))]
    orders = [x, x[::-1], by_size, by_size[::-1], np.sort(x), np.sort(x)[::-1]]
    orders += [rng.permutation(x) for _ in range(4)]
    # add.accumulate is left to right; np.sum is pairwise; torch blocks its own way.
    sums = [float(np.add.accumulate(order)[-1]) for order in orders]
    sums += [float(np.sum(x)), float(torch.from_numpy(x).sum())]
    return sums


@pytest.mark.parametrize("n", [2, 10, 1000, 10_000])
@pytest.mark.parametrize("kind", ["normal", "cancelling", "spread"])
def test_reassociation_bound_holds_for_any_order(n, kind):
    rng = np.random.RandomState(n)
    x = rng.randn(n)
    if kind == "cancelling":  # large terms that cancel, leaving a small sum
        x = np.concatenate([x, -x[: n // 2] * (1 + 1e-3)])
    elif kind == "spread":  # magnitudes over 12 decades
        x = x * 10.0 ** rng.uniform(-6, 6, len(x))
    x = x.astype(np.float32)
    exact = np.sum(x.astype(np.float64))  # float64 is exact to 2**-53 here, far below the bound
    bound = reassociation_bound(np.abs(x.astype(np.float64)).sum(), len(x))
    sums = _orderings(x, rng)
    assert all(abs(s - exact) <= bound / 2 for s in sums)
    assert all(abs(a - b) <= bound for a, b in itertools.combinations(sums, 2))


@pytest.mark.parametrize("n", [10, 100, 1000])
def test_reassociation_bound_is_reached_within_a_factor_of_ten(n):
    # 1 followed by n - 1 terms just over half an ulp of 1: left to right, each
    # addition rounds up by almost u, so the error grows by u per term; the
    # small terms first sum exactly, and the one last addition rounds once.
    small = np.float32(U * (1 + 2.0**-10))
    x = np.array([1.0] + [small] * (n - 1), dtype=np.float32)
    first_large = float(np.add.accumulate(x)[-1])
    first_small = float(np.add.accumulate(x[::-1])[-1])
    bound = reassociation_bound(np.abs(x.astype(np.float64)).sum(), n)
    assert abs(first_large - first_small) <= bound
    assert abs(first_large - first_small) > bound / 10


@pytest.mark.parametrize("shape", [(1, 64, 3), (17, 64, 3), (300, 512, 40)])
def test_matmul_bound_holds_for_any_batch_shape(shape):
    # The rows of a product, computed in batches of several sizes, as the
    # estimators' batches do: each stays within the bound of the float64 product.
    m, k, n = shape
    g = torch.Generator().manual_seed(m)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    bound = matmul_bound(a, b)
    exact = (a.double() @ b.double()).numpy()
    for rows in (1, 7, 16, m):
        parts = torch.cat([chunk @ b for chunk in a.split(rows)]).double().numpy()
        assert (np.abs(parts - exact) <= bound / 2).all()


def test_gamma_refuses_sums_too_long_for_float32():
    assert gamma(1) == pytest.approx(U)
    with pytest.raises(ValueError, match="no bound"):
        gamma(2**24)


def test_probability_bound_holds_for_softmax_and_sigmoid():
    rng = np.random.RandomState(0)
    z = torch.from_numpy(rng.randn(1000, 5) * 5)
    dz = torch.from_numpy(rng.uniform(-1e-3, 1e-3, (1000, 5)))
    moved = (torch.softmax(z + dz, 1) - torch.softmax(z, 1)).abs().max(1).values
    assert (moved <= probability_bound(dz.abs().max(1).values)).all()
    moved = (torch.sigmoid(z + dz) - torch.sigmoid(z)).abs()
    assert (moved <= probability_bound(dz.abs())).all()


# ------------------------------------------------------------------ exact comparisons
def test_assert_identical_compares_bit_for_bit_with_a_reason():
    x = torch.tensor([1.0, float("nan"), -0.5])
    assert_identical(x, x.clone(), why=Exact.COPY)
    assert_identical(x.numpy(), x, why=Exact.COPY)  # NaN matches NaN, a tensor its array
    assert_identical([x, x[:1]], [x.clone(), x[:1].clone()], why=Exact.COPY)
    with pytest.raises(AssertionError):
        assert_identical(x, torch.nextafter(x, x + 1), why=Exact.SAME_CALL)  # an ulp apart
    with pytest.raises(AssertionError, match="shapes"):
        assert_identical(x[:1], x[:1].expand(3), why=Exact.COPY)  # no broadcasting
    with pytest.raises(AssertionError):
        assert_identical([x, x], [x], why=Exact.COPY)
    with pytest.raises(TypeError, match="why must be one of"):
        assert_identical(x, x, why="same call")  # a reason from the list, not words
    assert identical(np.arange(3), [0, 1, 2], why=Exact.DISCRETE)
    with pytest.raises(TypeError, match="floats round"):
        assert_identical(x, x, why=Exact.DISCRETE)
    assert_identical(torch.zeros(2), [0, 0], why=Exact.ZERO)
    with pytest.raises(AssertionError, match="not all zero"):
        assert_identical(x[:1], x[:1], why=Exact.ZERO)
    assert_differ(x, x + 1)
    with pytest.raises(AssertionError, match="should differ"):
        assert_differ(x, x.clone())


def test_assert_same_predictions_lets_rounding_move_only_near_ties():
    proba = np.array([[0.9, 0.1], [0.5 + 1e-7, 0.5 - 1e-7], [0.2, 0.8]])
    classes = np.array(["neg", "pos"])
    expected = classes[proba.argmax(1)]
    assert_same_predictions(expected, expected, proba, 1e-6, classes)
    near_tie_moved = np.array(["neg", "pos", "pos"])
    assert_same_predictions(near_tie_moved, expected, proba, 1e-6, classes)
    with pytest.raises(AssertionError):
        assert_same_predictions(near_tie_moved, expected, proba, 1e-8, classes)
    with pytest.raises(AssertionError):  # a decided row moved
        assert_same_predictions(np.array(["neg", "neg", "neg"]), expected, proba, 1e-6, classes)
    # Indicators: a label moves only within the bound of 0.5.
    indicators = (proba > 0.5).astype(int)
    moved = indicators.copy()
    moved[1] = [0, 1]
    assert_same_predictions(moved, indicators, proba, 1e-6)
    with pytest.raises(AssertionError):
        assert_same_predictions(1 - indicators, indicators, proba, 1e-6)
