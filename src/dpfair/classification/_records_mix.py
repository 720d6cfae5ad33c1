"""Whole records private and blind, two or more groups noisy: a share of the released constant mixed into the rule.

When :func:`~dpfair.classification._blind_records.records_gamma` takes its tight tolerance, two or more declared
groups' rates are noisy in the released table, and such groups are often *unmeasured* (their constraints bind
nothing).  On the fairness suite's Adult by race (five groups; American Indian and Other, 11-21 held-out positives
each, were unmeasured in every fit) the held-out equalized-odds difference of a split is then mostly those groups'
held-out true-positive rates, which the program cannot control.  Mixing the best constant into the rule,
``p' = (1 - lambda) p + lambda c``, moves every group's rates towards the same constant: every difference of rates
between two groups, measured or not, on the training rows and on any other rows, is multiplied by exactly
``1 - lambda``, and the error becomes ``(1 - lambda) err + lambda err_c``.

**Privacy.**  The constant ``c`` is the label of larger released mass in the released (unclipped) table,
``argmax_y sum_{cell, a} q~[cell, a, y]``, and ``lambda`` depends on the released tolerance level only: the mix is
a function of quantities the post-processor already released, so it is post-processing and the fit's privacy
(``epsilon``, whole-row replacement, composed with the private base model as
:class:`~dpfair.classification.DPBlindPostProcessor` states) is unchanged.  No new release, no new sensitivity.

**Figures** (fairness suite at ``epsilon = 1``, ``DPFairClassifier`` whole records blind, 5 splits x 40 seeds,
paired: the same fits, the mix applied to their held-out expected predictions, exact for a constant of 0 or 1;
draws whose 5-split medians meet u >= 0.3 and EO <= max(0.10, ExponentiatedGradient's + 0.03); median error / EO /
u): Adult by race, lambda 0 / 0.1 / 0.15 / 0.2 / 0.25 / 0.3: 26 / 30 / 31 / 28 / 26 / 23 of 40 (0.220 / 0.094 /
0.44, 0.223 / 0.085 / 0.40, 0.224 / 0.083 / 0.38, 0.225 / 0.078 / 0.36, 0.227 / 0.073 / 0.34, 0.228 / 0.068 /
0.32); at 0.15, 7 draws met only with the mix, 2 only without.  Fitted with the mix in ``DPFairClassifier`` (the
same seeds): 26 -> 31 of 40, the same figures.  Law School by race (20 seeds): 19 of 20 before and after, bit for
bit (its few tight fits fell back to the constant).  No other suite task takes the tight tolerance at ``epsilon =
1`` (the sexes 8 of 8, error / EO unchanged).  At ``epsilon = 0.5`` (8 seeds) the constant rule holds before and
after (Adult by race error 0.228 -> 0.231 against the constant's 0.247, Law School 0.474 -> 0.478 against 0.502;
EO 0.083 -> 0.070 and 0.039 -> 0.034), and it cannot be broken by the mix:
``(1 - lambda) err + lambda err_c <= max(err, err_c)``.  Held-out tasks (8 seeds): bar passage and weak signal
unchanged (EO 0.000; they fall back to the constant in 97 % and 62 % of fits).  Tried on Adult by race and not
kept (40 seeds, the same draws): a tighter tolerance 0.035 instead of 0.04, 27 of 40 (0.224 / 0.082 / 0.38: it
shrinks the measured groups' differences only, the unmeasured ones stay); the membership model's share 0.3 instead
of 0.15, 23 of 35 against 26 of 40.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpfair.classification._blind_records import RECORDS_TIGHT_GAMMA

__all__ = ["RECORDS_TIGHT_CONSTANT_MIX", "records_constant_mix", "released_majority"]

#: The share of the released constant mixed into the blind rule under whole-row privacy when the tolerance is the
#: tight one (module docstring).
RECORDS_TIGHT_CONSTANT_MIX = 0.15


def released_majority(q_tilde: np.ndarray) -> int:
    """The label (0 or 1, an index into ``classes_``) of larger released mass: post-processing of the table.

    Parameters
    ----------
    q_tilde : ndarray of shape (n_cells, n_groups, 2)
        The released (unclipped) table.

    Returns
    -------
    int
        ``argmax_y sum_{cell, a} q~[cell, a, y]`` (0 on a tie).
    """
    totals = np.asarray(q_tilde, dtype=float).sum(axis=(0, 1))
    return int(totals[1] > totals[0])


def records_constant_mix(inner: Any) -> tuple[float, int]:
    """``(lambda, c)``: the share of the constant ``c`` mixed into a fitted whole-row blind rule.

    ``lambda`` is :data:`RECORDS_TIGHT_CONSTANT_MIX` when the post-processor chose its tight default tolerance
    (``gamma`` left at ``None``, ``gamma_`` :data:`~dpfair.classification._blind_records.RECORDS_TIGHT_GAMMA`), did
    not fall back to the constant and had a finite epsilon; else 0.  Released quantities only.

    Parameters
    ----------
    inner : DPBlindPostProcessor
        The fitted post-processor (whole rows private).

    Returns
    -------
    tuple of (float, int)
        The share and the constant's index into ``classes_``.
    """
    tight = (inner.gamma is None and inner.gamma_ == RECORDS_TIGHT_GAMMA and not inner.fallback_
             and not math.isinf(float(inner.epsilon)))
    if not tight:
        return 0.0, 0
    return RECORDS_TIGHT_CONSTANT_MIX, released_majority(inner.noisy_frequencies_)
