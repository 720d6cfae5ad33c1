"""Whole rows private: the three levels of the blind post-processor's default tolerance (``records_gamma``)."""

from __future__ import annotations

import numpy as np
import pytest

from dpfair.classification._blind_records import (
    RECORDS_LOOSE_GAMMA,
    RECORDS_NOISE_SPLIT,
    RECORDS_QUIET_GAMMA,
    RECORDS_QUIET_SPLIT,
    RECORDS_TIGHT_GAMMA,
    project_to_group_masses,
    records_gamma,
)
from dpfair.classification.blind_table import BLIND_CONSTRAINTS, constrained_rates, rate_noise

EO = BLIND_CONSTRAINTS["equalized_odds"]
N_ROWS, EPSILON, N_CELLS = 20_000, 0.4, 16


def _table(second_mass: float, small_mass: float) -> np.ndarray:
    """Three groups spread evenly over the cells: a large one, the second (``second_mass`` per label), a tiny one."""
    q = np.zeros((N_CELLS, 3, 2))
    q[:, 0, :] = 0.4 / N_CELLS
    q[:, 1, :] = second_mass / N_CELLS
    q[:, 2, :] = small_mass / N_CELLS
    return q


def _mass_at(noise: float) -> float:
    """The mass per label at which a group's typical rate noise ``sqrt(2 C) b / mass`` equals ``noise``."""
    return np.sqrt(2.0 * N_CELLS) * (2.0 / (N_ROWS * EPSILON)) / noise


def _second_noise(q: np.ndarray) -> float:
    projected = project_to_group_masses(q)
    noise = np.zeros(q.shape[1])
    for labels in EO:
        noise = np.maximum(noise, rate_noise(constrained_rates(projected, labels)[1], N_CELLS, N_ROWS, EPSILON))
    return float(np.sort(noise)[-2])


def test_the_levels_are_ordered_and_the_splits_too():
    assert RECORDS_TIGHT_GAMMA < RECORDS_LOOSE_GAMMA < RECORDS_QUIET_GAMMA
    assert 0 < RECORDS_QUIET_SPLIT < RECORDS_NOISE_SPLIT


@pytest.mark.parametrize(("noise", "expected"), [
    (RECORDS_QUIET_SPLIT * 0.5, RECORDS_QUIET_GAMMA),
    (RECORDS_QUIET_SPLIT * 0.95, RECORDS_QUIET_GAMMA),
    (RECORDS_QUIET_SPLIT * 1.05, RECORDS_LOOSE_GAMMA),
    (RECORDS_NOISE_SPLIT * 0.95, RECORDS_LOOSE_GAMMA),
    (RECORDS_NOISE_SPLIT * 1.05, RECORDS_TIGHT_GAMMA),
])
def test_the_tolerance_follows_the_second_noisiest_groups_rate_noise(noise, expected):
    tiny = _mass_at(RECORDS_NOISE_SPLIT) / 50  # the noisiest group alone never sets the level
    q = _table(_mass_at(noise), tiny)
    assert _second_noise(q) == pytest.approx(noise, rel=1e-9)
    assert records_gamma(q, N_ROWS, EPSILON, EO) == expected


def test_the_level_reads_the_release_only_and_no_noise_is_the_quiet_tolerance():
    q = _table(_mass_at(RECORDS_QUIET_SPLIT * 0.5), _mass_at(RECORDS_NOISE_SPLIT) / 50)
    # no noise: every group's rates exact, the limit of the finite case (the level never falls back as noise vanishes)
    assert records_gamma(q, N_ROWS, float("inf"), EO) == RECORDS_QUIET_GAMMA
    assert [records_gamma(q, N_ROWS, e, EO) for e in (1e3, 1e9)] == [RECORDS_QUIET_GAMMA] * 2
    # the same release read twice gives the same level; more rows (less noise per unit of mass) never loosens less
    assert records_gamma(q.copy(), N_ROWS, EPSILON, EO) == records_gamma(q, N_ROWS, EPSILON, EO)
    levels = [records_gamma(_table(_mass_at(RECORDS_QUIET_SPLIT * 1.5), 1e-6), n, EPSILON, EO)
              for n in (5_000, N_ROWS, 80_000)]
    assert levels == sorted(levels)


@pytest.mark.parametrize(("second", "expected"), [
    (RECORDS_QUIET_SPLIT, RECORDS_QUIET_GAMMA),  # "at most": the split itself is quiet
    (np.nextafter(RECORDS_QUIET_SPLIT, 1.0), RECORDS_LOOSE_GAMMA),
    (RECORDS_NOISE_SPLIT, RECORDS_LOOSE_GAMMA),
    (np.nextafter(RECORDS_NOISE_SPLIT, 1.0), RECORDS_TIGHT_GAMMA),
])
def test_each_split_belongs_to_the_looser_level(monkeypatch, second, expected):
    import dpfair.classification._blind_records as records

    monkeypatch.setattr(records, "rate_noise", lambda *args: np.array([0.0, second, 1.0]))
    assert records.records_gamma(_table(0.1, 0.1), N_ROWS, EPSILON, EO) == expected


def test_groups_without_released_mass_count_as_noisy():
    two = np.zeros((N_CELLS, 2, 2))
    two[:, 0, :] = 0.4 / N_CELLS
    two[:, 1, :] = -0.01 / N_CELLS  # one of two groups unmeasured: the other alone is the second noisiest, exact-ish
    assert records_gamma(two, N_ROWS, EPSILON, EO) == RECORDS_QUIET_GAMMA
    three = _table(-0.01, -0.01)  # two of three groups with no positive mass: infinite noise, the tight level
    assert records_gamma(three, N_ROWS, EPSILON, EO) == RECORDS_TIGHT_GAMMA
