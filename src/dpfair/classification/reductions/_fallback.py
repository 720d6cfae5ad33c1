"""Never worse than the constant: when :class:`~dpfair.classification.DPExponentiatedGradient`'s budget buys no signal.

**Why.** With few rows, many groups or a small ``epsilon`` the noise of the game's releases can dominate: the
multipliers follow the Auditor's noise, the Learner's costs the noise of the released cell sums, and the output
mixture can err *more* than a classifier that predicts one label for every row (on a 1,000-row, two-group task,
.61 against .30 for the constant).  Privacy cannot be bought back after the charge, but the choice of what to output
can still be made from released quantities.

**The rule (post-processing of the release, no further charge).** A-blind (the default), every quantity below is a
function of public ``X``, ``y`` and released values:

* the output mixture ``Q`` (the chosen prefix of best responses ``h_t(x) = 1{[x, 1] . w_t > 0}``, the ``w_t``
  released) has the training error ``err(Q)``: public, ``y`` being public;
* the best constant classifier ``c`` (predict the majority label of the public ``y``) has equal rates in every
  group, so every rate-parity constraint holds exactly (``r_k(c) = -gamma <= 0``) without reading a group, and its
  error ``err(c) = min(n_0, n_1) / m`` is public;
* the fit outputs ``c`` when ``err(Q) + 2 sqrt(p / m) >= err(c)``, ``p`` the mean disagreement
  ``(1/m) sum_i |Q(x_i) - c|`` (public too): ``2 sqrt(p / m)`` is two standard errors of the difference of the two
  errors over ``m`` rows (each row's difference is in ``[-1, 1]`` and non-zero only where they disagree), so ``Q`` is
  kept only when its advantage over the constant exceeds what a sample of ``m`` rows can tell apart from zero.

Why not a value that weighs the violations too: the output's pessimistic primal value
``err(Q) + B max(0, r~(Q) + margin)`` (what the best-prefix selection minimizes) carries ``B`` times the noise margin
of the released violations, which exceeds ``err(c)`` on every task measured at ``epsilon <= 2`` except Adult, although
the classifier's error there is well below the constant's (ACS income by race at ``epsilon = 2``: .29 held out against
.38); it would return the constant where the game has learnt something.  The violations are still reported by the
:class:`~sklearn.exceptions.ConvergenceWarning` of the fit.

:class:`ConstantFallbackWarning` says so, with the estimated ``epsilon`` at which the margin would leave ``Q``
below the constant (the margin scales as ``1 / mu`` for the Gaussian statistics oracle, ``1 / epsilon`` for the
paper's Laplace oracle; the number of rows has the same effect as ``epsilon``).  A-aware
(``use_sensitive_at_test_time=True``) the training error reads the groups exactly, so this rule does not apply there:
the constant is instead one more candidate of the exponential mechanism that already chooses the best prefix (its
utility, minus its error, does not depend on ``A``: the sensitivity ``1/m`` holds), paid inside the same
``epsilon_selection_`` (:func:`best_constant`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from dpfair._warnings import find_stack_level
from dpfair.classification._budget_warnings import ConstantFallbackWarning, SmallBudgetWarning
from dpfair.classification.reductions._oracle import total_mu

__all__ = ["ConstantFallback", "ConstantFallbackWarning", "SmallBudgetWarning", "best_constant", "constant_fallback",
           "constant_weights", "epsilon_that_helps", "warn_constant_fallback"]


@dataclass(frozen=True)
class ConstantFallback:
    """The best constant classifier chosen instead of the game's output.

    Parameters
    ----------
    label : int
        The predicted label as a 0/1 code (``classes_[label]``).
    error : float
        Its training error (public).
    output_error : float
        The output mixture's training error (public A-blind).
    margin : float
        ``2 sqrt(p / m)``: two standard errors of the difference of the two errors.
    """

    label: int
    error: float
    output_error: float
    margin: float


def best_constant(y01: np.ndarray) -> ConstantFallback:
    """The best constant classifier of the public labels (predict the majority label; ties: 0), as a fallback.

    Its output error and margin are unknown (NaN): A-aware, the exponential mechanism chose it over the prefixes, whose
    errors read the groups.

    Parameters
    ----------
    y01 : ndarray of int
        The public labels (0/1).

    Returns
    -------
    ConstantFallback
    """
    m = y01.size
    positives = int(np.sum(y01))
    return ConstantFallback(label=int(positives > m - positives), error=float(min(positives, m - positives) / m),
                            output_error=math.nan, margin=math.nan)


def constant_fallback(output_error: float, output_proba: np.ndarray, y01: np.ndarray) -> ConstantFallback | None:
    """The best constant classifier when the output does not err clearly less than it, else ``None`` (module docstring).

    Parameters
    ----------
    output_error : float
        The output mixture's training error.
    output_proba : ndarray of shape (m,)
        The output mixture's probability of predicting 1 on every training row (public A-blind).
    y01 : ndarray of int
        The public labels (0/1).

    Returns
    -------
    ConstantFallback or None
    """
    m = y01.size
    positives = int(np.sum(y01))
    label = int(positives > m - positives)  # the majority label (ties: 0)
    error = min(positives, m - positives) / m
    disagreement = float(np.mean(np.abs(np.asarray(output_proba, dtype=float) - label)))
    margin = 2.0 * math.sqrt(disagreement / m)
    if output_error + margin < error:  # (NaN falls back)
        return None
    return ConstantFallback(label=label, error=float(error), output_error=float(output_error), margin=margin)


def constant_weights(label: int, n_weights: int, n_indicators: int = 1) -> np.ndarray:
    """The weights of the constant hypothesis: ``h(z) = 1{z . w > 0} = label`` for every row.

    ``z = [x, 1]`` A-blind (one indicator, the intercept); ``z = [x, onehot(a)]`` A-aware (``|A|`` indicators, one
    of which is 1 in every row).

    Parameters
    ----------
    label : int
        0 or 1.
    n_weights : int
        Length of ``z``.
    n_indicators : int, default 1
        The last ``n_indicators`` coordinates of ``z``, exactly one of which is 1 in every row.

    Returns
    -------
    ndarray of shape (1, n_weights)
        Zero weights on ``x`` and ``+1`` (predict 1) or ``-1`` (predict 0) on every indicator.
    """
    w = np.zeros((1, n_weights))
    w[0, n_weights - n_indicators:] = 1.0 if label == 1 else -1.0
    return w


def epsilon_that_helps(fallback: ConstantFallback, epsilon: float, delta: float, by_statistics: bool,
                       noise_to_signal: float) -> float | None:
    """An ``epsilon`` at which the game's released noise would no longer dominate its signal (an estimate).

    The released noise-to-signal ratio ``rho`` (the larger of the oracle's and the Auditor's,
    :func:`~dpfair.classification.reductions._oracle.noise_to_signal`) is proportional to the noise's standard
    deviation: ``1 / mu`` for the statistics oracle (:func:`~dpfair.classification.reductions._oracle.total_mu`), so the
    ``epsilon`` with ``mu(epsilon, delta) = rho mu`` brings it to 1; ``1 / epsilon`` for the paper's Laplace oracle,
    so ``rho epsilon``.  ``None`` when ``rho <= 1`` (the noise does not dominate: the hypotheses themselves do not err
    less than the constant, and no budget makes them) or is not finite.

    Parameters
    ----------
    fallback : ConstantFallback
        The fallback of the fit.
    epsilon, delta : float
        The fit's privacy parameters.
    by_statistics : bool
        Whether the statistics oracle was used.
    noise_to_signal : float
        The fit's largest released noise-to-signal ratio.

    Returns
    -------
    float or None
    """
    factor = float(noise_to_signal)
    if not (math.isfinite(factor) and factor > 1.0):
        return None
    if not by_statistics:
        return epsilon * factor
    target = factor * total_mu(epsilon, delta)
    low, high = epsilon, epsilon
    while total_mu(high, delta) < target:
        low, high = high, 2.0 * high
        if high > 1e6:
            return None
    for _ in range(40):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if total_mu(mid, delta) < target else (low, mid)
    return high


def warn_constant_fallback(fallback: ConstantFallback, classes: np.ndarray, epsilon: float, delta: float,
                           by_statistics: bool, ratios: dict[str, float]) -> None:
    """One :class:`ConstantFallbackWarning`: what was returned, why, and what budget would help.

    Every number printed is released or public (``y``, ``X`` and the released weights are public).

    Parameters
    ----------
    fallback : ConstantFallback
        The fallback of the fit.
    classes : ndarray of shape (2,)
        The labels.
    epsilon, delta : float
        The fit's privacy parameters.
    by_statistics : bool
        Whether the statistics oracle was used.
    ratios : dict
        The fit's released noise-to-signal ratios (``"oracle"``, ``"auditor"``).
    """
    helps = epsilon_that_helps(fallback, epsilon, delta, by_statistics, max(ratios.values()))
    constant = np.asarray(classes)[fallback.label].tolist()
    if helps is None:
        budget = ("the released noise does not dominate, so a larger epsilon would not help these hypotheses; more "
                  "informative features, or DPEqualizedOddsPostProcessor if the attribute may be used at prediction, "
                  "may")
    else:
        budget = (f"an epsilon of about {helps:.3g} (or about {helps / epsilon:.2g} times as many training rows) would "
                  "bring the released noise-to-signal ratio to 1; DPEqualizedOddsPostProcessor, if the attribute may be "
                  "used at prediction, spends the budget once")
    why = (f"its training error {fallback.output_error:.3g} plus two standard errors ({fallback.margin:.2g}) is not "
           f"below" if math.isfinite(fallback.output_error) else
           "the exponential mechanism of the A-aware best-prefix choice (charged inside epsilon) preferred")
    warnings.warn(
        f"at epsilon={epsilon:g} the private game's classifier does not err clearly less than a constant one: {why} "
        f"the error {fallback.error:.3g} of always predicting {constant!r}, whose rates are equal in "
        f"every group. The fitted classifier is that constant (fallback_ = 'constant'). Released noise-to-signal "
        f"ratios: oracle {ratios['oracle']:.3g}, auditor {ratios['auditor']:.3g}; {budget}.",
        ConstantFallbackWarning,
        stacklevel=find_stack_level(),
    )
