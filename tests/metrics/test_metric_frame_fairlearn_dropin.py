"""PrivateMetricFrame as a drop-in for fairlearn's MetricFrame and its seeds.

* epsilon = inf equals fairlearn 0.15 exactly, NaN and scikit-learn's zero_division included, on 6 groups with
  0/0 rates and an empty declared group;
* at a finite epsilon a 0/0 or flagged group is NaN with its interval, never another group's number;
* fairlearn's ``random_state`` seeds the intervals' draws only, never the privacy noise;
* the fairlearn surface: count-based callables, ``control_features``, ``sample_params`` (pos_label), the ``*_ci``
  accessors, noisy group sizes, an "other" bucket, ``from_counts``.
"""

from __future__ import annotations

import functools
import math
import warnings

import fairlearn.metrics as fm
import numpy as np
import pandas as pd
import pytest
import sklearn.metrics as skm

from dpfair.metrics import OTHER, CountMetric, PrivateMetricFrame
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning

GROUPS = ["a", "b", "c", "d", "e", "f"]


def six_groups(n=3000, seed=0):
    """Six groups: 'e' has no true positives (TPR, recall 0/0), 'f' no predicted positives (precision 0/0)."""
    rng = np.random.default_rng(seed)
    group = rng.choice(GROUPS, n, p=[0.3, 0.25, 0.2, 0.15, 0.05, 0.05])
    y_true = rng.integers(0, 2, n)
    y_pred = (rng.uniform(size=n) < 0.3 + 0.4 * y_true).astype(int)
    y_true[group == "e"] = 0
    y_pred[group == "f"] = 0
    return y_true, y_pred, group


FUNCTIONS = {
    "selection_rate": fm.selection_rate,
    "tpr": fm.true_positive_rate,
    "fpr": fm.false_positive_rate,
    "tnr": fm.true_negative_rate,
    "fnr": fm.false_negative_rate,
    "accuracy": skm.accuracy_score,
    "precision": skm.precision_score,
    "precision_zero_division_1": functools.partial(skm.precision_score, zero_division=1),
    "precision_zero_division_nan": functools.partial(skm.precision_score, zero_division=np.nan),
    "recall": skm.recall_score,
    "f1": skm.f1_score,
    "f2": functools.partial(skm.fbeta_score, beta=2),
    "balanced_accuracy": skm.balanced_accuracy_score,
    "count": fm.count,
}


def fairlearn_frame(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's zero_division warnings, pandas deprecations
        return fm.MetricFrame(**kwargs)


def exact(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return PrivateMetricFrame(epsilon=math.inf, **kwargs)


def same(ours, theirs):
    """Equal to 1e-12, NaN where fairlearn has NaN (aligned on fairlearn's index)."""
    if isinstance(theirs, pd.DataFrame | pd.Series):
        ours = ours.loc[theirs.index]
        np.testing.assert_allclose(np.asarray(ours, float), np.asarray(theirs, float), rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(float(ours), float(theirs), rtol=1e-12, atol=1e-12)


def test_epsilon_inf_equals_fairlearn_with_zero_division_nan_and_an_empty_declared_group():
    y_true, y_pred, group = six_groups()
    features = pd.Series(group, name="group")
    theirs = fairlearn_frame(metrics=FUNCTIONS, y_true=y_true, y_pred=y_pred, sensitive_features=features)
    ours = exact(metrics=FUNCTIONS, y_true=y_true, y_pred=y_pred, sensitive_features=features, groups=[*GROUPS, "empty"])
    assert theirs.by_group.loc["e", "tpr"] == 0.0 and np.isnan(theirs.by_group.loc["f", "precision_zero_division_nan"])
    same(ours.by_group, theirs.by_group)
    assert ours.by_group.loc["empty"].isna().all()  # declared, no rows: undefined (fairlearn has no such row)
    same(ours.overall, theirs.overall)
    for method in ("between_groups", "to_overall"):
        same(ours.difference(method=method), theirs.difference(method=method))
        same(ours.ratio(method=method), theirs.ratio(method=method))
    same(ours.group_min(), theirs.group_min())
    same(ours.group_max(), theirs.group_max())


def test_epsilon_inf_equals_fairlearn_with_intersections_where_a_combination_is_empty():
    y_true, y_pred, group = six_groups(2000, seed=1)
    other = np.where(np.isin(group, ["e", "f"]), "x", np.random.default_rng(2).choice(["x", "y"], group.size))
    features = pd.DataFrame({"group": group, "other": other})  # (e, y) and (f, y) are empty: NaN in fairlearn
    metrics = {"sr": fm.selection_rate, "tpr": fm.true_positive_rate, "precision": skm.precision_score}
    theirs = fairlearn_frame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=features)
    ours = exact(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=features)
    assert theirs.by_group.isna().any().any()
    same(ours.by_group, theirs.by_group)
    for method in ("between_groups", "to_overall"):
        same(ours.difference(method=method), theirs.difference(method=method))
        same(ours.ratio(method=method), theirs.ratio(method=method))


def test_a_0_0_ratio_is_nan_as_in_fairlearn_not_1():
    y_true = np.array([0, 0, 0, 0, 1, 1])
    y_pred = np.zeros(6, dtype=int)
    group = np.array(["a", "a", "b", "b", "a", "b"])
    theirs = fairlearn_frame(metrics=fm.selection_rate, y_true=y_true, y_pred=y_pred, sensitive_features=group)
    ours = exact(metrics=fm.selection_rate, y_true=y_true, y_pred=y_pred, sensitive_features=group)
    assert np.isnan(theirs.ratio()) and np.isnan(ours.ratio())


def test_at_finite_epsilon_a_flagged_or_empty_group_is_nan_never_another_number():
    y_true, y_pred, group = six_groups(4000)
    mf = PrivateMetricFrame(metrics={"tpr": "true_positive_rate", "sr": "selection_rate"}, y_true=y_true, y_pred=y_pred,
                            sensitive_features=group, epsilon=1.0, groups=[*GROUPS, "empty"])
    assert mf.flagged.loc["empty"].all() and mf.flagged.loc["e", "tpr"]  # no positives in e: TPR is 0/0
    assert mf.by_group.loc["empty"].isna().all() and np.isnan(mf.by_group.loc["e", "tpr"])
    assert np.isfinite(mf.by_group.loc[["a", "b", "c", "d"]].to_numpy()).all()
    lower, upper = mf.conf_int["by_group"]["lower"], mf.conf_int["by_group"]["upper"]
    assert (lower.loc["empty"] == 0).all() and (upper.loc["empty"] == 1).all()  # its interval: the whole range
    # the summaries skip NaN as fairlearn does: they are those of the measured groups
    measured = mf.by_group["tpr"].dropna()
    assert mf.group_max()["tpr"] == measured.max() and mf.difference()["tpr"] == measured.max() - measured.min()
    # an unmeasurable group no longer pushes the bounds to [0, 1]: f's TPR is 0, the others' about 0.7
    assert 0.5 < mf.conf_int["difference"]["lower"]["tpr"] <= mf.conf_int["difference"]["upper"]["tpr"] < 0.9
    assert 0 <= mf.conf_int["ratio"]["lower"]["tpr"] <= mf.conf_int["ratio"]["upper"]["tpr"] < 0.2


def test_fewer_than_two_measured_groups_give_no_disparity():
    y_true, y_pred, group = six_groups(400)
    mf = PrivateMetricFrame(metrics="true_positive_rate", y_true=y_true[group == "a"], y_pred=y_pred[group == "a"],
                            sensitive_features=group[group == "a"], epsilon=1.0, groups=["a", "empty"])
    assert np.isnan(mf.difference()) and np.isnan(mf.ratio())
    assert mf.conf_int["difference"]["lower"] == 0 and mf.conf_int["difference"]["upper"] == 1


# ----------------------------------------------------------------------------- seeds
def test_fairlearns_random_state_does_not_seed_the_noise():
    y_true, y_pred, group = six_groups(2000)
    args = dict(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=group, epsilon=1.0,
                groups=GROUPS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # random_state (fairlearn's) gives secure noise: no warning
        first = PrivateMetricFrame(**args, random_state=42)
        second = PrivateMetricFrame(**args, random_state=42)
    assert not first.noisy_table_.equals(second.noisy_table_)  # secure noise: a fresh draw each time
    assert first.privacy_spent_.get("noise", "secure") == "secure"


def test_noise_random_state_seeds_the_noise_and_says_so():
    y_true, y_pred, group = six_groups(2000)
    args = dict(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=group, epsilon=1.0,
                groups=GROUPS, noise_random_state=42)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        first, second = PrivateMetricFrame(**args, random_state=1), PrivateMetricFrame(**args, random_state=2)
    assert first.noisy_table_.equals(second.noisy_table_)  # same noise ...
    assert not first.conf_int["by_group"]["lower"].equals(second.conf_int["by_group"]["lower"])  # ... other draws
    assert first.privacy_spent_["noise"] == "seeded"


def test_random_state_makes_the_intervals_reproducible():
    y_true, y_pred, group = six_groups(2000)
    args = dict(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=group, epsilon=math.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        first = PrivateMetricFrame(**args, random_state=7)
        second = PrivateMetricFrame(**args, random_state=np.random.RandomState(3))
        third = PrivateMetricFrame(**args, random_state=7)
    pd.testing.assert_series_equal(first.conf_int["by_group"]["upper"], third.conf_int["by_group"]["upper"])
    assert not first.conf_int["by_group"]["upper"].equals(second.conf_int["by_group"]["upper"])


# ----------------------------------------------------------------------------- the fairlearn surface
def test_a_count_metric_of_your_own_equals_the_function_on_the_rows():
    y_true, y_pred, group = six_groups()
    youden = CountMetric(lambda tn, fp, fn, tp: tp / (tp + fn) + tn / (tn + fp) - 1, name="youden",
                         value_range=(-1.0, 1.0))

    def youden_rows(y_t, y_p):
        return fm.true_positive_rate(y_t, y_p) + fm.true_negative_rate(y_t, y_p) - 1

    keep = np.isin(group, ["a", "b", "c", "d"])  # groups where both rates are defined
    theirs = fairlearn_frame(metrics={"youden": youden_rows}, y_true=y_true[keep], y_pred=y_pred[keep],
                             sensitive_features=group[keep])
    ours = exact(metrics={"youden": youden}, y_true=y_true[keep], y_pred=y_pred[keep], sensitive_features=group[keep])
    same(ours.by_group, theirs.by_group)
    same(ours.difference(), theirs.difference())


def test_control_features_equal_fairlearn():
    y_true, y_pred, group = six_groups(3000, seed=3)
    control = pd.Series(np.random.default_rng(4).choice(["2023", "2024"], group.size), name="year")
    features = pd.Series(group, name="group")
    metrics = {"sr": fm.selection_rate, "tpr": fm.true_positive_rate}
    theirs = fairlearn_frame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=features,
                             control_features=control)
    ours = exact(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=features, control_features=control)
    assert ours.control_levels == ["year"] and list(ours.by_group.index.names) == ["year", "group"]
    same(ours.by_group, theirs.by_group)
    same(ours.overall, theirs.overall)
    for method in ("between_groups", "to_overall"):
        same(ours.difference(method=method), theirs.difference(method=method))
        same(ours.ratio(method=method), theirs.ratio(method=method))
    private = PrivateMetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=features,
                                 control_features=control, epsilon=1.0,
                                 groups={"year": ["2023", "2024"], "group": GROUPS})
    assert private.difference().shape == (2, 2) and private.conf_int["difference"]["upper"].shape == (2, 2)


def test_pos_label_by_sample_params_or_partial():
    y_true, y_pred, group = six_groups(1500)
    words_true, words_pred = np.where(y_true == 1, "yes", "no"), np.where(y_pred == 1, "yes", "no")
    theirs = fairlearn_frame(metrics=functools.partial(fm.true_positive_rate, pos_label="yes"), y_true=words_true,
                             y_pred=words_pred, sensitive_features=group)
    by_params = exact(metrics={"tpr": "true_positive_rate"}, y_true=words_true, y_pred=words_pred,
                      sensitive_features=group, sample_params={"tpr": {"pos_label": "yes"}})
    by_partial = exact(metrics=functools.partial(fm.true_positive_rate, pos_label="yes"), y_true=words_true,
                       y_pred=words_pred, sensitive_features=group)
    same(by_params.by_group["tpr"], theirs.by_group)
    same(by_partial.by_group, theirs.by_group)
    with pytest.raises(ValueError, match="sample_weight"):
        exact(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=group,
              sample_params={"sample_weight": np.ones(group.size)})


def test_interval_accessors_are_named_and_shaped_like_fairlearns():
    y_true, y_pred, group = six_groups(3000)
    quantiles = [0.025, 0.5, 0.975]
    theirs = fairlearn_frame(metrics={"sr": fm.selection_rate}, y_true=y_true, y_pred=y_pred, sensitive_features=group,
                             n_boot=50, ci_quantiles=quantiles, random_state=0)
    ours = PrivateMetricFrame(metrics={"sr": fm.selection_rate}, y_true=y_true, y_pred=y_pred, sensitive_features=group,
                              epsilon=1.0, groups=GROUPS, n_boot=500, ci_quantiles=quantiles, random_state=0)
    assert ours.ci_quantiles == quantiles
    for name in ("overall_ci", "by_group_ci"):
        mine, fairlearns = getattr(ours, name), getattr(theirs, name)
        assert len(mine) == len(fairlearns) == 3 and type(mine[0]) is type(fairlearns[0])
        assert (np.asarray(mine[0], float) <= np.asarray(mine[2], float)).all()
    for name in ("group_min_ci", "group_max_ci", "difference_ci", "ratio_ci"):
        mine, fairlearns = getattr(ours, name)(), getattr(theirs, name)()
        assert len(mine) == len(fairlearns) == 3 and type(mine[0]) is type(fairlearns[0])
        assert (mine[0] <= mine[1]).all() and (mine[1] <= mine[2]).all()
    pd.testing.assert_series_equal(ours.difference_ci()[1], ours.difference())
    assert ours.difference_ci()[0]["sr"] == ours.conf_int["difference"]["lower"]["sr"]


def test_noisy_group_sizes():
    y_true, y_pred, group = six_groups(3000)
    mf = PrivateMetricFrame(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=group,
                            epsilon=1.0, groups=[*GROUPS, "empty"])
    true_sizes = pd.Series(group).value_counts()
    assert list(mf.group_sizes_.index) == [*GROUPS, "empty"] and (mf.group_sizes_ >= 0).all()
    assert (abs(mf.group_sizes_.loc[GROUPS] - true_sizes.loc[GROUPS]) < 40).all()  # scale 1 per cell


def test_undeclared_labels_go_to_an_other_bucket_that_is_always_reported():
    y_true, y_pred, group = six_groups(2000)
    budget = PrivacyBudget(10.0, neighbouring="add_remove")
    declared = ["a", "b", "c", "d"]  # e and f are not declared
    with_other = PrivateMetricFrame(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=group,
                                    epsilon=1.0, groups=declared, undeclared="other", budget=budget)
    assert list(with_other.by_group.index) == [*declared, OTHER]
    keep = np.isin(group, declared)
    without = PrivateMetricFrame(metrics="selection_rate", y_true=y_true[keep], y_pred=y_pred[keep],
                                 sensitive_features=group[keep], epsilon=1.0, groups=declared, undeclared="other")
    assert list(without.by_group.index) == [*declared, OTHER]  # same shape whether or not such rows exist
    with pytest.raises(ValueError, match="outside the declared groups"):
        PrivateMetricFrame(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=group,
                           epsilon=1.0, groups=declared)


def test_from_counts_is_the_same_release_as_from_the_rows():
    y_true, y_pred, group = six_groups(3000)
    rows = pd.DataFrame({"group": group, "label": y_true, "prediction": y_pred})
    counts = rows.groupby(["group", "label", "prediction"]).size().rename("n").reset_index()
    metrics = {"sr": "selection_rate", "tpr": "true_positive_rate"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        from_rows = PrivateMetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred,
                                       sensitive_features=pd.Series(group, name="group"), epsilon=1.0, groups=GROUPS,
                                       noise_random_state=5, random_state=5)
        from_counts = PrivateMetricFrame.from_counts(counts, metrics=metrics, sensitive_features="group", y_true="label",
                                                     y_pred="prediction", count="n", epsilon=1.0, groups=GROUPS,
                                                     noise_random_state=5, random_state=5)
    pd.testing.assert_frame_equal(from_counts.noisy_table_, from_rows.noisy_table_)
    pd.testing.assert_frame_equal(from_counts.by_group, from_rows.by_group)
    pd.testing.assert_series_equal(from_counts.conf_int["difference"]["upper"], from_rows.conf_int["difference"]["upper"])
    secure = PrivateMetricFrame.from_counts(counts, metrics=metrics, sensitive_features="group", y_true="label",
                                            y_pred="prediction", count="n", epsilon=1.0, groups=GROUPS)
    assert secure.privacy_spent_.get("noise", "secure") == "secure" and secure.by_group.shape == (6, 2)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [({"count": "nope"}, "count: column 'nope'"), ({"counts": "negative"}, "non-negative whole numbers"),
     ({"metrics": "mean_squared_error"}, "from_counts needs sums=")],
)
def test_from_counts_refuses_bad_tables_before_charging(change, fragment):
    counts = pd.DataFrame({"group": ["a", "a", "b"], "y_true": [0, 1, 1], "y_pred": [0, 1, 0], "count": [5, 7, 3]})
    if change.get("counts") == "negative":
        counts.loc[0, "count"] = -1
    budget = PrivacyBudget(10.0, neighbouring="add_remove")
    kwargs = {"metrics": "selection_rate", "sensitive_features": "group", "epsilon": 1.0, "groups": ["a", "b"],
              "budget": budget, **{k: v for k, v in change.items() if k != "counts"}}
    with pytest.raises(ValueError, match=fragment):
        PrivateMetricFrame.from_counts(counts, **kwargs)
    assert budget.spent() == (0.0, 0.0)


def test_spark_counts_give_the_same_frame():
    pyspark = pytest.importorskip("pyspark")  # not a dependency: the documented Spark path, tested where installed
    from pyspark.sql import SparkSession

    y_true, y_pred, group = six_groups(500)
    spark = SparkSession.builder.master("local[1]").appName("dpfair-test").getOrCreate()
    try:
        table = spark.createDataFrame(pd.DataFrame({"group": group, "y_true": y_true, "y_pred": y_pred}))
        counts = table.groupBy("group", "y_true", "y_pred").count()
        mf = PrivateMetricFrame.from_counts(counts, metrics="selection_rate", sensitive_features="group",
                                            epsilon=math.inf)
    finally:
        spark.stop()
    assert pyspark is not None
    same(mf.by_group, pd.Series(y_pred).groupby(group).mean())
