"""Issue 30 (speed): the FairX kernels run a group's agents in lockstep, each exactly as alone.

The Jacobi eigendecomposition and the ellipsoid projection of a stack of rows against the same functions on one
row at a time (bit for bit, warm and cold starts, points inside and outside, a zero radius); the eigenvectors
and eigenvalues against numpy; the projection against the numpy reference's.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpfair.bandits.fairx import _kernels as kernels
from dpfair.bandits.fairx.merit_policy import _project as reference_project


def _grams(rng, n, d):
    x = rng.uniform(0.0, 1.0, size=(n, 40, d))
    return np.eye(d) + np.einsum("nti,ntj->nij", x, x)


@pytest.mark.parametrize("warm", [False, True])
def test_lockstep_eigendecomposition_is_each_row_alone_bit_for_bit(warm):
    rng = np.random.default_rng(0)
    n, d = 7, 5
    grams = _grams(rng, n, d)
    guess = np.stack([np.linalg.qr(rng.normal(size=(d, d)))[0] if warm else np.eye(d) for _ in range(n)])
    eigvals, eigvecs, largest = np.empty((n, d)), guess.copy(), np.empty(n)
    kernels._eigh_rows(grams, eigvals, eigvecs, np.empty((n, d, d)), np.empty((n, d, d)), largest, np.zeros(n, bool))
    for r in range(n):
        vals, vecs = np.empty(d), guess[r].copy()
        top = kernels._eigh(grams[r], vals, vecs, np.empty((d, d)), np.empty((d, d)))
        np.testing.assert_array_equal(vals, eigvals[r])
        np.testing.assert_array_equal(vecs, eigvecs[r])
        assert top == largest[r] == vals.max()
        np.testing.assert_allclose(np.sort(vals), np.linalg.eigvalsh(grams[r]), rtol=1e-12)
        np.testing.assert_allclose(vecs @ np.diag(vals) @ vecs.T, grams[r], rtol=1e-12, atol=1e-10)


def test_lockstep_projection_is_each_row_alone_and_the_reference():
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
