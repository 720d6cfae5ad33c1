"""Experiments of Jagielski et al. (2019): DP fair classification under equalized odds (Figure 1).

Protocol of the paper's Section 5: Communities & Crime exactly as Kearns et al. (2018) prepared it
(:func:`dpfair.datasets.load_communities` with ``"kearns"``: binary label, ``A`` = racepctblack above
its median, m = 1,994), linear threshold functions, ``beta = 0.05``, ``delta = 1e-7``; the error and
the equalized-odds violation are *in-sample* (measured on the training rows), the violation being
``max_a max(|FP_a - FP_0|, |TP_a - TP_0|)`` against the anchor group 0 (Definition 2.1's linear form).
Both are computed exactly in expectation from ``predict_proba`` (the classifiers are randomized), not
from one sampled prediction.  Every point is the mean over seeds (= independent noise draws) with
standard-error bars.

* ``classification-postprocessing`` (Figure 1, right): Algorithm 1 on a logistic-regression base
  classifier (trained on ``X, y`` only), ``epsilon`` in {0.5, 1, 2, 3, 5, inf}, sweeping ``gamma``.
  One task is one noise draw: the seed fixes the Laplace table ``q~``, and every ``gamma`` of the sweep
  re-solves LP~ (1) on that same table (a single epsilon-DP release per task).  A draw whose LP~ has
  no solution (or a noisy ``q~_ay <= 0``) is recorded as infeasible: ``infeasible@gamma=...`` is 1,
  error and violation are missing (NaN), and the figures average the feasible draws only.
* ``classification-oracle-learner`` (Figure 1, left): Algorithm 3 with the private regression
  oracle and the estimator's defaults (``B = |A|``, ``T`` and ``eta`` from Theorem 4.3 and the budget,
  best-iterate selection), ``epsilon`` in {1, 10, 100, 1e3, 1e4, inf}, one task per (epsilon, method, seed)
  sweeping ``gamma``.  The methods are the oracle learner under the tight accountant (PLD / RDP of the
  ``2T`` Laplace releases), the same under the paper's accounting (Algorithm 3's
  ``epsilon' = epsilon / (4 sqrt(T ln(1/delta)))``), and DP-postprocessing at the same ``epsilon``, so
  that the report's verdict can say at which ``epsilon`` the in-processing frontier first beats the
  post-processing one.  The paper also labels each Communities curve with ``epsilon'`` =
  ``epsilon / 10``: every noise scale of Algorithm 3 (and its number of rounds ``T``, up to the
  ``d ln m`` term) depends on ``m`` and ``epsilon`` only through ``m epsilon``, so on a data set ten
  times larger (the paper's "upsampled by a factor of 10", m ~ 20K) the same curve is obtained with
  ``epsilon' = epsilon / 10``.  (Ten copies of one person's row are *not* a protection of that person at
  ``epsilon'``; ``epsilon'`` describes a genuinely larger data set.)

Beyond the paper: the Communities curves are also measured on a held-out 30% test split (70/30,
``random_state`` = seed; the private fit sees the 70% only), and both experiments run on UCI Adult
(``A`` = sex, m = 45,222) in ``classification-postprocessing-adult`` and
``classification-oracle-learner-adult`` (in-sample only for the oracle learner, whose fits on 45,222 rows
take seconds each).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpfair.experiments.registry import register
from dpfair.experiments.spec import ExperimentSpec, FigureInfo, PaperValue, TableInfo, Verdict, save_figure

#: Figure 1 (right) privacy levels.
PP_EPSILONS = (0.5, 1.0, 2.0, 3.0, 5.0, math.inf)
#: gamma grid of the post-processing sweep: the paper starts at 0 and increases over a subset of [0, 1].
PP_GAMMAS = (0.0, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0)
#: gamma of the closing table of the post-processing experiment.
TABLE_GAMMA = 0.001
#: Figure 1 (left) privacy levels: from epsilon = 1 (a meaningful level) to the exact reduction.
ORACLE_EPSILONS = (1.0, 10.0, 100.0, 1e3, 1e4, math.inf)
#: gamma sweep of the oracle learner on Communities (m ~ 2K, fast fits) and on Adult (m = 45K).
ORACLE_GAMMAS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
ADULT_ORACLE_GAMMAS = (0.01, 0.02, 0.05, 0.1)
#: The three curves of a task: the oracle learner under two accountings, and DP-postprocessing.
ORACLE_METHODS = ("oracle-tight", "oracle-paper", "postprocessing")
_METHOD_LABELS = {"oracle-tight": "DP-oracle-learner, tight accounting (PLD / RDP)",
                  "oracle-paper": "DP-oracle-learner, the paper's accounting (Algorithm 3's epsilon')",
                  "postprocessing": "DP-postprocessing (Algorithm 1, uses A at test time)"}
_METHOD_TITLES = {"oracle-tight": "DP-oracle-learner\ntight accounting (PLD / RDP)",
                  "oracle-paper": "DP-oracle-learner\nthe paper's accounting (Algorithm 3's epsilon')",
                  "postprocessing": "DP-postprocessing (Algorithm 1)\nuses A at test time"}
#: The verdict compares the frontiers by the lowest error each reaches at violation <= this.
FRONTIER_VIOLATION = 0.05
#: A mean error at or above this is called a coin flip in the report (and explained).
COIN_FLIP_ERROR = 0.45
UPSAMPLE_FACTOR = 10
DELTA = 1e-7
BETA = 0.05
GROUPS = (0, 1)  # declared groups; group 0 is the anchor of the equalized-odds constraints
TEST_SIZE = 0.3
EVALUATIONS = ("in-sample", "held-out")

# Adult's continuous columns, scaled to [0, 1] by the public ranges documented with the data set
# (UCI adult.names and the published minima / maxima), never by the private rows' statistics.
_ADULT_RANGES = {
    "age": (17.0, 90.0),
    "education-num": (1.0, 16.0),
    "capital-gain": (0.0, 99999.0),
    "capital-loss": (0.0, 4356.0),
    "hours-per-week": (1.0, 99.0),
}


def _metric(name: str, gamma: float) -> str:
    return f"{name}@gamma={gamma:g}"


# ---------------------------------------------------------------------- data
@functools.lru_cache(maxsize=2)
def _data(dataset: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Features, labels, groups (0/1) and the declared bound on every row's Euclidean norm."""
    if dataset == "communities":
        from dpfair.datasets import load_communities

        d = load_communities("kearns")
        X = d.X.to_numpy(float)
        # Kearns et al.'s file holds the UCI attributes normalized to [0, 1] (missing -> 0): this public
        # per-feature scaling bounds every row's norm by sqrt(d), whatever the rows are.
        bound = math.sqrt(X.shape[1])
        return X, d.y.to_numpy(int), d.sensitive.to_numpy(int), bound
    if dataset == "adult":
        from dpfair.datasets import load_adult

        d = load_adult()
        numeric = [
            ((d.X[col].to_numpy(float) - lo) / (hi - lo)).clip(0.0, 1.0)[:, None] for col, (lo, hi) in _ADULT_RANGES.items()
        ]
        categorical = [c for c in d.X.columns if c not in _ADULT_RANGES]
        onehot = pd.get_dummies(d.X[categorical].astype(str), dtype=float)
        onehot = onehot.reindex(columns=sorted(onehot.columns))  # deterministic column order
        X = np.hstack([*numeric, onehot.to_numpy(float)])
        # Each numeric column is in [0, 1] and each categorical column contributes exactly one 1, so
        # ||x||^2 <= (number of numeric columns) + (number of categorical columns).
        bound = math.sqrt(len(_ADULT_RANGES) + len(categorical))
        groups = (d.sensitive.astype(str).str.strip() == "Male").to_numpy(int)  # 0 = Female (anchor), 1 = Male
        return X, d.y.to_numpy(int), groups, bound
    raise ValueError(f"unknown dataset {dataset!r}; use 'communities' or 'adult'.")


def _split(n_rows: int, evaluation: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows the private fit sees and rows the metrics are measured on."""
    idx = np.arange(n_rows)
    if evaluation == "in-sample":  # the paper's protocol
        return idx, idx
    if evaluation == "held-out":
        from sklearn.model_selection import train_test_split

        train, test = train_test_split(idx, test_size=TEST_SIZE, random_state=seed)
        return np.sort(train), np.sort(test)
    raise ValueError(f"unknown evaluation {evaluation!r}; use one of {EVALUATIONS}.")


@functools.lru_cache(maxsize=8)
def _base_classifier(dataset: str, evaluation: str, split_seed: int) -> Any:
    """Logistic regression on (X, y) of the training rows only (A is never used)."""
    from sklearn.linear_model import LogisticRegression

    X, y, _, _ = _data(dataset)
    train, _ = _split(y.size, evaluation, split_seed)
    return LogisticRegression(solver="liblinear").fit(X[train], y[train])


def _expected_metrics(p1: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[float, float]:
    """Exact expected error and equalized-odds violation of a randomized classifier.

    ``p1`` is ``P(Y_hat = 1 | row)``; the violation is ``max_{a != 0} max(|FP_a - FP_0|, |TP_a - TP_0|)``.
    """
    error = float(np.mean(np.where(y == 1, 1.0 - p1, p1)))
    rates = {}
    for a in GROUPS:
        for label in (0, 1):
            rows = (groups == a) & (y == label)
            rates[a, label] = float(p1[rows].mean()) if rows.any() else math.nan
    violation = max(max(abs(rates[a, 0] - rates[0, 0]), abs(rates[a, 1] - rates[0, 1])) for a in GROUPS[1:])
    return error, float(violation)


# ---------------------------------------------------------------------- tasks
def postprocessing_task(cell: dict[str, Any], seed: int) -> dict[str, float]:
    """One noise draw of Algorithm 1 on a logistic-regression base classifier, all gammas.

    Parameters
    ----------
    cell : dict
        ``dataset`` ("communities" or "adult"), ``evaluation`` ("in-sample" or "held-out") and
        ``epsilon``.
    seed : int
        Seed of the Laplace table (and of the held-out split).

    Returns
    -------
    dict of str to float
        ``error@gamma=g``, ``violation@gamma=g`` (NaN when infeasible), ``infeasible@gamma=g`` (0 or 1)
        for every ``g`` of :data:`PP_GAMMAS`; ``infeasible_rate`` (share of the sweep), and the base
        classifier's ``error_base`` and ``violation_base``.
    """
    from dpfair.classification.postprocessing import DPEqualizedOddsPostProcessor

    X, y, groups, _ = _data(cell["dataset"])
    evaluation = cell["evaluation"]
    train, test = _split(y.size, evaluation, seed)
    base = _base_classifier(cell["dataset"], evaluation, seed if evaluation == "held-out" else 0)
    out: dict[str, float] = {}
    out["error_base"], out["violation_base"] = _expected_metrics(base.predict(X[test]).astype(float), y[test], groups[test])
    failures = 0
    for gamma in PP_GAMMAS:
        # The same seed draws the same table q~ for every gamma: one release, re-solved per gamma.
        pp = DPEqualizedOddsPostProcessor(  # score_bins=None: the paper's Algorithm 1 (the default is 8 score bins)
            base, epsilon=float(cell["epsilon"]), gamma=gamma, beta=BETA, groups=list(GROUPS), prefit=True,
            random_state=seed, score_bins=None,
        )
        try:
            pp.fit(X[train], y[train], sensitive_features=groups[train])
        except ValueError:  # noisy LP~ infeasible (or a noisy q~_ay <= 0): a failed draw, not a crash
            failures += 1
            out[_metric("error", gamma)] = out[_metric("violation", gamma)] = math.nan
            out[_metric("infeasible", gamma)] = 1.0
            continue
        p1 = pp.predict_proba(X[test], sensitive_features=groups[test])[:, 1]
        out[_metric("error", gamma)], out[_metric("violation", gamma)] = _expected_metrics(p1, y[test], groups[test])
        out[_metric("infeasible", gamma)] = 0.0
    out["infeasible_rate"] = failures / len(PP_GAMMAS)
    return out


def _l1_bound(dataset: str, n_features: int) -> Any:
    """The declared L1 bound on the rows (public, from the data set's documented ranges)."""
    if dataset == "adult":  # five numeric columns in [0, 1] and one 1 per categorical column
        return float(len(_ADULT_RANGES) + 6)
    return np.ones(n_features)  # Communities: every attribute normalized to [0, 1]


def _gammas(dataset: str) -> tuple[float, ...]:
    return ADULT_ORACLE_GAMMAS if dataset == "adult" else ORACLE_GAMMAS


def oracle_task(cell: dict[str, Any], seed: int) -> dict[str, float]:
    """One noise draw of one method at one epsilon, every gamma of the sweep.

    Parameters
    ----------
    cell : dict
        ``dataset``, ``evaluation``, ``epsilon`` and ``method`` (one of :data:`ORACLE_METHODS`).
    seed : int
        Seed of the noise (and of the held-out split).

    Returns
    -------
    dict of str to float
        ``error@gamma=g`` and ``violation@gamma=g`` (NaN when the fit failed, or for ``oracle-paper`` at
        ``epsilon = inf``, which is the same exact reduction as ``oracle-tight``), ``infeasible@gamma=g``,
        ``n_iter@gamma=g`` (rounds ``T``) and ``epsilon_step@gamma=g`` (per-round ``epsilon'``; the oracle
        learner only), ``infeasible_rate`` and ``small_budget_warning`` (1 when the estimator warned that
        the budget buys too few rounds).
    """
    import warnings

    from dpfair.classification.postprocessing import DPEqualizedOddsPostProcessor
    from dpfair.classification.reductions import DPExponentiatedGradient, SmallBudgetWarning

    X, y, groups, x_norm_bound = _data(cell["dataset"])
    evaluation, method, epsilon = cell["evaluation"], cell["method"], float(cell["epsilon"])
    train, test = _split(y.size, evaluation, seed)
    gammas = _gammas(cell["dataset"])
    out: dict[str, float] = {"small_budget_warning": 0.0}
    failures = 0
    for gamma in gammas:
        keys = {name: _metric(name, gamma) for name in ("error", "violation", "infeasible", "n_iter", "epsilon_step")}
        for key in keys.values():
            out[key] = math.nan
        if method == "oracle-paper" and math.isinf(epsilon):
            continue  # the exact reduction: drawn once, under oracle-tight
        try:
            if method == "postprocessing":
                base = _base_classifier(cell["dataset"], evaluation, seed if evaluation == "held-out" else 0)
                est = DPEqualizedOddsPostProcessor(base, epsilon=epsilon, gamma=gamma, beta=BETA, groups=list(GROUPS),
                                                   prefit=True, random_state=seed, score_bins=None)  # Algorithm 1
                est.fit(X[train], y[train], sensitive_features=groups[train])
                p1 = est.predict_proba(X[test], sensitive_features=groups[test])[:, 1]
            else:
                est = DPExponentiatedGradient(
                    epsilon=epsilon, delta=DELTA, gamma=gamma, beta=BETA, x_norm_bound=x_norm_bound,
                    x_l1_bound=_l1_bound(cell["dataset"], X.shape[1]), accountant=method.split("-")[1],
                    groups=list(GROUPS), random_state=seed,
                    oracle="paper",  # Figure 1 reproduces the paper's oracle learner (its accountant included)
                    fallback=None,  # and its output as Algorithm 3 writes it (no fallback to the constant)
                )
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", SmallBudgetWarning)
                    est.fit(X[train], y[train], sensitive_features=groups[train])
                if any(issubclass(w.category, SmallBudgetWarning) for w in caught):
                    out["small_budget_warning"] = 1.0
                out[keys["n_iter"]], out[keys["epsilon_step"]] = float(est.n_iter_), float(est.epsilon_step_)
                p1 = est.predict_proba(X[test])[:, 1]
        except ValueError:  # noisy LP~ infeasible (post-processing): a failed draw, not a crash
            failures += 1
            out[keys["infeasible"]] = 1.0
            continue
        out[keys["error"]], out[keys["violation"]] = _expected_metrics(p1, y[test], groups[test])
        out[keys["infeasible"]] = 0.0
    out["infeasible_rate"] = failures / len(gammas)
    return out


# ---------------------------------------------------------------------- summaries
def _summary(results: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard error and count over seeds per (dataset, evaluation, epsilon[, method], gamma) and metric."""
    rows = results.copy()
    if "gamma" not in rows.columns:  # post-processing: gamma is in the metric name
        swept = rows["metric"].str.contains("@gamma=")
        rows = rows[swept].copy()
        rows["gamma"] = rows["metric"].str.split("=").str[1].astype(float)
        rows["metric"] = rows["metric"].str.split("@").str[0]
    keys = ["dataset", "evaluation", "epsilon", *(["method"] if "method" in rows.columns else []), "gamma", "metric"]
    grouped = rows.groupby(keys)["value"]
    table = pd.DataFrame({"mean": grouped.mean(), "std": grouped.std(ddof=1), "n": grouped.count()})
    table["se"] = (table["std"] / np.sqrt(table["n"])).where(table["n"] > 1, 0.0)
    wide = table[["mean", "se", "n"]].unstack("metric")
    wide.columns = [f"{metric}_{stat}" if stat != "mean" else metric for stat, metric in wide.columns]
    return wide.reset_index()


def _eps_label(eps: float) -> str:
    return "inf" if math.isinf(eps) else f"{eps:g}"


def _pareto(points: pd.DataFrame) -> pd.DataFrame:
    """Non-dominated (violation, error) points, sorted by violation."""
    pts = points.dropna(subset=["violation", "error"]).sort_values(["violation", "error"])
    keep, best = [], math.inf
    for i, err in zip(pts.index, pts["error"], strict=True):
        if err < best:
            keep.append(i)
            best = err
    return pts.loc[keep]


_TITLES = {"communities": "Communities & Crime (Kearns et al.)", "adult": "Adult (A = sex)"}


def _evaluation_words(evaluations: list[str]) -> str:
    """How the caption names the panels actually drawn (left to right)."""
    what = {"in-sample": "in-sample, as in the paper", "held-out": "on the held-out 30% split"}
    if len(evaluations) == 1:
        return f"measured {what[evaluations[0]]}."
    return "; ".join(f"{side}: {what[e]}" for side, e in zip(("left", "right"), evaluations, strict=False)) + "."


def _panels(results: pd.DataFrame, folder: Path, kind: str) -> list[FigureInfo]:
    """Figure 1 (right): one panel per evaluation drawn, curves by epsilon."""
    import matplotlib.pyplot as plt

    table = _summary(results)
    infos = []
    for dataset, part in table.groupby("dataset"):
        evaluations = [e for e in EVALUATIONS if e in set(part["evaluation"])]
        fig, axes = plt.subplots(1, len(evaluations), figsize=(5.4 * len(evaluations), 4.2), squeeze=False)
        for ax, evaluation in zip(axes[0], evaluations, strict=True):
            sub = part[part["evaluation"] == evaluation]
            for eps, curve in sorted(sub.groupby("epsilon"), key=lambda kv: -kv[0]):
                curve = curve.sort_values("gamma")
                ax.errorbar(curve["violation"], curve["error"], xerr=curve["violation_se"], yerr=curve["error_se"],
                            marker="o", ms=3, lw=1, capsize=2, label=f"eps={_eps_label(eps)}")
            base = results[(results["dataset"] == dataset) & (results["evaluation"] == evaluation)]
            ax.scatter([base.loc[base["metric"] == "violation_base", "value"].mean()],
                       [base.loc[base["metric"] == "error_base", "value"].mean()],
                       color="black", marker="x", s=50, zorder=5, label="logistic regression (base)")
            ax.set_title(f"{_TITLES.get(dataset, dataset)}, {evaluation}", fontsize=10)
            ax.set_xlabel("equalized-odds violation (expected)")
            ax.set_ylabel("error (expected)")
            ax.legend(fontsize=8)
        caption = (f"DP-postprocessing (Algorithm 1) on {_TITLES.get(dataset, dataset)}: error vs equalized-odds "
                   "violation sweeping gamma, mean over noise draws with standard-error bars (both axes), "
                   + _evaluation_words(evaluations) + " Infeasible draws are left out of the means (see the table).")
        infos.append(save_figure(fig, folder, f"classification_{kind}_{dataset}.png", caption))
    return infos


def _oracle_panels(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Figure 1 (left) again: one column per method, one row per evaluation drawn, a Pareto frontier per epsilon."""
    import matplotlib.pyplot as plt

    table = _summary(results)
    infos = []
    for dataset, part in table.groupby("dataset"):
        evaluations = [e for e in EVALUATIONS if e in set(part["evaluation"])]
        methods = [mth for mth in ORACLE_METHODS if mth in set(part["method"])]
        fig, axes = plt.subplots(len(evaluations), len(methods), figsize=(4.6 * len(methods), 3.9 * len(evaluations)),
                                 squeeze=False, sharey=True)
        epsilons = sorted(set(part["epsilon"]), key=lambda e: -e)
        colors = {eps: f"C{i}" for i, eps in enumerate(epsilons)}
        for row, evaluation in enumerate(evaluations):
            for col, method in enumerate(methods):
                ax = axes[row][col]
                sub = part[(part["evaluation"] == evaluation) & (part["method"] == method)]
                for eps in epsilons:
                    curve = sub[sub["epsilon"] == eps].sort_values("gamma")
                    if curve[["error", "violation"]].dropna().empty:
                        continue
                    label = f"eps={_eps_label(eps)}"
                    if dataset == "communities" and method != "postprocessing" and math.isfinite(eps):
                        label += f" (eps'={_eps_label(eps / UPSAMPLE_FACTOR)})"
                    ax.errorbar(curve["violation"], curve["error"], xerr=curve["violation_se"], yerr=curve["error_se"],
                                fmt="o", ms=3, lw=0.8, capsize=2, alpha=0.5, color=colors[eps])
                    front = _pareto(curve)
                    ax.plot(front["violation"], front["error"], color=colors[eps], lw=1.5, label=label)
                ax.set_title(f"{_METHOD_TITLES[method]} ({evaluation})", fontsize=9)
                ax.set_xlabel("equalized-odds violation (expected)")
                ax.set_ylabel("error (expected)")
                ax.legend(fontsize=8)
        drawn = ", ".join(_METHOD_LABELS[mth] for mth in methods)
        rows_words = (f"rows: {' / '.join(evaluations)}" if len(evaluations) > 1 else _evaluation_words(evaluations))
        caption = (f"Figure 1 (left) again on {_TITLES.get(dataset, dataset)}: error vs equalized-odds violation "
                   f"sweeping gamma; one column per method ({drawn}); {rows_words} Points: the mean over noise draws "
                   "(standard-error bars) of every gamma; lines: the Pareto frontier of the means, one colour per "
                   "epsilon (epsilon = inf, the exact reduction, appears under the tight accounting only).")
        if dataset == "communities":
            caption += " eps' = eps / 10: the privacy level giving the same curve on a data set upsampled 10x."
        infos.append(save_figure(fig, folder, f"classification_oracle_{dataset}.png", caption))
    return infos


def postprocessing_figures(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Figure 1 (right) and its held-out / Adult versions.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's results (long format, one row per task and metric).
    folder : pathlib.Path
        Folder to write the PNGs into.

    Returns
    -------
    list of FigureInfo
        One figure per dataset.
    """
    return _panels(results, folder, "postprocessing")


def oracle_figures(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Figure 1 (left) and its held-out / Adult versions.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's results (long format, one row per task and metric).
    folder : pathlib.Path
        Folder to write the PNGs into.

    Returns
    -------
    list of FigureInfo
        One figure per dataset.
    """
    return _oracle_panels(results, folder)


def postprocessing_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Error and violation at ``gamma = 0.001`` per epsilon, and the infeasible rates.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's results.

    Returns
    -------
    list of TableInfo
        The ``gamma = 0.001`` table and the infeasible rate per (epsilon, gamma).
    """
    table = _summary(results)
    at = table[np.isclose(table["gamma"], TABLE_GAMMA)].set_index(["dataset", "evaluation", "epsilon"])
    at = at[["error", "error_se", "violation", "violation_se", "infeasible", "error_n"]].rename(
        columns={"infeasible": "infeasible_rate", "error_n": "feasible draws"})
    base = results[results["metric"].isin(["error_base", "violation_base"])]
    base = base.pivot_table(index=["dataset", "evaluation"], columns="metric", values="value", aggfunc="mean")
    infeasible = table.pivot_table(index=["dataset", "evaluation", "epsilon"], columns="gamma", values="infeasible")
    return [
        TableInfo(f"DP-postprocessing at gamma = {TABLE_GAMMA:g}: expected error and equalized-odds violation by epsilon",
                  at.sort_index().round(4),
                  "Mean (and standard error) over the noise draws whose LP~ was feasible; the paper shows these "
                  "points as the low-gamma ends of Figure 1 (right) and prints no numbers."),
        TableInfo("Base classifier (logistic regression, not post-processed)", base.round(4)),
        TableInfo("Share of noise draws with an infeasible LP~ (by epsilon and gamma)", infeasible.round(3)),
    ]


def _headline_evaluation(part: pd.DataFrame) -> str:
    return "in-sample" if "in-sample" in set(part["evaluation"]) else str(part["evaluation"].iloc[0])


def _frontier_errors(part: pd.DataFrame) -> pd.DataFrame:
    """Lowest mean error among the gammas whose mean violation is <= :data:`FRONTIER_VIOLATION`, per epsilon and method."""
    ok = part[part["violation"] <= FRONTIER_VIOLATION]
    best = ok.groupby(["epsilon", "method"])["error"].min().unstack("method")
    return best.reindex(index=sorted(set(part["epsilon"])), columns=[m for m in ORACLE_METHODS if m in set(part["method"])])


def _coin_flips(part: pd.DataFrame) -> str:
    """A sentence per oracle-learner cell whose mean error is a coin flip, with the reason."""
    flips = part[(part["method"] != "postprocessing") & (part["error"] >= COIN_FLIP_ERROR)]
    if flips.empty:
        return ""
    worst = flips.groupby(["epsilon", "method"]).agg(error=("error", "max"), n_iter=("n_iter", "mean"),
                                                   epsilon_step=("epsilon_step", "mean"))
    cells = "; ".join(f"epsilon = {eps:,g} ({method.split('-')[1]} accounting): error up to {row.error:.2f} with T = "
                      f"{row.n_iter:.0f} rounds at epsilon' = {row.epsilon_step:.3g} per release"
                      for (eps, method), row in worst.iterrows())
    return (f" Coin flips (error >= {COIN_FLIP_ERROR:g}): {cells}. Why: at these per-round epsilon' the Laplace noise on "
            "the learner's X^T C_1 (L1 sensitivity 2B/q_min (||x||_1 + 1), hundreds of times the cost signal on a few "
            "thousand rows) swamps the costs, so every best response is close to a random hyperplane through the "
            "data and their mixture predicts 1 with probability near 1/2 for every row: expected error ~0.5 whatever "
            "the labels. With fewer than 16 ln(K+1) rounds the estimator also warns (SmallBudgetWarning).")


def oracle_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Per dataset: privacy levels of both accountings, Figure 1 (left) as a table, and the frontier comparison.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's results (long format; ``method`` is a column).

    Returns
    -------
    list of TableInfo
        For each dataset: the rounds and per-round ``epsilon'`` of both accountings by ``epsilon`` (with
        ``epsilon' = epsilon / 10`` on the 10x upsampled data for Communities only), the mean error and
        violation by ``epsilon``, method and ``gamma``, and the lowest error each method reaches at violation
        ``<= 0.05``.
    """
    table = _summary(results)
    warned = results[results["metric"] == "small_budget_warning"]
    warned = warned[warned["method"] == "oracle-tight"].groupby(["dataset", "epsilon"])["value"].mean()
    infos = []
    for dataset, part in table.groupby("dataset"):
        name = _TITLES.get(dataset, dataset)
        evaluation = _headline_evaluation(part)
        head = part[part["evaluation"] == evaluation]
        oracle = head[head["method"] != "postprocessing"]
        levels = oracle.groupby(["epsilon", "method"])[["n_iter", "epsilon_step"]].mean().unstack("method")
        levels.columns = [f"{'T' if stat == 'n_iter' else chr(949) + chr(39)} ({method.split('-')[1]})"
                          for stat, method in levels.columns]
        levels["small-budget warning (share of draws)"] = [warned.get((dataset, eps), math.nan) for eps in levels.index]
        title = f"{name}: rounds T and per-round epsilon' of the tight and the paper's accounting"
        note = ("Same total (epsilon, delta = 1e-7) for both; the tight accountant composes the 2T Laplace releases by "
                "their privacy loss distribution (or Renyi DP), the paper's accounting uses Algorithm 3's "
                "epsilon / (4 sqrt(T ln(1/delta))); T is Algorithm 3's line 1 with B = |A| = 2, capped at 1,000 "
                "(at epsilon = inf: stopped at duality gap nu).")
        if dataset == "communities":
            levels.insert(0, "epsilon' (10x upsampled)", [eps / UPSAMPLE_FACTOR for eps in levels.index])
            title += ", and epsilon' = epsilon / 10 on the 10x upsampled data"
        infos.append(TableInfo(title, levels.sort_index().round(4), note))
        grid = head.pivot_table(index=["epsilon", "method"], columns="gamma", values=["error", "violation"])
        infos.append(TableInfo(
            f"{name}: Figure 1 (left) as a table, mean expected error and violation by epsilon, method and gamma "
            f"({evaluation})",
            grid.sort_index().round(4),
            "Mean over noise draws; oracle-tight / oracle-paper: DP-oracle-learner under each accounting (at epsilon = inf "
            "both are the exact reduction, shown once); postprocessing: DP-postprocessing at the same epsilon."
            + _coin_flips(head)))
        frontier = _frontier_errors(head)
        infos.append(TableInfo(
            f"{name}: lowest mean error at violation <= {FRONTIER_VIOLATION:g}, by epsilon and method ({evaluation})",
            frontier.round(4),
            "'-': no gamma of the sweep reaches that violation. The verdict compares oracle-tight with postprocessing "
            "in this table."))
    return infos


def oracle_verdict(results: pd.DataFrame, paper: Mapping[str, PaperValue]) -> Verdict:
    """At which epsilon the in-processing frontier first beats the post-processing one (or that it never does).

    The paper (Section 5) expects post-processing to win on small data sets (Communities, m ~ 2K: good
    trade-offs "at meaningful levels of epsilon", the oracle learner only at unreasonable ones) and the
    in-processing algorithm to win on sufficiently large ones.  Frontiers are compared by the lowest mean
    error each reaches at mean violation ``<= 0.05``.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.
    paper : mapping of str to PaperValue
        Empty: the paper states the claim in words (Section 5) and prints no numbers for it.

    Returns
    -------
    Verdict
        ``matches`` or ``differs`` with the first winning epsilon and the numbers at every epsilon.
    """
    table = _summary(results)
    dataset = str(table["dataset"].iloc[0])
    head = table[table["evaluation"] == _headline_evaluation(table)]
    frontier = _frontier_errors(head)
    if "oracle-tight" not in frontier or "postprocessing" not in frontier:
        return Verdict("not checked", "the results hold no oracle-tight or no postprocessing cells to compare.")

    def shown(v: float) -> str:
        return "none" if math.isnan(v) else f"{v:.3f}"

    wins = []
    numbers = []
    for eps, row in frontier.iterrows():
        mine, theirs = float(row["oracle-tight"]), float(row["postprocessing"])
        numbers.append(f"eps={_eps_label(eps)}: {shown(mine)} vs {shown(theirs)}")
        if not math.isnan(mine) and (math.isnan(theirs) or mine < theirs):
            wins.append(eps)
    where = (f"the in-processing frontier (tight accounting) first beats post-processing at epsilon = {_eps_label(min(wins))}"
             if wins else "the in-processing frontier never beats post-processing on this grid")
    detail = (f"{where}; lowest error at violation <= {FRONTIER_VIOLATION:g} (in-processing vs post-processing): "
              + "; ".join(numbers) + ".")
    finite_wins = [e for e in wins if math.isfinite(e)]
    if dataset == "communities":
        ok = not [e for e in finite_wins if e <= 10.0]
        claim = "the paper: on m ~ 2K post-processing wins at meaningful epsilon, in-processing only at unreasonable ones"
    else:
        ok = bool(finite_wins)
        claim = "the paper expects in-processing to win on sufficiently large data (here m = 45,222) at some finite epsilon"
    return Verdict("matches" if ok else "differs", f"{claim}; {detail}")


# ---------------------------------------------------------------------- registration
_PP_METRICS = (*(_metric(m, g) for g in PP_GAMMAS for m in ("error", "violation", "infeasible")),
               "infeasible_rate", "error_base", "violation_base")


def _oracle_metrics(dataset: str) -> tuple[str, ...]:
    names = ("error", "violation", "infeasible", "n_iter", "epsilon_step")
    return (*(_metric(m, g) for g in _gammas(dataset) for m in names), "infeasible_rate", "small_budget_warning")


_PP_PRIVACY = ("epsilon-DP for the sensitive attribute A (Laplace table of joint frequencies, Algorithm 1); "
               "the gamma sweep re-solves LP~ on one table; X and y are public")
_ORACLE_PRIVACY = ("(epsilon, delta = 1e-7)-DP for the sensitive attribute A (Algorithm 3, tight or the paper's accounting); "
                   "DP-postprocessing beside it is epsilon-DP; X and y are public")


def _register(dataset: str, suffix: str, pp_seeds: tuple[int, ...], oracle_seeds: tuple[int, ...],
              oracle_evaluations: tuple[str, ...], oracle_quick: dict[str, tuple[Any, ...]]) -> None:
    reproduces = "Jagielski et al. 2019, Figure 1" if dataset == "communities" else "beyond Jagielski et al. 2019 (Adult)"
    register(ExperimentSpec(
        id=f"classification-postprocessing{suffix}",
        title=f"DP equalized-odds post-processing on {_TITLES[dataset]}: error vs violation by epsilon",
        reproduces=reproduces + (" (right panel)" if dataset == "communities" else ""),
        dataset=dataset,
        algorithms=("logistic regression + DP-postprocessing (Algorithm 1)",),
        grid={"dataset": (dataset,), "evaluation": EVALUATIONS, "epsilon": PP_EPSILONS},
        seeds=pp_seeds,
        quick_grid={"dataset": (dataset,), "evaluation": ("in-sample",), "epsilon": (1.0, math.inf)},
        quick_seeds=(0, 1, 2) if dataset == "communities" else (0, 1),
        metrics=_PP_METRICS,
        task=postprocessing_task, figures=postprocessing_figures, tables=postprocessing_tables,
        privacy=_PP_PRIVACY, requires_data=(dataset,),
    ))
    register(ExperimentSpec(
        id=f"classification-oracle-learner{suffix}",
        title=f"DP oracle learner (private reductions) on {_TITLES[dataset]}: Pareto frontiers by epsilon and accounting",
        reproduces=reproduces + (" (left panel)" if dataset == "communities" else ""),
        dataset=dataset,
        algorithms=("DP-oracle-learner (Algorithm 3, private regression oracle), tight and paper's accounting",
                    "logistic regression + DP-postprocessing (Algorithm 1)"),
        grid={"dataset": (dataset,), "evaluation": oracle_evaluations, "epsilon": ORACLE_EPSILONS, "method": ORACLE_METHODS},
        seeds=oracle_seeds,
        quick_grid={"dataset": (dataset,), "evaluation": ("in-sample",), **oracle_quick},
        quick_seeds=(0,),
        metrics=_oracle_metrics(dataset),
        task=oracle_task, figures=oracle_figures, tables=oracle_tables, verdict=oracle_verdict,
        privacy=_ORACLE_PRIVACY, requires_data=(dataset,),
    ))


# Communities (m = 1,994): an oracle-learner fit takes well under a second, so both evaluations and 4 seeds.
_register("communities", "", pp_seeds=tuple(range(200)), oracle_seeds=tuple(range(4)), oracle_evaluations=EVALUATIONS,
          oracle_quick={"epsilon": (1e4, math.inf), "method": ORACLE_METHODS})
# Adult: m = 45,222, so Algorithm 3's T = O(m epsilon) reaches the cap of 1,000 rounds at epsilon ~ 600 and such
# a fit takes seconds: in-sample only (the paper's protocol), 4 gammas and 2 seeds.
_register("adult", "-adult", pp_seeds=tuple(range(200)), oracle_seeds=(0, 1), oracle_evaluations=("in-sample",),
          oracle_quick={"epsilon": (10.0, 1e4), "method": ("oracle-tight", "postprocessing")})
