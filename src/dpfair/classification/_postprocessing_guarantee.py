"""The fairness a private equalized-odds post-processor can guarantee, and the score-bin variant of its table.

Two pieces of :class:`~dpfair.classification.DPEqualizedOddsPostProcessor` (Jagielski et al. 2019, Section 3):

* **The released guarantee.** After the LP is solved on the noisy table ``q~``, :func:`guaranteed_violation`
  bounds the equalized-odds violation of the fitted predictor on the training rows (the exact table
  ``q_hat``), with probability at least ``1 - beta`` over the Laplace noise, from released quantities only
  (``q~``, the solution ``p~*``, ``m``, ``epsilon``, ``beta`` and the table's shape): post-processing, no
  further privacy cost.  The proof is in :func:`guaranteed_violation`.
* **Score bins.** Hardt et al.'s derived predictor on a *thresholded score* rather than on binary predictions:
  the base classifier's probability of the positive class is cut by the public thresholds
  ``1/K, 2/K, ..., (K-1)/K`` (:func:`score_bin_edges`), and the LP chooses ``P(predict 1 | bin, group)``.  The
  thresholds are public constants (never read off the data), so the table is released exactly as the paper's
  (one row moves ``1/m`` of mass between two cells: L1 sensitivity ``2/m``, Claim B.1) at no extra cost.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import expit
from scipy.stats import gamma as gamma_distribution

__all__ = [
    "AUTO_SCORE_BINS",
    "FairnessSlackWarning",
    "base_scores",
    "check_score_bins",
    "guaranteed_violation",
    "has_score",
    "rate_error_bound",
    "resolve_score_bins",
    "score_bin_edges",
    "score_bins_of",
    "slack_matters",
]


class FairnessSlackWarning(UserWarning):
    """The noise of the private table costs fairness that matters (``DPEqualizedOddsPostProcessor.fit``).

    Raised at a finite ``epsilon`` (never at ``epsilon = inf``, where nothing is noisy) when, for some group and
    constrained rate, the part of the guaranteed violation due to the noise (``E / q~_ay + E / q~_0y``, see
    :func:`guaranteed_violation`) exceeds both ``gamma`` and ``2 sqrt(1 / n_ay + 1 / n_0y)``, four standard errors of
    the difference of two rates measured on ``n_ay`` and ``n_0y`` rows (the released counts ``q~ m``):
    :func:`slack_matters`.  Below it the noise costs less than measuring the rates on a sample at all costs, and a
    held-out evaluation would not see it (before, the warning fired whenever the guaranteed slack exceeded ``gamma``:
    on almost every held-out fit, Adult at ``epsilon = 1`` included).  The fitted predictor is then only guaranteed
    (probability ``1 - beta``) a violation on its training rows of at most ``guaranteed_violation_``.  The numbers
    printed are released (computed from the noisy table).  Use a larger ``epsilon`` for the post-processor, more rows,
    fewer score bins, or a larger ``gamma``.
    """


#: The number of bins of ``score_bins="auto"`` for a base model with a score: on Adult with a private
#: base model it gave the lowest held-out error at an equalized-odds difference within gamma
#: (``benchmarks/bench_private_pipeline.py``).
AUTO_SCORE_BINS = 8


def check_score_bins(score_bins: Any) -> int | str | None:
    """``score_bins`` validated: ``"auto"``, ``None`` (the paper's binary predictions) or an int in [2, 1000].

    Parameters
    ----------
    score_bins : object
        The constructor's argument.

    Returns
    -------
    int, "auto" or None
        The number of bins, ``"auto"`` (resolved by :func:`resolve_score_bins`), or ``None``.

    Raises
    ------
    ValueError
        If it is not ``"auto"``, ``None`` nor an integer in [2, 1000].
    """
    if score_bins is None:
        return None
    if isinstance(score_bins, str) and score_bins == "auto":
        return "auto"
    if isinstance(score_bins, bool) or not isinstance(score_bins, (int, np.integer)) or not 2 <= score_bins <= 1000:
        raise ValueError(
            f"score_bins must be 'auto', None (the paper's Algorithm 1 on binary predictions) or an integer from 2 "
            f"to 1000 (bins of the base classifier's probability), got {score_bins!r}; e.g. score_bins=8."
        )
    return int(score_bins)


def has_score(estimator: Any) -> bool:
    """Whether ``estimator`` exposes a score: ``predict_proba`` or ``decision_function`` (its public API, unfitted).

    Parameters
    ----------
    estimator : object
        The base classifier as given to the post-processor (not fitted here, never called).

    Returns
    -------
    bool
        ``True`` when ``hasattr`` finds either method (scikit-learn hides one a configuration lacks, e.g.
        ``SVC(probability=False).predict_proba``; a ``Pipeline`` or ``FrozenEstimator`` answers for its model).
    """
    return estimator is not None and (hasattr(estimator, "predict_proba") or hasattr(estimator, "decision_function"))


def resolve_score_bins(score_bins: Any, estimator: Any) -> int | None:
    """The number of bins of a fit: ``score_bins`` validated, with ``"auto"`` resolved from the estimator's API.

    ``"auto"`` is :data:`AUTO_SCORE_BINS` (8 bins: the public thresholds 1/8, ..., 7/8) when the base classifier
    has ``predict_proba`` or ``decision_function`` (:func:`has_score`), else ``None``: the paper's table of binary
    predictions (``K = 2``, LP~ (1) with its slack).  The rule reads only the estimator's public methods, before
    any fit, prediction or charge, and never the data: the choice is public.

    Parameters
    ----------
    score_bins : object
        The constructor's argument.
    estimator : object
        The base classifier as given (fitted or not).

    Returns
    -------
    int or None
        The number of bins, or ``None`` for the paper's binary predictions.

    Raises
    ------
    ValueError
        If ``score_bins`` is invalid (see :func:`check_score_bins`).
    """
    checked = check_score_bins(score_bins)
    if checked == "auto":
        return AUTO_SCORE_BINS if has_score(estimator) else None
    return checked


def score_bin_edges(n_bins: int) -> np.ndarray:
    """The public thresholds ``k / n_bins`` (``k = 1 .. n_bins - 1``) on the probability of the positive class.

    Parameters
    ----------
    n_bins : int
        Number of bins (>= 2).

    Returns
    -------
    ndarray of shape (n_bins - 1,)
        Increasing thresholds in (0, 1); bin ``k`` holds the probabilities in ``[edge_(k-1), edge_k)``.
    """
    return np.arange(1, n_bins) / n_bins


def base_scores(estimator: Any, X: Any, classes: np.ndarray) -> np.ndarray:
    """The base classifier's probability of the positive class ``classes[1]`` for every row of ``X``.

    ``predict_proba`` (the column of ``classes[1]`` in the estimator's ``classes_``) when the estimator has it,
    else the logistic function of ``decision_function`` (positive: ``classes[1]``).

    Parameters
    ----------
    estimator : classifier
        A fitted binary classifier.
    X : array-like
        Features.
    classes : ndarray of shape (2,)
        The post-processor's classes; the second is the positive class.

    Returns
    -------
    ndarray of shape (n_samples,)
        Probabilities in [0, 1].

    Raises
    ------
    ValueError
        If the estimator has neither method, or its ``classes_`` do not hold the positive class.
    """
    if hasattr(estimator, "predict_proba"):
        proba = np.asarray(estimator.predict_proba(X), dtype=float)
        labels = list(getattr(estimator, "classes_", classes))
        try:
            column = [str(label) for label in labels].index(str(classes[1]))
        except ValueError:
            raise ValueError(
                f"the estimator's classes_ {labels} do not hold the positive class {classes[1]!r}; wrap a binary "
                "classifier fitted on the labels of y."
            ) from None
        return np.clip(proba[:, column], 0.0, 1.0)
    if hasattr(estimator, "decision_function"):
        return expit(np.asarray(estimator.decision_function(X), dtype=float).ravel())
    raise ValueError(
        "score_bins needs a base classifier with predict_proba or decision_function; pass score_bins=None to "
        "post-process its binary predictions (the paper's Algorithm 1)."
    )


def score_bins_of(scores: np.ndarray, n_bins: int) -> np.ndarray:
    """The bin of every score under the public thresholds of :func:`score_bin_edges`.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Probabilities in [0, 1].
    n_bins : int
        Number of bins.

    Returns
    -------
    ndarray of shape (n,), int64
        Bin indices in ``range(n_bins)``.
    """
    return np.searchsorted(score_bin_edges(n_bins), scores, side="right").astype(np.int64)


def rate_error_bound(n_cells: int, n_sums: int, m: int, epsilon: float, beta: float) -> float:
    """``E``: with probability ``>= 1 - beta``, every one of ``n_sums`` sums ``sum_k |W_k|`` over ``n_cells`` cells is ``<= E``.

    Each cell's noise ``W`` is ``Lap(b)`` with ``b = 2 / (m epsilon)`` (Algorithm 1, line 3), so ``|W|`` is
    exponential with scale ``b`` and a sum of ``n_cells`` of them is ``Gamma(n_cells, b)``.  The sums run over
    disjoint cells, hence are independent: each is below its ``(1 - beta')`` quantile with
    ``(1 - beta')^n_sums = 1 - beta``.  0 when ``epsilon`` is infinite.

    Parameters
    ----------
    n_cells : int
        Cells per sum (the number of bins: 2 for binary predictions).
    n_sums : int
        Number of sums bounded together (one per group and constrained label).
    m : int
        Number of rows (public).
    epsilon : float
        Epsilon of the table.
    beta : float
        Failure probability, in (0, 1).

    Returns
    -------
    float
        The bound ``E`` in frequency units.
    """
    if math.isinf(epsilon):
        return 0.0
    beta_each = -math.expm1(math.log1p(-beta) / max(n_sums, 1))  # 1 - (1 - beta)^(1 / n_sums)
    return float(gamma_distribution.isf(beta_each, n_cells, scale=2.0 / (m * epsilon)))


def guaranteed_violation(
    q_valid: np.ndarray, p: np.ndarray, m: int, epsilon: float, beta: float, labels: tuple[int, ...]
) -> tuple[float, float]:
    """The released bound on the fitted predictor's equalized-odds violation on its training rows.

    **Claim.** Let ``q_hat`` be the exact table ``[bin k, group a, label y]`` of the training rows, ``q~`` the
    released one clipped at 0 (``q_valid``), ``p[k, a]`` the fitted probabilities and
    ``R_ay(p; q) = sum_k p[k, a] q[k, a, y] / q_ay`` (``q_ay = sum_k q[k, a, y]``; ``y = 0``: false-positive
    rate, ``y = 1``: true-positive rate).  With probability ``>= 1 - beta`` over the Laplace noise, for every
    group ``a != 0`` and constrained label ``y``:
    ``|R_ay(p; q_hat) - R_0y(p; q_hat)| <= |R_ay(p; q~) - R_0y(p; q~)| + E / q~_ay + E / q~_0y``,
    with ``E`` = :func:`rate_error_bound` (``K`` cells per sum, one sum per group and constrained label).  The
    returned guarantee is the largest right-hand side (at most 1, a rate difference's range).

    **Proof.** Write ``e_k = q~_kay - q_hat_kay``; clipping at 0 only moves a noisy cell towards the
    non-negative exact one, so ``|e_k| <= |W_kay|``.  With ``N = sum_k p_k q_k`` and ``D = q_ay``:
    ``R~ - R_hat = N~/D~ - N_hat/D_hat = (sum_k (p_k - R_hat) e_k) / D~``, and ``p_k - R_hat`` lies in
    ``[-1, 1]`` (both in [0, 1]), so ``|R~ - R_hat| <= sum_k |e_k| / D~ <= sum_k |W_kay| / q~_ay <= E / q~_ay``
    on the event of :func:`rate_error_bound`, for every ``p`` at once (hence for the ``p~*`` chosen from the same
    table).  The triangle inequality over ``a`` and the anchor ``0`` gives the claim.  Everything on the
    right is released or public, so the bound is post-processing of the release.  (For ``K = 2`` this is
    Lemma B.2, parts 3-4, of Jagielski et al., with the sum of two absolute noises in place of twice their
    maximum.)  A rate whose noisy ``q~_ay`` or ``q~_0y`` is 0 has no evidence: its bound is 1.

    Parameters
    ----------
    q_valid : ndarray of shape (n_bins, n_groups, 2)
        The released table clipped at 0.
    p : ndarray of shape (n_bins, n_groups)
        The fitted probabilities.
    m : int
        Number of rows.
    epsilon : float
        Epsilon of the table (``inf``: exact table, ``E = 0``).
    beta : float
        Failure probability.
    labels : tuple of int
        The constrained labels: ``(0, 1)`` for equalized odds, ``(1,)`` / ``(0,)`` for one rate.

    Returns
    -------
    guarantee : float
        The bound on ``max_{a != 0, y} |R_ay - R_0y|`` over the training rows (0 with one group).
    noise_slack : float
        Its part due to the noise: the largest ``E / q~_ay + E / q~_0y`` (at most 1).
    """
    n_bins, n_groups, _ = q_valid.shape
    if n_groups < 2 or not labels:
        return 0.0, 0.0
    bound = rate_error_bound(n_bins, n_groups * len(labels), m, epsilon, beta)
    guarantee = noise_slack = 0.0
    for y_value in labels:
        mass = q_valid[:, :, y_value].sum(axis=0)  # q~_ay
        with np.errstate(divide="ignore", invalid="ignore"):
            rates = (p * q_valid[:, :, y_value]).sum(axis=0) / mass
            error = np.where(mass > 0, bound / mass, np.inf)
        for a in range(1, n_groups):
            slack = min(float(error[a] + error[0]), 1.0)
            observed = abs(float(rates[a] - rates[0])) if mass[a] > 0 and mass[0] > 0 else 1.0
            noise_slack = max(noise_slack, slack)
            guarantee = max(guarantee, min(observed + slack, 1.0))
    return guarantee, noise_slack


def slack_matters(
    q_valid: np.ndarray, m: int, epsilon: float, beta: float, labels: tuple[int, ...], gamma: float
) -> bool:
    """Whether the noise's part of the guarantee exceeds ``gamma`` and the sampling resolution for some rate.

    For every group ``a != 0`` and constrained label ``y`` with evidence (``q~_ay, q~_0y > 0``): the noise's part
    ``E / q~_ay + E / q~_0y`` (``E`` of :func:`rate_error_bound`, as in :func:`guaranteed_violation`) against
    ``max(gamma, 2 sqrt(1 / n_ay + 1 / n_0y))`` with ``n = q~ m`` (released): four standard errors of the difference of
    two rates measured on ``n_ay`` and ``n_0y`` rows (a rate's standard error is at most ``1 / (2 sqrt(n))``).  Four,
    not two: ``E`` bounds the sum of the ``K`` absolute noises of a rate, for every ``p`` at once, with probability
    ``1 - beta``, which is 3-4 times the standard deviation of a typical rate's noise (the ``Gamma(K)`` quantile
    against ``sqrt(2K)`` scales, ``K = 2`` or 8); the two sides are then compared at the same confidence.  Measured:
    Adult by sex at ``epsilon = 1`` (score bins, ``gamma = 0.02``) has noise part .034 on the women's true-positive
    rate against 2 x .033: no warning, and a held-out equalized-odds difference of .02-.04; Communities (60-190 rows in
    a positive cell) .5 against .3: a warning, and .05-.26 held out.  A rate without evidence is the business of the
    vacuous-constraint warnings.  Released quantities only.

    Parameters
    ----------
    q_valid : ndarray of shape (n_bins, n_groups, 2)
        The released table clipped at 0.
    m : int
        Number of rows.
    epsilon : float
        Epsilon of the table.
    beta : float
        Failure probability.
    labels : tuple of int
        The constrained labels.
    gamma : float
        The fairness target.

    Returns
    -------
    bool
        ``True`` when the warning is worth raising.
    """
    n_bins, n_groups, _ = q_valid.shape
    if math.isinf(epsilon) or n_groups < 2 or not labels:
        return False
    bound = rate_error_bound(n_bins, n_groups * len(labels), m, epsilon, beta)
    for y_value in labels:
        mass = q_valid[:, :, y_value].sum(axis=0)
        for a in range(1, n_groups):
            if not (mass[a] > 0 and mass[0] > 0):
                continue
            noise = bound / mass[a] + bound / mass[0]
            sampling = 2.0 * math.sqrt(1.0 / (mass[a] * m) + 1.0 / (mass[0] * m))
            if noise > max(gamma, sampling):
                return True
    return False
