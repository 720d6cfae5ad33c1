"""The attribute-blind post-processor's default tolerance under the attribute relation (_blind_attribute)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor, DPFairClassifier, blind_postprocessing
from dpfair.classification._blind_attribute import (
    ATTRIBUTE_QUIET_GAMMA,
    ATTRIBUTE_QUIET_MIN_GROUPS,
    ATTRIBUTE_QUIET_SPLIT,
    attribute_gamma,
    second_rate_noise,
)
from dpfair.classification._blind_records import project_to_group_masses
from dpfair.classification.blind_postprocessing import DEFAULT_MEMBERSHIP_SHARE
from dpfair.classification.blind_table import (
    ATTRIBUTE_GAMMA,
    BLIND_CONSTRAINTS,
    constrained_rates,
    project_to_totals,
    rate_noise,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning",
                                        "ignore::dpfair.classification.SmallBudgetWarning")

EO = BLIND_CONSTRAINTS["equalized_odds"]


def _table(masses: list[float], n_cells: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """A valid table: each group's mass spread evenly over the cells and the two labels; its exact error table."""
    q = np.zeros((n_cells, len(masses), 2))
    for a, mass in enumerate(masses):
        q[:, a, :] = mass / (2 * n_cells)
    return q, q.sum(axis=1)


def _noise(mass_per_label: float, n_cells: int, m: int, epsilon: float) -> float:
    """rate_noise's closed form: sqrt(2 C) (2 / (m epsilon)) / q."""
    return math.sqrt(2 * n_cells) * 2.0 / (m * epsilon) / mass_per_label


def test_the_second_noise_is_the_closed_form_of_the_second_smallest_group():
    m, epsilon, n_cells = 10_000, 1.0, 8
    masses = [0.5, 0.3, 0.15, 0.05]
    q, errors = _table(masses, n_cells)
    expected = _noise(0.15 / 2, n_cells, m, epsilon)  # the second smallest group, per label
    assert second_rate_noise(q, errors, True, m, epsilon, EO) == pytest.approx(expected)
    assert second_rate_noise(q, errors, False, m, epsilon, EO) == pytest.approx(expected)  # (valid: unchanged)
    assert second_rate_noise(q[:, :1], errors, True, m, epsilon, EO) == 0.0  # one group: no second
    assert second_rate_noise(q, errors, True, m, math.inf, EO) == 0.0


@pytest.mark.parametrize("n_groups", [2, 3])
def test_fewer_than_four_groups_keep_the_attribute_tolerance_however_quiet(n_groups):
    q, errors = _table([1.0 / n_groups] * n_groups)
    assert second_rate_noise(q, errors, True, 10**7, 1.0, EO) < 1e-3
    assert attribute_gamma(q, errors, True, 10**7, 1.0, EO) == ATTRIBUTE_GAMMA
    assert attribute_gamma(q, errors, True, 10**7, math.inf, EO) == ATTRIBUTE_GAMMA
    assert ATTRIBUTE_QUIET_MIN_GROUPS == 4


def test_four_groups_take_the_quiet_tolerance_up_to_the_split_and_not_beyond():
    n_cells, epsilon = 8, 1.0
    masses = [0.4, 0.3, 0.2, 0.1]
    q, errors = _table(masses, n_cells)
    # the m at which the second smallest group's (0.2) noise is exactly the split (799.99..., so at m = 800 the noise
    # is the split to the last bit and only "<=" takes the quiet tolerance), then one row fewer (noisier)
    m_split = math.sqrt(2 * n_cells) * 2.0 / (epsilon * ATTRIBUTE_QUIET_SPLIT * 0.1)
    m_at = math.ceil(m_split)
    assert second_rate_noise(q, errors, True, m_at, epsilon, EO) <= ATTRIBUTE_QUIET_SPLIT
    assert attribute_gamma(q, errors, True, m_at, epsilon, EO) == ATTRIBUTE_QUIET_GAMMA
    assert attribute_gamma(q, errors, True, m_at - 1, epsilon, EO) == ATTRIBUTE_GAMMA
    # no noise: every group with rows is exact (unless two or more declared groups have no rows)
    assert attribute_gamma(q, errors, True, 100, math.inf, EO) == ATTRIBUTE_QUIET_GAMMA
    assert ATTRIBUTE_QUIET_GAMMA < ATTRIBUTE_GAMMA


def test_two_noisy_groups_keep_the_attribute_tolerance_even_with_many_rows():
    q, errors = _table([0.9, 0.08, 0.0015, 0.0015])  # two groups of 0.15 % each: the second noise is theirs
    assert attribute_gamma(q, errors, True, 20_000, 1.0, EO) == ATTRIBUTE_GAMMA
    q[:, 2:, :] = 0.0  # empty: infinite noise, also without noise
    assert second_rate_noise(q, q.sum(axis=1), True, 20_000, 1.0, EO) == math.inf
    assert attribute_gamma(q, q.sum(axis=1), True, 20_000, math.inf, EO) == ATTRIBUTE_GAMMA


def _noisy_table() -> tuple[np.ndarray, np.ndarray]:
    """A released table with negative cells: group 2's cells swing by +-0.03 around 0.0125 (its mass 0.2)."""
    q, errors = _table([0.4, 0.3, 0.2, 0.1])
    q[:, 2, :] += 0.03 * np.array([1.0, -1.0] * 4)[:, None]
    return q, errors


@pytest.mark.parametrize("error_is_exact", [True, False])
def test_the_noise_is_read_off_the_table_the_program_reads_not_the_clipped_one(error_is_exact):
    """Clipping adds the negative cells back as mass (less noise); the projections do not: the split between them."""
    q, errors = _noisy_table()
    project = (lambda t: project_to_totals(t, errors)) if error_is_exact else project_to_group_masses

    def noise_of(table, m):
        return max(np.sort(rate_noise(constrained_rates(table, labels)[1], 8, m, 1.0))[-2] for labels in EO)

    m = 1_000
    read, clipped = noise_of(project(q), m), noise_of(np.maximum(q, 0.0), m)
    assert clipped < 0.95 * read  # apart, so an m puts the split between them
    m_between = int(m * (read + clipped) / 2 / ATTRIBUTE_QUIET_SPLIT)  # noise scales as 1 / m
    assert noise_of(np.maximum(q, 0.0), m_between) < ATTRIBUTE_QUIET_SPLIT < noise_of(project(q), m_between)
    assert second_rate_noise(q, errors, error_is_exact, m_between, 1.0, EO) == pytest.approx(
        noise_of(project(q), m_between))
    assert attribute_gamma(q, errors, error_is_exact, m_between, 1.0, EO) == ATTRIBUTE_GAMMA
    # and the two projections differ here: the flag picks the one the program reads
    assert second_rate_noise(q, errors, error_is_exact, m, 1.0, EO) != pytest.approx(
        second_rate_noise(q, errors, not error_is_exact, m, 1.0, EO), rel=0.02)


def _four_groups(n_rows: int, shares: tuple[float, ...], seed: int = 0):
    rng = np.random.default_rng(seed)
    g = rng.choice(len(shares), size=n_rows, p=shares)
    X = rng.normal(size=(n_rows, 4)) + 0.6 * np.eye(4)[g]  # the features carry the group
    logits = X @ np.array([1.2, -0.8, 0.5, 0.3]) + 0.4 * (g == 0) - 0.2
    y = (rng.uniform(size=n_rows) < 1 / (1 + np.exp(-logits))).astype(int)
    return X, y, g


def _blind(X, y, g, gamma=None, epsilon=2.0):
    return DPBlindPostProcessor(LogisticRegression(), epsilon=epsilon, gamma=gamma, groups=[0, 1, 2, 3], prefit=False,
                                random_state=5).fit(X, y, sensitive_features=g)


def test_the_post_processor_resolves_the_quiet_tolerance_from_its_release_and_fits_what_it_says(monkeypatch):
    X, y, g = _four_groups(5_000, (0.4, 0.3, 0.2, 0.1))
    calls = []

    def spy(*args):
        calls.append(args)
        return attribute_gamma(*args)

    monkeypatch.setattr(blind_postprocessing, "attribute_gamma", spy)
    quiet = _blind(X, y, g)
    assert quiet.gamma is None and quiet.gamma_ == ATTRIBUTE_QUIET_GAMMA
    # what the rule read: the release, the exact (public) error table, m and the table's own epsilon
    ((q_tilde, error_table, error_is_exact, m, epsilon, families),) = calls
    np.testing.assert_array_equal(q_tilde, quiet.noisy_frequencies_)
    assert error_is_exact is True and m == 5_000 and families == EO
    assert epsilon == pytest.approx(2.0 * (1.0 - DEFAULT_MEMBERSHIP_SHARE))
    assert error_table.shape == (q_tilde.shape[0], 2) and error_table.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(error_table, np.maximum(q_tilde, 0.0).sum(axis=1), atol=0.02)  # exact vs noisy
    np.testing.assert_array_equal(_blind(X, y, g, gamma=quiet.gamma_).probabilities_, quiet.probabilities_)
    assert not np.array_equal(_blind(X, y, g, gamma=ATTRIBUTE_GAMMA).probabilities_, quiet.probabilities_)


def test_two_small_groups_resolve_to_the_attribute_tolerance():
    X, y, g = _four_groups(6_000, (0.55, 0.41, 0.02, 0.02))
    noisy = _blind(X, y, g, epsilon=1.0)
    assert noisy.gamma_ == ATTRIBUTE_GAMMA


def test_the_recommended_classifier_on_its_defaults_with_secure_noise_takes_the_quiet_tolerance():
    """What users run: DPFairClassifier, attribute private and blind, secure noise, every default."""
    X, y, g = _four_groups(5_000, (0.4, 0.3, 0.2, 0.1), seed=1)
    model = DPFairClassifier(epsilon=2.0, groups=[0, 1, 2, 3]).fit(X, y, sensitive_features=g)
    assert model.mechanism_ == "DPBlindPostProcessor" and model.estimator_.gamma is None
    assert model.estimator_.gamma_ == ATTRIBUTE_QUIET_GAMMA
    assert model.predict_proba(X).shape == (5_000, 2)
    X, y, g = _four_groups(6_000, (0.55, 0.41, 0.02, 0.02), seed=1)
    assert DPFairClassifier(epsilon=1.0, groups=[0, 1, 2, 3]).fit(
        X, y, sensitive_features=g).estimator_.gamma_ == ATTRIBUTE_GAMMA
