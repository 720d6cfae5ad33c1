"""Experiments of Private-Fair-Greedy (An, Palacci & Paschalidis): census hiring, Figures 2 and 3, and an epsilon sweep.

Protocol of the paper's "Empirical Results": K = 4 race groups, T = 50,000 rounds, Private-Fair-Greedy
at epsilon = 15, delta = 0.1 with the budget split evenly, against Fair-Greedy and OFUL (and a random
policy, the floor), 10 seeds.  The paper uses folktables' ACS data, which cannot be downloaded here:
the environment is :meth:`dpfair.bandits.CensusHiringEnvironment.from_acs_excerpt` on the NIST ACS 2019
national excerpt (genuine ACS person records; the four largest ``RAC1P`` groups; income as reward,
``theta*`` fitted on a held-out half).  The declared bounds of Private-Fair-Greedy are public facts of
the simulation: ``||x|| <= 1`` by the environment's construction and ``|y| <=`` its ``reward_bound``.

One task is one (method, seed): :func:`dpfair.bandits.simulate` with one seed.  Every task stores the
final fair and reward pseudo-regret, the selection share of each group, and both cumulative curves at
50 evenly spaced fractions of the horizon (``fair_regret@frac=0.02`` ...), from which the figures draw
mean curves with standard-error bands.

* ``gmf-census-selection``: Figure 2, share of rounds each group is selected.
* ``gmf-census-regret``: Figure 3, cumulative fair pseudo-regret (and reward regret).
Private-Fair-Greedy runs the paper's binary tree here (``continual="tree"``), so that the figures
reproduce the paper's mechanism; the library's default, the square-root factorization, is the method
``"Private-Fair-Greedy[sqrt]"`` of :func:`task` (same privacy, less noise per release).

* ``gmf-epsilon-sweep`` (what the paper leaves open): final fair and reward regret of Private-Fair-Greedy
  for epsilon in {0.5, 1, 2, 5, 10, 15, 30, 100, inf}, against OFUL and Fair-Greedy.
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

HORIZON = 50_000
QUICK_HORIZON = 2_000
EPSILON = 15.0
DELTA = 0.1
SWEEP_EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 100.0, math.inf)
FRACTIONS = tuple(round(i / 50, 2) for i in range(1, 51))
N_GROUPS = 4
METHODS = ("OFUL", "Fair-Greedy", "Private-Fair-Greedy", "Random")


def _pfg(epsilon: float) -> str:
    return f"Private-Fair-Greedy@eps={epsilon:g}"


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    from dpfair.bandits import CensusHiringEnvironment

    return CensusHiringEnvironment.from_acs_excerpt("national", n_groups=N_GROUPS, noise_std=0.1, random_state=0)


def _policy(method: str, env: Any) -> Any:
    from dpfair.bandits import OFUL, FairGreedy, PrivateFairGreedy, RandomPolicy

    if method == "OFUL":
        return OFUL(noise_std=env.noise_std, theta_norm_bound=float(np.linalg.norm(env.theta)))
    if method == "Fair-Greedy":
        return FairGreedy()
    if method == "Random":
        return RandomPolicy()
    if method.startswith("Private-Fair-Greedy"):
        # "Private-Fair-Greedy[sqrt]": another continual release of the regression sums; without the suffix the
        # paper's binary tree, so that Figures 2 and 3 reproduce the paper's mechanism
        continual = "tree"
        if method.endswith("]") and "[" in method:
            method, continual = method[:-1].split("[", 1)
        epsilon = float(method.split("=")[1]) if "@eps=" in method else EPSILON
        # declared bounds: ||x|| <= 1 by construction of the contexts, |y| <= the simulation's reward bound
        return PrivateFairGreedy(epsilon, DELTA, budget_split=0.5, context_bound=1.0, reward_bound=env.reward_bound,
                                 continual=continual)
    raise ValueError(f"unknown method {method!r}.")


def task(cell: dict[str, Any], seed: int) -> dict[str, float]:
    """One method on one seed of the census hiring environment.

    Parameters
    ----------
    cell : dict
        ``method`` (``"OFUL"``, ``"Fair-Greedy"``, ``"Random"``, ``"Private-Fair-Greedy"`` at epsilon 15
        or ``"Private-Fair-Greedy@eps=e"``, with the paper's binary tree; a suffix ``[sqrt]`` or
        ``[honaker]`` releases the regression sums through that factorization instead) and ``horizon``.
    seed : int
        Seed of the stream (and of the policy's noise).

    Returns
    -------
    dict of str to float
        ``fair_regret``, ``regret``, ``share_g0..g3`` and the curves ``fair_regret@frac=f``,
        ``regret@frac=f``.
    """
    from dpfair.bandits import simulate

    env = _environment()
    horizon = int(cell["horizon"])
    result = simulate(env, {cell["method"]: _policy(cell["method"], env)}, horizon, [seed])
    fair, regret = result.fair_regret[0, 0], result.regret[0, 0]
    out = {"fair_regret": float(fair[-1]), "regret": float(regret[-1])}
    share = result.selections[0, 0] / horizon
    for k in range(N_GROUPS):
        out[f"share_g{k}"] = float(share[k])
    for f in FRACTIONS:
        t = max(round(f * horizon), 1) - 1
        out[f"fair_regret@frac={f:g}"] = float(fair[t])
        out[f"regret@frac={f:g}"] = float(regret[t])
    return out


_METRICS = ("fair_regret", "regret", *[f"share_g{k}" for k in range(N_GROUPS)],
            *[f"{m}@frac={f:g}" for f in FRACTIONS for m in ("fair_regret", "regret")])


def _summary(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    rows = results[results["metric"] == metric]
    g = rows.groupby("method")["value"]
    out = pd.DataFrame({"mean": g.mean(), "se": g.std(ddof=1) / np.sqrt(g.count()), "n_seeds": g.count()})
    return out.fillna(0.0)


def _group_names() -> list[str]:
    try:
        return list(_environment().group_names)
    except Exception:  # the data is missing: the report still draws from the stored rows
        return [f"group {k}" for k in range(N_GROUPS)]


def selection_figures(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Draw the share of rounds in which each group is selected, by method.

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

    names = _group_names()
    methods = [m for m in METHODS if m in set(results["method"])]
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        means = [_summary(results[results["method"] == method], f"share_g{k}")["mean"].iloc[0] for k in range(N_GROUPS)]
        ses = [_summary(results[results["method"] == method], f"share_g{k}")["se"].iloc[0] for k in range(N_GROUPS)]
        ax.bar(np.arange(N_GROUPS) + (i - (len(methods) - 1) / 2) * width, 100 * np.asarray(means), width,
               yerr=100 * np.asarray(ses), label=method)
    ax.axhline(100 / N_GROUPS, color="black", ls=":", lw=1)
    ax.set_xticks(np.arange(N_GROUPS), names)
    ax.set_ylabel("% of rounds selected")
    ax.legend(fontsize=8)
    horizon = int(results["horizon"].iloc[0])
    return [save_figure(fig, folder, "gmf_census_selection.png",
                        f"Paper Figure 2: share of the {horizon:,} rounds in which each race group's candidate was "
                        "chosen (mean over seeds, standard-error bars); dotted: 25%.")]


def selection_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Tabulate each group's mean selection share by method.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.

    Returns
    -------
    list of TableInfo
        The tables for the report.
    """
    names = _group_names()
    table = pd.DataFrame({names[k]: _summary(results, f"share_g{k}")["mean"] for k in range(N_GROUPS)})
    return [TableInfo("Selection share per group (mean over seeds)", table.round(4),
                      "The paper shows Fair-Greedy and Private-Fair-Greedy near 25% each and OFUL concentrated on some "
                      "groups; it prints no numbers.")]


def _curves(results: pd.DataFrame, metric: str, ax: Any) -> None:
    horizon = int(results["horizon"].iloc[0])
    for method in [m for m in METHODS if m in set(results["method"])]:
        sub = results[results["method"] == method]
        mean, se = [], []
        for f in FRACTIONS:
            s = _summary(sub, f"{metric}@frac={f:g}")
            mean.append(s["mean"].iloc[0])
            se.append(s["se"].iloc[0])
        t = np.asarray(FRACTIONS) * horizon
        (line,) = ax.plot(t, mean, label=method)
        ax.fill_between(t, np.subtract(mean, se), np.add(mean, se), color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel("round t")
    ax.set_ylabel(metric.replace("_", " ").replace("fair regret", "fair pseudo-regret"))
    ax.legend(fontsize=8)


def regret_figures(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Draw fairness regret and reward regret over the rounds, by method.

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

    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.8))
    _curves(results, "fair_regret", axes[0])
    _curves(results, "regret", axes[1])
    axes[0].set_title("cumulative fair pseudo-regret")
    axes[1].set_title("cumulative reward pseudo-regret")
    return [save_figure(fig, folder, "gmf_census_regret.png",
                        f"Paper Figure 3 (left): cumulative fair pseudo-regret, Private-Fair-Greedy at epsilon = "
                        f"{EPSILON:g}, delta = {DELTA:g}; right: reward pseudo-regret. Mean over seeds, standard-error "
                        "bands.")]


def regret_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Tabulate the fairness and reward regret at the horizon, by method.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.

    Returns
    -------
    list of TableInfo
        The tables for the report.
    """
    fair, reward = _summary(results, "fair_regret"), _summary(results, "regret")
    table = pd.DataFrame({"fair regret": fair["mean"], "fair s.e.": fair["se"], "reward regret": reward["mean"],
                          "reward s.e.": reward["se"], "seeds": fair["n_seeds"]})
    horizon = int(results["horizon"].iloc[0])
    return [TableInfo(f"Final regrets at T = {horizon:,}", table.round(2),
                      "Paper: Fair-Greedy near zero, OFUL about linear, Private-Fair-Greedy sublinear but much higher "
                      "than OFUL at epsilon = 15.")]


def _sweep_table(results: pd.DataFrame) -> pd.DataFrame:
    fair, reward = _summary(results, "fair_regret"), _summary(results, "regret")
    table = pd.DataFrame({"fair_mean": fair["mean"], "fair_se": fair["se"], "regret_mean": reward["mean"],
                          "regret_se": reward["se"]})
    # baselines first, then Private-Fair-Greedy by increasing epsilon (numeric, not lexicographic)
    order = sorted(table.index, key=lambda m: (m.startswith("Private"), _epsilon_of(m) if m.startswith("Private") else 0.0, m))
    return table.loc[order]


def _epsilon_of(method: str) -> float:
    return float(method.split("=")[1]) if "@eps=" in method else math.nan


def sweep_figures(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Draw the regret at the horizon against epsilon.

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

    table = _sweep_table(results)
    private = table[[m.startswith("Private") for m in table.index]].copy()
    private["epsilon"] = [_epsilon_of(m) for m in private.index]
    private = private.sort_values("epsilon")
    finite = private[np.isfinite(private["epsilon"])]
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.8))
    for ax, what in zip(axes, ("fair", "regret"), strict=True):
        ax.errorbar(finite["epsilon"], finite[f"{what}_mean"], yerr=finite[f"{what}_se"], marker="o",
                    label="Private-Fair-Greedy")
        for name, style in (("OFUL", "--"), ("Fair-Greedy", ":"), ("Random", "-.")):
            if name in table.index:
                ax.axhline(table.loc[name, f"{what}_mean"], ls=style, color="gray", label=name)
        inf_rows = private[~np.isfinite(private["epsilon"])]
        if len(inf_rows):
            ax.axhline(inf_rows[f"{what}_mean"].iloc[0], ls="-", color="C2", lw=0.8, label="Private-Fair-Greedy, eps=inf")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon (delta = 0.1)")
        ax.set_ylabel("final fair pseudo-regret" if what == "fair" else "final reward pseudo-regret")
        ax.legend(fontsize=7)
    horizon = int(results["horizon"].iloc[0])
    return [save_figure(fig, folder, "gmf_epsilon_sweep.png",
                        f"Beyond the paper: final regrets at T = {horizon:,} of Private-Fair-Greedy as epsilon grows, "
                        "against OFUL, Fair-Greedy and random (horizontal lines). Mean over seeds, standard-error bars.")]


def sweep_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Tabulate the regret at the horizon by epsilon.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.

    Returns
    -------
    list of TableInfo
        The tables for the report.
    """
    table = _sweep_table(results)
    note = "Fair-Greedy is Private-Fair-Greedy at epsilon = inf."
    if "OFUL" in table.index:
        oful = table.loc["OFUL", "fair_mean"]
        private = {_epsilon_of(m): row["fair_mean"] for m, row in table.iterrows() if m.startswith("Private")}
        beating = sorted(e for e, v in private.items() if v < oful)
        note += (f" Smallest epsilon of the grid at which Private-Fair-Greedy's fair regret is below OFUL's: "
                 f"{beating[0]:g}." if beating else " Private-Fair-Greedy's fair regret is above OFUL's at every epsilon.")
    return [TableInfo("Final fair and reward pseudo-regret by method", table.round(2), note)]


_PRIVACY = (f"(epsilon, delta)-joint DP for Private-Fair-Greedy (delta = {DELTA:g}, budget split evenly between the "
            "tree-based regression and the rank estimates); OFUL, Fair-Greedy: none; Random: uses no data")
_REPRODUCES = "An, Palacci & Paschalidis, Private-Fair-Greedy"


def _register(experiment_id: str, title: str, reproduces: str, figures: Any, tables: Any, **overrides: Any) -> None:
    """Register one of the ACS experiments: every one runs :func:`task` on ten seeds of the ACS records."""
    spec = dict(
        id=experiment_id, title=title, reproduces=_REPRODUCES + reproduces, dataset="acs", algorithms=METHODS,
        grid={"method": METHODS, "horizon": (HORIZON,)}, seeds=tuple(range(10)),
        quick_grid={"method": METHODS, "horizon": (QUICK_HORIZON,)}, quick_seeds=(0, 1), metrics=_METRICS,
        task=task, figures=figures, tables=tables, privacy=_PRIVACY, requires_data=("acs",),
    )
    register(ExperimentSpec(**{**spec, **overrides}))


_register("gmf-census-selection", "Group meritocratic hiring on ACS records: selection share per race group",
          ", Figure 2", selection_figures, selection_tables)
_register("gmf-census-regret", "Group meritocratic hiring on ACS records: cumulative fair pseudo-regret",
          ", Figure 3", regret_figures, regret_tables)
_register(
    "gmf-epsilon-sweep", "Private-Fair-Greedy on ACS records: final regrets as epsilon grows",
    " (beyond the paper: the epsilon sweep it leaves open)", sweep_figures, sweep_tables,
    algorithms=("OFUL", "Fair-Greedy", "Private-Fair-Greedy"),
    grid={"method": ("OFUL", "Fair-Greedy", "Random", *[_pfg(e) for e in SWEEP_EPSILONS]), "horizon": (HORIZON,)},
    quick_grid={"method": ("OFUL", "Fair-Greedy", *[_pfg(e) for e in (1.0, 15.0, 100.0)]), "horizon": (QUICK_HORIZON,)},
    quick_seeds=(0,),
)
