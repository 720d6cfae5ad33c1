"""Fair classification with a private sensitive attribute (Jagielski et al. 2019).

Privacy here protects the sensitive attribute A of every training row; features X and labels Y are
public, as in the paper.

* :class:`DPEqualizedOddsPostProcessor`: Algorithm 1, differentially private equalized-odds
  post-processing (Hardt et al.'s LP on Laplace-noised confusion statistics, with slack).
* :class:`DPExponentiatedGradient`: the private oracle learner (exponentiated gradient over a noisy
  auditor). By default its least-squares oracle works from cell sums released once
  (``oracle="statistics"``); ``oracle="paper"`` is Algorithm 3 with Subroutine 2 exactly.
* :class:`DPFairClassifier`: the recommended entry point: it chooses the mechanism from what is declared (what is
  protected, whether the attribute is known at prediction, the groups, epsilon) and fits it with one charge.
* :class:`PublicBaseClassifier`: the non-private score :class:`DPFairClassifier` post-processes blind when only the
  attribute is private (a logistic regression or gradient-boosted trees, chosen on a held-out part of the public
  ``(X, y)``).
* :class:`DPBlindPostProcessor`: attribute-blind post-processing (after Xian, Yin and Zhao 2023): a randomized
  rule on the base classifier's score and a private model of group membership, chosen by an LP on a private
  table; ``predict`` needs no sensitive attribute.
* :class:`FairnessConstraint` and its subclasses :class:`EqualizedOdds`, :class:`DemographicParity`,
  :class:`TruePositiveRateParity` (:mod:`dpfair.classification.constraints`): the constraint the
  reductions play, owning its violations and sensitivities; :func:`make_constraint` builds one by name.
* :class:`SmallBudgetWarning`: raised by :class:`DPExponentiatedGradient` when a released
  noise-to-signal ratio (of the oracle's statistics or of the auditor's violation) exceeds 1.
* :class:`VacuousConstraintWarning`: raised by :class:`DPEqualizedOddsPostProcessor` when a declared
  group's constraint binds nothing (too little of it in the noisy table, e.g. a group without rows).
* :class:`FairnessSlackWarning`: raised by :class:`DPEqualizedOddsPostProcessor` when the fairness it can
  guarantee after the noise's slack exceeds twice the requested ``gamma``.
* :class:`ConstantFallbackWarning` (a :class:`SmallBudgetWarning`): raised by :class:`DPExponentiatedGradient` when its
  budget bought no signal and the fitted classifier is the best constant one
  (:mod:`~dpfair.classification.reductions`).
* :class:`EmptyGroupWarning`: raised by the private classifiers when a declared group has no row, or too few for the
  noise, in the released counts (its constraints are dropped).
"""

from dpfair.classification._group_evidence import EmptyGroupWarning
from dpfair.classification._postprocessing_guarantee import FairnessSlackWarning
from dpfair.classification.blind_postprocessing import DPBlindPostProcessor
from dpfair.classification.constraints import (
    DemographicParity,
    EqualizedOdds,
    FairnessConstraint,
    TruePositiveRateParity,
    make_constraint,
)
from dpfair.classification.postprocessing import DPEqualizedOddsPostProcessor, VacuousConstraintWarning
from dpfair.classification.recommended import DPFairClassifier, PublicBaseClassifier
from dpfair.classification.reductions import ConstantFallbackWarning, DPExponentiatedGradient, SmallBudgetWarning

__all__ = [
    "ConstantFallbackWarning",
    "DPBlindPostProcessor",
    "DPEqualizedOddsPostProcessor",
    "DPExponentiatedGradient",
    "DPFairClassifier",
    "DemographicParity",
    "EmptyGroupWarning",
    "EqualizedOdds",
    "FairnessConstraint",
    "FairnessSlackWarning",
    "PublicBaseClassifier",
    "SmallBudgetWarning",
    "TruePositiveRateParity",
    "VacuousConstraintWarning",
    "make_constraint",
]
