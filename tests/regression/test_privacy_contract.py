"""Privacy side of the estimator contract: budgets, declared groups, leak warnings, privacy_spent_."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfair.datasets import make_regression
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning, SeededNoiseWarning, audit_epsilon
from dpfair.regression import FairRegressionPostProcessor, WassersteinBarycenterPostProcessor

FITTED = ("groups_", "bounds_", "grid_", "group_weights_", "pmfs_", "barycenter_", "targets_", "couplings_",
          "transport_", "objective_", "alpha_", "privacy_spent_")


def _data(n=500, seed=0):
    _, y, groups = make_regression(n, n_groups=2, disparity=2.0, random_state=seed)
    return y, groups


def _pp(**kwargs):
    args = {"epsilon": 0.6, "n_bins": 8, "bounds": (0.0, 1.0), "groups": [0, 1], "random_state": 0, **kwargs}
    return FairRegressionPostProcessor(**args)


def test_shared_budget_refuses_the_second_fit_and_the_first_stays_usable():
    y, g = _data()
    budget = PrivacyBudget(1.0)
    first = _pp(budget=budget).fit(y, sensitive_features=g)
    second = _pp(budget=budget, random_state=1)
    with pytest.raises(PrivacyBudgetExceededError):
        second.fit(y, sensitive_features=g)
    assert budget.spent() == (pytest.approx(0.6), 0.0) and len(budget.ledger) == 1
    assert not any(hasattr(second, name) for name in FITTED)  # nothing assigned by the refused fit
    assert first.predict(y, sensitive_features=g).shape == y.shape
    assert first.privacy_spent_ == {
        "epsilon": 0.6, "delta": 0.0, "protects": first.privacy_spent_["protects"],
        "neighbouring": first.privacy_spent_["neighbouring"], "relation": "replace",
        "noise": "seeded" if first.random_state is not None else "secure",
    }
    assert "group" in first.privacy_spent_["protects"] and "replace one row" in first.privacy_spent_["neighbouring"]


def test_refused_refit_keeps_the_previous_fitted_state_and_refit_alpha_is_free():
    y, g = _data()
    budget = PrivacyBudget(1.0)
    pp = _pp(budget=budget).fit(y, sensitive_features=g)
    before = {name: getattr(pp, name) for name in FITTED}
    pp.refit_alpha(0.3).refit_alpha(0.0)  # re-solving from private statistics charges nothing
    assert budget.spent()[0] == pytest.approx(0.6)
    before = {name: getattr(pp, name) for name in FITTED}
    y2, g2 = _data(seed=5)
    with pytest.raises(PrivacyBudgetExceededError):
        pp.set_params(n_bins=4, groups=[0, 1, 2]).fit(y2, sensitive_features=g2)
    for name, value in before.items():
        after = getattr(pp, name)
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after, value)
        else:
            assert after == value
    assert budget.spent()[0] == pytest.approx(0.6)


def test_budget_is_validated_before_anything_is_charged():
    y, g = _data(50)
    budget = PrivacyBudget(1.0)
    with pytest.raises(TypeError, match=r"budget must be a dpfair\.privacy\.PrivacyBudget"):
        _pp(budget=1.0).fit(y, sensitive_features=g)
    with pytest.raises(ValueError, match="outside the declared groups"):
        _pp(budget=budget, groups=[0]).fit(y, sensitive_features=g)
    assert budget.spent() == (0.0, 0.0)


@pytest.mark.filterwarnings("ignore:the private weight")
def test_groups_are_declared_in_order_and_required_with_finite_epsilon():
    y, g = _data(200)
    labels = np.where(g == 0, "x", "y")
    pp = _pp(groups=["y", "x", "never seen"]).fit(y, sensitive_features=labels)
    assert pp.groups_.tolist() == ["y", "x", "never seen"] and pp.pmfs_.shape == (3, 8)
    with pytest.raises(ValueError, match="groups is required with a finite epsilon"):
        _pp(groups=None).fit(y, sensitive_features=labels)
    with pytest.raises(ValueError, match="outside the declared groups"):
        _pp(groups=["x"]).fit(y, sensitive_features=labels)


def test_an_absent_declared_group_is_handled_by_the_noise_not_by_a_warning_about_absence():
    y, g = _data(200)
    warned = []
    for seed in range(30):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pp = _pp(epsilon=1.0, groups=[0, 1, 2], random_state=seed).fit(y, sensitive_features=g)
        messages = [str(w.message) for w in caught if not issubclass(w.category, SeededNoiseWarning)]
        assert all("private weight" in m and "after noise" in m for m in messages)
        warned.append(bool(messages))
        assert (pp.group_weights_[2] == 0) == bool(messages)  # only a zero *noisy* weight warns
    assert 0 < sum(warned) < len(warned)  # whether it warns depends on the noise, not on the absence


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.filterwarnings("ignore:the private weight")
def test_rare_group_is_audited_epsilon_dp_and_reading_groups_off_the_data_is_caught():
    """Neighbours: the last row is in the rare group "r" in one dataset and in "a" in the other."""
    eps = 1.0
    with_rare = np.array(["a"] * 5 + ["b"] * 4 + ["r"], dtype=object)
    without = with_rare.copy()
    without[-1] = "a"
    y = np.full(10, 0.5)

    def fit(groups, seed, declared):
        return FairRegressionPostProcessor(
            epsilon=eps, n_bins=1, bounds=(0.0, 1.0), groups=declared, random_state=int(seed)
        ).fit(y, sensitive_features=groups)

    def rare_weight(groups, size, rng):
        return np.array([fit(groups, s, ["a", "b", "r"]).group_weights_[-1] for s in rng.integers(0, 2**32, size=size)])

    def n_groups(read_off_data):
        def mechanism(groups, size, rng):
            declared = sorted(set(groups)) if read_off_data else ["a", "b", "r"]
            return np.array([fit(groups, s, declared).groups_.size for s in rng.integers(0, 2**32, size=size)])

        return mechanism

    honest = audit_epsilon(rare_weight, with_rare, without, n_samples=3000)
    assert honest.epsilon_lower_bound <= eps
    assert audit_epsilon(n_groups(False), with_rare, without, n_samples=200, discrete=True).epsilon_lower_bound == 0.0
    # the old behaviour: groups read off the private data (np.unique) -> groups_ differs deterministically
    broken = audit_epsilon(n_groups(True), with_rare, without, n_samples=200, discrete=True)
    assert broken.epsilon_lower_bound > eps


@pytest.mark.filterwarnings("ignore:the private weight")
def test_clipping_warning_does_not_count_private_rows():
    y = np.array([-3.0, 0.2, 0.4, 7.0, 9.0])
    with pytest.warns(UserWarning, match="some outputs lie outside bounds") as record:
        _pp(groups=["g"]).fit(y)
    message = " ".join(str(w.message) for w in record)
    assert "3" not in message and "output(s)" not in message


def test_non_private_paths_warn_and_say_so_in_privacy_spent():
    y, g = _data(100)
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf"):
        pp = _pp(epsilon=math.inf).fit(y, sensitive_features=g)
    assert pp.privacy_spent_["epsilon"] == math.inf
    with pytest.warns(PrivacyLeakWarning, match="bounds read off the data"):
        _pp(epsilon=math.inf, bounds=None, groups=None).fit(y, sensitive_features=g)
    with pytest.warns(PrivacyLeakWarning, match="exact empirical quantiles"):
        ref = WassersteinBarycenterPostProcessor(random_state=0).fit(y, sensitive_features=g)
    assert ref.privacy_spent_["epsilon"] == math.inf and ref.groups_.tolist() == [0, 1]


@pytest.mark.filterwarnings("ignore:the private weight")
def test_mixed_type_groups_no_longer_crash():
    y = np.array([0.1, 0.2, 0.7, 0.9])
    groups = np.array(["a", 1, "a", 1], dtype=object)
    pp = _pp(groups=["a", 1]).fit(y, sensitive_features=groups)
    assert pp.predict(y, sensitive_features=groups).shape == (4,)
    with pytest.warns(PrivacyLeakWarning):
        ref = WassersteinBarycenterPostProcessor(random_state=0).fit(y, sensitive_features=groups)
    assert ref.groups_.tolist() == ["a", 1] and np.isfinite(ref.predict(y, sensitive_features=groups)).all()
