"""The tabulated discrete Gaussian (dpfair.privacy.lattice) and the tight zCDP inverse."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpfair.privacy import (
    SecureNoise,
    SeededNoise,
    approx_dp_to_zcdp,
    zcdp_delta,
    zcdp_for_approx_dp,
    zcdp_to_approx_dp,
)
from dpfair.privacy.lattice import LatticeGaussian, lattice_granularity


def _exact_pmf(sigma_units: float, support: np.ndarray) -> np.ndarray:
    k = np.arange(-int(60 * sigma_units), int(60 * sigma_units) + 1)
    norm = np.exp(-(k * k) / (2 * sigma_units**2)).sum()
    return np.exp(-(support * support) / (2 * sigma_units**2)) / norm


@pytest.mark.parametrize("sigma_units", [1.0, 2.5, 7.0])
def test_lattice_gaussian_matches_the_exact_discrete_gaussian(sigma_units):
    lattice = LatticeGaussian(sigma_units * 0.5, 0.5)
    z = lattice.sample_units(SeededNoise(0).random_words(400_000))
    values, counts = np.unique(z, return_counts=True)
    keep = counts >= 20  # pool the sparse tails into one cell
    expected = _exact_pmf(sigma_units, values) * z.size
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], z.size - expected[keep].sum())
    chi2 = ((observed - expected) ** 2 / expected).sum()
    assert stats.chi2.sf(chi2, df=observed.size - 1) > 1e-3
    assert lattice.total_variation < 1e-12


def test_lattice_values_lie_on_the_grid_and_rounding_is_exact():
    sigma = 3.7
    g = lattice_granularity(sigma)
    assert math.frexp(g)[0] == 0.5 and 2**14 <= sigma / g < 2**15
    lattice = LatticeGaussian(sigma, g)
    noise = lattice.sample(SeededNoise(1).random_words(100_000))
    assert np.all(noise / g == np.rint(noise / g))
    assert noise.std() == pytest.approx(sigma, rel=0.01) and abs(noise.mean()) < 0.05
    x = np.array([0.1, -1e-12, 12345.678901234, 1e10 / 3])
    r = lattice.round(x)
    assert np.all(r / g == np.rint(r / g)) and np.all(np.abs(r - x) <= g / 2)


def test_secure_words_draw_the_same_law_in_one_call():
    calls = []

    class Counting(SecureNoise):
        def random_words(self, shape):
            calls.append(shape)
            return super().random_words(shape)

    source = Counting()
    lattice = LatticeGaussian(2.0, lattice_granularity(2.0))
    secure = lattice.sample(source.random_words(50_000))
    seeded = lattice.sample(SeededNoise(3).random_words(50_000))
    assert len(calls) == 1
    assert stats.ks_2samp(secure, seeded).pvalue > 1e-3


def test_lattice_refuses_bad_grids():
    with pytest.raises(ValueError, match="granularity must be a power of two"):
        LatticeGaussian(1.0, 0.3)
    with pytest.raises(ValueError, match="sigma / granularity"):
        LatticeGaussian(1.0, 2.0**-30)
    with pytest.raises(TypeError, match="uint64"):
        LatticeGaussian(1.0, 0.25).sample_units(np.arange(3))
    with pytest.raises(ValueError, match="resolution_bits"):
        lattice_granularity(1.0, 30)


@pytest.mark.parametrize(("epsilon", "delta"), [(0.1, 0.1), (1.0, 1e-6), (2.0, 0.1), (10.0, 1e-3), (100.0, 1e-9)])
def test_zcdp_for_approx_dp_inverts_the_tight_conversion(epsilon, delta):
    rho = zcdp_for_approx_dp(epsilon, delta)
    assert zcdp_delta(rho, epsilon) <= delta
    assert zcdp_to_approx_dp(rho, delta) == pytest.approx(epsilon, abs=1e-9)
    assert rho >= approx_dp_to_zcdp(epsilon, delta)
    # the largest such rho: a little more is over budget
    assert zcdp_delta(rho * (1 + 1e-6), epsilon) > delta
    assert zcdp_for_approx_dp(math.inf, delta) == math.inf


@pytest.mark.parametrize("sigma_units", [1.0, 2.5, 7.0, 1000.3, 2.0**14 + 0.5, 2.0**15 - 1.0])
def test_constant_time_search_returns_the_inverse_cdf_bit_for_bit(sigma_units):
    # the sampler's law is the table's: |Z| = #{k : cumulative[k] <= word >> 1} (searchsorted, side="right"),
    # the sign the word's low bit -- on random words, on words at and just below every tabulated boundary, and
    # on the deepest tail words
    lattice = LatticeGaussian(sigma_units, 1.0)
    cumulative = lattice._cumulative
    rng = np.random.default_rng(2)
    stride = max(1, cumulative.size // 20_000)
    edges = np.concatenate([cumulative[:-1:stride], cumulative[:-1:stride] - np.uint64(1), cumulative[-2:-1]])
    deepest = np.uint64(2**63 - 1) - rng.integers(0, 2**24, 5_000, dtype=np.uint64)
    magnitudes = np.concatenate([rng.integers(0, 2**63, 200_000, dtype=np.uint64), edges, deepest,
                                 np.array([0, 2**63 - 1], dtype=np.uint64)])
    for sign in (np.uint64(0), np.uint64(1)):
        words = (magnitudes << np.uint64(1)) | sign
        expected = np.searchsorted(cumulative, magnitudes, side="right").astype(np.int64)
        np.testing.assert_array_equal(lattice.sample_units(words), -expected if sign else expected)
    assert lattice.sample_units(np.array([2**64 - 1], dtype=np.uint64))[0] == -(cumulative.size - 1)  # the last entry


@pytest.mark.parametrize("sigma_units", [1.0, 3.7, 40.0])
def test_rounded_law_is_the_rounding_of_a_gaussian_within_its_stated_distance(sigma_units):
    """``law="rounded"``: ``P(k) = Phi((k + 1/2) / s) - Phi((k - 1/2) / s)`` (scipy, double precision) within the
    table's own total variation (Gauss-Legendre cells in extended precision); variance ``s^2 + 1/12``."""
    lattice = LatticeGaussian(sigma_units, 1.0, "rounded")
    p = np.diff(np.concatenate([[0.0], lattice._cumulative.astype(float) / 2**63]))  # P(|Z| = k)
    k = np.arange(1, p.size)
    exact = np.concatenate([[stats.norm.cdf(0.5 / sigma_units) - stats.norm.cdf(-0.5 / sigma_units)],
                            2 * (stats.norm.sf((k - 0.5) / sigma_units) - stats.norm.sf((k + 0.5) / sigma_units))])
    assert 0.5 * np.abs(p - exact).sum() <= lattice.total_variation + 1e-14  # + scipy's own double rounding
    variance = (p * np.arange(p.size) ** 2).sum()
    assert variance == pytest.approx(sigma_units**2 + 1 / 12, rel=1e-9 if sigma_units > 2 else 1e-3)
    discrete = LatticeGaussian(sigma_units, 1.0)
    assert not np.array_equal(discrete._cumulative, lattice._cumulative)  # a different law, the same search
    with pytest.raises(ValueError, match="law must be one of"):
        LatticeGaussian(sigma_units, 1.0, "continuous")


def test_block_exponentials_stay_within_their_stated_error_and_a_longer_block_is_caught():
    """The rounded law's masses come from ``exp(-t0^2/s2) exp(-2 t0/s2)^j exp(-j^2/s2)`` by blocks of 64: each term
    within ``(4 * 64 + 2 + 3 x) ulp`` (``x = t0^2 / s2``) of one extended-precision exponential per entry (itself
    within 1 ulp); a block of 4,096 (the same scheme, 64 times the running product) breaks that bound."""
    from dpfair.privacy.lattice import _BLOCK, _gaussian_terms

    ulp = float(np.finfo(np.longdouble).eps)
    s2 = 2 * np.longdouble(1.3 * 2**17) ** 2
    for block in (_BLOCK, 4096):
        starts = np.arange(0, 12 * 1.3 * 2**17, block, dtype=np.longdouble)[::37] - np.longdouble(math.sqrt(0.15))
        terms = _gaussian_terms(starts, block, s2).reshape(starts.size, block)
        t = starts[:, None] + np.arange(block, dtype=np.longdouble)[None, :]
        direct = np.exp(-(t * t) / s2)
        relative = np.abs(terms / direct - 1).astype(float)
        bound = (4 * _BLOCK + 2 + 3 * (starts * starts / s2).astype(float)[:, None] + 1) * ulp
        if block == _BLOCK:
            assert np.all(relative <= bound), float((relative / bound).max())
        else:
            assert np.any(relative > bound)
    # and the table charges that bound: the stated per-term error, weighted by mass (E[x] < 0.51), within 300 ulp
    from dpfair.privacy.lattice import _EXP_ULPS, lattice_total_variation

    assert 4 * _BLOCK + 2 + 3 * 0.51 <= _EXP_ULPS["rounded"]
    assert lattice_total_variation(3.7, 1.0, "rounded") >= _EXP_ULPS["rounded"] * ulp


@pytest.mark.parametrize("law", ["discrete", "rounded"])
def test_total_variation_estimate_is_above_every_measured_table(law):
    """The calibration's first guess (no table built) stays above the tables' measured distance, within 15 %."""
    from dpfair.privacy.lattice import lattice_total_variation, lattice_total_variation_estimate

    for sigma_units in np.geomspace(1.0, 2**17 * 1.4, 12):
        estimate = lattice_total_variation_estimate(float(sigma_units), 1.0, law)
        measured = lattice_total_variation(float(sigma_units), 1.0, law)
        assert measured <= estimate <= 1.16 * measured, (sigma_units, measured, estimate)
