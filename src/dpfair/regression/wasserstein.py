"""The Chzhen et al. (2020) baseline: fair regression by Wasserstein-barycenter post-processing (not private).

It is not a :class:`dpfair.base.PrivateEstimator`: it has no ``epsilon`` and no ``budget``, and releases exact
quantiles whatever its parameters.  Run through the release template as an ``epsilon = inf`` release, its ``fit``
would charge ``epsilon = inf`` to the opt-in process-wide ledger (:func:`dpfair.privacy.default_budget`), which
a finite default budget refuses, and would draw its jitter only after that charge; it would also raise the
template's ``epsilon=inf`` warning instead of its own.  Its ``fit`` keeps the contract's order by hand:
validate, fit the wrapped regressor, warn, draw the jitter, set every fitted attribute at the end.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from dpfair._estimator import (
    CloneLineageMixin,
    as_sensitive_features,
    check_bool,
    predict_seed,
    prediction_noise,
    privacy_spent,
    resolve_groups,
    rows_of_fitted_groups,
    single_group_rows,
    warn_leak_once,
    wrapped_tags,
)
from dpfair._validation import check_nonnegative_finite
from dpfair._wrapped_fit import SensitiveScoreMixin, wrapped_feature_attributes
from dpfair.privacy.noise import get_noise_source
from dpfair.regression._wrapped import _NEIGHBOURING, _predict_outputs, fit_regressor_outputs


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
        return wrapped_tags(self, super().__sklearn_tags__())

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
        prefit = check_bool(self.prefit, "prefit")
        noise = get_noise_source(self.random_state)
        if self.groups is not None:
            resolve_groups(self.groups, np.empty(0, dtype=object), math.inf)
        estimator, outputs = fit_regressor_outputs(self, X, y, prefit=prefit)
        n = outputs.size
        if sensitive_features is None:
            declared, index = single_group_rows(self.groups, n, math.inf, owner)
        else:
            declared, index = resolve_groups(self.groups, as_sensitive_features(sensitive_features, n), math.inf)
        warn_leak_once(
            self,
            f"{owner} is not differentially private (Chzhen et al. 2020): it stores and releases exact empirical "
            "quantiles of every group's outputs. Use FairRegressionPostProcessor with a finite epsilon on real "
            "people's data.",
        )
        jittered = outputs + (2.0 * noise.uniform(n) - 1.0) * sigma
        fitted = {
            "estimator_": estimator,
            "groups_": declared,
            "sorted_outputs_": [np.sort(jittered[index == a]) for a in range(declared.size)],
            "group_weights_": np.bincount(index, minlength=declared.size) / n,
            "sigma_": sigma,
            "_predict_seed_": predict_seed(noise),
            **wrapped_feature_attributes(estimator),
            "privacy_spent_": privacy_spent(
                math.inf, 0.0, neighbouring=_NEIGHBOURING,
                protects="nothing: the fitted object holds exact (jittered) quantiles of every group's outputs",
            ),
        }
        for name, value in fitted.items():  # every fitted attribute is set only now
            setattr(self, name, value)
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
        outputs = _predict_outputs(self.estimator_, X, type(self).__name__)
        index = rows_of_fitted_groups(self.groups_, sensitive_features, outputs.size)
        sizes = np.array([s.size for s in self.sorted_outputs_])
        unseen = sizes[index] == 0
        if unseen.any():
            raise ValueError(
                f"sensitive_features holds group(s) {self.groups_[np.unique(index[unseen])].tolist()} that had no rows "
                "in fit: their quantile function is unknown; refit with rows of every group you predict for."
            )
        noise = prediction_noise(random_state, self._predict_seed_)
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
