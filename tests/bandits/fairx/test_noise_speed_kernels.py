"""The compiled pieces of the factorized PRIVATIZER's noise path give the same numbers as the numpy reference.

``scaled_gaussians`` is ``gaussian_from_words(words) * scale`` to the bit (tails and ``u`` near 0, 1/2 and
``1 - exp(-2)`` included; the top words give finite variates), ``fill_noise_slots`` writes exactly what
``release_noise_units`` returns, and the streams' ``draws_for`` closed forms equal the sum of ``n_draws`` over the steps.
``scaled_gaussians`` runs in a time that does not depend on the value drawn: every draw evaluates ``ndtri`` once in
each of its regions (counted here on the kernel's own Python body, without a clock; timed in
``benchmarks/bench_lattice_timing.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtri

from dpfair.bandits.fairx import _prf_kernels
from dpfair.bandits.fairx._prf_kernels import fill_noise_slots, scaled_gaussians
from dpfair.bandits.fairx._privatizer_factorized import gaussian_from_words
from dpfair.bandits.fairx.privatizer import Privatizer, tree_key
from dpfair.privacy._factorizations import HonakerFactorization, SqrtFactorization, TreeFactorization


def _edge_words() -> np.ndarray:
    """Words whose uniform lies at 0+, 1-, 1/2 and the branch points exp(-2) and 1 - exp(-2) of cephes' ndtri."""
    top = np.array([0, 1, 2, 2**52 - 1, 2**52, 2**52 + 1, 2**53 - 2, 2**53 - 1], dtype=np.uint64)
    for u in (math.exp(-2.0), 1.0 - math.exp(-2.0), math.exp(-32.0), 1.0 - math.exp(-32.0)):
        centre = int(u * 2**53)
        top = np.concatenate([top, np.arange(centre - 4, centre + 5, dtype=np.uint64)])
    low = np.array([0, 1, 2**11 - 1], dtype=np.uint64)
    return ((top[:, None] << np.uint64(11)) | low[None, :]).reshape(-1)


def test_scaled_gaussians_equal_gaussian_from_words_times_scale_to_the_bit() -> None:
    rng = np.random.default_rng(7)
    words = np.concatenate([_edge_words(), rng.integers(0, 2**64 - 1, size=400_000, dtype=np.uint64, endpoint=True)])
    words = words[: words.size - words.size % 21].reshape(-1, 21)
    scale = np.where(np.triu_indices(6)[0] == np.triu_indices(6)[1], math.sqrt(2.0) * 1234.5, 1234.5)
    out = np.empty(words.shape)
    scaled_gaussians(words, scale, out)
    reference = gaussian_from_words(words) * scale
    assert np.array_equal(out.view(np.uint64), reference.view(np.uint64))
    assert np.isfinite(out).all()  # the top word gives 1 - 2^-53, not 1 (ndtri(1) = inf)
    assert np.abs(out).max() > 8.0 * 1234.5  # the tails were reached


def test_the_top_words_give_finite_gaussians_in_the_documented_range() -> None:
    # (2^53 - 1) + 1/2 rounds to 2^53 in doubles: u would be exactly 1 and the release noise rint(inf)
    top = np.array([2**64 - 1, (2**53 - 1) << 11, 0, 2**11 - 1], dtype=np.uint64)
    z = gaussian_from_words(top)
    assert np.isfinite(z).all()
    assert z[0] == z[1] == pytest.approx(8.2095, abs=1e-4)
    assert z[2] == z[3] == pytest.approx(-8.2924, abs=1e-4)
    out = np.empty((1, 4))
    scaled_gaussians(top.reshape(1, 4), np.ones(4), out)
    assert np.array_equal(out[0], z)


def test_scaled_gaussians_scales_each_entry_and_checks_its_output() -> None:
    words = np.arange(1, 22, dtype=np.uint64).reshape(1, 21) << np.uint64(40)
    scale = np.arange(1.0, 22.0)
    out = np.empty(words.shape)
    scaled_gaussians(words, scale, out)
    unscaled = gaussian_from_words(words)
    assert np.array_equal(out, unscaled * scale)  # entry e by scale[e]: a kernel ignoring the scale fails
    assert not np.array_equal(out, unscaled) and not np.array_equal(out, unscaled * scale[::-1])
    with pytest.raises(ValueError, match="C-contiguous"):
        scaled_gaussians(words, scale, np.empty((1, 42))[:, ::2])  # a strided out would be written into a copy


def _region(u: float) -> str:
    """The approximation cephes' ndtri evaluates at ``u``: the centre's rational function or the tails' (two sets of
    coefficients of the same degree, below and above ``y = exp(-32)``: the same operations)."""
    y = 1.0 - u if u > 1.0 - 0.13533528323661269189 else u
    return "centre" if y > 0.13533528323661269189 else "tail"


def _regions_per_draw(kernel, words: np.ndarray) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """Run ``kernel`` (the compiled kernel's Python body, or a mutant) one word at a time with an ``ndtri`` that
    records the region of each call; returns the regions of each draw (in call order) and the values."""
    calls: list[str] = []

    def counting_ndtri(u: float) -> float:
        calls.append(_region(float(u)))
        return float(ndtri(u))

    regions, out = [], np.empty(words.size)
    for j in range(words.size):
        calls.clear()
        kernel(counting_ndtri, words[j : j + 1].reshape(1, 1), np.ones(1), out[j : j + 1].reshape(1, 1), np.zeros(1))
        regions.append(tuple(calls))
    return regions, out


def _words_for(low: float, high: float, rng: np.random.Generator, n: int = 16) -> np.ndarray:
    top = (low * 2.0**53 + rng.random(n) * (high - low) * 2.0**53).astype(np.uint64)
    return (top << np.uint64(11)) | rng.integers(0, 2**11, n, dtype=np.uint64)


def test_every_draw_evaluates_each_region_of_ndtri_once() -> None:
    rng = np.random.default_rng(3)
    centre = _words_for(0.3, 0.7, rng)  # |z| < 0.53
    beyond_4 = np.concatenate([_words_for(1e-12, 3.1e-5, rng), _words_for(1.0 - 3.1e-5, 1.0, rng)])  # |z| > 4
    beyond_8 = np.array([0, 1, 2**64 - 1, 2**20 << 11], dtype=np.uint64)  # y <= exp(-32): the far-tail coefficients
    spread = rng.integers(0, 2**64, 32, dtype=np.uint64, endpoint=False)
    words = np.concatenate([centre, beyond_4, beyond_8, _edge_words(), spread])
    regions, out = _regions_per_draw(_prf_kernels._scaled_gaussians.py_func, words)
    own = [_region(((int(w) >> 11) + 0.5) * 2.0**-53) for w in words]
    assert {"centre", "tail"} == set(own)  # both regions drawn
    # every draw: its own region first, then the other one -- one evaluation of each, in a fixed order of kinds
    assert all(len(r) == 2 and set(r) == {"centre", "tail"} and r[0] == o for r, o in zip(regions, own, strict=True))
    # ... and it is the sampler: the compiled kernel's values, gaussian_from_words' to the bit
    compiled = np.empty((words.size, 1))
    scaled_gaussians(words.reshape(-1, 1), np.ones(1), compiled)
    assert np.array_equal(out, compiled[:, 0]) and np.array_equal(out, gaussian_from_words(words))


def test_the_count_catches_a_kernel_that_calls_ndtri_once() -> None:
    # the mutant: the earlier kernel, one ndtri per draw -- 9 ns at the centre, 49 ns in the tails
    def one_call(ndtri_, words, scale, out, sink):
        for i in range(words.shape[0]):
            for e in range(words.shape[1]):
                u = min(((int(words[i, e]) >> 11) + 0.5) * 2.0**-53, 1.0 - 2.0**-53)
                out[i, e] = ndtri_(u) * scale[e]

    rng = np.random.default_rng(4)
    regions, _ = _regions_per_draw(one_call, np.concatenate([_words_for(0.3, 0.7, rng), _words_for(1e-12, 3e-5, rng)]))
    assert {r for r in regions} == {("centre",), ("tail",)}  # the regions evaluated say which value was drawn


@pytest.mark.parametrize("continual", ["sqrt", "honaker"])
@pytest.mark.parametrize("keyed", [True, False])
def test_fill_noise_slots_writes_what_release_noise_units_returns(continual: str, keyed: bool) -> None:
    d, shape, horizon, slots = 3, (2, 3), 1300, 40
    keys = np.array([tree_key(5, s, a) for s in range(2) for a in range(3)], dtype=np.uint64).reshape(shape)
    kw = {"tree_keys": keys} if keyed else {}
    with pytest.warns(Warning):
        priv = Privatizer(2.0, 0.1, 1.5, d, horizon, shape, continual=continual, random_state=3, **kw)
    n = math.prod(shape)
    rng = np.random.default_rng(0)
    released = rng.integers(0, horizon - slots, size=n)
    first = released + 1 - rng.integers(0, 5, size=n)  # slot 0 holds release `first`; some slots already used
    filled = released + rng.integers(0, 10, size=n)
    length = filled - first + 1
    end = np.minimum(released + slots, horizon)
    gram = rng.integers(-9, 9, size=(n, slots, d, d))
    target = rng.integers(-9, 9, size=(n, slots, d))
    # the slots already filled hold their releases' noise (what the feed put there)
    g_all, t_all = priv.release_noise_units(np.broadcast_to(np.arange(horizon + 1)[:, None], (horizon + 1, n))
                                            .reshape(horizon + 1, *shape).copy())
    g_all, t_all = g_all.reshape(horizon + 1, n, d, d), t_all.reshape(horizon + 1, n, d)
    for r in range(n):
        gram[r, : length[r]] = g_all[first[r] : filled[r] + 1, r]
        target[r, : length[r]] = t_all[first[r] : filled[r] + 1, r]
    rows = np.array([0, 2, 3, 5])
    expect_first, expect_len = first.copy(), length.copy()
    expect_first[rows], expect_len[rows] = released[rows] + 1, end[rows] - released[rows]
    untouched_gram = gram[[1, 4]].copy()
    fill_noise_slots(priv._factorized.table(int(end.max())), rows, released, filled, end, first, length,
                     priv._upper, gram, target)
    assert np.array_equal(first, expect_first) and np.array_equal(length, expect_len)
    assert np.array_equal(gram[[1, 4]], untouched_gram)
    for r in rows:
        k = end[r] - released[r]
        assert np.array_equal(gram[r, :k], g_all[released[r] + 1 : end[r] + 1, r])
        assert np.array_equal(target[r, :k], t_all[released[r] + 1 : end[r] + 1, r])


@pytest.mark.parametrize("factorization", [TreeFactorization(300), HonakerFactorization(300),
                                           SqrtFactorization(300, block=7, fft_block=16), SqrtFactorization(300)])
def test_draws_for_equals_the_sum_of_the_steps_draws(factorization) -> None:
    stream = factorization.stream((2,))
    for t in (0, 1, 6, 7, 8, 63, 64, 100, 255, 256, 299):
        stream.t = t
        for n in (1, 2, 7, 8, 9, 300 - t):
            if t + n <= 300:
                assert stream.draws_for(n) == sum(factorization.n_draws(s) for s in range(t + 1, t + n + 1))
