"""The lattice sampler's running time does not depend on the value it draws, timed.

A linear search of the last guide bucket took 2 ns near 0 and 340 us deep in the tail, so a release's
duration revealed its tail noise; the fixed-length search removes that.

A search that stops where the value is found takes nanoseconds at the centre of the law and, with a linear
scan of the last guide bucket, hundreds of microseconds deep in the tail: the duration of a release would
reveal its tail noise.  The search is fixed-length (``tests/privacy/test_lattice_timing.py`` proves it
without a clock: every word reads the same number of table entries); this script times words that map to
the centre against words that map to the deepest entries of the table and against words spread over the
whole law, and prints the ratios (near 1 on an idle machine; a variable-length search gives ~10-100).

The second part times the factorized PRIVATIZER's Gaussian kernel (``scaled_gaussians``, the
``continual="sqrt"`` path, the default before the exact BLT): words whose ``z`` lies within 0.5 sigma against
words beyond 4 sigma, with the kernel (every draw evaluates both regions of ``ndtri``) and, for reference, with
scipy's ``ndtri`` called once per draw as before (about 5x: 9 ns at the centre, 49 ns in the tails).

The third part times the exact BLT release (``continual="blt-exact"``): its rounded-Gaussian table at ``2^16``
grid units per sigma (beyond 4 sigma against the centre), and one whole release step of 10 agents (encoder,
noise, decoder) fed words beyond 4 sigma against words at the centre.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_lattice_timing.py``.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.special import ndtr, ndtri

from dpfair.bandits.fairx._prf_kernels import scaled_gaussians
from dpfair.privacy.lattice import LatticeGaussian, lattice_granularity

N_DRAWS = 20_000
REPEATS = 7


def words_between(low: np.uint64, high: np.uint64, rng: np.random.Generator, n: int = N_DRAWS) -> np.ndarray:
    """Uniform words whose magnitude ``u = word >> 1`` lies in ``[low, high)``, with random sign bits."""
    u = low + rng.integers(0, int(high - low), n, dtype=np.uint64)
    return (u << np.uint64(1)) | rng.integers(0, 2, n, dtype=np.uint64)


def seconds(lattice: LatticeGaussian, words: np.ndarray) -> float:
    """Wall time of one ``sample_units`` call."""
    start = time.perf_counter()
    lattice.sample_units(words)
    return time.perf_counter() - start


def best_ratio(lattice: LatticeGaussian, words: np.ndarray, reference: np.ndarray) -> float:
    """Best time of ``words`` over best time of ``reference``, interleaved so that both see the same load."""
    lattice.sample_units(reference)  # compiled and cached before timing
    times, reference_times = [], []
    for _ in range(REPEATS):
        times.append(seconds(lattice, words))
        reference_times.append(seconds(lattice, reference))
    return min(times) / min(reference_times)


def gaussian_words(low: float, high: float, rng: np.random.Generator, n: int = N_DRAWS) -> np.ndarray:
    """Words whose uniform ``u = ((w >> 11) + 1/2) 2^-53`` lies in ``[low, high)``, random low bits."""
    top = (low * 2.0**53 + rng.random(n) * (high - low) * 2.0**53).astype(np.uint64)
    return ((top << np.uint64(11)) | rng.integers(0, 2**11, n, dtype=np.uint64)).reshape(-1, 1)


def best_gaussian_ratio(words: np.ndarray, reference: np.ndarray, kernel: bool) -> float:
    """Best time of ``words`` over best time of ``reference``, interleaved: the kernel, or one ``ndtri`` per draw."""
    scale, out = np.ones(1), np.empty(words.shape)

    def run(w: np.ndarray) -> float:
        start = time.perf_counter()
        if kernel:
            scaled_gaussians(w, scale, out)
        else:
            ndtri(((w >> np.uint64(11)).astype(float) + 0.5) * 2.0**-53, out=out)
        return time.perf_counter() - start

    run(reference)  # compiled and cached before timing
    times, reference_times = [], []
    for _ in range(3 * REPEATS):
        times.append(run(words))
        reference_times.append(run(reference))
    return min(times) / min(reference_times)


def main() -> None:
    rng = np.random.default_rng(0)
    sigma = 20.6  # the PRIVATIZER's node noise at Exp 1's setting: a table of ~174,000 entries
    lattice = LatticeGaussian(sigma, lattice_granularity(sigma))
    cumulative = lattice._cumulative
    centre = words_between(np.uint64(0), cumulative[0], rng)  # |Z| = 0
    tail = words_between(cumulative[-2], np.uint64(2**63), rng)  # the last entry: |Z| ~ 8 sigma
    print(f"sigma {sigma}: deep-tail / centre time ratio {best_ratio(lattice, tail, centre):.2f} (1 = constant time)")
    sigma = 3.7
    lattice = LatticeGaussian(sigma, lattice_granularity(sigma))
    spread = rng.integers(0, 2**64, N_DRAWS, dtype=np.uint64, endpoint=False)
    centre = words_between(np.uint64(0), lattice._cumulative[0], rng)
    print(f"sigma {sigma}: whole-law / centre time ratio {best_ratio(lattice, spread, centre):.2f} (1 = constant time)")
    centre = gaussian_words(float(ndtr(-0.5)), float(ndtr(0.5)), rng)  # |z| < 0.5
    beyond = np.concatenate([gaussian_words(1e-15, float(ndtr(-4.0)), rng, N_DRAWS // 2),
                             gaussian_words(float(ndtr(4.0)), 1.0 - 1e-15, rng, N_DRAWS // 2)])  # |z| > 4
    print(f"factorized PRIVATIZER's z: beyond-4-sigma / centre time ratio {best_gaussian_ratio(beyond, centre, True):.2f}"
          f" (scipy's ndtri once per draw: {best_gaussian_ratio(beyond, centre, False):.2f})")


def exact_blt() -> None:
    """The exact BLT release's noise: its table, then whole release steps, beyond 4 sigma against the centre."""
    from dpfair.bandits.fairx._privatizer_exact import ExactBLTRelease

    rng = np.random.default_rng(1)
    sigma_units = 2.0**16 + 0.5
    lattice = LatticeGaussian(sigma_units, 1.0, "rounded")
    cumulative = lattice._cumulative
    centre = words_between(np.uint64(0), cumulative[int(0.5 * sigma_units)], rng)  # |Z| < sigma / 2
    beyond = words_between(cumulative[int(4 * sigma_units)], np.uint64(2**63), rng)  # |Z| > 4 sigma
    print(f"exact BLT noise table: beyond-4-sigma / centre time ratio {best_ratio(lattice, beyond, centre):.2f}")
    agents, entries, steps = 10, 21, 200
    feed: dict[str, np.ndarray] = {}

    def words(rows: np.ndarray, counts: np.ndarray, n_entries: int) -> np.ndarray:
        return feed["words"][: rows.size * n_entries].reshape(rows.size, n_entries)

    on_diagonal = np.zeros(entries, dtype=bool)  # the off-diagonal table: the words above are its
    increments = rng.integers(0, 2**20, size=(steps, agents, entries))
    times: dict[str, list[float]] = {"centre": [], "beyond": []}
    for _ in range(REPEATS):
        for name, pool in (("centre", centre), ("beyond", beyond)):
            mech = ExactBLTRelease(100_000, sigma_units, on_diagonal, agents, words)
            feed["words"] = pool
            start = time.perf_counter()
            for t in range(steps):
                mech.step(increments[t])
            times[name].append(time.perf_counter() - start)
    ratio = min(times["beyond"]) / min(times["centre"])
    print(f"exact BLT release step (10 agents, d = 5): beyond-4-sigma / centre time ratio {ratio:.2f}, "
          f"{1e6 * min(times['centre']) / steps:.0f} us per step")


if __name__ == "__main__":
    import os

    print(f"load average before: {os.getloadavg()}")
    main()
    exact_blt()
    print(f"load average after: {os.getloadavg()}")
