"""Speed of dpfair.classification (the classification issue's targets), printed in one run.

1. ``DPExponentiatedGradient`` at ``epsilon = inf`` against fairlearn's ``ExponentiatedGradient`` on
   2,000 x 100 synthetic data, both for 100 rounds with a linear least-squares cost-sensitive oracle
   (ours: Section 5's one regression per cost vector; fairlearn: a weighted ``LinearRegression``
   classifier, the same hypothesis class): the ratio ours / fairlearn must be at most 1.
2. ``DPEqualizedOddsPostProcessor.fit`` (frequency table, Laplace noise and the HiGHS LP) with a prefit
   base on 10,000 rows: median at most 5 ms for 2 groups and 50 ms for 10 groups.

Run: ``.venv/bin/python benchmarks/bench_classification.py`` (or ``make bench``).  Exit status 1 when
a target is missed.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings

import numpy as np
from fairlearn.reductions import EqualizedOdds, ExponentiatedGradient
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LinearRegression, LogisticRegression

from dpfair.classification import DPEqualizedOddsPostProcessor, DPExponentiatedGradient
from dpfair.datasets import make_classification

#: post-processing fit targets (ms) by number of groups
TARGET_MS = {2: 5.0, 10: 50.0}


class LeastSquaresClassifier(ClassifierMixin, BaseEstimator):
    """Weighted least-squares classifier (fairlearn's cost-sensitive oracle in this comparison)."""

    def fit(self, X, y, sample_weight=None):
        self.regression_ = LinearRegression().fit(X, y, sample_weight=sample_weight)
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return (self.regression_.predict(X) > 0.5).astype(int)


def _best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def reductions(n_rows: int = 2000, n_features: int = 100, gamma: float = 0.05, repeats: int = 3) -> int:
    X, y, g = make_classification(n_rows, n_features=n_features, disparity=1.0, random_state=0)
    X = X / np.linalg.norm(X, axis=1).max()
    warnings.simplefilter("ignore")  # epsilon = inf warns (PrivacyLeakWarning): deliberate here
    ours = DPExponentiatedGradient(
        epsilon=math.inf, delta=1e-5, gamma=gamma, bound_B=5.0, x_norm_bound=1.0, n_iter=100, eta=1.0
    )
    theirs = ExponentiatedGradient(
        LeastSquaresClassifier(), constraints=EqualizedOdds(difference_bound=gamma), max_iter=100
    )
    t_ours = _best_of(lambda: ours.fit(X, y, sensitive_features=g), repeats)
    t_theirs = _best_of(lambda: theirs.fit(X, y, sensitive_features=g), repeats)
    print(f"{n_rows} x {n_features}, gamma={gamma}, 100 rounds (best of {repeats})")
    print(f"DPExponentiatedGradient (epsilon=inf): {t_ours:.4f} s")
    print(f"fairlearn ExponentiatedGradient:       {t_theirs:.4f} s")
    ratio = t_ours / t_theirs
    print(f"ratio ours / fairlearn: {ratio:.4f} (target <= 1) {'ok' if ratio <= 1 else 'SLOW'}")
    return int(ratio > 1)


def median_fit_ms(n_groups: int, n_rows: int = 10_000, repeats: int = 50) -> float:
    X, y, _ = make_classification(n_rows, disparity=1.0, random_state=0)
    groups = np.random.default_rng(1).integers(0, n_groups, n_rows)
    base = LogisticRegression().fit(X, y)
    est = DPEqualizedOddsPostProcessor(base, epsilon=1.0, gamma=0.02, groups=list(range(n_groups)), prefit=True,
                                       random_state=0)
    est.fit(X, y, sensitive_features=groups)  # warm-up (imports, HiGHS)
    times = []
    for seed in range(repeats):
        est.set_params(random_state=seed)
        start = time.perf_counter()
        est.fit(X, y, sensitive_features=groups)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def postprocessing() -> int:
    failed = False
    for n_groups, target in TARGET_MS.items():
        ms = median_fit_ms(n_groups)
        ok = ms <= target
        failed |= not ok
        print(f"{n_groups:>2} groups, 10000 rows: median fit {ms:7.2f} ms (target <= {target:g} ms) {'ok' if ok else 'SLOW'}")
    return int(failed)


def main() -> int:
    with warnings.catch_warnings():
        failed = reductions()
    print()
    return failed | postprocessing()


if __name__ == "__main__":
    raise SystemExit(main())
