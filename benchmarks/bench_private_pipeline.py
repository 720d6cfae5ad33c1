"""Error and equalized-odds violation of the private Adult pipeline, held out, medians of 3 seeds.

``DPLogisticRegression`` + ``DPEqualizedOddsPostProcessor`` (``prefit=False``, one total epsilon) on UCI Adult
loaded by :func:`dpfair.datasets.load_adult` (45,222 rows; 2/3 train, 1/3 held out by a seeded permutation;
sensitive attribute sex; gamma 0.02), at total epsilon 0.5, 1 and 2, against two non-private references on the
same splits: scikit-learn's ``LogisticRegression`` and fairlearn's ``ThresholdOptimizer(constraints=
"equalized_odds")`` on it.  Printed, never asserted.  Error and violation are the *expected* ones of the
randomized predictors (their probabilities, no prediction noise); the violation is fairlearn's
``equalized_odds_difference`` (two groups: the largest gap of the false- or true-positive rates).

Features, scaled by public constants only:

* ``all``: the encoding of :mod:`dpfair.experiments.classification` (the five numeric columns divided by
  their documented ranges, every categorical column one-hot: 85 columns, ``||x|| <= sqrt(11)``).
* ``public``: the same with capital gain / loss on a log scale (``log1p(v) / log1p(max)``) and native-country
  recoded United-States / other (46 columns, the same bound): each one-hot column is a dimension of the
  objective-perturbation noise, and 40 of the 85 are countries holding 9 % of the rows.

Pipelines (the headline is ``defaults``):

* ``defaults``: ``DPLogisticRegression()`` and ``DPEqualizedOddsPostProcessor()`` with every setting left at its
  default (``C="auto"``, ``score_bins="auto"``, which is 8 bins for this base model), each
  at half of epsilon; ``--shares`` adds other splits (the base's share first).
* ``paper``: the paper's variant, the defaults before C="auto" and score bins: ``DPLogisticRegression(C=1.0)`` at half of
  epsilon and Algorithm 1 (``score_bins=None``: binary predictions, LP~ (1) widened by its slack) at the other.

The ``all`` encoding is the one of dpfair's own Adult experiment; ``public`` is what a user scaling by public
constants would more likely do (fewer, more informative columns).  Both are reported.

``--c-grid`` adds the held-out error of ``DPLogisticRegression`` alone (``all`` encoding, the whole epsilon) for
``C="auto"`` and a grid of ``C``: the measurement behind :func:`dpfair.linear_model._logistic.auto_C`.

Run: ``DPFAIR_DATA_HOME=/path/to/data OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_private_pipeline.py
[--seeds 3] [--epsilons 0.5 1 2] [--shares 0.8] [--c-grid]`` (a few minutes on one core).
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
import pandas as pd
from fairlearn.metrics import equalized_odds_difference
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.datasets import load_adult
from dpfair.linear_model import DPLogisticRegression

#: Documented ranges of Adult's numeric columns (UCI adult.names and the published minima / maxima).
RANGES = {"age": (17.0, 90.0), "education-num": (1.0, 16.0), "capital-gain": (0.0, 99999.0),
          "capital-loss": (0.0, 4356.0), "hours-per-week": (1.0, 99.0)}
GROUPS = ["Female", "Male"]
GAMMA = 0.02


def encode(adult, encoding: str) -> tuple[np.ndarray, float]:
    """Features scaled by public constants, and the declared bound on every row's norm."""
    columns = []
    for name, (low, high) in RANGES.items():
        values = adult.X[name].to_numpy(float)
        if encoding == "public" and name.startswith("capital"):
            columns.append(np.log1p(values) / np.log1p(high))
        else:
            columns.append(((values - low) / (high - low)).clip(0.0, 1.0))
    categorical = adult.X[[c for c in adult.X.columns if c not in RANGES]].astype(str).copy()
    if encoding == "public":
        categorical["native-country"] = np.where(categorical["native-country"] == "United-States", "United-States",
                                                 "other")
    onehot = pd.get_dummies(categorical, dtype=float)
    onehot = onehot.reindex(columns=sorted(onehot.columns))
    return np.column_stack([*columns, onehot.to_numpy()]), math.sqrt(len(RANGES) + categorical.shape[1])


def metrics(positive: np.ndarray, y: np.ndarray, sex: np.ndarray) -> tuple[float, float]:
    """Expected error and equalized-odds difference of P(predict 1 | row) = positive."""
    error = float(np.mean(np.where(y == 1, 1.0 - positive, positive)))
    rates = [[positive[(sex == g) & (y == label)].mean() for g in GROUPS] for label in (0, 1)]
    return error, float(max(abs(r[1] - r[0]) for r in rates))


def private_pipeline(X, y, sex, bound, epsilon, seed, *, share, paper):
    """The pipeline at ``share`` / ``1 - share`` of ``epsilon``: every other setting its default, or the paper's."""
    base_settings = {"C": 1.0} if paper else {}  # the defaults: nothing passed
    post_settings = {"score_bins": None} if paper else {}
    base = DPLogisticRegression(epsilon=share * epsilon, data_norm=bound, random_state=seed, **base_settings)
    post = DPEqualizedOddsPostProcessor(base, prefit=False, epsilon=(1 - share) * epsilon, gamma=GAMMA, groups=GROUPS,
                                        random_state=seed, **post_settings)
    return post.fit(X, y, sensitive_features=sex)


def c_grid(adult, y: np.ndarray, args: argparse.Namespace) -> None:
    """Held-out error of DPLogisticRegression alone (all encoding) for C="auto" and a grid, medians of the seeds."""
    X, bound = encode(adult, "all")
    grid: list[float | str] = ["auto", 0.002, 0.005, 0.01, 0.03, 0.1, 0.3, 1.0]
    errors = {(epsilon, C): [] for epsilon in args.epsilons for C in grid}
    for seed in range(args.seeds):
        order = np.random.default_rng(seed).permutation(y.size)
        train, test = order[: 2 * y.size // 3], order[2 * y.size // 3:]
        for epsilon, C in errors:
            model = DPLogisticRegression(epsilon=epsilon, data_norm=bound, C=C, random_state=10 + seed)
            model.fit(X[train], y[train])
            errors[epsilon, C].append(float(np.mean(model.predict(X[test]) != y[test])))
    print("\nDPLogisticRegression alone (all encoding), held-out error, medians:")
    for epsilon in args.epsilons:
        cells = ", ".join(f"C={C}: {np.median(errors[epsilon, C]):.3f}" for C in grid)
        print(f"  epsilon {epsilon:g}: {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--shares", type=float, nargs="*", default=[],
                        help="base model's share of epsilon for extra rows of the defaults (the headline: 0.5)")
    parser.add_argument("--c-grid", action="store_true", help="also DPLogisticRegression alone over a grid of C")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # seeded noise (SeededNoiseWarning) and the slack warnings: deliberate here
    adult = load_adult()
    y, sex = adult.y.to_numpy(int), adult.sensitive.astype(str).to_numpy()
    rows = []
    for encoding in ("all", "public"):
        X, bound = encode(adult, encoding)
        for seed in range(args.seeds):
            order = np.random.default_rng(seed).permutation(y.size)
            train, test = order[: 2 * y.size // 3], order[2 * y.size // 3:]
            fit_args = (X[train], y[train], sex[train])
            logreg = LogisticRegression(max_iter=2000).fit(X[train], y[train])
            rows.append((encoding, "scikit-learn LogisticRegression", math.inf, seed,
                         *metrics(logreg.predict(X[test]).astype(float), y[test], sex[test]), math.nan))
            optimizer = ThresholdOptimizer(estimator=FrozenEstimator(logreg), constraints="equalized_odds",
                                           predict_method="predict_proba").fit(*fit_args[:2], sensitive_features=sex[train])
            positive = optimizer._pmf_predict(X[test], sensitive_features=sex[test])[:, 1]
            rows.append((encoding, "fairlearn ThresholdOptimizer (equalized_odds)", math.inf, seed,
                         *metrics(positive, y[test], sex[test]), math.nan))
            for epsilon in args.epsilons:
                settings = [("defaults (C='auto', score_bins='auto' = 8), split 0.5", 0.5, False)]
                settings += [(f"defaults, split {share:g}", share, False) for share in args.shares if share != 0.5]
                settings += [("paper (C=1.0, score_bins=None), split 0.5", 0.5, True)]
                for label, share, paper in settings:
                    post = private_pipeline(*fit_args, bound, epsilon, seed, share=share, paper=paper)
                    assert post.score_bins_ == (None if paper else 8) and (post.estimator_.C_ == 1.0) == paper
                    positive = post.predict_proba(X[test], sensitive_features=sex[test])[:, 1]
                    rows.append((encoding, label, epsilon, seed, *metrics(positive, y[test], sex[test]),
                                 post.guaranteed_violation_))
            print(f"encoding {encoding}, seed {seed} done", flush=True)
    if args.c_grid:
        c_grid(adult, y, args)
    frame = pd.DataFrame(rows, columns=["encoding", "pipeline", "epsilon", "seed", "error", "eo", "guaranteed"])
    table = frame.groupby(["encoding", "pipeline", "epsilon"], sort=False)[["error", "eo", "guaranteed"]].median()
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print(f"\nmedians over {args.seeds} seeds (held out; gamma {GAMMA}; guaranteed: guaranteed_violation_, "
              "training rows, probability 0.95)")
        print(table.round(3).to_string())
    # the sanity check of the equalized-odds metric against fairlearn's on hard predictions of one fit
    check = LogisticRegression(max_iter=2000).fit(X[train], y[train]).predict(X[test])
    ours = metrics(check.astype(float), y[test], sex[test])[1]
    theirs = equalized_odds_difference(y[test], check, sensitive_features=sex[test])
    print(f"\nequalized-odds metric check (hard predictions): ours {ours:.6f}, fairlearn {theirs:.6f}")


if __name__ == "__main__":
    main()
