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
* ``regression-blind``: the attribute-blind extension of Section 5
  (:class:`~dpfair.regression.BlindFairRegressionPostProcessor`, no group at prediction) beside the aware
  post-processor, the ridge regressor and the blind program solved on the test rows, on Law School and
  Communities at epsilon 0.5, 1, 2 and inf.
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


# ---------------------------------------------------------------------- attribute-blind post-processing
#: The blind comparison (BlindFairRegressionPostProcessor beside the attribute-aware one): alphas and epsilons.
BLIND_ALPHAS = (0.05, 0.1, 0.2)
BLIND_EPSILONS = (0.5, 1.0, 2.0, math.inf)
BLIND_SEEDS = (33, 34, 35, 36, 37)
#: Share of the blind post-processor's epsilon spent on its membership model (the rest on its cell table): both
#: are released from the same post-processing rows, so by composition the pair is epsilon-DP for every row.
BLIND_MEMBERSHIP_SHARE = 0.25
#: What the blind program's alpha is lowered by, for the table's noise (see ``BLIND_SETUP``).
BLIND_ALPHA_MARGIN = 0.03
#: Per dataset: the regressor's features, the membership model's declared discretisation ``{column: edges}``
#: (public ranges, never read off the data), the bins of the aware and the blind post-processors, and the
#: blind one's membership resolution.  Communities' group is ``racepctblack > 0.06``, so that column is dropped
#: from every model (an exact proxy of the attribute would make blindness void).  The blind table's bounds are the
#: ridge's output range over the declared ``feature_box`` (public: the ridge is trained on other rows;
#: :func:`_linear_output_range`), about [2.5, 3.5] on Law School, where 12 bins have the aware post-processor's width
#: (36 on [1, 4]) without the 24 bins no output reaches, pure noise in the blind table (10 membership cells each).
#: At epsilon = 1 (alpha = 0.05 / 0.1 / 0.2; 40 (noise, split) pairs each, secure noise; excess MSE as a multiple of
#: the aware one's, then held-out KS): 18 bins on [1, 4] 1.91 / 1.98 / 2.12 at 0.098 / 0.133 / 0.194; 36 bins on
#: [1, 4] 1.44 / 1.32 / 1.21 at 0.131 / 0.171 / 0.255; 12 bins on [2.5, 3.5] 1.18 / 1.11 / 0.98 at 0.128 / 0.165 /
#: 0.256, and with the margin below 1.40 / 1.40 / 1.08 at 0.103 / 0.138 / 0.224.  (24 bins there: KS 0.18-0.29.  The
#: aware post-processor on the same 12 bins: the same KS and excess MSE as on its 36.)  Communities (about 700
#: post-processing rows, two groups, about 100 features: no useful box) keeps 6 bins on [0, 1]: with the margin, 8 or
#: 12 bins gave a ratio of about 2.1 (6 bins: 2.4-2.8) but a held-out KS up to 0.01 above alpha + 0.05 at alpha = 0.05
#: and 0.1 (6 bins: within it).  The blind program is solved at ``max(0, alpha - BLIND_ALPHA_MARGIN)``: a public
#: margin for the table's noise (the guaranteed slack, ``guaranteed_violation_ - alpha``, cannot set it: it is
#: vacuous at these sizes).
BLIND_SETUP = {
    "law_school": {"features": ("lsat", "male", "pass_bar"),
                   "membership_edges": {"lsat": np.linspace(10.0, 48.0, 9), "male": (0.5,), "pass_bar": (0.5,)},
                   "feature_box": {"lsat": (10.0, 48.0), "male": (0.0, 1.0), "pass_bar": (0.0, 1.0)},
                   "aware_bins": 36, "blind_bins": 12, "membership_bins": 2, "oracle_membership_bins": 4},
    "communities": {"features": None,
                    "membership_edges": {"racePctWhite": np.linspace(0.0, 1.0, 11)[1:-1],
                                         "racePctHisp": (0.1, 0.3)},
                    "feature_box": None,
                    "aware_bins": 12, "blind_bins": 6, "membership_bins": 2, "oracle_membership_bins": 16},
}


class HistogramMembershipModel:
    """A private model of ``P(A | x)``: Laplace counts of (group, cell of declared feature edges), normalised.

    ``fit`` is ``(epsilon, 0)``-DP for every row's (features, group) under replace-one-row: one row moves one
    count between two entries of the (group, cell) table (L1 sensitivity 2), which gets ``Laplace(2 / epsilon)``
    noise; negative counts are set to 0 and each cell's counts get a pseudo-count of 1 shared in proportion to
    the private group sizes (post-processing).  The edges are declared, never read off the rows.

    Parameters
    ----------
    edges : dict of str to sequence of float
        Inner bin edges of every feature the model reads (a column of ``X``, a DataFrame).
    groups : sequence
        The declared groups (the columns of :meth:`predict_proba`).
    epsilon : float
        Privacy parameter (``inf``: exact counts).
    random_state : None, int or numpy Generator, default None
        ``None``: secure noise; a seed: reproducible, not hardened.
    """

    def __init__(self, edges: dict[str, Any], groups: Any, epsilon: float, random_state: Any = None) -> None:
        self.edges = edges
        self.groups = groups
        self.epsilon = epsilon
        self.random_state = random_state

    def _cells(self, X: pd.DataFrame) -> np.ndarray:
        cell = np.zeros(len(X), dtype=np.int64)
        for column, edges in self.edges.items():
            cell = cell * (len(edges) + 1) + np.searchsorted(np.asarray(edges, float), X[column].to_numpy(float))
        return cell

    def fit(self, X: pd.DataFrame, groups: Any) -> HistogramMembershipModel:
        """Release the noisy (group, cell) counts.

        Parameters
        ----------
        X : pandas.DataFrame
            Rows with the columns of ``edges``.
        groups : array-like
            Each row's group.

        Returns
        -------
        HistogramMembershipModel
            ``self``.
        """
        from dpfair.privacy.mechanisms import laplace_mechanism

        declared = list(self.groups)
        n_cells = int(np.prod([len(e) + 1 for e in self.edges.values()]))
        counts = np.zeros((len(declared), n_cells))
        np.add.at(counts, (np.array([declared.index(g) for g in groups]), self._cells(X)), 1.0)
        if not math.isinf(self.epsilon):
            counts = laplace_mechanism(counts, sensitivity=2.0, epsilon=self.epsilon, random_state=self.random_state)
        counts = np.maximum(counts, 0.0)
        prior = counts.sum(axis=1) / max(counts.sum(), 1.0)
        smoothed = counts + prior[:, None]
        self.proba_ = (smoothed / smoothed.sum(axis=0, keepdims=True)).T
        self.classes_ = np.asarray(declared, dtype=object)
        return self

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        """``P(A = a | x)`` of every row, columns in the order of ``classes_``.

        Parameters
        ----------
        X : pandas.DataFrame
            Rows with the columns of ``edges``.

        Returns
        -------
        ndarray of shape (n_rows, n_groups)
        """
        return self.proba_[self._cells(X)]


def _blind_frame(dataset: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, list[str]]:
    """The rows, targets, groups and the regressor's feature columns of one dataset (Communities: no racepctblack)."""
    y, groups, X = _data(dataset)
    X = X.copy()
    if dataset == "law_school":
        X["male"] = X["male"].fillna(0.5)
    else:
        X = X.drop(columns=["racepctblack"])
    features = list(BLIND_SETUP[dataset]["features"] or X.columns)
    return X, y, groups, features


def _distribution_metrics(dist: np.ndarray, grid: np.ndarray, y: np.ndarray, groups: np.ndarray,
                          declared: list) -> tuple[float, float]:
    """Expected MSE and the largest pairwise KS of the groups' output distributions (the maps' draws integrated)."""
    mse = float(np.mean(dist @ grid**2 - 2 * y * (dist @ grid) + y**2))
    cdfs = np.array([np.cumsum(dist[groups == g].mean(axis=0)) for g in declared if (groups == g).any()])
    return mse, float((cdfs.max(axis=0) - cdfs.min(axis=0)).max())


def _linear_output_range(model: Any, features: list[str], box: dict[str, tuple[float, float]] | None,
                         bounds: tuple[float, float]) -> tuple[float, float]:
    """A linear model's output range over a declared feature box, rounded out to 0.05 and within ``bounds``.

    Public: the model is trained on other rows and the box is declared (no post-processing row is read).  Without
    a box (or a feature outside it), ``bounds`` itself.
    """
    if box is None or any(name not in box for name in features):
        return bounds
    ends = np.array([box[name] for name in features], dtype=float)  # (n_features, 2)
    ranges = np.sort(np.asarray(model.coef_, float)[:, None] * ends, axis=1)
    lo = float(model.intercept_ + ranges[:, 0].sum())
    hi = float(model.intercept_ + ranges[:, 1].sum())
    lo, hi = max(bounds[0], math.floor(lo * 20) / 20), min(bounds[1], math.ceil(hi * 20) / 20)
    return (lo, hi) if lo < hi else bounds


def _aware_distribution(pp: Any, X: Any, groups: np.ndarray) -> np.ndarray:
    """Each row's output distribution under the aware maps (Algorithm 1, lines 2 and 12: its group's row of the bin)."""
    k = pp.grid_.size
    lo, hi = pp.bounds_
    index = np.array([list(pp.groups_).index(g) for g in groups])
    bins = np.clip(np.floor((pp.estimator_.predict(X) - lo) / (hi - lo) * k), 0, k - 1).astype(np.int64)
    return pp.sparse_transport_[index * k + bins].toarray()


def blind_task(cell: dict[str, Any], seed: int) -> dict[str, float]:
    """One split (35% regressor, 35% post-processing, 30% test): blind, aware and reference post-processors.

    The regressor (ridge) is trained on its own 35% (it stands for a model trained on other data, as in
    ``regression-ridge-pipeline``).  On the post-processing 35%, at the cell's epsilon: the aware post-processor
    (its table at epsilon), and the blind one (a :class:`HistogramMembershipModel` at
    ``BLIND_MEMBERSHIP_SHARE * epsilon`` and its cell table at the rest, on the ridge's output range over the
    declared feature box, its program solved at ``alpha - BLIND_ALPHA_MARGIN`` at a finite epsilon); secure noise
    (``random_state=None``).
    At ``epsilon = inf`` also the *blind oracle*: the blind program solved exactly on the test rows themselves
    (exact membership model and table) with the aware post-processor's bins and a finer membership lattice: the
    best remapping of (output bin, membership cell) for those rows, a lower bound (up to that resolution) on what
    any blind post-processor reaches there.  Metrics on the 30% test split: expected MSE and
    KS of the output distributions (the randomized maps integrated out).

    Parameters
    ----------
    cell : dict
        ``{"dataset": ..., "epsilon": ...}``.
    seed : int
        The split's seed.

    Returns
    -------
    dict of str to float
        ``mse_regressor``, ``ks_regressor``, and ``{mse,ks}_{aware,blind[,oracle]}@alpha=...``.
    """
    import warnings

    from sklearn.linear_model import Ridge
    from sklearn.model_selection import train_test_split

    from dpfair.fairness import statistical_parity_ks
    from dpfair.privacy import PrivacyLeakWarning
    from dpfair.regression import BlindFairRegressionPostProcessor, FairRegressionPostProcessor

    dataset, epsilon = cell["dataset"], float(cell["epsilon"])
    setup, info = BLIND_SETUP[dataset], DATASETS[dataset]
    declared = list(info["groups"])
    X, y, groups, features = _blind_frame(dataset)
    rest, test = train_test_split(np.arange(y.size), test_size=0.3, random_state=seed)
    fit_reg, post = train_test_split(rest, test_size=0.5, random_state=seed)
    regressor = Ridge(alpha=1.0).fit(X.iloc[fit_reg][features].to_numpy(float), y[fit_reg])

    class _Features:  # the regressor on the declared feature columns of a DataFrame
        def __init__(self, model):
            self.model = model

        def predict(self, frame):
            return self.model.predict(frame[features].to_numpy(float))

    f = _Features(regressor)
    raw = f.predict(X.iloc[test])
    out = {"mse_regressor": float(np.mean((raw - y[test]) ** 2)),
           "ks_regressor": float(statistical_parity_ks(raw, groups[test]))}
    private = None  # secure noise (OpenDP) at every finite epsilon
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.filterwarnings("ignore", message="some outputs lie outside bounds")
        warnings.filterwarnings("ignore", message="the private weight")
        aware = FairRegressionPostProcessor(f, epsilon=epsilon, n_bins=setup["aware_bins"], bounds=info["bounds"],
                                            groups=declared, random_state=private).fit(
            X.iloc[post], sensitive_features=groups[post])
        membership = HistogramMembershipModel(setup["membership_edges"], declared, BLIND_MEMBERSHIP_SHARE * epsilon,
                                              random_state=private).fit(X.iloc[post], groups[post])
        blind = BlindFairRegressionPostProcessor(
            f, membership, epsilon=(1 - BLIND_MEMBERSHIP_SHARE) * epsilon, n_bins=setup["blind_bins"],
            membership_bins=setup["membership_bins"], groups=declared, random_state=private,
            bounds=_linear_output_range(regressor, features, setup["feature_box"], info["bounds"]),
        ).fit(X.iloc[post], sensitive_features=groups[post])
        oracle = None
        margin = 0.0 if math.isinf(epsilon) else BLIND_ALPHA_MARGIN  # room for the table's noise, if any
        if math.isinf(epsilon):
            exact = HistogramMembershipModel(setup["membership_edges"], declared, math.inf).fit(X.iloc[test],
                                                                                              groups[test])
            oracle = BlindFairRegressionPostProcessor(
                f, exact, epsilon=math.inf, n_bins=setup["aware_bins"], membership_bins=setup["oracle_membership_bins"],
                bounds=info["bounds"], groups=declared).fit(X.iloc[test], sensitive_features=groups[test])
        for alpha in BLIND_ALPHAS:
            aware.refit_alpha(alpha)
            blind.refit_alpha(max(0.0, alpha - margin))
            runs = [("aware", aware, _aware_distribution(aware, X.iloc[test], groups[test])),
                    ("blind", blind, blind.output_distribution(X.iloc[test]))]
            if oracle is not None:
                oracle.refit_alpha(alpha)
                runs.append(("oracle", oracle, oracle.output_distribution(X.iloc[test])))
            for name, pp, dist in runs:
                mse, ks = _distribution_metrics(dist, pp.grid_, y[test], groups[test], declared)
                out[f"mse_{name}@alpha={alpha:g}"] = mse
                out[f"ks_{name}@alpha={alpha:g}"] = ks
            out[f"guarantee_blind@alpha={alpha:g}"] = float(blind.guaranteed_violation_)
    return out


def blind_summary(results: pd.DataFrame) -> pd.DataFrame:
    """Medians over seeds of the blind comparison: one row per (dataset, epsilon, alpha).

    Parameters
    ----------
    results : pandas.DataFrame
        The result rows of ``regression-blind``.

    Returns
    -------
    pandas.DataFrame
        Columns: held-out KS and excess MSE (over the ridge regressor) of the aware and the blind
        post-processors, the blind oracle's at ``epsilon = inf``, the ratio of the blind to the aware excess MSE,
        and the blind post-processor's released guarantee.
    """
    wide = results.pivot_table(index=["dataset", "epsilon", "seed"], columns="metric", values="value").reset_index()
    rows = []
    for (dataset, eps), part in wide.groupby(["dataset", "epsilon"]):
        for alpha in BLIND_ALPHAS:
            row: dict[str, Any] = {"dataset": dataset, "epsilon": eps, "alpha": alpha,
                                   "KS regressor": part["ks_regressor"].median()}
            for name in ("aware", "blind", "oracle"):
                if f"ks_{name}@alpha={alpha:g}" in part and part[f"ks_{name}@alpha={alpha:g}"].notna().any():
                    row[f"KS {name}"] = part[f"ks_{name}@alpha={alpha:g}"].median()
                    row[f"excess MSE {name}"] = (part[f"mse_{name}@alpha={alpha:g}"] - part["mse_regressor"]).median()
            row["blind / aware"] = row["excess MSE blind"] / row["excess MSE aware"]
            row["guarantee blind"] = part[f"guarantee_blind@alpha={alpha:g}"].median()
            rows.append(row)
    return pd.DataFrame(rows).set_index(["dataset", "epsilon", "alpha"])


def blind_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Tabulate the aware-versus-blind trade-off (medians over seeds).

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.

    Returns
    -------
    list of TableInfo
        The table for the report.
    """
    return [TableInfo("Attribute-blind vs attribute-aware private post-processing (held out, medians over seeds)",
                      blind_summary(results).round(4),
                      "KS: largest pairwise KS distance between the groups' output distributions on the test split (the "
                      "randomized maps integrated out); excess MSE: over the ridge regressor both post-process. At a finite "
                      f"epsilon the blind program is solved at alpha - {BLIND_ALPHA_MARGIN:g} (a public margin for its "
                      "table's noise; the alpha column is the target). The "
                      "oracle (epsilon = inf rows) is the blind program solved on the test rows themselves: what no "
                      "blind remapping of those cells can beat there.")]


def blind_figures(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Draw excess MSE against held-out KS, aware and blind, for every epsilon (one panel per dataset).

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.
    folder : pathlib.Path
        Folder the PNG files are written into.

    Returns
    -------
    list of FigureInfo
        The figure written.
    """
    import matplotlib.pyplot as plt

    table = blind_summary(results).reset_index()
    datasets = sorted(table["dataset"].unique())
    fig, axes = plt.subplots(1, len(datasets) + 1, figsize=(5.0 * len(datasets) + 2.6, 4.0), squeeze=False,
                             gridspec_kw={"width_ratios": [1.0] * len(datasets) + [0.5]})
    for ax, dataset in zip(axes[0][:-1], datasets, strict=True):
        part = table[table["dataset"] == dataset]
        for rank, (eps, curve) in enumerate(sorted(part.groupby("epsilon"), key=lambda item: -item[0])):
            curve = curve.sort_values("alpha")
            ax.plot(curve["KS aware"], curve["excess MSE aware"], marker="os^D"[rank % 4], ls="--", color=f"C{rank}",
                    label=f"aware, eps={_eps_label(eps)}")
            ax.plot(curve["KS blind"], curve["excess MSE blind"], marker="os^D"[rank % 4], ls="-", color=f"C{rank}",
                    label=f"blind, eps={_eps_label(eps)}")
            if "KS oracle" in curve and curve["KS oracle"].notna().any():
                ax.plot(curve["KS oracle"], curve["excess MSE oracle"], marker="*", ms=9, ls=":", color="black",
                        label="blind oracle (in-sample)")
        for alpha in BLIND_ALPHAS:
            ax.axvline(alpha + 0.05, color="grey", lw=0.6, ls=":")
        ax.set_title("Communities & Crime" if dataset == "communities" else "Law School (4 groups)")
        ax.set_xlabel("held-out KS between groups")
        ax.set_ylabel("excess MSE over the regressor")
    handles, labels = axes[0][0].get_legend_handles_labels()
    axes[0][-1].axis("off")  # the legend has a panel of its own, over no curve
    axes[0][-1].legend(handles, labels, loc="center left", fontsize=8)
    return [save_figure(fig, folder, "regression_blind.png",
                        "Attribute-aware (dashed) vs attribute-blind (solid) private post-processing of a ridge "
                        "regressor, alpha = 0.05, 0.1, 0.2 along each curve; medians over seeds; dotted verticals at "
                        "alpha + 0.05; stars: the blind program solved exactly on the test rows.")]


register(ExperimentSpec(
    id="regression-blind",
    title="Attribute-blind private fair post-processing beside the attribute-aware one",
    reproduces="Xian et al. 2024, Section 5 (the attribute-blind extension it leaves open)",
    dataset="law_school",
    algorithms=("BlindFairRegressionPostProcessor", "FairRegressionPostProcessor (aware)", "ridge (unconstrained)",
                "blind oracle (epsilon = inf, in-sample)"),
    grid={"dataset": ("law_school", "communities"), "epsilon": BLIND_EPSILONS},
    seeds=BLIND_SEEDS,
    quick_grid={"dataset": ("communities",), "epsilon": (1.0, math.inf)},
    quick_seeds=(33,),
    metrics=("mse_regressor", "ks_regressor",
             *(f"{m}_{name}@alpha={a:g}" for a in BLIND_ALPHAS for name in ("aware", "blind") for m in ("mse", "ks")),
             *(f"guarantee_blind@alpha={a:g}" for a in BLIND_ALPHAS)),
    task=blind_task, figures=blind_figures, tables=blind_tables,
    privacy=f"aware: epsilon-DP (its table); blind: epsilon-DP in all, {BLIND_MEMBERSHIP_SHARE:g} epsilon for the "
            "membership model and the rest for the cell table, on the same post-processing rows; secure noise",
    requires_data=("law_school", "communities"),
))
