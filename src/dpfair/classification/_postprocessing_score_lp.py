"""The score-bin linear program of :class:`~dpfair.classification.DPEqualizedOddsPostProcessor` (post-processing).

With score bins (``score_bins=K``) the post-processor derives its predictor from a released table
``q~[k, a, y]`` of ``K`` public score bins.  Four rules, all post-processing of the release (they read the
released table, the public number of rows ``m`` and ``epsilon`` only), make the derived predictor hold up on rows it
was not fitted on, where the noise of small groups' cells is as large as their counts:

* **Randomized thresholds** (:func:`solve_score_lp`): ``p[k, a] = P(predict 1 | bin k, group a)`` is non-decreasing
  in ``k``, as Hardt, Price and Srebro's (2016) derived predictor on a score and fairlearn's ``ThresholdOptimizer``
  (a randomized threshold per group, a point of the group's ROC hull).  Without it the LP combines arbitrary bins
  (e.g. predict 1 in the lowest bins and not the highest) to meet the constraints exactly on the training table:
  on Law School by race, with the *exact* table, the held-out equalized-odds difference was .094 (medians of 5
  splits) against .052 with thresholds and .060 for ``ThresholdOptimizer``.
* **Groups without evidence** (:func:`pooled_for_empty`): a declared group whose released size is indistinguishable
  from 0 (:func:`~dpfair.classification._postprocessing_lp._empty_groups`) has a pure-noise ROC; it is given the
  pooled score distribution of the groups with evidence (per label, at its released size), so its noise does not
  decide everyone's operating point, and its rows are predicted as a typical group's would be.
* **Tolerance at the noise's resolution, then each group snapped to the operating point**
  (:func:`resolution_tolerance`, :func:`solve_score_lp`).  A rate of group ``a`` is a weighted sum of its ``K``
  noisy cells over their total ``q~_ay``; its noise has standard deviation up to
  ``s_ay = sqrt(2K) (2 / (m epsilon)) / q~_ay`` (``K`` Laplace cells of scale ``2/(m epsilon)``).  Holding the noisy
  rates *exactly* equal lets the noisiest group's hull (flattened by the noise) pull every group's operating point
  down: on Adult by race (two groups of 35 positives) the error was .176 against .167.  The LP is first solved with
  each constraint widened by a quarter of the noise's standard deviation of the difference,
  ``sqrt(s_ay^2 + s_0y^2) / 4``, which picks the operating point (group 0's rates: the anchor, column 0 of the table
  given, where the post-processor puts the group of largest released mass); then every other group is moved
  as close to that point as its own table allows (exactly onto it when it can reach it, without noise), without leaving the first
  solution's bounds, and among those choices to its smallest noisy error.  The tolerance is thus used only where a
  group cannot reach the point, never spent on a group's own accuracy.  Measured at ``epsilon = 1`` (means over 5
  noise draws of the medians of 20 splits; error / held-out EO against the exact-count ``ThresholdOptimizer``),
  the share of the widening: 0 gives Adult by race .176 / .204, a quarter .167 / .204, a half .163 / .209, one
  .162 / .215; nine groups down to 12 rows: .281 / .245, .251 / .323, .235 / .364, .218 / .459 (before the robust distance below).
  The distance to the point is *robust* (:data:`SNAP_MARGIN_FACTOR`): each rate's distance is charged the noise the
  rule picks up from the group's cells, ``SNAP_MARGIN_FACTOR * sum_k |p_k - R*_y| b / (sqrt(K) q~_ay)`` with
  ``b = 2 / (m epsilon)`` the Laplace scale, so a group whose cells are mostly noise (a dozen rows) is not fitted to
  its noise but given a flatter threshold near the point, whose rates neither the noise nor its few held-out rows
  move far (the robust constraints of the attribute-blind post-processor,
  :func:`dpfair.classification.blind_table.rate_margin_weights`, without their sampling term).  It reads ``b``
  (public) and the released table only, and is 0 at ``epsilon = inf``.  With it a half share still trades
  fairness for error (8 bins, 20 splits x 4 seeds, means: nine groups .256 / .253 -> .238 / .284, Adult by race
  .168 / .165 -> .165 / .153, Communities .161 / .075 -> .160 / .077), so the share stays a quarter.
* **The least variable thresholds** (:func:`_smoothed_group`).  Once every group's two rates are fixed, its error
  on the table is fixed too (``q_a0 FP_a + q_a1 (1 - TP_a)``), and many non-decreasing ``p`` reach them; the LP's
  vertex is the most extreme one (all bins at 0 or 1 but one).  Each group gets instead the one whose rates the
  noise and the sampling move least (a linear surrogate of their variance): the same error and constraints on the
  table, a held-out equalized-odds difference lower by up to .02 (Adult by race .204 -> .187, nine groups
  .323 -> .306, Communities .068 -> .063, Law School .076 -> .071; the same means of medians as above).
  Tried and not adopted: letting a joint version of this step give up ``0.25 / sqrt(m)`` of error (at most a
  tenth of the advantage over the constant) for the steadiest rule of all groups, rates free and the table's
  differences no larger.  At ``epsilon = 1``, 5 splits x 60 seeded draws, the share of draws missing
  ThresholdOptimizer's EO + .03, 8 bins: 1,000 rows 17 % -> 7 %, Adult by race 7 % -> 0 %, but Communities
  0 % -> 7 % (over 20 splits its mean EO .075 -> .087), and every task's error up by .002-.007; with 6 bins
  Communities 22 % -> 5 %, 1,000 rows 57 % -> 32 %; the whole-records pipeline on 1,000 rows at epsilon 0.5 erred
  above the constant + .005 in 17 % of 40 draws instead of 15 %.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linprog

from dpfair.classification._postprocessing_lp import HIGHS_INF

__all__ = ["RESOLUTION_SHARE", "SNAP_MARGIN_FACTOR", "pooled_for_empty", "resolution_tolerance", "solve_score_lp"]

#: The share of the noise's standard deviation of a rate difference by which the first LP widens each constraint.
RESOLUTION_SHARE = 0.25

#: The multiple of the expected noise of a rule's rate (``sum_k |p_k - t_y| b / (sqrt(K) q_y)``, ``b`` the Laplace
#: scale, ``E|Lap(b)| = b``; the triangle inequality over the ``K`` cells divided by ``sqrt(K)``, as
#: :func:`dpfair.classification.blind_table.rate_margin_weights` without its sampling term) that the second step
#: (:func:`_snapped_group`) adds to a group's distance from the operating point.  Chosen at ``epsilon = 1`` on the
#: fairness suite (``benchmarks/fairness_suite.py``), logistic base, paired seeded draws (5 splits x 20 noise seeds,
#: the median over seeds of the 5-split medians of error / held-out EO, and the share of seeds whose 5-split median
#: EO misses ThresholdOptimizer's + .03), 8 bins then 6 bins:
#: without the charge, nine groups .254 / .319 (30 % missed), 6 bins .254 / .383 (70 %); Adult by race .166 / .158
#: (20 %), 6 bins .170 / .143 (0 %).  Factor 1: nine groups .254 / .278 (10 %), 6 bins .254 / .311 (20 %); Adult by
#: race .166 / .156 (15 %).  Factor 2: nine groups .254 / .241 (0 %), 6 bins .254 / .294 (10 %); Adult by race
#: .166 / .157 (5 %), 6 bins .170 / .138 (0 %).  Factor 3: nine groups .254 / .242 (0 %), 6 bins .255 / .292 (5 %);
#: Adult by race .166 / .145 (0 %), 6 bins 1,000 rows .264 / .147 (60 % missed, 50 % without).  Factor 5: nine
#: groups .254 / .250, Adult by race 8 bins .166 / .162 (10 %).  ACS (both), Adult by sex, Communities, Law School
#: and the empty group moved by at most .002 with factor 2.  Over 20 splits x 4 seeds (means of error / EO, 8 bins):
#: nine groups .255 / .318 -> .253 (ThresholdOptimizer .254 / .310), Adult by race .168 / .177 -> .165 (.165 / .190);
#: 6 bins .370 -> .282 and .154 -> .145.  A sampling term as the blind rule's (0.5 sqrt(q / m)) changed no task by
#: more than .008 and would keep the charge at ``epsilon = inf``, so it is left out.
SNAP_MARGIN_FACTOR = 2.0


def pooled_for_empty(q_valid: np.ndarray, empty: np.ndarray) -> np.ndarray:
    """The table the LP is solved on: a group without evidence gets the pooled score distribution of the others.

    For every label ``y`` and every group flagged in ``empty``, the column ``q[:, a, y]`` is replaced by the pooled
    distribution over the bins of the groups with evidence, ``sum_{b not empty} q[:, b, y]`` normalized, times the
    group's released mass ``sum_k q[k, a, y]`` (so its size, hence its weight in the error, is unchanged).  When no
    group has evidence for a label, or the group's mass is 0, its column is left as it is.  Post-processing of the
    released table.

    Parameters
    ----------
    q_valid : ndarray of shape (n_bins, n_groups, 2)
        The released table clipped at 0.
    empty : ndarray of bool, shape (n_groups,)
        The groups without evidence.

    Returns
    -------
    ndarray of shape (n_bins, n_groups, 2)
        A copy of ``q_valid`` with the empty groups' columns replaced.
    """
    q = np.array(q_valid, dtype=float)
    empty = np.asarray(empty, dtype=bool)
    if not empty.any() or empty.all():
        return q
    for y in (0, 1):
        pooled = q_valid[:, ~empty, y].sum(axis=1)
        total = pooled.sum()
        if not total > 0:
            continue
        for a in np.nonzero(empty)[0]:
            q[:, a, y] = q_valid[:, a, y].sum() * pooled / total
    return q


def resolution_tolerance(q: np.ndarray, m: int, epsilon: float) -> np.ndarray:
    """The first LP's widening of every constraint: :data:`RESOLUTION_SHARE` of the noise's sd of a rate difference.

    ``RESOLUTION_SHARE * sqrt(s_ay^2 + s_0y^2)`` with ``s_ay = sqrt(2 K) * 2 / (m epsilon) / q_ay``: the standard
    deviation of the sum of ``K`` cells of ``Lap(2 / (m epsilon))`` noise, relative to the group's (released) mass of
    label ``y``, the scale of the noise in any of its rates.  0 for group 0 (the anchor) and at ``epsilon = inf``;
    infinite (reported as 1e20) where a mass is not positive.

    Parameters
    ----------
    q : ndarray of shape (n_bins, n_groups, 2)
        The table the LP is solved on (released, clipped; see :func:`pooled_for_empty`).
    m : int
        Number of rows (public).
    epsilon : float
        Epsilon of the table.

    Returns
    -------
    ndarray of shape (n_groups, 2)
        The widening of the false-positive (column 0) and true-positive (column 1) constraint of every group.
    """
    n_bins, n_groups, _ = q.shape
    if math.isinf(epsilon):
        return np.zeros((n_groups, 2))
    mass = q.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.where(mass > 0, math.sqrt(2.0 * n_bins) * 2.0 / (m * epsilon) / mass, np.inf)
    tolerance = RESOLUTION_SHARE * np.sqrt(sd**2 + sd[:1] ** 2)
    tolerance = np.minimum(tolerance, HIGHS_INF)
    tolerance[0] = 0.0
    return tolerance


def _rate_rows(q: np.ndarray, y: int) -> np.ndarray:
    """``rate[k, a] = q[k, a, y] / q_ay``: the coefficients of group ``a``'s rate of label ``y`` in ``p[:, a]``."""
    denominator = q[:, :, y].sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, q[:, :, y] / denominator, 0.0)


def _monotone_rows(n_bins: int, n_groups: int, offset: int = 0, width: int | None = None) -> np.ndarray:
    """Rows ``p[k, a] - p[k + 1, a] <= 0`` for every group (variable ``k * n_groups + a`` after ``offset``)."""
    width = n_bins * n_groups if width is None else width
    rows = np.zeros(((n_bins - 1) * n_groups, width))
    for a in range(n_groups):
        for k in range(n_bins - 1):
            row = rows[a * (n_bins - 1) + k]
            row[offset + k * n_groups + a] = 1.0
            row[offset + (k + 1) * n_groups + a] = -1.0
    return rows


def _first_lp(q: np.ndarray, bounds: dict[int, np.ndarray]) -> np.ndarray | None:
    """Minimize the error over non-decreasing ``p`` with ``|R_ay - R_0y| <= bounds[y][a]``; ``None`` if no optimum."""
    n_bins, n_groups, _ = q.shape
    rows, rhs = [], []
    for y, bound in bounds.items():
        rate = _rate_rows(q, y)
        for a in range(1, n_groups):
            if bound[a] >= HIGHS_INF:
                continue
            row = np.zeros((n_bins, n_groups))
            row[:, a] += rate[:, a]
            row[:, 0] -= rate[:, 0]
            rows += [row.ravel(), -row.ravel()]
            rhs += [bound[a], bound[a]]
    monotone = _monotone_rows(n_bins, n_groups)
    a_ub = np.vstack([np.array(rows).reshape(-1, n_bins * n_groups), monotone])
    b_ub = np.concatenate([np.array(rhs, dtype=float), np.zeros(monotone.shape[0])])
    result = linprog((q[:, :, 0] - q[:, :, 1]).ravel(), A_ub=a_ub, b_ub=b_ub, bounds=(0.0, 1.0), method="highs")
    if result.status != 0 or result.x is None:
        return None
    return np.clip(result.x.reshape(n_bins, n_groups), 0.0, 1.0)


def _snapped_group(q_a: np.ndarray, target: dict[int, float], bound: dict[int, float], gamma: float,
                   start: np.ndarray, noise_scale: float = 0.0) -> np.ndarray:
    """One group's non-decreasing ``p``, as close to ``target`` as its table allows (robustly), then of smallest error.

    Variables ``p`` (``K``), ``u_y >= |R_y(p) - target_y|``, ``v_y >= u_y + margin_y(p) - gamma, >= 0`` (the excess
    over the user's ``gamma``) and, with ``noise_scale > 0``, ``d_ky >= |p_k - target_y|``.  First minimize
    ``sum_y v_y`` subject to ``u_y <= bound_y`` (``start`` is feasible), then, with that sum held, the group's error.
    The margin (:data:`SNAP_MARGIN_FACTOR`, the robust constraints) is ``sum_k w_y d_ky`` with
    ``w_y = SNAP_MARGIN_FACTOR * noise_scale / (sqrt(K) q_y)``; 0 with ``noise_scale = 0``, when the LP is the plain
    snap.  ``start`` is returned when HiGHS finds no optimum.
    """
    n_bins = q_a.shape[0]
    labels = sorted(target)
    n_labels = len(labels)
    robust = noise_scale > 0
    n_vars = n_bins + 2 * n_labels + (n_labels * n_bins if robust else 0)
    rows, rhs = [], []
    for j, y in enumerate(labels):
        rate = q_a[:, y] / q_a[:, y].sum()
        u, v = n_bins + j, n_bins + n_labels + j
        for sign in (1.0, -1.0):  # +-(R_y - target_y) <= u_y
            row = np.zeros(n_vars)
            row[:n_bins], row[u] = sign * rate, -1.0
            rows.append(row)
            rhs.append(sign * target[y])
        row = np.zeros(n_vars)  # u_y + margin_y - v_y <= gamma
        row[u], row[v] = 1.0, -1.0
        if robust:
            deviation = n_bins + 2 * n_labels + j * n_bins
            row[deviation:deviation + n_bins] = SNAP_MARGIN_FACTOR * noise_scale / math.sqrt(n_bins) / q_a[:, y].sum()
            for sign in (1.0, -1.0):  # +-(p_k - target_y) <= d_ky
                block = np.zeros((n_bins, n_vars))
                block[:, :n_bins] = sign * np.eye(n_bins)
                block[:, deviation:deviation + n_bins] = -np.eye(n_bins)
                rows.extend(block)
                rhs.extend([sign * target[y]] * n_bins)
        rows.append(row)
        rhs.append(gamma)
    monotone = _monotone_rows(n_bins, 1, width=n_vars)
    a_ub, b_ub = np.vstack([np.array(rows), monotone]), np.concatenate([rhs, np.zeros(monotone.shape[0])])
    box = [(0.0, 1.0)] * n_bins + [(0.0, bound[y]) for y in labels] + [(0.0, None)] * (n_vars - n_bins - n_labels)
    excess = np.zeros(n_vars)
    excess[n_bins + n_labels:n_bins + 2 * n_labels] = 1.0
    first = linprog(excess, A_ub=a_ub, b_ub=b_ub, bounds=box, method="highs")
    if first.status != 0 or first.x is None:
        return start
    error = np.zeros(n_vars)
    error[:n_bins] = q_a[:, 0] - q_a[:, 1]
    held = linprog(error, A_ub=np.vstack([a_ub, excess]), b_ub=np.append(b_ub, first.fun + 1e-9), bounds=box,
                   method="highs")
    x = held.x if held.status == 0 and held.x is not None else first.x
    return np.clip(x[:n_bins], 0.0, 1.0)


def _smoothed_group(q_a: np.ndarray, p_a: np.ndarray, cell_variance: float) -> np.ndarray:
    """Among non-decreasing ``p`` with the same two rates as ``p_a`` (so the same error), the least variable one.

    Minimizes ``sum_y sum_k w_ky |p_k - R_y|`` with ``w_ky = (q_ky + cell_variance) / q_y^2``: the linear surrogate
    (``d^2 <= |d|`` for ``|d| <= 1``) of ``sum_k (p_k - R_y)^2 (q_ky + v) / q_y^2``, which is proportional to the
    variance of the rate ``R_y`` measured on a fresh sample of the group's size plus its sampling error on the
    training rows (``2 q_ky / (m q_y^2)`` per bin) plus the Laplace noise's (``8 / (m epsilon q_y)^2`` per bin), with
    ``v = 4 / (m epsilon^2)``.  ``p_a`` is returned when HiGHS finds no optimum or a mass is not positive.
    """
    n_bins = q_a.shape[0]
    mass = q_a.sum(axis=0)
    if not (mass > 0).all():
        return p_a
    rates = q_a / mass  # rates[k, y]: the coefficient of p_k in R_y
    achieved = p_a @ rates
    n_vars = 3 * n_bins  # p, then |p_k - R_0|, then |p_k - R_1|
    cost = np.zeros(n_vars)
    rows, rhs = [], []
    for y in (0, 1):
        deviation = slice((1 + y) * n_bins, (2 + y) * n_bins)
        cost[deviation] = (q_a[:, y] + cell_variance) / mass[y] ** 2
        for sign in (1.0, -1.0):  # +-(p_k - R_y) <= d_ky
            block = np.zeros((n_bins, n_vars))
            block[:, :n_bins] = sign * np.eye(n_bins)
            block[:, deviation] = -np.eye(n_bins)
            rows.append(block)
            rhs.append(np.full(n_bins, sign * achieved[y]))
    rows.append(_monotone_rows(n_bins, 1, width=n_vars))
    rhs.append(np.zeros(n_bins - 1))
    equal = np.zeros((2, n_vars))
    equal[:, :n_bins] = rates.T
    result = linprog(cost, A_ub=np.vstack(rows), b_ub=np.concatenate(rhs), A_eq=equal, b_eq=achieved,
                     bounds=[(0.0, 1.0)] * n_bins + [(0.0, None)] * (2 * n_bins), method="highs")
    if result.status != 0 or result.x is None:
        return p_a
    return np.clip(result.x[:n_bins], 0.0, 1.0)


def solve_score_lp(
    q: np.ndarray, bound_fp: np.ndarray | None, bound_tp: np.ndarray | None, gamma: float = 0.0,
    cell_variance: float | None = None, noise_scale: float = 0.0,
) -> np.ndarray | None:
    """The score-bin derived predictor: randomized thresholds, the operating point, each group snapped to it.

    1. Minimize the error ``sum_{k, a} q[k, a, 0] p[k, a] + q[k, a, 1] (1 - p[k, a])`` over ``p`` non-decreasing in
       the bin ``k`` (a randomized threshold per group) subject to ``|R_ay(p) - R_0y(p)| <= bound_y[a]`` for the
       constrained labels (``R_ay = sum_k p[k, a] q[k, a, y] / q_ay``; an entry ``>= 1e20`` drops the constraint).
    2. With group 0's rates ``R*_y`` of that solution as the operating point, every other group with a constraint
       gets the non-decreasing ``p[:, a]`` that minimizes ``sum_y max(|R_ay - R*_y| - gamma, 0)`` within
       ``|R_ay - R*_y| <= bound_y[a]``, then its own error: without noise, exactly the operating point (within
       ``gamma``) whenever its table can reach it.  The second step never leaves the first step's bounds, so the
       result is feasible for them.
       With ``noise_scale > 0`` the distance to the operating point is charged the noise the rule picks up from the
       group's cells (:func:`_snapped_group`, :data:`SNAP_MARGIN_FACTOR`): a group whose cells are mostly noise is
       not fitted to its noise but given a flatter threshold whose rates the noise moves less.
    3. With ``cell_variance`` given, every group's ``p`` is replaced by the least variable non-decreasing one with
       the same two rates (:func:`_smoothed_group`): the same error and rates on the table, hence the same
       constraints, with fewer extreme bins for the noise and the sampling of small groups to move.

    Parameters
    ----------
    q : ndarray of shape (n_bins, n_groups, 2)
        The (noisy, valid) table ``q[k, a, y]``; ``q_ay > 0`` for every rate with a finite bound.
    bound_fp, bound_tp : ndarray of shape (n_groups,) or None
        Right-hand sides (``gamma`` plus the widening; entry 0 unused); ``None`` drops that family.
    gamma : float, default 0.0
        The user's tolerance, kept free in the second step.
    cell_variance : float or None, default None
        ``v = 4 / (m epsilon^2)`` (0 at ``epsilon = inf``) for the third step; ``None`` skips it.
    noise_scale : float, default 0.0
        The Laplace scale ``2 / (m epsilon)`` of the table's cells (0 at ``epsilon = inf``: the plain second step).

    Returns
    -------
    ndarray of shape (n_bins, n_groups) or None
        ``p[k, a]`` in [0, 1], non-decreasing in ``k``; ``None`` when HiGHS finds no optimum of the first LP.
    """
    n_groups = q.shape[1]
    bounds = {y: b for y, b in ((0, bound_fp), (1, bound_tp)) if b is not None and n_groups > 1}
    p = _first_lp(q, bounds)
    if p is None:
        return p
    mass = q.sum(axis=0)
    for a in range(1, n_groups if bounds else 1):
        labels = [y for y, b in bounds.items() if b[a] < HIGHS_INF and mass[a, y] > 0 and mass[0, y] > 0]
        if not labels:
            continue
        target = {y: float(p[:, 0] @ q[:, 0, y] / mass[0, y]) for y in labels}
        p[:, a] = _snapped_group(q[:, a, :], target, {y: float(bounds[y][a]) for y in labels}, gamma, p[:, a],
                                 noise_scale)
    if cell_variance is not None:
        for a in range(n_groups):
            p[:, a] = _smoothed_group(q[:, a, :], p[:, a], cell_variance)
    return p
