"""Privacy-core demonstration: the empirical audit against each mechanism's claim.

Not a paper figure: it shows, on every run of the main job, that each mechanism of
:mod:`dpfair.privacy` shows no more privacy loss than it claims, and that the same
mechanism with half the noise (or twice epsilon in the exponent) is caught.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpfair.experiments.registry import register
from dpfair.experiments.spec import ExperimentSpec, FigureInfo, PaperValue, TableInfo, Verdict, save_figure, task_rng
from dpfair.privacy import (
    PrivacyLeakWarning,
    TopMExponentialMechanism,
    audit_epsilon,
    exponential_probabilities,
    gaussian_delta,
    gaussian_mechanism,
    laplace_mechanism,
)

EPSILON = 1.0
MECHANISMS = ("laplace", "gaussian", "exponential", "top_m")


def _mechanism(name: str, broken: bool) -> tuple[Any, Any, Any, float, float, bool]:
    """(mechanism, input_a, input_b, claimed epsilon, delta, discrete) for the audit."""
    factor = 2.0 if broken else 1.0
    if name == "laplace":
        def mech(d, size, rng):
            return laplace_mechanism(np.full(size, d), sensitivity=1.0 / factor, epsilon=EPSILON, random_state=rng)
        return mech, 0.0, 1.0, EPSILON, 0.0, False
    if name == "gaussian":
        delta = gaussian_delta(1.0, EPSILON)

        def mech(d, size, rng):
            return gaussian_mechanism(np.full(size, d), sensitivity=1.0 / factor, epsilon=EPSILON, delta=delta, random_state=rng)
        return mech, 0.0, 1.0, EPSILON, delta, False
    if name == "exponential":
        def mech(u, size, rng):
            with warnings.catch_warnings():  # synthetic scores: the exact law is meant to be used here
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                p = exponential_probabilities(u, sensitivity=1.0, epsilon=EPSILON * factor)
            return rng.choice(u.size, size=size, p=p)  # exact law of the mechanism (audited in the tests by sampling)
        return mech, np.array([0.0, 1, 1, 1, 1, 1, 1, 1]), np.array([1.0, 0, 0, 0, 0, 0, 0, 0]), EPSILON, 0.0, True
    if name == "top_m":
        # changing one score moves only subsets containing it, one way: the mechanism is (eps/2)-DP here
        def mech(scores, size, rng):
            m = TopMExponentialMechanism(scores / 2, 2, sensitivity=0.5, epsilon=2 * EPSILON * factor)
            return (1 << m.sample(size=size, random_state=rng)).sum(axis=1)
        return mech, np.array([0.0, 1, 1, 1, 1]), np.ones(5), EPSILON, 0.0, True
    raise ValueError(f"unknown mechanism {name!r}")


def audit_task(cell: dict[str, Any], seed: int) -> dict[str, float]:
    """Audit one mechanism (honest or broken) with one seed.

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
    mech, a, b, claimed, delta, discrete = _mechanism(cell["mechanism"], cell["noise"] == "half")
    rng = task_rng("privacy-audit", cell, seed)
    result = audit_epsilon(mech, a, b, n_samples=int(cell["n_samples"]), delta=delta, discrete=discrete, random_state=rng)
    return {
        "claimed_epsilon": claimed,
        "audit_lower_bound": result.epsilon_lower_bound,
        "violation_found": float(result.epsilon_lower_bound > claimed),
    }


def audit_figures(results: pd.DataFrame, folder: Path) -> list[FigureInfo]:
    """Draw each mechanism's audit lower bound against its claimed epsilon.

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

    wide = results.pivot_table(index=["mechanism", "noise"], columns="metric", values="value", aggfunc="mean").reset_index()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.38
    x = np.arange(len(MECHANISMS))
    for j, (noise, color) in enumerate((("calibrated", "#3b7dd8"), ("half", "#d8553b"))):
        sub = wide[wide["noise"] == noise].set_index("mechanism").reindex(MECHANISMS)
        ax.bar(x + (j - 0.5) * width, sub["audit_lower_bound"], width, color=color,
               label="correct noise" if noise == "calibrated" else "half the noise / 2x epsilon")
    ax.axhline(EPSILON, color="black", lw=1, ls="--", label="claimed epsilon")
    ax.set_xticks(x, ["Laplace", "Gaussian", "exponential", "top-m (eps/2 claim)"])
    ax.set_ylabel("audit lower bound on epsilon")
    ax.set_title("Empirical privacy audit (95% Clopper-Pearson, Bonferroni)")
    ax.legend(fontsize=8)
    return [save_figure(fig, folder, "privacy_audit.png",
                        "Audit lower bounds: honest mechanisms stay under their claim; broken ones are caught.")]


def audit_tables(results: pd.DataFrame) -> list[TableInfo]:
    """Tabulate the mean audit lower bound by mechanism and noise.

    Parameters
    ----------
    results : pandas.DataFrame
        The experiment's result rows.

    Returns
    -------
    list of TableInfo
        The tables for the report.
    """
    wide = results.pivot_table(index=["mechanism", "noise"], columns="metric", values="value", aggfunc="mean")
    return [TableInfo("Audit lower bound (mean over seeds)", wide.round(3), "A violation is a lower bound above the claim.")]


def audit_verdict(results: pd.DataFrame, paper: Mapping[str, PaperValue]) -> Verdict:
    """Check dpfair's own claim: no honest mechanism exceeds its epsilon and every broken one is caught.

    Parameters
    ----------
    results : pandas.DataFrame
        The result rows of ``privacy-audit``.
    paper : mapping of str to PaperValue
        Empty: no paper prints numbers for this experiment.

    Returns
    -------
    Verdict
        ``matches`` when no calibrated mechanism shows a violation and every broken one does, else
        ``differs`` naming the mechanisms.
    """
    wide = results.pivot_table(index=["mechanism", "noise"], columns="metric", values="value", aggfunc="max")
    found = wide["violation_found"]
    honest = [m for (m, noise), v in found.items() if noise == "calibrated" and v > 0]
    missed = [m for (m, noise), v in found.items() if noise != "calibrated" and v == 0]
    n_broken = sum(1 for (_, noise) in found.index if noise != "calibrated")
    if honest or missed:
        parts = [f"honest mechanism(s) over their claim: {', '.join(honest)}"] if honest else []
        parts += [f"broken mechanism(s) not caught: {', '.join(missed)}"] if missed else []
        return Verdict("differs", "; ".join(parts) + " (no paper figure: the claim is dpfair's own).")
    return Verdict("matches", f"no honest mechanism exceeds its claim and all {n_broken} broken ones are caught "
                              "(no paper figure: the claim is dpfair's own).")


SPEC = register(
    ExperimentSpec(
        id="privacy-audit",
        title="Empirical privacy audit of every mechanism in dpfair.privacy",
        reproduces="dpfair privacy core (no paper figure)",
        dataset="synthetic",
        algorithms=MECHANISMS,
        grid={"mechanism": MECHANISMS, "noise": ("calibrated", "half"), "n_samples": (500_000,)},
        seeds=tuple(range(10)),
        quick_grid={"mechanism": MECHANISMS, "noise": ("calibrated", "half"), "n_samples": (50_000,)},
        quick_seeds=(0, 1),
        metrics=("claimed_epsilon", "audit_lower_bound", "violation_found"),
        task=audit_task,
        figures=audit_figures,
        tables=audit_tables,
        verdict=audit_verdict,
        privacy="epsilon = 1 per mechanism (Gaussian: delta = delta(sigma=1, eps=1) = 0.127); top-m audited against eps/2",
    )
)
