"""The ``mu``-GDP privacy profile: exact ``(epsilon, delta)`` accounting of one Gaussian (matrix) mechanism.

Re-exported by :mod:`dpfair.privacy.accounting` (split off for the 800-line rule).
"""

from __future__ import annotations

import math

from scipy import optimize

from dpfair._validation import check_epsilon, check_nonnegative_finite
from dpfair.privacy.accounting import _check_delta_open, _gaussian_delta, gaussian_sigma_approx_dp

__all__ = ["gaussian_dp_delta", "gaussian_dp_epsilon", "gaussian_dp_mu"]


def gaussian_dp_delta(mu: float, epsilon: float) -> float:
    """Privacy profile of ``mu``-GDP: ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.

    Balle & Wang (2018), Theorem 8; Dong, Roth & Su (2022), Corollary 2.13.  The Gaussian mechanism
    with L2 sensitivity ``D`` and noise ``sigma`` is ``mu = D / sigma``-GDP, and so is the Gaussian
    matrix mechanism ``B (C x + z)`` with ``mu = sens(C) D / sigma``, also on adaptively chosen
    streams when ``C`` is lower-triangular (Denisov et al. 2022).  This is the exact
    ``(epsilon, delta)`` curve, tighter than converting its zCDP ``rho = mu^2 / 2`` (:func:`zcdp_delta`).

    Parameters
    ----------
    mu : float
        ``mu >= 0``, finite.
    epsilon : float
        Finite ``epsilon >= 0``.

    Returns
    -------
    float
        ``delta`` in [0, 1] (computed as :func:`gaussian_delta` with ``sigma = 1``, sensitivity ``mu``).

    Raises
    ------
    TypeError, ValueError
        If an argument is not a real number in its range.
    """
    mu = check_nonnegative_finite(mu, "mu")
    epsilon = check_nonnegative_finite(epsilon, "epsilon")
    if mu == 0:
        return 0.0
    return _gaussian_delta(1.0, epsilon, mu)


def gaussian_dp_mu(epsilon: float, delta: float) -> float:
    """The largest ``mu`` whose ``mu``-GDP profile gives ``delta(epsilon) <= delta`` (certified).

    ``1 / gaussian_sigma_approx_dp(1, epsilon, delta)``: the bisection there verifies that the
    returned noise meets ``delta``; the reciprocal is rounded down so the bound is never exceeded.

    Parameters
    ----------
    epsilon : float
        ``epsilon > 0`` (finite).
    delta : float
        ``delta`` in (0, 1).

    Returns
    -------
    float
        ``mu > 0`` with ``gaussian_dp_delta(mu, epsilon) <= delta``.

    Raises
    ------
    TypeError, ValueError
        If an argument is invalid (``epsilon = inf`` has no finite ``mu``).
    """
    epsilon = check_epsilon(epsilon)
    if math.isinf(epsilon):
        raise ValueError("epsilon must be finite: epsilon=inf allows any mu (no noise).")
    sigma = gaussian_sigma_approx_dp(1.0, epsilon, delta)
    mu = math.nextafter(1.0 / sigma, 0.0)
    while gaussian_dp_delta(mu, epsilon) > delta:  # pragma: no cover - the reciprocal's rounding
        mu = math.nextafter(mu, 0.0)
    return mu


def gaussian_dp_epsilon(mu: float, delta: float) -> float:
    """The smallest ``epsilon`` with ``gaussian_dp_delta(mu, epsilon) <= delta`` (rounded up).

    Parameters
    ----------
    mu : float
        ``mu >= 0``, finite.
    delta : float
        ``delta`` in (0, 1).

    Returns
    -------
    float
        ``epsilon >= 0`` (0 when ``delta(0) <= delta`` already).

    Raises
    ------
    TypeError, ValueError
        If an argument is not a real number in its range.
    """
    mu = check_nonnegative_finite(mu, "mu")
    delta = _check_delta_open(delta)
    if gaussian_dp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_dp_delta(mu, hi) > delta:
        hi *= 2.0
        if hi > 1e300:  # pragma: no cover - mu beyond any finite epsilon at this delta
            return math.inf
    eps = optimize.brentq(lambda e: gaussian_dp_delta(mu, e) - delta, 0.0, hi, xtol=1e-14, rtol=1e-14)
    for step in (0.0, 1e-13, 1e-11, 1e-9):  # never below the curve (brentq may stop short of the root)
        if gaussian_dp_delta(mu, eps * (1.0 + step) + step) <= delta:
            return eps * (1.0 + step) + step
    return hi
