"""Post-processing of :class:`~dpfair.classification.DPEqualizedOddsPostProcessor`'s released table before its LPs.

Three steps that read the released table ``q~[k, a, y]`` (and public facts) only: the projection onto the public
``(bin, label)`` totals (``public_totals=True``), the choice of the anchor, and the score-bin LP's slack.

**The public totals.**  Under the attribute relation (Jagielski et al. 2019, Section 2.3: ``X`` and ``y`` public,
neighbours differ in one row's ``A``) the table's totals over the groups, ``sum_a q_hat[k, a, y]``, are the joint
frequencies of the base's bin (or prediction) and the label: a function of ``(X, y)`` only, public.  The noisy table
is not consistent with them; :func:`projected_to_totals` moves it onto them (the least-squares projection: every cell
of ``(k, y)`` gets ``-(sum_a q~[k, a, y] - t[k, y]) / |A|``), which takes ``1 / |A|`` of every cell's noise variance
away and leaves the noise of the groups' cells summing to 0.  The totals are counted from ``(X, y)`` without the
groups (not summed from the exact table, whose floating-point rounding depends on how the rows split among the
groups).  A function of the release and of public data:
post-processing, the privacy is unchanged.  It is refused where the labels are private (a private base fitted here,
whole-row privacy), since the exact totals would read them.

Measured at ``epsilon = 1`` on the fairness suite (:class:`~dpfair.classification.DPFairClassifier`'s configuration,
attribute private and used at prediction; paired seeded draws, 5 splits; the share of draws whose 5-split medians
meet u >= .8 and held-out EO <= ThresholdOptimizer's + .03), before -> after.  Communities (two groups, one with
about 80 training positives) 87 -> 94 % of 100 draws, the 1,000-row task 81 -> 80 %; on the training rows the
rule's equalized-odds difference .029 -> .026 and .044 -> .040 (medians), the held-out error .158 -> .156 and .262 ->
.261.  With the constant mixed in (``constant_mix = 0.12``, ``_postprocessing_mix``) 95 -> 98 % and 94 -> 93 %; with
``DPFairClassifier`` itself on 200 draws (two sets of 100 seeds) 187 -> 190 and 188 -> 191, the smallest utility
share over the draws .81 -> .84 and .80 -> .82.  On the seven larger tasks (20 draws each, unmixed) it helped none:
Adult by race 95 -> 90 %, Law School by race 100 -> 95 % (one draw's utility share .76; the smallest .82 before),
the nine groups, the empty group, ACS (both) and Adult by sex 100 -> 100 %, medians within .003; so
``DPFairClassifier`` sets it only below 2,000 rows, with the mix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfair.classification._postprocessing_lp import _HIGHS_INF
from dpfair.classification._postprocessing_score_lp import resolution_tolerance

__all__ = ["check_public_totals", "projected_to_totals"]


def check_public_totals(value: Any, private_labels: bool) -> bool:
    """``public_totals`` as a bool; refused (``ValueError``) where the labels are private (``private_labels``)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"public_totals must be True or False, got {value!r}.")
    if value and private_labels:
        raise ValueError(
            "public_totals=True reads the exact (bin, label) totals of the training rows, which are private when a "
            "private base model is fitted here (whole-row privacy): pass public_totals=False, or a base fitted on "
            "public (X, y) (the attribute relation)."
        )
    return bool(value)


def projected_to_totals(q_tilde: np.ndarray, totals: np.ndarray | None) -> np.ndarray:
    """The released table moved onto the public totals over the groups (least squares); ``q_tilde`` if ``None``.

    Parameters
    ----------
    q_tilde : ndarray of shape (n_bins, n_groups, 2)
        The released table.
    totals : ndarray of shape (n_bins, 2) or None
        The exact ``sum_a q_hat[k, a, y]`` (public: a function of ``(X, y)`` under the attribute relation).

    Returns
    -------
    ndarray of shape (n_bins, n_groups, 2)
        ``q_tilde - (q_tilde.sum(axis=1) - totals) / n_groups`` in every group's column (``q_tilde`` itself when
        ``totals`` is ``None``).
    """
    if totals is None:
        return q_tilde
    excess = q_tilde.sum(axis=1, keepdims=True) - np.asarray(totals, dtype=float)[:, None, :]
    return q_tilde - excess / q_tilde.shape[1]


def _score_bin_slack(q: np.ndarray, m: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """The score-bin LP's slack (0, or 1e20 for a rate without evidence) and its widening, both ``(n_groups, 2)``.

    The widening is :func:`~dpfair.classification._postprocessing_score_lp.resolution_tolerance` (0 for column 0,
    the anchor: :func:`_anchor_order` put the group of largest released mass there).
    """
    mass = q.sum(axis=0)
    slack = np.where(np.minimum(mass, mass[:1]) > 0, 0.0, _HIGHS_INF)
    slack[0] = 0.0
    return slack, np.where(slack > 0, 0.0, resolution_tolerance(q, m, epsilon))


def _anchor_order(q_tilde: np.ndarray) -> np.ndarray | None:
    """The groups' order with the anchor first: the group of largest released mass, then the others as declared.

    Jagielski et al. write every constraint against group 0 and call "the choice of group 0 as an anchor
    [...] arbitrary and without loss of generality" (Section 2.1); LP~ (1)'s slack is set by ``min{q~_ay, q~_0y}``
    and the robust snap charges every group but the anchor the noise of its cells, so the least noisy anchor is the
    largest group.  A function of the released
    table ``q_tilde`` only (post-processing: the privacy is unchanged).  ``None`` when the first declared group is
    already the largest (ties keep it): the identity, so those fits keep their numbers bit for bit.
    """
    mass = q_tilde.sum(axis=(0, 2))
    anchor = int(np.argmax(mass)) if mass.size > 1 else 0
    if anchor == 0:
        return None
    return np.array([anchor] + [a for a in range(mass.size) if a != anchor], dtype=np.int64)
