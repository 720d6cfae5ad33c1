"""The lattice sampler's running time does not depend on the value it draws (a linear search of
the last guide bucket took 2 ns near 0 and 340 us deep in the tail: a release's duration revealed its noise).

A search that stops where the value is found takes nanoseconds at the centre of the law and, with a
linear scan of the last guide bucket, hundreds of microseconds deep in the tail: the duration of a
release would reveal its tail noise.  These tests prove the search fixed-length without a clock: the
compiled search's own Python body (numba's ``py_func``) runs on a table that counts its reads, and every
word -- at the centre, in the deepest tail, anywhere -- reads the same number of entries.  The wall-clock
comparison is ``benchmarks/bench_lattice_timing.py`` (timings belong in benchmarks, not in tests).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpfair.privacy import lattice as lattice_module
from dpfair.privacy.lattice import LatticeGaussian, lattice_granularity


class _CountingTable(np.ndarray):
    """An int64 table that counts the entries read from it (one element at a time, as the search reads)."""

    reads = 0

    def __getitem__(self, index):
        _CountingTable.reads += 1
        return np.ndarray.__getitem__(self.view(np.ndarray), index)


def _reads_per_word(search, lattice: LatticeGaussian, words: np.ndarray) -> tuple[list[int], np.ndarray]:
    table = lattice._levels.view(_CountingTable)
    counts, out = [], np.empty(words.size, dtype=np.int64)
    for j in range(words.size):
        _CountingTable.reads = 0
        search(table, lattice._offsets, words[j:j + 1], out[j:j + 1])
        counts.append(_CountingTable.reads)
    return counts, out


def _words_between(low: int, high: int, rng: np.random.Generator, n: int = 24) -> np.ndarray:
    u = np.uint64(low) + rng.integers(0, int(high - low), n, dtype=np.uint64)
    return (u << np.uint64(1)) | rng.integers(0, 2, n, dtype=np.uint64)


@pytest.mark.parametrize("sigma", [3.7, 20.6])  # 20.6: the PRIVATIZER's node noise at Exp 1 (~174,000 entries)
def test_every_word_reads_the_same_number_of_table_entries(sigma):
    lattice = LatticeGaussian(sigma, lattice_granularity(sigma))
    cumulative = lattice._cumulative
    rng = np.random.default_rng(0)
    centre = _words_between(0, int(cumulative[0]), rng)  # |Z| = 0
    tail = _words_between(int(cumulative[-2]), 2**63, rng)  # the last entry of the table
    spread = rng.integers(0, 2**64, 24, dtype=np.uint64, endpoint=False)
    words = np.concatenate([centre, tail, spread])
    counts, out = _reads_per_word(lattice_module._search.py_func, lattice, words)
    assert set(counts) == {lattice._offsets.size * lattice_module._FANOUT}  # every level, one whole block each
    # ... and it is the sampler: the same values as the compiled search and as a plain searchsorted
    assert np.array_equal(out, lattice.sample_units(words))
    magnitude = np.searchsorted(cumulative, words >> np.uint64(1), side="right").astype(np.int64)
    assert np.array_equal(out, np.where(words & np.uint64(1), -magnitude, magnitude))
    assert (out[:24] == 0).all() and (np.abs(out[24:48]) == cumulative.size - 1).all()


def test_the_count_catches_a_search_that_stops_early():
    # the mutant: a binary search that returns as soon as it finds the value reads fewer entries near the centre
    def early_exit(levels, offsets, words, out):
        for j in range(words.size):
            u, low, high = np.int64(words[j] >> np.uint64(1)), 0, offsets[1] - 1
            while low < high:
                middle = (low + high) // 2
                if levels[middle] < u:
                    low = middle + 1
                elif middle == 0 or levels[middle - 1] < u:
                    low = high = middle
                else:
                    high = middle
            out[j] = low

    lattice = LatticeGaussian(3.7, lattice_granularity(3.7))
    rng = np.random.default_rng(1)
    words = np.concatenate([_words_between(0, int(lattice._cumulative[0]), rng),
                            _words_between(int(lattice._cumulative[-2]), 2**63, rng)])
    counts, _ = _reads_per_word(early_exit, lattice, words)
    assert len(set(counts)) > 1


def test_the_rounded_law_at_the_exact_blt_scale_reads_the_same_number_of_entries_for_every_word():
    """The exact BLT release's noise (``law="rounded"``, ``2^16`` grid units per sigma): centre, deepest tail, spread."""
    lattice = LatticeGaussian(2.0**16 + 0.5, 1.0, "rounded")
    cumulative = lattice._cumulative
    rng = np.random.default_rng(1)
    four_sigma = 4 * 2**16 + 1  # cumulative[k] = P(|Z| <= k): the words above it draw |Z| > 4 sigma
    words = np.concatenate([_words_between(0, int(cumulative[0]), rng, 8),
                            _words_between(int(cumulative[four_sigma]), int(cumulative[four_sigma + 1000]), rng, 8),
                            _words_between(int(cumulative[-2]), 2**63, rng, 8)])
    counts, out = _reads_per_word(lattice_module._search.py_func, lattice, words)
    assert set(counts) == {lattice._offsets.size * lattice_module._FANOUT}
    assert np.array_equal(out, lattice.sample_units(words))
    assert np.abs(out[8:16]).min() > 4 * 2**16  # the second group is beyond 4 sigma
