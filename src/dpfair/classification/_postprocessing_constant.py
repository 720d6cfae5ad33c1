"""Never worse than the constant: the whole-row fallback of :class:`~dpfair.classification.DPEqualizedOddsPostProcessor`.

Under whole-row privacy (a private base fitted inside the post-processor, relation ``"replace"``) the labels are
private, so the objective of the score-bin LP is read off the noisy table ``q~[k, a, y]`` (``Lap(2/(m eps_t))`` per
cell).  On the fairness suite's 1,000-row task (667 training rows, two groups) at ``epsilon = 0.5`` the table's
estimate of the label imbalance has a noise of about the true gap, so the near-constant rule the LP falls to on a
noise-dominated base could carry the minority label, and a rule whose gain over the constant is within the noise was
kept.  The attribute-blind post-processor solved both
(:mod:`dpfair.classification.blind_postprocessing`, "Never worse than the constant"); this module does the same for the
attribute-aware one:

1. part of the post-processor's epsilon (:func:`count_epsilon`) releases the number of positive labels with ``Lap(1/eps_c)``
   (:func:`~dpfair.classification.blind_table.released_positive_count`; sensitivity 1 under replace-one-row);
2. the constant is the label the released count and the table's *unclipped* totals together say is the majority
   (:func:`~dpfair.classification.blind_table.released_constant_rule`: post-processing of the two releases);
3. the fit falls back to that constant when the LP's rule is constant, or when its error gain over the constant is
   within two standard deviations of the gain's noise plus a share of what the noise can add to the gain of a rule
   chosen on it (:func:`constant_fallback`, :data:`OPTIMISM_FACTOR`).

Under the attribute relation the labels are public and nothing here runs; nor with the paper's binary predictions
(``score_bins=None``) or at ``epsilon = inf``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from dpfair._warnings import find_stack_level
from dpfair.classification._budget_warnings import SmallBudgetWarning
from dpfair.classification.blind_table import released_constant_rule
from dpfair.privacy.relations import REPLACE

#: The fallback's margin, in standard deviations of the noise of the LP's error gain over the constant.
GAIN_MARGIN_SD = 2.0

#: The share of the noise's largest possible favour to the LP's rule charged on top of the margin.  The rule is
#: chosen on the same noisy table its gain is read from, so the gain is optimistic: over the rules the LP may pick,
#: the noise adds at most ``sum_ka |p - p0|_ka |e_ka1 - e_ka0|`` to it, of expectation ``1.5 b sum |p - p0|`` (two
#: Laplace cells of scale ``b`` per ``(k, a)``); :func:`constant_fallback` charges ``OPTIMISM_FACTOR`` of ``b sum |p -
#: p0|``.  On the fairness suite's 1,000-row task (``DPFairClassifier``, whole records, the attribute at prediction;
#: seeded draws of 5 splits; with the count of :data:`COUNT_TARGET_SD`) the share of 5-split medians above the
#: constant + 0.005, without -> 0.75 -> 1.5: ``epsilon`` 0.5 1.7 % -> 0.5 % -> 0.3 % (600 draws), 1 0.7 % -> 0.3 % ->
#: 0 % (300), 2 0 % throughout (200), at a mean median error of 0.4417 / 0.4415 / 0.4415, 0.4365 / 0.4397 / 0.4409 and
#: 0.3885 / 0.3917 / 0.3971 (the constant 0.441): 1.5 leaves nearly nothing at ``epsilon = 1`` on 667 rows.  With
#: 0.75 on the other tasks (paired, error / held-out EO): nine groups 0.2974 / 0.165 -> 0.3014 / 0.113 at
#: ``epsilon = 1`` and 0.3156 -> 0.3229 (the constant) at 0.5, the empty group 0.3884 -> 0.3929 at 0.5 (equal at 1),
#: Communities 0.2997 -> 0.3009 at 1; Adult, ACS and Law School by race unchanged (30 draws: ``b`` is 0.0003 there).
OPTIMISM_FACTOR = 0.75


#: The standard deviation (a fraction of the rows) of the released share of positive rows this post-processor aims
#: at, and the most of its table's epsilon the count may take (:func:`count_epsilon`).  The constant it falls back
#: to is the label that share says is the majority.  With the count (then 0.0125, at most 0.7) the share of seeds
#: whose 5-split median erred above the constant + 0.005 on the fairness suite's 1,000-row task had fallen from 0.35 /
#: 0.23 (DPFairClassifier / the post-processor, whole records, ``epsilon`` 0.5, 5 splits x 40 seeds) to 0.07 / 0.05.
#: What was left: on that task (667 training rows, 44.8-47.4 % positive; ``DPFairClassifier`` with whole records
#: private and the attribute at prediction, the post-processor at 0.6 of ``epsilon``) the fits behind such medians were
#: a fallback to the minority label, and a rule kept because its gain was measured against the minority constant (a
#: wrong constant errs 0.09-0.17 more held out on one split, which moves the median of five).  Share of seeded draws
#: (5 splits each) above the constant + 0.005, before (0.0125, 0.7) -> after (0.006, 0.9): ``epsilon`` 0.5 4.0 % (200
#: draws) -> 1.7 % (600; 2.0 % of 300), 1 3.5 % (200) -> 0.7 % (300), 2 0 % -> 0 % (200); the mean median error
#: 0.4404 -> 0.4417, 0.4312 -> 0.4365, 0.3881 -> 0.3885 (the constant 0.441).  On the paired draws of the other tasks
#: (error / held-out EO, means of 5-split medians) at ``epsilon`` 1: Adult by race 0.1917 / 0.1681 -> 0.1917 / 0.1683,
#: Law School 0.4577 / 0.0642 -> 0.4577 / 0.0644, ACS by race 0.2913 / 0.0684 -> 0.2913 / 0.0685 (30 draws; the count
#: takes at most 0.018 of epsilon on 13,000 rows), the empty group 0.3220 / 0.0384 -> 0.3220 / 0.0397, nine groups
#: 0.2976 / 0.1663 -> 0.2974 / 0.1647, Communities 0.2984 -> 0.2997; at 0.5 the empty group 0.3855 -> 0.3884, nine
#: groups 0.3148 -> 0.3156, Communities 0.3023 -> 0.3031, Law School 0.4666 -> 0.4665 (40 draws); none above the
#: constant + 0.005.  Tried on the same draws and not kept: the gain read off the unclipped table with its sampling
#: error added to the margin at 3 standard deviations (0.7 % at 0.5 and 1, but 0.411 against 0.388 at ``epsilon =
#: 2``); a margin of 3 or 4 standard deviations alone (2-4 %).
COUNT_TARGET_SD = 0.006
COUNT_MAX_SHARE = 0.9


def count_epsilon(n_rows: int, epsilon: float) -> float:
    """The positive-label count's epsilon, taken from the table's ``epsilon``: a function of the public ``m``.

    ``min(COUNT_MAX_SHARE epsilon, sqrt(2) / (COUNT_TARGET_SD m))``: the count's Laplace noise has standard
    deviation ``sqrt(2) / epsilon_count`` rows, so the released share of positive rows has standard deviation
    :data:`COUNT_TARGET_SD` (0.006) unless the cap binds (where ``m epsilon`` is so small that the table rarely beats
    the constant, and the constant must be the right one).  The figures behind both constants are at
    :data:`COUNT_TARGET_SD`.  0 at ``epsilon = inf``.

    Parameters
    ----------
    n_rows : int
        The number of training rows ``m`` (public).
    epsilon : float
        The post-processor's epsilon (> 0).

    Returns
    -------
    float
        The count's epsilon (``>= 0``, at most ``COUNT_MAX_SHARE * epsilon``).
    """
    if math.isinf(epsilon):
        return 0.0
    return float(min(COUNT_MAX_SHARE * epsilon, math.sqrt(2.0) / (COUNT_TARGET_SD * max(n_rows, 1))))


def whole_row_split(relation: str, score_bins: int | None, n_rows: int, epsilon: float) -> tuple[float, float]:
    """``(eps_t, eps_c)``: the table's and the count's epsilons, summing to ``epsilon``.

    The count is released only under whole-row replacement with score bins at a finite ``epsilon``; otherwise
    ``(epsilon, 0)`` and the fit is the one before this module (the paper's Algorithm 1 and the attribute relation are
    unchanged bit for bit).

    Parameters
    ----------
    relation : str
        The post-processor's neighbouring relation (``"replace"`` or ``"change_attribute"``).
    score_bins : int or None
        The resolved number of score bins (``None``: the paper's binary predictions).
    n_rows : int
        ``m`` (public).
    epsilon : float
        The post-processor's epsilon.

    Returns
    -------
    epsilon_table : float
        The table's share.
    epsilon_count : float
        The count's share (0 when no count is released).
    """
    if relation != REPLACE or score_bins is None or math.isinf(epsilon):
        return epsilon, 0.0
    epsilon_count = count_epsilon(n_rows, epsilon)
    return epsilon - epsilon_count, epsilon_count


def constant_fallback(p: np.ndarray, objective: float, q_valid: np.ndarray, q_tilde: np.ndarray, count: float,
                      n_rows: int, epsilon_table: float,
                      epsilon_count: float) -> tuple[np.ndarray, float, str | None, float | None]:
    """The LP's rule, or the released constant when the table does not show it beats the constant.

    The constant ``p0`` is :func:`~dpfair.classification.blind_table.released_constant_rule` on the table's cells
    (every (bin, group) pair a cell).  The LP's error gain ``err~(p0) - err~(p) = sum_ka (p - p0)_ka (q~_ka1 - q~_ka0)``
    reads two Laplace cells of variance ``2 b^2`` (``b = 2 / (m eps_t)``) per ``(k, a)``, so its noise has standard
    deviation ``2 b sqrt(sum (p - p0)^2)``; the fit keeps ``p`` only when the gain (read off the table the LP read)
    exceeds :data:`GAIN_MARGIN_SD` of them plus ``OPTIMISM_FACTOR b sum |p - p0|`` (:data:`OPTIMISM_FACTOR`: the LP
    chose ``p`` on that noise, which favours it).  A constant ``p`` (the LP found nothing better than a constant, or
    HiGHS failed) is replaced by ``p0``: the choice between the two constants is the label share, which the count
    measures far better than the clipped table.
    Every input is released or public, so this is post-processing.

    Parameters
    ----------
    p : ndarray of shape (n_bins, n_groups)
        The LP's rule.
    objective : float
        Its error under ``q_valid``.
    q_valid : ndarray of shape (n_bins, n_groups, 2)
        The released table clipped to valid frequencies (what the LP read).
    q_tilde : ndarray of shape (n_bins, n_groups, 2)
        The released table as released.
    count : float
        The released positive-label count.
    n_rows : int
        ``m`` (public).
    epsilon_table, epsilon_count : float
        The two releases' epsilons (finite, > 0).

    Returns
    -------
    p : ndarray of shape (n_bins, n_groups)
        The rule kept.
    objective : float
        Its error under ``q_valid``.
    reason : str or None
        Why the constant was kept (``None``: the LP's rule was).
    epsilon_factor : float or None
        The factor on the epsilon at which the observed gain would clear the margin (``None``: no gain was seen).
    """
    flat, error = released_constant_rule(q_valid.reshape(-1, 2), q_tilde, count, n_rows, epsilon_table,
                                         epsilon_count)
    p0 = flat.reshape(p.shape)
    if np.ptp(p) == 0:
        return p0, error, "the linear program's rule is a constant", None
    scale = 2.0 / (n_rows * epsilon_table)  # each cell's Laplace scale b
    noise_sd = 2.0 * scale * math.sqrt(float(((p - p0) ** 2).sum()))
    optimism = OPTIMISM_FACTOR * scale * float(np.abs(p - p0).sum())  # the LP chose p on this very noise
    gain = error - objective
    threshold = GAIN_MARGIN_SD * noise_sd + optimism  # both scale as 1 / epsilon_table: the factor is on it
    if gain <= threshold:
        factor = threshold / gain if gain > 0 else None
        return p0, error, "the rule's error gain over the constant is within the noise of the released table", factor
    return p, objective, None, None


def epsilon_for_table(table_epsilon: float, n_rows: int) -> float:
    """The smallest post-processor epsilon whose table share (after :func:`count_epsilon`) is ``table_epsilon``.

    The table gets ``epsilon - count_epsilon(m, epsilon) = max((1 - COUNT_MAX_SHARE) epsilon, epsilon - c)`` with
    ``c = sqrt(2) / (COUNT_TARGET_SD m)``, increasing in ``epsilon``; so the answer is
    ``min(table_epsilon / (1 - COUNT_MAX_SHARE), table_epsilon + c)``.  Public quantities only.

    Parameters
    ----------
    table_epsilon : float
        The table's epsilon wanted (> 0).
    n_rows : int
        ``m`` (public).

    Returns
    -------
    float
        The post-processor's epsilon.
    """
    count_cap = math.sqrt(2.0) / (COUNT_TARGET_SD * max(n_rows, 1))
    return float(min(table_epsilon / (1.0 - COUNT_MAX_SHARE), table_epsilon + count_cap))


def warn_fallback(reason: str, factor: float | None, epsilon_table: float, n_rows: int) -> None:
    """The ``SmallBudgetWarning`` of a fit that fell back to the released constant (no private value printed).

    Parameters
    ----------
    reason : str
        Why (:func:`constant_fallback`).
    factor : float or None
        The factor on the table's epsilon at which the observed gain would clear the margin (``None``: unknown).
    epsilon_table : float
        The table's epsilon (public); the hint names the post-processor's epsilon that gives the table ``factor``
        times it (:func:`epsilon_for_table`).
    n_rows : int
        ``m`` (public).
    """
    hint = "A larger epsilon for the post-processor"
    if factor is not None and math.isfinite(epsilon_table) and math.isfinite(factor):
        hint = f"An epsilon of about {epsilon_for_table(epsilon_table * factor, n_rows):.2g} for the post-processor"
    warnings.warn(
        f"{reason}: the released table says this budget buys no fair signal over the constant, so the fitted rule is "
        f"the constant classifier the released label count picks (equal rates in every group). {hint}, more rows, or "
        "a better base classifier would help.", SmallBudgetWarning, stacklevel=find_stack_level())
