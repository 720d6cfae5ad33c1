"""Real tables into the regression post-processors: strings and missing values get dpfair's message, never a value.

scikit-learn's own message for a string column prints one row's value ("could not convert string to float:
'<the value>'") and, for NaN, advises an imputer that reads private statistics; the post-processors name the column
and the declared-parameter transformer instead (``DeclaredOneHotEncoder``, ``DeclaredImputer``), whether the wrapped
regressor is fitted here (``prefit=False``) or given fitted (its ``predict`` refuses the rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline

from dpfair.preprocessing import DeclaredOneHotEncoder
from dpfair.regression import BlindFairRegressionPostProcessor, FairRegressionPostProcessor

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

#: A level that must never appear in a message: it stands for a private value of one row.
SECRET = "Secret-Level-7"


def _table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.uniform(0.0, 1.0, n), "hours": rng.uniform(0.0, 1.0, n)})
    y = np.clip(0.5 * frame["age"] + rng.normal(0.0, 0.1, n), 0.0, 1.0).to_numpy()
    return frame, y, rng.choice(["a", "b"], n)


def _with_string_column(frame):
    out = frame.copy()
    out["workclass"] = ["Private"] * (len(out) - 1) + [SECRET]
    return out


def _with_missing(frame):
    out = frame.copy()
    out.loc[3, "hours"] = np.nan
    return out


def _assert_dpfair_message(exc_info, *needles):
    message = str(exc_info.value)
    for needle in needles:
        assert needle in message
    assert SECRET not in message and "could not convert" not in message


def _aware(estimator, prefit):
    return FairRegressionPostProcessor(estimator, epsilon=1.0, bounds=(0.0, 1.0), groups=["a", "b"], prefit=prefit,
                                       random_state=0)


@pytest.mark.parametrize("prefit", [False, True])
def test_aware_post_processor_names_the_string_column_and_the_encoder_never_the_value(prefit):
    X, y, g = _table()
    strings = _with_string_column(X)
    regressor = Ridge().fit(strings[["age", "hours"]].to_numpy(), y) if prefit else Ridge()
    with pytest.raises(ValueError) as exc_info:
        _aware(regressor, prefit).fit(strings.to_numpy(dtype=object) if prefit else strings, y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "DeclaredOneHotEncoder", "FairRegressionPostProcessor")


@pytest.mark.parametrize("prefit", [False, True])
def test_aware_post_processor_names_the_declared_imputer_for_missing_values(prefit):
    X, y, g = _table()
    regressor = Ridge().fit(X, y) if prefit else Ridge()
    with pytest.raises(ValueError) as exc_info:
        _aware(regressor, prefit).fit(_with_missing(X), y, sensitive_features=g)
    _assert_dpfair_message(exc_info, "DeclaredImputer", "FairRegressionPostProcessor")
    fitted = _aware(Ridge().fit(X, y), True).fit(X, y, sensitive_features=g)
    with pytest.raises(ValueError) as exc_info:
        fitted.predict(_with_missing(X), sensitive_features=g)
    _assert_dpfair_message(exc_info, "DeclaredImputer")


def test_blind_post_processor_names_the_declared_imputer_when_its_models_refuse_the_rows():
    X, y, g = _table()
    post = BlindFairRegressionPostProcessor(Ridge().fit(X, y), LogisticRegression().fit(X, g), epsilon=1.0,
                                            bounds=(0.0, 1.0), groups=["a", "b"], random_state=0)
    with pytest.raises(ValueError) as exc_info:
        post.fit(_with_missing(X), sensitive_features=g)
    _assert_dpfair_message(exc_info, "DeclaredImputer", "BlindFairRegressionPostProcessor")
    fitted = post.fit(X, sensitive_features=g)
    with pytest.raises(ValueError) as exc_info:
        fitted.predict(_with_string_column(X).to_numpy(dtype=object))
    _assert_dpfair_message(exc_info, "DeclaredOneHotEncoder")


def test_a_regressor_that_encodes_declared_categories_takes_the_strings():
    X, y, g = _table()
    strings = _with_string_column(X)
    encode = ColumnTransformer([("workclass", DeclaredOneHotEncoder(categories=[["Private", SECRET]]), ["workclass"])],
                               remainder="passthrough")
    post = _aware(make_pipeline(encode, Ridge()), False).fit(strings, y, sensitive_features=g)
    assert np.all(np.isfinite(post.predict(strings, sensitive_features=g)))


def test_other_refusals_keep_the_models_own_message():
    # an undeclared level in a pipeline that encodes declared categories: the encoder's own (value-free) message,
    # not "takes numbers only", which would be wrong advice for a pipeline that already encodes
    X, y, g = _table()
    strings = _with_string_column(X)
    encode = ColumnTransformer([("workclass", DeclaredOneHotEncoder(categories=[["Private"]]), ["workclass"])],
                               remainder="passthrough")
    with pytest.raises(ValueError) as exc_info:
        _aware(make_pipeline(encode, Ridge()), False).fit(strings, y, sensitive_features=g)
    message = str(exc_info.value)
    assert "declared categories" in message and "takes numbers only" not in message and SECRET not in message
    with pytest.raises(ValueError) as exc_info:  # an invalid parameter of the regressor, with NaN in X beside it
        _aware(Ridge(alpha=-1.0), False).fit(_with_missing(X), y, sensitive_features=g)
    assert "alpha" in str(exc_info.value) and "DeclaredImputer" not in str(exc_info.value)
