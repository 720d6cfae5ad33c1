"""The declared transformers read nothing private: fixed maps of each row, fitted from the declarations alone.

"Reads nothing private" is tested as it is meant: fitting on one table or another (same columns, other rows) gives
the same fitted transformer, and a row's output never changes when the other rows change.  Each transformer is also
compared with scikit-learn's equivalent where one exists (OneHotEncoder with declared categories).
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from dpfair.preprocessing import DeclaredImputer, DeclaredOneHotEncoder, DeclaredRangeScaler, row_norm_bound

SECRET = "Jane-Roe-123"  # a private value: no message may print it

WORKCLASS = ["Private", "State-gov", "Self-emp"]


def _table(seed, n=60):
    """A mixed table: a string column with None / NaN, a numeric column with NaN, a numeric column without."""
    rng = np.random.default_rng(seed)
    work = rng.choice(np.array([*WORKCLASS, None], dtype=object), n)
    work[rng.random(n) < 0.1] = np.nan
    age = rng.uniform(17, 90, n)
    age[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame({"workclass": work, "age": age, "hours": rng.uniform(0, 120, n)})


def _preprocess():
    return ColumnTransformer([
        ("categorical", DeclaredOneHotEncoder({"workclass": [*WORKCLASS, None]}), ["workclass"]),
        ("numeric", make_pipeline(DeclaredImputer({"age": 40.0, "hours": 40.0}),
                                  DeclaredRangeScaler({"age": (17, 90), "hours": (0, 99)})), ["age", "hours"]),
    ]).set_output(transform="pandas")


# --------------------------------------------------------------------------------------- the encoder
def test_encoder_matches_scikit_learn_with_the_same_declared_categories():
    X = pd.DataFrame({"a": ["x", "y", "z", "y"], "b": [3, 1, 2, 2]})
    categories = [["z", "y", "x"], [1, 2, 3]]
    ours = DeclaredOneHotEncoder(categories).fit(X)
    reference = OneHotEncoder(categories=categories, sparse_output=False).fit(X)
    np.testing.assert_array_equal(ours.transform(X), reference.transform(X))
    assert ours.get_feature_names_out().tolist() == reference.get_feature_names_out().tolist()


def test_encoder_handles_strings_and_every_kind_of_missing_value_as_one_declared_level():
    X = pd.DataFrame({"w": pd.array(["Private", None, "State-gov", np.nan, pd.NA], dtype=object)})
    out = DeclaredOneHotEncoder({"w": ["Private", "State-gov", None]}).fit_transform(X)
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1], [0, 0, 1]])
    assert np.all(np.linalg.norm(out, axis=1) == 1.0)  # one 1 per column: the norm bound is exact


def test_an_undeclared_level_raises_naming_the_column_never_the_value():
    X = pd.DataFrame({"workclass": ["Private", SECRET]})
    with pytest.raises(ValueError, match="column 'workclass'") as caught:
        DeclaredOneHotEncoder({"workclass": WORKCLASS}).fit(X).transform(X)
    assert SECRET not in str(caught.value) and "handle_unknown='other'" in str(caught.value)
    with pytest.raises(ValueError, match="column 'workclass'"):  # an undeclared missing value too
        DeclaredOneHotEncoder({"workclass": WORKCLASS}).fit_transform(pd.DataFrame({"workclass": [None]}))


def test_other_column_instead_of_a_new_column_learned_from_the_data():
    encoder = DeclaredOneHotEncoder({"workclass": WORKCLASS}, handle_unknown="other")
    seen = encoder.fit_transform(pd.DataFrame({"workclass": ["Private", SECRET, None, "another"]}))
    np.testing.assert_array_equal(seen, [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 1]])
    assert encoder.get_feature_names_out().tolist() == [
        "workclass_Private", "workclass_State-gov", "workclass_Self-emp", "workclass_other"]


def test_one_flat_list_declares_the_levels_of_every_column():
    encoder = DeclaredOneHotEncoder(["yes", "no"])
    out = encoder.fit_transform(pd.DataFrame({"smokes": ["no", "yes"], "drinks": ["no", "no"]}))
    np.testing.assert_array_equal(out, [[0, 1, 0, 1], [1, 0, 0, 1]])
    assert encoder.get_feature_names_out().tolist() == ["smokes_yes", "smokes_no", "drinks_yes", "drinks_no"]
    assert encoder.row_norm_bound() == pytest.approx(np.sqrt(2))  # fitted: two columns
    assert DeclaredOneHotEncoder(["yes", "no"]).row_norm_bound(n_features=5) == pytest.approx(np.sqrt(5))
    with pytest.raises(ValueError, match="n_features"):
        DeclaredOneHotEncoder(["yes", "no"]).row_norm_bound()


@pytest.mark.parametrize(("categories", "error", "match"), [
    ({"workclass": ["a", "a"]}, ValueError, "declares a level twice"),
    ({"workclass": [None, np.nan]}, ValueError, "more than once"),
    ({"workclass": []}, ValueError, "is empty"),
    ({"other": ["a"]}, ValueError, r"declares nothing for column\(s\) \['workclass'\]"),
    ({"workclass": "abc"}, TypeError, "list of the column's declared levels"),
    ([["a"], ["b"]], ValueError, "per column"),
])
def test_encoder_refuses_bad_declarations_by_name(categories, error, match):
    with pytest.raises(error, match=match):
        DeclaredOneHotEncoder(categories).fit(pd.DataFrame({"workclass": ["a"]}))


def test_a_mapping_by_name_needs_column_names():
    with pytest.raises(ValueError, match="no column names"):
        DeclaredOneHotEncoder({"workclass": ["a"]}).fit(np.array([["a"]], dtype=object))


# --------------------------------------------------------------------------------------- imputer and scaler
def test_imputer_fills_declared_values_by_column_and_marker():
    X = pd.DataFrame({"w": ["?", "Private"], "h": [40.0, -1.0]})
    out = DeclaredImputer({"w": "Unknown", "h": 0.0}, missing_values="?").fit_transform(X)
    assert out.tolist() == [["Unknown", 40.0], ["Private", -1.0]]
    numeric = DeclaredImputer([1.5, 2.5]).fit_transform(np.array([[np.nan, 1.0], [3.0, np.nan]]))
    assert numeric.dtype == np.float64 and numeric.tolist() == [[1.5, 1.0], [3.0, 2.5]]
    with pytest.raises(TypeError, match="fill_values"):
        DeclaredImputer(np.nan).fit(np.zeros((2, 1)))


def test_scaler_clips_then_maps_the_declared_range_linearly():
    X = np.array([[17.0, -5.0], [53.5, 49.5], [200.0, 99.0]])
    out = DeclaredRangeScaler([(17, 90), (0, 99)], output_range=(-1, 1)).fit_transform(X)
    np.testing.assert_allclose(out, [[-1.0, -1.0], [0.0, 0.0], [1.0, 1.0]])
    unit = DeclaredRangeScaler((0, 200)).fit(X)
    np.testing.assert_allclose(unit.transform(X), np.clip(X, 0, 200) / 200)
    np.testing.assert_allclose(unit.inverse_transform(unit.transform(X)), np.clip(X, 0, 200))
    with pytest.raises(ValueError, match="outside the declared bounds") as caught:
        DeclaredRangeScaler([(17, 90), (0, 99)], clip=False).fit(X).transform(X)
    assert "200" not in str(caught.value)


def test_scaler_points_strings_and_nan_to_the_declared_transformers():
    with pytest.raises(ValueError, match="DeclaredOneHotEncoder") as caught:
        DeclaredRangeScaler((0, 1)).fit(pd.DataFrame({"w": [SECRET]}))
    assert SECRET not in str(caught.value)
    with pytest.raises(ValueError, match=r"DeclaredImputer.*DPMedianImputer"):
        DeclaredRangeScaler((0, 1)).fit(np.array([[np.nan]]))


def test_row_norm_bound_is_the_largest_norm_of_an_output_row():
    preprocess = _preprocess()
    bound = row_norm_bound(preprocess)
    assert bound == pytest.approx(np.sqrt(3.0))  # one 1 for the encoded column, at most 1 for each scaled one
    X = _table(0)
    X.loc[0, ["age", "hours"]] = [90.0, 120.0]  # a row at the bound
    norms = np.linalg.norm(preprocess.fit_transform(X).to_numpy(float), axis=1)
    assert norms.max() == pytest.approx(bound) and (norms <= bound + 1e-12).all()
    assert row_norm_bound(DeclaredRangeScaler((0, 1), output_range=(-2, 1)), n_features=4) == pytest.approx(4.0)
    with pytest.raises(TypeError, match="remainder"):
        row_norm_bound(ColumnTransformer([("s", DeclaredRangeScaler((0, 1)), [0])], remainder="passthrough"))
    with pytest.raises(TypeError, match="declares no bound"):
        row_norm_bound(ColumnTransformer([("s", DeclaredImputer(0.0), [0])]))


# --------------------------------------------------------------------------------------- nothing private is read
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fitting_on_other_rows_gives_the_same_transformer_and_a_row_never_depends_on_the_others(seed):
    """Proof of "no private statistic read": the fitted state and each row's output are functions of that row only."""
    X, other = _table(0), _table(seed, n=45)  # same columns, other rows (even another number of them)
    assert pickle.dumps(_preprocess().fit(X).transform(X)) == pickle.dumps(_preprocess().fit(other).transform(X))
    tolerant = _preprocess().set_params(categorical__handle_unknown="other")
    full = tolerant.fit(X).transform(X).to_numpy(float)
    changed = pd.concat([X.iloc[:1], other.iloc[1:]], ignore_index=True)
    changed.loc[1:, "workclass"] = SECRET  # every other row replaced, with levels never declared
    np.testing.assert_array_equal(tolerant.fit(changed).transform(changed).to_numpy(float)[0], full[0])
    for i in range(0, len(X), 6):  # a row alone gives its output in the table
        np.testing.assert_array_equal(tolerant.transform(X.iloc[[i]]).to_numpy(float)[0], full[i])
