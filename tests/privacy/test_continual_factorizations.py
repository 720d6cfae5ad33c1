"""Factorizations A = B C of the prefix-sum matrix (binary tree, Honaker, square root).

Closed forms and brute force: C . C = A for the square root; B C = A for each; analytic row / column norms
against the dense matrices; Honaker's streaming estimate against the least-squares BLUE; the error table
at tau = 20,002 (analytic); streamed releases against the batch product A x + B z; identical-noise
neighbours; the white-box privacy loss; an empirical audit with a half-noise mutant.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import brentq

from dpfair.privacy import ContinualSumMechanism, audit_epsilon, get_factorization
from dpfair.privacy._factorizations import _blt_closed_forms, auto_factorization
from dpfair.privacy.accounting import gaussian_delta
from dpfair.privacy.continual import (
    FACTORIZATIONS,
    BLTFactorization,
    HonakerFactorization,
    SqrtFactorization,
    TreeFactorization,
    sqrt_coefficients,
)

NAMES = sorted(FACTORIZATIONS)
pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")


def _prefix(T):
    return np.tril(np.ones((T, T)))


def _small(name, T):
    # a small block makes the square root's draw-ahead cross several blocks
    return SqrtFactorization(T, block=5) if name == "sqrt" else get_factorization(name, T)


# ------------------------------------------------------------------------------------- the factorizations
@pytest.mark.parametrize("T", [1, 2, 3, 10, 128, 1000])
def test_sqrt_factor_squares_to_the_prefix_matrix(T):
    c = sqrt_coefficients(T)
    exact = np.array([float(Fraction(math.comb(2 * k, k), 4**k)) for k in range(min(T, 200))])  # C(2j, j) / 4^j
    np.testing.assert_allclose(c[: len(exact)], exact, rtol=1e-14)
    B, C = SqrtFactorization(T).matrices()
    np.testing.assert_array_equal(B, C)
    assert np.abs(C @ C - _prefix(T)).max() <= 1e-12


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("T", [1, 2, 5, 8, 33, 200])
def test_each_factorization_multiplies_to_the_prefix_matrix_with_its_analytic_norms(name, T):
    f = get_factorization(name, T)
    B, C = f.matrices()
    assert C.shape == (f.n_rows, T) and B.shape == (T, f.n_rows)
    assert sum(f.n_draws(t) for t in range(1, T + 1)) == f.n_rows
    # the BLT's C comes from an order-d recursion (its poles near 1): float64 error ~5e-12 at T = 200, which moves
    # mu by ~1e-11 relative, far inside the Gaussian profile's 1e-9 margin on delta
    tol = 1e-10 if name == "blt" else 1e-12
    assert np.abs(B @ C - _prefix(T)).max() <= tol
    np.testing.assert_allclose(np.linalg.norm(C, axis=0), f.column_norms(), rtol=tol)
    np.testing.assert_allclose(np.linalg.norm(B, axis=1), f.release_norms(), rtol=tol)
    assert f.sensitivity == pytest.approx(np.linalg.norm(C, axis=0).max(), rel=tol)
    # C is causal: the noise row drawn at step t only reads elements <= t (adaptive streams)
    drawn_by = np.repeat(np.arange(1, T + 1), [f.n_draws(t) for t in range(1, T + 1)]) if name != "sqrt" else np.arange(1, T + 1)
    for r, t in enumerate(drawn_by):
        assert not C[r, t:].any()


@pytest.mark.parametrize("T", [1, 3, 8, 13, 40])
def test_honaker_release_is_the_least_squares_estimate_from_every_completed_node(T):
    f = HonakerFactorization(T)
    B, C = f.matrices()
    ends = np.array([end for end, _ in f.rows()])
    for t in range(1, T + 1):
        Ct = C[ends <= t][:, :t]  # every node completed by t (they only cover elements <= t)
        blue = Ct @ np.linalg.solve(Ct.T @ Ct, np.ones(t))  # 1^T (Ct^T Ct)^-1 Ct^T: the BLUE of S_t
        row = np.zeros(len(ends))
        row[np.flatnonzero(ends <= t)] = blue
        np.testing.assert_allclose(B[t - 1], row, atol=1e-12)


def test_the_error_table_of_the_issue_at_tau_20002():
    """Worst / RMS noise std of the released prefix sums, units 1/sqrt(2 rho), analytic (the guide's table)."""
    table = {"tree": (14.49, 10.22), "honaker": (10.82, 7.63), "sqrt": (4.22, 4.06)}
    for name, (worst, rms) in table.items():
        err = get_factorization(name, 20_002).error()
        assert round(err["worst"], 2) == worst and round(err["rms"], 2) == rms, (name, err)
    # the binary tree's closed forms: sens^2 = floor(log2 T) + 1 = 15, worst popcount 14
    assert get_factorization("tree", 20_002).error()["worst"] == pytest.approx(math.sqrt(15 * 14), rel=1e-12)


def test_bad_factorization_arguments():
    with pytest.raises(ValueError, match="factorization must be 'auto' or one of"):
        get_factorization("banded", 10)
    with pytest.raises(TypeError, match="factorization"):
        get_factorization(3, 10)
    with pytest.raises(ValueError, match="horizon 10, not 11"):
        get_factorization(TreeFactorization(10), 11)
    with pytest.raises(ValueError, match="horizon"):
        TreeFactorization(0)
    with pytest.raises(ValueError, match="matrices"):
        SqrtFactorization(5000).matrices()


def test_blt_keeps_constant_state_and_auto_takes_it_within_five_percent_of_the_square_root():
    # the BLT's stream holds d buffers and the running noise per column whatever the horizon; the square root's
    # holds the spectra of every z drawn
    for T in (100, 20_002):
        stream = BLTFactorization(T).stream((21,))
        stream.steps(np.random.default_rng(0).normal(size=(50, 21)), 50)
        assert stream.buffers.shape == (3, 21) and stream.total.shape == (21,)
    # Exp 1's 20,002 releases: 1.3 % more noise at the worst release than the square root (equal privacy)
    sqrt = SqrtFactorization(20_002).error()["worst"]
    assert BLTFactorization(20_002).error()["worst"] / sqrt == pytest.approx(1.0128, abs=5e-4)
    assert auto_factorization(20_002) == "blt" and get_factorization("auto", 20_002).name == "blt"
    assert auto_factorization(20_002, tolerance=0.01) == "sqrt"  # the rule reads the measured ratio
    # the optimiser's closed forms agree with the coefficients the accounting uses
    f = BLTFactorization(5_000)
    sum_c, sum_b = _blt_closed_forms(f.theta, f.omega, f.horizon)
    assert math.sqrt(sum_c) == pytest.approx(f.sensitivity, rel=1e-9)
    assert math.sqrt(sum_b) == pytest.approx(f.release_norms()[-1], rel=1e-9)


# ----------------------------------------------------------------------------------------- the mechanism
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("symmetric", [False, True])
def test_streamed_releases_equal_the_batch_product(name, symmetric):
    """Releases = A x + B z, with z the seeded draws in the row order of C (drawn in one go here)."""
    T, seed = 37, 11
    shape = (2, 3, 3) if symmetric else (4,)
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(T, *shape))
    if symmetric:
        xs = xs + np.swapaxes(xs, -1, -2)
    f = _small(name, T)
    mech = ContinualSumMechanism(T, shape, sensitivity=1.0, rho=0.7, factorization=f, symmetric=symmetric,
                                 random_state=seed)
    releases = np.array([mech.step(x) for x in xs])
    B, _ = f.matrices()
    if symmetric:
        iu = np.triu_indices(3)
        z = np.random.default_rng(seed).normal(0.0, mech.noise_scale, size=(f.n_rows, 2, len(iu[0])))
        noise = np.einsum("tr,r...->t...", B, z)
        full = np.zeros((T, 2, 3, 3))
        full[..., iu[0], iu[1]] = noise
        full[..., iu[1], iu[0]] = noise
    else:
        z = np.random.default_rng(seed).normal(0.0, mech.noise_scale, size=(f.n_rows, *shape))
        full = np.einsum("tr,r...->t...", B, z)
    expected = np.einsum("ts,s...->t...", _prefix(T), xs) + full
    np.testing.assert_allclose(releases, expected, rtol=1e-10, atol=1e-10)
    if symmetric:
        np.testing.assert_array_equal(releases, np.swapaxes(releases, -1, -2))


def test_square_root_default_blocks_stream_the_batch_noise():
    """The default draw-ahead blocks (256, 256, then doubling): the noise of every release is (C z)_t."""
    T = 1100
    f = SqrtFactorization(T)
    assert [f.n_draws(t) for t in (1, 257, 513, 1025)] == [256, 256, 512, 76]
    assert sum(f.n_draws(t) for t in range(1, T + 1)) == T
    z = np.random.default_rng(2).normal(size=(T, 2))
    stream, streamed, k = f.stream((2,)), [], 0
    for t in range(1, T + 1):
        n = f.n_draws(t)
        streamed.append(stream.step(z[k : k + n]))
        k += n
    np.testing.assert_allclose(np.array(streamed), f.matrices()[1] @ z, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_identical_noise_neighbours_differ_by_exactly_the_column_of_A(name):
    T, s, seed = 50, 17, 3
    x = np.random.default_rng(1).uniform(-1, 1, size=(T, 3))
    x2 = x.copy()
    x2[s - 1] = np.array([0.6, -0.8, 0.0])  # one element replaced
    runs = []
    for stream in (x, x2):
        mech = ContinualSumMechanism(T, (3,), sensitivity=2.0, rho=0.5, factorization=name, random_state=seed)
        runs.append(np.array([mech.step(e) for e in stream]))
    diff = runs[1] - runs[0]
    expected = np.outer(_prefix(T)[:, s - 1], x2[s - 1] - x[s - 1])  # A e_s (x_s' - x_s); the noise cancels
    np.testing.assert_allclose(diff, expected, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("T", [1, 6, 64, 100])
def test_white_box_privacy_loss_equals_the_declared_rho(name, T):
    """Neighbours x, x' with ||x_s - x_s'|| = Delta shift C x by Delta C e_s: the Gaussian's privacy loss
    is N(m, 2m) with m = Delta^2 ||C e_s||^2 / (2 sigma^2); its worst case is the declared rho, exactly.
    In release space (B C x + B z, covariance sigma^2 B B^T) it is the same for the invertible B of the
    tree and the square root, and no more for Honaker's (post-processing)."""
    rho, delta = 0.3, 2.5
    mech = ContinualSumMechanism(T, (1,), sensitivity=delta, rho=rho, factorization=name, random_state=0)
    B, C = mech.factorization.matrices()
    sigma = mech.noise_scale
    loss = delta**2 * (C * C).sum(axis=0) / (2 * sigma**2)
    assert loss.max() == pytest.approx(rho, rel=1e-12)
    assert np.all(loss <= rho * (1 + 1e-12))
    cov = sigma**2 * B @ B.T
    mu = delta * _prefix(T)
    release_loss = np.einsum("ts,ts->s", mu, np.linalg.solve(cov, mu)) / 2
    assert np.all(release_loss <= rho * (1 + 1e-8))
    if name != "honaker":
        assert release_loss.max() == pytest.approx(rho, rel=1e-8)
    # Monte Carlo on the z-space loss: mean m, variance 2m (a check of the Gaussian loss law itself)
    s = int(np.argmax(loss))
    rng = np.random.default_rng(5)
    z = rng.normal(0.0, sigma, size=(10_000, C.shape[0]))
    shift = delta * C[:, s]
    y = z + shift  # output under x' (C x = 0 under x)
    priv_loss = ((y - 0) ** 2).sum(axis=1) / (2 * sigma**2) - ((y - shift) ** 2).sum(axis=1) / (2 * sigma**2)
    assert priv_loss.mean() == pytest.approx(rho, abs=4 * math.sqrt(2 * rho / 10_000))
    assert priv_loss.var() == pytest.approx(2 * rho, rel=0.06)  # 4 standard errors


def _exact_epsilon(rho, delta):
    """epsilon(delta) of the Gaussian with shift sqrt(2 rho) std (Balle & Wang's exact profile)."""
    return brentq(lambda e: gaussian_delta(1.0, e, math.sqrt(2 * rho)) - delta, 0.0, 50.0)


def _release_statistic(name, T, rho, s, noise_share):
    """audit mechanism: `size` independent streams (the batch axis), reduced to the optimal 1-d statistic."""
    f = get_factorization(name, T)
    B, _ = f.matrices()
    mu = _prefix(T)[:, s - 1]
    weights = np.linalg.solve(B @ B.T, mu)  # Neyman-Pearson direction Sigma^-1 A e_s (up to scale)

    def run(element, size, rng):
        mech = ContinualSumMechanism(T, (size,), sensitivity=1.0, rho=rho, factorization=name, random_state=rng)
        mech.noise_scale *= noise_share  # the mutant draws a fraction of the accounted noise
        x = np.zeros((T, size))
        x[s - 1] = element
        return weights @ np.array([mech.step(e) for e in x])

    return run


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_audit_passes_the_honest_mechanism_and_catches_a_half_noise_mutant(name):
    T, rho, delta = 12, 0.5, 1e-3
    s = int(np.argmax(get_factorization(name, T).column_norms())) + 1  # the worst element
    claimed = _exact_epsilon(rho, delta)  # the tightest claim the rho-zCDP Gaussian supports
    kwargs = {"n_samples": 100_000, "delta": delta, "n_bins": 30, "random_state": 4}
    honest = audit_epsilon(_release_statistic(name, T, rho, s, 1.0), 0.0, 1.0, **kwargs)
    mutant = audit_epsilon(_release_statistic(name, T, rho, s, 0.5), 0.0, 1.0, **kwargs)
    print(f"{name}: claimed epsilon {claimed:.3f} at delta {delta}; audit honest {honest.epsilon_lower_bound:.3f}, "
          f"half-noise mutant {mutant.epsilon_lower_bound:.3f}")
    assert honest.epsilon_lower_bound <= claimed
    assert mutant.epsilon_lower_bound > claimed
