"""Experiments of Xian, Li, Kamath & Zhao (2024): DP fair post-processing for regression.

Protocol of the paper's code: post-process the true targets (identity regressor), 70/30
train/test split with ``random_state`` = seed (seeds 33..82), fairness = max pairwise
two-sample KS distance of the test predictions, MSE on the test split.  One task is one
(dataset, k, epsilon, seed): the private histogram is released once and every alpha of
the sweep re-solves the LP on it (:meth:`FairRegressionPostProcessor.refit_alpha`; the sweep
costs epsilon once).

* ``regression-figure2``: Communities & Crime (k = 12, 60) and Law School (k = 36, 180).
* ``regression-law-envelopes``: Law School, sweeping k and alpha for each epsilon
  (Figure 3 at epsilon = 0.1 with its lower envelope; Figure 4 the envelopes per epsilon).
* ``regression-ridge-pipeline``: a real ridge regressor on Law School features, post-processed.
* ``regression-private-tuning``: the private choice of (k, alpha) that Section 4 calls for
  (:class:`~dpfair.model_selection.PrivateRandomSearch`, Liu & Talwar 2019) against the best non-private
  choice on the same split, for a total epsilon of 0.5, 1 and 5.
* ``regression-blind``: the attribute-blind extension of Section 5, in
  :mod:`dpfair.experiments.regression_blind`.
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
from dpfair.experiments.spec import (
    ExperimentSpec,
    FigureInfo,
    PaperValue,
    TableInfo,
    Verdict,
    VerdictRow,
    save_figure,
)

ALPHAS = (0.0, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 1.0)
EPSILONS = (math.inf, 10.0, 5.0, 1.0, 0.5, 0.1)
SEEDS = tuple(range(33, 83))
# Declared (public) bounds and groups of each dataset: the loaders' documented target ranges and sensitive
# categories, never read off the private split.  Groups are listed sorted, the order the histogram uses.
DATASETS = {
    "communities": {"bounds": (0.0, 1.0), "bins": (12, 60), "groups": (0, 1)},
    "law_school": {"bounds": (1.0, 4.0), "bins": (36, 180), "groups": ("asian", "black", "hisp", "white")},
}
ENVELOPE_BINS = (1, 7, 8, 11, 24, 36, 48, 60)
#: Xian et al. 2024, Figures 3 and 4, as printed: every line ends at the constant predictor (k = 1).
ENVELOPE_PAPER_VALUES = {
    "mse[k=1]": PaperValue("0.6772", "Figures 3 and 4"),
    "ks[k=1]": PaperValue("0", "Figures 3 and 4"),
}
#: Tolerances of the envelope check: the k = 1 MSE within 1 % of the printed one, its KS at most 0.02.
TOL_ENVELOPE_MSE, TOL_ENVELOPE_KS = 0.01, 0.02


def _metric(name: str, alpha: float) -> str:
    return f"{name}@alpha={alpha:g}"


@functools.lru_cache(maxsize=4)
def _data(dataset: str) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    from dpfair.datasets import load_communities, load_law_school

    d = load_communities("uci") if dataset == "communities" else load_law_school()
    return d.y.to_numpy(float), d.sensitive.to_numpy(), d.X


def _sweep(pp: Any, test_outputs: np.ndarray, test_groups: np.ndarray, y_test: np.ndarray, alphas: tuple, seed: int):
    from dpfair.fairness import statistical_parity_ks

    out = {}
    for alpha in alphas:
        pp.refit_alpha(alpha)
        pred = pp.predict(test_outputs, sensitive_features=test_groups, random_state=seed)
        out[_metric("mse", alpha)] = float(np.mean((pred - y_test) ** 2))
        out[_metric("ks", alpha)] = float(statistical_parity_ks(pred, test_groups))
    return out


def sweep_task(cell: dict[str, Any], seed: int) -> dict[str, float]:
    """Identity regressor on the true target; one private fit, all alphas.

    Parameters
    ----------
    cell : dict
        The cell's parameters.
    seed : int
        The seed.

    Returns
    -------
    dict of str to float
        The experiment's metrics.
    """
    from sklearn.model_selection import train_test_split

    from dpfair.regression import FairRegressionPostProcessor

    y, groups, _ = _data(cell["dataset"])
    y_train, y_test, g_train, g_test = train_test_split(y, groups, test_size=0.3, random_state=seed)
    pp = FairRegressionPostProcessor(
        epsilon=float(cell["epsilon"]), n_bins=int(cell["k"]), bounds=DATASETS[cell["dataset"]]["bounds"],
        groups=list(DATASETS[cell["dataset"]]["groups"]), random_state=seed,
    ).fit(y_train, sensitive_features=g_train)
    out = _sweep(pp, y_test, g_test, y_test, ALPHAS, seed)
    from dpfair.fairness import statistical_parity_ks

    out["ks_unprocessed"] = float(statistical_parity_ks(y_test, g_test))
    return out


def ridge_task(cell: dict[str, Any], seed: int) -> dict[str, float]:
    """Ridge on Law School features (35%), private post-processing (35%), test (30%).

    Parameters
    ----------
    cell : dict
        The cell's parameters.
    seed : int
        The seed.

    Returns
    -------
    dict of str to float
        The experiment's metrics.
    """
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import train_test_split

    from dpfair.fairness import statistical_parity_ks
    from dpfair.regression import FairRegressionPostProcessor

    y, groups, X = _data("law_school")
    features = X[["lsat", "male", "pass_bar"]].fillna({"male": 0.5}).to_numpy(float)
    idx = np.arange(y.size)
    rest, test = train_test_split(idx, test_size=0.3, random_state=seed)
    fit_reg, post = train_test_split(rest, test_size=0.5, random_state=seed)
    reg = Ridge(alpha=1.0).fit(features[fit_reg], y[fit_reg])
    pp = FairRegressionPostProcessor(
        reg, epsilon=float(cell["epsilon"]), n_bins=int(cell["k"]), bounds=(1.0, 4.0),
        groups=list(DATASETS["law_school"]["groups"]), random_state=seed,
    ).fit(features[post], sensitive_features=groups[post])
    out = _sweep(pp, features[test], groups[test], y[test], ALPHAS, seed)
    raw = reg.predict(features[test])
    out["mse_regressor"] = float(np.mean((raw - y[test]) ** 2))
    out["ks_regressor"] = float(statistical_parity_ks(raw, groups[test]))
    return out


# ---------------------------------------------------------------------- figures
def _tradeoff(results: pd.DataFrame) -> pd.DataFrame:
    """Mean MSE and KS per (dataset, k, epsilon, alpha) over seeds, with their standard errors (``*_se``).

    The standard error is the sample standard deviation over seeds divided by the square root of their
    number (0 with a single seed).
    """
    rows = results[results["metric"].str.contains("@alpha=")].copy()
    rows["what"] = rows["metric"].str.split("@").str[0]
    rows["alpha"] = rows["metric"].str.split("=").str[1].astype(float)
    keys = [c for c in ("dataset", "k", "epsilon") if c in rows.columns]
    grouped = rows.groupby([*keys, "alpha", "what"])["value"]
    mean = grouped.mean().unstack("what")
    se = grouped.sem().unstack("what").fillna(0.0).add_suffix("_se")
    table = mean.join(se).reset_index()
    table.columns.name = None
    return table


def _errorbar_curve(ax: Any, curve: pd.DataFrame, **kwargs: Any) -> Any:
    """Mean (MSE, KS) over seeds with +- one standard error in both directions (the spread across seeds)."""
    kwargs = {"marker": "o", "ms": 3, "lw": 1.5, "capsize": 0, "elinewidth": 0.8, **kwargs}
    return ax.errorbar(curve["mse"], curve["ks"], xerr=curve["mse_se"], yerr=curve["ks_se"], **kwargs)


_SE_NOTE = "; bars: +- one standard error over seeds"


def _eps_label(eps: float) -> str:
    return "inf" if math.isinf(eps) else f"{eps:g}"


def _lower_envelope(points: pd.DataFrame) -> pd.DataFrame:
    """Pareto front (min MSE for a given KS) of (ks, mse) points, with their standard errors when given."""
    pts = points.sort_values(["ks", "mse"])
    columns = ["ks", "mse", *[c for c in ("ks_se", "mse_se") if c in pts.columns]]
    front, best = [], math.inf
    for row in pts[columns].itertuples(index=False):
        if row.mse < best:
            front.append(tuple(row))
            best = row.mse
    return pd.DataFrame(front, columns=columns)


def figure2(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Draw Figure 2: MSE against KS unfairness for each dataset, k and epsilon.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.
    folder : pathlib.Path
        Folder the PNG files are written into.

    Returns
    -------
    list of FigureInfo
        The figures written.
    """
    import matplotlib.pyplot as plt

    table = _tradeoff(results)
    dataset_name = results["dataset"].iloc[0]
    panels = [(dataset_name, k) for k in sorted(table["k"].unique())]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, (dataset, k) in zip(axes[0], panels, strict=True):
        sub = table[(table["dataset"] == dataset) & (table["k"] == k)]
        # epsilon = inf first, wide and translucent, each finite epsilon on top of it with its own marker and
        # dash: at large n the eps = 1 curve lies on the eps = inf one and used to vanish beneath it
        order = sorted(sub["epsilon"].unique(), key=lambda e: (not math.isinf(e), -e))
        for rank, eps in enumerate(order):
            curve = sub[sub["epsilon"] == eps].sort_values("alpha", ascending=False)
            if math.isinf(eps):
                style = {"lw": 4, "alpha": 0.35, "marker": "o", "ms": 6, "zorder": 2}
            else:
                style = {"marker": "sD^v"[rank % 4], "ls": ("-", "--", ":", "-.")[rank % 4], "zorder": 3 + rank}
            _errorbar_curve(ax, curve, label=f"eps={_eps_label(eps)}", **style)
        ax.set_title(f"{'Communities & Crime' if dataset == 'communities' else 'Law School'} (k = {k})")
        ax.set_xlabel("mean squared error")
        ax.set_ylabel("fairness violation (KS)")
        ax.legend(fontsize=8)
    return [save_figure(fig, folder, f"regression_figure2_{dataset_name}.png",
                        f"Paper Figure 2 ({dataset_name} panels): MSE vs statistical-parity violation, sweeping alpha "
                        f"(the end with the smallest KS is alpha = 0); mean over seeds{_SE_NOTE}.")]


def figure2_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Tabulate Figure 2 at alpha = 0 (MSE and KS by dataset, k and epsilon) and the unprocessed violation.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.

    Returns
    -------
    list of TableInfo
        The tables for the report.
    """
    table = _tradeoff(results)
    at0 = table[table["alpha"] == 0.0].pivot_table(index=["dataset", "k"], columns="epsilon", values=["mse", "ks"])
    unprocessed = results[results["metric"] == "ks_unprocessed"].groupby("dataset")["value"].mean().rename("KS unprocessed")
    return [TableInfo("alpha = 0: test MSE and KS by epsilon (mean over seeds)", at0.round(5),
                      "The paper shows these as the right ends of the Figure 2 curves; it prints no numbers."),
            TableInfo("Unprocessed fairness violation", unprocessed.to_frame().round(4))]


def envelope_figures(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Draw Figures 3 and 4: the alpha sweeps for every k and their lower envelopes.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.
    folder : pathlib.Path
        Folder the PNG files are written into.

    Returns
    -------
    list of FigureInfo
        The figures written.
    """
    import matplotlib.pyplot as plt

    table = _tradeoff(results)
    infos = []
    lowest = table["epsilon"].min()
    sub = table[table["epsilon"] == lowest]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    env = _lower_envelope(sub)
    x_max = max(0.035, float(env["mse"].min()) * 3)
    # the envelope is drawn thick and translucent *beneath* the k curves, so it never hides one of them
    ax.plot(env["mse"], env["ks"], color="black", lw=7, alpha=0.2, solid_capstyle="round", zorder=1,
            label="lower envelope")
    for k, curve in sub.groupby("k"):
        curve = curve.sort_values("alpha", ascending=False)
        off_axis = float(curve["mse"].min()) > x_max  # e.g. k = 1 (MSE near 0.68)
        bars = _errorbar_curve(ax, curve, ms=3, lw=1.5, zorder=3, label="_off_axis" if off_axis else f"k={k}")
        if off_axis:  # mark it at the right edge, with a legend entry that shows its line and colour
            ax.plot([x_max], [float(curve["ks"].mean())], marker=">", ms=8, ls="-", lw=1.5,
                    color=bars.lines[0].get_color(), clip_on=False, zorder=4,
                    label=f"k={k} (MSE {float(curve['mse'].mean()):.2f}, off the axis)")
    ax.set_xlim(0, x_max)
    ax.set_xlabel("mean squared error")
    ax.set_ylabel("fairness violation (KS)")
    ax.set_title(f"Figure 3: Law School, eps = {_eps_label(lowest)}")
    ax.legend(fontsize=8, ncol=2)
    infos.append(save_figure(fig, folder, "regression_figure3.png",
                             "Paper Figure 3: sweeping k and alpha at the smallest epsilon; grey band beneath the curves: "
                             f"lower envelope; a curve off the axis is marked by a triangle at the right edge{_SE_NOTE}."))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for eps, part in table.groupby("epsilon"):
        env = _lower_envelope(part)
        _errorbar_curve(ax, env, marker=None, label=f"eps={_eps_label(eps)}")
    ax.set_xlim(0, 0.035)
    ax.set_xlabel("mean squared error")
    ax.set_ylabel("fairness violation (KS)")
    ax.set_title("Figure 4: Law School lower envelopes per epsilon")
    ax.legend(fontsize=8)
    infos.append(save_figure(fig, folder, "regression_figure4.png",
                             "Paper Figure 4: lower envelopes of the mean (MSE, KS) trade-off over k and alpha, for each "
                             f"epsilon{_SE_NOTE} (of the (k, alpha) point on the envelope)."))
    return infos


def envelope_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Tabulate the k = 1 (constant predictor) line ends, where the paper prints a number.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.

    Returns
    -------
    list of TableInfo
        The tables for the report.
    """
    table = _tradeoff(results)
    k1 = table[(table["k"] == 1)]
    rows = k1.groupby("epsilon")[["mse", "ks"]].mean()
    mse, ks = ENVELOPE_PAPER_VALUES["mse[k=1]"].printed, ENVELOPE_PAPER_VALUES["ks[k=1]"].printed
    return [TableInfo("k = 1 (constant predictor): right end of Figures 3 and 4", rows.round(4),
                      f"The paper: all lines end at (MSE {mse}, KS {ks}).")]


def envelope_verdict(results: pd.DataFrame, paper: Mapping[str, PaperValue]) -> Verdict:
    """Check that every k = 1 line ends where Xian et al. print it (Figures 3 and 4).

    Parameters
    ----------
    results : pandas.DataFrame
        The result rows of ``regression-law-envelopes``.
    paper : mapping of str to PaperValue
        The spec's paper values (:data:`ENVELOPE_PAPER_VALUES`).

    Returns
    -------
    Verdict
        ``matches`` when the k = 1 line of every epsilon ends at the printed MSE (within 1 %) with KS at
        most 0.02, ``differs`` naming the lines that do not, ``not checked`` without k = 1 cells; one
        :class:`VerdictRow` per line and quantity.
    """
    tables = [t.table for t in envelope_tables(results) if t.title.startswith("k = 1")]
    if not tables or tables[0].empty:
        return Verdict("not checked", "no k = 1 cells among the results.")
    wide = tables[0]
    mse_paper, ks_paper = paper["mse[k=1]"], paper["ks[k=1]"]
    rows, bad = [], []
    for eps, m, k in zip(wide.index, wide["mse"], wide["ks"], strict=True):
        mse_ok = not abs(m - mse_paper.value) > TOL_ENVELOPE_MSE * mse_paper.value
        ks_ok = not k > ks_paper.value + TOL_ENVELOPE_KS
        rows += [VerdictRow(f"k = 1, eps = {eps:g}: MSE", "matches" if mse_ok else "differs", f"{m:.4f}",
                            mse_paper.printed, mse_paper.where, f"within {100 * TOL_ENVELOPE_MSE:g} %"),
                 VerdictRow(f"k = 1, eps = {eps:g}: KS", "matches" if ks_ok else "differs", f"{k:.3f}",
                            ks_paper.printed, ks_paper.where, f"at most {TOL_ENVELOPE_KS:g} above")]
        if not (mse_ok and ks_ok):
            bad.append(f"eps = {eps:g}: (MSE {m:.4f}, KS {k:.3f})")
    printed = f"(MSE {mse_paper.printed}, KS {ks_paper.printed})"
    if bad:
        return Verdict("differs", f"the paper prints that all lines end at {printed}; ours: " + "; ".join(bad) + ".",
                       tuple(rows))
    return Verdict("matches", f"every k = 1 line ends at {printed}, as printed (within {100 * TOL_ENVELOPE_MSE:g} %, "
                              f"KS <= {TOL_ENVELOPE_KS:g}); the rest of Figures 3 and 4 has no printed numbers: "
                              "compare the figures.", tuple(rows))


def ridge_figures(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Draw MSE against KS unfairness of the post-processed ridge regressor.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.
    folder : pathlib.Path
        Folder the PNG files are written into.

    Returns
    -------
    list of FigureInfo
        The figures written.
    """
    import matplotlib.pyplot as plt

    table = _tradeoff(results)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for eps, curve in table.groupby("epsilon"):
        curve = curve.sort_values("alpha", ascending=False)
        _errorbar_curve(ax, curve, label=f"eps={_eps_label(eps)}")
    raw_mse = results[results["metric"] == "mse_regressor"]["value"].mean()
    raw_ks = results[results["metric"] == "ks_regressor"]["value"].mean()
    ax.scatter([raw_mse], [raw_ks], color="black", marker="x", s=60, label="ridge, not post-processed")
    ax.set_xlabel("test MSE against the true ugpa")
    ax.set_ylabel("fairness violation (KS)")
    ax.set_title("Law School: ridge regressor + DP fair post-processing (k = 36)")
    ax.legend(fontsize=8)
    return [save_figure(fig, folder, "regression_ridge_pipeline.png",
                        "Whole pipeline: ridge on (lsat, gender, pass_bar) trained on 35%, post-processed privately on "
                        f"another 35%, evaluated on 30%; mean over seeds{_SE_NOTE}.")]


_PRIVACY = "epsilon-DP (Laplace on the joint (group, bin) histogram of the post-processing split); alpha sweep is free"
_SWEEP_METRICS = tuple(_metric(m, a) for a in ALPHAS for m in ("mse", "ks"))

for _dataset in DATASETS:
    register(ExperimentSpec(
        id=f"regression-figure2-{_dataset.replace('_', '-')}",
        title=f"DP fair regression post-processing, {_dataset}: error-privacy-fairness trade-offs",
        reproduces="Xian et al. 2024, Figure 2 (" + ("left panels" if _dataset == "communities" else "right panels") + ")",
        dataset=_dataset,
        algorithms=("Algorithm 1 (identity regressor)",),
        grid={"dataset": (_dataset,), "k": DATASETS[_dataset]["bins"], "epsilon": EPSILONS},
        seeds=SEEDS,
        quick_grid={"dataset": (_dataset,), "k": DATASETS[_dataset]["bins"][:1], "epsilon": (math.inf, 1.0, 0.1)},
        quick_seeds=(33, 34),
        metrics=(*_SWEEP_METRICS, "ks_unprocessed"),
        task=sweep_task, figures=figure2, tables=figure2_tables, privacy=_PRIVACY, requires_data=(_dataset,),
    ))

register(ExperimentSpec(
    id="regression-law-envelopes",
    title="DP fair regression post-processing, Law School: sweeping k and alpha (lower envelopes)",
    reproduces="Xian et al. 2024, Figures 3 and 4",
    dataset="law_school",
    algorithms=("Algorithm 1 (identity regressor)",),
    grid={"dataset": ("law_school",), "k": ENVELOPE_BINS, "epsilon": (10.0, 5.0, 1.0, 0.5, 0.1)},
    seeds=SEEDS,
    quick_grid={"dataset": ("law_school",), "k": (1, 8, 24), "epsilon": (1.0, 0.1)},
    quick_seeds=(33,),
    metrics=(*_SWEEP_METRICS, "ks_unprocessed"),
    task=sweep_task, figures=envelope_figures, tables=envelope_tables, privacy=_PRIVACY, requires_data=("law_school",),
    paper_values=ENVELOPE_PAPER_VALUES, verdict=envelope_verdict,
))

register(ExperimentSpec(
    id="regression-ridge-pipeline",
    title="Ridge regressor on Law School features, then DP fair post-processing",
    reproduces="dpfair pipeline example (not a paper figure)",
    dataset="law_school",
    algorithms=("ridge + Algorithm 1",),
    grid={"k": (36,), "epsilon": (math.inf, 1.0, 0.1)},
    seeds=SEEDS[:20],
    quick_grid={"k": (36,), "epsilon": (math.inf, 1.0)},
    quick_seeds=(33,),
    metrics=(*_SWEEP_METRICS, "mse_regressor", "ks_regressor"),
    task=ridge_task, figures=ridge_figures, privacy=_PRIVACY, requires_data=("law_school",),
))


# ---------------------------------------------------------------------- private tuning of (k, alpha)
TUNING_EPSILONS = (0.5, 1.0, 5.0)
TUNING_ALPHAS = (0.0, 0.02, 0.05, 0.1, 0.2)
TUNING_BINS = {"communities": (6, 12, 24, 60), "law_school": (12, 36, 60, 180)}
#: Weight of the KS term of the tuning objective MSE + lambda * KS, in squared units of the bounds' width.
TUNING_KS_WEIGHT = 0.02
TUNING_MEAN_TRIALS = 10.0


def _tuning_objective(mse: float, ks: float, width: float) -> float:
    return mse + TUNING_KS_WEIGHT * width**2 * ks


def tuning_task(cell: dict[str, Any], seed: int) -> dict[str, float]:
    """70/30 split; on the 70%: private search (its own fit/validation split) vs the exhaustive non-private one.

    Parameters
    ----------
    cell : dict
        The cell's parameters.
    seed : int
        The seed.

    Returns
    -------
    dict of str to float
        The experiment's metrics.
    """
    import warnings

    from sklearn.model_selection import train_test_split

    from dpfair.fairness import statistical_parity_ks
    from dpfair.model_selection import PrivateMSEKSScorer, PrivateRandomSearch
    from dpfair.privacy import PrivacyLeakWarning
    from dpfair.regression import FairRegressionPostProcessor

    dataset = cell["dataset"]
    info = DATASETS[dataset]
    lo, hi = info["bounds"]
    y, groups, _ = _data(dataset)
    y_train, y_test, g_train, g_test = train_test_split(y, groups, test_size=0.3, random_state=seed)
    base = FairRegressionPostProcessor(bounds=info["bounds"], groups=list(info["groups"]))
    grid = {"n_bins": TUNING_BINS[dataset], "alpha": TUNING_ALPHAS}
    scorer = PrivateMSEKSScorer(info["bounds"], list(info["groups"]), ks_weight=TUNING_KS_WEIGHT * (hi - lo) ** 2)
    out: dict[str, float] = {}
    for name, epsilon in (("private", float(cell["epsilon"])), ("nonprivate", math.inf)):
        search = PrivateRandomSearch(base, grid, scoring=scorer, epsilon=epsilon, mean_trials=TUNING_MEAN_TRIALS,
                                     random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # the non-private baseline says so in its name
            search.fit(y_train, y_train, sensitive_features=g_train)
        pred = search.predict(y_test, sensitive_features=g_test, random_state=seed)
        mse = float(np.mean((pred - y_test) ** 2))
        ks = float(statistical_parity_ks(pred, g_test))
        out.update({f"k_{name}": float(search.best_params_["n_bins"]), f"alpha_{name}": float(search.best_params_["alpha"]),
                    f"mse_{name}": mse, f"ks_{name}": ks, f"objective_{name}": _tuning_objective(mse, ks, hi - lo)})
    return out


def _tuning_table(results: pd.DataFrame) -> pd.DataFrame:
    wide = results.pivot_table(index=["dataset", "epsilon", "seed"], columns="metric", values="value").reset_index()
    rows = []
    for (dataset, eps), part in wide.groupby(["dataset", "epsilon"]):
        row = {"dataset": dataset, "epsilon total": eps}
        for name in ("private", "nonprivate"):
            for what in ("k", "alpha", "mse", "ks", "objective"):
                row[f"{what} ({name})"] = part[f"{what}_{name}"].mean()
        row["objective ratio"] = row["objective (private)"] / row["objective (nonprivate)"]
        rows.append(row)
    return pd.DataFrame(rows).set_index(["dataset", "epsilon total"])


def tuning_figures(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Draw the private choice of (k, alpha) against the best non-private one.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.
    folder : pathlib.Path
        Folder the PNG files are written into.

    Returns
    -------
    list of FigureInfo
        The figures written.
    """
    import matplotlib.pyplot as plt

    wide = results.pivot_table(index=["dataset", "epsilon", "seed"], columns="metric", values="value").reset_index()
    datasets = sorted(wide["dataset"].unique())
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.6 * len(datasets), 3.8), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        part = wide[wide["dataset"] == dataset]
        for eps, sub in part.groupby("epsilon"):
            dots = ax.scatter(sub["mse_private"], sub["ks_private"], s=14, alpha=0.5, label=f"private, eps={eps:g}")
            ax.errorbar(sub["mse_private"].mean(), sub["ks_private"].mean(), xerr=_se(sub["mse_private"]),
                        yerr=_se(sub["ks_private"]), marker="D", ms=6, color=dots.get_facecolor()[0][:3], capsize=2,
                        zorder=4)
        ax.scatter(part["mse_nonprivate"], part["ks_nonprivate"], s=30, marker="x", color="black",
                   label="best non-private choice")
        ax.set_title(f"{'Communities & Crime' if dataset == 'communities' else 'Law School'}")
        ax.set_xlabel("test MSE")
        ax.set_ylabel("test fairness violation (KS)")
        ax.legend(fontsize=8)
    return [save_figure(fig, folder, "regression_private_tuning.png",
                        "Private choice of (k, alpha) (random stopping, Liu & Talwar 2019; objective MSE + lambda KS on "
                        "a private validation score) vs the exhaustive non-private choice on the same split; one point "
                        "per seed, evaluated on the 30% test split; diamonds: mean over seeds +- one standard error.")]


def _se(values: pd.Series) -> float:
    """Standard error of the mean over seeds (0 with a single seed)."""
    return float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else 0.0


def tuning_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Tabulate the private and the non-private choice of (k, alpha), means over seeds.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.

    Returns
    -------
    list of TableInfo
        The tables for the report.
    """
    return [TableInfo("Private vs non-private choice of (k, alpha): means over seeds", _tuning_table(results).round(4),
                      f"Objective = test MSE + {TUNING_KS_WEIGHT:g} (t - s)^2 KS. The private search spends the whole "
                      "epsilon (trial fits, validation scores and the random-K selection); the non-private one fits "
                      "and scores every candidate exactly.")]


register(ExperimentSpec(
    id="regression-private-tuning",
    title="Private choice of (k, alpha) on a validation split vs the best non-private choice",
    reproduces="Xian et al. 2024, Section 4's closing remark (private tuning, Liu & Talwar 2019)",
    dataset="law_school",
    algorithms=("PrivateRandomSearch over Algorithm 1", "exhaustive non-private search"),
    grid={"dataset": ("law_school", "communities"), "epsilon": TUNING_EPSILONS},
    seeds=SEEDS[:20],
    quick_grid={"dataset": ("communities",), "epsilon": (1.0,)},
    quick_seeds=(33, 34),
    metrics=tuple(f"{w}_{n}" for n in ("private", "nonprivate") for w in ("k", "alpha", "mse", "ks", "objective")),
    task=tuning_task, figures=tuning_figures, tables=tuning_tables,
    privacy="(epsilon, 0)-DP for the whole search: geometric number of trials (mean 10), each trial epsilon/3 "
            "(fit on the training rows, MSE + KS score on disjoint validation rows)",
    requires_data=("law_school", "communities"),
))
