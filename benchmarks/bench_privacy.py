"""Speed of the privacy core (printed, never asserted).

Figures the foundations issue asks for:
* exact top-m sampling with n = 100,000 and m = 100: at most 50 ms per draw (table built per draw);
  the reference in the same process is the textbook log-space elementary-symmetric-polynomial DP
  (m passes of a log-cumsum-exp over n items);
* binary-tree mechanism, T = 100,000, 21 x 21 symmetric matrices, seeded noise: all releases in <= 30 s;
* secure (OpenDP) versus seeded (numpy) noise: time per sample and the ratio.

Run: ``make bench`` or ``.venv/bin/python benchmarks/bench_privacy.py``.
"""

from __future__ import annotations

import time

import numpy as np

from dpfair.privacy import BinaryTreeMechanism, TopMExponentialMechanism
from dpfair.privacy.noise import SecureNoise, SeededNoise


def reference_log_esp_table(log_weights: np.ndarray, m: int) -> np.ndarray:
    """Textbook log-space table of prefix elementary symmetric polynomials (for timing only)."""
    n = log_weights.size
    table = np.full((m + 1, n + 1), -np.inf)
    table[0] = 0.0
    for k in range(1, m + 1):
        table[k, 1:] = np.logaddexp.accumulate(log_weights + table[k - 1, :-1])
    return table


def bench_top_m(repeats: int = 10) -> None:
    rng = np.random.default_rng(0)
    n, m = 100_000, 100
    scores = rng.uniform(size=n)
    for epsilon in (1.0, 1e3):
        times = []
        for r in range(repeats):
            t0 = time.perf_counter()
            mech = TopMExponentialMechanism(scores / m, m, sensitivity=1.0 / m, epsilon=epsilon)
            mech.sample(random_state=r)
            times.append(time.perf_counter() - t0)
        ours = float(np.median(times))
        t0 = time.perf_counter()
        reference_log_esp_table(epsilon * scores / 2.0, m)
        ref = time.perf_counter() - t0
        mech = TopMExponentialMechanism(scores / m, m, sensitivity=1.0 / m, epsilon=epsilon)
        t0 = time.perf_counter()
        mech.sample(size=100, random_state=0)
        amortized = (time.perf_counter() - t0) / 100
        print(
            f"top-m n={n} m={m} eps={epsilon:g}: {ours * 1e3:.1f} ms per draw incl. table (target <= 50 ms); "
            f"reference log-space DP table alone {ref * 1e3:.0f} ms (ratio {ref / ours:.1f}x); "
            f"{amortized * 1e3:.2f} ms per extra draw from a built table"
        )


def bench_tree(horizon: int = 100_000, d: int = 21) -> None:
    rng = np.random.default_rng(1)
    tree = BinaryTreeMechanism(horizon, (d, d), sensitivity=2.0, rho=1.0, symmetric=True, random_state=2)
    xs = rng.normal(size=(1000, d)) / np.sqrt(d)
    t0 = time.perf_counter()
    for t in range(horizon):
        x = xs[t % 1000]
        tree.step(np.outer(x, x))
    elapsed = time.perf_counter() - t0
    print(f"binary tree T={horizon} {d}x{d} symmetric, seeded: all releases in {elapsed:.1f} s (target <= 30 s)")


def bench_noise(n: int = 20_000) -> None:
    secure, seeded = SecureNoise(), SeededNoise(0)
    for kind in ("laplace", "gaussian"):
        t0 = time.perf_counter()
        getattr(secure, kind)(np.zeros(n), 1.0)
        ts = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        for _ in range(100):
            getattr(seeded, kind)(np.zeros(n), 1.0)
        tn = (time.perf_counter() - t0) / (100 * n)
        print(f"{kind}: secure {ts * 1e6:.1f} us/sample, seeded {tn * 1e9:.1f} ns/sample, ratio {ts / tn:.0f}x")


if __name__ == "__main__":
    bench_top_m()
    bench_tree()
    bench_noise()
