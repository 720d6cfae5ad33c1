"""``sample_params`` with ``sample_weight`` under a declared ``sample_weight_bound``.

* epsilon = inf equals fairlearn's MetricFrame with the same ``sample_params`` (NaN and zero_division included);
* at a finite epsilon the weighted table gets Laplace noise of scale ``w_max / epsilon`` (the stated sensitivity);
* refusals (weights outside the bound, no bound, mixed weighting) come before any charge;
* the weighted release passes the empirical privacy audit and a half-noise mutant is caught.
"""

from __future__ import annotations

import functools
import warnings

import fairlearn.metrics as fm
import numpy as np
import pytest
import sklearn.metrics as skm

from dpfair.metrics import PrivateMetricFrame, _core
from dpfair.metrics._releases import weighted_table_sensitivity
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning, audit_epsilon
from dpfair.privacy.noise import SeededNoise

GROUPS = ["a", "b", "c", "d", "e", "f"]
W_MAX = 3.0
FUNCTIONS = {
    "selection_rate": fm.selection_rate,
    "tpr": fm.true_positive_rate,
    "accuracy": skm.accuracy_score,
    "f1": skm.f1_score,
    "precision": skm.precision_score,
    "precision_nan": functools.partial(skm.precision_score, zero_division=np.nan),
    "recall_1": functools.partial(skm.recall_score, zero_division=1),
}


def weighted_six_groups(n=3000, seed=0, integer=False):
    """Six groups: 'e' has no true positives (TPR 0/0), 'f' no predicted positives (precision 0/0)."""
    rng = np.random.default_rng(seed)
    group = rng.choice(GROUPS, n, p=[0.3, 0.25, 0.2, 0.15, 0.05, 0.05])
    y_true = rng.integers(0, 2, n)
    y_pred = (rng.uniform(size=n) < 0.3 + 0.4 * y_true).astype(int)
    y_true[group == "e"] = 0
    y_pred[group == "f"] = 0
    weight = rng.integers(0, 4, n).astype(float) if integer else rng.uniform(0.0, W_MAX, n)
    return y_true, y_pred, group, weight


@pytest.mark.parametrize("integer", [True, False])
def test_epsilon_inf_equals_fairlearn_with_sample_weight(integer):
    y_true, y_pred, group, weight = weighted_six_groups(integer=integer)
    params = {key: {"sample_weight": weight} for key in FUNCTIONS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fm.MetricFrame(metrics=FUNCTIONS, y_true=y_true, y_pred=y_pred, sensitive_features=group,
                             sample_params=params)
        mf = PrivateMetricFrame(metrics=FUNCTIONS, y_true=y_true, y_pred=y_pred, sensitive_features=group,
                                epsilon=np.inf, groups=GROUPS, sample_params=params, sample_weight_bound=W_MAX)
    # the 0/0 cases: fairlearn's own values (TPR 0/0 is 0, precision with zero_division=nan is NaN, recall 1)
    assert ref.by_group.loc["e", "tpr"] == 0.0 and mf.by_group.loc["e", "tpr"] == 0.0
    assert np.isnan(ref.by_group.loc["f", "precision_nan"]) and np.isnan(mf.by_group.loc["f", "precision_nan"])
    assert ref.by_group.loc["e", "recall_1"] == 1.0 and mf.by_group.loc["e", "recall_1"] == 1.0
    tolerance = 0.0 if integer else 1e-12  # float weights: the sums are added in another order
    np.testing.assert_allclose(mf.by_group[list(FUNCTIONS)].to_numpy(), ref.by_group[list(FUNCTIONS)].to_numpy(),
                               rtol=0, atol=tolerance)
    np.testing.assert_allclose(mf.overall[list(FUNCTIONS)].to_numpy(), ref.overall[list(FUNCTIONS)].to_numpy(),
                               rtol=0, atol=tolerance)
    np.testing.assert_allclose(mf.difference().to_numpy(), ref.difference().to_numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(mf.ratio().to_numpy(), ref.ratio().to_numpy(), rtol=0, atol=1e-12)
    # the weighted sums, not the counts, are released: the group sizes are total weights
    np.testing.assert_allclose(mf.group_sizes_.to_numpy(), [weight[group == g].sum() for g in GROUPS], rtol=1e-12)


def test_noise_scale_is_the_weight_bound_over_epsilon_and_secure_by_default():
    y_true, y_pred, group, weight = weighted_six_groups(n=600, seed=1)
    budget = PrivacyBudget(2.0, neighbouring="add_remove")
    mf = PrivateMetricFrame(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=group,
                            epsilon=0.5, groups=GROUPS, sample_params={"sample_weight": weight},
                            sample_weight_bound=W_MAX, budget=budget)
    assert mf.releases_[0]["scale"] == pytest.approx(W_MAX / 0.5) and "Laplace" in mf.releases_[0]["mechanism"]
    assert weighted_table_sensitivity(W_MAX) == W_MAX
    assert mf.privacy_spent_["noise"] == "secure" and budget.spent()[0] == pytest.approx(0.5)
    lower, upper = mf.conf_int["by_group"]["lower"], mf.conf_int["by_group"]["upper"]
    assert ((lower <= mf.by_group) | mf.by_group.isna()).all() and ((mf.by_group <= upper) | mf.by_group.isna()).all()


def test_seeded_weighted_release_is_the_exact_weighted_table_plus_laplace_noise():
    y_true, y_pred, group, weight = weighted_six_groups(n=800, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        mf = PrivateMetricFrame(metrics={"sr": "selection_rate", "tpr": "true_positive_rate"}, y_true=y_true,
                                y_pred=y_pred, sensitive_features=group, epsilon=1.0, groups=GROUPS,
                                sample_params={"sr": {"sample_weight": weight}, "tpr": {"sample_weight": weight}},
                                sample_weight_bound=W_MAX, noise_random_state=5)
        index = np.searchsorted(GROUPS, group)
        exact = np.bincount(index * 4 + 2 * y_true + y_pred, weights=weight, minlength=24).reshape(6, 4)
        expected = _core.release_sums(exact, W_MAX, 1.0, SeededNoise(5))
    np.testing.assert_allclose(mf.noisy_table_.to_numpy(), expected, rtol=1e-12)
    # scale check: the noise (released minus exact) has the Laplace law's mean absolute value W_MAX / epsilon
    assert mf.noisy_table_.to_numpy().dtype.kind == "f"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sample_weight_bound": 1.0}, "sample_weight holds weights outside"),
        ({}, "sample_weight_bound is required"),
        ({"sample_weight_bound": -1.0}, "sample_weight_bound must be a positive"),
    ],
)
def test_refusals_come_before_any_charge(kwargs, match):
    y_true, y_pred, group, weight = weighted_six_groups(n=200, seed=3)
    budget = PrivacyBudget(1.0)
    with pytest.raises(ValueError, match=match) as info:
        PrivateMetricFrame(metrics="selection_rate", y_true=y_true, y_pred=y_pred, sensitive_features=group,
                           epsilon=0.5, groups=GROUPS, sample_params={"sample_weight": weight}, budget=budget, **kwargs)
    assert budget.spent()[0] == 0.0
    assert str(weight.max())[:5] not in str(info.value)  # no private value in the text


def test_mixed_or_unbounded_weighting_is_refused():
    y_true, y_pred, group, weight = weighted_six_groups(n=200, seed=4)
    common = {"y_true": y_true, "y_pred": y_pred, "sensitive_features": group, "epsilon": 1.0, "groups": GROUPS}
    with pytest.raises(ValueError, match="same sample_weight array object"):
        PrivateMetricFrame(metrics={"sr": "selection_rate", "tpr": "true_positive_rate"},
                           sample_params={"sr": {"sample_weight": weight}}, sample_weight_bound=W_MAX, **common)
    with pytest.raises(ValueError, match="count-based rates only"):
        PrivateMetricFrame(metrics={"n": "count"}, sample_params={"n": {"sample_weight": weight}},
                           sample_weight_bound=W_MAX, **common)
    with pytest.raises(ValueError, match="no metric has a sample_weight"):
        PrivateMetricFrame(metrics="selection_rate", sample_weight_bound=W_MAX, **common)
    with pytest.raises(ValueError, match="sample_weight holds weights outside"):
        PrivateMetricFrame(metrics="selection_rate", sample_params={"sample_weight": -weight},
                           sample_weight_bound=W_MAX, **common)


def test_weighted_release_passes_the_audit_and_a_half_noise_mutant_is_caught():
    """Neighbours: the same rows plus one row of the largest weight W_MAX (the worst case of the proof)."""
    epsilon = 1.0
    y_true, y_pred, group, weight = weighted_six_groups(n=400, seed=5)
    index = np.searchsorted(GROUPS, group)
    table = np.bincount(index * 4 + 2 * y_true + y_pred, weights=weight, minlength=24).reshape(6, 4)
    plus_one = table.copy()
    plus_one[1, _core.FN] += W_MAX

    def mechanism(share_of_noise):
        def run(data, size, rng):
            stack = np.broadcast_to(data, (size, *data.shape))
            return _core.release_sums(stack, weighted_table_sensitivity(W_MAX), epsilon / share_of_noise,
                                      SeededNoise(rng))[:, 1, _core.FN]

        return run

    honest = audit_epsilon(mechanism(1.0), table, plus_one, n_samples=100_000, n_bins=40, random_state=2)
    mutant = audit_epsilon(mechanism(0.5), table, plus_one, n_samples=100_000, n_bins=40, random_state=2)
    print(f"weighted audit: honest {honest.epsilon_lower_bound:.3f}, half-noise mutant {mutant.epsilon_lower_bound:.3f}")
    assert honest.epsilon_lower_bound <= epsilon
    assert mutant.epsilon_lower_bound > epsilon
