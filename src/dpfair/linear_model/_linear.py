"""Differentially private linear regression by sufficient-statistics perturbation.

Least squares needs only the sufficient statistics ``Z^T Z`` and ``Z^T y`` of the design ``Z`` (the
features, plus a column of ones for the intercept).  :class:`DPLinearRegression` releases them once
through :func:`dpfair.privacy.gaussian_mechanism` or :func:`dpfair.privacy.laplace_mechanism` (the
"SSP" of Vu & Slavkovic 2009, Foulds et al. 2016, Sheffet 2017, Wang 2018) and solves the normal
equations from the noisy statistics: everything after the release is post-processing.

Defaults that work at practical epsilon (epsilon 1 on Law School and Adult, ``benchmarks/bench_linear_model.py``):

* ``alpha="auto"`` ties the ridge penalty to the noise actually added (:func:`auto_alpha`): a high-probability
  bound on the spectral norm of the noise in the released Gram matrix, a function of epsilon, delta, the
  declared bounds and the number of columns only (never of the data).
* ``feature_bounds`` (each feature's public range) lets the estimator centre and scale every column by public
  constants, and spend ``range_share`` of epsilon on privately locating where each feature's values lie
  (:func:`private_feature_ranges`), so a feature whose values fill a small part of its declared range is not
  drowned by noise calibrated to the whole range.
* ``mechanism="auto"`` is the Gaussian mechanism unless the budget to be charged allows no delta, where it is the
  Laplace mechanism: the default fits a default ``PrivacyBudget(epsilon)``.
* :class:`NoiseDominatesWarning` when the released Gram matrix carries less signal than the noise in it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from dpfair._estimator import CloneLineageMixin
from dpfair._validation import check_bool, check_nonnegative_finite, check_row_norms
from dpfair._warnings import find_stack_level
from dpfair.base import PrivacyParameters, ValidatedData, ValidatedOptions
from dpfair.linear_model._common import (
    BOUND_TOL,
    PrivateLinearModel,
    check_declared_bound,
    declared_feature_ranges,
    declared_target_range,
    feature_attributes,
    squared_bound,
    validated_features,
    validated_xy,
)
from dpfair.linear_model._feature_ranges import private_feature_ranges
from dpfair.linear_model._feature_ranges import quantile_utilities as quantile_utilities  # re-exported (was defined here)
from dpfair.linear_model._ssp import AUTO_ALPHA_FAILURE_PROBABILITY as AUTO_ALPHA_FAILURE_PROBABILITY  # re-exported
from dpfair.linear_model._ssp import (
    auto_alpha,
    noise_standard_deviation,
    release_statistics,
    solve_normal_equations,
    ssp_sensitivity,
    sufficient_statistics,
    unpack_statistics,
)
from dpfair.privacy import default_budget
from dpfair.privacy.accounting import gaussian_sigma_approx_dp, laplace_scale
from dpfair.privacy.noise import NoiseSource, check_noise_room

__all__ = ["DPLinearRegression", "NoiseDominatesWarning", "auto_alpha", "private_feature_ranges"]

MECHANISMS = ("gaussian", "laplace")

#: ``mechanism`` values accepted by the estimator: the two mechanisms and "auto" (see :func:`resolve_mechanism`).
MECHANISM_CHOICES = ("auto", *MECHANISMS)


class NoiseDominatesWarning(UserWarning):
    """The noise of a private linear model outweighs the signal it can carry at this epsilon and number of rows.

    Decided from released and public quantities only: :attr:`DPLinearRegression.noise_to_signal_` (the noise in
    the released Gram matrix against its largest eigenvalue) and :attr:`DPLogisticRegression.noise_to_signal_`
    (the objective-perturbation noise's expected gradient against the largest gradient the data can give).
    """


def resolve_mechanism(mechanism: str, epsilon: float, delta: float, budget: Any) -> str:
    """The mechanism ``mechanism`` names; ``"auto"`` is Gaussian unless the budget to be charged allows no delta.

    Parameters
    ----------
    mechanism : {"auto", "gaussian", "laplace"}
        A validated choice.
    epsilon, delta : float
        The validated privacy parameters.
    budget : PrivacyBudget or None
        The budget the fit charges (``None``: :func:`dpfair.privacy.default_budget`, which may be ``None``).

    Returns
    -------
    str
        ``"gaussian"`` or ``"laplace"``: ``"auto"`` gives ``"laplace"`` when ``delta = 0`` or the budget's total
        delta is 0 (a pure ``PrivacyBudget(epsilon)``), else ``"gaussian"`` (less noise than Laplace for more than
        two or three features).  Depends on public configuration only, never on data.
    """
    if mechanism != "auto":
        return mechanism
    charged = budget if budget is not None else default_budget()
    pure_budget = charged is not None and float(getattr(charged, "delta", 0.0)) == 0.0
    if math.isinf(epsilon):
        return "gaussian"
    return "laplace" if delta == 0.0 or pure_budget else "gaussian"

#: Largest noise scale accepted: beyond it the release carries no information and the solve overflows.
_MAX_NOISE_SCALE = 1e100


def check_mechanism(mechanism: Any, epsilon: float = math.inf, delta: float = 0.0) -> str:
    """``mechanism``, one of ``MECHANISMS``; the Gaussian mechanism at a finite ``epsilon`` needs ``delta > 0``.

    Parameters
    ----------
    mechanism : object
        The candidate.
    epsilon, delta : float, default inf, 0
        The validated privacy parameters (the default checks the name only).

    Returns
    -------
    str
        ``mechanism``.
    """
    if not isinstance(mechanism, str) or mechanism not in MECHANISM_CHOICES:
        raise ValueError(f"mechanism must be one of {list(MECHANISM_CHOICES)}, got {mechanism!r}.")
    if mechanism == "gaussian" and not math.isinf(epsilon) and delta == 0.0:
        raise ValueError(
            "delta must be > 0 with mechanism='gaussian' (the Gaussian mechanism is (epsilon, delta)-DP); "
            "pass e.g. delta=1e-6, or mechanism='laplace' for pure epsilon-DP."
        )
    return mechanism


def check_budget_pays_delta(mechanism: str, epsilon: float, delta: float, budget: Any) -> None:
    """Refuse, before any charge, the Gaussian mechanism against a budget that allows no delta, naming the fixes."""
    if mechanism != "gaussian" or math.isinf(epsilon) or delta == 0.0:
        return
    charged = budget if budget is not None else default_budget()
    if charged is not None and float(getattr(charged, "delta", 0.0)) == 0.0:
        which = "budget" if budget is not None else "the default ledger (set_default_budget)"
        raise ValueError(
            f"mechanism='gaussian' spends delta={delta:g}, but {which} is a pure epsilon-DP budget (its delta is 0) and "
            "would refuse the charge. Pass mechanism='laplace' (or the default mechanism='auto') for pure epsilon-DP, "
            "or give a budget with a delta, e.g. PrivacyBudget(epsilon, 1e-5)."
        )


@dataclass(frozen=True, eq=False)
class _LinearOptions(ValidatedOptions):
    """The validated parameters of :class:`DPLinearRegression` that are not privacy parameters."""

    alpha: float | str
    intercept: bool
    range_share: float


@dataclass(frozen=True, eq=False)
class _NoisePlan:
    """The release's noise, fixed before the charge from the declared bounds, epsilon and the shape only."""

    sensitivity: float
    scale: float
    mechanism: str
    p: int
    n: int
    range_epsilon: float
    ssp_epsilon: float


@dataclass(frozen=True, eq=False, kw_only=True)
class _LinearData(ValidatedData):
    """Step 1's data: the validated rows, the declared bounds and the noise plan."""

    X: np.ndarray
    y: np.ndarray
    names: Any
    data_norm: float | None
    target_range: tuple[float, float] | None
    feature_ranges: np.ndarray | None
    plan: _NoisePlan


@dataclass(frozen=True, eq=False)
class _LinearRelease:
    """Step 5's output: the released feature ranges (or the declared ones) and the released statistics."""

    ranges: np.ndarray | None
    noisy: np.ndarray


class DPLinearRegression(PrivateLinearModel, CloneLineageMixin, RegressorMixin, BaseEstimator):
    """Differentially private (ridge) linear regression by sufficient-statistics perturbation.

    Releases ``Z^T Z`` and ``Z^T y`` (``Z`` = the features, plus a column of ones with
    ``fit_intercept``) once with Gaussian or Laplace noise calibrated to *declared* bounds on every
    row, repairs the noisy Gram matrix to be positive semi-definite and solves the ridge normal
    equations ``(G_+ + alpha P) w = Z^T y`` (``P``: the identity without the intercept, which is not
    penalised).  At ``epsilon = inf`` this is exactly :class:`sklearn.linear_model.Ridge`
    (``LinearRegression`` for ``alpha = 0``, which is what ``alpha="auto"`` gives there).

    **Declaring the bounds.** Either ``data_norm`` (``||x||_2 <= data_norm`` for every row; the
    design is used as given) or ``feature_bounds`` (each feature's public ``(low, high)``; preferred):
    with ``feature_bounds`` the estimator first spends ``range_share`` of epsilon on locating each
    feature's central range privately (:func:`private_feature_ranges`: its 5% and 95% quantiles on a
    public grid over the declared range), clips every feature into that released range, and scales it
    to a column ``x'`` with ``|x'_j| <= 1 / sqrt(d)`` (so ``||x'|| <= 1``), by constants that are
    public or released.  ``predict`` applies the same clipping, so the fitted model is linear inside
    the released ranges and constant beyond them.  ``target_bound`` is ``b`` (``|y| <= b``) or a pair
    ``(low, high)``; a pair centres ``y`` on its midpoint (with ``feature_bounds``, ``y`` is also scaled
    to ``[-1, 1]``).

    **What it protects.** ``fit`` is ``(epsilon, delta)``-DP (Gaussian, the analytic calibration of
    Balle & Wang 2018) or ``(epsilon, 0)``-DP (Laplace) for every training row ``(x, y)`` under
    "replace one row" (``n`` is public): the statistics' sensitivity is ``sqrt(2) B^2`` (L2) or
    ``(D + 1) B^2`` (L1) with ``B^2`` the bound on ``||(z, y)||^2`` (``data_norm^2 + fit_intercept +
    target_bound^2``, or ``1 + fit_intercept + 1`` after the scaling of ``feature_bounds``) and ``D`` the
    length of ``(z, y)`` (see :func:`ssp_sensitivity`); with ``feature_bounds`` the range release
    (``range_share * epsilon``, pure DP) and the statistics (the rest of epsilon) compose to
    ``(epsilon, delta)``.  Everything after the release (the PSD repair, the solve, ``predict``) is
    post-processing.  A row outside a declared bound raises ``ValueError``: scale features by public
    constants first (a ``StandardScaler`` fitted on the private rows would leak their means and spreads).

    **Regularisation.** Every released entry gets noise of standard deviation ``s`` independent of
    ``n``.  ``alpha="auto"`` (default) is :func:`auto_alpha`, ``s (2 sqrt(p) + 2 sqrt(log 20))``: with
    probability 0.95 it dominates the noise's most negative eigenvalue, so the regularised noisy Gram
    matrix is at least the exact one (AdaSSP's rule, Wang 2018, without spending budget on the data's
    smallest eigenvalue).  It is a function of epsilon, delta, the declared bounds and ``p`` only.
    The fitted ``alpha_`` is in the units of the released Gram matrix (of the scaled design with
    ``feature_bounds``).  A :class:`NoiseDominatesWarning` is raised when the noise's expected spectral
    norm exceeds the largest eigenvalue of the released, centred Gram matrix (``noise_to_signal_ > 1``):
    the coefficients are then mostly shrinkage and noise.

    Parameters
    ----------
    epsilon : float, default 1.0
        Privacy parameter (> 0; ``inf`` is the exact estimator, with a
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    delta : float, default 1e-6
        ``delta`` of the Gaussian mechanism, in (0, 1) (keep it well below ``1 / n``); unused by the
        Laplace mechanism, which spends ``delta = 0``.
    data_norm : float or None, default None
        Declared bound on the L2 norm of every row of ``X``.  With finite ``epsilon``, declare it or
        ``feature_bounds`` (not both).
    target_bound : float, (float, float) or None, default None
        Declared bound ``b`` on ``|y|``, or the declared range ``(low, high)`` of ``y``.  Required
        with finite ``epsilon``.
    alpha : "auto" or float, default "auto"
        Ridge penalty (``>= 0``) on the coefficients, not on the intercept; ``"auto"``: :func:`auto_alpha`.
    fit_intercept : bool, default True
        Fit an intercept (through a column of ones; its count ``n`` is public and gets no noise).
    mechanism : {"auto", "gaussian", "laplace"}, default "auto"
        The noise: Gaussian (L2 sensitivity, ``(epsilon, delta)``-DP; less noise for more than a few
        features) or Laplace (L1 sensitivity, pure ``epsilon``-DP).  ``"auto"`` is Gaussian unless the
        budget to be charged (``budget``, else :func:`dpfair.privacy.default_budget`) allows no delta,
        then Laplace: the default fits a default ``PrivacyBudget(epsilon)``.  ``"gaussian"`` against
        such a budget raises ``ValueError`` before anything is charged, naming both fixes.
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, delta)`` (Laplace: ``(epsilon, 0)``) once per ``fit``, after every
        argument is validated and just before the noise draw.
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure noise (OpenDP).  A seed: reproducible, *not hardened* noise (experiments and
        tests only).
    feature_bounds : (float, float), sequence of (float, float), or None, default None
        Each feature's declared, public range: one pair for every feature, or one pair per feature.
    range_share : float, default 0.3
        With ``feature_bounds`` and finite ``epsilon``: the share of ``epsilon`` spent on the private
        feature ranges, in ``[0, 1)`` (0: clip nothing and scale by the declared ranges).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Coefficients (in the units of ``X``; with ``feature_bounds`` they apply to ``X`` clipped into
        ``feature_range_``).
    intercept_ : float
        Intercept (0.0 without ``fit_intercept``).
    alpha_ : float
        The ridge penalty used (``alpha``, or the value of ``"auto"``).
    mechanism_ : str
        ``"gaussian"`` or ``"laplace"``.
    feature_range_ : ndarray of shape (2, n_features) or None
        With ``feature_bounds``: the released (or, at ``range_share=0``, declared) ranges ``predict``
        clips into; ``None`` otherwise.
    noisy_gram_ : ndarray of shape (p, p)
        The released ``Z^T Z`` (before the PSD repair; ``p = n_features + fit_intercept``; of the scaled
        design with ``feature_bounds``).
    noisy_moment_ : ndarray of shape (p,)
        The released ``Z^T y``.
    noise_scale_ : float
        Standard deviation (Gaussian) or scale (Laplace) of the noise on every released entry.
    noise_to_signal_ : float
        Expected spectral norm of the noise on the features' Gram block (``2 s sqrt(d)``) over the
        largest eigenvalue of the released, centred Gram matrix (0 at ``epsilon = inf``).
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of str
        Feature names, when ``X`` has them.
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring"}``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfair.linear_model import DPLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(20000, 2))
    >>> y = np.clip(X @ [1.0, -0.5] + 0.1 * rng.normal(size=20000), -1, 1)
    >>> model = DPLinearRegression(epsilon=1.0, feature_bounds=(-0.5, 0.5), target_bound=1.0, random_state=0)
    >>> np.round(model.fit(X, y).coef_, 1)
    array([ 1. , -0.5])
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "delta": "delta", "budget": "budget", "random_state": "random_state",
    }
    _privacy_protects: ClassVar[str] = "every training row (x, y): features and target"
    _exact_protects: ClassVar[str] = "nothing: epsilon=inf fits the exact least-squares solution"

    @property
    def _privacy_label(self) -> str:  # the ledger's label of the one charge
        try:
            params = self._validate_privacy_parameters()
            mechanism = resolve_mechanism(self.mechanism, params.epsilon, params.delta, params.budget)
        except (TypeError, ValueError):
            mechanism = self.mechanism
        return f"{type(self).__name__}.fit ({mechanism} sufficient statistics)"

    def __init__(
        self, *, epsilon: float = 1.0, delta: float = 1e-6, data_norm: float | None = None,
        target_bound: float | tuple[float, float] | None = None, alpha: float | str = "auto", fit_intercept: bool = True,
        mechanism: str = "auto", budget: Any = None, random_state: Any = None, feature_bounds: Any = None,
        range_share: float = 0.3,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.target_bound = target_bound
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.mechanism = mechanism
        self.budget = budget
        self.random_state = random_state
        self.feature_bounds = feature_bounds
        self.range_share = range_share

    def fit(self, X: Any, y: Any) -> DPLinearRegression:
        """Release the noisy sufficient statistics and solve the ridge normal equations.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features, every row inside the declared ``data_norm`` or ``feature_bounds``.
        y : array-like of shape (n_samples,)
            Targets inside the declared ``target_bound``.

        Returns
        -------
        DPLinearRegression
            The fitted estimator (``self``).

        Raises
        ------
        ValueError, TypeError
            On an invalid argument, a missing bound with finite ``epsilon``, a row outside a declared
            bound (the message names the argument, never a private value), or ``mechanism="gaussian"``
            against a budget that allows no delta.
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf``.
        NoiseDominatesWarning
            When the released Gram matrix shows less signal than the noise in it.
        """
        return self._set_fitted(self._release(X, y))

    # ------------------------------------------------------------------ the steps of dpfair.base's template
    def _validate_params(self) -> _LinearOptions:
        check_mechanism(self.mechanism)
        if isinstance(self.alpha, str):
            if self.alpha != "auto":
                raise ValueError(f"alpha must be 'auto' or a number >= 0, got {self.alpha!r}.")
            alpha: float | str = "auto"
        else:
            alpha = check_nonnegative_finite(self.alpha, "alpha")
        intercept = check_bool(self.fit_intercept, "fit_intercept")
        range_share = check_nonnegative_finite(self.range_share, "range_share")
        if not range_share < 1.0:
            raise ValueError(f"range_share must lie in [0, 1) (the share of epsilon spent on the feature ranges), got "
                             f"{range_share!r}.")
        if self.feature_bounds is not None and self.data_norm is not None:
            raise ValueError("declare either data_norm (a bound on every row's norm) or feature_bounds (each feature's "
                             "range), not both: with feature_bounds the row norm is derived from the ranges.")
        return _LinearOptions(alpha=alpha, intercept=intercept, range_share=range_share)

    def _mechanism(self, params: PrivacyParameters) -> str:
        """The mechanism this fit uses (``"auto"`` resolved from the public budget configuration), checked."""
        check_mechanism(self.mechanism, params.epsilon, params.delta if self.mechanism != "auto" else 1.0)
        mechanism = resolve_mechanism(self.mechanism, params.epsilon, params.delta, params.budget)
        check_budget_pays_delta(mechanism, params.epsilon, params.delta, params.budget)
        return mechanism

    def _privacy_cost(self, params: PrivacyParameters) -> tuple[float, float]:
        """``(epsilon, delta)``; the Laplace mechanism and ``epsilon = inf`` spend ``delta = 0``."""
        mechanism = self._mechanism(params)
        return params.epsilon, 0.0 if mechanism == "laplace" or math.isinf(params.epsilon) else params.delta

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any) -> _LinearData:
        mechanism = self._mechanism(params)
        if self.feature_bounds is None:
            data_norm = check_declared_bound(self.data_norm, "data_norm", params.epsilon,
                                             "a bound on every row's L2 norm ||x|| (or feature_bounds, each feature's range)")
        else:
            data_norm = None
        if self.target_bound is None:
            check_declared_bound(None, "target_bound", params.epsilon, "a bound on every |y|, or y's range (low, high)")
            target_range = None
        else:
            target_range = declared_target_range(self.target_bound, "target_bound")
        X_arr, y_arr, names = validated_xy(X, y, owner=type(self).__name__, y_numeric=True)
        feature_ranges = None
        if self.feature_bounds is not None:
            feature_ranges = declared_feature_ranges(self.feature_bounds, "feature_bounds", X_arr.shape[1])
            width = (feature_ranges[1] - feature_ranges[0]) * BOUND_TOL
            if X_arr.size and not ((X_arr >= feature_ranges[0] - width) & (X_arr <= feature_ranges[1] + width)).all():
                raise ValueError(
                    "X has value(s) outside the declared feature_bounds: the privacy guarantee rests on those ranges. "
                    "Clip or rescale the features with public constants, or declare wider feature_bounds."
                )
        check_row_norms(X_arr, data_norm)
        if target_range is not None:
            low, high = target_range
            slack = (high - low) * BOUND_TOL
            if not ((y_arr >= low - slack) & (y_arr <= high + slack)).all():
                raise ValueError(
                    f"y has value(s) outside the declared target_bound={self.target_bound!r}: the privacy guarantee "
                    "rests on that bound. Clip or rescale y with public constants, or declare a larger target_bound."
                )
        plan = self._noise_plan(params, X_arr.shape, mechanism, data_norm, target_range, scaled=feature_ranges is not None)
        return _LinearData(n_rows=X_arr.shape[0], X=X_arr, y=y_arr, names=names, data_norm=data_norm,
                           target_range=target_range, feature_ranges=feature_ranges, plan=plan)

    @staticmethod
    def _noise_plan(params: PrivacyParameters, shape: tuple[int, int], mechanism: str, data_norm: float | None,
                    target_range: tuple[float, float] | None, *, scaled: bool) -> _NoisePlan:
        """The release's noise, from the declared bounds, epsilon and the public shape ``(n, d)`` only.

        Refused (``ValueError``) when the scale is useless, before anything is computed from the rows: the dry run
        (:meth:`~dpfair.base.PrivateEstimator.check_release`) refuses it too.
        """
        intercept = params.options.intercept
        n, d = shape
        p = d + int(intercept)
        finite = not math.isinf(params.epsilon)
        range_epsilon = params.epsilon * params.options.range_share if scaled and finite else 0.0
        ssp_epsilon = params.epsilon - range_epsilon
        if not finite:
            scale, sensitivity = 0.0, 0.0
        else:
            if scaled:  # ||x'|| <= 1 and |y'| <= 1 after the public / released scaling
                bound_sq = 2.0 + float(intercept)
            else:
                low, high = target_range
                y_bound = (high - low) / 2.0 if intercept else max(abs(low), abs(high))
                bound_sq = squared_bound(data_norm=data_norm, target_bound=y_bound) + float(intercept)
            sensitivity = ssp_sensitivity(bound_sq, p + 1, mechanism)
            if mechanism == "gaussian":
                scale = gaussian_sigma_approx_dp(sensitivity, ssp_epsilon, params.delta)
            else:
                scale = laplace_scale(sensitivity, ssp_epsilon)
            if not scale <= _MAX_NOISE_SCALE:
                raise ValueError(
                    f"epsilon={params.epsilon!r} is too small for the declared bounds: the noise scale ({scale:.3g}) "
                    f"exceeds {_MAX_NOISE_SCALE:g}, the release would carry no information; use a larger epsilon or "
                    "rescale the data."
                )
            if scaled:  # every entry of the scaled statistics is at most n in absolute value
                check_noise_room(np.array([float(n)]), scale, "the sufficient statistics")
        return _NoisePlan(sensitivity=sensitivity, scale=scale, mechanism=mechanism, p=p, n=n,
                          range_epsilon=range_epsilon, ssp_epsilon=ssp_epsilon)

    def _compute_statistics(self, params: PrivacyParameters, data: _LinearData) -> np.ndarray | None:
        """The exact sufficient statistics (their noise room checked), or ``None`` with ``feature_bounds``.

        With ``feature_bounds`` the design depends on the private ranges, released after the charge: the exact
        statistics are then computed in :meth:`_run`, once those ranges are known.
        """
        if data.feature_ranges is not None:
            return None
        design, target = self._design(data, params, None)
        exact = sufficient_statistics(design, target, params.options.intercept)
        if not math.isinf(params.epsilon):
            check_noise_room(exact, data.plan.scale, "the sufficient statistics")
        return exact

    @staticmethod
    def _target_centre_and_half_width(data: _LinearData, intercept: bool) -> tuple[float, float]:
        """``(centre, half_width)`` of ``y``: ``y' = (y - centre) / half_width``, ``|y'| <= 1`` with ``feature_bounds``.

        Without an intercept ``y`` is not centred (that would add one); with ``data_norm`` it is not scaled (the
        units of ``alpha`` stay those of ``y``, as in scikit-learn's ``Ridge``).
        """
        if data.target_range is None:  # epsilon = inf without a declared target_bound: y as given
            return 0.0, 1.0
        low, high = data.target_range
        centre, half = ((low + high) / 2.0, (high - low) / 2.0) if intercept else (0.0, max(abs(low), abs(high)))
        if data.feature_ranges is None:
            return centre, 1.0
        return centre, half

    @staticmethod
    def _feature_map(ranges: np.ndarray | None, d: int, intercept: bool) -> tuple[np.ndarray, np.ndarray]:
        """``(centre, multiplier)`` of the per-feature map ``x' = (clip(x) - centre) * multiplier``, ``|x'_j| <= 1/sqrt(d)``."""
        if ranges is None:
            return np.zeros(d), np.ones(d)
        if intercept:
            return (ranges[0] + ranges[1]) / 2.0, 2.0 / ((ranges[1] - ranges[0]) * math.sqrt(d))
        return np.zeros(d), 1.0 / (np.maximum(np.abs(ranges[0]), np.abs(ranges[1])) * math.sqrt(d))

    def _design(
        self, data: _LinearData, params: PrivacyParameters, ranges: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The design ``Z`` (scaled and with the intercept's column) and the centred / scaled target."""
        X, intercept = data.X, params.options.intercept
        if ranges is not None:
            centre, multiplier = self._feature_map(ranges, X.shape[1], intercept)
            X = (np.clip(X, ranges[0], ranges[1]) - centre) * multiplier
        y_centre, y_half = self._target_centre_and_half_width(data, intercept)
        target = (data.y - y_centre) / y_half
        Z = np.column_stack([X, np.ones(X.shape[0])]) if intercept else X
        return Z, target

    def _run(
        self, params: PrivacyParameters, data: _LinearData, statistics: np.ndarray | None, noise: NoiseSource
    ) -> _LinearRelease:
        """Release the private feature ranges (with ``feature_bounds``), then the sufficient statistics of the design
        those released ranges give: two releases, the second computed from the first."""
        plan, ranges, exact = data.plan, data.feature_ranges, statistics
        if ranges is not None and plan.range_epsilon > 0:
            ranges = private_feature_ranges(data.X, ranges, plan.range_epsilon, noise)
        if exact is None:  # the design depends on the ranges just released
            design, target = self._design(data, params, ranges)
            exact = sufficient_statistics(design, target, params.options.intercept)
        if math.isinf(params.epsilon):
            return _LinearRelease(ranges=ranges, noisy=exact)
        noisy = release_statistics(
            exact, sensitivity=plan.sensitivity, epsilon=plan.ssp_epsilon, delta=params.delta,
            mechanism=plan.mechanism, noise=noise,
        )
        return _LinearRelease(ranges=ranges, noisy=noisy)

    def _solve(self, params: PrivacyParameters, noisy: _LinearRelease, data: _LinearData) -> dict[str, Any]:
        """Post-processing: the PSD repair, the ridge normal equations, and the map back to the units of ``X`` and ``y``."""
        intercept, d, plan = params.options.intercept, data.X.shape[1], data.plan
        p, n, mechanism = plan.p, plan.n, plan.mechanism
        gram, moment = unpack_statistics(noisy.noisy, p, n, intercept)
        finite = not math.isinf(params.epsilon)
        noise_std = noise_standard_deviation(plan.scale, mechanism) if finite else 0.0
        alpha = auto_alpha(noise_std, p) if params.options.alpha == "auto" else float(params.options.alpha)
        weights = solve_normal_equations(gram, moment, alpha, intercept, repair=finite)
        if not np.isfinite(weights).all():  # float64 overflow in the solve (never a NaN out)
            raise ValueError(
                "the normal equations overflow float64 for these data and this alpha; rescale X and y (and the declared "
                "bounds) towards 1, or use a larger alpha."
            )
        noise_to_signal = self._noise_to_signal(gram, n, d, intercept, noise_std)
        if noise_to_signal > 1.0:
            warnings.warn(
                f"{type(self).__name__}: the noise added to the Gram matrix (expected spectral norm "
                f"{noise_to_signal:.3g} times the largest eigenvalue of the released, centred Gram matrix) dominates "
                "the signal at this epsilon, so the coefficients are mostly shrinkage and noise. Use a larger epsilon, "
                "fewer features, more rows, or declare tighter bounds (feature_bounds with range_share).",
                NoiseDominatesWarning,
                stacklevel=find_stack_level(),
            )
        ranges = noisy.ranges
        centre, multiplier = self._feature_map(ranges, d, intercept)
        y_centre, y_half = self._target_centre_and_half_width(data, intercept)
        coef = weights[:d] * multiplier * y_half  # back to the units of (clipped) X and y
        constant = float(weights[d]) if intercept else 0.0
        intercept_value = y_centre + y_half * constant - float(coef @ centre)
        return {
            "coef_": coef.copy(),
            "intercept_": float(intercept_value) if intercept else 0.0,
            "alpha_": float(alpha),
            "mechanism_": mechanism,
            "feature_range_": None if ranges is None else np.asarray(ranges, dtype=float).copy(),
            "noisy_gram_": gram,
            "noisy_moment_": moment,
            "noise_scale_": float(plan.scale),
            "noise_to_signal_": float(noise_to_signal),
            **feature_attributes(d, data.names),
        }

    @staticmethod
    def _noise_to_signal(gram: np.ndarray, n: int, d: int, intercept: bool, noise_std: float) -> float:
        """``2 s sqrt(d)`` over the largest eigenvalue of the released Gram matrix of the centred features.

        Centring uses the released column sums (the intercept's row) and the public ``n``: released and public
        quantities only.  ``inf`` when the released centred Gram matrix has no positive eigenvalue.
        """
        if noise_std == 0.0 or d == 0:
            return 0.0
        block = gram[:d, :d]
        if intercept and n > 0:
            sums = gram[:d, d]
            block = block - np.outer(sums, sums) / n
        top = float(np.linalg.eigvalsh((block + block.T) / 2.0)[-1])
        expected_noise = 2.0 * noise_std * math.sqrt(d)
        return expected_noise / top if top > 0 else math.inf

    def predict(self, X: Any) -> np.ndarray:
        """Predict ``clip(X) @ coef_ + intercept_`` (``clip``: into ``feature_range_``, with ``feature_bounds`` only).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predictions.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        check_is_fitted(self, "coef_")
        X_arr = validated_features(self, X)
        ranges = getattr(self, "feature_range_", None)
        if ranges is not None:
            X_arr = np.clip(X_arr, ranges[0], ranges[1])
        return X_arr @ self.coef_ + self.intercept_
