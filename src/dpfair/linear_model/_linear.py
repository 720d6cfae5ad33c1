"""Differentially private linear regression by sufficient-statistics perturbation.

Least squares needs only the sufficient statistics ``Z^T Z`` and ``Z^T y`` of the design ``Z`` (the
features, plus a column of ones for the intercept).  :class:`DPLinearRegression` releases them once
through :func:`dpfair.privacy.gaussian_mechanism` or :func:`dpfair.privacy.laplace_mechanism` (the
"SSP" of Vu & Slavkovic 2009, Foulds et al. 2016, Sheffet 2017, Wang 2018) and solves the normal
equations from the noisy statistics: everything after the release is post-processing.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dpfair._estimator import CloneLineageMixin
from dpfair._validation import check_bool, check_nonnegative_finite
from dpfair.base import PrivacyParameters
from dpfair.linear_model._common import (
    BOUND_TOL,
    PrivateLinearModel,
    check_declared_bound,
    check_row_norms,
    feature_attributes,
    squared_bound,
    validated_xy,
)
from dpfair.privacy.accounting import gaussian_sigma_approx_dp, laplace_scale
from dpfair.privacy.mechanisms import gaussian_mechanism, laplace_mechanism
from dpfair.privacy.noise import NoiseSource, check_noise_room

__all__ = ["DPLinearRegression"]

MECHANISMS = ("gaussian", "laplace")

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
    if not isinstance(mechanism, str) or mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {list(MECHANISMS)}, got {mechanism!r}.")
    if mechanism == "gaussian" and not math.isinf(epsilon) and delta == 0.0:
        raise ValueError(
            "delta must be > 0 with mechanism='gaussian' (the Gaussian mechanism is (epsilon, delta)-DP); "
            "pass e.g. delta=1e-6, or mechanism='laplace' for pure epsilon-DP."
        )
    return mechanism


def ssp_sensitivity(bound_sq: float, dim: int, mechanism: str) -> float:
    """Sensitivity of the released statistics under "replace one row".

    One row contributes ``u u^T`` with ``u = (z, y)`` and ``||u||^2 <= bound_sq`` (``data_norm^2``,
    plus 1 for the intercept column, plus ``target_bound^2``); the release is a sub-vector of the upper
    triangle of ``sum_i u_i u_i^T``.

    * L2 (Gaussian): ``||u u^T - u' u'^T||_F^2 = ||u||^4 + ||u'||^4 - 2 (u . u')^2 <= 2 bound_sq^2``,
      so the sensitivity is ``sqrt(2) bound_sq``.
    * L1 (Laplace): the upper triangle of ``u u^T`` has L1 norm
      ``(||u||_1^2 + ||u||_2^2) / 2 <= (dim + 1) bound_sq / 2`` (Cauchy-Schwarz, ``dim = len(u)``), so
      the sensitivity is ``(dim + 1) bound_sq``.

    Parameters
    ----------
    bound_sq : float
        Declared bound on ``||u||^2``.
    dim : int
        Length of ``u``.
    mechanism : {"gaussian", "laplace"}
        Which norm.

    Returns
    -------
    float
        The L2 (Gaussian) or L1 (Laplace) sensitivity.
    """
    if mechanism == "gaussian":
        return math.sqrt(2.0) * bound_sq
    return (dim + 1) * bound_sq


def sufficient_statistics(Z: np.ndarray, y: np.ndarray, intercept: bool) -> np.ndarray:
    """The released vector: the upper triangle of ``Z^T Z`` (without the public count ``n``) and ``Z^T y``.

    Parameters
    ----------
    Z : ndarray of shape (n, p)
        Design (the last column is ones when ``intercept``).
    y : ndarray of shape (n,)
        Targets.
    intercept : bool
        Whether the last column of ``Z`` is the intercept's column of ones.

    Returns
    -------
    ndarray of shape (p (p + 1) / 2 - intercept + p,)
    """
    p = Z.shape[1]
    rows, cols = np.triu_indices(p)
    keep = ~((rows == p - 1) & (cols == p - 1)) if intercept else np.ones(rows.size, dtype=bool)
    gram = Z.T @ Z
    return np.concatenate([gram[rows[keep], cols[keep]], Z.T @ y])


def unpack_statistics(vector: np.ndarray, p: int, n: int, intercept: bool) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`sufficient_statistics`: the symmetric ``(p, p)`` Gram matrix and the ``(p,)`` moment."""
    rows, cols = np.triu_indices(p)
    keep = ~((rows == p - 1) & (cols == p - 1)) if intercept else np.ones(rows.size, dtype=bool)
    n_gram = int(keep.sum())
    gram = np.zeros((p, p))
    gram[rows[keep], cols[keep]] = vector[:n_gram]
    gram = gram + np.triu(gram, 1).T
    if intercept:
        gram[p - 1, p - 1] = float(n)  # public: the number of rows
    return gram, np.array(vector[n_gram:], dtype=float)


def release_statistics(
    vector: np.ndarray, *, sensitivity: float, epsilon: float, delta: float, mechanism: str, noise: NoiseSource
) -> np.ndarray:
    """Add the mechanism's noise to the statistics (any shape: a stack of vectors is noised entry by entry).

    Parameters
    ----------
    vector : ndarray
        Exact statistics.
    sensitivity : float
        From :func:`ssp_sensitivity`.
    epsilon, delta : float
        Privacy parameters (``delta`` only for the Gaussian mechanism).
    mechanism : {"gaussian", "laplace"}
        Which mechanism of :mod:`dpfair.privacy.mechanisms`.
    noise : NoiseSource
        Noise source.

    Returns
    -------
    ndarray
        The noisy statistics, same shape.
    """
    if mechanism == "gaussian":
        return gaussian_mechanism(vector, sensitivity=sensitivity, epsilon=epsilon, delta=delta, random_state=noise)
    return laplace_mechanism(vector, sensitivity=sensitivity, epsilon=epsilon, random_state=noise)


def solve_normal_equations(gram: np.ndarray, moment: np.ndarray, alpha: float, intercept: bool, repair: bool) -> np.ndarray:
    """Ridge normal equations ``(G_+ + alpha P) w = m`` with the PSD repair ``G_+`` of a noisy Gram matrix.

    ``G_+`` is the projection of the symmetric ``G`` onto the positive semi-definite cone (negative
    eigenvalues set to 0: the nearest PSD matrix in Frobenius norm); ``P`` is the identity without the
    intercept's entry (the intercept is not penalised, as in :class:`sklearn.linear_model.Ridge`).  A
    singular system (``alpha = 0`` and a rank-deficient ``G_+``) gets the minimum-norm least-squares
    solution.

    Parameters
    ----------
    gram : ndarray of shape (p, p)
        Symmetric (noisy) ``Z^T Z``.
    moment : ndarray of shape (p,)
        (Noisy) ``Z^T y``.
    alpha : float
        Ridge penalty, ``>= 0``.
    intercept : bool
        Whether the last coordinate is the (unpenalised) intercept.
    repair : bool
        Project ``gram`` onto the PSD cone first.

    Returns
    -------
    ndarray of shape (p,)
        The weights (the intercept last).
    """
    if repair:
        values, vectors = np.linalg.eigh(gram)
        gram = (vectors * np.maximum(values, 0.0)) @ vectors.T
    penalty = np.full(gram.shape[0], alpha)
    if intercept:
        penalty[-1] = 0.0
    system = gram + np.diag(penalty)
    try:
        return np.linalg.solve(system, moment)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(system, moment, rcond=None)[0]


class DPLinearRegression(PrivateLinearModel, CloneLineageMixin, RegressorMixin, BaseEstimator):
    """Differentially private (ridge) linear regression by sufficient-statistics perturbation.

    Releases ``Z^T Z`` and ``Z^T y`` (``Z`` = the features, plus a column of ones with
    ``fit_intercept``) once with Gaussian or Laplace noise calibrated to *declared* bounds on every
    row (``||x||_2 <= data_norm``, ``|y| <= target_bound``), repairs the noisy Gram matrix to be
    positive semi-definite and solves the ridge normal equations
    ``(G_+ + alpha P) w = Z^T y`` (``P``: the identity without the intercept, which is not
    penalised).  At ``epsilon = inf`` this is exactly :class:`sklearn.linear_model.Ridge`
    (``LinearRegression`` for ``alpha = 0``).

    **What it protects.** ``fit`` is ``(epsilon, delta)``-DP (Gaussian, the analytic calibration of
    Balle & Wang 2018) or ``(epsilon, 0)``-DP (Laplace) for every training row ``(x, y)`` under
    "replace one row" (``n`` is public): the statistics' sensitivity is ``sqrt(2) B^2`` (L2) or
    ``(D + 1) B^2`` (L1) with ``B^2 = data_norm^2 + fit_intercept + target_bound^2`` and ``D`` the
    length of ``(x, 1, y)`` (see :func:`ssp_sensitivity`); everything after the release (the PSD
    repair, the solve, ``predict``) is post-processing.  A row outside a declared bound raises
    ``ValueError``: scale features by public constants first (a ``StandardScaler`` fitted on the
    private rows would leak their means and spreads).

    **Noise and regularisation.** Every released entry gets noise of standard deviation
    ``noise_scale_`` (Gaussian) or Laplace scale ``noise_scale_``, independent of ``n``, while the
    statistics grow with ``n``: the relative error shrinks like ``1 / (n epsilon)``.  For small
    ``n`` raise ``alpha`` towards ``noise_scale_``; it is what stabilises the solve when the noisy
    Gram matrix is near-singular (the PSD repair alone only removes negative eigenvalues).

    Parameters
    ----------
    epsilon : float, default 1.0
        Privacy parameter (> 0; ``inf`` is the exact estimator, with a
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    delta : float, default 1e-6
        ``delta`` of the Gaussian mechanism, in (0, 1) (keep it well below ``1 / n``); unused by
        ``mechanism="laplace"``, which spends ``delta = 0``.
    data_norm : float or None, default None
        Declared bound on the L2 norm of every row of ``X``.  Required with finite ``epsilon``.
    target_bound : float or None, default None
        Declared bound on ``|y|``.  Required with finite ``epsilon``.
    alpha : float, default 1.0
        Ridge penalty (``>= 0``) on the coefficients, not on the intercept.
    fit_intercept : bool, default True
        Fit an intercept (through a column of ones; its count ``n`` is public and gets no noise).
    mechanism : {"gaussian", "laplace"}, default "gaussian"
        The noise: Gaussian (L2 sensitivity, ``(epsilon, delta)``-DP; better for more than a few
        features) or Laplace (L1 sensitivity, pure ``epsilon``-DP).
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, delta)`` (Laplace: ``(epsilon, 0)``) once per ``fit``, after every
        argument is validated and just before the noise draw.
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure noise (OpenDP).  A seed: reproducible, *not hardened* noise (experiments and
        tests only).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Coefficients.
    intercept_ : float
        Intercept (0.0 without ``fit_intercept``).
    noisy_gram_ : ndarray of shape (p, p)
        The released ``Z^T Z`` (before the PSD repair; ``p = n_features + fit_intercept``).
    noisy_moment_ : ndarray of shape (p,)
        The released ``Z^T y``.
    noise_scale_ : float
        Standard deviation (Gaussian) or scale (Laplace) of the noise on every released entry.
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
    >>> model = DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=1.0, random_state=0).fit(X, y)
    >>> np.round(model.coef_, 1)
    array([ 1. , -0.5])
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "delta": "delta", "budget": "budget", "random_state": "random_state",
    }
    _privacy_protects: ClassVar[str] = "every training row (x, y): features and target"
    _exact_protects: ClassVar[str] = "nothing: epsilon=inf fits the exact least-squares solution"

    @property
    def _privacy_label(self) -> str:  # the ledger's label of the one charge
        return f"{type(self).__name__}.fit ({self.mechanism} sufficient statistics)"

    def __init__(
        self, *, epsilon: float = 1.0, delta: float = 1e-6, data_norm: float | None = None,
        target_bound: float | None = None, alpha: float = 1.0, fit_intercept: bool = True,
        mechanism: str = "gaussian", budget: Any = None, random_state: Any = None,
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

    def fit(self, X: Any, y: Any) -> DPLinearRegression:
        """Release the noisy sufficient statistics and solve the ridge normal equations.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features, every row with L2 norm ``<= data_norm``.
        y : array-like of shape (n_samples,)
            Targets, ``|y| <= target_bound``.

        Returns
        -------
        DPLinearRegression
            The fitted estimator (``self``).

        Raises
        ------
        ValueError, TypeError
            On an invalid argument, a missing bound with finite ``epsilon``, or a row outside a declared
            bound (the message names the argument, never a private value).
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf``.
        """
        return self._set_fitted(self._release(X, y))

    # ------------------------------------------------------------------ the steps of dpfair.base's template
    def _validate_params(self) -> dict[str, Any]:
        check_mechanism(self.mechanism)
        alpha = check_nonnegative_finite(self.alpha, "alpha")
        intercept = check_bool(self.fit_intercept, "fit_intercept")
        return {"alpha": alpha, "intercept": intercept}

    def _privacy_cost(self, params: PrivacyParameters) -> tuple[float, float]:
        """``(epsilon, delta)``; the Laplace mechanism and ``epsilon = inf`` spend ``delta = 0``."""
        mechanism = check_mechanism(self.mechanism, params.epsilon, params.delta)
        return params.epsilon, 0.0 if mechanism == "laplace" or math.isinf(params.epsilon) else params.delta

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any) -> dict[str, Any]:
        mechanism = check_mechanism(self.mechanism, params.epsilon, params.delta)
        data_norm = check_declared_bound(self.data_norm, "data_norm", params.epsilon, "a bound on every row's L2 norm ||x||")
        target_bound = check_declared_bound(self.target_bound, "target_bound", params.epsilon, "a bound on every |y|")
        X_arr, y_arr, names = validated_xy(X, y, owner=type(self).__name__, y_numeric=True)
        check_row_norms(X_arr, data_norm)
        if target_bound is not None and not (np.abs(y_arr) <= target_bound * (1.0 + BOUND_TOL)).all():
            raise ValueError(
                f"y has value(s) outside the declared target_bound={target_bound:g} (|y| <= target_bound): the "
                "privacy guarantee rests on that bound. Clip or rescale y with public constants, or declare a larger "
                "target_bound."
            )
        return {"X": X_arr, "y": y_arr, "names": names, "mechanism": mechanism, "data_norm": data_norm,
                "target_bound": target_bound}

    def _compute_statistics(self, params: PrivacyParameters, data: dict[str, Any]) -> dict[str, Any]:
        """The exact ``Z^T Z`` and ``Z^T y`` and the noise they will need (its scale is refused when useless)."""
        X, intercept, mechanism = data["X"], params.extra["intercept"], data["mechanism"]
        n = X.shape[0]
        Z = np.column_stack([X, np.ones(n)]) if intercept else X
        p = Z.shape[1]
        exact = sufficient_statistics(Z, data["y"], intercept)
        if math.isinf(params.epsilon):
            scale, sensitivity = 0.0, 0.0
        else:
            bound_sq = squared_bound(data_norm=data["data_norm"], target_bound=data["target_bound"]) + float(intercept)
            sensitivity = ssp_sensitivity(bound_sq, p + 1, mechanism)
            if mechanism == "gaussian":
                scale = gaussian_sigma_approx_dp(sensitivity, params.epsilon, params.delta)
            else:
                scale = laplace_scale(sensitivity, params.epsilon)
            if not scale <= _MAX_NOISE_SCALE:
                raise ValueError(
                    f"epsilon={params.epsilon!r} is too small for the declared data_norm and target_bound: the noise "
                    f"scale ({scale:.3g}) exceeds {_MAX_NOISE_SCALE:g}, the release would carry no information; use a "
                    "larger epsilon or rescale the data."
                )
            check_noise_room(exact, scale, "the sufficient statistics")
        return {"exact": exact, "sensitivity": sensitivity, "scale": scale, "mechanism": mechanism, "p": p, "n": n}

    def _draw_noise(self, params: PrivacyParameters, statistics: dict[str, Any], noise: NoiseSource) -> dict[str, Any]:
        """Release the sufficient statistics (unchanged at ``epsilon = inf``)."""
        if math.isinf(params.epsilon):
            return {**statistics, "noisy": statistics["exact"]}
        noisy = release_statistics(
            statistics["exact"], sensitivity=statistics["sensitivity"], epsilon=params.epsilon,
            delta=params.delta, mechanism=statistics["mechanism"], noise=noise,
        )
        return {**statistics, "noisy": noisy}

    def _solve(self, params: PrivacyParameters, noisy: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        """Post-processing: the PSD repair and the ridge normal equations from the released statistics."""
        intercept, d = params.extra["intercept"], data["X"].shape[1]
        gram, moment = unpack_statistics(noisy["noisy"], noisy["p"], noisy["n"], intercept)
        weights = solve_normal_equations(gram, moment, params.extra["alpha"], intercept, repair=not math.isinf(params.epsilon))
        if not np.isfinite(weights).all():  # float64 overflow in the solve (never a NaN out)
            raise ValueError(
                "the normal equations overflow float64 for these data and this alpha; rescale X and y (and the declared "
                "data_norm and target_bound) towards 1, or use a larger alpha."
            )
        return {
            "coef_": weights[:d].copy(),
            "intercept_": float(weights[d]) if intercept else 0.0,
            "noisy_gram_": gram,
            "noisy_moment_": moment,
            "noise_scale_": float(noisy["scale"]),
            **feature_attributes(d, data["names"]),
        }

    def predict(self, X: Any) -> np.ndarray:
        """Predict ``X @ coef_ + intercept_``.

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
        X_arr = validate_data(self, X, reset=False, dtype=np.float64)
        return X_arr @ self.coef_ + self.intercept_
