"""Pure functions for privacy conversion, composition and noise calibration.

Notation: pure ``epsilon``-DP, approximate ``(epsilon, delta)``-DP and ``rho``-zCDP
(zero-concentrated DP, Bun & Steinke 2016).  ``inf`` means "no privacy" everywhere.
Every function validates its arguments (NaN is always refused).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from scipy import optimize, special

from dpfair._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_nonnegative_finite,
    check_rho,
    check_sensitivity,
)

__all__ = [
    "advanced_composition",
    "approx_dp_to_zcdp",
    "basic_composition",
    "exponential_mechanism_to_zcdp",
    "gaussian_delta",
    "gaussian_sigma_approx_dp",
    "gaussian_sigma_zcdp",
    "laplace_scale",
    "pure_dp_to_zcdp",
    "zcdp_composition",
    "zcdp_delta",
    "zcdp_to_approx_dp",
]


def _check_delta_open(delta: float, name: str = "delta") -> float:
    d = check_delta(delta, name)
    if d == 0.0:
        raise ValueError(f"{name} must be > 0 for this conversion (rho-zCDP never gives pure DP).")
    return d


def _cks_log_delta(rho: float, epsilon: float, alpha: float) -> float:
    # Canonne, Kamath & Steinke (2020), Prop. 12: for every alpha > 1,
    # delta <= exp((alpha-1)(alpha*rho - eps)) / (alpha - 1) * (1 - 1/alpha)^alpha.
    return (alpha - 1.0) * (alpha * rho - epsilon) - math.log(alpha - 1.0) + alpha * math.log1p(-1.0 / alpha)


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest ``delta`` such that ``rho``-zCDP implies ``(epsilon, delta)``-DP (tight bound).

    Uses the optimal conversion of Canonne, Kamath & Steinke (2020, Prop. 12),
    minimized over the Renyi order ``alpha > 1``.
    """
    rho = check_rho(rho)
    epsilon = check_nonnegative_finite(epsilon, "epsilon")
    if math.isinf(rho):
        return 1.0
    if rho == 0:
        return 0.0
    res = optimize.minimize_scalar(
        lambda la: _cks_log_delta(rho, epsilon, 1.0 + math.exp(la)),
        bounds=(-30.0, 30.0),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return float(min(1.0, math.exp(res.fun)))


def zcdp_to_approx_dp(rho: float, delta: float, *, method: str = "tight") -> float:
    """Convert ``rho``-zCDP to ``(epsilon, delta)``-DP and return ``epsilon``.

    Parameters
    ----------
    rho : float
        zCDP parameter (> 0; ``inf`` gives ``inf``).
    delta : float
        Target ``delta`` in (0, 1).
    method : {"tight", "standard"}
        ``"standard"``: ``rho + 2*sqrt(rho*ln(1/delta))`` (Bun & Steinke 2016, Prop. 1.3).
        ``"tight"``: the optimal conversion of Canonne, Kamath & Steinke (2020), the one
        OpenDP's ``make_zCDP_to_approxDP`` uses; never larger than ``"standard"``.
    """
    rho = check_rho(rho)
    delta = _check_delta_open(delta)
    if math.isinf(rho):
        return math.inf
    standard = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    if method == "standard":
        return standard
    if method != "tight":
        raise ValueError(f"method must be 'tight' or 'standard', got {method!r}.")
    # epsilon(delta) is the inverse of the decreasing function zcdp_delta(rho, .)
    if zcdp_delta(rho, 0.0) <= delta:
        return 0.0
    log_delta = math.log(delta)
    return float(optimize.brentq(lambda e: math.log(zcdp_delta(rho, e)) - log_delta, 0.0, standard + 1.0, xtol=1e-14, rtol=1e-13))


def approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """``rho`` whose standard conversion gives exactly ``(epsilon, delta)``.

    ``rho = (sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)))**2``, the rule the
    Private-Fair-Greedy paper uses to split an ``(epsilon, delta)`` budget across
    zCDP releases (it inverts ``epsilon = rho + 2*sqrt(rho*ln(1/delta))``).
    """
    epsilon = check_epsilon(epsilon)
    delta = _check_delta_open(delta)
    if math.isinf(epsilon):
        return math.inf
    log_inv = math.log(1.0 / delta)
    return (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2


def pure_dp_to_zcdp(epsilon: float) -> float:
    """``epsilon``-DP implies ``epsilon**2 / 2``-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    epsilon = check_epsilon(epsilon)
    return epsilon**2 / 2.0


def exponential_mechanism_to_zcdp(epsilon: float) -> float:
    """The ``epsilon``-DP exponential mechanism is ``epsilon**2 / 8``-zCDP.

    Bounded-range argument of Cesar & Rogers (2021); applies to the exponential
    mechanism only, not to arbitrary pure-DP mechanisms.
    """
    epsilon = check_epsilon(epsilon)
    return epsilon**2 / 8.0


def basic_composition(costs: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """Sum of ``(epsilon_i, delta_i)``: the basic composition theorem."""
    total_eps = 0.0
    total_delta = 0.0
    for i, pair in enumerate(costs):
        try:
            eps, delta = pair
        except (TypeError, ValueError):
            raise TypeError(f"costs[{i}] must be an (epsilon, delta) pair, got {pair!r}.") from None
        total_eps += check_epsilon(eps, f"costs[{i}].epsilon")
        total_delta += check_delta(delta, f"costs[{i}].delta")
    return total_eps, min(total_delta, 1.0)


def advanced_composition(epsilon: float, delta: float, k: int, delta_slack: float) -> tuple[float, float]:
    """k-fold adaptive composition of ``(epsilon, delta)``-DP mechanisms.

    Dwork, Rothblum & Vadhan (2010), Theorem III.3: the composition is
    ``(sqrt(2k ln(1/delta_slack)) * epsilon + k * epsilon * (exp(epsilon) - 1), k*delta + delta_slack)``-DP.

    Returns
    -------
    (epsilon_total, delta_total)
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    k = check_int(k, "k", minimum=1)
    delta_slack = _check_delta_open(delta_slack, "delta_slack")
    if math.isinf(epsilon):
        return math.inf, min(1.0, k * delta + delta_slack)
    eps_total = math.sqrt(2.0 * k * math.log(1.0 / delta_slack)) * epsilon + k * epsilon * math.expm1(epsilon)
    return eps_total, min(1.0, k * delta + delta_slack)


def zcdp_composition(rhos: Iterable[float]) -> float:
    """zCDP composes additively: the sum of the ``rho_i``."""
    return float(sum(check_rho(r, f"rhos[{i}]") for i, r in enumerate(rhos)))


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Laplace scale ``b = sensitivity_L1 / epsilon`` for ``epsilon``-DP (0 when epsilon is inf)."""
    sensitivity = check_sensitivity(sensitivity, "sensitivity")
    epsilon = check_epsilon(epsilon)
    return 0.0 if math.isinf(epsilon) else sensitivity / epsilon


def gaussian_sigma_zcdp(sensitivity: float, rho: float) -> float:
    """Gaussian standard deviation ``sensitivity_L2 / sqrt(2*rho)`` for ``rho``-zCDP."""
    sensitivity = check_sensitivity(sensitivity, "sensitivity")
    rho = check_rho(rho)
    return 0.0 if math.isinf(rho) else sensitivity / math.sqrt(2.0 * rho)


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact ``delta(epsilon)`` of the Gaussian mechanism (Balle & Wang 2018, Theorem 8).

    ``delta = Phi(D/(2s) - eps*s/D) - exp(eps) * Phi(-D/(2s) - eps*s/D)`` with ``D`` the
    L2 sensitivity and ``s`` the noise standard deviation.
    """
    sigma = check_nonnegative_finite(sigma, "sigma")
    epsilon = check_nonnegative_finite(epsilon, "epsilon")
    sensitivity = check_sensitivity(sensitivity)
    if sigma == 0:
        return 1.0
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    # second term computed in log space: exp(eps) * Phi(-a-b) can overflow otherwise
    second = math.exp(epsilon + special.log_ndtr(-a - b))
    return float(max(0.0, special.ndtr(a - b) - second))


def gaussian_sigma_approx_dp(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest Gaussian ``sigma`` giving ``(epsilon, delta)``-DP (analytic Gaussian mechanism).

    Balle & Wang (2018): bisection on the exact ``delta`` of :func:`gaussian_delta`.
    Valid for every ``epsilon > 0`` (the classical ``sqrt(2 ln(1.25/delta))/epsilon`` rule
    only holds for ``epsilon < 1`` and is looser).
    """
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon)
    delta = _check_delta_open(delta)
    if math.isinf(epsilon):
        return 0.0
    lo, hi = 1e-12 * sensitivity, sensitivity
    while gaussian_delta(hi, epsilon, sensitivity) > delta:
        hi *= 2.0
    return float(
        optimize.brentq(lambda s: gaussian_delta(s, epsilon, sensitivity) - delta, lo, hi, xtol=1e-15 * sensitivity, rtol=1e-14)
    )
