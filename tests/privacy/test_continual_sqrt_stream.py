"""Speed: the square root's streaming noise as a partitioned overlap-add convolution.

The stream against the dense product ``C z`` (every draw-block size, FFT block and batching); ``steps`` against
``step`` (bit for bit: the same numbers however many releases are asked at once); the integer release noise
``rint(C z)`` against the previous implementation (one FFT convolution over every draw at each doubling block,
kept here as the reference) on a long stream; pickling; the cost per release does not grow with the stream.
"""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from scipy.signal import fftconvolve

from dpfair.privacy import ContinualSumMechanism
from dpfair.privacy.continual import FACTORIZATIONS, SqrtFactorization, get_factorization

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")


def _stream_all(f, z, chunks=None):
    """The noise of every release, one step at a time (``chunks=None``) or ``steps`` of the given sizes."""
    stream = f.stream(z.shape[1:])
    if chunks is None:
        out, used = [], 0
        for t in range(1, f.horizon + 1):
            k = f.n_draws(t)
            out.append(stream.step(z[used : used + k]))
            used += k
        return np.array(out)
    parts, used, t = [], 0, 0
    for n in itertools.cycle(chunks):
        n = min(n, f.horizon - t)
        k = stream.draws_for(n)
        parts.append(stream.steps(z[used : used + k], n))
        used, t = used + k, t + n
        if t == f.horizon:
            return np.concatenate(parts)


def _previous_sqrt_noise(f: SqrtFactorization, z: np.ndarray) -> np.ndarray:
    """The previous stream: at each draw block, one FFT convolution of c with every z drawn so far."""
    out, flat = np.empty((f.horizon, *z.shape[1:])), z.reshape(len(z), -1)
    for start, size in f._blocks.items():
        end = start - 1 + size
        out[start - 1 : end] = fftconvolve(f.coefficients[:end, None], flat[:end], axes=0)[start - 1 : end].reshape(
            size, *z.shape[1:])
    return out


@pytest.mark.parametrize(("T", "block", "fft_block"), [(1, 256, 4), (7, 1, 2), (37, 5, 4), (37, 3, 8), (100, 16, 8),
                                                       (257, 256, 64), (300, 7, 16), (64, 4, 64)])
def test_sqrt_stream_is_the_toeplitz_product_for_any_block_and_batching(T, block, fft_block):
    f = SqrtFactorization(T, block=block, fft_block=fft_block)
    z = np.random.default_rng(T + block).normal(size=(T, 2, 3))
    one = _stream_all(f, z)
    np.testing.assert_allclose(one, np.einsum("tr,r...->t...", f.matrices()[0], z), rtol=1e-12, atol=1e-12)
    for chunks in ([1], [T], [3, 11, 1], [fft_block, 1]):
        np.testing.assert_array_equal(_stream_all(f, z, chunks), one)  # the same numbers, bit for bit


def test_sqrt_stream_columns_do_not_mix_and_a_column_alone_gets_the_same_numbers():
    f = SqrtFactorization(900, fft_block=64)
    z = np.random.default_rng(3).normal(size=(900, 5, 3))
    together = _stream_all(f, z, [100])
    for row in range(5):
        np.testing.assert_array_equal(_stream_all(f, z[:, row : row + 1], [37]), together[:, row : row + 1])


@pytest.mark.parametrize("name", sorted(FACTORIZATIONS))
def test_steps_equal_step_for_every_factorization_and_refuse_a_wrong_count(name):
    f = get_factorization(name, 50)
    draws = sum(f.n_draws(t) for t in range(1, 51))
    z = np.random.default_rng(1).normal(size=(draws, 4))
    np.testing.assert_array_equal(_stream_all(f, z, [7, 1, 20]), _stream_all(f, z))
    with pytest.raises(ValueError, match="noise vectors of the next 3 steps"):
        f.stream((4,)).steps(z[:1], 3)


def test_the_release_units_equal_the_previous_stream_on_a_long_stream():
    """rint(C z) as the PRIVATIZER rounds it: identical to the previous implementation (T = 5,000 here; the
    slow test runs Exp 1's 20,002 releases).  The first fft_block releases are the same floats, bit for bit."""
    f = SqrtFactorization(5_000)
    z = np.random.default_rng(11).normal(size=(5_000, 42)) * 16384.0 * np.sqrt(2.0)
    new, old = _stream_all(f, z, [512]), _previous_sqrt_noise(f, z)
    np.testing.assert_array_equal(new[: f.fft_block], old[: f.fft_block])
    assert np.abs(new - old).max() <= 1e-9 * np.abs(old).max()
    assert np.array_equal(np.rint(new), np.rint(old))


@pytest.mark.slow
def test_the_release_units_equal_the_previous_stream_at_exp1_length():
    """20,002 releases x 210 columns (a (2, 5) batch of agents, 21 entries): no rounding of rint(C z) moves."""
    f = SqrtFactorization(20_002)
    z = np.random.default_rng(12).normal(size=(20_002, 210)) * 16384.0 * np.sqrt(2.0)
    new, old = _stream_all(f, z, [512]), _previous_sqrt_noise(f, z)
    assert int((np.rint(new) != np.rint(old)).sum()) == 0
    assert np.abs(new - old).max() <= 1e-9 * np.abs(old).max()


def test_sqrt_stream_pickles_mid_stream_and_continues_with_the_same_numbers():
    f = SqrtFactorization(700, fft_block=64)
    z = np.random.default_rng(4).normal(size=(700, 3))
    stream = f.stream((3,))
    used = stream.draws_for(300)  # 512: the default draw blocks (256, 256) run ahead of the steps
    first = stream.steps(z[:used], 300)
    copy = pickle.loads(pickle.dumps(stream))
    k = stream.draws_for(400)
    rest, rest_copy = stream.steps(z[used : used + k], 400), copy.steps(z[used : used + k], 400)
    np.testing.assert_array_equal(rest, rest_copy)
    np.testing.assert_array_equal(np.concatenate([first, rest]), _stream_all(f, z))
    assert len(pickle.dumps(f.stream((3,)))) < 50_000  # no horizon-sized buffer before any draw


def test_the_default_fft_block_grows_like_the_square_root_of_the_horizon():
    assert [SqrtFactorization(T).fft_block for T in (10, 20_002, 100_000, 10**7)] == [1024, 2048, 4096, 16384]
    with pytest.raises(ValueError, match="fft_block"):
        SqrtFactorization(10, fft_block=0)


def test_the_mechanism_with_a_small_fft_block_releases_the_batch_product():
    T = 90
    f = SqrtFactorization(T, block=4, fft_block=8)
    mech = ContinualSumMechanism(T, (3,), sensitivity=1.0, rho=0.5, factorization=f, random_state=2)
    xs = np.random.default_rng(0).normal(size=(T, 3))
    releases = np.array([mech.step(x) for x in xs])
    z = np.random.default_rng(2).normal(0.0, mech.noise_scale, size=(T, 3))
    expected = np.cumsum(xs, axis=0) + f.matrices()[0] @ z
    np.testing.assert_allclose(releases, expected, rtol=1e-10, atol=1e-10)
