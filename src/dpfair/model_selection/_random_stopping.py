"""Accounting of the random-stopping selection (Liu & Talwar 2019; Papernot & Steinke 2022).

Running a random number ``K`` of private trials and releasing only the best one costs a small
constant factor of one trial, independent of how many candidates there are:

* ``n_trials="geometric"`` (Liu & Talwar 2019, Theorem 3.4): ``K`` is geometric with stopping
  probability ``gamma = 1 / mean_trials``; the best of ``K`` runs of an ``epsilon``-DP trial is
  ``3 epsilon``-DP (pure).  So ``epsilon_trial = epsilon / 3``.
* ``n_trials="truncated_negative_binomial"`` (Papernot & Steinke 2022, Theorem 2): ``K`` follows
  the truncated negative binomial ``D_{eta, gamma}`` with mean ``mean_trials``; if a trial is
  ``(lambda, e(lambda))``-RDP for all ``lambda``, the selection is ``(lambda, e')``-RDP with
  ``e' = e(lambda) + (1 + eta)(1 - 1/lhat) e(lhat) + (1 + eta) log(1/gamma) / lhat + log E[K] / (lambda - 1)``
  for every ``lhat >= 1``.
* ``n_trials="poisson"`` (Papernot & Steinke 2022, Theorem 6 with ``delta_hat = 0``): ``K`` is
  Poisson with mean ``mean_trials >= 1`` (``K = 0`` outputs nothing); for every ``lambda`` with
  ``exp(epsilon_trial) <= 1 + 1/(lambda - 1)`` the selection is
  ``(lambda, e(lambda) + log(mean_trials) / (lambda - 1))``-RDP.

A pure ``epsilon``-DP trial is ``(lambda, min(epsilon, lambda epsilon^2 / 2))``-RDP (Bun & Steinke
2016: ``epsilon^2 / 2``-zCDP); the RDP curve converts to ``(epsilon, delta)`` with
:func:`dpfair.privacy.rdp_to_approx_dp` (Mironov 2017, Proposition 3) over a grid of orders (any
order gives a valid bound).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from dpfair._validation import check_delta, check_epsilon
from dpfair.privacy.accounting import rdp_to_approx_dp
from dpfair.privacy.noise import NoiseSource

__all__ = ["random_stopping_epsilon", "trial_epsilon_for"]

DISTRIBUTIONS = ("geometric", "truncated_negative_binomial", "poisson")
_ORDERS = 1.0 + np.logspace(-3, 4, 700)  # Renyi orders lambda > 1
_ORDERS_HAT = np.logspace(0, 5, 700)  # lhat >= 1


def _pure_rdp(epsilon: float, orders: np.ndarray) -> np.ndarray:
    """RDP curve of a pure epsilon-DP mechanism: min(epsilon, lambda epsilon^2 / 2)."""
    return np.minimum(epsilon, orders * epsilon * epsilon / 2.0)


def _tnb_gamma(mean_trials: float, eta: float) -> float:
    """The ``gamma`` of the truncated negative binomial D_{eta, gamma} with mean ``mean_trials``."""
    if eta == 1.0:
        return 1.0 / mean_trials

    def mean(gamma: float) -> float:
        if eta == 0.0:
            return (1.0 / gamma - 1.0) / math.log(1.0 / gamma)
        return eta * (1.0 - gamma) / (gamma * (1.0 - gamma**eta))

    lo, hi = 1e-12, 1.0 - 1e-12  # the mean decreases in gamma, from inf to 1
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if mean(mid) > mean_trials:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def random_stopping_epsilon(
    trial_epsilon: float, *, n_trials: str = "geometric", mean_trials: float = 10.0, delta: float = 0.0,
    eta: float = 1.0,
) -> float:
    """Epsilon of the best of a random number of ``trial_epsilon``-DP trials.

    Parameters
    ----------
    trial_epsilon : float
        Pure DP epsilon of one trial (``> 0``, finite).
    n_trials : {"geometric", "truncated_negative_binomial", "poisson"}, default "geometric"
        Distribution of the number of trials.
    mean_trials : float, default 10.0
        Its mean (``> 1`` for the first two, ``>= 1`` for Poisson).
    delta : float, default 0.0
        Target delta: ``0`` for ``"geometric"`` (pure DP, Liu & Talwar 2019), in ``(0, 1)`` for the
        Renyi bounds of Papernot & Steinke (2022).
    eta : float, default 1.0
        Shape of the truncated negative binomial (``> -1``; 1 is the geometric distribution).

    Returns
    -------
    float
        The selection's epsilon: ``3 trial_epsilon`` for a geometric ``K`` with ``delta = 0``, otherwise
        the RDP bound converted at ``delta`` (for a geometric ``K``, the smaller of the two).

    Raises
    ------
    ValueError, TypeError
        On an invalid argument, or ``delta = 0`` with a Renyi-DP distribution.

    Notes
    -----
    * Geometric ``K`` (Liu & Talwar 2019, Theorem 3.4): ``3 trial_epsilon``, pure DP.
    * Truncated negative binomial ``K`` (Papernot & Steinke 2022, Theorem 2): with ``e`` the RDP
      curve of one trial, ``e(lambda) + (1 + eta)(1 - 1/lhat) e(lhat) + (1 + eta) log(1/gamma) / lhat
      + log E[K] / (lambda - 1)`` at every order, minimised over ``lhat >= 1``.
    * Poisson ``K`` (Papernot & Steinke 2022, Theorem 6): ``e(lambda) + log E[K] / (lambda - 1)`` at
      the orders with ``exp(trial_epsilon) <= 1 + 1/(lambda - 1)``.

    A pure ``epsilon``-DP trial has ``e(lambda) = min(epsilon, lambda epsilon^2 / 2)``; the curve is
    converted to ``(epsilon, delta)`` by :func:`dpfair.privacy.rdp_to_approx_dp`.
    """
    trial_epsilon = check_epsilon(trial_epsilon, "trial_epsilon", allow_inf=False)
    n_trials, mean_trials, delta, eta = check_selection(n_trials, mean_trials, delta, eta)
    pure = 3.0 * trial_epsilon if n_trials == "geometric" or (n_trials != "poisson" and eta == 1.0) else math.inf
    if delta == 0.0:
        return pure  # Liu & Talwar (2019), Theorem 3.4 (geometric K)
    lam = _ORDERS
    if n_trials == "poisson":
        usable = np.exp(trial_epsilon) <= 1.0 + 1.0 / (lam - 1.0)
        if not usable.any():
            return math.inf
        lam = lam[usable]
        rdp = _pure_rdp(trial_epsilon, lam) + math.log(mean_trials) / (lam - 1.0)
    else:
        if n_trials == "geometric":
            eta = 1.0
        gamma = _tnb_gamma(mean_trials, eta)
        lhat = _ORDERS_HAT
        inner = np.min((1.0 + eta) * (1.0 - 1.0 / lhat) * _pure_rdp(trial_epsilon, lhat)
                       + (1.0 + eta) * math.log(1.0 / gamma) / lhat)
        rdp = _pure_rdp(trial_epsilon, lam) + inner + math.log(mean_trials) / (lam - 1.0)
    return min(pure, rdp_to_approx_dp(rdp, lam, delta))  # a geometric K has both bounds


def trial_epsilon_for(
    epsilon: float, *, n_trials: str = "geometric", mean_trials: float = 10.0, delta: float = 0.0, eta: float = 1.0
) -> float:
    """Largest per-trial epsilon whose selection costs at most ``(epsilon, delta)``.

    Parameters
    ----------
    epsilon : float
        Total epsilon of the search (``> 0``, finite).
    n_trials : {"geometric", "truncated_negative_binomial", "poisson"}, default "geometric"
        Distribution of the number of trials (as in :func:`random_stopping_epsilon`).
    mean_trials : float, default 10.0
        Its mean.
    delta : float, default 0.0
        Target delta (``> 0`` for the Renyi-DP bounds).
    eta : float, default 1.0
        Shape of the truncated negative binomial.

    Returns
    -------
    float
        ``epsilon_trial`` with ``random_stopping_epsilon(epsilon_trial, ...) <= epsilon``.

    Raises
    ------
    ValueError, TypeError
        On an invalid argument.
    """
    epsilon = check_epsilon(epsilon, allow_inf=False)
    n_trials, mean_trials, delta, eta = check_selection(n_trials, mean_trials, delta, eta)
    if n_trials == "geometric" and delta == 0.0:
        return epsilon / 3.0
    lo, hi = 0.0, epsilon  # a trial never gets more than the whole budget
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if mid > 0 and random_stopping_epsilon(mid, n_trials=n_trials, mean_trials=mean_trials, delta=delta,
                                               eta=eta) <= epsilon:
            lo = mid
        else:
            hi = mid
    if lo <= 0.0:
        raise ValueError(
            f"epsilon={epsilon!r} with delta={delta!r} leaves no budget per trial for n_trials={n_trials!r} "
            f"(mean {mean_trials!r}); use a larger epsilon or delta, or fewer mean trials."
        )
    return lo


def check_selection(n_trials: Any, mean_trials: Any, delta: Any, eta: Any) -> tuple[str, float, float, float]:
    if n_trials not in DISTRIBUTIONS:
        raise ValueError(f"n_trials must be one of {DISTRIBUTIONS}, got {n_trials!r}.")
    if isinstance(mean_trials, bool) or not isinstance(mean_trials, numbers.Real) or not math.isfinite(mean_trials):
        raise TypeError(f"mean_trials must be a finite real number, got {mean_trials!r}.")
    mean_trials = float(mean_trials)
    if n_trials == "poisson" and not mean_trials >= 1:
        # Theorem 6's bound e(lambda) + log(mean) / (lambda - 1) turns negative below a mean of 1, which no
        # Renyi divergence can be: we do not extrapolate the theorem there.
        raise ValueError(f"mean_trials must be >= 1 for Poisson, got {mean_trials!r}.")
    if n_trials != "poisson" and not mean_trials > 1:
        raise ValueError(f"mean_trials must be > 1 for {n_trials!r} (at least one trial is always run), got {mean_trials!r}.")
    delta = check_delta(delta)
    if n_trials != "geometric" and delta == 0.0:
        raise ValueError(
            f"n_trials={n_trials!r} has a Renyi-DP guarantee only: pass delta in (0, 1), or use n_trials='geometric' "
            "for pure DP."
        )
    if isinstance(eta, bool) or not isinstance(eta, numbers.Real) or not (math.isfinite(eta) and eta > -1):
        raise ValueError(f"eta must be a finite real number > -1, got {eta!r}.")
    return n_trials, mean_trials, delta, float(eta)


def draw_n_trials(noise: NoiseSource, n_trials: str, mean_trials: float, eta: float) -> int:
    """Draw K by inverting its CDF with one uniform (data-independent)."""
    u = float(noise.uniform(1)[0])
    if n_trials == "geometric":
        eta = 1.0
    if n_trials == "poisson":
        k, pmf = 0, math.exp(-mean_trials)
        cdf = pmf
        while cdf < u and k < 100_000:
            k += 1
            pmf *= mean_trials / k
            cdf += pmf
        return k
    gamma = _tnb_gamma(mean_trials, eta)
    if eta == 1.0:
        return 1 + math.floor(math.log1p(-u) / math.log1p(-gamma))  # geometric on {1, 2, ...}
    # P(K = k) = (1 - gamma)^k / (gamma^-eta - 1) prod_{l<k} (l + eta) / (l + 1)  (eta = 0: logarithmic)
    norm = math.log(1.0 / gamma) if eta == 0.0 else gamma**-eta - 1.0
    k, term = 1, (1.0 - gamma) * (1.0 if eta == 0.0 else eta)
    cdf = term / norm
    while cdf < u and k < 1_000_000:
        term *= (1.0 - gamma) * (k + eta) / (k + 1) if eta != 0.0 else (1.0 - gamma) * k / (k + 1)
        k += 1
        cdf += term / norm
    return k


