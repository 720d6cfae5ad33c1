"""Bad input to PrivateMetricFrame: ValueError / TypeError naming the argument and the fix, and nothing spent."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest
import sklearn.metrics as skm

from dpfair.metrics import PrivateMetricFrame
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError

rng = np.random.default_rng(0)
N = 317
Y = rng.integers(0, 2, N)
P = rng.integers(0, 2, N)
G = rng.choice(["a", "b"], N)
Z = rng.uniform(0, 1, N)
GOOD = dict(metrics="selection_rate", y_true=Y, y_pred=P, sensitive_features=G, epsilon=1.0, groups=["a", "b"],
            random_state=0)

CASES = {
    "unknown metric name": (dict(metrics="log_loss"), ValueError, ["metrics", "selection_rate", "mean_prediction"]),
    "unsupported function": (dict(metrics={"loss": skm.log_loss}), ValueError,
                             ["metrics['loss']", "log_loss", "true_positive_rate", "CountMetric"]),
    "partial function": (dict(metrics=functools.partial(skm.recall_score, average="macro")), ValueError, ["metrics"]),
    "fbeta without beta": (dict(metrics=skm.fbeta_score), ValueError, ["beta"]),
    "bad zero_division": (dict(metrics=functools.partial(skm.precision_score, zero_division=2)), ValueError,
                          ["zero_division"]),
    "sample_weight": (dict(sample_params={"sample_weight": np.ones(N)}), ValueError, ["sample_weight"]),
    "two pos_labels": (dict(metrics={"a": functools.partial(skm.recall_score, pos_label=1),
                                     "b": functools.partial(skm.precision_score, pos_label=0)}), ValueError, ["pos_label"]),
    "random_state float": (dict(random_state=0.5), ValueError, ["random_state"]),
    "noise_random_state float": (dict(noise_random_state=0.5), TypeError, ["random_state"]),
    "undeclared mode": (dict(undeclared="drop"), ValueError, ["undeclared"]),
    "n_boot": (dict(n_boot=3), ValueError, ["n_boot"]),
    "ci_quantiles": (dict(ci_quantiles=[0.5, 1.5]), ValueError, ["ci_quantiles"]),
    "metric of a wrong type": (dict(metrics=3), TypeError, ["metrics", "selection_rate"]),
    "empty dict": (dict(metrics={}), ValueError, ["metrics"]),
    "epsilon zero": (dict(epsilon=0.0), ValueError, ["epsilon"]),
    "epsilon string": (dict(epsilon="1"), TypeError, ["epsilon"]),
    "delta out of range": (dict(delta=1.5), ValueError, ["delta"]),
    "confidence out of range": (dict(confidence_level=1.0), ValueError, ["confidence_level"]),
    "budget of a wrong type": (dict(budget=1.0), TypeError, ["budget", "PrivacyBudget"]),
    "groups missing": (dict(groups=None), ValueError, ["groups is required", "epsilon"]),
    "undeclared label": (dict(groups=["a"]), ValueError, ["outside the declared groups", "groups="]),
    "duplicate group": (dict(groups=["a", "a", "b"]), ValueError, ["groups", "more than once"]),
    "y_true not binary": (dict(y_true=Y * 2), ValueError, ["y_true", "0 and 1"]),
    "y_pred strings": (dict(y_pred=np.where(P == 1, "yes", "no")), TypeError, ["y_pred", "0 and 1"]),
    "y_true NaN": (dict(y_true=np.where(Y == 1, np.nan, 0.0)), ValueError, ["y_true"]),
    "length mismatch": (dict(y_pred=P[:-1]), ValueError, ["y_pred", "one entry per row"]),
    "sensitive length mismatch": (dict(sensitive_features=G[:-1]), ValueError, ["sensitive", "one entry per row"]),
    "sensitive missing": (dict(sensitive_features=None), ValueError, ["sensitive_features is required"]),
    "sensitive with None": (dict(sensitive_features=np.where(Y == 1, None, G)), ValueError, ["missing values"]),
    "list of lists": (dict(sensitive_features=[list(G), list(G)]), ValueError, ["DataFrame"]),
    # fairlearn's messages, word for word
    "series with an integer name": (dict(sensitive_features=pd.Series(G, name=0)), ValueError,
                                    ["Series name must be a string. Value '0' was of type <class 'int'>"]),
    "integer column name": (dict(sensitive_features=pd.DataFrame({0: G})), ValueError,
                            ["DataFrame column names must be strings. Name '0' is of type"]),
    "empty data": (dict(y_true=[], y_pred=[], sensitive_features=[]), ValueError, ["y_true", "empty"]),
    "real metric without bounds": (dict(metrics="mean_squared_error", y_true=Z, y_pred=Z), ValueError, ["bounds is required"]),
    "values outside bounds": (dict(metrics="mean_absolute_error", y_true=Z * 3, y_pred=Z, bounds=(0, 1)), ValueError,
                              ["y_true", "bounds=(0, 1)"]),
    "bounds reversed": (dict(metrics="mean_prediction", y_true=Z, y_pred=Z, bounds=(1, 0)), ValueError, ["bounds"]),
    "bounds not a pair": (dict(metrics="mean_prediction", y_true=Z, y_pred=Z, bounds=1.0), TypeError, ["bounds"]),
    "intersection groups as a flat list": (dict(sensitive_features=pd.DataFrame({"r": G, "s": G})), ValueError,
                                            ["groups", "tuples"]),
    "intersection dict with wrong keys": (dict(sensitive_features=pd.DataFrame({"r": G, "s": G}), groups={"r": ["a", "b"]}),
                                          ValueError, ["groups", "'s'"]),
    "epsilon too small": (dict(epsilon=1e-300), ValueError, ["epsilon", "too small"]),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_input_is_refused_naming_the_argument_and_spends_nothing(case):
    change, error, fragments = CASES[case]
    budget = PrivacyBudget(5.0)
    kwargs = {**GOOD, "budget": budget}
    kwargs.update(change)
    with pytest.raises(error) as info:
        PrivateMetricFrame(**kwargs)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert budget.spent() == (0.0, 0.0) and not budget.ledger
    # no private value in the message: neither a row count nor an undeclared label
    assert str(N) not in message


def test_refused_budget_releases_nothing_and_leaves_the_budget():
    budget = PrivacyBudget(1.5, neighbouring="add_remove")
    PrivateMetricFrame(**{**GOOD, "budget": budget})
    with pytest.raises(PrivacyBudgetExceededError):
        PrivateMetricFrame(**{**GOOD, "budget": budget})
    assert budget.spent() == (1.0, 0.0) and len(budget.ledger) == 1


def test_summary_methods_check_their_arguments_like_fairlearn():
    mf = PrivateMetricFrame(**GOOD)
    with pytest.raises(ValueError, match="Unrecognised comparison method: pairwise"):
        mf.difference(method="pairwise")
    with pytest.raises(ValueError, match="Invalid error value specified"):
        mf.ratio(errors="ignore")
    with pytest.raises(ValueError, match="Invalid error value specified"):
        mf.group_min(errors="x")
