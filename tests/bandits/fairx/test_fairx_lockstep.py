"""Speed: the FairX kernels run the agents of a round as vector lanes, each exactly as alone.

The Jacobi eigendecomposition and the ellipsoid projection of a stack of lanes against the same functions on one
lane at a time (bit for bit, warm and cold starts, points inside and outside, a zero radius); the eigenvectors
and eigenvalues against numpy; the projection against the numpy reference's; the vectorizable ``exp`` of the
merit weights against the correctly rounded value (mpmath); a whole simulation whose rows share the lanes of
one call in different company (other learners, seeds, threads) gives the same numbers.
"""

from __future__ import annotations

import math

import mpmath
import numba
import numpy as np
import pytest

from dpfair.bandits import FairXLinUCB, FederatedSyntheticEnvironment, FedFairXLinUCB, simulate_federated
from dpfair.bandits.fairx import _kernels as kernels
from dpfair.bandits.fairx import _lanes as lanes
from dpfair.bandits.fairx.merit_policy import _project as reference_project


def _grams(rng, n, d):
    x = rng.uniform(0.0, 1.0, size=(n, 40, d))
    return np.eye(d) + np.einsum("nti,ntj->nij", x, x)


def _eigh(grams, guesses):
    """``_eigh_lanes`` on rows ``(n, d, d)``: eigenvalues ``(n, d)``, eigenvectors ``(n, d, d)``, largest ``(n,)``."""
    n, d = grams.shape[:2]
    q = np.ascontiguousarray(guesses.transpose(1, 2, 0))
    eigvals, largest = np.empty((d, n)), np.empty(n)
    lanes._eigh_lanes(n, np.ascontiguousarray(grams.transpose(1, 2, 0)), q, np.empty((d, d, n)), np.empty((d, d, n)),
                      eigvals, largest, np.empty((3, n)))
    return eigvals.T, q.transpose(2, 0, 1), largest


@pytest.mark.parametrize("warm", [False, True])
def test_lane_eigendecomposition_is_each_lane_alone_bit_for_bit(warm):
    rng = np.random.default_rng(0)
    n, d = 7, 5
    grams = _grams(rng, n, d)
    guess = np.stack([np.linalg.qr(rng.normal(size=(d, d)))[0] if warm else np.eye(d) for _ in range(n)])
    eigvals, eigvecs, largest = _eigh(grams, guess)
    for r in range(n):
        vals, vecs, top = _eigh(grams[r : r + 1], guess[r : r + 1])
        np.testing.assert_array_equal(vals[0], eigvals[r])
        np.testing.assert_array_equal(vecs[0], eigvecs[r])
        assert top[0] == largest[r] == vals.max()
        np.testing.assert_allclose(np.sort(vals[0]), np.linalg.eigvalsh(grams[r]), rtol=1e-12)
        np.testing.assert_allclose(vecs[0] @ np.diag(vals[0]) @ vecs[0].T, grams[r], rtol=1e-12, atol=1e-10)


def test_lane_eigendecomposition_warm_started_over_rank_one_updates():
    rng = np.random.default_rng(1)
    d = 5
    x = rng.uniform(size=(2000, d))
    gram, eigvecs = np.eye(d), np.eye(d)
    for t in range(2000):  # rank-one updates, warm-started from the previous eigenvectors
        gram = gram + np.outer(x[t], x[t])
        if t % 97 == 0:
            gram = gram + 30.0 * np.outer(x[t - 1], x[t - 1])  # a bigger jump, as at a synchronization
        vals, vecs, largest = _eigh(gram[None], eigvecs[None])
        eigvals, eigvecs = vals[0], vecs[0]
        scale = np.abs(gram).max()
        assert largest[0] == eigvals.max()
        np.testing.assert_allclose(np.sort(eigvals), np.linalg.eigvalsh(gram), rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(eigvecs @ np.diag(eigvals) @ eigvecs.T, gram, rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(eigvecs.T @ eigvecs, np.eye(d), rtol=0, atol=1e-14)


def test_lane_projection_is_each_lane_alone_and_the_reference():
    rng = np.random.default_rng(1)
    n, d = 9, 4
    grams = _grams(rng, n, d)
    centers = rng.normal(size=(n, d))
    points = centers + rng.normal(size=(n, d)) * np.array([0.01, 0.5, 2.0, 0.0, 1.0, 0.3, 5.0, 0.02, 1.0])[:, None]
    radii = np.array([1.0, 0.5, 0.2, 1.0, 0.0, 0.3, 1.0, 2.0, 1e-3])
    together = kernels.project_rows(points, centers, grams, radii)
    for r in range(n):
        alone = kernels.project_rows(points[r : r + 1], centers[r : r + 1], grams[r : r + 1], radii[r : r + 1])
        np.testing.assert_array_equal(alone[0], together[r])
    eigvals, eigvecs = np.linalg.eigh(grams)
    expected = reference_project(points, centers, eigvals, eigvecs, radii)
    np.testing.assert_allclose(together, expected, rtol=1e-9, atol=1e-12)
    inside = np.einsum("ni,nij,nj->n", points - centers, grams, points - centers) <= radii**2
    assert inside.any() and (~inside).any()
    np.testing.assert_array_equal(together[inside], points[inside])  # inside: returned unchanged
    np.testing.assert_array_equal(together[4], centers[4])  # outside a zero radius: the centre


def test_lane_projection_branches_on_the_lanes_themselves():
    # _project_lanes alone (project_rows puts inside points back itself): inside -> z unchanged, outside a zero
    # radius -> 0, outside -> on the boundary sum lam z^2 = r^2
    eigvals = np.array([[1.0, 2.0, 1.0], [3.0, 1.0, 0.5]])  # (d=2, 3 lanes)
    z = np.array([[0.1, 1.0, 2.0], [0.1, 1.0, 3.0]])
    radius = np.array([1.0, 0.0, 1.0])
    out = np.full((2, 3), np.nan)
    lanes._project_lanes(3, z, eigvals, eigvals.max(axis=0), radius, np.empty((2, 3)), out, np.empty((4, 3)))
    np.testing.assert_array_equal(out[:, 0], z[:, 0])
    np.testing.assert_array_equal(out[:, 1], [0.0, 0.0])
    assert (eigvals[:, 2] * out[:, 2] ** 2).sum() == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(out[:, 2], reference_project(z[:, 2][None], np.zeros((1, 2)), eigvals[:, 2][None],
                                                            np.eye(2)[None], radius[2:])[0], rtol=1e-12)


@numba.njit
def _exp_all(x, out):
    for i in range(x.size):
        out[i] = lanes._exp(x[i])


def test_lane_exp_is_within_an_ulp_of_the_correctly_rounded_value():
    rng = np.random.default_rng(2)
    x = np.concatenate([
        rng.uniform(-1.0, 1.0, 600), rng.uniform(-60.0, 0.0, 600),  # the merit weights' range
        rng.uniform(-708.4, 709.78, 600), rng.uniform(-745.1, -708.4, 300),  # the whole range, subnormals
        -np.arange(0, 40) * math.log(2.0) / 2, [0.0, -0.0, 1e-300, -1e-300, 709.782, -708.39],  # reduction edges
    ])
    out = np.empty_like(x)
    _exp_all(x, out)
    for value, ours in zip(x, out, strict=True):
        exact = float(mpmath.exp(mpmath.mpf(float(value))))  # correctly rounded (mpmath's 53-bit rounding)
        assert abs(ours - exact) <= np.spacing(exact), (value, ours, exact)
    special = np.array([-np.inf, -746.0, 710.0, np.inf, np.nan])
    out = np.empty_like(special)
    _exp_all(special, out)
    assert out[0] == 0.0 and out[1] == 0.0 and out[2] == np.inf and out[3] == np.inf and np.isnan(out[4])


def test_rows_give_the_same_numbers_whatever_shares_their_lanes(monkeypatch):
    # a learner's rows share the round's lanes with other learners' and seeds' rows, in one thread or two:
    # every lane does what its agent does alone, so the learner's curves are the same bit for bit
    env = FederatedSyntheticEnvironment(dim=4, n_actions=6)
    alone = simulate_federated(env, {"Fed": FedFairXLinUCB("log-det", sync_threshold=2.0)}, 300, 3, [1])
    crowd = {"B0": FairXLinUCB(), "Fed": FedFairXLinUCB("log-det", sync_threshold=2.0), "B0c": FairXLinUCB(radius=1.0)}
    monkeypatch.setattr(kernels, "threads", lambda: 2)
    monkeypatch.setattr(kernels, "_PARALLEL_WORK", 0)
    shared = simulate_federated(env, crowd, 300, 3, [0, 1, 2])
    np.testing.assert_array_equal(shared.fair_regret[1, 1], alone.fair_regret[0, 0])
    np.testing.assert_array_equal(shared.reward_regret[1, 1], alone.reward_regret[0, 0])
    np.testing.assert_array_equal(shared.communication_rounds[1, 1], alone.communication_rounds[0, 0])
