"""DPLogisticRegression warns when the objective's noise dominates, decided from public quantities only.

The ratio is ``4 p / (epsilon' n)`` (the noise's expected gradient against the largest gradient the data can give):
it must fire at tiny epsilon or n, stay silent on the defaults at Adult's size (85 columns, 30,000 rows, epsilon 1),
and never depend on the data or on the noise drawn.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfair.linear_model import DPLogisticRegression, NoiseDominatesWarning
from dpfair.privacy import PrivacyLeakWarning

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")  # seeded noise


def _rows(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d)) / math.sqrt(d)  # ||x|| <= 1
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_fires_at_tiny_epsilon_and_names_the_epsilon_that_would_help():
    X, y = _rows(1000, 10)
    with pytest.warns(NoiseDominatesWarning, match=r"noise dominates.*larger epsilon \(about 0\.49"):
        model = DPLogisticRegression(epsilon=0.05, data_norm=1.0, random_state=0).fit(X, y)
    assert model.noise_to_signal_ == pytest.approx(4 * 11 / (model.epsilon_prime_ * 1000))
    assert model.noise_to_signal_ > 0.1


def test_fires_at_small_n_and_not_once_the_rows_are_enough():
    X, y = _rows(300, 10)
    with pytest.warns(NoiseDominatesWarning):
        DPLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y)
    X, y = _rows(600, 10)  # 4 * 11 / (0.9 * 600) = 0.081
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoiseDominatesWarning)
        assert DPLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y).noise_to_signal_ < 0.1


def test_silent_on_the_defaults_at_adult_size():
    X, y = _rows(30_000, 85)  # Adult's one-hot table: 85 columns, 30,000 training rows
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoiseDominatesWarning)
        model = DPLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y)
    assert model.noise_to_signal_ == pytest.approx(4 * 86 / (0.9 * 30_000))  # 0.0127


def test_decided_from_public_quantities_only():
    """Other rows, other labels and other noise with the same epsilon, C, shape: the same ratio and decision."""
    ratios, warned = [], []
    for seed in range(3):
        X, y = _rows(400, 10, seed=seed)
        y = y if seed != 2 else 1 - y
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = DPLogisticRegression(epsilon=0.5, data_norm=1.0, random_state=seed).fit(X, y)
        ratios.append(model.noise_to_signal_)
        warned.append(any(issubclass(w.category, NoiseDominatesWarning) for w in caught))
    assert len(set(ratios)) == 1 and warned == [True] * 3


def test_exact_fit_has_no_noise():
    X, y = _rows(50, 3)
    with pytest.warns(PrivacyLeakWarning):
        model = DPLogisticRegression(epsilon=np.inf).fit(X, y)
    assert model.noise_to_signal_ == 0.0
