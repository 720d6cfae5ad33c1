"""The Chzhen et al. (2020) baseline: fair regression by Wasserstein-barycenter post-processing (not private).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from dpfair._estimator import (
    CloneLineageMixin,
    privacy_spent,
    resolve_groups,
    warn_leak_once,
)
from dpfair._estimator import as_sensitive_features as _labels  # every label is checked for hashability
from dpfair._estimator import (
    check_bool as _check_bool,
)
from dpfair._estimator import (
    predict_seed as _predict_seed,
)
from dpfair._estimator import (
    prediction_noise as _prediction_noise,
)
from dpfair._estimator import (
    rows_of_fitted_groups as _rows_of_fitted_groups,
)
from dpfair._estimator import (
    single_group_rows as _single_group_rows,
)
from dpfair._estimator import (
    wrapped_tags as _wrapped_tags,
)
from dpfair._validation import check_nonnegative_finite
from dpfair._wrapped_fit import SensitiveScoreMixin, fit_wrapped_estimator
from dpfair.privacy.noise import get_noise_source
from dpfair.regression._wrapped import _NEIGHBOURING, WRAPPED_REGRESSOR, _predict_outputs


# ---------------------------------------------------------------------------- Chzhen et al.
class WassersteinBarycenterPostProcessor(
    SensitiveScoreMixin, CloneLineageMixin, MetaEstimatorMixin, RegressorMixin, BaseEstimator
):
    """Non-private, non-discretized fair post-processing of Chzhen et al. (2020) (exact parity).

    ``f_fair(x, a) = sum_b w_b Q_b(F_a(f(x) + jitter))``: each group's output is mapped through
    its own (jittered) empirical CDF and then through the weighted average of the groups'
    empirical quantile functions, the Wasserstein-2 barycenter on the line.  The uniform
    jitter on ``[-sigma, sigma]`` breaks ties so the CDFs are continuous, as in the original.

    **What it protects: nothing.**  The fitted object stores every group's exact (jittered)
    outputs and sizes; ``fit`` always raises :class:`~dpfair.privacy.PrivacyLeakWarning` and
    ``privacy_spent_`` reports ``epsilon = inf``.  It is the non-private reference point of
    :class:`FairRegressionPostProcessor`; use it on public or synthetic data.

    Parameters
    ----------
    estimator : regressor or None, default None
        The regressor to post-process; ``None`` means ``X`` holds its outputs.
    sigma : float, default 1e-5
        Jitter half-width (finite, ``>= 0``).
    groups : list or None, default None
        The declared groups (group 0 first).  Optional (the estimator is not private): ``None``
        reads them off the data.  A declared group with no rows gets weight 0, and predicting for
        it raises ``ValueError``.  When it declares exactly one group, ``sensitive_features`` may
        be omitted.
    prefit : bool, default True
        ``True``: ``estimator`` is fitted and used as is; ``False``: a clone is fitted on ``(X, y)``.
    random_state : None, int or numpy Generator, default None
        Jitter randomness (``None``: OS CSPRNG); a seed also makes ``predict`` reproducible.

    Attributes
    ----------
    estimator_ : regressor or None
        The regressor whose outputs are post-processed.
    groups_ : ndarray of shape (n_groups,)
        The groups (declared order, or read off the data).
    sorted_outputs_ : list of ndarray
        Each group's sorted jittered outputs (exact, non-private).
    group_weights_ : ndarray of shape (n_groups,)
        Each group's share of the rows.
    sigma_ : float
        The jitter half-width used.
    n_features_in_ : int
        Number of features of ``X`` (when known).
    privacy_spent_ : dict
        ``epsilon = inf``: no guarantee.
    """

    def __init__(
        self, estimator: Any = None, *, sigma: float = 1e-5, groups: Any = None, prefit: bool = True,
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.sigma = sigma
        self.groups = groups
        self.prefit = prefit
        self.random_state = random_state

    def __sklearn_tags__(self):  # scikit-learn's tags, with the wrapped estimator's input support
        return _wrapped_tags(self, super().__sklearn_tags__())

    def fit(self, X: Any, y: Any = None, *, sensitive_features: Any = None) -> WassersteinBarycenterPostProcessor:
        """Store each group's sorted (jittered) outputs and its weight.

        Parameters
        ----------
        X : array-like
            Features for ``estimator`` (or the outputs when ``estimator=None``).
        y : array-like or None, default None
            Labels, used only to fit the clone of ``estimator`` when ``prefit=False``.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row; may be omitted when ``groups`` declares exactly one group.

        Returns
        -------
        WassersteinBarycenterPostProcessor
            The fitted post-processor (``self``).

        Raises
        ------
        ValueError, TypeError
            On invalid input (the message names the argument).
        NotFittedError
            If ``prefit=True`` and ``estimator`` is not fitted.

        Warns
        -----
        PrivacyLeakWarning
            Always: the fitted object releases exact quantiles of the data.
        """
        owner = type(self).__name__
        sigma = check_nonnegative_finite(self.sigma, "sigma")
        prefit = _check_bool(self.prefit, "prefit")
        noise = get_noise_source(self.random_state)
        if self.groups is not None:
            resolve_groups(self.groups, np.empty(0, dtype=object), math.inf)
        estimator = fit_wrapped_estimator(WRAPPED_REGRESSOR, self.estimator, X, y, prefit=prefit, owner=owner, caller=self)
        outputs = _predict_outputs(estimator, X)
        n = outputs.size
        if sensitive_features is None:
            declared, index = _single_group_rows(self.groups, n, math.inf, owner)
        else:
            declared, index = resolve_groups(self.groups, _labels(sensitive_features, n), math.inf)
        warn_leak_once(
            self,
            f"{owner} is not differentially private (Chzhen et al. 2020): it stores and releases exact empirical "
            "quantiles of every group's outputs. Use FairRegressionPostProcessor with a finite epsilon on real "
            "people's data.",
            stacklevel=3,
        )
        jittered = outputs + (2.0 * noise.uniform(n) - 1.0) * sigma
        predict_seed = _predict_seed(noise)
        self.estimator_ = estimator
        self.groups_ = declared
        self.sorted_outputs_ = [np.sort(jittered[index == a]) for a in range(declared.size)]
        self.group_weights_ = np.bincount(index, minlength=declared.size) / n
        self.sigma_ = sigma
        self._predict_seed_ = predict_seed
        if estimator is None:
            self.n_features_in_ = 1
        elif hasattr(estimator, "n_features_in_"):
            self.n_features_in_ = estimator.n_features_in_
        if hasattr(estimator, "feature_names_in_"):
            self.feature_names_in_ = estimator.feature_names_in_
        self.privacy_spent_ = privacy_spent(
            math.inf, 0.0, neighbouring=_NEIGHBOURING,
            protects="nothing: the fitted object holds exact (jittered) quantiles of every group's outputs",
        )
        return self

    def predict(self, X: Any, *, sensitive_features: Any = None, random_state: Any = None) -> np.ndarray:
        """Fair predictions (randomized only through the jitter).

        Parameters
        ----------
        X : array-like
            Features for the regressor (or its outputs when ``estimator=None``).
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row (one of ``groups_``); may be omitted when there is one group.
        random_state : None, int or numpy Generator, default None
            Jitter randomness; ``None`` follows the estimator's policy (see the module docstring).

        Returns
        -------
        ndarray of shape (n_samples,)
            Fair predictions: each row's (jittered) output is mapped to its level in its group's
            fitted quantiles, and the prediction is the ``group_weights_``-weighted mean of every
            group's quantile at that level.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError, TypeError
            On invalid input, a group outside ``groups_``, or a group that had no rows in ``fit``.
        """
        check_is_fitted(self, "sorted_outputs_")
        outputs = _predict_outputs(self.estimator_, X)
        index = _rows_of_fitted_groups(self.groups_, sensitive_features, outputs.size)
        sizes = np.array([s.size for s in self.sorted_outputs_])
        unseen = sizes[index] == 0
        if unseen.any():
            raise ValueError(
                f"sensitive_features holds group(s) {self.groups_[np.unique(index[unseen])].tolist()} that had no rows "
                "in fit: their quantile function is unknown; refit with rows of every group you predict for."
            )
        noise = _prediction_noise(random_state, self._predict_seed_)
        jittered = outputs + (2.0 * noise.uniform(outputs.size) - 1.0) * self.sigma_
        levels = np.empty(outputs.size)
        for a, sorted_a in enumerate(self.sorted_outputs_):
            mask = index == a
            if mask.any():
                levels[mask] = np.searchsorted(sorted_a, jittered[mask], side="right") / sorted_a.size
        out = np.zeros(outputs.size)
        for b, sorted_b in enumerate(self.sorted_outputs_):
            if sorted_b.size == 0:
                continue
            pos = np.clip(np.ceil(levels * sorted_b.size).astype(int) - 1, 0, sorted_b.size - 1)
            out += self.group_weights_[b] * sorted_b[pos]
        return out
