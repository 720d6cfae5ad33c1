"""Which declared groups the released counts give evidence about, and the warning for those they do not.

A declared group may hold no training row, or too few for the noise of a private release: its released (noisy)
count is then indistinguishable from zero.  Every rate of such a group is a ratio of two noise draws, and a fairness
constraint on it binds nothing real while its noise, divided by a denominator clipped near zero, can dominate a whole
fit (an empty declared group used to turn :class:`~dpfair.classification.DPExponentiatedGradient` on Adult into the
constant classifier).  The rule here decides, from released counts and public noise scales only (post-processing,
no privacy cost), which (group, event) cells carry evidence; constraints on the others are dropped and
:class:`EmptyGroupWarning` names their declared groups.

**The rule.** A cell has evidence when its released count is at least ``z * count_sd``, with ``count_sd`` the
standard deviation of the count's noise (public: from the mechanism's declared scale) and
``z = Phi^-1(1 - beta / n_cells)``, the one-sided normal quantile with a Bonferroni correction over the
``n_cells`` cells: an empty cell (exact count 0) is dropped with probability at least ``1 - beta / n_cells`` under
Gaussian noise (the statistics oracle's), and a cell of ``2 z count_sd`` rows or more is kept with the same
probability.  Without noise (``count_sd = 0``) a cell has evidence when it holds a row.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from dpfair._warnings import find_stack_level

__all__ = ["EmptyGroupWarning", "GroupEvidence", "VacuousConstraintWarning", "evidence_threshold", "group_evidence",
           "warn_empty_groups"]


class VacuousConstraintWarning(UserWarning):
    """A fairness constraint of LP~ (1) binds nothing in this fit (raised by ``DPEqualizedOddsPostProcessor.fit``).

    The noisy table holds too little mass for a declared group (or for the anchor, group 0) and a label, so the
    slack ``4 ln(4|A|/beta) / (min{q~_ay, q~_0y} m epsilon)`` is at least 1 (undefined, i.e. infinite, when a
    noisy ``q~_ay`` is 0): a rate difference is at most 1, so the constraint is vacuous.  Or HiGHS found no
    optimum and the best constant classifier (fair in every group) was returned.  The fit is still valid and
    private (everything is read off the released table); the message names the declared group, never a value.
    """


class EmptyGroupWarning(VacuousConstraintWarning):
    """A declared group has no training row, or too few for the noise, in the released counts.

    Raised by the private classifiers (:class:`~dpfair.classification.DPExponentiatedGradient`,
    :class:`~dpfair.classification.DPEqualizedOddsPostProcessor`) once per ``fit``, naming the declared groups
    (never a count): their fairness constraints bind nothing and are dropped, so the fitted classifier is not held
    fair for them.  Decided from released counts and public noise scales only (:func:`group_evidence`).  Declare
    only the groups the data hold, merge small groups, or use a larger ``epsilon``.
    """


def evidence_threshold(count_sd: float, n_cells: int, beta: float) -> float:
    """The released count a cell needs to carry evidence: ``Phi^-1(1 - beta / n_cells) count_sd`` (module docstring).

    Parameters
    ----------
    count_sd : float
        Standard deviation of the noise of one released count (0 without noise).
    n_cells : int
        Number of cells tested together (Bonferroni correction).
    beta : float
        Failure probability in (0, 1).

    Returns
    -------
    float
        The threshold (0 without noise: then a cell needs a count above 0).
    """
    if not count_sd > 0:
        return 0.0
    return float(norm.isf(beta / max(int(n_cells), 1)) * count_sd)


@dataclass(frozen=True, eq=False)
class GroupEvidence:
    """Which constraints a fit keeps, from its released counts.

    Parameters
    ----------
    keep : ndarray of bool, shape ``constraint.violation_shape(n_groups)``
        The constraints kept (both cells they compare carry evidence).
    denominators : ndarray of shape (n_groups, 2)
        The released denominators, with every cell outside the kept constraints set to ``fill`` (a public
        number): the noise scales and sensitivities computed from them ignore the dropped cells.
    dropped_groups : list of int
        The declared groups (indices) with at least one dropped constraint.
    """

    keep: np.ndarray
    denominators: np.ndarray
    dropped_groups: list[int]

    @property
    def any_dropped(self) -> bool:
        """Whether a constraint was dropped."""
        return not bool(self.keep.all())


def group_evidence(constraint: Any, counts: np.ndarray, denominators: np.ndarray, count_sd: float, beta: float,
                   fill: float) -> GroupEvidence:
    """Decide which constraints of ``constraint`` the released ``counts`` support (post-processing).

    An event's count pools its labels' cells (noise sd ``sqrt(k) count_sd`` for ``k`` labels).  Against group 0,
    the constraints ``+-(rate_(a,e) - rate_(0,e))`` need evidence in cells ``(a, e)`` and ``(0, e)``; against the
    overall rate (whose denominator is public) only in ``(a, e)``.

    Parameters
    ----------
    constraint : FairnessConstraint
        The constraint played.
    counts : ndarray of shape (n_groups, 2)
        Released (noisy) counts per (group, label) cell.
    denominators : ndarray of shape (n_groups, 2)
        The released denominators the game uses (``counts`` clipped below).
    count_sd : float
        Standard deviation of one released count's noise (0 without noise).
    beta : float
        Failure probability of the rule (Bonferroni over the cells).
    fill : float
        Public denominator given to the cells that no kept constraint reads (e.g. the number of rows ``m``).

    Returns
    -------
    GroupEvidence
    """
    n_groups = counts.shape[0]
    pooled = max(len(event) for event in constraint.events)
    event_counts = constraint._to_events(np.asarray(counts, dtype=float))
    threshold = evidence_threshold(count_sd * np.sqrt(pooled), event_counts.size, beta)
    has = event_counts > threshold  # (n_groups, E)
    if constraint.reference == "group0":
        rows = has[1:] & has[:1]
        used = np.vstack([rows.any(axis=0, keepdims=True), rows])  # group 0's cell is read by any kept row
    else:
        rows = used = has
    keep = np.repeat(rows, 2, axis=1)  # columns (e, +), (e, -)
    # the cells of every event some kept constraint reads keep their released denominator
    cell_used = np.zeros((n_groups, 2), dtype=bool)
    for e, labels in enumerate(constraint.events):
        for label in labels:
            cell_used[:, label] = used[:, e]
    kept_denominators = np.where(cell_used, denominators, float(fill))
    first = 1 if constraint.reference == "group0" else 0
    dropped = sorted({int(a) + first for a in np.nonzero(~rows.all(axis=1))[0]})
    if constraint.reference == "group0" and not has[0].all():
        dropped = [0, *[a for a in dropped if a != 0]]
    return GroupEvidence(keep=keep, denominators=kept_denominators, dropped_groups=dropped)


def warn_empty_groups(groups: np.ndarray, dropped: list[int], estimator: str, epsilon: float, fix: str) -> None:
    """One :class:`EmptyGroupWarning` naming the declared groups whose constraints were dropped (never a count).

    Parameters
    ----------
    groups : ndarray
        The declared groups.
    dropped : list of int
        Indices of the groups with a dropped constraint.
    estimator : str
        The estimator's name, for the message.
    epsilon : float
        The fit's epsilon.
    fix : str
        What to do (the last sentence of the message).
    """
    if not dropped:
        return
    names = ", ".join(repr(label) for label in np.asarray(groups)[dropped].tolist())
    at = "" if epsilon == float("inf") else f" at epsilon={epsilon:g}"
    warnings.warn(
        f"{estimator}: declared group(s) {names} have no training row, or too few for the noise{at}, in the released "
        f"counts: their fairness constraints bind nothing and are dropped, so the fitted classifier is not held fair "
        f"for them (the other groups' constraints hold as usual). {fix}",
        EmptyGroupWarning,
        stacklevel=find_stack_level(),
    )
