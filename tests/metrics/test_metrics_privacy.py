"""The releases behind PrivateMetricFrame pass the empirical privacy audit; a half-noise mutant is caught."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpfair.metrics import PrivateMetricFrame, _core
from dpfair.privacy import PrivacyLeakWarning, audit_epsilon
from dpfair.privacy.noise import SeededNoise

EPSILON = 1.0


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2, n), rng.integers(0, 2, n), rng.choice(["a", "b", "c"], n)


def _neighbouring_tables():
    """The exact table of a data set, and of the same data set plus one row (group 'b', y_true 1, y_pred 0)."""
    y_true, y_pred, group = _data()
    index = np.searchsorted(["a", "b", "c"], group)
    table = _core.tabulate(index, 3, y_true, y_pred)
    plus_one = table.copy()
    plus_one[1, _core.FN] += 1
    return table, plus_one


def _table_mechanism(share_of_noise=1.0):
    def mechanism(table, size, rng):
        stack = np.broadcast_to(table, (size, *table.shape))
        noisy = _core.release_table(stack, EPSILON / share_of_noise, SeededNoise(rng))
        return noisy[:, 1, _core.FN]  # the cell the added row changes (the others do not depend on it)

    return mechanism


def test_the_frame_releases_exactly_the_audited_table():
    y_true, y_pred, group = _data()
    warnings.simplefilter("ignore", PrivacyLeakWarning)  # seeded noise, on purpose (pytest restores the filters)
    mf = PrivateMetricFrame(metrics={"sr": "selection_rate", "tpr": "true_positive_rate"}, y_true=y_true, y_pred=y_pred,
                            sensitive_features=group, epsilon=EPSILON, groups=["a", "b", "c"], noise_random_state=7)
    table, _ = _neighbouring_tables()
    expected = _core.release_table(table, EPSILON, SeededNoise(7))
    np.testing.assert_array_equal(mf.noisy_table_.to_numpy(), expected)
    assert mf.privacy_spent_["epsilon"] == EPSILON and mf.releases_[0]["epsilon"] == EPSILON


def test_table_release_passes_the_audit_and_a_half_noise_mutant_is_caught():
    table, plus_one = _neighbouring_tables()
    honest = audit_epsilon(_table_mechanism(), table, plus_one, n_samples=200_000, discrete=True, random_state=1)
    mutant = audit_epsilon(_table_mechanism(0.5), table, plus_one, n_samples=200_000, discrete=True, random_state=1)
    print(f"audit lower bounds at claimed epsilon={EPSILON}: honest {honest.epsilon_lower_bound:.3f}, "
          f"half-noise mutant {mutant.epsilon_lower_bound:.3f}")
    assert honest.epsilon_lower_bound <= EPSILON
    assert mutant.epsilon_lower_bound > EPSILON


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_real_valued_sums_pass_the_audit_and_a_half_noise_mutant_is_caught():
    width = 4.0  # (bounds width 2) ** 2: the squared error of one row is at most 4
    sums = np.array([10.0, 25.0, 3.0])
    plus_one = sums.copy()
    plus_one[2] += width  # one added row with the largest per-row value

    def mechanism(share_of_noise):
        def run(data, size, rng):
            stack = np.broadcast_to(data, (size, 3))
            return _core.release_sums(stack, width, EPSILON / share_of_noise, SeededNoise(rng))[:, 2]

        return run

    honest = audit_epsilon(mechanism(1.0), sums, plus_one, n_samples=100_000, n_bins=40, random_state=2)
    mutant = audit_epsilon(mechanism(0.5), sums, plus_one, n_samples=100_000, n_bins=40, random_state=2)
    print(f"sums audit: honest {honest.epsilon_lower_bound:.3f}, half-noise mutant {mutant.epsilon_lower_bound:.3f}")
    assert honest.epsilon_lower_bound <= EPSILON
    assert mutant.epsilon_lower_bound > EPSILON


def test_identical_noise_neighbours_differ_in_exactly_the_cell_of_the_added_row():
    """The count release under identical noise -- adding one row moves one cell by one, nothing else."""
    import warnings as _warnings

    from dpfair.privacy import SeededNoiseWarning as _Seeded

    rng = np.random.default_rng(11)
    y, p = rng.integers(0, 2, 300), rng.integers(0, 2, 300)
    g = rng.choice(["a", "b", "c"], 300)
    common = {"metrics": "true_positive_rate", "epsilon": 1.0, "groups": ["a", "b", "c"], "noise_random_state": 5}
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", _Seeded)
        small = PrivateMetricFrame(y_true=y, y_pred=p, sensitive_features=g, **common).noisy_table_
        added = PrivateMetricFrame(y_true=np.append(y, 1), y_pred=np.append(p, 0), sensitive_features=np.append(g, "b"),
                                   **common).noisy_table_
    difference = (added - small).to_numpy()
    expected = np.zeros_like(difference)
    expected[list(small.index).index("b"), list(small.columns).index("FN")] = 1  # y_true 1, y_pred 0: a false negative
    np.testing.assert_array_equal(difference, expected)
