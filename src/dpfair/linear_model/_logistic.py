"""Differentially private logistic regression by objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011).

:class:`DPLogisticRegression` minimises the regularised logistic loss plus a random linear term
``b . f / n`` (Algorithm 2 of Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical
Risk Minimization", JMLR 12, 2011; the analysis is refined by Kifer, Smith & Thakurta 2012).  The
noise ``b`` is drawn through :mod:`dpfair.privacy.noise` (its norm is a sum of exponentials, each the
absolute value of a Laplace draw; its direction a normalised Gaussian vector), so the secure source
is used unless a seed is given.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from dpfair._estimator import CloneLineageMixin
from dpfair._validation import check_bool, check_int, check_positive_finite, check_row_norms
from dpfair._warnings import find_stack_level
from dpfair.base import PrivacyParameters, ValidatedData, ValidatedOptions
from dpfair.linear_model._common import (
    PrivateLinearModel,
    check_declared_bound,
    feature_attributes,
    squared_bound,
    validated_features,
    validated_xy,
)
from dpfair.linear_model._linear import NoiseDominatesWarning
from dpfair.privacy.noise import NoiseSource

__all__ = ["DPLogisticRegression", "auto_C", "objective_noise_to_signal", "objective_perturbation_constants"]

#: Bound ``c`` on the second derivative of the logistic loss ``log(1 + exp(-t))``.
LOGISTIC_CURVATURE = 0.25

#: Largest noise scale ``2 / epsilon'`` accepted: beyond it the noise swamps any data and overflows.
_MAX_NOISE_SCALE = 1e100

#: Newton stops when the squared Newton decrement falls below this (the objective is O(1)).
_DECREMENT_TOL = 1e-24


#: Share of epsilon that ``C="auto"`` lets the curvature correction of Algorithm 2 take.
AUTO_CURVATURE_SHARE = 0.1

#: :class:`NoiseDominatesWarning` above this ``noise_to_signal_`` (see :func:`objective_noise_to_signal`).
NOISE_DOMINATES_RATIO = 0.1


def objective_noise_to_signal(epsilon_prime: float, n_columns: int, n: int) -> float:
    """The objective-perturbation noise's expected gradient against the largest gradient the data can give.

    In the rescaled variables of Algorithm 2 (every ``||u_i|| <= 1``), the noise adds ``b / n`` to the gradient of
    the objective, with ``E||b|| = 2 p / epsilon'`` (``||b||`` is Gamma(``p``, ``2 / epsilon'``) in ``R^p``), while
    the logistic loss's gradient at ``f = 0``, ``-(1/2n) sum_i s_i u_i``, has norm at most ``1/2``.  The ratio
    ``(2 p / (epsilon' n)) / (1/2) = 4 p / (epsilon' n)`` depends on ``epsilon``, ``C`` (through ``epsilon'``),
    the number of columns ``p`` and the public ``n`` only: never on the data nor on the noise drawn (the drawn
    ``||b||`` would reveal, with the coefficients, the data's gradient).

    Above :data:`NOISE_DOMINATES_RATIO` (0.1) the noise's gradient is a fifth of the largest possible signal; a real
    table's signal is a fraction of that largest one (Adult: 0.146 of 0.5).  On Adult (50 declared feature columns
    and the intercept) the held-out error passes the constant classifier's (0.237) between ratios 0.08 and 0.11:
    ratio 0.113 errs 0.245-0.247 (10,000 rows at epsilon 0.2, 1,000 rows at epsilon 2), 0.076 errs 0.227 (3,000
    rows at epsilon 1), and the defaults on 30,000 rows at epsilon 1 (ratio 0.008) err 0.160; over the 25 settings
    of ``benchmarks/bench_linear_model.py --noise-ratio`` (300 to 30,000 rows, epsilon 0.05 to 2, medians of 3
    seeds) the threshold fires on exactly the 16 that err more than the constant.

    Parameters
    ----------
    epsilon_prime : float
        The ``epsilon'`` the noise is calibrated to (``inf``: no noise).
    n_columns : int
        Columns of the design ``p`` (the features, and the intercept's).
    n : int
        Number of rows (public).

    Returns
    -------
    float
        ``4 p / (epsilon' n)`` (0 at ``epsilon' = inf``).
    """
    if math.isinf(epsilon_prime) or n_columns == 0:
        return 0.0
    return 4.0 * n_columns / (epsilon_prime * max(n, 1))


def auto_C(epsilon: float, radius: float) -> float:
    """``C="auto"``: the largest ``C`` whose curvature correction costs at most 10 % of ``epsilon``.

    Algorithm 2 (Chaudhuri et al. 2011) calibrates the noise to ``epsilon' = epsilon - 2 log(1 + C radius^2 / 4)``
    (see :func:`objective_perturbation_constants`): a larger ``C`` (weaker ridge) fits the data more closely but
    leaves less of ``epsilon`` for the noise, and past ``epsilon' <= 0`` half of ``epsilon`` goes to the
    correction.  The rule solves ``2 log(1 + C radius^2 / 4) = 0.1 epsilon``:
    ``C = 4 (exp(epsilon / 20) - 1) / radius^2``, so ``epsilon' = 0.9 epsilon``; it depends only on the
    declared bound and ``epsilon`` (never on the data).  ``C = 1`` (scikit-learn's default) at ``epsilon = inf``.
    On Adult (85 columns, ``||z||^2 <= 12``, 30,148 training rows) it gives ``C`` = 0.008 / 0.017 / 0.035 and a
    held-out error of 0.195 / 0.183 / 0.174 at ``epsilon`` = 0.5 / 1 / 2 (medians of 3 seeds), within 0.002 of
    the best of the grid ``C`` in {0.002, ..., 1}; ``C = 1`` gives 0.231 / 0.200 / 0.181
    (``benchmarks/bench_private_pipeline.py --c-grid``).

    Parameters
    ----------
    epsilon : float
        The estimator's epsilon (> 0, possibly ``inf``).
    radius : float
        Declared bound on ``||z||`` (the row with the intercept column), > 0.

    Returns
    -------
    float
        The inverse regularisation strength ``C``.
    """
    if math.isinf(epsilon):
        return 1.0
    exponent = AUTO_CURVATURE_SHARE * epsilon / 2.0
    squared = radius * radius
    C = 4.0 * math.expm1(exponent) / squared if exponent < 700.0 and squared > 0.0 else math.inf  # exp(700): near the top
    if not math.isfinite(C):
        raise ValueError(
            f"epsilon={epsilon!r} with data_norm bound {radius!r} is out of range for C='auto' (4 (exp(epsilon / 20) - "
            "1) / radius^2 overflows float64): pass C explicitly, or epsilon=inf for the exact, non-private fit."
        )
    return C


def objective_perturbation_constants(epsilon: float, C: float, radius: float, n: int) -> tuple[float, float, float]:
    """``(Lambda, Delta, epsilon')`` of Algorithm 2 (Chaudhuri et al. 2011) for the logistic loss.

    The estimator's objective ``0.5 ||w||^2 + C sum_i log(1 + exp(-s_i w . z_i))`` with
    ``||z_i|| <= radius`` is, in the rescaled variables ``u_i = z_i / radius`` and ``f = radius w``,
    ``n C`` times the paper's ``J(f) = (1/n) sum_i l(s_i f . u_i) + (Lambda / 2) ||f||^2`` with
    ``Lambda = 1 / (n C radius^2)``.  Then (Algorithm 2, lines 1-2, with ``c = 1/4``):
    ``epsilon' = epsilon - log(1 + 2c / (n Lambda) + c^2 / (n Lambda)^2)``; if ``epsilon' > 0``,
    ``Delta = 0``; otherwise ``Delta = c / (n (exp(epsilon / 4) - 1)) - Lambda`` and ``epsilon' = epsilon / 2``.

    Parameters
    ----------
    epsilon : float
        Target epsilon (finite, > 0).
    C : float
        Inverse regularisation strength (> 0).
    radius : float
        Declared bound on ``||z_i||`` (> 0).
    n : int
        Number of rows (public).

    Returns
    -------
    Lambda : float
        Regulariser of ``J`` in the rescaled variables.
    Delta : float
        Extra regulariser (``>= 0``).
    epsilon_prime : float
        The epsilon the noise is calibrated to: ``b`` has density proportional to ``exp(-epsilon' ||b|| / 2)``.
    """
    lam = 1.0 / (n * C * radius**2)
    c_over = LOGISTIC_CURVATURE / (n * lam)  # = C radius^2 / 4, independent of n
    epsilon_prime = epsilon - 2.0 * math.log1p(c_over)  # log(1 + 2c/(n Lambda) + (c/(n Lambda))^2) = 2 log(1 + c/(n Lambda))
    if epsilon_prime > 0:
        return lam, 0.0, epsilon_prime
    extra = LOGISTIC_CURVATURE / (n * math.expm1(epsilon / 4.0)) - lam
    return lam, max(extra, 0.0), epsilon / 2.0


def draw_objective_noise(noise: NoiseSource, size: int, dim: int, epsilon_prime: float) -> np.ndarray:
    """``size`` draws of ``b`` with density proportional to ``exp(-epsilon' ||b|| / 2)`` in ``R^dim``.

    ``||b||`` is Gamma(``dim``, ``2 / epsilon'``), a sum of ``dim`` exponentials (each ``|Laplace|``), and
    the direction is uniform on the sphere (a normalised Gaussian vector); both through ``noise``.

    Parameters
    ----------
    noise : NoiseSource
        The noise source.
    size : int
        Number of draws.
    dim : int
        Dimension.
    epsilon_prime : float
        The ``epsilon'`` of Algorithm 2 (> 0).

    Returns
    -------
    ndarray of shape (size, dim)
    """
    norms = np.abs(noise.laplace(np.zeros((size, dim)), 2.0 / epsilon_prime)).sum(axis=1)
    directions = noise.gaussian(np.zeros((size, dim)), 1.0)
    lengths = np.linalg.norm(directions, axis=1)
    lengths[lengths == 0] = 1.0  # probability 0; keeps the division finite
    return directions / lengths[:, None] * norms[:, None]


def _objective(F: np.ndarray, U: np.ndarray, s: np.ndarray, reg: float, B: np.ndarray) -> np.ndarray:
    margins = (F @ U.T) * s
    return -log_expit(margins).mean(axis=1) + 0.5 * reg * np.einsum("kd,kd->k", F, F) + np.einsum("kd,kd->k", B, F)


def minimise_perturbed_objective(
    U: np.ndarray, s: np.ndarray, reg: float, B: np.ndarray, max_iter: int
) -> tuple[np.ndarray, int, bool]:
    """Minimise ``(1/n) sum_i log(1 + exp(-s_i f . u_i)) + (reg / 2) ||f||^2 + B_k . f`` for every row ``B_k``.

    Damped Newton (backtracking line search), batched over the rows of ``B``; the objective is
    ``reg``-strongly convex, so the minimiser is unique.  Stops when every squared Newton decrement is
    below ``1e-24`` or every Newton step is below ``1e-13`` relative to ``f`` (float64 rounding).

    Parameters
    ----------
    U : ndarray of shape (n, d)
        Rescaled design.
    s : ndarray of shape (n,)
        Labels in {-1, +1}.
    reg : float
        ``Lambda + Delta`` (> 0).
    B : ndarray of shape (k, d)
        The linear terms (``b / n`` of Algorithm 2).
    max_iter : int
        Newton iterations at most.

    Returns
    -------
    F : ndarray of shape (k, d)
        The minimisers.
    n_iter : int
        Newton iterations run.
    converged : bool
        Whether every decrement reached the tolerance.
    """
    k, d = B.shape
    n = U.shape[0]
    U = np.ascontiguousarray(U, dtype=np.float64)  # BLAS needs contiguous rows (a ColumnTransformer's output may not be)
    F = np.zeros((k, d))
    value = _objective(F, U, s, reg, B)
    eye = np.eye(d)
    for iteration in range(1, max_iter + 1):
        margins = (F @ U.T) * s  # (k, n)
        weights = expit(-margins)  # sigma(-m): -l'(m)
        grad = -((weights * s) @ U) / n + reg * F + B
        curvature = weights * (1.0 - weights)  # l''(m)
        if k == 1:  # one fit: a plain matrix product (BLAS)
            hessian = ((U.T * curvature[0]) @ U)[None] / n + reg * eye
        else:  # a batch of small problems (the privacy audit)
            hessian = np.einsum("kn,ni,nj->kij", curvature, U, U) / n + reg * eye
        step = np.linalg.solve(hessian, grad[:, :, None])[:, :, 0]
        decrement = np.einsum("kd,kd->k", grad, step)
        small = np.abs(step).max(axis=1) <= 1e-13 * (1.0 + np.abs(F).max(axis=1))
        active = (decrement > _DECREMENT_TOL) & ~small
        if not active.any():
            return F, iteration - 1, True
        t = np.ones(k)
        search = active & (decrement > 1e-10)  # near the optimum the full Newton step is taken (rounding)
        for _ in range(60):  # Armijo backtracking, per problem
            candidate = F - t[:, None] * step
            new_value = _objective(candidate, U, s, reg, B)
            ok = (new_value <= value - 0.25 * t * decrement) | ~search
            if ok.all():
                break
            t = np.where(ok, t, t / 2.0)
        F = np.where(active[:, None], F - t[:, None] * step, F)
        value = _objective(F, U, s, reg, B)
    return F, max_iter, False


def _encode_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    check_classification_targets(y)
    classes, encoded = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(
            "This solver needs samples of at least 2 classes in the data: y holds one class only; "
            "DPLogisticRegression is a binary classifier."
        )
    if classes.size > 2:
        raise ValueError(
            f"Only binary classification is supported. The type of the target is multiclass: y has {classes.size} "
            "classes; encode it as two labels (for several classes, fit one model per class with a share of the "
            "budget each)."
        )
    return classes, np.where(encoded == 1, 1.0, -1.0)


def _check_C(C: Any) -> float:
    if isinstance(C, str):
        raise ValueError(f"C must be a positive finite number or 'auto', got {C!r}.")
    return check_positive_finite(C, "C")


@dataclass(frozen=True, eq=False)
class _LogisticOptions(ValidatedOptions):
    """The validated parameters of :class:`DPLogisticRegression` that are not privacy parameters."""

    C: float | str
    intercept: bool
    scaling: float
    max_iter: int


@dataclass(frozen=True, eq=False)
class _ObjectivePlan:
    """Algorithm 2, lines 1-2: the objective's constants, fixed before the charge (no data but ``n``)."""

    radius: float
    lam: float
    extra: float
    epsilon_prime: float
    C: float


@dataclass(frozen=True, eq=False, kw_only=True)
class _LogisticData(ValidatedData):
    """Step 1's data: the validated rows, the labels as signs, and the objective's plan."""

    X: np.ndarray
    s: np.ndarray
    classes: np.ndarray
    names: Any
    plan: _ObjectivePlan


@dataclass(frozen=True, eq=False)
class _Minimised:
    """Step 5's output: the minimiser of the perturbed objective (rescaled variables) and Newton's report."""

    F: np.ndarray
    n_iter: int
    converged: bool


class DPLogisticRegression(PrivateLinearModel, CloneLineageMixin, ClassifierMixin, BaseEstimator):
    """Differentially private binary logistic regression by objective perturbation.

    Minimises ``0.5 ||w||^2 + C sum_i log(1 + exp(-s_i w . z_i)) + (noise term)``, where ``z_i`` is the
    row ``x_i`` (with ``fit_intercept``, followed by the constant ``intercept_scaling``, whose weight is
    the intercept and is penalised, as in scikit-learn's ``liblinear`` solver) and ``s_i = +1`` for the
    second class of ``classes_``, ``-1`` for the first.  The noise term is Algorithm 2 of Chaudhuri,
    Monteleoni & Sarwate (2011): a random linear term ``b . f / n`` with ``b`` drawn with density
    proportional to ``exp(-epsilon' ||b|| / 2)``, plus an extra ridge ``Delta`` when the
    regularisation is too weak for the curvature correction (see
    :func:`objective_perturbation_constants`).  At ``epsilon = inf`` this is the exact minimiser of
    the same objective: :class:`sklearn.linear_model.LogisticRegression` with ``fit_intercept=False``
    on the columns ``[X, intercept_scaling]``.

    **What it protects.** ``fit`` is ``(epsilon, 0)``-DP for every training row ``(x, y)`` under
    "replace one row" (``n`` is public), given the declared bound ``||x||_2 <= data_norm`` (a row
    outside it raises ``ValueError``); ``predict`` is post-processing.  The two labels of ``y`` are
    read off the data and appear in ``classes_`` (treated as public, as in scikit-learn: a ``y`` with
    one label is refused).  The proof assumes the exact minimiser; the damped Newton solver stops at a
    squared Newton decrement below ``1e-24``, far below the noise.

    **When the noise dominates.** ``noise_to_signal_ = 4 p / (epsilon' n)`` compares the objective noise's expected
    gradient with the largest gradient the data can give (:func:`objective_noise_to_signal`): from epsilon, ``C``,
    the number of columns ``p`` and of rows ``n`` only, never from the data or the noise drawn.  Above 0.1 (where,
    on Adult, the model errs more than the constant classifier) ``fit`` raises a
    :class:`~dpfair.linear_model.NoiseDominatesWarning` naming the epsilon that would bring it to 0.1.

    **Real tables.** Strings and missing values are refused with the transformer to use: encode categories over
    their published levels (:class:`~dpfair.preprocessing.DeclaredOneHotEncoder`), fill missing values with
    declared ones (:class:`~dpfair.preprocessing.DeclaredImputer`) or private medians
    (:class:`~dpfair.preprocessing.DPMedianImputer`), scale by published ranges
    (:class:`~dpfair.preprocessing.DeclaredRangeScaler`), and take ``data_norm`` from
    :func:`~dpfair.preprocessing.row_norm_bound`.

    Parameters
    ----------
    epsilon : float, default 1.0
        Privacy parameter (> 0; ``inf`` is the exact estimator, with a
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    data_norm : float or None, default None
        Declared bound on the L2 norm of every row of ``X``.  Required with finite ``epsilon``.
    C : float or "auto", default "auto"
        Inverse regularisation strength, as in scikit-learn (> 0).  A larger ``C`` fits the data more
        closely but needs more noise: when ``C (data_norm^2 + intercept_scaling^2) / 4`` exceeds
        ``exp(epsilon / 2) - 1``, half the epsilon goes to the curvature correction.  ``"auto"`` (the
        default; it was 1.0 before the defaults were tuned for epsilon 1): the largest ``C`` whose correction
        takes at most 10 % of ``epsilon`` (:func:`auto_C`), ``C = 4 (exp(epsilon / 20) - 1) / r^2`` with
        ``r^2 = data_norm^2 + intercept_scaling^2`` (``data_norm^2`` without the intercept): declared
        constants only, never the data; ``C = 1`` (scikit-learn's default) at ``epsilon = inf``.  On Adult at
        epsilon 0.5-2 it is within 0.002 of the best ``C`` of a grid, where ``C = 1`` loses up to 0.036 of
        accuracy.  ``C_`` holds the value used; pass ``C=1.0`` for the earlier default.
    fit_intercept : bool, default True
        Append the constant column ``intercept_scaling``.
    intercept_scaling : float, default 1.0
        Value of the constant column (> 0); it counts in the bound: ``||z||^2 <= data_norm^2 +
        intercept_scaling^2``.
    max_iter : int, default 100
        Newton iterations at most (a :class:`~sklearn.exceptions.ConvergenceWarning` if not converged).
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, 0)`` once per ``fit``, after every argument is validated and just before
        the noise draw.
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure noise (OpenDP's Laplace and Gaussian samplers).  A seed: reproducible, *not
        hardened* noise (experiments and tests only).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; the second is the positive class.
    coef_ : ndarray of shape (1, n_features)
        Coefficients.
    intercept_ : ndarray of shape (1,)
        Intercept (0 without ``fit_intercept``).
    C_ : float
        The ``C`` of the fit (``C`` itself, or the value of ``"auto"``: :func:`auto_C`).
    epsilon_prime_ : float
        The epsilon the noise was calibrated to (Algorithm 2; ``inf`` at ``epsilon = inf``).
    extra_regularization_ : float
        ``Delta`` of Algorithm 2 (0 when the regularisation is strong enough).
    n_iter_ : ndarray of shape (1,)
        Newton iterations.
    noise_to_signal_ : float
        ``4 p / (epsilon' n)``: the objective noise's expected gradient against the largest gradient the data can
        give (:func:`objective_noise_to_signal`; 0 at ``epsilon = inf``).  Above 0.1 a
        :class:`~dpfair.linear_model.NoiseDominatesWarning` says so.
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of str
        Feature names, when ``X`` has them.
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring"}``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfair.linear_model import DPLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.7, 0.7, size=(20000, 2))
    >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=20000) > 0, "yes", "no")
    >>> model = DPLogisticRegression(epsilon=1.0, data_norm=1.0, C=0.2, random_state=0).fit(X, y)
    >>> model.classes_.tolist(), round(model.score(X, y), 2)   # the exact model (epsilon=inf) scores 0.83
    (['no', 'yes'], 0.83)
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {"epsilon": "epsilon", "budget": "budget", "random_state": "random_state"}
    _privacy_protects: ClassVar[str] = "every training row (x, y): features and label"
    _exact_protects: ClassVar[str] = "nothing: epsilon=inf fits the exact regularised logistic regression"

    @property
    def _privacy_label(self) -> str:  # the ledger's label of the one charge
        return f"{type(self).__name__}.fit (objective perturbation)"

    def __init__(
        self, *, epsilon: float = 1.0, data_norm: float | None = None, C: float | str = "auto", fit_intercept: bool = True,
        intercept_scaling: float = 1.0, max_iter: int = 100, budget: Any = None, random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.data_norm = data_norm
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.budget = budget
        self.random_state = random_state

    def __sklearn_tags__(self):  # scikit-learn's tags: binary only; seeded noise differs between fits
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.non_deterministic = True
        return tags

    def fit(self, X: Any, y: Any) -> DPLogisticRegression:
        """Minimise the perturbed objective (Algorithm 2 of Chaudhuri et al. 2011).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features, every row with L2 norm ``<= data_norm``.
        y : array-like of shape (n_samples,)
            Two class labels (any two, as in scikit-learn).

        Returns
        -------
        DPLogisticRegression
            The fitted estimator (``self``).

        Raises
        ------
        ValueError, TypeError
            On an invalid argument, a missing ``data_norm`` with finite ``epsilon``, a row outside it, or
            a ``y`` without exactly two classes (the message names the argument, never a private value).
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf``.
        NoiseDominatesWarning
            When ``noise_to_signal_`` exceeds 0.1 (decided from epsilon, ``C``, the number of columns and rows only,
            never from the data or the noise drawn).
        """
        return self._set_fitted(self._release(X, y))

    # ------------------------------------------------------------------ the steps of dpfair.base's template
    def _validate_params(self) -> _LogisticOptions:
        return _LogisticOptions(
            C=self.C if isinstance(self.C, str) and self.C == "auto" else _check_C(self.C),
            intercept=check_bool(self.fit_intercept, "fit_intercept"),
            scaling=check_positive_finite(self.intercept_scaling, "intercept_scaling"),
            max_iter=check_int(self.max_iter, "max_iter", minimum=1),
        )

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any) -> _LogisticData:
        data_norm = check_declared_bound(self.data_norm, "data_norm", params.epsilon, "a bound on every row's L2 norm ||x||")
        X_arr, y_arr, names = validated_xy(X, y, owner=type(self).__name__, y_numeric=False)
        classes, s = _encode_labels(y_arr)
        check_row_norms(X_arr, data_norm)
        return _LogisticData(n_rows=X_arr.shape[0], X=X_arr, s=s, classes=classes, names=names,
                             plan=self._objective_plan(params, data_norm, X_arr.shape[0]))

    @staticmethod
    def _objective_plan(params: PrivacyParameters, data_norm: float | None, n: int) -> _ObjectivePlan:
        """Algorithm 2, lines 1-2: the constants of the perturbed objective, from epsilon, the bounds and ``n`` only.

        Refused (``ValueError``) when the noise would overflow, before anything is computed from the rows.
        """
        epsilon, C, intercept, scaling = params.epsilon, params.options.C, params.options.intercept, params.options.scaling
        if math.isinf(epsilon):
            radius = 1.0  # no rescaling needed: the objective is the same in w
            C = 1.0 if C == "auto" else C
            lam, extra, epsilon_prime = 1.0 / (n * C), 0.0, math.inf
        else:
            bounds = {"data_norm": data_norm}
            if intercept:
                bounds["intercept_scaling"] = scaling
            radius = math.sqrt(squared_bound(**bounds))
            C = auto_C(epsilon, radius) if C == "auto" else C  # declared bound and epsilon only
            lam, extra, epsilon_prime = objective_perturbation_constants(epsilon, C, radius, n)
            if not 2.0 / epsilon_prime <= _MAX_NOISE_SCALE or not math.isfinite(lam + extra) or lam + extra < 1e-250:
                raise ValueError(
                    f"epsilon={epsilon!r} with C={C!r} is out of range: the objective's noise or regularisation "
                    "overflows float64; use a larger epsilon, or a C closer to 1 (rescale the features instead)."
                )
        return _ObjectivePlan(radius=radius, lam=lam, extra=extra, epsilon_prime=epsilon_prime, C=C)

    def _compute_statistics(self, params: PrivacyParameters, data: _LogisticData) -> np.ndarray:
        """The design ``Z`` (the features, and the intercept's column of ``intercept_scaling``)."""
        n = data.X.shape[0]
        return np.column_stack([data.X, np.full(n, params.options.scaling)]) if params.options.intercept else data.X

    def _run(self, params: PrivacyParameters, data: _LogisticData, statistics: np.ndarray,
             noise: NoiseSource) -> _Minimised:
        """Algorithm 2, lines 3-4: draw ``b``, then minimise the objective it perturbs (no noise at ``epsilon = inf``)."""
        Z, plan = statistics, data.plan
        n, p = Z.shape
        if math.isinf(params.epsilon):
            b = np.zeros((1, p))
        else:
            b = draw_objective_noise(noise, 1, p, plan.epsilon_prime)  # Algorithm 2, line 3
        # line 4: f = argmin J(f) + b . f / n + (Delta / 2) ||f||^2, in the rescaled variables u = z / radius
        F, n_iter, converged = minimise_perturbed_objective(
            Z / plan.radius, data.s, plan.lam + plan.extra, b / n, params.options.max_iter
        )
        return _Minimised(F=F, n_iter=n_iter, converged=converged)

    def _solve(self, params: PrivacyParameters, noisy: _Minimised, data: _LogisticData) -> dict[str, Any]:
        """Post-processing: the weights in the original variables, and the fitted attributes."""
        max_iter, intercept, d, plan = params.options.max_iter, params.options.intercept, data.X.shape[1], data.plan
        if not noisy.converged:
            warnings.warn(
                f"{type(self).__name__}: Newton did not converge in max_iter={max_iter} iterations; increase max_iter.",
                ConvergenceWarning,
                stacklevel=find_stack_level(),
            )
        noise_to_signal = objective_noise_to_signal(plan.epsilon_prime, noisy.F.shape[1], data.X.shape[0])
        if noise_to_signal > NOISE_DOMINATES_RATIO:
            # the epsilon' that brings the ratio to the threshold; C="auto" calibrates the noise to 0.9 epsilon
            needed = 4.0 * noisy.F.shape[1] / (NOISE_DOMINATES_RATIO * max(data.X.shape[0], 1)) / 0.9
            warnings.warn(
                f"{type(self).__name__}: the objective's noise dominates: its expected gradient is "
                f"{noise_to_signal:.3g} times the largest gradient the data can give (above {NOISE_DOMINATES_RATIO}, "
                "where a private logistic regression on Adult errs more than the constant classifier). Decided from "
                f"epsilon, C, the number of columns ({noisy.F.shape[1]}) and of rows only. Use a larger epsilon (about "
                f"{needed:.2g} with C='auto' for these rows and columns), more rows, or fewer columns.",
                NoiseDominatesWarning,
                stacklevel=find_stack_level(),
            )
        weights = noisy.F[0] / plan.radius
        if not np.isfinite(weights).all():  # float64 overflow (never a NaN out)
            raise ValueError(
                "the objective overflows float64 for these data, C and epsilon; rescale X (and data_norm) towards 1, "
                "or use a C closer to 1."
            )
        return {
            "classes_": data.classes,
            "coef_": weights[None, :d].copy(),
            "intercept_": np.array([weights[d] * params.options.scaling if intercept else 0.0]),
            "epsilon_prime_": float(plan.epsilon_prime),
            "C_": float(plan.C),
            "extra_regularization_": float(plan.extra),
            "n_iter_": np.array([noisy.n_iter]),
            "noise_to_signal_": float(noise_to_signal),
            **feature_attributes(d, data.names),
        }

    def decision_function(self, X: Any) -> np.ndarray:
        """Signed score ``X @ coef_[0] + intercept_[0]`` (positive: the second class).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples,)
            Scores.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        check_is_fitted(self, "coef_")
        X_arr = validated_features(self, X)
        return X_arr @ self.coef_[0] + self.intercept_[0]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Return the probabilities of the two classes (columns in the order of ``classes_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Probabilities.
        """
        positive = expit(self.decision_function(X))
        return np.column_stack([1.0 - positive, positive])

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Return the log-probabilities of the two classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Log-probabilities.
        """
        score = self.decision_function(X)
        return np.column_stack([log_expit(-score), log_expit(score)])

    def predict(self, X: Any) -> np.ndarray:
        """The more probable class of every row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]
