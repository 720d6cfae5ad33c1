"""Real tables into the private classifiers: a string column or a missing value is refused with dpfair's message.

scikit-learn's own message prints the private value it could not convert ("could not convert string to float:
'<the value>'") and advises an imputer that reads private statistics; dpfair's names the column and the dpfair
transformer to use (``DeclaredOneHotEncoder``, ``DeclaredImputer``), never a value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from dpfair.classification import DPEqualizedOddsPostProcessor, DPExponentiatedGradient, DPFairClassifier
from dpfair.preprocessing import DeclaredOneHotEncoder
from dpfair.privacy import PrivacyBudget

#: The fits here are tiny (their noise warnings are beside the point): only the refusals are checked.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

#: A level that must never appear in a message: it stands for a private value of one row.
SECRET = "Secret-Level-7"


def _table(n=200, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.uniform(0.0, 0.5, n), "hours": rng.uniform(0.0, 0.5, n)})
    y = (frame["age"] + rng.normal(0.0, 0.1, n) > 0.25).astype(int).to_numpy()
    groups = rng.integers(0, 2, n)
    return frame, y, groups


def _with_string_column(frame):
    out = frame.copy()
    out["workclass"] = ["Private"] * (len(out) - 1) + [SECRET]
    return out


def _with_missing(frame):
    out = frame.copy()
    out.loc[3, "hours"] = np.nan
    return out


def _reductions():
    return DPExponentiatedGradient(epsilon=2.0, groups=[0, 1], x_norm_bound=1.0, n_iter=5, random_state=0)


def _assert_dpfair_message(exc_info, *needles):
    message = str(exc_info.value)
    for needle in needles:
        assert needle in message
    assert SECRET not in message and "could not convert" not in message


def test_reductions_fit_names_the_string_column_and_the_encoder_never_the_value():
    X, y, g = _table()
    with pytest.raises(ValueError) as exc_info:
        _reductions().fit(_with_string_column(X), y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "workclass", "DeclaredOneHotEncoder", "DPExponentiatedGradient")


def test_reductions_fit_on_an_object_array_of_strings_names_the_encoder():
    X, y, g = _table()
    raw = _with_string_column(X).to_numpy(dtype=object)
    with pytest.raises(ValueError) as exc_info:
        _reductions().fit(raw, y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "DeclaredOneHotEncoder")


def test_reductions_fit_on_missing_values_names_the_declared_imputer():
    X, y, g = _table()
    with pytest.raises(ValueError) as exc_info:
        _reductions().fit(_with_missing(X), y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "DeclaredImputer", "DPExponentiatedGradient")
    assert "SimpleImputer" in str(exc_info.value)  # says why scikit-learn's imputer is not the fix


def test_reductions_predict_refuses_strings_and_missing_values_the_same_way():
    X, y, g = _table()
    fitted = _reductions().fit(X, y, sensitive_features=g)
    with pytest.raises(ValueError) as exc_info:
        fitted.predict(_with_string_column(X)[["age", "workclass"]])
    _assert_dpfair_message(exc_info, "workclass", "DeclaredOneHotEncoder")
    with pytest.raises(ValueError) as exc_info:
        fitted.predict(_with_missing(X))
    _assert_dpfair_message(exc_info, "DeclaredImputer")


def test_postprocessor_with_a_numeric_base_names_the_column_in_fit_and_predict():
    X, y, g = _table()
    base = LogisticRegression().fit(X.to_numpy(), y)
    post = DPEqualizedOddsPostProcessor(base, epsilon=2.0, groups=[0, 1], random_state=0)
    strings = _with_string_column(X)[["age", "workclass"]]
    with pytest.raises(ValueError) as exc_info:
        post.fit(strings, y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "workclass", "DeclaredOneHotEncoder")
    fitted = post.fit(X.to_numpy(), y, sensitive_features=g)
    with pytest.raises(ValueError) as exc_info:
        fitted.predict(strings, sensitive_features=g)
    _assert_dpfair_message(exc_info, "workclass", "DeclaredOneHotEncoder")
    with pytest.raises(ValueError) as exc_info:
        fitted.predict(_with_missing(X).to_numpy(), sensitive_features=g)
    _assert_dpfair_message(exc_info, "DeclaredImputer")


def test_postprocessor_fitting_its_base_on_strings_names_the_encoder():
    X, y, g = _table()
    post = DPEqualizedOddsPostProcessor(LogisticRegression(), epsilon=2.0, groups=[0, 1], prefit=False, random_state=0)
    with pytest.raises(ValueError) as exc_info:
        post.fit(_with_string_column(X), y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "workclass", "DeclaredOneHotEncoder")


def test_postprocessor_passes_strings_to_a_base_that_encodes_declared_categories():
    # the post-processor checks X only once its base has refused it: a pipeline that encodes strings still works
    X, y, g = _table()
    table = _with_string_column(X)
    encode = ColumnTransformer([("workclass", DeclaredOneHotEncoder({"workclass": ["Private", SECRET]}), ["workclass"])],
                               remainder="passthrough")
    base = make_pipeline(encode, LogisticRegression())
    post = DPEqualizedOddsPostProcessor(base, epsilon=2.0, groups=[0, 1], prefit=False, random_state=0)
    fitted = post.fit(table, y, sensitive_features=g)
    assert fitted.predict(table, sensitive_features=g).shape == (len(table),)


@pytest.mark.parametrize("at_prediction", [False, True])
def test_recommended_classifier_names_the_encoder_and_the_imputer_never_the_value(at_prediction):
    # its base models (a logistic regression, boosted trees, a private logistic regression) take numbers only, so
    # DPFairClassifier refuses strings and NaN itself, in fit (before any charge) and in predict
    X, y, g = _table()
    budget = PrivacyBudget(10.0, neighbouring="change_attribute")
    model = DPFairClassifier(epsilon=2.0, groups=[0, 1], attribute_at_prediction=at_prediction, budget=budget,
                             random_state=0)
    with pytest.raises(ValueError) as exc_info:
        model.fit(_with_string_column(X), y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "workclass", "DeclaredOneHotEncoder", "DPFairClassifier")
    with pytest.raises(ValueError) as exc_info:
        model.fit(_with_missing(X).to_numpy(), y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "DeclaredImputer", "DPFairClassifier")
    assert budget.spent()[0] == 0.0  # refused before the charge
    fitted = model.fit(X, y, sensitive_features=g)
    with pytest.raises(ValueError) as exc_info:
        fitted.predict(_with_string_column(X)[["age", "workclass"]], sensitive_features=g)
    _assert_dpfair_message(exc_info, "workclass", "DeclaredOneHotEncoder")
    with pytest.raises(ValueError) as exc_info:
        fitted.predict_proba(_with_missing(X), sensitive_features=g)
    _assert_dpfair_message(exc_info, "DeclaredImputer")


@pytest.mark.parametrize("prefit", [True, False])
def test_blind_postprocessor_names_the_encoder_and_the_imputer_never_the_value(prefit):
    # its membership model reads X as numbers, whatever the base: strings and NaN are refused with dpfair's message
    from dpfair.classification import DPBlindPostProcessor

    X, y, g = _table()
    base = LogisticRegression().fit(X.to_numpy(), y) if prefit else LogisticRegression()
    post = DPBlindPostProcessor(base, epsilon=2.0, groups=[0, 1], prefit=prefit, random_state=0)
    with pytest.raises(ValueError) as exc_info:
        post.fit(_with_string_column(X)[["age", "workclass"]], y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "workclass", "DeclaredOneHotEncoder", "DPBlindPostProcessor")
    with pytest.raises(ValueError) as exc_info:
        post.fit(_with_missing(X), y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "DeclaredImputer")
    fitted = post.fit(X.to_numpy(), y, sensitive_features=g)
    with pytest.raises(ValueError) as exc_info:
        fitted.predict(_with_string_column(X)[["age", "workclass"]].to_numpy(dtype=object))
    _assert_dpfair_message(exc_info, "DeclaredOneHotEncoder")
