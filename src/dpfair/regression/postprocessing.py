"""Fair post-processing of regressors under statistical parity.

* :class:`FairRegressionPostProcessor`: Algorithm 1 of Xian, Li, Kamath & Zhao (ICML 2024),
  epsilon-DP with respect to the unlabeled post-processing data (features and group of
  every row).
* :class:`WassersteinBarycenterPostProcessor`: the non-private, non-discretized post-processor
  of Chzhen et al. (NeurIPS 2020) that the paper builds on.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from dpfair._validation import as_finite_array, check_epsilon, check_int, check_nonnegative_finite
from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import get_noise_source
from dpfair.regression._lp import solve_barycenter_lp

__all__ = ["FairRegressionPostProcessor", "WassersteinBarycenterPostProcessor"]


def _groups_array(sensitive_features: Any, n: int) -> np.ndarray:
    groups = np.asarray(sensitive_features.to_numpy() if hasattr(sensitive_features, "to_numpy") else sensitive_features)
    if groups.ndim != 1 or groups.size != n:
        raise ValueError(f"sensitive_features must be 1-dimensional with one entry per row ({n}), got shape {groups.shape}.")
    if any(g is None or (isinstance(g, float) and math.isnan(g)) for g in groups.tolist()):
        raise ValueError("sensitive_features contains missing values; every row needs a group.")
    return groups


def _outputs(estimator: Any, X: Any, name: str = "X") -> np.ndarray:
    if estimator is None:
        values = as_finite_array(X, name)
        if values.ndim == 2 and values.shape[1] == 1:
            values = values[:, 0]
        if values.ndim != 1:
            raise ValueError(f"with estimator=None, {name} must hold the regressor's outputs (1-d), got shape {values.shape}.")
        return values
    pred = np.asarray(estimator.predict(X), dtype=float)
    if pred.ndim != 1 or not np.isfinite(pred).all():
        raise ValueError("the estimator's predictions must be a finite 1-d array (NaN or inf found, or wrong shape).")
    return pred


def l_inf_isotonic_cdf(partial_sums: np.ndarray) -> np.ndarray:
    """Algorithm 1, line 8: L-infinity isotonic regression of noisy partial sums, clipped to [0, 1].

    ``F(j) = proj_[0,1]((max_{l <= j} S(l) + min_{r >= j} S(r)) / 2)`` for ``j < k`` and ``F(k) = 1``;
    the midpoint of the running max and the reverse running min is an optimal L-infinity
    isotonic fit (Stout 2017).  Works on the last axis.
    """
    prefix_max = np.maximum.accumulate(partial_sums, axis=-1)
    suffix_min = np.minimum.accumulate(partial_sums[..., ::-1], axis=-1)[..., ::-1]
    cdf = np.clip((prefix_max + suffix_min) / 2.0, 0.0, 1.0)
    cdf[..., -1] = 1.0
    return cdf


class FairRegressionPostProcessor:
    """Differentially private fair post-processing of a regressor (Algorithm 1, Xian et al. 2024).

    Learns, from unlabeled data, randomized maps ``g_a`` that transport each group's
    discretized output distribution to a target inside a KS ball of radius ``alpha/2``
    around their (fixed-support) Wasserstein barycenter, so that the post-processed
    regressor satisfies ``alpha``-approximate statistical parity (up to estimation error)
    with minimal squared deviation.

    Privacy: ``fit`` is ``epsilon``-DP with respect to the post-processing rows (each row's
    regressor output and group; replace-one neighbours).  Only the joint histogram of
    (group, bin) is released, through the Laplace mechanism with scale ``2 / (n epsilon)``
    (its L1 sensitivity is 2/n); everything after is post-processing.  The estimator itself
    must be trained privately (or on other data) for end-to-end privacy.

    Parameters
    ----------
    estimator : fitted regressor or None
        ``None`` means ``X`` already holds the regressor's outputs (the paper's experiments
        post-process the true targets this way).
    epsilon : float
        Privacy budget (> 0; ``inf`` gives the non-private algorithm).
    n_bins : int
        Number of histogram bins ``k``.
    alpha : float, default 0
        Statistical-parity tolerance (KS distance between groups).
    bounds : (float, float)
        Declared interval ``[s, t]`` containing the regressor's outputs.  Required: reading it
        off the data would break DP, so ``None`` is refused unless ``epsilon = inf``.
        Outputs outside it are sent to the nearest end bin (the discretizer of line 2).
    prefit : bool, default True
        The estimator is already fitted.  With ``prefit=False`` it is fitted on ``(X, y)``
        inside ``fit`` (that training is *not* made private by this class).
    random_state : None, int or Generator
        Noise for ``fit``: ``None`` is secure (OpenDP), a seed is reproducible.

    Attributes
    ----------
    groups_ : ndarray
        Group labels, sorted.
    grid_ : ndarray of shape (n_bins,)
        Bin midpoints ``v_j = s + (j - 1/2)(t - s)/k`` (line 1).
    group_weights_ : ndarray
        Private group weights ``w_a`` (line 6).
    pmfs_ : ndarray of shape (n_groups, n_bins)
        Private group PMFs (lines 7-9).
    barycenter_ : ndarray
        Barycenter ``q`` (line 10).
    targets_ : ndarray of shape (n_groups, n_bins)
        Per-group targets ``q_a``.
    couplings_ : ndarray of shape (n_groups, n_bins, n_bins)
        Optimal couplings ``pi_a``.
    transport_ : ndarray of shape (n_groups, n_bins, n_bins)
        Row-stochastic maps: ``transport_[a, j, l] = P(g_a(v_j) = v_l)`` (line 12).
    objective_ : float
        LP optimum.
    privacy_spent_ : dict
        ``{"epsilon": epsilon, "delta": 0.0}``.
    """

    def __init__(
        self,
        estimator: Any = None,
        *,
        epsilon: float,
        n_bins: int,
        alpha: float = 0.0,
        bounds: tuple[float, float] | None = None,
        prefit: bool = True,
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.n_bins = n_bins
        self.alpha = alpha
        self.bounds = bounds
        self.prefit = prefit
        self.random_state = random_state

    def _check_params(self, outputs: np.ndarray) -> tuple[float, int, float, float, float]:
        epsilon = check_epsilon(self.epsilon)
        k = check_int(self.n_bins, "n_bins", minimum=1)
        alpha = check_nonnegative_finite(self.alpha, "alpha")
        if self.bounds is None:
            if not math.isinf(epsilon):
                raise ValueError(
                    "bounds is required: declare the interval [s, t] that contains the regressor's outputs. "
                    "Reading it off the data would break differential privacy (allowed only with epsilon=inf)."
                )
            lo, hi = float(outputs.min()), float(outputs.max())
            if hi <= lo:
                hi = lo + 1.0
        else:
            try:
                lo, hi = (float(b) for b in self.bounds)
            except (TypeError, ValueError):
                raise TypeError(f"bounds must be a pair (s, t), got {self.bounds!r}.") from None
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(f"bounds must be finite with s < t, got {self.bounds!r}.")
        return epsilon, k, alpha, lo, hi

    def _bins(self, outputs: np.ndarray) -> np.ndarray:
        """Line 2: index of the nearest bin midpoint."""
        k = self.grid_.size
        lo, hi = self.bounds_
        return np.clip(np.floor((outputs - lo) / (hi - lo) * k), 0, k - 1).astype(np.int64)

    def fit(self, X: Any, sensitive_features: Any, y: Any = None) -> FairRegressionPostProcessor:
        """Learn the private fair post-processing maps from unlabeled data (labels unused when prefit)."""
        if self.estimator is not None and not self.prefit:
            if y is None:
                raise ValueError("prefit=False needs y to fit the estimator.")
            self.estimator.fit(X, y)
        outputs = _outputs(self.estimator, X)
        groups = _groups_array(sensitive_features, outputs.size)
        epsilon, k, alpha, lo, hi = self._check_params(outputs)
        outside = int(((outputs < lo) | (outputs > hi)).sum())
        if outside:
            warnings.warn(f"{outside} output(s) lie outside bounds=({lo}, {hi}); they go to the nearest end bin.", stacklevel=2)
        self.bounds_ = (lo, hi)
        self.grid_ = lo + (np.arange(k) + 0.5) * (hi - lo) / k  # line 1
        self.groups_, group_index = np.unique(groups, return_inverse=True)
        n_groups = self.groups_.size
        n = outputs.size
        # line 3: empirical joint distribution of (group, bin)
        joint = np.zeros((n_groups, k))
        np.add.at(joint, (group_index, self._bins(outputs)), 1.0 / n)
        # line 4: Laplace mechanism, L1 sensitivity 2/n (one row moves 1/n of mass between two cells)
        noisy = laplace_mechanism(joint, sensitivity=2.0 / n, epsilon=epsilon, random_state=self.random_state)
        # line 6: private group weights
        weights = np.maximum(noisy.sum(axis=1), 0.0)
        empty = weights <= 0
        if empty.any():
            warnings.warn(
                f"the private weight of group(s) {self.groups_[empty].tolist()} is 0 after noise; their PMF is set to uniform.",
                stacklevel=2,
            )
        partial = np.cumsum(noisy, axis=1) / np.where(empty, 1.0, weights)[:, None]  # line 7
        pmfs = np.diff(l_inf_isotonic_cdf(partial), axis=1, prepend=0.0)  # lines 8-9
        pmfs[empty] = 1.0 / k
        self.group_weights_ = weights
        self.pmfs_ = pmfs
        self._solve(alpha)
        self.privacy_spent_ = {"epsilon": epsilon, "delta": 0.0}
        return self

    def _solve(self, alpha: float) -> None:
        """Lines 10-12 on the stored private PMFs and weights."""
        k = self.grid_.size
        solution = solve_barycenter_lp(self.pmfs_, self.group_weights_, self.grid_, alpha)  # line 10
        self.alpha_ = alpha
        self.barycenter_ = solution.barycenter
        self.targets_ = solution.targets
        self.couplings_ = solution.couplings
        self.objective_ = solution.objective
        # line 12: g_a(v_j) = v_l with probability pi_a(j, l) / p_a(j), or v_j when p_a(j) = 0
        mass = solution.couplings.sum(axis=2, keepdims=True)
        identity = np.broadcast_to(np.eye(k), solution.couplings.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.transport_ = np.where(mass > 1e-15, solution.couplings / np.maximum(mass, 1e-300), identity)

    def refit_alpha(self, alpha: float) -> FairRegressionPostProcessor:
        """Re-solve for another ``alpha`` from the same private statistics (no extra privacy cost).

        Steps 2-3 of Algorithm 1 only post-process the private PMFs, so sweeping ``alpha`` this
        way spends ``epsilon`` once in total.  Changes the fitted maps in place; returns ``self``.
        """
        if not hasattr(self, "pmfs_"):
            raise RuntimeError("call fit before refit_alpha.")
        self.alpha = alpha
        self._solve(check_nonnegative_finite(alpha, "alpha"))
        return self

    def predict(self, X: Any, sensitive_features: Any, random_state: Any = None) -> np.ndarray:
        """Randomized fair predictions ``g_a(h(f(x)))`` (line 13).

        ``random_state=None`` draws from the OS CSPRNG; a seed makes predictions reproducible.
        """
        if not hasattr(self, "transport_"):
            raise RuntimeError("call fit before predict.")
        outputs = _outputs(self.estimator, X)
        groups = _groups_array(sensitive_features, outputs.size)
        index = np.searchsorted(self.groups_, groups)
        index = np.minimum(index, self.groups_.size - 1)
        unknown = self.groups_[index] != groups
        if unknown.any():
            raise ValueError(
                f"sensitive_features contains group(s) not seen in fit: {sorted(set(groups[unknown].tolist()))[:5]}; "
                f"known groups are {self.groups_.tolist()}."
            )
        bins = self._bins(outputs)
        cdf = np.cumsum(self.transport_[index, bins], axis=1)
        u = get_noise_source(random_state).uniform(outputs.size) * cdf[:, -1]
        target = np.minimum((cdf <= u[:, None]).sum(axis=1), self.grid_.size - 1)
        return self.grid_[target]


class WassersteinBarycenterPostProcessor:
    """Non-private, non-discretized fair post-processing of Chzhen et al. (2020) (exact parity).

    ``f_fair(x, a) = sum_b w_b Q_b(F_a(f(x) + jitter))``: each group's output is mapped through
    its own (jittered) empirical CDF and then through the weighted average of the groups'
    empirical quantile functions, the Wasserstein-2 barycenter on the line.  The uniform
    jitter on ``[-sigma, sigma]`` breaks ties so the CDFs are continuous, as in the original.

    Parameters
    ----------
    estimator : fitted regressor or None
        ``None`` means ``X`` holds the outputs.
    sigma : float, default 1e-5
        Jitter half-width.
    random_state : int, Generator or None
        Jitter randomness.
    """

    def __init__(self, estimator: Any = None, *, sigma: float = 1e-5, random_state: Any = None) -> None:
        self.estimator = estimator
        self.sigma = sigma
        self.random_state = random_state

    def fit(self, X: Any, sensitive_features: Any, y: Any = None) -> WassersteinBarycenterPostProcessor:
        """Store each group's sorted (jittered) outputs and its weight."""
        outputs = _outputs(self.estimator, X)
        groups = _groups_array(sensitive_features, outputs.size)
        sigma = check_nonnegative_finite(self.sigma, "sigma")
        rng = np.random.default_rng(self.random_state)
        self.groups_, index = np.unique(groups, return_inverse=True)
        jittered = outputs + rng.uniform(-sigma, sigma, size=outputs.size)
        self.sorted_outputs_ = [np.sort(jittered[index == a]) for a in range(self.groups_.size)]
        self.group_weights_ = np.bincount(index) / outputs.size
        return self

    def predict(self, X: Any, sensitive_features: Any, random_state: Any = None) -> np.ndarray:
        """Fair predictions (randomized only through the jitter)."""
        outputs = _outputs(self.estimator, X)
        groups = _groups_array(sensitive_features, outputs.size)
        index = np.searchsorted(self.groups_, groups)
        index = np.minimum(index, self.groups_.size - 1)
        if (self.groups_[index] != groups).any():
            raise ValueError(f"sensitive_features contains groups not seen in fit; known groups are {self.groups_.tolist()}.")
        rng = np.random.default_rng(random_state)
        jittered = outputs + rng.uniform(-self.sigma, self.sigma, size=outputs.size)
        levels = np.empty(outputs.size)
        for a, sorted_a in enumerate(self.sorted_outputs_):
            mask = index == a
            levels[mask] = np.searchsorted(sorted_a, jittered[mask], side="right") / sorted_a.size
        out = np.zeros(outputs.size)
        for b, sorted_b in enumerate(self.sorted_outputs_):
            pos = np.clip(np.ceil(levels * sorted_b.size).astype(int) - 1, 0, sorted_b.size - 1)
            out += self.group_weights_[b] * sorted_b[pos]
        return out
