"""PrivateMetricFrame on the one release template: same numbers and ledger, results set only at the end."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpfair.base import PrivateMechanismMixin
from dpfair.metrics import PrivateMetricFrame
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning

RNG = np.random.default_rng(1)
X = RNG.uniform(-0.5, 0.5, size=(200, 2))
Y = np.clip(X @ [1.0, -0.5] + 0.1 * RNG.normal(size=200), -1, 1)
G = RNG.choice(["a", "b"], 200)
Y_PRED = (RNG.uniform(size=200) < 0.5).astype(int)
Y_TRUE = (Y > 0).astype(int)


def _frame(budget, **changes):
    args = {"metrics": {"sr": "selection_rate", "mse": "mean_squared_error"}, "y_true": Y_TRUE, "y_pred": Y_PRED,
            "sensitive_features": G, "epsilon": 1.0, "groups": ["a", "b"], "bounds": (0, 1), "budget": budget,
            "noise_random_state": 7, "random_state": 7, **changes}
    return PrivateMetricFrame(**args)


def test_the_frame_is_a_private_mechanism():
    assert issubclass(PrivateMetricFrame, PrivateMechanismMixin)


def test_seeded_numbers_and_the_ledger_label_are_unchanged():
    # the values the hand-written constructor gave before the template (same seed, same numbers)
    budget = PrivacyBudget(10.0, neighbouring="add_remove")
    with pytest.warns(PrivacyLeakWarning):  # seeded noise says so
        frame = _frame(budget)
    assert frame.noisy_table_.to_numpy().tolist() == [[26, 25, 20, 25], [29, 29, 24, 29]]
    np.testing.assert_allclose(frame.by_group.to_numpy(), [[0.5208333333333334, 0.5148040351885453],
                                                            [0.5225225225225225, 0.4753199530978452]], rtol=1e-12)
    split = ("epsilon split equally: contingency table (group x y_true x y_pred): epsilon 0.5; per-group sums for mse "
             "(mean_squared_error, per-row value in [0, 1]): epsilon 0.5")
    assert [entry.label for entry in budget.ledger] == [f"PrivateMetricFrame ({split})"]
    assert frame.privacy_spent_["protects"] == f"every row's sensitive features, y_true and y_pred; {split}"
    assert [r["epsilon"] for r in frame.releases_] == [0.5, 0.5]
    assert _frame(None).by_group.equals(frame.by_group)


def test_group_min_and_max_are_the_extremes_of_the_usable_groups():
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf"):
        frame = _frame(None, epsilon=math.inf, groups=None, metrics="selection_rate")  # exact: no group is flagged
    assert not frame.flagged.any()
    assert frame.group_min() == frame.by_group.min() and frame.group_max() == frame.by_group.max()
    with pytest.raises(ValueError, match="Invalid error value specified"):
        frame.group_max(errors="ignore")


@pytest.mark.parametrize(
    "changes", [{"noise_random_state": 0.5}, {"random_state": 0.5}, {"epsilon": 1e-300}, {"y_pred": Y_PRED[:-1]}]
)
def test_refusals_charge_nothing(changes):
    budget = PrivacyBudget(10.0)
    with pytest.raises((TypeError, ValueError)):
        _frame(budget, **changes)
    assert budget.spent() == (0.0, 0.0)


def test_the_steps_hand_each_other_frozen_dataclasses():
    # typed stages: a misspelt field is an AttributeError where it is read or written, never a silent KeyError later
    from dataclasses import FrozenInstanceError

    from dpfair.metrics._stages import ExactStatistics, FrameOptions, NoisyRelease, Rows
    from dpfair.privacy.noise import SeededNoise

    with pytest.warns(PrivacyLeakWarning):
        frame = _frame(None)
    params, data = frame._validate_all(Y_TRUE, Y_PRED, G)
    assert isinstance(params.options, FrameOptions) and isinstance(data.rows, Rows)
    statistics = frame._compute_statistics(params, data)
    noisy = frame._draw_noise(params, statistics, SeededNoise(np.random.default_rng(0)))
    assert isinstance(statistics, ExactStatistics) and isinstance(noisy, NoisyRelease)
    assert data.rows.grouping.n_groups == 2 and data.rows.labels_true is not None
    for stage in (params.options, data.rows, data.rows.grouping, statistics, noisy):
        with pytest.raises(AttributeError):
            stage.labels_ture  # noqa: B018
        with pytest.raises(FrozenInstanceError):
            stage.table_ok = False
    assert not hasattr(params.options, "mapping")
