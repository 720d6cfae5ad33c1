"""PrivateMetricFrame: fairlearn's MetricFrame at epsilon=inf, the privacy contract, flags and refusals."""

from __future__ import annotations

import math
import warnings

import fairlearn.metrics as fm
import numpy as np
import pandas as pd
import pytest
import sklearn.metrics as skm

from dpfair.metrics import SUPPORTED_METRICS, PrivateMetricFrame
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning

COUNT_FUNCTIONS = {
    "selection_rate": fm.selection_rate,
    "true_positive_rate": fm.true_positive_rate,
    "false_positive_rate": fm.false_positive_rate,
    "true_negative_rate": fm.true_negative_rate,
    "false_negative_rate": fm.false_negative_rate,
    "accuracy_score": skm.accuracy_score,
    "precision_score": skm.precision_score,
    "recall_score": skm.recall_score,
    "balanced_accuracy_score": skm.balanced_accuracy_score,
}
REAL_FUNCTIONS = {
    "mean_squared_error": skm.mean_squared_error,
    "mean_absolute_error": skm.mean_absolute_error,
    "mean_prediction": fm.mean_prediction,
}


def classification_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    race = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    sex = rng.choice(["f", "m"], n)
    y_true = rng.integers(0, 2, n)
    bias = pd.Series(race).map({"a": 0.15, "b": 0.0, "c": -0.1}).to_numpy()
    y_pred = (rng.uniform(size=n) < 0.3 + 0.4 * y_true + bias).astype(int)
    return y_true, y_pred, race, sex


def regression_data(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    race = rng.choice(["a", "b", "c"], n)
    sex = rng.choice(["f", "m"], n)
    y_true = rng.uniform(0, 10, n)
    y_pred = np.clip(y_true + rng.normal(0, 1 + (race == "b"), n), 0, 10)
    return y_true, y_pred, race, sex


def exact(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return PrivateMetricFrame(epsilon=math.inf, random_state=0, **kwargs)


def assert_same(ours, theirs):
    """Every number equal to 1e-12 (fairlearn's index order may differ: align on it)."""
    if isinstance(theirs, pd.DataFrame | pd.Series):
        ours = ours.loc[theirs.index]
        np.testing.assert_allclose(np.asarray(ours, float), np.asarray(theirs, float), rtol=1e-12, atol=1e-12)
    else:
        assert ours == pytest.approx(float(theirs), rel=1e-12, abs=1e-12)


def compare_everything(ours, theirs):
    assert_same(ours.overall, theirs.overall)
    assert_same(ours.by_group, theirs.by_group)
    for method in ("between_groups", "to_overall"):
        assert_same(ours.difference(method=method), theirs.difference(method=method))
        assert_same(ours.ratio(method=method), theirs.ratio(method=method))
    assert_same(ours.group_min(), theirs.group_min())
    assert_same(ours.group_max(), theirs.group_max())


@pytest.mark.parametrize("multiple", [False, True], ids=["one feature", "race x sex"])
def test_count_metrics_equal_fairlearn_at_epsilon_inf(multiple):
    y_true, y_pred, race, sex = classification_data()
    features = pd.DataFrame({"race": race, "sex": sex}) if multiple else pd.Series(race, name="race")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fairlearn / pandas deprecations
        theirs = fm.MetricFrame(metrics=COUNT_FUNCTIONS, y_true=y_true, y_pred=y_pred, sensitive_features=features)
    by_name = exact(metrics={k: k for k in COUNT_FUNCTIONS}, y_true=y_true, y_pred=y_pred, sensitive_features=features)
    by_function = exact(metrics=COUNT_FUNCTIONS, y_true=y_true, y_pred=y_pred, sensitive_features=features)
    compare_everything(by_name, theirs)
    compare_everything(by_function, theirs)
    assert list(by_name.by_group.index.names) == list(theirs.by_group.index.names)


@pytest.mark.parametrize("multiple", [False, True], ids=["one feature", "race x sex"])
def test_regression_metrics_equal_fairlearn_at_epsilon_inf(multiple):
    y_true, y_pred, race, sex = regression_data()
    features = {"race": race, "sex": sex} if multiple else race
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = fm.MetricFrame(metrics=REAL_FUNCTIONS, y_true=y_true, y_pred=y_pred, sensitive_features=features)
    ours = exact(metrics=REAL_FUNCTIONS, y_true=y_true, y_pred=y_pred, sensitive_features=features, bounds=(0, 10))
    compare_everything(ours, theirs)


def test_single_metric_has_fairlearns_shapes():
    y_true, y_pred, race, _ = classification_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = fm.MetricFrame(metrics=fm.selection_rate, y_true=y_true, y_pred=y_pred, sensitive_features=race)
    ours = exact(metrics=fm.selection_rate, y_true=y_true, y_pred=y_pred, sensitive_features=race)
    assert isinstance(ours.by_group, pd.Series) and ours.by_group.name == "selection_rate"
    assert np.isscalar(ours.overall) and np.isscalar(ours.difference())
    assert_same(ours.by_group, theirs.by_group)
    assert_same(ours.difference(), theirs.difference())
    ci = ours.conf_int
    assert set(ci) >= {"overall", "by_group", "difference", "ratio"}
    assert ci["by_group"]["lower"].index.equals(ours.by_group.index)
    assert ci["difference"]["lower"] <= ours.difference() <= ci["difference"]["upper"]


def test_epsilon_inf_warns_and_says_it_protects_nothing():
    y_true, y_pred, race, _ = classification_data(500)
    with pytest.warns(PrivacyLeakWarning):
        mf = PrivateMetricFrame(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=race,
                                epsilon=math.inf)
    assert mf.privacy_spent_["epsilon"] == math.inf and "nothing" in mf.privacy_spent_["protects"]


def test_private_frame_contract_and_intervals():
    y_true, y_pred, race, _ = classification_data(20000)
    budget = PrivacyBudget(2.0, neighbouring="add_remove")
    metrics = {"sr": "selection_rate", "tpr": fm.true_positive_rate, "fpr": "false_positive_rate", "acc": "accuracy_score"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # a finite epsilon with secure noise must not warn
        mf = PrivateMetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=race, epsilon=1.0,
                                groups=["a", "b", "c"], budget=budget, random_state=0)
    assert budget.spent() == (1.0, 0.0) and len(budget.ledger) == 1  # any number of count metrics: one epsilon
    assert {"epsilon", "delta", "protects", "neighbouring"} <= set(mf.privacy_spent_)
    assert mf.privacy_spent_["epsilon"] == 1.0 and mf.privacy_spent_["delta"] == 0.0
    assert "add or remove one row" in mf.privacy_spent_["neighbouring"]
    assert len(mf.releases_) == 1 and "discrete Laplace" in mf.releases_[0]["mechanism"]
    assert list(mf.noisy_table_.columns) == ["TN", "FP", "FN", "TP"]
    exact_frame = exact(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=race)
    ci = mf.conf_int
    for name in ("overall", "by_group", "difference", "ratio", "difference_to_overall", "ratio_to_overall"):
        lower, upper = ci[name]["lower"], ci[name]["upper"]
        assert (np.asarray(lower) <= np.asarray(upper)).all()
        assert np.isfinite(np.asarray(lower, float)).all() and np.isfinite(np.asarray(upper, float)).all()
    # every estimate is close to the exact one (20,000 rows, epsilon = 1) and inside its own interval
    np.testing.assert_allclose(mf.by_group.to_numpy(), exact_frame.by_group.to_numpy(), atol=0.01)
    assert ((ci["by_group"]["lower"] <= mf.by_group) & (mf.by_group <= ci["by_group"]["upper"])).all().all()
    assert not mf.flagged.any().any()
    # seeded noise (noise_random_state) and seeded draws (random_state) are reproducible
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        seeded = [PrivateMetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=race, epsilon=1.0,
                                     groups=["a", "b", "c"], noise_random_state=0, random_state=0) for _ in range(2)]
    pd.testing.assert_frame_equal(seeded[0].by_group, seeded[1].by_group)
    pd.testing.assert_frame_equal(seeded[0].conf_int["by_group"]["upper"], seeded[1].conf_int["by_group"]["upper"])


def test_secure_noise_by_default():
    y_true, y_pred, race, _ = classification_data(1000)
    mf = PrivateMetricFrame(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=race,
                            epsilon=1.0, groups=["a", "b", "c"])
    assert np.isfinite(mf.by_group.to_numpy()).all()


def test_real_valued_metrics_spend_their_own_share():
    y_true, y_pred, race, _ = regression_data(5000)
    budget = PrivacyBudget(1.0, neighbouring="add_remove")
    mf = PrivateMetricFrame(metrics={"mse": "mean_squared_error", "mae": skm.mean_absolute_error}, y_true=y_true,
                            y_pred=y_pred, sensitive_features=race, epsilon=0.9, groups=["a", "b", "c"], bounds=(0, 10),
                            budget=budget, random_state=1, noise_random_state=1)
    assert budget.spent() == pytest.approx((0.9, 0.0))
    assert [r["epsilon"] for r in mf.releases_] == pytest.approx([0.3, 0.3, 0.3])  # group sizes, mse sums, mae sums
    assert mf.releases_[0]["release"] == "group sizes" and "split equally" in mf.privacy_spent_["protects"]
    assert mf.releases_[1]["scale"] == pytest.approx(100 / 0.3)  # sensitivity (10 - 0)**2 of the squared error
    exact_frame = exact(metrics={"mse": "mean_squared_error", "mae": "mean_absolute_error"}, y_true=y_true,
                        y_pred=y_pred, sensitive_features=race, bounds=(0, 10))
    lower, upper = mf.conf_int["by_group"]["lower"], mf.conf_int["by_group"]["upper"]
    truth = exact_frame.by_group
    assert ((lower <= truth) & (truth <= upper)).all().all()


def test_count_and_real_metrics_together():
    y_true, y_pred, race, _ = classification_data(3000)
    mf = PrivateMetricFrame(metrics={"sr": "selection_rate", "mean": "mean_prediction"}, y_true=y_true, y_pred=y_pred,
                            sensitive_features=race, epsilon=1.0, groups=["a", "b", "c"], bounds=(0, 1), random_state=2)
    assert len(mf.releases_) == 2 and mf.releases_[0]["release"].startswith("contingency table")
    assert abs(mf.by_group["sr"] - mf.by_group["mean"]).max() < 0.1  # same quantity from two releases


def test_empty_and_rare_declared_groups_are_flagged_and_nan():
    y_true, y_pred, race, _ = classification_data(4000)
    keep = race != "c"
    race = race.copy()
    race[np.flatnonzero(race == "b")[3:]] = "a"  # 'b' keeps three rows; 'c' below has none
    mf = PrivateMetricFrame(metrics={"tpr": "true_positive_rate", "sr": "selection_rate"}, y_true=y_true[keep],
                            y_pred=y_pred[keep], sensitive_features=race[keep], epsilon=0.5, groups=["a", "b", "c"],
                            random_state=3)
    assert list(mf.by_group.index) == ["a", "b", "c"]  # declared groups are all reported
    # (a flagged value is NaN, never the overall value presented as if measured)
    assert mf.by_group.loc["c"].isna().all() and np.isnan(mf.by_group.loc["b", "tpr"])
    assert np.isfinite(mf.by_group.loc["a"].to_numpy()).all()
    assert mf.flagged.loc["c"].all() and mf.flagged.loc["b", "tpr"] and not mf.flagged.loc["a"].any()
    lower, upper = mf.conf_int["by_group"]["lower"], mf.conf_int["by_group"]["upper"]
    assert (lower.loc["c"] == 0).all() and (upper.loc["c"] == 1).all()  # the whole range
    assert np.isnan(mf.difference()["tpr"])  # only 'a' is measurable: the disparity is unknown ...
    assert mf.conf_int["difference"]["lower"]["tpr"] == 0.0 and mf.conf_int["difference"]["upper"]["tpr"] == 1.0
    # at epsilon = inf only an empty denominator is flagged; a declared group with no rows is NaN (fairlearn has no row)
    ex = exact(metrics="true_positive_rate", y_true=y_true[keep], y_pred=y_pred[keep],
               sensitive_features=race[keep], groups=["a", "b", "c"])
    assert ex.flagged.loc["c"] and not ex.flagged.loc["a"] and np.isnan(ex.by_group.loc["c"])
    assert np.isfinite(ex.by_group.loc[["a", "b"]].to_numpy()).all()


def test_intersectional_groups_declared_as_dict_or_tuples():
    y_true, y_pred, race, sex = classification_data(3000)
    features = pd.DataFrame({"race": race, "sex": sex})
    levels = {"race": ["a", "b", "c", "d"], "sex": ["f", "m"]}  # 'd' is declared but absent
    mf = PrivateMetricFrame(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=features,
                            epsilon=1.0, groups=levels, random_state=0)
    assert len(mf.by_group) == 8 and mf.by_group.index.names == ["race", "sex"]
    assert mf.flagged.loc[("d", "f")] and mf.flagged.loc[("d", "m")]
    cells = [("a", "f"), ("a", "m"), ("b", "f"), ("b", "m"), ("c", "f"), ("c", "m")]
    mf2 = PrivateMetricFrame(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=features,
                             epsilon=1.0, groups=cells, random_state=0)
    assert list(mf2.by_group.index) == cells
    assert mf.sensitive_levels == ["race", "sex"]


def test_a_two_dimensional_array_and_a_dict_work_like_fairlearn():
    y_true, y_pred, race, sex = classification_data(2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = fm.MetricFrame(metrics={"sr": fm.selection_rate}, y_true=y_true, y_pred=y_pred,
                                sensitive_features=np.c_[race, sex])
    ours = exact(metrics={"sr": "selection_rate"}, y_true=y_true, y_pred=y_pred, sensitive_features=np.c_[race, sex])
    assert list(ours.by_group.index.names) == ["sensitive_feature_0", "sensitive_feature_1"]
    assert_same(ours.by_group, theirs.by_group)


def test_supported_metrics_list():
    assert len(SUPPORTED_METRICS) == 15 and {"selection_rate", "f1_score", "count", "r2_score"} <= set(SUPPORTED_METRICS)
