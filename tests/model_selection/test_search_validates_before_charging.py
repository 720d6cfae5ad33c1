"""PrivateRandomSearch checks every trial's parameters and the data before its single charge."""

from __future__ import annotations

import numpy as np
import pytest

from dpfair.datasets import make_regression
from dpfair.model_selection import PrivateKSScorer, PrivateMSEScorer, PrivateRandomSearch
from dpfair.privacy import PrivacyBudget
from dpfair.regression import FairRegressionPostProcessor

_, Y, G = make_regression(600, random_state=0)


def _search(estimator=None, grid=None, scoring=None, budget=None):
    return PrivateRandomSearch(
        estimator or FairRegressionPostProcessor(bounds=(0, 1), groups=[0, 1]), grid or {"n_bins": [4, 16]},
        scoring=scoring or PrivateMSEScorer((0, 1)), epsilon=3.0, budget=budget, random_state=0,
    )


def _nan_half(y):
    y = y.copy()
    y[::2] = np.nan
    return y


CASES = {
    "NaN in X": (lambda: _search(), lambda: (np.where(np.arange(600) == 5, np.nan, Y), Y, G), ValueError, "NaN"),
    "undeclared group": (lambda: _search(), lambda: (Y, Y, np.where(G == 1, 2, G)), ValueError, "group"),
    "no sensitive_features with two groups": (lambda: _search(), lambda: (Y, Y, None), ValueError, "sensitive_features"),
    "string y": (lambda: _search(), lambda: (Y, Y.astype(str), G), TypeError, "y must hold real numbers"),
    "NaN in half of y": (lambda: _search(), lambda: (Y, _nan_half(Y), G), ValueError, "y"),
    "n_bins=0 in the grid": (lambda: _search(grid={"n_bins": [0]}), lambda: (Y, Y, G), ValueError, "n_bins"),
    "epsilon in the grid": (lambda: _search(grid={"epsilon": [1.0]}), lambda: (Y, Y, G), ValueError,
                            "param_grid sets 'epsilon'"),
    "estimator without bounds": (lambda: _search(estimator=FairRegressionPostProcessor(groups=[0, 1])),
                                 lambda: (Y, Y, G), ValueError, "bounds"),
    "KS scorer with other groups": (lambda: _search(scoring=PrivateKSScorer((0, 1), groups=["a", "b"])),
                                    lambda: (Y, Y, G), ValueError, "groups"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_search_spends_nothing_and_fits_nothing(case):
    make, data, error, match = CASES[case]
    budget = PrivacyBudget(10.0)
    search = make()
    search.set_params(budget=budget)
    X, y, groups = data()
    with pytest.raises(error, match=match):
        search.fit(X, y, sensitive_features=groups)
    assert budget.spent() == (0.0, 0.0)
    assert not [k for k in vars(search) if k.endswith("_") and not k.startswith("_")]


def test_a_valid_search_still_charges_once():
    budget = PrivacyBudget(10.0)
    search = _search(budget=budget).fit(Y, Y, sensitive_features=G)
    assert budget.spent()[0] == pytest.approx(3.0)
    assert search.best_params_["n_bins"] in (4, 16)


@pytest.mark.parametrize("bounds", ["01", (False, True), (0, np.inf), (1, 0), (0, 1, 2)])
def test_scorer_bounds_follow_the_one_rule(bounds):
    with pytest.raises((TypeError, ValueError), match="bounds"):
        PrivateMSEScorer(bounds)


@pytest.mark.parametrize("n_rows", [0, -5, 2.5])
def test_scorer_sensitivity_refuses_bad_row_counts(n_rows):
    with pytest.raises((TypeError, ValueError), match="n_rows"):
        PrivateMSEScorer((0, 1)).sensitivity(n_rows)
    with pytest.raises((TypeError, ValueError), match="n_rows"):
        PrivateKSScorer((0, 1), groups=[0, 1]).sensitivity(n_rows)
