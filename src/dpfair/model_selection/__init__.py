"""Private model selection: tune any dpfair estimator's hyper-parameters without leaking through the choice.

Picking the best of many private fits by their *exact* validation scores leaks through the choice
itself.  Xian et al. (2024) end Section 4 noting that choosing ``(alpha, k)`` "requires tuning them
(privately) on a validation set", citing Liu & Talwar (2019) and Papernot & Steinke (2022); this
package implements that selection for any dpfair estimator with an ``epsilon`` parameter.

* :class:`PrivateRandomSearch`: the private counterpart of scikit-learn's ``RandomizedSearchCV``.
  It runs a random number ``K`` of trials; each draws a candidate uniformly from the grid, fits it
  privately on the training rows and scores it privately on disjoint validation rows; the output is
  the best (candidate, noisy score) and that trial's fitted model.  Nothing else is released (not
  even ``K``).  One ``budget`` charge and one ``privacy_spent_`` cover the whole search.
* Private scorers with declared bounds: :class:`PrivateMSEScorer` (clipped squared error,
  Laplace), :class:`PrivateKSScorer` (statistical-parity violation from a noisy joint histogram of
  group and predicted bin) and :class:`PrivateMSEKSScorer` (MSE plus a KS penalty, or MSE subject to
  a KS target); for classifiers (any labels, strings included) :class:`PrivateAccuracyScorer` (noisy error
  count, sensitivity :func:`accuracy_sensitivity`) and :class:`PrivateEqualizedOddsScorer` (error plus an
  equalized-odds penalty from one noisy table of group, label and prediction, :func:`equalized_odds_sensitivity`).
* The search runs estimators that take no ``sensitive_features`` (``DPLogisticRegression``,
  ``DPLinearRegression``); a fitted base model with ``prefit=True`` goes in wrapped in scikit-learn's
  ``FrozenEstimator`` (``clone`` keeps it fitted), in this search and in ``GridSearchCV`` / ``cross_validate``.
* :func:`random_stopping_epsilon` and :func:`trial_epsilon_for`: the accounting of the selection
  (geometric ``K``: ``3 epsilon`` pure DP; truncated negative binomial and Poisson ``K``: Renyi-DP
  bounds converted by :func:`dpfair.privacy.rdp_to_approx_dp`).
* For scikit-learn's own ``GridSearchCV`` / ``RandomizedSearchCV`` / ``cross_validate`` over dpfair
  estimators (every fit charged): :func:`search_cost` says before any fit what they will spend
  (:class:`SearchCost`), :func:`check_search_budget` refuses before the first fit a search its budget
  cannot pay for, and :func:`fit_search` runs ``search.fit`` after that check and reports a budget that
  runs out inside the search as one clear error.
* :func:`search_payoff` (and :meth:`PrivateRandomSearch.payoff`): whether a private search can be expected to beat
  the untuned estimator at the same total epsilon, from public facts only (rows, features, the search's plan); the
  search warns (:class:`SearchPayoffWarning`) or refuses before its charge when it cannot (too few rows for its
  budget).
"""

from dpfair.model_selection._budget import SearchCost, check_search_budget, fit_search, search_cost
from dpfair.model_selection._classifier_scorers import (
    PrivateAccuracyScorer,
    PrivateEqualizedOddsScorer,
    accuracy_sensitivity,
    equalized_odds_sensitivity,
)
from dpfair.model_selection._payoff import SearchPayoff, SearchPayoffWarning, search_payoff
from dpfair.model_selection._random_stopping import random_stopping_epsilon, trial_epsilon_for
from dpfair.model_selection._scorers import PrivateKSScorer, PrivateMSEKSScorer, PrivateMSEScorer
from dpfair.model_selection._search import PrivateRandomSearch

__all__ = [
    "PrivateAccuracyScorer",
    "PrivateEqualizedOddsScorer",
    "PrivateKSScorer",
    "PrivateMSEKSScorer",
    "PrivateMSEScorer",
    "PrivateRandomSearch",
    "SearchCost",
    "SearchPayoff",
    "SearchPayoffWarning",
    "accuracy_sensitivity",
    "check_search_budget",
    "equalized_odds_sensitivity",
    "fit_search",
    "random_stopping_epsilon",
    "search_cost",
    "search_payoff",
    "trial_epsilon_for",
]
