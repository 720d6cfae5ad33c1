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
* ``classification-oracle-learner`` (Figure 1, left): Algorithm 3 with the private regression oracle,
  ``bound_B = 1 / gamma``, one private fit per (epsilon, gamma, seed).  The paper also labels each
  curve with ``epsilon'`` = ``epsilon / 10``: every noise scale of Algorithm 3 (and its number of
  rounds ``T``, up to the ``d ln m`` term) depends on ``m`` and ``epsilon`` only through ``m epsilon``,
  so on a data set ten times larger (the paper's "upsampled by a factor of 10", m ~ 20K) the same
  curve is obtained with ``epsilon' = epsilon / 10``.  (Ten copies of one person's row are *not* a
  protection of that person at ``epsilon'``; ``epsilon'`` describes a genuinely larger data set.)

Beyond the paper: every curve is also measured on a held-out 30% test split (70/30,
``random_state`` = seed; the private fit sees the 70% only), and on UCI Adult (``A`` = sex,
m = 45,222) in ``classification-postprocessing-adult`` and ``classification-oracle-learner-adult``.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpfair.experiments.registry import register
from dpfair.experiments.spec import ExperimentSpec, FigureInfo, TableInfo, save_figure

#: Figure 1 (right) privacy levels.
PP_EPSILONS = (0.5, 1.0, 2.0, 3.0, 5.0, math.inf)
#: gamma grid of the post-processing sweep: the paper starts at 0 and increases over a subset of [0, 1].
PP_GAMMAS = (0.0, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0)
#: gamma of the closing table of issue 9.
TABLE_GAMMA = 0.001
#: Figure 1 (left) privacy levels: the paper's text says the oracle learner needs "unreasonable"
#: epsilon on m ~ 2K; the grid spans non-private down to epsilon' = epsilon / 10 = 1.
ORACLE_EPSILONS = (math.inf, 1e7, 1e6, 1e5, 1e4, 1e3, 100.0, 10.0)
#: gamma > 0 for the oracle learner (bound_B = 1 / gamma).
ORACLE_GAMMAS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5)
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
        pp = DPEqualizedOddsPostProcessor(
            base, epsilon=float(cell["epsilon"]), gamma=gamma, beta=BETA, groups=list(GROUPS), prefit=True, random_state=seed
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


def oracle_task(cell: dict[str, Any], seed: int) -> dict[str, float]:
    """One private fit of Algorithm 3 (DP-oracle-learner) with ``bound_B = 1 / gamma``.

    Parameters
    ----------
    cell : dict
        ``dataset``, ``evaluation``, ``epsilon`` and ``gamma``.
    seed : int
        Seed of the noise (and of the held-out split).

    Returns
    -------
    dict of str to float
        ``error`` and ``violation`` (NaN when the fit failed), ``infeasible_rate`` (1 when it failed)
        and ``n_iter`` (the rounds ``T`` used).
    """
    from dpfair.classification.reductions import DPExponentiatedGradient

    X, y, groups, x_norm_bound = _data(cell["dataset"])
    train, test = _split(y.size, cell["evaluation"], seed)
    gamma = float(cell["gamma"])
    est = DPExponentiatedGradient(
        epsilon=float(cell["epsilon"]), delta=DELTA, gamma=gamma, bound_B=1.0 / gamma, beta=BETA,
        x_norm_bound=x_norm_bound, groups=list(GROUPS), random_state=seed,
    )
    try:
        est.fit(X[train], y[train], sensitive_features=groups[train])
    except ValueError:
        return {"error": math.nan, "violation": math.nan, "infeasible_rate": 1.0, "n_iter": math.nan}
    p1 = est.predict_proba(X[test])[:, 1]
    error, violation = _expected_metrics(p1, y[test], groups[test])
    return {"error": error, "violation": violation, "infeasible_rate": 0.0, "n_iter": float(est.n_iter_)}


# ---------------------------------------------------------------------- summaries
def _summary(results: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard error and count over seeds per (dataset, evaluation, epsilon, gamma) and metric."""
    rows = results.copy()
    if "gamma" not in rows.columns:  # post-processing: gamma is in the metric name
        swept = rows["metric"].str.contains("@gamma=")
        rows = rows[swept].copy()
        rows["gamma"] = rows["metric"].str.split("=").str[1].astype(float)
        rows["metric"] = rows["metric"].str.split("@").str[0]
    keys = ["dataset", "evaluation", "epsilon", "gamma", "metric"]
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


def _panels(results: pd.DataFrame, folder: Path, kind: str) -> list[FigureInfo]:
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
                label = f"eps={_eps_label(eps)}"
                if kind == "oracle" and dataset == "communities":
                    label += f" (eps'={_eps_label(eps / UPSAMPLE_FACTOR)})"
                if kind == "oracle":
                    bars = ax.errorbar(curve["violation"], curve["error"], xerr=curve["violation_se"], yerr=curve["error_se"],
                                       fmt="o", ms=3, lw=0.8, capsize=2, alpha=0.6)
                    front = _pareto(curve)
                    ax.plot(front["violation"], front["error"], color=bars[0].get_color(), lw=1.5, label=label)
                else:
                    ax.errorbar(curve["violation"], curve["error"], xerr=curve["violation_se"], yerr=curve["error_se"],
                                marker="o", ms=3, lw=1, capsize=2, label=label)
            if kind == "postprocessing":
                base = results[(results["dataset"] == dataset) & (results["evaluation"] == evaluation)]
                ax.scatter([base.loc[base["metric"] == "violation_base", "value"].mean()],
                           [base.loc[base["metric"] == "error_base", "value"].mean()],
                           color="black", marker="x", s=50, zorder=5, label="logistic regression (base)")
            ax.set_title(f"{_TITLES.get(dataset, dataset)}, {evaluation}", fontsize=10)
            ax.set_xlabel("equalized-odds violation (expected)")
            ax.set_ylabel("error (expected)")
            ax.legend(fontsize=8)
        what = ("DP-postprocessing (Algorithm 1)" if kind == "postprocessing" else "DP-oracle-learner (Algorithm 3)")
        caption = (f"{what} on {_TITLES.get(dataset, dataset)}: error vs equalized-odds violation sweeping gamma, "
                   "mean over noise draws with standard-error bars (both axes); left: in-sample as in the paper, "
                   "right: held-out 30% split.")
        if kind == "oracle":
            caption += " Points: every gamma (bound_B = 1/gamma); lines: the Pareto frontier of the means."
            if dataset == "communities":
                caption += " eps' = eps / 10: the privacy level giving the same curve on a data set upsampled 10x."
        else:
            caption += " Infeasible draws are left out of the means (see the table)."
        infos.append(save_figure(fig, folder, f"classification_{kind}_{dataset}.png", caption))
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
    return _panels(results, folder, "oracle")


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


def oracle_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Epsilon and epsilon' per curve, rounds used, and the in-sample error / violation grid.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's results.

    Returns
    -------
    list of TableInfo
        The privacy levels (with ``epsilon'`` on Communities) and the means per (epsilon, gamma).
    """
    table = _summary(results)
    levels = table.groupby(["dataset", "epsilon"])[["n_iter", "infeasible_rate"]].mean()
    levels.insert(0, "epsilon' (10x upsampled)", [
        eps / UPSAMPLE_FACTOR if dataset == "communities" else math.nan for dataset, eps in levels.index])
    grid = table.pivot_table(index=["dataset", "evaluation", "epsilon"], columns="gamma", values=["error", "violation"])
    return [
        TableInfo("Privacy levels: epsilon, epsilon' = epsilon / 10 on the 10x upsampled data (Communities), mean rounds T",
                  levels.round(4),
                  "T is Algorithm 3's number of rounds (capped by the estimator); delta = 1e-7, beta = 0.05."),
        TableInfo("DP-oracle-learner: mean expected error and violation by epsilon and gamma", grid.round(4)),
    ]


# ---------------------------------------------------------------------- registration
_PP_METRICS = (*(_metric(m, g) for g in PP_GAMMAS for m in ("error", "violation", "infeasible")),
               "infeasible_rate", "error_base", "violation_base")
_ORACLE_METRICS = ("error", "violation", "infeasible_rate", "n_iter")
_PP_PRIVACY = ("epsilon-DP for the sensitive attribute A (Laplace table of joint frequencies, Algorithm 1); "
               "the gamma sweep re-solves LP~ on one table; X and y are public")
_ORACLE_PRIVACY = "(epsilon, delta = 1e-7)-DP for the sensitive attribute A (Algorithm 3); X and y are public"


def _register(dataset: str, suffix: str, pp_seeds: tuple[int, ...], oracle_seeds: tuple[int, ...],
              oracle_epsilons: tuple[float, ...], quick_epsilon: float) -> None:
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
        title=f"DP oracle learner (private reductions) on {_TITLES[dataset]}: Pareto frontiers by epsilon",
        reproduces=reproduces + (" (left panel)" if dataset == "communities" else ""),
        dataset=dataset,
        algorithms=("DP-oracle-learner (Algorithm 3, private regression oracle)",),
        grid={"dataset": (dataset,), "evaluation": EVALUATIONS, "epsilon": oracle_epsilons, "gamma": ORACLE_GAMMAS},
        seeds=oracle_seeds,
        quick_grid={"dataset": (dataset,), "evaluation": ("in-sample",), "epsilon": (math.inf, quick_epsilon),
                    "gamma": (0.01, 0.1) if dataset == "communities" else (0.1,)},
        quick_seeds=(0,),
        metrics=_ORACLE_METRICS,
        task=oracle_task, figures=oracle_figures, tables=oracle_tables,
        privacy=_ORACLE_PRIVACY, requires_data=(dataset,),
    ))


_register("communities", "", pp_seeds=tuple(range(200)), oracle_seeds=tuple(range(50)), oracle_epsilons=ORACLE_EPSILONS,
          quick_epsilon=1e3)
# Adult: m = 45,222, so Algorithm 3's T = O(m epsilon) reaches the estimator's cap of 1,000 rounds at
# epsilon ~ 2,000; each such fit takes ~15 s, hence fewer seeds than on Communities.
_register("adult", "-adult", pp_seeds=tuple(range(200)), oracle_seeds=tuple(range(5)),
          oracle_epsilons=(math.inf, 1e4, 1e3, 100.0, 10.0, 1.0), quick_epsilon=10.0)
