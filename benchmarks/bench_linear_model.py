"""Held-out accuracy of the private linear models with their defaults (issue 32), beside scikit-learn.

Printed, never asserted.  Law School (ugpa from lsat, male, pass_bar, dnn_bar_pass_prediction) and
Communities & Crime: 2/3 train, 1/3 held out (``train_test_split`` seeds 0, 1, 2), medians over the
three seeds, epsilon = 1, every argument at its default except the declared public bounds:

* Law School: ``feature_bounds`` = lsat in [10, 48] (the LSAT scale of the cohort), male, pass_bar and
  dnn_bar_pass_prediction in [0, 1]; ``target_bound`` = ugpa in [1, 4] (the loader's declared range);
  the 5 rows without gender get male = 0.5.
* Communities: the UCI features and target are published normalised to [0, 1].

For each it prints the R^2 of scikit-learn's ``LinearRegression``, of ``DPLinearRegression`` with its
defaults (secure noise, ``random_state=None``, and seeded noise ``random_state=seed``), and of the
pre-issue-32 defaults (``alpha=1``, Gaussian, ``data_norm`` on features scaled to [0, 1] by the same
public ranges, ``y`` scaled to [0, 1]) for comparison in the same process.

Run: ``DPFAIR_DATA_HOME=/work/shared/data .venv/bin/python benchmarks/bench_linear_model.py``.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from dpfair.datasets import load_communities, load_law_school
from dpfair.linear_model import DPLinearRegression

SEEDS = (0, 1, 2)
EPSILON = 1.0


def law_school() -> tuple[np.ndarray, np.ndarray, list[tuple[float, float]], tuple[float, float]]:
    data = load_law_school()
    X = data.X.fillna({"male": 0.5}).to_numpy(float)
    return X, data.y.to_numpy(float), [(10.0, 48.0), (0.0, 1.0), (0.0, 1.0), (0.0, 1.0)], data.extra["target_bounds"]


def communities() -> tuple[np.ndarray, np.ndarray, list[tuple[float, float]], tuple[float, float]]:
    data = load_communities()
    X = data.X.select_dtypes("number").to_numpy(float)
    return X, data.y.to_numpy(float), [(0.0, 1.0)] * X.shape[1], (0.0, 1.0)


def r2_row(X, y, make) -> float:
    scores = []
    for seed in SEEDS:
        train, test = train_test_split(np.arange(y.size), test_size=1 / 3, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make(seed).fit(X[train], y[train])
        scores.append(r2_score(y[test], model.predict(X[test])))
    return float(np.median(scores))


def main() -> None:
    for name, loader in (("Law School", law_school), ("Communities", communities)):
        X, y, feature_bounds, target_bounds = loader()
        low, high = np.array(feature_bounds).T
        scaled = (X - low) / (high - low)  # the old recipe: features in [0, 1], y in [0, 1]
        y_low, y_high = target_bounds
        y01 = (y - y_low) / (y_high - y_low)
        start = time.perf_counter()
        d = X.shape[1]
        private = {"epsilon": EPSILON, "feature_bounds": feature_bounds, "target_bound": target_bounds}
        old = {"epsilon": EPSILON, "data_norm": math.sqrt(d), "target_bound": 1.0}
        rows = {
            "scikit-learn LinearRegression": r2_row(X, y, lambda seed: LinearRegression()),
            "DPLinearRegression defaults, secure noise": r2_row(X, y, lambda seed, kw=private: DPLinearRegression(**kw)),
            "DPLinearRegression defaults, seeded noise": r2_row(
                X, y, lambda seed, kw=private: DPLinearRegression(**kw, random_state=seed)),
            "DPLinearRegression data_norm, defaults, seeded": r2_row(
                scaled, y01, lambda seed, kw=old: DPLinearRegression(**kw, random_state=seed)),
            "old defaults (alpha=1, gaussian), seeded": r2_row(
                scaled, y01, lambda seed, kw=old: DPLinearRegression(**kw, alpha=1.0, mechanism="gaussian", random_state=seed)),
        }
        print(f"{name}: n={y.size}, d={X.shape[1]}, epsilon={EPSILON:g}, held-out R^2 (median of {len(SEEDS)} splits)")
        for label, value in rows.items():
            print(f"  {label:<48s} {value: .4g}")
        print(f"  ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
