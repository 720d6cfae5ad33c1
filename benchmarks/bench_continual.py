"""Per-release time and noise of each continual-release factorization (the noise table of the
guide's continual-release section), printed, not asserted.

For ``T`` releases (default 20,000) of running sums, times ``ContinualSumMechanism.step`` (update + release)
for each factorization (square root, Honaker, binary tree) beside ``BinaryTreeMechanism.step``, on scalar
elements and on symmetric ``d x d`` Gram matrices (``d = 10``), with seeded noise (the secure source costs
~50 us per entry whatever the factorization).  Prints the analytic noise table (worst / RMS std of the
releases in units of ``1 / sqrt(2 rho)``) beside the times, and the memory each factorization keeps.

Last, the floor no factorization can pass: for any ``A = B C`` of the ``T x T`` prefix-sum matrix,
``max_t ||B_t|| * max_s ||C e_s|| >= gamma_2(A) >= ||A||_* / T`` (the trace-norm bound on the factorization
norm; Linial & Shraibman 2009), and the singular values of ``A`` are ``1 / (2 sin((2k - 1) pi / (4T + 2)))``.
So the worst release's noise of *every* Gaussian factorization mechanism (banded, Toeplitz or optimized, as
in Choquette-Choo et al. 2023; Henzinger, Upadhyay & Upadhyay 2023) is at least this floor, in the same
units: it tells how much an optimized factorization could still buy over the square root.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_continual.py [T]`` (one BLAS thread: on a shared
2-core machine threaded BLAS makes the direct sum's timings erratic).  Times are this process's CPU time
(``time.process_time``), so that other jobs on a shared machine do not inflate them.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from dpfair.privacy import BinaryTreeMechanism, ContinualSumMechanism, SeededNoiseWarning, get_factorization

T = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
D = 10


def _time(make, element) -> float:
    mech = make()
    start = time.process_time()
    for _ in range(T):
        mech.step(element)
    return (time.process_time() - start) / T * 1e6


def _direct_sqrt_us(size: int, n_points: int = 200) -> float:
    """Mean time of the FFT-free incremental convolution ``sum_{j<t} c_j z_{t-j}`` (O(t) per release), sampled."""
    rev = get_factorization("sqrt", T).coefficients[::-1].copy()
    z = np.random.default_rng(0).normal(size=(size, T))  # stored transposed: one contiguous row per entry
    points = np.linspace(1, T, n_points).astype(int)
    start = time.process_time()
    for t in points:
        z[:, :t] @ rev[T - t :]
    return (time.process_time() - start) / n_points * 1e6


def worst_release_floor(horizon: int) -> float:
    """``||A||_* / T``: a lower bound on the worst release's noise std (units ``1 / sqrt(2 rho)``) of any factorization."""
    k = np.arange(1, horizon + 1)
    return float(np.sum(1.0 / (2.0 * np.sin((2 * k - 1) * np.pi / (4 * horizon + 2)))) / horizon)


def main() -> None:
    warnings.simplefilter("ignore", SeededNoiseWarning)  # seeded noise, on purpose: timing only
    scalar, gram = np.ones(1), np.eye(D) / D
    print(f"continual release, T = {T}: per-release time (update + release, seeded noise) and analytic noise std")
    print(f"{'factorization':<26}{'memory':>10}{'worst':>9}{'RMS':>8}{'us/release (1,)':>18}{f'us/release ({D},{D}) sym':>24}")
    for name in ("sqrt", "honaker", "tree"):
        fact = get_factorization(name, T)
        err = fact.error()
        t1 = _time(lambda n=name: ContinualSumMechanism(T, (1,), sensitivity=1.0, rho=1.0, factorization=n,
                                                        random_state=0), scalar)
        t2 = _time(lambda n=name: ContinualSumMechanism(T, (D, D), sensitivity=1.0, rho=1.0, factorization=n,
                                                        symmetric=True, random_state=0), gram)
        print(f"{name:<26}{fact.memory:>10}{err['worst']:>9.2f}{err['rms']:>8.2f}{t1:>18.1f}{t2:>24.1f}")
    t1 = _time(lambda: BinaryTreeMechanism(T, (1,), sensitivity=1.0, rho=1.0, random_state=0), scalar)
    t2 = _time(lambda: BinaryTreeMechanism(T, (D, D), sensitivity=1.0, rho=1.0, symmetric=True, random_state=0), gram)
    err = get_factorization("tree", T).error()
    print(f"{'BinaryTreeMechanism':<26}{'O(log T)':>10}{err['worst']:>9.2f}{err['rms']:>8.2f}{t1:>18.1f}{t2:>24.1f}")
    err = get_factorization("sqrt", T).error()
    print(f"{'sqrt, direct O(t) sum':<26}{'O(T)':>10}{err['worst']:>9.2f}{err['rms']:>8.2f}{_direct_sqrt_us(1):>18.1f}"
          f"{_direct_sqrt_us(D * (D + 1) // 2):>24.1f}   (noise convolution only, no FFT; the mechanism uses FFT blocks)")
    floor = worst_release_floor(T)
    print(f"{'floor, any factorization':<26}{'':>10}{floor:>9.2f}{'':>8}   (||A||_* / T; the square root is "
          f"{get_factorization('sqrt', T).error()['worst'] / floor:.3f}x it)")


if __name__ == "__main__":
    main()
