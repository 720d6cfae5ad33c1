"""Speed of the regression post-processor's LP (printed, never asserted).

The regression issue asks for a median of at most 0.2 s per fit at k = 180 bins with 4 groups
(Law School), with the same optimum as the plain HiGHS formulation.  This script times, on Law
School histograms from seeds 33.., over an alpha sweep:
* full fits of FairRegressionPostProcessor (epsilon = 1; histogram, noise, isotonic repair, LP, maps);
* the LP alone: the fast solver versus the reference LP in the same process (ratio).

Run: ``DPFAIR_DATA_HOME=... .venv/bin/python benchmarks/bench_regression.py``.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.model_selection import train_test_split

from dpfair.datasets import load_law_school
from dpfair.regression import FairRegressionPostProcessor, solve_barycenter_lp, solve_barycenter_lp_reference

LAW_GROUPS = ["asian", "black", "hisp", "white"]  # declared (sorted), never read off the data
ALPHAS = (0.0, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32)


def main(n_seeds: int = 5, k: int = 180) -> None:
    data = load_law_school()
    y, groups = data.y.to_numpy(float), data.sensitive.to_numpy()
    fit_times, fast_times, ref_times, gaps = [], [], [], []
    for seed in range(33, 33 + n_seeds):
        y_train, _, g_train, _ = train_test_split(y, groups, test_size=0.3, random_state=seed)
        for alpha in ALPHAS:
            t0 = time.perf_counter()
            pp = FairRegressionPostProcessor(
                epsilon=1.0, n_bins=k, alpha=alpha, bounds=(1.0, 4.0), groups=LAW_GROUPS, random_state=seed
            )
            pp.fit(y_train, sensitive_features=g_train)
            fit_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            fast = solve_barycenter_lp(pp.pmfs_, pp.group_weights_, pp.grid_, alpha)
            fast_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ref = solve_barycenter_lp_reference(pp.pmfs_, pp.group_weights_, pp.grid_, alpha)
            ref_times.append(time.perf_counter() - t0)
            gaps.append(abs(fast.objective - ref.objective))
    print(f"k={k}, 4 groups, {len(fit_times)} fits (alpha sweep x {n_seeds} seeds), epsilon=1:")
    print(f"  full fit: median {np.median(fit_times):.3f} s, max {np.max(fit_times):.3f} s (target: median <= 0.2 s)")
    print(f"  LP fast: median {np.median(fast_times):.3f} s; reference HiGHS LP: median {np.median(ref_times):.3f} s; "
          f"ratio {np.median(ref_times) / np.median(fast_times):.1f}x")
    print(f"  largest |objective difference| fast vs reference: {max(gaps):.2e}")


if __name__ == "__main__":
    main()
