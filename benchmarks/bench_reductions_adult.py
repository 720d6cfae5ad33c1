"""``DPExponentiatedGradient`` with its defaults on real data, beside non-private references.

Protocol: the experiments' encoding of each data set (``dpfair.experiments.classification``: Adult with public feature
ranges, sensitive attribute sex, 0 = Female; Communities & Crime as in Kearns et al., sensitive attribute
majority-white), 2/3 of the rows to train and 1/3 held out (``train_test_split`` with the seed), seeds 0, 1, 2, medians.
Reported: the held-out expected error and equalized-odds violation
``max_y |P(h = 1 | A = 1, Y = y) - P(h = 1 | A = 0, Y = y)|`` of

* ``DPExponentiatedGradient`` with its defaults (``oracle="auto"``, i.e. the sufficient-statistics oracle) at each
  ``epsilon`` of ``--epsilons``, and with ``oracle="paper"`` at ``epsilon = 1``;
* scikit-learn's ``LogisticRegression`` (non-private, unconstrained);
* fairlearn's ``ExponentiatedGradient`` (non-private, ``EqualizedOdds(difference_bound=gamma)``) with a weighted
  least-squares classifier (the same hypothesis class as ours; ``--fairlearn-logistic`` uses ``LogisticRegression``,
  slower);
* the best constant classifier.

The target: Adult, ``epsilon = 1``: error <= 0.20 and violation <= 0.10.  Exit status 1 when missed.

``--stress`` runs the data the defaults were not tuned on instead, with **secure noise** and every default (``delta``,
``gamma`` included): the ACS excerpt (income > 50k, race in 4 groups), Communities, a 1,500-row subsample of Adult
(1,000 training rows), a synthetic task with 9 groups down to 20 training rows, and Adult with one declared group
that holds no row.  Each line gives the held-out error and violation, the utility share
``u = (err_const - err) / (err_const - err_fairlearn)``, whether the median errs more than the constant + .005
(``WORSE``), and the warnings of the fits.  Exit status 1 when a median errs more than the constant + .005.

Run: ``DPFAIR_DATA_HOME=/work/shared/data .venv/bin/python benchmarks/bench_reductions_adult.py [--datasets adult
communities] [--stress]``
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings

import numpy as np
from fairlearn.reductions import EqualizedOdds, ExponentiatedGradient
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import train_test_split

from dpfair.classification import DPExponentiatedGradient
from dpfair.experiments.classification import _data, _expected_metrics, _l1_bound

DELTA = 1e-6
SEEDS = (0, 1, 2)
TARGET = {"error": 0.20, "violation": 0.10}


class LeastSquaresClassifier(ClassifierMixin, BaseEstimator):
    """Weighted least-squares classifier (fairlearn's cost-sensitive oracle in this comparison)."""

    def fit(self, X, y, sample_weight=None):
        self.regression_ = LinearRegression().fit(X, y, sample_weight=sample_weight)
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return (self.regression_.predict(X) > 0.5).astype(int)


def _row(name: str, results: list[tuple[float, float, float]]) -> tuple[float, float]:
    err = statistics.median(r[0] for r in results)
    viol = statistics.median(r[1] for r in results)
    secs = statistics.median(r[2] for r in results)
    per_seed = " ".join(f"({r[0]:.3f}, {r[1]:.3f})" for r in results)
    print(f"  {name:<44} error {err:.3f}  violation {viol:.3f}  [{secs:6.2f} s]  seeds: {per_seed}", flush=True)
    return err, viol


def run(dataset: str, gamma: float, epsilons: list[float], fairlearn_logistic: bool) -> int:
    X, y, groups, norm_bound = _data(dataset)
    l1 = _l1_bound(dataset, X.shape[1])
    print(f"{dataset}: {y.size} rows x {X.shape[1]} features, gamma = {gamma}, delta = {DELTA}, "
          f"medians of seeds {SEEDS} (held-out 1/3)")
    rows = np.arange(y.size)
    splits = [tuple(np.sort(part) for part in train_test_split(rows, test_size=1 / 3, random_state=seed))
              for seed in SEEDS]

    def measure(fit_predict) -> list[tuple[float, float, float]]:
        out = []
        for seed, (train, test) in zip(SEEDS, splits, strict=True):
            start = time.perf_counter()
            p1 = fit_predict(seed, train, test)
            secs = time.perf_counter() - start
            out.append((*_expected_metrics(p1, y[test], groups[test]), secs))
        return out

    def constant(seed, train, test):
        return np.full(test.size, float(y[train].mean() > 0.5))

    def logistic(seed, train, test):
        return LogisticRegression(max_iter=2000).fit(X[train], y[train]).predict(X[test]).astype(float)

    def fairlearn(seed, train, test):
        base = LogisticRegression(max_iter=2000) if fairlearn_logistic else LeastSquaresClassifier()
        eg = ExponentiatedGradient(base, constraints=EqualizedOdds(difference_bound=gamma))
        eg.fit(X[train], y[train], sensitive_features=groups[train])
        return eg._pmf_predict(X[test])[:, 1]

    def ours(epsilon, **kw):
        def fit_predict(seed, train, test):
            est = DPExponentiatedGradient(epsilon=epsilon, delta=DELTA, gamma=gamma, x_norm_bound=norm_bound,
                                          x_l1_bound=l1, groups=[0, 1], random_state=seed, **kw)
            est.fit(X[train], y[train], sensitive_features=groups[train])
            return est.predict_proba(X[test])[:, 1]
        return fit_predict

    _row("constant classifier", measure(constant))
    _row("sklearn LogisticRegression (non-private)", measure(logistic))
    _row(f"fairlearn ExponentiatedGradient ({'logistic' if fairlearn_logistic else 'least squares'})",
         measure(fairlearn))
    _row("DPExponentiatedGradient epsilon=inf", measure(ours(math.inf)))
    failed = 0
    for epsilon in epsilons:
        err, viol = _row(f"DPExponentiatedGradient epsilon={epsilon:g}", measure(ours(epsilon)))
        if dataset == "adult" and epsilon == 1.0:
            ok = err <= TARGET["error"] and viol <= TARGET["violation"]
            failed |= not ok
            print(f"    target at epsilon=1: error <= {TARGET['error']}, violation <= {TARGET['violation']}: "
                  f"{'ok' if ok else 'MISSED'}")
    _row("DPExponentiatedGradient epsilon=1 oracle='paper'", measure(ours(1.0, oracle="paper")))
    return int(failed)


# ---------------------------------------------------------------------- --stress: data the defaults were not tuned on
def _acs() -> tuple:
    import pandas as pd

    from dpfair.datasets import load_acs_excerpt

    d = load_acs_excerpt()
    age = ((d.X["AGEP"].to_numpy(float) - 17.0) / (99.0 - 17.0)).clip(0.0, 1.0)[:, None]  # public range of ages
    categorical = [c for c in d.X.columns if c != "AGEP"]
    onehot = pd.get_dummies(d.X[categorical].astype("string").fillna("missing"), dtype=float)
    onehot = onehot.reindex(columns=sorted(onehot.columns))
    X = np.hstack([age, onehot.to_numpy(float)])
    order = ["white", "black", "asian", "other"]
    groups = d.sensitive.map({name: i for i, name in enumerate(order)}).to_numpy(int)
    # one 1 per categorical column and the age in [0, 1]: ||x||_2 <= sqrt(1 + columns), ||x||_1 <= 1 + columns
    return X, d.y.to_numpy(int), groups, list(range(4)), math.sqrt(1 + len(categorical)), float(1 + len(categorical))


def _adult_task(n_rows: int | None = None, empty_group: bool = False) -> tuple:
    X, y, groups, bound = _data("adult")
    l1 = _l1_bound("adult", X.shape[1])
    if n_rows:
        rows = np.random.default_rng(7).choice(y.size, n_rows, replace=False)
        X, y, groups = X[rows], y[rows], groups[rows]
    return X, y, groups, [0, 1, 2] if empty_group else [0, 1], bound, l1


def _communities() -> tuple:
    X, y, groups, bound = _data("communities")
    return X, y, groups, [0, 1], bound, np.ones(X.shape[1])


def _nine_groups() -> tuple:
    rng = np.random.default_rng(3)
    sizes = [1200, 800, 500, 300, 200, 120, 90, 60, 30]  # 2/3 of the smallest: 20 training rows
    groups = np.repeat(np.arange(9), sizes)
    X = rng.normal(size=(groups.size, 5)).clip(-3.0, 3.0)  # declared bounds: |x_j| <= 3
    w, offsets = rng.normal(size=5), rng.normal(scale=0.8, size=9)
    y = (rng.uniform(size=groups.size) < 1.0 / (1.0 + np.exp(-(X @ w + offsets[groups])))).astype(int)
    return X, y, groups, list(range(9)), 3.0 * math.sqrt(5.0), 15.0


STRESS_TASKS = {"acs-race4": _acs, "communities": _communities, "adult-1000": lambda: _adult_task(1500),
                "synthetic-9-groups": _nine_groups, "adult-empty-group": lambda: _adult_task(None, True)}


def _metrics(p1: np.ndarray, y: np.ndarray, groups: np.ndarray, declared: list) -> tuple[float, float]:
    error = float(np.mean(np.where(y == 1, 1.0 - p1, p1)))
    violation = 0.0
    for label in (0, 1):
        rates = [p1[(groups == a) & (y == label)].mean() for a in declared if ((groups == a) & (y == label)).any()]
        violation = max(violation, max(rates) - min(rates))
    return error, float(violation)


def stress(epsilons: list[float]) -> int:
    worse = 0
    for name, build in STRESS_TASKS.items():
        X, y, groups, declared, bound, l1 = build()
        rows = np.arange(y.size)
        results: dict[str, list] = {}
        for seed in SEEDS:
            train, test = (np.sort(part) for part in train_test_split(rows, test_size=1 / 3, random_state=seed,
                                                                      stratify=groups))
            constant = np.full(test.size, float(y[train].mean() > 0.5))
            results.setdefault("constant", []).append((*_metrics(constant, y[test], groups[test], declared), ()))
            reference = ExponentiatedGradient(LeastSquaresClassifier(), constraints=EqualizedOdds(difference_bound=0.05))
            reference.fit(X[train], y[train], sensitive_features=groups[train])
            results.setdefault("fairlearn", []).append(
                (*_metrics(reference._pmf_predict(X[test])[:, 1], y[test], groups[test], declared), ()))
            for epsilon in epsilons:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    est = DPExponentiatedGradient(epsilon=epsilon, x_norm_bound=bound, x_l1_bound=l1, groups=declared)
                    est.fit(X[train], y[train], sensitive_features=groups[train])  # defaults, secure noise
                names = tuple(sorted({w.category.__name__ for w in caught} - {"PrivacyLeakWarning"}))
                results.setdefault(f"epsilon={epsilon:g}", []).append(
                    (*_metrics(est.predict_proba(X[test])[:, 1], y[test], groups[test], declared), names))
        print(f"{name}: {y.size} rows, {len(declared)} declared groups, {len(SEEDS)} splits (held-out 1/3), secure noise")
        err_const = statistics.median(r[0] for r in results["constant"])
        err_ref = statistics.median(r[0] for r in results["fairlearn"])
        for label, rs in results.items():
            err, viol = statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)
            u = (err_const - err) / (err_const - err_ref) if err_const > err_ref else math.nan
            flag = "  WORSE than the constant + .005" if err > err_const + 0.005 else ""
            worse |= bool(flag)
            warned = sorted({n for r in rs for n in r[2]})
            print(f"  {label:<14} error {err:.3f}  violation {viol:.3f}  u {u:+.2f}{flag}"
                  f"{'  warnings: ' + ', '.join(warned) if warned else ''}", flush=True)
    return worse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["adult", "communities"])
    parser.add_argument("--gamma", type=float, default=0.05)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0, 10.0])
    parser.add_argument("--fairlearn-logistic", action="store_true")
    parser.add_argument("--stress", action="store_true", help="data the defaults were not tuned on, secure noise")
    args = parser.parse_args()
    if args.stress:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return stress(args.epsilons)
    failed = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PrivacyLeakWarning at inf, SeededNoiseWarning, SmallBudgetWarning: deliberate
        for dataset in args.datasets:
            failed |= run(dataset, args.gamma, args.epsilons, args.fairlearn_logistic)
            print()
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
