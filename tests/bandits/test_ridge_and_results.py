"""The shared bandit pieces: batched ridge state against numpy's solve, the confidence radius's closed form, results."""

import math

import numpy as np
import pytest

from dpfair.bandits import BanditResult, RidgeState, confidence_radius, mean_and_standard_error


def _stream(rng, batch=(4, 3), dim=3, horizon=40):
    X = rng.normal(size=(horizon, *batch, dim))
    r = rng.normal(size=(horizon, *batch))
    mask = rng.random((horizon, *batch)) < 0.7
    return X, r, mask


def test_rank_one_updates_equal_the_exact_ridge_solution_at_every_round():
    rng = np.random.default_rng(0)
    X, r, mask = _stream(rng)
    state = RidgeState(3, batch_shape=(4, 3), regularization=0.5)
    for t in range(X.shape[0]):
        state.update(X[t], r[t], mask=mask[t])
        w = mask[: t + 1]
        gram = 0.5 * np.eye(3) + np.einsum("tab,tabi,tabj->abij", w, X[: t + 1], X[: t + 1])
        target = np.einsum("tab,tab,tabi->abi", w, r[: t + 1], X[: t + 1])
        np.testing.assert_allclose(state.gram, gram, atol=1e-10)
        np.testing.assert_allclose(state.theta(), np.linalg.solve(gram, target[..., None])[..., 0], atol=1e-9)
    np.testing.assert_array_equal(state.n_observations, mask.sum(axis=0))
    np.testing.assert_allclose(state.log_det(), np.linalg.slogdet(state.gram)[1])
    cands = rng.normal(size=(4, 3, 5, 3))
    expected = np.sqrt(np.einsum("abki,abij,abkj->abk", cands, np.linalg.inv(state.gram), cands))
    np.testing.assert_allclose(state.norms(cands), expected, rtol=1e-9)


def test_adding_statistics_equals_observing_them_and_refuses_an_indefinite_gram():
    rng = np.random.default_rng(1)
    X, r, _ = _stream(rng, batch=(2,))
    one = RidgeState(3, batch_shape=(2,))
    for t in range(X.shape[0]):
        one.update(X[t], r[t])
    other = RidgeState(3, batch_shape=(2,))
    other.add_statistics(np.einsum("tai,taj->aij", X, X), np.einsum("ta,tai->ai", r, X), X.shape[0])
    np.testing.assert_allclose(other.theta(), one.theta(), atol=1e-10)
    np.testing.assert_allclose(other.gram_inverse, one.gram_inverse, atol=1e-10)
    before = other.gram.copy()
    with pytest.raises(ValueError, match="not positive definite"):
        other.add_statistics(-10.0 * before, np.zeros((2, 3)))
    np.testing.assert_array_equal(other.gram, before)  # a refused update changes nothing


def test_bad_input_is_refused_by_name():
    state = RidgeState(2, batch_shape=(3,))
    with pytest.raises(ValueError, match="x must have shape"):
        state.update(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="NaN"):
        state.update(np.full((3, 2), np.nan), np.ones(3))
    with pytest.raises(ValueError, match="reward"):
        state.update(np.ones((3, 2)), np.array([1.0, np.inf, 0.0]))
    with pytest.raises(ValueError, match="regularization"):
        RidgeState(2, regularization=0.0)


def test_confidence_radius_matches_the_closed_form():
    # d = 2, lambda = 2, det V = 2 * 8 = 16: ln(det V / lambda^d) = ln 4
    gram = np.diag([2.0, 8.0])
    radius = confidence_radius(np.linalg.slogdet(gram)[1], dim=2, regularization=2.0, noise_std=0.5,
                               theta_norm_bound=3.0, delta=0.1)
    assert radius == pytest.approx(0.5 * math.sqrt(2 * math.log(10) + math.log(4)) + math.sqrt(2) * 3)
    with pytest.raises(ValueError, match="delta"):
        confidence_radius(0.0, dim=2, regularization=1.0, noise_std=1.0, theta_norm_bound=1.0, delta=1.0)


def test_results_summaries():
    curves = np.cumsum(np.arange(2 * 3 * 5, dtype=float).reshape(2, 3, 5), axis=-1)
    result = BanditResult(seeds=(0, 1, 2), policy_names=("a", "b"), fair_regret=curves, regret=curves * 0,
                          selections=np.array([[[1, 3], [2, 2], [0, 4]], [[4, 0], [4, 0], [4, 0]]]))
    final = result.final("fair_regret")
    mean, _ = mean_and_standard_error(curves[:, :, -1])
    np.testing.assert_allclose(final["mean"], mean)
    assert final.loc["a", "se"] == pytest.approx(np.std(curves[0, :, -1], ddof=1) / math.sqrt(3))
    share = result.selection_share()
    assert share.loc["a", ("mean", 1)] == pytest.approx((3 / 4 + 2 / 4 + 1) / 3)
    assert share.loc["b", ("se", 0)] == 0.0
    with pytest.raises(ValueError, match="metric must be one of"):
        result.final("selections")
