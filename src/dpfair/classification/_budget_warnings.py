"""The warnings of a private classifier whose budget buys no signal (shared by the reductions and the post-processors).

They live below both families: :mod:`dpfair.classification.reductions` imports the post-processor (its randomized
labels), and the post-processors raise these warnings when they fall back to the best constant classifier, so
defining them with the reductions would make the post-processors import their own importer.
"""

from __future__ import annotations

__all__ = ["ConstantFallbackWarning", "SmallBudgetWarning"]


class SmallBudgetWarning(UserWarning):
    """The privacy noise dominates the signal of the game (see ``DPExponentiatedGradient.noise_to_signal_``).

    Raised once per ``fit`` when a released noise-to-signal ratio exceeds 1
    (:func:`~dpfair.classification.reductions._oracle.noise_to_signal`, from released and public quantities only):
    the oracle's (the expected norm of the noise on its normal equations' right-hand side, the paper's per round
    or the statistics oracle's at the released multipliers, against the norm of the unconstrained right-hand
    side ``[X, 1]^T (2y - 1)``) or the Auditor's (the standard deviation of its averaged violation estimate
    against ``max(gamma, 0.01)``, the resolution it must reach).
    :class:`~dpfair.classification.DPEqualizedOddsPostProcessor` spends the budget once and may then be the
    better choice.
    """


class ConstantFallbackWarning(SmallBudgetWarning):
    """The private budget bought no signal: the fitted classifier is the best constant one.

    Raised by :class:`~dpfair.classification.DPExponentiatedGradient` (A-blind, finite ``epsilon``) when the output
    mixture's pessimistic primal value, computed from released and public quantities only, is not below the error of
    the best constant classifier (:mod:`~dpfair.classification.reductions._fallback`).  The message gives the
    ``epsilon`` (or the factor of rows) that would help, and the released noise-to-signal ratios.  It is the
    :class:`SmallBudgetWarning` of such a fit (raised instead of the generic one); ``fallback_ == "constant"`` says
    the same on the fitted estimator.
    """
