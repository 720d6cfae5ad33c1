"""Differentially private fair classification by reductions (DP-oracle-learner).

:class:`DPExponentiatedGradient` implements Algorithm 3 (with Subroutine 2) of Jagielski, Kearns,
Mao, Oprea, Roth, Sharifi-Malvajerdi & Ullman, "Differentially Private Fair Learning" (ICML 2019),
the private version of the exponentiated-gradient reduction of Agarwal et al. (2018), with the
private cost-sensitive oracle of their Section 5 (one least-squares regression per cost vector,
``(X^T X)^-1 X^T C_b``, made private by Laplace noise).

Privacy protects the sensitive attribute ``A`` (the group label) of every training row; ``X`` and
``y`` are treated as public, as in the paper (Section 2.3, "differentially private in the
sensitive attributes").  Neighbouring datasets differ in one row's group label.

Privacy accounting (all through :mod:`dpfair.privacy`):

* the counts ``n_ay`` of rows per (group, label) are released once with the Laplace mechanism
  (L1 sensitivity 2: one row leaves one cell and enters another).  Every later denominator and
  sensitivity uses these *noisy* counts, so no noise scale is read off private data (the paper
  uses the exact ``min_ay q_ay m - 1``, a private quantity);
* each of the ``T`` rounds runs two ``epsilon'``-DP Laplace releases (the Learner's noisy
  ``X^T C_1`` and the Auditor's noisy violation vector ``r~``), with
  ``epsilon' = epsilon / (4 sqrt(T ln(1/delta)))`` (Algorithm 3, line 5), composed with the advanced
  composition theorem (:func:`dpfair.privacy.advanced_composition`, Dwork-Rothblum-Vadhan);
* the A-aware oracle (``use_sensitive_at_test_time=True``) also releases ``Z^T Z`` and ``Z^T C_0``
  (``Z = [X, one-hot(A)]``) once;
* the counts (and the A-aware statistics) get what the ``2T`` rounds leave of ``epsilon``; when
  that is less than a tenth of ``epsilon`` (very large ``epsilon``), ``epsilon'`` is lowered until a
  tenth is left.  The whole fit is ``(epsilon, delta)``-DP (basic composition of the parts).

Randomness policy (as in :mod:`dpfair.regression`): ``random_state=None`` draws secure noise;
a seed gives reproducible, *not hardened* noise and a seeded stream for the randomized
:meth:`DPExponentiatedGradient.predict` (fresh for every ``fit``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from dpfair._estimator import (
    as_sensitive_features,
    charge_budget,
    check_budget,
    group_index,
    privacy_spent,
    resolve_groups,
    warn_non_private,
)
from dpfair._validation import _as_float, check_bool, check_epsilon, check_int, check_open_unit, check_positive_finite
from dpfair.privacy.accounting import advanced_composition
from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import NoiseSource, get_noise_source

__all__ = ["DPExponentiatedGradient"]

#: Number of rounds used at ``epsilon = inf`` when ``n_iter`` is not given (Algorithm 3's ``T`` is
#: infinite there), and the cap on Algorithm 3's ``T`` at finite epsilon (fewer rounds only give
#: each round more of the budget).
_DEFAULT_ITER_INF = 100
_MAX_ITER = 1000

#: Largest Laplace scale accepted: beyond it a release carries no information and sums overflow.
_MAX_NOISE_SCALE = 1e100

_PROTECTS = (
    "the sensitive attribute A (group label) of every training row; X and y are treated as public, "
    "as in Jagielski et al. (2019)"
)
_NEIGHBOURING = "change one training row's sensitive attribute (group label); X, y, the number of rows and the groups are public"


# ---------------------------------------------------------------------------- validation helpers
def _features(estimator: Any, X: Any, *, reset: bool, y: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``X`` (and ``y``) through scikit-learn's validation; messages name the argument."""
    try:
        if y is None:
            return validate_data(estimator, X, reset=reset, dtype=np.float64, ensure_all_finite=True), None
        X_out, y_out = validate_data(estimator, X, y, reset=reset, dtype=np.float64, ensure_all_finite=True, y_numeric=False)
        return X_out, y_out
    except (TypeError, ValueError) as exc:
        message = str(exc)
        if "X" not in message and "y" not in message:
            message = f"X: {message}"
        raise type(exc)(f"{message} Pass X as a finite 2-d array of real numbers (and y as one binary label per row).") from None


def _labels(sensitive_features: Any, n_rows: int) -> np.ndarray:
    values = as_sensitive_features(sensitive_features, n_rows)
    try:
        for value in values:
            hash(value)
    except TypeError:
        raise TypeError("sensitive_features must hold hashable labels (str, int, ...), found an unhashable one.") from None
    return values


# ---------------------------------------------------------------------------- Algorithm 3 parameters
def default_n_iter(epsilon: float, delta: float, bound_B: float, n_groups: int, n_rows: int, vc_dim: int, beta: float) -> int:
    """Algorithm 3, line 1: ``T = B sqrt(ln(4|A|-3)) m eps / (2 (2|A|B+1) sqrt(ln(1/delta)) (d ln m + ln(2/beta)))``.

    Rounded down, at least 1, at most ``_MAX_ITER``; ``_DEFAULT_ITER_INF`` at ``epsilon = inf``.
    ``d`` is the VC dimension of the hypothesis class (linear thresholds: number of weights).
    With one group there is no constraint and one round solves the problem.
    """
    if n_groups == 1:
        return 1
    if math.isinf(epsilon):
        return _DEFAULT_ITER_INF
    numerator = bound_B * math.sqrt(math.log(4 * n_groups - 3)) * n_rows * epsilon
    denominator = 2.0 * (2 * n_groups * bound_B + 1) * math.sqrt(math.log(1.0 / delta))
    denominator *= vc_dim * math.log(max(n_rows, 2)) + math.log(2.0 / beta)
    t = numerator / denominator
    return int(min(max(math.floor(t), 1), _MAX_ITER)) if math.isfinite(t) else _MAX_ITER


def default_eta(n_groups: int, n_iter: int) -> float:
    """Algorithm 3, line 1: ``eta = (1/2) sqrt(ln(4|A|-3) / T)`` (any positive value with one group)."""
    return 0.5 * math.sqrt(math.log(4 * n_groups - 3) / n_iter) if n_groups > 1 else 1.0


def split_epsilon(epsilon: float, delta: float, n_iter: int) -> tuple[float, float, float]:
    """Return ``(epsilon_step, epsilon_rest, delta_used)`` for the ``2 T`` adaptive releases and the rest.

    ``epsilon_step = epsilon / (4 sqrt(T ln(1/delta)))`` (Algorithm 3, line 5).  The ``2T`` pure
    ``epsilon_step``-DP releases compose (:func:`~dpfair.privacy.advanced_composition` with slack
    ``delta``, or basic composition when that is smaller) to ``epsilon_loop``; the rest,
    ``epsilon - epsilon_loop``, pays for the one-off releases.  When less than ``epsilon / 10`` would be
    left, ``epsilon_step`` is lowered (bisection) until ``epsilon / 10`` is.
    """
    k = 2 * n_iter

    def loop_cost(step: float) -> tuple[float, float]:
        basic = k * step
        adv, adv_delta = advanced_composition(step, 0.0, k, delta)
        return (basic, 0.0) if basic <= adv else (adv, adv_delta)

    step = epsilon / (4.0 * math.sqrt(n_iter * math.log(1.0 / delta)))
    target = 0.9 * epsilon
    if loop_cost(step)[0] > target:
        lo, hi = 0.0, step
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if loop_cost(mid)[0] <= target:
                lo = mid
            else:
                hi = mid
        step = lo
    spent, delta_used = loop_cost(step)
    return step, epsilon - spent, delta_used


# ---------------------------------------------------------------------------- the private players
def violations(positive_counts: np.ndarray, denominators: np.ndarray, gamma: float) -> np.ndarray:
    """Exact violation vector ``r^(h)`` of Section 4 (shape ``(|A|-1, 4)``) from per-cell counts.

    ``positive_counts[a, y]`` is the number of rows of group ``a`` and label ``y`` with ``h = 1``;
    ``denominators[a, y]`` the (public, noisy) number of rows of that cell.  Columns:
    ``FP_a - FP_0 - gamma, FP_0 - FP_a - gamma, TP_a - TP_0 - gamma, TP_0 - TP_a - gamma``.
    """
    rates = positive_counts / denominators
    diff = rates[1:] - rates[0]
    return np.stack([diff[:, 0] - gamma, -diff[:, 0] - gamma, diff[:, 1] - gamma, -diff[:, 1] - gamma], axis=1)


def auditor_sensitivity(denominators: np.ndarray) -> float:
    """L1 sensitivity of ``r^`` to one row's group label (Lemma C.1 with public denominators).

    Moving one row from group ``a`` to ``a'`` changes one positive count of each by at most 1, so
    ``FP_a`` and ``FP_a'`` (or ``TP``) change by at most ``1 / n_min`` each, ``n_min`` the smallest
    (public) denominator.  ``FP_a`` (``a != 0``) appears twice in ``r^`` and ``FP_0`` appears
    ``2(|A|-1)`` times, so the L1 change is at most ``(2 + 2(|A|-1)) / n_min = 2|A| / n_min``
    (Lemma C.1 has ``min_ay q_ay m - 1`` in place of ``n_min``; ours is public, so no ``-1``).
    """
    return 2.0 * denominators.shape[0] / float(denominators.min())


def noisy_violations(
    positive_counts: np.ndarray, denominators: np.ndarray, gamma: float, epsilon_step: float, noise: NoiseSource
) -> np.ndarray:
    """The Auditor's release ``r~ = r^ + W`` (Algorithm 3, lines 6-7), ``epsilon_step``-DP in the group labels.

    ``W ~ Lap(2|A| / (n_min epsilon_step))`` i.i.d.; with ``epsilon_step = eps / (4 sqrt(T ln(1/delta)))``
    this is Algorithm 3's scale ``8|A| sqrt(T ln(1/delta)) / (n_min eps)``.
    """
    exact = violations(positive_counts, denominators, gamma)
    if math.isinf(epsilon_step):
        return exact
    return laplace_mechanism(exact, sensitivity=auditor_sensitivity(denominators), epsilon=epsilon_step, random_state=noise)


def cell_costs(lam: np.ndarray, proportions: np.ndarray) -> np.ndarray:
    """Subroutine 2: the lambda part of ``C_1`` for every (group, label) cell, shape ``(|A|, 2)``.

    ``lam`` has shape ``(|A|-1, 4)`` (columns ``(y=0,+), (y=0,-), (y=1,+), (y=1,-)``); ``proportions``
    are the public ``q~_ay``.  Cell ``(a != 0, y)``: ``(lam_(a,y,+) - lam_(a,y,-)) / q~_ay``; cell
    ``(0, y)``: ``-sum_a (lam_(a,y,+) - lam_(a,y,-)) / q~_0y``.
    """
    net = np.stack([lam[:, 0] - lam[:, 1], lam[:, 2] - lam[:, 3]], axis=1)  # (|A|-1, 2)
    return np.vstack([-net.sum(axis=0, keepdims=True), net]) / proportions


def oracle_sensitivity(bound_B: float, proportions: np.ndarray, l1_row_bound: float, aware: bool) -> float:
    """L1 sensitivity of the Learner's ``Z^T C_1`` to one row's group label (Section 5 oracle).

    Derivation (Subroutine 2 with ``||lambda||_1 <= B``, Algorithm 3 line 4): a row's cost is
    ``C_1 = 1{y != 1} + tau_(A, y)`` with ``|tau| <= sum_k lam_k / q~_min <= B / q~_min``
    (:func:`cell_costs`; the cost of any other row does not change, because the proportions are
    public).  Changing the row's group changes ``tau`` by at most ``2B / q~_min``.  A-blind
    (``Z = [X, 1]``): ``Z^T C_1`` changes by ``z_i * delta tau``, L1 norm at most
    ``(||x||_1 + 1) 2B / q~_min``.  A-aware (``Z = [X, onehot(A)]``): the ``X`` part changes by
    ``||x||_1 2B / q~_min`` and the one-hot part moves ``C_1`` (``|C_1| <= 1 + B / q~_min``) from one
    coordinate to another: ``2 (1 + B / q~_min)``.  ``||x||_1 <= sqrt(d) x_norm_bound`` is declared.
    """
    tau = bound_B / float(proportions.min())
    if aware:
        return 2.0 * tau * l1_row_bound + 2.0 * (1.0 + tau)
    return 2.0 * tau * (l1_row_bound + 1.0)


def aware_static_sensitivity(l1_row_bound: float) -> float:
    """L1 sensitivity of the A-aware one-off release (upper triangle of ``Z^T Z``, and ``Z^T C_0``).

    ``Z = [X, onehot(A)]``; changing one row's group moves ``x_i`` from one column of the
    X-by-one-hot block to another (``2 ||x||_1``), one diagonal one-hot count down and one up (2),
    and ``C_0 = 1{y != 0}`` (in ``[0, 1]``) from one one-hot coordinate of ``Z^T C_0`` to another (2).
    """
    return 2.0 * l1_row_bound + 4.0


def noisy_cost_moment(
    Z: np.ndarray, costs: np.ndarray, sensitivity: float, epsilon_step: float, noise: NoiseSource
) -> np.ndarray:
    """The Learner's release ``Z^T C_1 + Lap(sensitivity / epsilon_step)`` (Section 5), ``epsilon_step``-DP."""
    exact = Z.T @ costs
    if math.isinf(epsilon_step):
        return exact
    return laplace_mechanism(exact, sensitivity=sensitivity, epsilon=epsilon_step, random_state=noise)


def _lambda(theta: np.ndarray, bound_B: float) -> np.ndarray:
    """Algorithm 3, line 3: ``lam_k = B exp(theta_k) / (1 + sum_k' exp(theta_k'))`` (stable)."""
    flat = theta.ravel()
    log_norm = logsumexp(np.concatenate([[0.0], flat]))
    return bound_B * np.exp(theta - log_norm)


def _psd_inverse(gram: np.ndarray) -> np.ndarray:
    """Inverse of a (noisy) Gram matrix after projecting it onto well-conditioned PSD matrices (post-processing)."""
    gram = 0.5 * (gram + gram.T)
    values, vectors = np.linalg.eigh(gram)
    floor = max(1e-8 * max(float(np.abs(values).max()), 1.0), 1e-12)
    values = np.maximum(values, floor)
    return (vectors / values) @ vectors.T


# ---------------------------------------------------------------------------- estimator
class DPExponentiatedGradient(ClassifierMixin, BaseEstimator):
    """Differentially private fair classifier under equalized odds (DP-oracle-learner).

    Algorithm 3 of Jagielski et al. (2019): the Auditor plays exponentiated gradient on noisy
    fairness violations, the Learner best-responds with a private cost-sensitive oracle (one
    noisy least-squares regression per cost vector, Section 5), and the output is the uniform
    mixture of the ``T`` best responses.  The fit is ``(epsilon, delta)``-differentially private
    with respect to the sensitive attribute ``A`` of every training row (neighbouring datasets:
    change one row's group label; ``X`` and ``y`` are public, as in the paper).

    Parameters
    ----------
    epsilon : float
        Total privacy parameter, ``> 0``; ``inf`` runs the exact non-private reduction and raises
        :class:`~dpfair.privacy.PrivacyLeakWarning`.
    delta : float
        Total ``delta`` in ``(0, 1)`` (the advanced composition slack of Algorithm 3).
    gamma : float
        Allowed equalized-odds violation: ``|FP_a - FP_0| <= gamma`` and ``|TP_a - TP_0| <= gamma``
        for every group ``a`` against the first declared group (``>= 0``).
    bound_B : float
        ``B``, the bound on ``||lambda||_1`` (``> 0``).  Larger ``B`` enforces the constraints more
        strongly and makes the Learner's costs, hence its noise, larger (Theorem 4.4).
    beta : float, default 0.05
        Confidence parameter of Algorithm 3's ``T`` (in ``(0, 1)``).
    x_norm_bound : float
        Declared bound on the Euclidean norm of every row of ``X`` (``> 0``).  The oracle's noise is
        calibrated to it (through ``||x||_1 <= sqrt(d) x_norm_bound``), never to the data; a training
        row above it raises.
    n_iter : int or None, default None
        Number of rounds ``T``; ``None`` uses Algorithm 3's formula (capped at 1000; 100 at
        ``epsilon = inf``, where the formula is infinite).
    eta : float or None, default None
        Exponentiated-gradient step; ``None`` uses ``(1/2) sqrt(ln(4|A|-3) / T)`` (Algorithm 3).
    groups : list or None, default None
        The declared group labels (public; the first is the reference group 0).  Required with a
        finite ``epsilon``; with ``epsilon = inf`` it may be omitted and is read off the data.
    use_sensitive_at_test_time : bool, default False
        ``False``: A-blind hypotheses ``h(x)`` (``predict`` needs no group).  ``True``: A-aware
        hypotheses ``h(x, a)`` on ``[X, onehot(A)]`` (Section 4.1, Theorems 4.5-4.6), whose oracle also
        adds noise to ``Z^T Z``; ``predict`` then needs ``sensitive_features``.
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, delta)`` once per ``fit``, after validation and before the first noise
        draw; a refused charge leaves the budget and any earlier fitted state unchanged.
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure noise and secure randomized predictions.  A seed: reproducible, *not
        hardened* noise and predictions (experiments and tests only).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels (``classes_[1]`` is the positive label, ``y = 1`` in the paper).
    groups_ : ndarray
        The declared groups.
    n_iter_ : int
        Number of rounds ``T`` run.
    eta_ : float
        Step size used.
    epsilon_step_ : float
        Per-release ``epsilon'`` of each round (``inf`` without privacy).
    coef_ : ndarray of shape (T, n_weights)
        Weights ``w_t`` of the best responses: ``h_t(z) = 1{z . w_t > 0}`` with ``z = [x, 1]``
        (A-blind) or ``z = [x, onehot(a)]`` (A-aware).
    lambda_ : ndarray of shape (n_groups - 1, 4)
        Average dual play ``lambda~`` (Algorithm 3's second output).
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring"}``.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    fairlearn.reductions.ExponentiatedGradient : The non-private reduction (Agarwal et al., 2018).

    Examples
    --------
    >>> from dpfair.datasets import make_classification
    >>> from dpfair.classification.reductions import DPExponentiatedGradient
    >>> X, y, g = make_classification(1000, random_state=0)
    >>> clf = DPExponentiatedGradient(epsilon=5.0, delta=1e-6, gamma=0.05, bound_B=1.0,
    ...                               x_norm_bound=10.0, groups=[0, 1], random_state=0)
    >>> clf = clf.fit(X, y, sensitive_features=g)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float,
        gamma: float,
        bound_B: float,
        beta: float = 0.05,
        x_norm_bound: float,
        n_iter: int | None = None,
        eta: float | None = None,
        groups: Any = None,
        use_sensitive_at_test_time: bool = False,
        budget: Any = None,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.gamma = gamma
        self.bound_B = bound_B
        self.beta = beta
        self.x_norm_bound = x_norm_bound
        self.n_iter = n_iter
        self.eta = eta
        self.groups = groups
        self.use_sensitive_at_test_time = use_sensitive_at_test_time
        self.budget = budget
        self.random_state = random_state

    def __sklearn_tags__(self):  # binary classifier
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any, *, sensitive_features: Any = None) -> DPExponentiatedGradient:
        """Run Algorithm 3: ``(epsilon, delta)``-DP in every training row's group label.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Public features, every row of Euclidean norm at most ``x_norm_bound``.
        y : array-like of shape (n_samples,)
            Public binary labels (exactly two distinct values).
        sensitive_features : array-like of shape (n_samples,) or None, default None
            The private group label of every row, each one of ``groups``.  May be omitted only when
            ``groups`` declares exactly one group (every row is then in it).  Routed by metadata
            routing (``set_fit_request(sensitive_features=True)``).

        Returns
        -------
        DPExponentiatedGradient
            The fitted estimator (``self``).

        Raises
        ------
        ValueError
            If an argument is invalid (the message names it), ``groups`` is missing with finite
            ``epsilon``, a row's group is not declared, ``y`` is not binary, or a row of ``X`` has a
            norm above ``x_norm_bound``.
        TypeError
            If an argument has the wrong type.
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf``.
        """
        epsilon = check_epsilon(self.epsilon)
        delta = check_open_unit(self.delta, "delta")
        gamma = _as_float(self.gamma, "gamma")
        if not (math.isfinite(gamma) and gamma >= 0):
            raise ValueError(f"gamma must be finite and >= 0, got {gamma!r}.")
        bound_B = check_positive_finite(self.bound_B, "bound_B")
        beta = check_open_unit(self.beta, "beta")
        x_norm_bound = check_positive_finite(self.x_norm_bound, "x_norm_bound")
        n_iter = None if self.n_iter is None else check_int(self.n_iter, "n_iter", minimum=1)
        if n_iter is not None and n_iter > 100_000:
            raise ValueError(f"n_iter must be <= 100000, got {n_iter}.")
        eta = None if self.eta is None else check_positive_finite(self.eta, "eta")
        aware = check_bool(self.use_sensitive_at_test_time, "use_sensitive_at_test_time")
        budget = check_budget(self.budget)
        noise = get_noise_source(self.random_state)
        if self.groups is None and not math.isinf(epsilon):
            resolve_groups(None, np.empty(0, dtype=object), epsilon)  # raises: groups is required
        declared = None
        if self.groups is not None:
            declared, _ = resolve_groups(self.groups, np.empty(0, dtype=object), epsilon)
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None; pass one binary label per row."
            )
        X_arr, y_arr = _features(self, X, reset=True, y=y)
        try:
            check_classification_targets(y_arr)  # "Unknown label type: continuous" for real-valued y
        except ValueError as exc:  # keep scikit-learn's wording (its checks match it) and name the argument
            raise ValueError(f"y: {exc} y must hold the binary labels 0 and 1.") from None
        classes, y01 = np.unique(y_arr, return_inverse=True)
        if classes.size == 1:
            raise ValueError("y holds 1 class only; y must hold two classes (binary classification).")
        if classes.size != 2:
            raise ValueError(
                "Only binary classification is supported. The type of the target is "
                f"{type_of_target(y_arr, input_name='y')}; y must hold exactly two classes."
            )
        m, d = X_arr.shape
        norms = np.linalg.norm(X_arr, axis=1)
        if not (norms <= x_norm_bound).all():
            raise ValueError(
                f"X has rows whose Euclidean norm exceeds x_norm_bound={x_norm_bound:g}; the noise is calibrated to "
                "this declared bound. Rescale X by a public constant or declare a larger x_norm_bound."
            )
        if sensitive_features is None:
            if declared is None or declared.size != 1:
                raise ValueError(
                    "sensitive_features is required: pass the group of every row, e.g. fit(X, y, sensitive_features=g) "
                    "(with metadata routing, set_fit_request(sensitive_features=True)). It may be omitted only when "
                    "groups= declares exactly one group, which then holds every row."
                )
            index = np.zeros(m, dtype=np.int64)
        elif declared is None:  # epsilon = inf only: read off the data
            declared, index = resolve_groups(None, _labels(sensitive_features, m), epsilon)
        else:
            index = group_index(declared, _labels(sensitive_features, m))
        n_groups = declared.size
        l1_row_bound = math.sqrt(d) * x_norm_bound
        vc_dim = d + n_groups if aware else d + 1
        T = n_iter if n_iter is not None else default_n_iter(epsilon, delta, bound_B, n_groups, m, vc_dim, beta)
        eta = eta if eta is not None else default_eta(n_groups, T)
        private = not math.isinf(epsilon) and n_groups > 1  # with one group no output depends on the labels
        if private:
            epsilon_step, epsilon_rest, _ = split_epsilon(epsilon, delta, T)
            epsilon_counts = epsilon_rest / 2.0 if aware else epsilon_rest
        else:
            epsilon_step = epsilon_counts = math.inf
        if private:
            # worst case over the (not yet released) counts: denominators are clipped to >= 1, so q~_min >= 1/m
            worst = max(
                2.0 / epsilon_counts,
                2.0 * n_groups / epsilon_step,
                oracle_sensitivity(bound_B, np.array([1.0 / m]), l1_row_bound, aware) / epsilon_step,
                aware_static_sensitivity(l1_row_bound) / max(epsilon_rest - epsilon_counts, 1e-300) if aware else 0.0,
            )
            if not worst <= _MAX_NOISE_SCALE:
                raise ValueError(
                    f"epsilon={epsilon!r} (with delta={delta!r}, bound_B={bound_B!r}, x_norm_bound={x_norm_bound!r} and "
                    f"{T} rounds) gives Laplace scales above {_MAX_NOISE_SCALE:g}: the releases would carry no "
                    "information and overflow; use a larger epsilon, fewer rounds (n_iter) or a smaller bound_B."
                )
        if math.isinf(epsilon):
            warn_non_private(epsilon, "the fitted classifier")

        cell = index * 2 + y01  # (group, label) cell of every row
        exact_counts = np.bincount(cell, minlength=2 * n_groups).reshape(n_groups, 2).astype(float)
        Z = np.hstack([X_arr, np.eye(n_groups)[index]]) if aware else np.hstack([X_arr, np.ones((m, 1))])
        c0 = y01.astype(float)  # Subroutine 2: C_0 = 1{y != 0}

        charge_budget(budget, epsilon, 0.0 if math.isinf(epsilon) else delta, label=f"{type(self).__name__}.fit (Algorithm 3)")
        # ---- one-off releases (paid from epsilon_rest): the cell counts, Laplace with L1 sensitivity 2
        if private:
            counts = laplace_mechanism(exact_counts, sensitivity=2.0, epsilon=epsilon_counts, random_state=noise)
        else:
            counts = exact_counts
        denominators = np.maximum(counts, 1.0)  # public after release (post-processing)
        proportions = denominators / m  # q~_ay
        gram = Z.T @ Z
        moment0 = Z.T @ c0
        if aware and private:
            upper = np.triu_indices(gram.shape[0])
            released = laplace_mechanism(
                np.concatenate([gram[upper], moment0]),
                sensitivity=aware_static_sensitivity(l1_row_bound),
                epsilon=epsilon_rest - epsilon_counts,
                random_state=noise,
            )
            gram = np.zeros_like(gram)
            gram[upper] = released[: upper[0].size]
            gram = gram + np.triu(gram, 1).T
            moment0 = released[upper[0].size :]
        gram_inv = _psd_inverse(gram)
        base_cost = 1.0 - c0  # 1{y != 1}
        sens_oracle = oracle_sensitivity(bound_B, proportions, l1_row_bound, aware) if private else math.inf
        y_index = y01.astype(np.int64)

        # ---- Algorithm 3 main loop (vectorized over rows and groups)
        theta = np.zeros((n_groups - 1, 4))
        weights = np.empty((T, Z.shape[1]))
        lam_sum = np.zeros_like(theta)
        for t in range(T):
            lam = _lambda(theta, bound_B)  # line 3
            lam_sum += lam
            # line 4 (Subroutine 2): costs, then the private regression oracle of Section 5
            c1 = base_cost + cell_costs(lam, proportions)[index, y_index]
            moment1 = noisy_cost_moment(Z, c1, sens_oracle, epsilon_step, noise)
            w = gram_inv @ (moment0 - moment1)  # predicted C_0 - C_1: h = 1 when C_1 is predicted lower
            weights[t] = w
            h = (Z @ w > 0).astype(float)
            # lines 6-7: the Auditor's noisy violations
            positive = np.bincount(cell, weights=h, minlength=2 * n_groups).reshape(n_groups, 2)
            r_noisy = noisy_violations(positive, denominators, gamma, epsilon_step, noise)
            theta = theta + eta * r_noisy  # line 8
        predict_seed = None if noise.secure else [int(u * 2**32) for u in noise.uniform(4)]

        # every fitted attribute is assigned only now
        self.classes_ = classes
        self.groups_ = declared
        self.n_iter_ = T
        self.eta_ = eta
        self.epsilon_step_ = epsilon_step
        self.coef_ = weights
        self.lambda_ = lam_sum / T
        self._aware = aware
        self._predict_seed_ = predict_seed
        if math.isinf(epsilon):
            self.privacy_spent_ = privacy_spent(
                math.inf, 0.0, protects="nothing: epsilon=inf runs the exact reduction", neighbouring=_NEIGHBOURING
            )
        else:
            self.privacy_spent_ = privacy_spent(epsilon, delta, protects=_PROTECTS, neighbouring=_NEIGHBOURING)
        return self

    # ------------------------------------------------------------------ prediction
    def _design(self, X: Any, sensitive_features: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X_arr, _ = _features(self, X, reset=False)
        m = X_arr.shape[0]
        if not self._aware:
            return np.hstack([X_arr, np.ones((m, 1))])
        if sensitive_features is None:
            if self.groups_.size != 1:
                raise ValueError(
                    "sensitive_features is required with use_sensitive_at_test_time=True: pass the group of every row, "
                    "e.g. predict(X, sensitive_features=g) (with metadata routing, "
                    "set_predict_request(sensitive_features=True))."
                )
            index = np.zeros(m, dtype=np.int64)
        else:
            index = group_index(self.groups_, _labels(sensitive_features, m))
        return np.hstack([X_arr, np.eye(self.groups_.size)[index]])

    def predict_proba(self, X: Any, *, sensitive_features: Any = None) -> np.ndarray:
        """Probability of each class under the uniform mixture of the ``T`` best responses.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row; needed only with ``use_sensitive_at_test_time=True``.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Columns follow ``classes_``: ``P(h(x) = classes_[0])`` and ``P(h(x) = classes_[1])``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError
            For invalid input (the message names the argument).
        """
        Z = self._design(X, sensitive_features)
        p1 = (Z @ self.coef_.T > 0).mean(axis=1)
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X: Any, *, sensitive_features: Any = None, random_state: Any = None) -> np.ndarray:
        """Randomized prediction: each row gets the label of a hypothesis drawn from the mixture.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row; needed only with ``use_sensitive_at_test_time=True``.
        random_state : None, int, numpy Generator or NoiseSource, default None
            Randomness of the draws.  ``None``: the stream seeded at ``fit`` for a seeded estimator
            (reproducible), secure randomness otherwise.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError
            For invalid input (the message names the argument).
        """
        proba = self.predict_proba(X, sensitive_features=sensitive_features)[:, 1]
        if random_state is not None:
            source = get_noise_source(random_state)
        elif self._predict_seed_ is None:
            source = get_noise_source(None)
        else:
            source = get_noise_source(np.random.default_rng(self._predict_seed_))
        u = source.uniform(proba.size) if proba.size else np.empty(0)
        return self.classes_[(u < proba).astype(np.int64)]
