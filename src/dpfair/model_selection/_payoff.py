"""Whether a private search can pay for itself, decided from public facts before anything is spent.

:class:`~dpfair.model_selection.PrivateRandomSearch` releases one trial's model: fitted on the training side of its
split (``n_train = n - round(validation_fraction n)`` rows) at the trial's epsilon (``epsilon / 3`` for a geometric
number of trials).  The untuned estimator at the *same total epsilon* is fitted on all ``n`` rows at the whole
epsilon.  Both sizes and both epsilons are public, so the search's handicap is known before it runs: its model has
the noise of an untuned fit at the **equivalent epsilon** ``trial_epsilon n_train / n`` (for a noise of order
``1 / (n epsilon)``, as in every dpfair mechanism that normalizes a noisy sum by the public ``n``).

What that handicap costs in error depends on how much noise the model has at all.  For private linear models (noise
in every feature: objective perturbation, noisy sufficient statistics; the private parts that declare a bound on
the rows' norm, ``data_norm`` or ``x_norm_bound``) the held-out excess error over the non-private fit follows
``c d / (n epsilon)``, with ``d`` the number of features.  Measured for ``DPLogisticRegression`` on its defaults
on the fairness suite's encodings (``benchmarks/fairness_suite.py --noise-law``, secure noise, medians of 3
splits, two runs): Adult (46 features) 0.028-0.020, 0.011, 0.004 at ``n epsilon / d`` = 164, 328, 655; the ACS
excerpt (54 features) 0.068-0.063, 0.035, 0.025-0.022, 0.008 at 61, 122, 244, 488.  Where the excess is above 0.005
``c`` lies between 2.9 and 8.3 (median 4.2); :data:`NOISE_LAW_CONSTANT` = 3.5, on the low side, so that the check
speaks only when the handicap is clear.  The **predicted
handicap** is then ``c d (1 / (n_train trial_epsilon) - 1 / (n epsilon))``: the extra error of the best candidate
fitted as a trial over the same candidate fitted untuned.  Tuning must gain more than that to pay.  The search
cannot be expected to pay when the handicap exceeds :data:`MIN_TUNING_GAIN` (0.005, the margin within which the
fairness suite calls two classifiers equal): it says so before its charge (a :class:`SearchPayoffWarning`, or a
refusal with ``payoff_check="raise"``).  The search checks itself only when one of its private parts is such a
linear model; for the others (a post-processor of a fitted base: noisy tables) no law was measured and it says
nothing.

This is a prediction from public facts, not a guarantee: a search whose default candidate is poor for the data can
pay despite a handicap, and one with no handicap can still lose to well-chosen defaults.  It models the noise of
the features only, not the sampling noise of the choice itself (a validation score read off a few hundred rows of
the smallest group and label): on Adult at total epsilon 3 (``benchmarks/fairness_suite.py --search``, 15
held-out fits) the default geometric search errs 0.190 against 0.179 for the untuned pipeline and is warned; a
truncated-negative-binomial search (handicap 0.0016, not warned) errs 0.177 but its equalized-odds difference is
0.035 against 0.020.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpfair._validation import check_epsilon, check_int

__all__ = ["MIN_TUNING_GAIN", "NOISE_LAW_CONSTANT", "SearchPayoff", "SearchPayoffWarning", "search_payoff"]

#: ``c`` of the excess error ``c d / (n epsilon)`` of a private linear model (module docstring: measured 2.9-8.3).
NOISE_LAW_CONSTANT = 3.5
#: The handicap above which a search is not expected to pay (the fairness suite's margin of equal errors).
MIN_TUNING_GAIN = 0.005


class SearchPayoffWarning(UserWarning):
    """A private search is not expected to beat the untuned estimator at the same total epsilon.

    Too few rows for its budget: its selected model would have the noise of a fit at a much smaller epsilon
    (:func:`search_payoff`).
    """


@dataclass(frozen=True)
class SearchPayoff:
    """The public facts of a search's handicap (:func:`search_payoff`).

    Parameters
    ----------
    n_rows : int
        Rows given to the search.
    n_train : int
        Rows a trial fits on.
    n_noise_features : int
        Features the noise grows with.
    epsilon : float
        The search's total epsilon.
    trial_epsilon : float
        Each trial's epsilon.
    equivalent_epsilon : float
        The epsilon of an untuned fit on all rows with the noise of one trial (``trial_epsilon n_train / n_rows``).
    predicted_handicap : float
        ``NOISE_LAW_CONSTANT n_noise_features (1 / (n_train trial_epsilon) - 1 / (n_rows epsilon))``.
    min_gain : float
        The handicap above which the search is not expected to pay.
    """

    n_rows: int
    n_train: int
    n_noise_features: int
    epsilon: float
    trial_epsilon: float
    equivalent_epsilon: float
    predicted_handicap: float
    min_gain: float

    @property
    def can_pay(self) -> bool:
        """Whether the predicted handicap is at most ``min_gain``."""
        return self.predicted_handicap <= self.min_gain

    def message(self) -> str:
        """Say why the search is not expected to pay, with the numbers and what would help.

        Returns
        -------
        str
            The text of :class:`SearchPayoffWarning`.
        """
        needed = math.ceil(self.n_rows * self.predicted_handicap / self.min_gain)
        return (
            f"the search is not expected to beat the untuned estimator at the same total epsilon={self.epsilon:g}: "
            f"each trial fits {self.n_train} of the {self.n_rows} rows at epsilon={self.trial_epsilon:.3g}, the noise "
            f"of one untuned fit at epsilon={self.equivalent_epsilon:.3g}, a predicted extra error of "
            f"{self.predicted_handicap:.4f} (> {self.min_gain:g}) with {self.n_noise_features} noisy feature(s) "
            f"(public facts only). Fit the untuned estimator at the whole epsilon instead, or give the search about "
            f"{needed} rows or a larger epsilon; n_trials='truncated_negative_binomial' with eta=-0.5 and a delta "
            "doubles each trial's epsilon, and a smaller validation_fraction leaves more training rows."
        )


def search_payoff(n_rows: int, n_features: int, *, epsilon: float, trial_epsilon: float, validation_fraction: float,
                  min_gain: float = MIN_TUNING_GAIN) -> SearchPayoff:
    """The handicap of a private search against the untuned estimator at the same total epsilon (public facts only).

    Parameters
    ----------
    n_rows : int
        Rows given to the search (public).
    n_features : int
        Features the private parts' noise grows with (``X``'s columns for a private linear model; 1 for a noisy
        table).
    epsilon : float
        The search's total epsilon (finite).
    trial_epsilon : float
        Each trial's epsilon (:func:`~dpfair.model_selection.trial_epsilon_for`).
    validation_fraction : float
        The search's share of validation rows, in (0, 1).
    min_gain : float, default 0.005
        The handicap above which the search is not expected to pay.

    Returns
    -------
    SearchPayoff
        The numbers; ``can_pay`` says whether the handicap is at most ``min_gain``.

    Raises
    ------
    ValueError, TypeError
        On an invalid argument.

    Examples
    --------
    >>> from dpfair.model_selection import search_payoff
    >>> payoff = search_payoff(30_000, 46, epsilon=3.0, trial_epsilon=1.0, validation_fraction=0.3)
    >>> round(payoff.equivalent_epsilon, 2), round(payoff.predicted_handicap, 4), payoff.can_pay
    (0.7, 0.0058, False)
    """
    n_rows = check_int(n_rows, "n_rows", minimum=2)
    n_features = check_int(n_features, "n_features", minimum=1)
    epsilon = check_epsilon(epsilon, allow_inf=False)
    trial_epsilon = check_epsilon(trial_epsilon, "trial_epsilon", allow_inf=False)
    if isinstance(validation_fraction, bool) or not 0 < validation_fraction < 1:
        raise ValueError(f"validation_fraction must be a number in (0, 1), got {validation_fraction!r}.")
    if isinstance(min_gain, bool) or not (math.isfinite(min_gain) and min_gain > 0):
        raise ValueError(f"min_gain must be a finite number > 0, got {min_gain!r}.")
    n_train = n_rows - round(validation_fraction * n_rows)
    if n_train < 1:
        raise ValueError(f"validation_fraction={validation_fraction!r} leaves no training row of {n_rows}.")
    handicap = NOISE_LAW_CONSTANT * n_features * (1.0 / (n_train * trial_epsilon) - 1.0 / (n_rows * epsilon))
    return SearchPayoff(n_rows=n_rows, n_train=n_train, n_noise_features=n_features, epsilon=epsilon,
                        trial_epsilon=trial_epsilon, equivalent_epsilon=trial_epsilon * n_train / n_rows,
                        predicted_handicap=max(handicap, 0.0), min_gain=float(min_gain))
