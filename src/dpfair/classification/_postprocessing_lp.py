"""The released table's linear program of :class:`~dpfair.classification.DPEqualizedOddsPostProcessor` (Algorithm 1).

Everything between the exact table and the fitted probabilities: the Laplace release of the table (lines 3-4,
:func:`noisy_frequencies`), the slack of LP~ (1) (:func:`lp_slack`), its solution by HiGHS (:func:`solve_lp`), the
constant classifier a failed solve falls back to (:func:`best_constant_classifier`), and the declared groups the
released table cannot tell from empty (post-processing).  :mod:`dpfair.classification.postprocessing` re-exports
the public ones.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy.optimize import linprog

from dpfair._warnings import find_stack_level
from dpfair.classification._group_evidence import VacuousConstraintWarning, evidence_threshold
from dpfair.privacy.mechanisms import laplace_mechanism

__all__ = ["HIGHS_INF", "best_constant_classifier", "lp_slack", "noisy_frequencies", "solve_lp"]

#: HiGHS treats bounds at or beyond 1e20 as infinite: a larger slack is a vacuous constraint.
HIGHS_INF = 1e20
_HIGHS_INF = HIGHS_INF


def noisy_frequencies(q_hat: np.ndarray, m: int, epsilon: float, random_state: Any) -> np.ndarray:
    """Algorithm 1, lines 3-4: ``q~ = q_hat + W`` with ``W`` i.i.d. ``Lap(2 / (m epsilon))``.

    Claim B.1: changing one row's ``A`` moves ``1/m`` of mass between two cells, so the L1
    sensitivity of ``q_hat`` is ``2/m``; :func:`~dpfair.privacy.laplace_mechanism` with that
    sensitivity adds noise of scale ``2 / (m epsilon)``.

    Parameters
    ----------
    q_hat : ndarray
        Exact frequencies (any shape; a stack of tables is noised cell by cell).
    m : int
        Number of training rows (public).
    epsilon : float
        Privacy parameter (finite, > 0).
    random_state : None, int, numpy Generator or NoiseSource
        Noise source (``None``: secure).

    Returns
    -------
    ndarray
        ``q_hat`` plus Laplace noise, same shape.
    """
    return laplace_mechanism(q_hat, sensitivity=2.0 / m, epsilon=epsilon, random_state=random_state)


def lp_slack(q_tilde: np.ndarray, m: int, epsilon: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Slack of LP~ (1) for the false- and true-positive constraints of every group ``a != 0``.

    ``4 ln(4|A|/beta) / (min{q~_a0, q~_00} m epsilon)`` (FP) and the same with ``y = 1`` (TP), where
    ``q~_ay = q~_0ay + q~_1ay``; group 0 gets 0.  0 when ``epsilon`` is infinite.  Where ``min{q~_ay, q~_0y} <= 0``
    (no evidence about a rate: a declared group absent from the data, or drowned by the noise) the slack is
    its limit as that frequency tends to 0, infinite, reported as 1e20 (HiGHS's infinity): the constraint is
    vacuous, at any ``epsilon``.

    Parameters
    ----------
    q_tilde : ndarray of shape (2, n_groups, 2)
        Noisy frequencies (usually :func:`valid_frequencies` of the release).
    m : int
        Number of rows.
    epsilon : float
        Privacy parameter.
    beta : float
        Confidence parameter in (0, 1).

    Returns
    -------
    slack_fp : ndarray of shape (n_groups,)
        Slack of the false-positive constraints, capped at 1e20 (HiGHS's infinity: vacuous).
    slack_tp : ndarray of shape (n_groups,)
        Slack of the true-positive constraints, capped likewise.
    """
    q_ay = q_tilde.sum(axis=0)  # (n_groups, 2)
    n_groups = q_ay.shape[0]
    smallest = np.minimum(q_ay, q_ay[:1])  # (n_groups, 2)
    if math.isinf(epsilon):
        slack = np.zeros((n_groups, 2))
    else:
        numerator = 4.0 * math.log(4.0 * n_groups / beta)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            slack = numerator / (smallest * m * epsilon)
        slack = np.minimum(slack, _HIGHS_INF)
    slack[~(smallest > 0)] = _HIGHS_INF  # no evidence: the limit of the slack, a vacuous constraint
    slack[0] = 0.0
    return slack[:, 0].copy(), slack[:, 1].copy()


def solve_lp(
    q: np.ndarray, bound_fp: np.ndarray | None, bound_tp: np.ndarray | None
) -> tuple[np.ndarray, float]:
    """Solve LP (6) / LP~ (1) with HiGHS: ``min err(Y_p)`` s.t. ``|R_a(Y_p) - R_0(Y_p)| <= bound_a``.

    ``err(Y_p) = sum_{y_hat, a} q_{y_hat a 0} p_{y_hat a} + q_{y_hat a 1} (1 - p_{y_hat a})`` and
    ``FP_a(Y_p) = (q_{1a0} p_{1a} + q_{0a0} p_{0a}) / q_{a0}`` (``TP`` with ``y = 1``), as in the proof
    of Lemma B.2; group 0 is the anchor.

    Parameters
    ----------
    q : ndarray of shape (n_bins, n_groups, 2)
        (Noisy) frequencies ``q[y_hat, a, y]`` (``n_bins = 2``: binary predictions; more: score bins, the same
        LP with one variable per bin and group); ``q_ay > 0`` for every constrained rate.
    bound_fp, bound_tp : ndarray of shape (n_groups,) or None
        Right-hand sides ``gamma + slack`` (entry 0 unused); ``None`` drops that family, and an entry
        ``>= 1e20`` (HiGHS's infinity) drops that group's constraint.

    Returns
    -------
    p : ndarray of shape (n_bins, n_groups)
        ``p[y_hat, a]`` = P(predict 1 | Y_hat = y_hat, A = a), clipped to [0, 1].
    objective : float
        The (noisy) error of the solution.

    Raises
    ------
    ValueError
        If HiGHS reports no optimal solution (infeasible, or numerical trouble), or a rate with a finite
        bound has ``q_ay <= 0``.
    """
    n_bins, n_groups = q.shape[0], q.shape[1]
    c = (q[:, :, 0] - q[:, :, 1]).ravel()  # variable index y_hat * n_groups + a
    constant = float(q[:, :, 1].sum())
    rows, rhs = [], []
    for y_value, bound in ((0, bound_fp), (1, bound_tp)):
        if bound is None or n_groups < 2:
            continue
        denominator = q[:, :, y_value].sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = q[:, :, y_value] / denominator  # coefficients of R_a in p
        for a in range(1, n_groups):
            if bound[a] >= _HIGHS_INF:  # vacuous (HiGHS's infinity): no row
                continue
            if not (denominator[a] > 0 and denominator[0] > 0):
                raise ValueError(
                    "a constrained rate of LP (6) has a frequency q_ay <= 0 (undefined) and a finite bound: pass "
                    "bound 1e20 (vacuous) for it, as lp_slack does."
                )
            row = np.zeros((n_bins, n_groups))
            row[:, a] += rate[:, a]
            row[:, 0] -= rate[:, 0]
            rows += [row.ravel(), -row.ravel()]
            rhs += [bound[a], bound[a]]
    result = linprog(
        c,
        A_ub=np.array(rows) if rows else None,
        b_ub=np.array(rhs) if rows else None,
        bounds=(0.0, 1.0),
        method="highs",
    )
    if result.status != 0 or result.x is None:
        raise ValueError(
            "the noisy linear program LP~ (1) has no solution (HiGHS: "
            f"{result.message.strip()}); use a larger epsilon, fewer (merged) groups or a larger gamma."
        )
    p = np.clip(result.x.reshape(n_bins, n_groups), 0.0, 1.0)
    return p, float(result.fun) + constant


def best_constant_classifier(q: np.ndarray, n_groups: int) -> tuple[np.ndarray, float]:
    """The constant classifier (``p = 0`` or ``p = 1`` everywhere) of smaller error under the table ``q``.

    Its rates are equal in every group, so it satisfies every constraint of LP (6) / LP~ (1): the fallback of
    a fit whose LP HiGHS could not solve.

    Parameters
    ----------
    q : ndarray of shape (n_bins, n_groups, 2)
        (Noisy, valid) frequencies ``q[y_hat, a, y]``.
    n_groups : int
        Number of declared groups.

    Returns
    -------
    p : ndarray of shape (n_bins, n_groups)
        All zeros or all ones.
    objective : float
        Its error under ``q``.
    """
    negatives, positives = float(q[:, :, 0].sum()), float(q[:, :, 1].sum())
    value = 1.0 if negatives < positives else 0.0
    return np.full((q.shape[0], n_groups), value), negatives if value else positives


def _empty_groups(q_tilde: np.ndarray, m: int, epsilon: float, beta: float) -> np.ndarray:
    """The declared groups whose released number of rows is indistinguishable from 0 (post-processing).

    A group's released count is ``m`` times the sum of its ``2K`` noisy cells, each ``Lap(2 / (m epsilon))`` in
    frequency, so its noise has standard deviation ``sqrt(2K) sqrt(2) 2 / epsilon`` rows; the group is empty for the
    rule of :func:`~dpfair.classification._group_evidence.evidence_threshold` (Bonferroni over the groups) when its
    count is below the threshold.  At ``epsilon = inf``: when it holds no row.

    Parameters
    ----------
    q_tilde : ndarray of shape (K, n_groups, 2)
        The released table.
    m : int
        Number of rows (public).
    epsilon : float
        The table's epsilon.
    beta : float
        Failure probability of the rule.

    Returns
    -------
    ndarray of bool, shape (n_groups,)
    """
    counts = q_tilde.sum(axis=(0, 2)) * m
    count_sd = 0.0 if math.isinf(epsilon) else math.sqrt(2.0 * q_tilde.shape[0]) * math.sqrt(2.0) * 2.0 / epsilon
    return ~(counts > evidence_threshold(count_sd, counts.size, beta))


def _warn_vacuous(vacuous: dict[str, np.ndarray], groups: np.ndarray, epsilon: float) -> None:
    """One :class:`VacuousConstraintWarning` naming the declared groups whose constraints bind nothing."""
    parts = []
    for rate, flags in vacuous.items():
        names = [repr(label) for label in np.asarray(groups)[1:][flags].tolist()]
        if names:
            parts.append(f"the {rate} rate of group(s) {', '.join(names)}")
    if not parts:
        return
    warnings.warn(
        f"LP~ (1) leaves {'; '.join(parts)} unconstrained (against the anchor group, {groups.tolist()[0]!r}): at "
        f"epsilon={epsilon:g} the noisy table holds too little of that group or of the anchor for that label (a "
        "declared group without rows, or a small one), so the slack of these constraints is at least 1 and they "
        "bind nothing. The fit is valid and private. Use a larger epsilon, more rows, or merge small groups.",
        VacuousConstraintWarning,
        stacklevel=find_stack_level(),
    )
