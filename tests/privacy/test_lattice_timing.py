"""The lattice sampler's running time does not depend on the value it draws (issue 29, item 10).

A search that stops where the value is found takes nanoseconds at the centre of the law and, with a
linear scan of the last guide bucket, hundreds of microseconds deep in the tail: the duration of a
release would reveal its tail noise.  The search is fixed-length; these tests time words that map to
the centre against words that map to the deepest entries of the table.
"""

from __future__ import annotations

import time

import numpy as np

from dpfair.privacy.lattice import LatticeGaussian, lattice_granularity

N_DRAWS = 20_000
REPEATS = 7


def _words_between(low: np.uint64, high: np.uint64, rng: np.random.Generator) -> np.ndarray:
    """Uniform words whose magnitude ``u = word >> 1`` lies in ``[low, high)``, with random sign bits."""
    u = low + rng.integers(0, int(high - low), N_DRAWS, dtype=np.uint64)
    return (u << np.uint64(1)) | rng.integers(0, 2, N_DRAWS, dtype=np.uint64)


def _seconds(lattice: LatticeGaussian, words: np.ndarray) -> float:
    start = time.perf_counter()
    lattice.sample_units(words)
    return time.perf_counter() - start


def test_centre_and_deep_tail_draws_take_the_same_time():
    sigma = 20.6  # the PRIVATIZER's node noise at Exp 1's setting: a table of ~174,000 entries
    lattice = LatticeGaussian(sigma, lattice_granularity(sigma))
    cumulative = lattice._cumulative
    rng = np.random.default_rng(0)
    centre = _words_between(np.uint64(0), cumulative[0], rng)  # |Z| = 0
    tail = _words_between(cumulative[-2], np.uint64(2**63), rng)  # the last entry: |Z| ~ 8 sigma
    assert (lattice.sample_units(centre) == 0).all()
    assert (np.abs(lattice.sample_units(tail)) == cumulative.size - 1).all()
    centre_times, tail_times = [], []
    for _ in range(REPEATS):  # interleaved, so that both see the same load; the best of each
        centre_times.append(_seconds(lattice, centre))
        tail_times.append(_seconds(lattice, tail))
    ratio = min(tail_times) / min(centre_times)
    assert 1 / 3 < ratio < 3, f"tail draws take {ratio:.1f} times as long as centre draws"


def test_running_time_is_the_same_across_the_whole_law():
    # words spread over every decile of u (the centre, the shoulders, the tail) against the centre alone
    sigma = 3.7
    lattice = LatticeGaussian(sigma, lattice_granularity(sigma))
    rng = np.random.default_rng(1)
    spread = rng.integers(0, 2**64, N_DRAWS, dtype=np.uint64, endpoint=False)
    centre = _words_between(np.uint64(0), lattice._cumulative[0], rng)
    lattice.sample_units(spread)
    spread_times, centre_times = [], []
    for _ in range(REPEATS):
        spread_times.append(_seconds(lattice, spread))
        centre_times.append(_seconds(lattice, centre))
    ratio = min(spread_times) / min(centre_times)
    assert 1 / 3 < ratio < 3, f"spread draws take {ratio:.1f} times as long as centre draws"
