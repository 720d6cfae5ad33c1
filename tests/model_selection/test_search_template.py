"""PrivateRandomSearch and the scorers use dpfair.base's template (validation, one charge, trials)."""

from __future__ import annotations

import numpy as np
import pytest

from dpfair.base import PrivateEstimator, PrivateMechanismMixin
from dpfair.model_selection import PrivateKSScorer, PrivateMSEKSScorer, PrivateMSEScorer, PrivateRandomSearch
from dpfair.privacy import PrivacyBudget
from dpfair.regression import FairRegressionPostProcessor

RNG = np.random.default_rng(11)
RNG.uniform(0, 1, 10)
N = 400
G = np.tile([0, 1], N // 2)
Y = np.clip(0.5 + 0.1 * G + 0.15 * RNG.standard_normal(N), 0, 1)


def _search(random_state, budget=None):
    return PrivateRandomSearch(
        FairRegressionPostProcessor(bounds=(0, 1), groups=[0, 1]), {"n_bins": [4, 16], "alpha": [0.0, 0.1]},
        scoring=PrivateMSEKSScorer((0, 1), groups=[0, 1], ks_weight=0.5), epsilon=3.0, budget=budget,
        random_state=random_state,
    )


def test_the_search_and_the_scorers_use_the_template():
    assert isinstance(_search(0), PrivateEstimator)
    for scorer in (PrivateMSEScorer((0, 1)), PrivateKSScorer((0, 1), [0, 1]), PrivateMSEKSScorer((0, 1), [0, 1])):
        assert isinstance(scorer, PrivateMechanismMixin)


@pytest.mark.parametrize(
    ("random_state", "params", "score"),
    [  # the search before it used the template, same seeds: the split, K, the candidates and the noise are unchanged
        (0, {"alpha": 0.0, "n_bins": 4}, -0.1723117924471195),
        ("generator", {"alpha": 0.1, "n_bins": 4}, -0.066791458012983),
    ],
)
def test_same_seed_same_search_as_before(random_state, params, score):
    budget = PrivacyBudget(10.0)
    rs = np.random.default_rng(4) if random_state == "generator" else random_state
    search = _search(rs, budget).fit(Y, Y, sensitive_features=G)
    assert (search.best_params_, search.best_score_) == (params, score)
    assert [(e.epsilon, e.label) for e in budget.ledger] == [
        (3.0, "PrivateRandomSearch.fit (trials, scores, random-K selection)")
    ]


@pytest.mark.parametrize("random_state", [1.5, -1, "seed"])
def test_a_bad_random_state_is_refused_before_the_charge(random_state):
    budget = PrivacyBudget(10.0)
    search = _search(random_state, budget)
    with pytest.raises((TypeError, ValueError), match="random_state"):
        search.fit(Y, Y, sensitive_features=G)
    assert budget.spent() == (0.0, 0.0)
    assert not [k for k in vars(search) if k.endswith("_") and not k.startswith("_")]


def test_the_scorer_checks_every_row_before_the_charge():
    """A label the scorer cannot use is refused wherever it is (the split is drawn only after the charge)."""
    budget = PrivacyBudget(10.0)
    y = Y.copy()
    y[1] = np.nan
    with pytest.raises(ValueError, match="y"):
        _search(0, budget).fit(Y, y, sensitive_features=G)
    assert budget.spent() == (0.0, 0.0)


def test_scorer_check_is_the_template_validation():
    with pytest.raises(ValueError, match="sensitive_features"):
        PrivateKSScorer((0, 1), groups=[0, 1]).check(Y, Y, None)
    with pytest.raises(ValueError, match="declared groups"):
        PrivateKSScorer((0, 1), groups=["a", "b"]).check(Y, Y, G)
    with pytest.raises(ValueError, match="y"):
        PrivateMSEKSScorer((0, 1), groups=[0, 1]).check(Y, np.r_[Y[:-1], np.nan], G)
    PrivateMSEKSScorer((0, 1), groups=[0, 1]).check(Y, Y, G)  # valid rows pass, nothing is drawn or charged
    scorer = PrivateMSEScorer((0, 1))
    scorer.bounds = (1, 0)  # the declared bounds are re-validated by their role
    with pytest.raises(ValueError, match="bounds"):
        scorer.check(Y, Y, G)
