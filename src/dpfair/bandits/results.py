"""Results of the bandit simulators: per-seed curves, mean and standard error, bands in a figure.

:class:`SimulationResult` is the common base of :class:`BanditResult` (group meritocratic
selection, :func:`dpfair.bandits.simulate`) and of the federated simulator's result: each holds
named ``(n_methods, n_seeds, horizon)`` cumulative curves, the method names, the seeds and the
privacy each method spent, and offers the same summaries and plots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from dpfair._validation import as_finite_array, check_int

__all__ = ["BanditResult", "SimulationResult", "mean_and_standard_error"]


def mean_and_standard_error(values: Any, axis: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Mean over seeds and its standard error ``std(ddof=1) / sqrt(n)`` (0 for a single seed).

    Parameters
    ----------
    values : array-like
        Values with one axis over seeds.
    axis : int, default 1
        The seed axis (axis 1 of ``(n_methods, n_seeds, ...)`` arrays).

    Returns
    -------
    mean : numpy.ndarray
        Mean over seeds (the seed axis removed).
    standard_error : numpy.ndarray
        Its standard error, same shape.
    """
    values = as_finite_array(values, "values")
    axis = check_int(axis, "axis")
    if not -values.ndim <= axis < values.ndim:
        raise ValueError(f"axis={axis} is out of range for values of shape {values.shape}; pass the seed axis.")
    n = values.shape[axis]
    with np.errstate(over="ignore", invalid="ignore"):
        mean = values.mean(axis=axis)
        if not np.isfinite(mean).all():  # values near the float64 limit: divide before summing
            mean = (values / n).sum(axis=axis)
        if n < 2:
            return mean, np.zeros_like(mean)
        std = values.std(axis=axis, ddof=1)
        if not np.isfinite(std).all():
            # the standard deviation of values / scale (in [-1, 1]) times scale: no overflow in the squares
            scale = np.abs(values).max(axis=axis, keepdims=True)
            scale = np.where(scale > 0, scale, 1.0)
            std = (values / scale).std(axis=axis, ddof=1) * np.squeeze(scale, axis=axis)
    if not (np.isfinite(mean).all() and np.isfinite(std).all()):
        raise ValueError("values are too large: their standard error overflows float64; rescale the values.")
    return mean, std / math.sqrt(n)


@dataclass
class SimulationResult:
    """Curves of several methods over seeds and rounds.

    Subclasses name their curves in ``_curves`` and their method axis in ``_names_attribute``.

    Parameters
    ----------
    seeds : tuple of int
        The seeds, in the order of axis 1 of every curve.
    privacy_spent : dict
        Per method name, the privacy it spent (``{"epsilon": ..., "delta": ...}``): ``epsilon = inf``
        for a method that learns from the data without noise (it protects nothing), ``0`` for one
        that reads no data at all (the random policy).
    """

    seeds: tuple[int, ...]
    privacy_spent: dict[str, dict[str, float]] = field(default_factory=dict)

    _curves: ClassVar[tuple[str, ...]] = ()
    _names_attribute: ClassVar[str] = "names"

    @property
    def names(self) -> tuple[str, ...]:
        """The method names, in the order of axis 0 of every curve.

        Returns
        -------
        tuple of str
            Method names.
        """
        return tuple(getattr(self, self._names_attribute))

    def curve(self, metric: str) -> np.ndarray:
        """The ``(n_methods, n_seeds, horizon)`` array of one cumulative metric.

        Parameters
        ----------
        metric : str
            One of the result's curve names.

        Returns
        -------
        numpy.ndarray
            The curves.
        """
        if not isinstance(metric, str) or metric not in self._curves:
            raise ValueError(f"metric must be one of {self._curves}, got {metric!r}.")
        return np.asarray(getattr(self, metric))

    def final(self, metric: str) -> pd.DataFrame:
        """Final value (round ``T``) of a cumulative metric: mean and standard error per method.

        Parameters
        ----------
        metric : str
            One of the result's curve names.

        Returns
        -------
        pandas.DataFrame
            Index: method names; columns ``mean``, ``se``, ``n_seeds``.
        """
        mean, se = mean_and_standard_error(self.curve(metric)[:, :, -1])
        return pd.DataFrame({"mean": mean, "se": se, "n_seeds": len(self.seeds)}, index=pd.Index(self.names, name="method"))

    def plot(self, metric: str, ax: Any = None, *, n_points: int = 400, **kwargs: Any) -> Any:
        """Mean curve of each method with a one-standard-error band.

        Parameters
        ----------
        metric : str
            One of the result's curve names.
        ax : matplotlib.axes.Axes, optional
            Axes to draw on (a new figure when omitted).
        n_points : int, default 400
            Rounds drawn per curve (evenly spaced, the last round included).
        **kwargs
            Passed to ``Axes.plot``.

        Returns
        -------
        matplotlib.axes.Axes
            The axes.
        """
        import matplotlib.pyplot as plt

        n_points = check_int(n_points, "n_points", minimum=1)
        if ax is None:
            _, ax = plt.subplots(figsize=(5.5, 4.0))
        values = self.curve(metric)
        horizon = values.shape[-1]
        rounds = np.unique(np.linspace(0, horizon - 1, min(n_points, horizon)).round().astype(int))
        mean, se = mean_and_standard_error(values[..., rounds])
        for i, name in enumerate(self.names):
            (line,) = ax.plot(rounds + 1, mean[i], label=name, **kwargs)
            ax.fill_between(rounds + 1, mean[i] - se[i], mean[i] + se[i], color=line.get_color(), alpha=0.2, lw=0)
        ax.set_xlabel("round t")
        ax.set_ylabel(metric.replace("_", " "))
        ax.legend(fontsize=8)
        return ax


@dataclass
class BanditResult(SimulationResult):
    """Result of :func:`dpfair.bandits.simulate` (group meritocratic online selection).

    Parameters
    ----------
    seeds : tuple of int
        The seeds, in the order of axis 1 of every curve.
    privacy_spent : dict
        Per policy, the privacy it spent.
    policy_names : tuple of str
        Policies, in the order of axis 0.
    fair_regret : numpy.ndarray
        Cumulative fair pseudo-regret, shape ``(n_policies, n_seeds, horizon)``.
    regret : numpy.ndarray
        Cumulative reward pseudo-regret, same shape.
    selections : numpy.ndarray
        Number of rounds each group's candidate was chosen, shape ``(n_policies, n_seeds, n_groups)``.
    """

    policy_names: tuple[str, ...] = ()
    fair_regret: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    regret: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    selections: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))

    _curves: ClassVar[tuple[str, ...]] = ("fair_regret", "regret")
    _names_attribute: ClassVar[str] = "policy_names"

    def selection_share(self) -> pd.DataFrame:
        """Share of rounds each group was selected: mean and standard error over seeds.

        Returns
        -------
        pandas.DataFrame
            Index: policy names; columns ``(statistic, group)`` with statistics ``mean`` and ``se``.
        """
        share = self.selections / np.maximum(self.selections.sum(axis=-1, keepdims=True), 1)
        mean, se = mean_and_standard_error(share)
        groups = range(share.shape[-1])
        columns = pd.MultiIndex.from_product([("mean", "se"), groups], names=["statistic", "group"])
        return pd.DataFrame(np.hstack([mean, se]), index=pd.Index(self.names, name="policy"), columns=columns)
