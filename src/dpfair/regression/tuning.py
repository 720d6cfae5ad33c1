"""Private choice of hyper-parameters (``n_bins`` k, ``alpha``, ...) on a validation split.

Xian et al. (2024) end Section 4 noting that selecting (alpha, k) "requires tuning them
(privately) on a validation set", citing Liu & Talwar (2019) and Papernot & Steinke (2022).
This module implements that selection for any dpfair estimator with an ``epsilon`` parameter.

* :class:`PrivateRandomSearch`: the random-stopping selection.  It draws a random number of trials
  ``K``; each trial draws a candidate uniformly from the grid, fits it privately on the training
  rows and scores it privately on disjoint validation rows; the output is the best (candidate,
  noisy score) and that trial's fitted model.  Nothing else is released (not even ``K``).
* Private scorers with declared bounds: :class:`PrivateMSEScorer` (clipped squared error,
  Laplace), :class:`PrivateKSScorer` (statistical-parity violation from a noisy joint histogram of
  group and predicted bin) and :class:`PrivateMSEKSScorer` (MSE plus a KS penalty, or MSE subject to
  a KS target).
* :func:`random_stopping_epsilon` and :func:`trial_epsilon_for`: the accounting of the selection.

Privacy of one trial
--------------------
The rows are split into training and validation rows by public randomness (independent of the
data).  A trial fits an ``epsilon_trial``-DP estimator on the training rows and releases an
``epsilon_trial``-DP score computed from the validation rows and the fitted model only.  Under
"replace one row" a changed row is either a training row (the fit is ``epsilon_trial``-DP, the
score a post-processing of it) or a validation row (the fit is unchanged, the score is
``epsilon_trial``-DP for every model): parallel composition makes the trial ``epsilon_trial``-DP.

Privacy of the selection
------------------------
* ``n_trials="geometric"`` (Liu & Talwar 2019, Theorem 3.4): ``K`` is geometric with stopping
  probability ``gamma = 1 / mean_trials``; the best of ``K`` runs of an ``epsilon``-DP trial is
  ``3 epsilon``-DP (pure).  So ``epsilon_trial = epsilon / 3``.
* ``n_trials="truncated_negative_binomial"`` (Papernot & Steinke 2022, Theorem 2): ``K`` follows
  the truncated negative binomial ``D_{eta, gamma}`` with mean ``mean_trials``; if a trial is
  ``(lambda, e(lambda))``-RDP for all ``lambda``, the selection is ``(lambda, e')``-RDP with
  ``e' = e(lambda) + (1 + eta)(1 - 1/lhat) e(lhat) + (1 + eta) log(1/gamma) / lhat + log E[K] / (lambda - 1)``
  for every ``lhat >= 1``.
* ``n_trials="poisson"`` (Papernot & Steinke 2022, Theorem 6 with ``delta_hat = 0``): ``K`` is
  Poisson with mean ``mean_trials`` (``K = 0`` outputs nothing); for every ``lambda`` with
  ``exp(epsilon_trial) <= 1 + 1/(lambda - 1)`` the selection is
  ``(lambda, e(lambda) + log(mean_trials) / (lambda - 1))``-RDP.

A pure ``epsilon``-DP trial is ``(lambda, min(epsilon, lambda epsilon^2 / 2))``-RDP (Bun & Steinke
2016: ``epsilon^2 / 2``-zCDP); RDP converts to ``(epsilon, delta)`` by
``epsilon = min_lambda e'(lambda) + log(1/delta) / (lambda - 1)`` (Mironov 2017, Proposition 3),
minimised over a grid of orders (any order gives a valid bound).  The search charges its whole
``(epsilon, delta)`` to ``budget`` once, before any random draw; ``refit_alpha`` inside a fitted
candidate costs nothing.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, RegressorMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import ParameterGrid
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import _num_samples, check_is_fitted

from dpfair._estimator import (
    as_sensitive_features,
    charge_budget,
    check_budget,
    group_index,
    privacy_spent,
    resolve_groups,
)
from dpfair._validation import check_delta, check_epsilon, check_int
from dpfair.privacy.leaks import PrivacyLeakWarning, warn_privacy_leak
from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import NoiseSource, SecureNoise, get_noise_source
from dpfair.regression._lp import real_array
from dpfair.regression.postprocessing import l_inf_isotonic_cdf

__all__ = [
    "PrivateKSScorer",
    "PrivateMSEKSScorer",
    "PrivateMSEScorer",
    "PrivateRandomSearch",
    "random_stopping_epsilon",
    "trial_epsilon_for",
]

_DISTRIBUTIONS = ("geometric", "truncated_negative_binomial", "poisson")
_ORDERS = 1.0 + np.logspace(-3, 4, 700)  # Renyi orders lambda > 1
_ORDERS_HAT = np.logspace(0, 5, 700)  # lhat >= 1
_NEIGHBOURING = "replace one row (the number of rows n and the train/validation split sizes are public)"


# ---------------------------------------------------------------------------- accounting
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
    """Epsilon of the best of a random number of ``trial_epsilon``-DP trials (module docstring).

    Parameters
    ----------
    trial_epsilon : float
        Pure DP epsilon of one trial (``> 0``, finite).
    n_trials : {"geometric", "truncated_negative_binomial", "poisson"}, default "geometric"
        Distribution of the number of trials.
    mean_trials : float, default 10.0
        Its mean (``> 1`` for the first two, ``> 0`` for Poisson).
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
    """
    trial_epsilon = check_epsilon(trial_epsilon, "trial_epsilon", allow_inf=False)
    n_trials, mean_trials, delta, eta = _check_selection(n_trials, mean_trials, delta, eta)
    pure = 3.0 * trial_epsilon if n_trials == "geometric" or (n_trials != "poisson" and eta == 1.0) else math.inf
    if delta == 0.0:
        return pure  # Liu & Talwar (2019), Theorem 3.4 (geometric K)
    log_inv_delta = math.log(1.0 / delta)
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
    return min(pure, float(np.min(rdp + log_inv_delta / (lam - 1.0))))  # a geometric K has both bounds


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
    n_trials, mean_trials, delta, eta = _check_selection(n_trials, mean_trials, delta, eta)
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


def _check_selection(n_trials: Any, mean_trials: Any, delta: Any, eta: Any) -> tuple[str, float, float, float]:
    if n_trials not in _DISTRIBUTIONS:
        raise ValueError(f"n_trials must be one of {_DISTRIBUTIONS}, got {n_trials!r}.")
    if isinstance(mean_trials, bool) or not isinstance(mean_trials, numbers.Real) or not math.isfinite(mean_trials):
        raise TypeError(f"mean_trials must be a finite real number, got {mean_trials!r}.")
    mean_trials = float(mean_trials)
    if n_trials == "poisson" and not mean_trials > 0:
        raise ValueError(f"mean_trials must be > 0 for Poisson, got {mean_trials!r}.")
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


def _draw_n_trials(noise: NoiseSource, n_trials: str, mean_trials: float, eta: float) -> int:
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


# ---------------------------------------------------------------------------- scorers
def _check_bounds(bounds: Any, owner: str) -> tuple[float, float]:
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: bounds must be a pair (s, t) of real numbers, got {bounds!r}.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"{owner}: bounds must be finite with s < t, got {bounds!r}.")
    return lo, hi


class _PrivateScorer:
    """Base class: ``scorer(estimator, X, y, sensitive_features, *, epsilon, noise) -> float`` (higher is better)."""

    protects = ""

    def __call__(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                 noise: NoiseSource) -> float:  # pragma: no cover - abstract
        raise NotImplementedError


def _predictions(estimator: Any, X: Any, sensitive_features: Any) -> np.ndarray:
    pred = real_array(estimator.predict(X, sensitive_features=sensitive_features), "the estimator's predictions")
    return pred.reshape(-1)


class PrivateMSEScorer(_PrivateScorer):
    """Private clipped mean squared error on the validation rows (Laplace mechanism).

    Predictions and labels are clipped to the declared ``bounds = (s, t)``, so each row's squared
    error lies in ``[0, (t - s)^2]`` and, replacing one validation row, the mean moves by at most
    ``(t - s)^2 / n`` (``n`` public): the release ``mean + Laplace((t - s)^2 / (n epsilon))`` is
    ``epsilon``-DP for the validation rows' features, labels and groups.  The score is minus it.

    Parameters
    ----------
    bounds : (float, float)
        Declared range ``[s, t]`` of the labels and predictions (never read off the data).
    """

    protects = "the features, label and group of every validation row (clipped squared error, Laplace)"

    def __init__(self, bounds: tuple[float, float]) -> None:
        self.bounds = _check_bounds(bounds, "PrivateMSEScorer")

    def sensitivity(self, n_rows: int) -> float:
        """L1 sensitivity of the clipped MSE to replacing one of ``n_rows`` rows.

        Parameters
        ----------
        n_rows : int
            Number of validation rows (public).

        Returns
        -------
        float
            ``(t - s)^2 / n_rows``.
        """
        lo, hi = self.bounds
        return (hi - lo) ** 2 / n_rows

    def noisy_mse(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                  noise: NoiseSource) -> float:
        """The released (noisy) clipped MSE.

        Parameters
        ----------
        estimator : fitted estimator
            Predicts with ``predict(X, sensitive_features=...)``.
        X, y, sensitive_features : array-like
            The validation rows.
        epsilon : float
            Privacy parameter of this release (``inf``: exact).
        noise : NoiseSource
            Noise source.

        Returns
        -------
        float
            The clipped MSE plus Laplace noise (exact when ``epsilon`` is infinite).
        """
        lo, hi = self.bounds
        pred = np.clip(_predictions(estimator, X, sensitive_features), lo, hi)
        labels = np.clip(real_array(y, "y").reshape(-1), lo, hi)
        mse = float(np.mean((pred - labels) ** 2))
        if math.isinf(epsilon):
            return mse
        return float(laplace_mechanism(mse, sensitivity=self.sensitivity(labels.size), epsilon=epsilon,
                                       random_state=noise))

    def __call__(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                 noise: NoiseSource) -> float:
        """Minus the noisy clipped MSE (see :meth:`noisy_mse`).

        Parameters
        ----------
        estimator, X, y, sensitive_features, epsilon, noise
            As in :meth:`noisy_mse`.

        Returns
        -------
        float
        """
        return -self.noisy_mse(estimator, X, y, sensitive_features, epsilon=epsilon, noise=noise)


class PrivateKSScorer(_PrivateScorer):
    """Private statistical-parity violation (max pairwise KS distance) on the validation rows.

    Releases the joint histogram of (group, predicted bin) over the declared ``groups`` and
    ``n_bins`` equal bins of ``bounds`` with Laplace noise (L1 sensitivity ``2 / n``: replacing a row
    moves ``1/n`` of mass between two cells), repairs each group's noisy CDF as Algorithm 1 does
    (L-infinity isotonic regression, clipping) and returns the largest pairwise KS distance between
    the groups with positive noisy weight, a post-processing.  ``epsilon``-DP for the validation
    rows' features and groups (labels are not used).  The score is minus it.

    Parameters
    ----------
    bounds : (float, float)
        Declared range of the predictions (predictions outside go to the end bins).
    groups : list
        The declared groups (never read off the data).
    n_bins : int, default 50
        Histogram bins.
    """

    protects = "the features and group of every validation row (noisy joint histogram of group and predicted bin)"

    def __init__(self, bounds: tuple[float, float], groups: Any, n_bins: int = 50) -> None:
        self.bounds = _check_bounds(bounds, "PrivateKSScorer")
        self.groups = np.asarray(resolve_groups(groups, np.empty(0, dtype=object), 1.0)[0])
        self.n_bins = check_int(n_bins, "n_bins", minimum=1)

    def sensitivity(self, n_rows: int) -> float:
        """L1 sensitivity of the normalized joint histogram: ``2 / n_rows``.

        Parameters
        ----------
        n_rows : int
            Number of validation rows (public).

        Returns
        -------
        float
            ``2 / n_rows``.
        """
        return 2.0 / n_rows

    def noisy_ks(self, estimator: Any, X: Any, sensitive_features: Any, *, epsilon: float, noise: NoiseSource) -> float:
        """The released KS violation.

        Parameters
        ----------
        estimator : fitted estimator
            Predicts with ``predict(X, sensitive_features=...)``.
        X, sensitive_features : array-like
            The validation rows.
        epsilon : float
            Privacy parameter of this release (``inf``: exact).
        noise : NoiseSource
            Noise source.

        Returns
        -------
        float
            In ``[0, 1]``.
        """
        pred = _predictions(estimator, X, sensitive_features)
        n = pred.size
        index = group_index(self.groups, as_sensitive_features(sensitive_features, n))
        lo, hi = self.bounds
        bins = np.clip(np.floor((pred - lo) / (hi - lo) * self.n_bins), 0, self.n_bins - 1).astype(np.int64)
        joint = np.zeros((self.groups.size, self.n_bins))
        np.add.at(joint, (index, bins), 1.0 / n)
        if not math.isinf(epsilon):
            joint = laplace_mechanism(joint, sensitivity=self.sensitivity(n), epsilon=epsilon, random_state=noise)
        weights = joint.sum(axis=1)
        present = weights > 0
        if present.sum() < 2:
            return 0.0
        cdf = l_inf_isotonic_cdf(np.cumsum(joint[present], axis=1) / weights[present, None])
        return float(np.max(cdf.max(axis=0) - cdf.min(axis=0)))

    def __call__(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                 noise: NoiseSource) -> float:
        """Minus the noisy KS violation (see :meth:`noisy_ks`; ``y`` is not used).

        Parameters
        ----------
        estimator, X, y, sensitive_features, epsilon, noise
            As in :meth:`noisy_ks`.

        Returns
        -------
        float
        """
        return -self.noisy_ks(estimator, X, sensitive_features, epsilon=epsilon, noise=noise)


class PrivateMSEKSScorer(_PrivateScorer):
    """MSE with a fairness penalty: ``-(MSE + ks_weight * KS)``, or MSE subject to ``KS <= ks_target``.

    Half of the score's epsilon goes to :class:`PrivateMSEScorer`, half to :class:`PrivateKSScorer`
    (sequential composition on the validation rows): ``epsilon``-DP for their features, labels and
    groups.  With ``ks_target`` the penalty is ``ks_weight * max(0, KS - ks_target)``, a soft form
    of "MSE subject to KS at most the target" (a large ``ks_weight`` makes it hard).

    Parameters
    ----------
    bounds : (float, float)
        Declared range of labels and predictions.
    groups : list
        The declared groups.
    ks_weight : float, default 1.0
        Weight ``lambda`` of the KS term, in squared output units (``>= 0``).
    ks_target : float or None, default None
        KS level below which there is no penalty (``None``: penalise all of it).
    n_bins : int, default 50
        Histogram bins of the KS part.
    """

    protects = "the features, label and group of every validation row (half MSE, half KS histogram)"

    def __init__(self, bounds: tuple[float, float], groups: Any, *, ks_weight: float = 1.0,
                 ks_target: float | None = None, n_bins: int = 50) -> None:
        self.mse = PrivateMSEScorer(bounds)
        self.ks = PrivateKSScorer(bounds, groups, n_bins)
        if isinstance(ks_weight, bool) or not isinstance(ks_weight, numbers.Real) or not (
            math.isfinite(ks_weight) and ks_weight >= 0
        ):
            raise ValueError(f"ks_weight must be a finite number >= 0, got {ks_weight!r}.")
        if ks_target is not None and (isinstance(ks_target, bool) or not isinstance(ks_target, numbers.Real)
                                      or not 0 <= ks_target <= 1):
            raise ValueError(f"ks_target must be None or a number in [0, 1], got {ks_target!r}.")
        self.ks_weight = float(ks_weight)
        self.ks_target = None if ks_target is None else float(ks_target)

    def __call__(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                 noise: NoiseSource) -> float:
        """Minus the penalised noisy MSE.

        Parameters
        ----------
        estimator : fitted estimator
            Predicts with ``predict(X, sensitive_features=...)``.
        X, y, sensitive_features : array-like
            The validation rows.
        epsilon : float
            Privacy parameter of the whole score (split in two halves).
        noise : NoiseSource
            Noise source.

        Returns
        -------
        float
        """
        half = epsilon / 2.0
        mse = self.mse.noisy_mse(estimator, X, y, sensitive_features, epsilon=half, noise=noise)
        ks = self.ks.noisy_ks(estimator, X, sensitive_features, epsilon=half, noise=noise)
        excess = ks if self.ks_target is None else max(0.0, ks - self.ks_target)
        return -(mse + self.ks_weight * excess)


# ---------------------------------------------------------------------------- the search
class PrivateRandomSearch(MetaEstimatorMixin, RegressorMixin, BaseEstimator):
    """Differentially private hyper-parameter search by random stopping (Liu & Talwar; Papernot & Steinke).

    The private counterpart of scikit-learn's ``RandomizedSearchCV`` for dpfair estimators: the
    rows are split once (public randomness) into training and validation rows; then a random number
    ``K`` of trials is run, each drawing a candidate uniformly from ``param_grid``, fitting
    ``clone(estimator)`` with that candidate and ``epsilon = trial_epsilon_`` on the training rows
    and scoring it privately (``scoring``, same epsilon) on the validation rows.  The output is the
    best trial's candidate (``best_params_``), its noisy score (``best_score_``) and its fitted model
    (``best_estimator_``); ``predict`` uses that model.  ``K``, the other candidates and their scores
    are never released (releasing them would void the guarantee).

    **What it protects.** The whole search (every trial fit, every score, the random-``K``
    selection) is ``(epsilon, delta)``-DP for every row of ``(X, y, sensitive_features)`` under
    "replace one row"; the accounting is in the module docstring.  It is charged to ``budget``
    once per ``fit``.

    Parameters
    ----------
    estimator : dpfair estimator
        A private estimator with an ``epsilon`` parameter (and optionally ``budget`` and
        ``random_state``, which the search sets for every trial).  Its declared bounds and groups
        are used as they are.
    param_grid : dict or list of dict
        Candidates, as for :class:`sklearn.model_selection.ParameterGrid` (e.g.
        ``{"n_bins": [12, 36], "alpha": [0, 0.05]}``); public.
    scoring : PrivateMSEScorer, PrivateKSScorer or PrivateMSEKSScorer
        The private validation score (higher is better).
    epsilon : float, default 1.0
        Total epsilon of the search (``inf``: every candidate is fitted and scored exactly, a
        non-private baseline, with a :class:`~dpfair.privacy.PrivacyLeakWarning`).
    delta : float, default 0.0
        Total delta (``> 0`` for the Renyi-DP distributions).
    n_trials : {"geometric", "truncated_negative_binomial", "poisson"}, default "geometric"
        Distribution of the number of trials ``K``.
    mean_trials : float, default 10.0
        Mean of ``K``.
    eta : float, default 1.0
        Shape of the truncated negative binomial.
    validation_fraction : float, default 0.3
        Share of the rows used for scoring, in ``(0, 1)``.
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, delta)`` once per ``fit`` before any random draw; a refusal leaves the
        budget and any earlier fitted state unchanged.
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure randomness everywhere (split, ``K``, candidates, trial noise).  A seed:
        reproducible, *not hardened* (experiments and tests only).

    Attributes
    ----------
    best_params_ : dict or None
        The selected candidate (``None`` if a Poisson ``K`` was 0).
    best_score_ : float or None
        Its noisy validation score.
    best_estimator_ : estimator or None
        Its fitted model (trained on the training rows).
    trial_epsilon_ : float
        Epsilon of every trial fit and of every score.
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring"}`` for the whole search.

    Examples
    --------
    >>> from dpfair.datasets import make_regression
    >>> from dpfair.regression import FairRegressionPostProcessor
    >>> _, y, g = make_regression(2000, random_state=0)
    >>> search = PrivateRandomSearch(
    ...     FairRegressionPostProcessor(bounds=(0, 1), groups=[0, 1]), {"n_bins": [4, 16], "alpha": [0.0, 0.1]},
    ...     scoring=PrivateMSEScorer((0, 1)), epsilon=3.0, random_state=0)
    >>> sorted(search.fit(y, y, sensitive_features=g).best_params_)
    ['alpha', 'n_bins']
    """

    def __init__(
        self,
        estimator: Any,
        param_grid: Any,
        *,
        scoring: Any,
        epsilon: float = 1.0,
        delta: float = 0.0,
        n_trials: str = "geometric",
        mean_trials: float = 10.0,
        eta: float = 1.0,
        validation_fraction: float = 0.3,
        budget: Any = None,
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.scoring = scoring
        self.epsilon = epsilon
        self.delta = delta
        self.n_trials = n_trials
        self.mean_trials = mean_trials
        self.eta = eta
        self.validation_fraction = validation_fraction
        self.budget = budget
        self.random_state = random_state

    def _trial_estimator(self, params: dict, trial_epsilon: float, noise: NoiseSource) -> Any:
        est = clone(self.estimator)
        own = est.get_params(deep=False)
        extra: dict[str, Any] = {"epsilon": trial_epsilon}
        if "budget" in own:
            extra["budget"] = None  # the search is charged as a whole
        if "random_state" in own:
            extra["random_state"] = None if isinstance(noise, SecureNoise) else int(noise.uniform(1)[0] * 2**32)
        return est.set_params(**params, **extra)

    def fit(self, X: Any, y: Any = None, *, sensitive_features: Any = None) -> PrivateRandomSearch:
        """Run the private search (module docstring) and keep the best trial's model.

        Parameters
        ----------
        X : array-like
            Features of the estimator (or regressor outputs for ``FairRegressionPostProcessor``
            without a regressor).
        y : array-like of shape (n_samples,)
            Labels: the validation score needs them (not the post-processor's fit).
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row (``None`` only when the estimator declares a single group).

        Returns
        -------
        PrivateRandomSearch
            The fitted search (``self``).

        Raises
        ------
        ValueError, TypeError
            On an invalid argument (the message names it).
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf``.
        """
        epsilon = check_epsilon(self.epsilon)
        delta = check_delta(self.delta)
        budget = check_budget(self.budget)
        if not isinstance(self.scoring, _PrivateScorer):
            raise TypeError(
                "scoring must be a dpfair private scorer (PrivateMSEScorer, PrivateKSScorer or PrivateMSEKSScorer), "
                f"got {type(self.scoring).__name__}: an exact score of the validation rows is not private."
            )
        if not hasattr(self.estimator, "get_params") or "epsilon" not in self.estimator.get_params(deep=False):
            raise TypeError("estimator must be a dpfair estimator with an epsilon parameter.")
        candidates = list(ParameterGrid(self.param_grid))
        if not candidates:
            raise ValueError("param_grid must hold at least one candidate.")
        frac = self.validation_fraction
        if isinstance(frac, bool) or not isinstance(frac, numbers.Real) or not 0 < frac < 1:
            raise ValueError(f"validation_fraction must be a number in (0, 1), got {frac!r}.")
        if math.isinf(epsilon):
            trial_epsilon, total = math.inf, (math.inf, 0.0)
        else:
            n_trials, mean_trials, delta, eta = _check_selection(self.n_trials, self.mean_trials, delta, self.eta)
            trial_epsilon = trial_epsilon_for(epsilon, n_trials=n_trials, mean_trials=mean_trials, delta=delta, eta=eta)
            total = (epsilon, delta)
        if y is None:
            raise ValueError("y is required: the private validation score compares predictions with labels.")
        n = _num_samples(X)
        n_val = round(frac * n)
        if n_val < 1 or n - n_val < 1:
            raise ValueError(f"validation_fraction={frac!r} leaves no training or no validation row; use more rows.")
        sensitive = None if sensitive_features is None else as_sensitive_features(sensitive_features, n)
        noise = get_noise_source(self.random_state)
        charge_budget(budget, total[0], total[1], label=f"{type(self).__name__}.fit (trials, scores, random-K selection)")
        # public randomness: the split, K and the candidates do not depend on the data
        order = np.argsort(noise.uniform(n), kind="stable")
        val, train = np.sort(order[:n_val]), np.sort(order[n_val:])
        X_train, X_val = _safe_indexing(X, train), _safe_indexing(X, val)
        y_arr = np.asarray(y)
        y_train, y_val = y_arr[train], y_arr[val]
        s_train, s_val = (None, None) if sensitive is None else (sensitive[train], sensitive[val])
        if math.isinf(epsilon):
            warn_privacy_leak(
                "epsilon=inf: every candidate is fitted and scored exactly on the data; the selection carries no "
                "privacy guarantee (a non-private baseline).",
                stacklevel=2,
            )
            plan = list(range(len(candidates)))
        else:
            k = _draw_n_trials(noise, n_trials, mean_trials, eta)
            plan = [min(int(noise.uniform(1)[0] * len(candidates)), len(candidates) - 1) for _ in range(k)]
        best: tuple[float, dict, Any] | None = None
        for index in plan:
            params = candidates[index]
            est = self._trial_estimator(params, trial_epsilon, noise)
            with warnings.catch_warnings():
                if math.isinf(epsilon):  # already warned once for the whole search
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                est.fit(X_train, y_train, sensitive_features=s_train)
                score = float(self.scoring(est, X_val, y_val, s_val, epsilon=trial_epsilon, noise=noise))
            if best is None or score > best[0]:
                best = (score, dict(params), est)
        self.trial_epsilon_ = trial_epsilon
        if best is None:  # Poisson K = 0: the mechanism outputs nothing
            self.best_score_, self.best_params_, self.best_estimator_ = None, None, None
        else:
            self.best_score_, self.best_params_, self.best_estimator_ = best
        protects = (
            "every row of (X, y, sensitive_features): training rows through the trial fits, validation rows "
            f"(labels included) through the private scores ({self.scoring.protects})"
        )
        if math.isinf(epsilon):
            protects = "nothing: epsilon=inf fits and scores every candidate exactly"
        self.privacy_spent_ = privacy_spent(total[0], total[1], protects=protects, neighbouring=_NEIGHBOURING)
        return self

    def predict(self, X: Any, *, sensitive_features: Any = None, **kwargs: Any) -> np.ndarray:
        """Predict with ``best_estimator_``.

        Parameters
        ----------
        X : array-like
            As for the estimator.
        sensitive_features : array-like or None, default None
            Group of every row.
        **kwargs
            Passed on (e.g. ``random_state``).

        Returns
        -------
        ndarray of shape (n_samples,)
            The selected model's predictions.

        Raises
        ------
        NotFittedError
            Before ``fit``, or when a Poisson ``K`` was 0 (no model was selected).
        """
        check_is_fitted(self, "privacy_spent_")
        if self.best_estimator_ is None:
            raise NotFittedError("the search ran no trial (a Poisson number of trials was 0): no model was selected.")
        return self.best_estimator_.predict(X, sensitive_features=sensitive_features, **kwargs)
