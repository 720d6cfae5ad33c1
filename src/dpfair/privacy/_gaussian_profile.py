"""The Gaussian mechanism's accounting: its noise calibration and its exact ``mu``-GDP privacy profile.

Re-exported by :mod:`dpfair.privacy.accounting` (split off for the 800-line rule); imports nothing of it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from dpfair._validation import check_delta, check_epsilon, check_nonnegative_finite, check_rho, check_sensitivity

__all__ = [
    "gaussian_delta",
    "gaussian_dp_delta",
    "gaussian_dp_epsilon",
    "gaussian_dp_mu",
    "gaussian_sigma_approx_dp",
    "gaussian_sigma_zcdp",
]


def _check_delta_open(delta: float, name: str = "delta") -> float:
    d = check_delta(delta, name)
    if d == 0.0:
        raise ValueError(f"{name} must be > 0 for this conversion (rho-zCDP never gives pure DP).")
    return d


def _representable_scale(scale: float, name: str) -> float:
    if math.isinf(scale):
        raise ValueError(
            f"{name} is too small for this sensitivity: the noise scale overflows float64; "
            f"use a larger {name} or rescale the statistic."
        )
    if scale == 0:
        raise ValueError(
            f"{name} is so large that the noise scale underflows to 0 (no noise); "
            f"pass {name}=float('inf') for the exact, non-private release."
        )
    return scale


def gaussian_sigma_zcdp(sensitivity: float, rho: float) -> float:
    """Gaussian standard deviation ``sensitivity_L2 / sqrt(2*rho)`` for ``rho``-zCDP.

    Parameters
    ----------
    sensitivity : float
        Declared L2 sensitivity (finite, > 0).
    rho : float
        ``rho > 0``; ``inf`` gives 0 (no noise).

    Returns
    -------
    float
        The standard deviation ``sigma = sensitivity / sqrt(2*rho)`` (0.0 when ``rho`` is
        ``inf``).

    Raises
    ------
    TypeError, ValueError
        If an argument is invalid or ``sigma`` is not representable (overflow, or
        underflow to 0 at a finite ``rho``).
    """
    sensitivity = check_sensitivity(sensitivity, "sensitivity")
    rho = check_rho(rho)
    if math.isinf(rho):
        return 0.0
    return _representable_scale(sensitivity / (math.sqrt(2.0) * math.sqrt(rho)), "rho")


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact ``delta(epsilon)`` of the Gaussian mechanism (Balle & Wang 2018, Theorem 8).

    ``delta = Phi(D/(2s) - eps*s/D) - exp(eps) * Phi(-D/(2s) - eps*s/D)`` with ``D`` the
    L2 sensitivity and ``s`` the noise standard deviation.

    Parameters
    ----------
    sigma : float
        Noise standard deviation (finite, >= 0; 0 gives 1).
    epsilon : float
        Finite ``epsilon >= 0``.
    sensitivity : float, default 1.0
        Declared L2 sensitivity.

    Returns
    -------
    float
        ``delta`` in [0, 1].

    Raises
    ------
    TypeError, ValueError
        If an argument is not a real number in its range.
    """
    sigma = check_nonnegative_finite(sigma, "sigma")
    epsilon = check_nonnegative_finite(epsilon, "epsilon")
    sensitivity = check_sensitivity(sensitivity)
    if sigma == 0:
        return 1.0
    return _gaussian_delta(sigma, epsilon, sensitivity)


def _log_gaussian_delta_narrow(a: float, b: float, epsilon: float) -> float:
    """``delta`` for a narrow window ``a <= 1e-4`` (huge sigma), where Phi(a-b) - Phi(-a-b) cancels.

    ``Phi(a-b) - Phi(-a-b) = phi(b) * int_{-a}^{a} exp(b t - t**2/2) dt <= phi(b) * 2 sinh(a b) / b``
    (relative slack below ``a**2/2 <= 5e-9``, towards a larger delta, i.e. more noise).
    """
    if a == 0:
        return 0.0
    z = a * b
    if z < 1e-8:  # sinh(z) / z = 1 to float64 precision (and z may be subnormal, with few digits)
        log_window = math.log(2.0) + math.log(a)
    elif z < 1.0:
        log_window = math.log(2.0 * math.sinh(z)) - math.log(b)
    else:
        log_window = z + math.log1p(-math.exp(-2.0 * z)) - math.log(b)
    log_first = -0.5 * b * b - 0.5 * math.log(2.0 * math.pi) + log_window
    log_second = math.log(math.expm1(epsilon)) + float(special.log_ndtr(-a - b)) if epsilon > 0 else -math.inf
    if log_second >= log_first:
        return 0.0
    return math.exp(log_first) * -math.expm1(log_second - log_first)


def _gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    with np.errstate(over="ignore"):
        a = (sensitivity / sigma) / 2.0
        b = epsilon * (sigma / sensitivity)
    if a <= 1e-4 and epsilon < 700 and math.isfinite(b):
        # the two Phi terms nearly coincide; the direct difference would lose every digit below ~1e-16
        return min(1.0, _log_gaussian_delta_narrow(a, b, epsilon))
    # second term in log space: exp(eps) * Phi(-a-b) overflows otherwise.  Mathematically it
    # never exceeds Phi(a - b) <= 1, so its log is <= 0; clamping only removes rounding overflow.
    second = math.exp(min(0.0, epsilon + float(special.log_ndtr(-a - b))))
    return float(min(1.0, max(0.0, special.ndtr(a - b) - second)))


_LARGE_EPSILON = 1e6


def gaussian_sigma_approx_dp(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest Gaussian ``sigma`` giving ``(epsilon, delta)``-DP (analytic Gaussian mechanism).

    Balle & Wang (2018): bisection on the exact ``delta`` of :func:`gaussian_delta`.
    Valid for every ``epsilon > 0`` (the classical ``sqrt(2 ln(1.25/delta))/epsilon`` rule
    only holds for ``epsilon < 1`` and is looser).  For ``epsilon > 1e6`` float64 cannot
    resolve the bisection; the closed-form root of ``Phi(D/(2s) - eps*s/D) = delta`` is used
    instead (it drops the subtracted term of the exact ``delta``, so it is slightly larger,
    hence still valid).

    Parameters
    ----------
    sensitivity : float
        Declared L2 sensitivity.
    epsilon : float
        ``epsilon > 0``; ``inf`` gives 0 (no noise).
    delta : float
        ``delta`` in (0, 1).

    Returns
    -------
    float
        ``sigma > 0`` (0 for ``epsilon = inf``).

    Raises
    ------
    TypeError, ValueError
        If an argument is invalid or ``sigma`` is not representable in float64.
    """
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon)
    delta = _check_delta_open(delta)
    if math.isinf(epsilon):
        return 0.0
    if epsilon > _LARGE_EPSILON:
        # a - b = z with a = D/(2s), b = eps*s/D:  s = D * (sqrt(z**2 + 2 eps) - z) / (2 eps)
        # = D / (sqrt(2) * sqrt(eps + z**2 / 2) + z), written without overflow or cancellation
        z = float(special.ndtri(delta))
        sigma = sensitivity / (math.sqrt(2.0) * math.sqrt(epsilon + 0.5 * z * z) + z)
        return _representable_scale(sigma, "epsilon")
    lo, hi = 1e-12 * sensitivity, sensitivity
    while _gaussian_delta(hi, epsilon, sensitivity) > delta:
        hi *= 2.0
        if math.isinf(hi):
            raise ValueError(
                "epsilon and delta are so small that sigma overflows float64; use a larger epsilon or delta, "
                "or rescale the statistic."
            )
    if lo == 0 or _gaussian_delta(lo, epsilon, sensitivity) <= delta:
        return _representable_scale(lo, "epsilon")
    # bisection on log(sigma): the bracket may span hundreds of orders of magnitude
    def excess(log_sigma: float) -> float:
        return _gaussian_delta(math.exp(log_sigma), epsilon, sensitivity) - delta

    ls_lo, ls_hi = math.log(lo), math.log(hi)
    if excess(ls_lo) <= 0:
        return _representable_scale(lo, "epsilon")
    if excess(ls_hi) > 0:  # exp(log(hi)) rounded past the verified hi
        return _representable_scale(hi, "epsilon")
    log_sigma = optimize.brentq(excess, ls_lo, ls_hi, xtol=1e-15, rtol=1e-15, maxiter=500)
    sigma = math.exp(log_sigma)
    # never return a sigma whose delta exceeds the target (brentq may stop just below the root)
    for step in (0.0, 1e-14, 1e-12, 1e-10):
        if _gaussian_delta(sigma * (1.0 + step), epsilon, sensitivity) <= delta:
            return _representable_scale(sigma * (1.0 + step), "epsilon")
    return _representable_scale(hi, "epsilon")


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
