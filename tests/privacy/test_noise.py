"""Noise sources: secure by default, seeded only on request; correct distributions."""

import math

import numpy as np
import pytest
from scipy import stats

from dpfair.privacy.noise import SecureNoise, SeededNoise, get_noise_source


def test_default_is_secure_and_seed_gives_seeded():
    assert isinstance(get_noise_source(None), SecureNoise) and get_noise_source(None).secure
    assert isinstance(get_noise_source(3), SeededNoise) and not get_noise_source(3).secure
    src = SeededNoise(1)
    assert get_noise_source(src) is src
    with pytest.raises(TypeError, match="random_state"):
        get_noise_source(1.5)


def test_seeded_is_reproducible_and_shapes_are_kept():
    a = SeededNoise(42).laplace(np.zeros((3, 4)), 2.0)
    b = SeededNoise(42).laplace(np.zeros((3, 4)), 2.0)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (3, 4)


@pytest.mark.parametrize("source", [SecureNoise(), SeededNoise(0)], ids=["secure", "seeded"])
def test_distributions(source):
    n = 4000
    lap = source.laplace(np.full(n, 5.0), 2.0) - 5.0
    assert stats.kstest(lap, stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    gau = source.gaussian(np.zeros(n), 3.0)
    assert stats.kstest(gau, stats.norm(scale=3.0).cdf).pvalue > 1e-3
    dl = source.discrete_laplace(np.zeros(n, dtype=int), 1.5)
    assert dl.dtype.kind == "i"
    q = math.exp(-1 / 1.5)
    assert dl.var() == pytest.approx(2 * q / (1 - q) ** 2, rel=0.15)
    u = source.uniform((n,))
    assert stats.kstest(u, "uniform").pvalue > 1e-3 and (u >= 0).all() and (u < 1).all()
    scores = np.array([0.0, 1.0, 2.0])
    picks = np.array([source.noisy_argmax_gumbel(scores, 1.0) for _ in range(1500)])
    expected = np.exp(scores) / np.exp(scores).sum()
    assert stats.chisquare(np.bincount(picks, minlength=3), 1500 * expected).pvalue > 1e-3


@pytest.mark.parametrize("source", [SecureNoise(), SeededNoise(0)], ids=["secure", "seeded"])
def test_bad_noise_input(source):
    with pytest.raises(ValueError, match="values"):
        source.laplace([1.0, np.nan], 1.0)
    with pytest.raises(ValueError, match="scale"):
        source.gaussian([1.0], -1.0)
    with pytest.raises(ValueError, match="scale"):
        source.laplace([1.0], math.inf)
