"""The shared estimator-contract helpers (dpfair._estimator): declared groups, budgets, privacy_spent_."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from dpfair._estimator import (
    as_sensitive_features,
    charge_budget,
    check_budget,
    group_index,
    privacy_spent,
    resolve_groups,
    warn_non_private,
)
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning


def test_privacy_spent_has_one_shape():
    out = privacy_spent(1, 0, protects="x", neighbouring="replace one row")
    assert out == {"epsilon": 1.0, "delta": 0.0, "protects": "x", "neighbouring": "replace one row",
                   "relation": "replace", "noise": "secure"}
    assert privacy_spent(math.inf, 0, protects="x", neighbouring="y")["noise"] == "none"
    with pytest.raises(ValueError, match="relation"):
        privacy_spent(1, 0, protects="x", neighbouring="y", relation="swap")
    assert all(type(out[k]) is float for k in ("epsilon", "delta"))


def test_budget_checks_and_refusal_leaves_ledger_unchanged():
    assert check_budget(None) is None
    b = PrivacyBudget(1.0)
    assert check_budget(b) is b
    with pytest.raises(TypeError, match=r"budget must be a dpfair\.privacy\.PrivacyBudget"):
        check_budget(1.0)
    charge_budget(b, 0.6, label="first")
    with pytest.raises(PrivacyBudgetExceededError):
        charge_budget(b, 0.6, label="second")
    assert b.spent() == (0.6, 0.0)
    charge_budget(None, 10.0, label="no budget")  # no-op


def test_groups_required_with_finite_epsilon_and_message_names_the_argument():
    values = as_sensitive_features(["a", "b", "a"], 3)
    with pytest.raises(ValueError, match="groups is required with a finite epsilon"):
        resolve_groups(None, values, 1.0)
    declared, index = resolve_groups(None, values, math.inf)
    assert declared.tolist() == ["a", "b"] and index.tolist() == [0, 1, 0]


def test_declared_order_is_kept_and_absent_groups_are_allowed():
    values = as_sensitive_features(np.array(["b", "b"]), 2)
    declared, index = resolve_groups(["z", "b", "rare"], values, 0.5)
    assert declared.tolist() == ["z", "b", "rare"]
    assert index.tolist() == [1, 1]


def test_undeclared_label_is_refused_without_printing_it():
    values = as_sensitive_features(["a", "secret-label"], 2)
    with pytest.raises(ValueError, match="outside the declared groups") as info:
        resolve_groups(["a", "b"], values, 1.0)
    assert "secret-label" not in str(info.value)


def test_mixed_type_labels_do_not_need_ordering():
    values = as_sensitive_features(["a", 1, "a", 1], 4)
    declared, index = resolve_groups(None, values, math.inf)
    assert sorted(map(str, declared.tolist())) == ["1", "a"]
    assert (declared[index] == np.array(["a", 1, "a", 1], dtype=object)).all()
    assert group_index(np.array([1, "a"], dtype=object), values).tolist() == [1, 0, 1, 0]


@pytest.mark.parametrize(
    "groups, error, match",
    [
        ("ab", TypeError, "must be a list of group labels"),
        ([], ValueError, "non-empty"),
        (["a", "a"], ValueError, "more than once"),
        (["a", None], ValueError, "missing values"),
        ([["a"], ["b"]], ValueError, "1-d"),
    ],
)
def test_bad_declarations(groups, error, match):
    with pytest.raises(error, match=match):
        resolve_groups(groups, as_sensitive_features(["a"], 1), 1.0)


@pytest.mark.parametrize(
    "sensitive, n, match",
    [
        (None, 2, "sensitive_features is required"),
        (["a"], 2, "one label per row"),
        ("ab", 2, "scalar"),
        (["a", None], 2, "missing values"),
        ([np.nan, "a"], 2, "missing values"),
        (pd.DataFrame({"x": [1, 2], "y": [1, 2]}), 2, "one column"),
    ],
)
def test_bad_sensitive_features(sensitive, n, match):
    with pytest.raises(ValueError, match=match):
        as_sensitive_features(sensitive, n)


def test_pandas_inputs_with_odd_indexes():
    s = pd.Series(["a", "b", "a"], index=[10, -3, 10])
    assert as_sensitive_features(s, 3).tolist() == ["a", "b", "a"]
    df = pd.DataFrame({"g": [1, 2]}, index=["x", "y"])
    assert as_sensitive_features(df, 2).tolist() == [1, 2]


def test_unhashable_labels_are_a_type_error():
    with pytest.raises(TypeError, match="hashable"):
        as_sensitive_features(np.array([{"a": 1}, {"b": 2}], dtype=object), 2)


def test_warn_non_private_only_at_infinity():
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf"):
        warn_non_private(math.inf, "the fit")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_non_private(1.0, "the fit")


def test_an_unhashable_label_anywhere_is_a_type_error_naming_the_argument():
    with pytest.raises(TypeError, match="sensitive_features must hold hashable labels"):
        as_sensitive_features(np.array(["a", ["b"]], dtype=object), 2)


def test_fit_charges_through_pipelines_post_processors_and_unknown_meta_estimators():
    from sklearn.ensemble import BaggingRegressor
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from dpfair._estimator import fit_charges
    from dpfair.classification import DPEqualizedOddsPostProcessor
    from dpfair.linear_model import DPLinearRegression, DPLogisticRegression

    budget = PrivacyBudget(5.0)
    post = DPEqualizedOddsPostProcessor(DPLogisticRegression(epsilon=0.7, budget=budget), prefit=False, epsilon=0.3,
                                        budget=budget)
    assert fit_charges(make_pipeline(StandardScaler(), post)) == [(budget, 0.7, 0.0), (budget, 0.3, 0.0)]
    assert fit_charges(post.set_params(prefit=True)) == [(budget, 0.3, 0.0)]
    assert fit_charges(DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=0.3)) == [(None, 0.3, 0.0)]
    assert fit_charges(LogisticRegression()) == []
    with pytest.raises(TypeError, match="how many times it fits it is unknown"):
        fit_charges(BaggingRegressor(DPLinearRegression(epsilon=1.0)))


def test_charge_budget_goes_to_the_opt_in_default_ledger_only_without_a_budget():
    from dpfair.privacy import default_budget, set_default_budget

    assert default_budget() is None
    charge_budget(None, 1.0, label="nowhere")  # nothing recorded, nothing raised
    ledger, own = PrivacyBudget(math.inf), PrivacyBudget(1.0)
    previous = set_default_budget(ledger)
    try:
        charge_budget(None, 2.0, label="a")
        charge_budget(own, 0.5, label="b")
    finally:
        set_default_budget(previous)
    assert [e.label for e in ledger.ledger] == ["a"] and own.spent() == (0.5, 0.0)
    with pytest.raises(TypeError):
        set_default_budget("not a budget")
