"""Held-out accuracy of the private linear models with their defaults, beside scikit-learn.

Printed, never asserted.  Law School (ugpa from lsat, male, pass_bar, dnn_bar_pass_prediction) and
Communities & Crime: 2/3 train, 1/3 held out (``train_test_split`` seeds 0, 1, 2), medians over the
three seeds, epsilon = 1, every argument at its default except the declared public bounds:

* Law School: ``feature_bounds`` = lsat in [10, 48] (the LSAT scale of the cohort), male, pass_bar and
  dnn_bar_pass_prediction in [0, 1]; ``target_bound`` = ugpa in [1, 4] (the loader's declared range);
  the 5 rows without gender get male = 0.5.
* Communities: the UCI features and target are published normalised to [0, 1].

For each it prints the R^2 of scikit-learn's ``LinearRegression``, of ``DPLinearRegression`` with its
defaults (secure noise, ``random_state=None``, and seeded noise ``random_state=seed``), and of the
earlier defaults (``alpha=1``, Gaussian, ``data_norm`` on features scaled to [0, 1] by the same
public ranges, ``y`` scaled to [0, 1]) for comparison in the same process.  The fair non-private reference
is scikit-learn on the features clipped to their exact 5-95 % quantiles (what ``feature_bounds`` does
privately): the private model's edge over unclipped OLS comes from the clipping, not from the privacy.

``--noise-ratio``: ``DPLogisticRegression`` on Adult (missing values kept, the declared preprocessing of
``dpfair.preprocessing``: 51 columns), training rows 300 ... 30,000 and epsilon 0.05 ... 2, seeds 0, 1, 2:
its ``noise_to_signal_`` (``4 p / (epsilon' n)``) beside the held-out error and the constant classifier's, the
measurement behind the 0.1 threshold of its ``NoiseDominatesWarning``.

Run: ``DPFAIR_DATA_HOME=/work/shared/data .venv/bin/python benchmarks/bench_linear_model.py [--noise-ratio]``.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from dpfair.datasets import ADULT_SCHEMA, load_adult, load_communities, load_law_school
from dpfair.linear_model import DPLinearRegression, DPLogisticRegression

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


def clipped_ols_row(X, y) -> float:
    """scikit-learn's LinearRegression on features clipped to their exact (non-private) 5-95 % training quantiles."""
    scores = []
    for seed in SEEDS:
        train, test = train_test_split(np.arange(y.size), test_size=1 / 3, random_state=seed)
        low, high = np.quantile(X[train], [0.05, 0.95], axis=0)
        model = LinearRegression().fit(np.clip(X[train], low, high), y[train])
        scores.append(r2_score(y[test], model.predict(np.clip(X[test], low, high))))
    return float(np.median(scores))


def noise_ratio() -> None:
    """DPLogisticRegression's noise_to_signal_ against its held-out error on Adult (see the module docstring)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from dpfair.preprocessing import DeclaredOneHotEncoder, DeclaredRangeScaler, row_norm_bound

    adult = load_adult(drop_missing=False)
    categorical = ["workclass", "marital-status", "occupation", "relationship", "race"]
    maxima = {"age": (17, 90), "education-num": (1, 16), "hours-per-week": (1, 99)}
    preprocess = ColumnTransformer([
        ("categorical", DeclaredOneHotEncoder(ADULT_SCHEMA.encoder_categories(categorical)), categorical),
        ("numeric", DeclaredRangeScaler(maxima), list(maxima)),
        ("capital", make_pipeline(FunctionTransformer(np.log1p, feature_names_out="one-to-one"),
                                  DeclaredRangeScaler([(0, np.log1p(99999)), (0, np.log1p(4356))])),
         ["capital-gain", "capital-loss"]),
    ])
    Z, y = preprocess.fit_transform(adult.X), adult.y.to_numpy()  # declared maps: no statistic of the rows
    rows = np.random.default_rng(0).permutation(y.size)
    pool, test = rows[:30_000], rows[30_000:]
    constant = min(y[pool].mean(), 1 - y[pool].mean())
    print(f"Adult, {Z.shape[1]} columns, held-out error of DPLogisticRegression (defaults, seeds {SEEDS}); "
          f"the constant classifier errs {constant:.3f}")
    for n in (300, 1000, 3000, 10_000, 30_000):
        for epsilon in (0.05, 0.2, 0.5, 1.0, 2.0):
            errors, ratio = [], 0.0
            for seed in SEEDS:
                train = np.random.default_rng(seed).permutation(pool)[:n]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = DPLogisticRegression(epsilon=epsilon, data_norm=row_norm_bound(preprocess),
                                                 random_state=seed).fit(Z[train], y[train])
                errors.append(np.mean(model.predict(Z[test]) != y[test]))
                ratio = model.noise_to_signal_
            flag = "warns" if ratio > 0.1 else ""
            print(f"  n={n:6d} epsilon={epsilon:4.2f} noise_to_signal_={ratio:7.3f} error={np.median(errors):.3f} "
                  f"{'above' if np.median(errors) > constant else 'below'} the constant {flag}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noise-ratio", action="store_true", help="DPLogisticRegression's noise ratio on Adult")
    if parser.parse_args().noise_ratio:
        noise_ratio()
        return
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
            "scikit-learn, features clipped to 5-95 % quantiles": clipped_ols_row(X, y),
            "DPLinearRegression defaults, secure noise": r2_row(X, y, lambda seed, kw=private: DPLinearRegression(**kw)),
            "DPLinearRegression defaults, seeded noise": r2_row(
                X, y, lambda seed, kw=private: DPLinearRegression(**kw, random_state=seed)),
            "DPLinearRegression data_norm, defaults, seeded": r2_row(
                scaled, y01, lambda seed, kw=old: DPLinearRegression(**kw, random_state=seed)),
            "earlier defaults (alpha=1, gaussian), seeded": r2_row(
                scaled, y01, lambda seed, kw=old: DPLinearRegression(**kw, alpha=1.0, mechanism="gaussian", random_state=seed)),
        }
        print(f"{name}: n={y.size}, d={X.shape[1]}, epsilon={EPSILON:g}, held-out R^2 (median of {len(SEEDS)} splits)")
        for label, value in rows.items():
            print(f"  {label:<52s} {value: .4g}")
        print(f"  ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
