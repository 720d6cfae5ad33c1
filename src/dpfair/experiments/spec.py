"""Declarative experiment specifications.

An experiment is data: an id, the paper figure or table it reproduces, the dataset, the
algorithms, a parameter grid, seeds, metrics, a *quick* variant and the *full* variant the
paper used.  The runner turns it into one task per (cell, seed); ``task`` computes the
metrics of one task and must be a module-level function (tasks run in other processes).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ExperimentSpec", "FigureInfo", "TableInfo", "cell_key", "save_figure", "task_rng"]


@dataclass(frozen=True)
class FigureInfo:
    """A figure written by an experiment.

    Parameters
    ----------
    filename : str
        File name inside the report's figure folder.
    caption : str
        Caption shown under the figure.
    """

    filename: str
    caption: str


#: Smallest legend font size (points) of a report figure.
MIN_LEGEND_FONTSIZE = 8.0


def save_figure(fig: Any, folder: Path, filename: str, caption: str, dpi: int = 115) -> FigureInfo:
    """Lay out, save as PNG in ``folder``, close, and describe a matplotlib figure.

    Legend text is raised to at least :data:`MIN_LEGEND_FONTSIZE` points, so no figure of the report
    has unreadable legends whatever its module chose.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure; it is closed afterwards.
    folder : pathlib.Path
        Folder to write into.
    filename : str
        File name of the PNG.
    caption : str
        Caption for the report.
    dpi : int, default 115
        Resolution.

    Returns
    -------
    FigureInfo
        ``filename`` and ``caption``.
    """
    import matplotlib.pyplot as plt

    for ax in fig.axes:
        legend = ax.get_legend()
        for text in legend.get_texts() if legend is not None else ():
            if text.get_fontsize() < MIN_LEGEND_FONTSIZE:
                text.set_fontsize(MIN_LEGEND_FONTSIZE)
    fig.tight_layout()
    fig.savefig(Path(folder) / filename, dpi=dpi)
    plt.close(fig)
    return FigureInfo(filename, caption)


@dataclass(frozen=True)
class TableInfo:
    """A table for the report.

    Parameters
    ----------
    title : str
        Heading above the table.
    table : pandas.DataFrame
        The table itself.
    note : str, default ""
        A note under the table (for example on the paper's numbers).
    """

    title: str
    table: pd.DataFrame
    note: str = ""


@dataclass(frozen=True)
class ExperimentSpec:
    """One reproducible experiment.

    Parameters
    ----------
    id : str
        Short unique name used on the command line.
    title : str
        One-line description.
    reproduces : str
        The paper and the figure or table it reproduces.
    dataset : str
        ``"synthetic"`` or a dataset name of :data:`dpfair.datasets.DATASETS`.
    algorithms : tuple of str
        Algorithms compared.
    grid : mapping of str to sequence
        The full parameter grid (cells are its Cartesian product).
    seeds : sequence of int
        Seeds of the full variant.
    metrics : tuple of str
        Metric names every task returns.
    task : callable
        ``task(cell: dict, seed: int) -> dict[str, float]``; a module-level function.
    quick_grid : mapping, optional
        Grid of the quick variant (defaults to ``grid``).
    quick_seeds : sequence of int, default (0,)
        Seeds of the quick variant.
    figures : callable, optional
        ``figures(results: DataFrame, folder: Path) -> list[FigureInfo]``.
    tables : callable, optional
        ``tables(results: DataFrame) -> list[TableInfo]``.
    privacy : str, default ""
        Privacy parameters, in words, for the report.
    requires_data : tuple of str, default ()
        Dataset names whose files must be in the data home.
    verdict : callable, optional
        ``verdict(results: DataFrame) -> dpfair.experiments.report.Verdict``: the experiment's own check of
        its results against what the paper prints or claims (the report's verdict column).
    """

    id: str
    title: str
    reproduces: str
    dataset: str
    algorithms: tuple[str, ...]
    grid: Mapping[str, Sequence[Any]]
    seeds: Sequence[int]
    metrics: tuple[str, ...]
    task: Callable[[dict[str, Any], int], dict[str, float]]
    quick_grid: Mapping[str, Sequence[Any]] | None = None
    quick_seeds: Sequence[int] = (0,)
    figures: Callable[[pd.DataFrame, Path], list[FigureInfo]] | None = None
    tables: Callable[[pd.DataFrame], list[TableInfo]] | None = None
    privacy: str = ""
    requires_data: tuple[str, ...] = field(default_factory=tuple)
    verdict: Callable[[pd.DataFrame], Any] | None = None

    def cells(self, quick: bool) -> list[dict[str, Any]]:
        """Every parameter combination of the chosen variant.

        Parameters
        ----------
        quick : bool
            Use the quick grid (when there is one).

        Returns
        -------
        list of dict
            One dict per cell of the Cartesian product of the grid, in grid order.
        """
        grid = self.quick_grid if (quick and self.quick_grid is not None) else self.grid
        keys = list(grid)
        return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]

    def seed_list(self, quick: bool, n_seeds: int | None = None) -> list[int]:
        """Return the seeds of the chosen variant.

        Parameters
        ----------
        quick : bool
            Use the quick variant's seeds.
        n_seeds : int, optional
            Keep the first ``n_seeds`` seeds, or extend the sequence with the next integers.

        Returns
        -------
        list of int
            The seeds.

        Raises
        ------
        ValueError
            If ``n_seeds < 1``.
        """
        base = list(self.quick_seeds if quick else self.seeds)
        if n_seeds is None:
            return base
        if n_seeds < 1:
            raise ValueError(f"--seeds must be >= 1, got {n_seeds}.")
        if n_seeds <= len(base):
            return base[:n_seeds]
        start = max(base) + 1 if base else 0
        return base + list(range(start, start + n_seeds - len(base)))


def cell_key(cell: Mapping[str, Any]) -> str:
    """Canonical JSON text of a cell (the key of its rows in the results store).

    Parameters
    ----------
    cell : mapping of str to value
        Parameter values of one cell.

    Returns
    -------
    str
        JSON with sorted keys.
    """
    return json.dumps(dict(cell), sort_keys=True, default=float)


def task_rng(experiment_id: str, cell: Mapping[str, Any], seed: int) -> np.random.Generator:
    """A generator determined by (experiment, cell, seed) only: identical on every worker.

    Parameters
    ----------
    experiment_id : str
        The experiment's id.
    cell : mapping of str to value
        The cell's parameters.
    seed : int
        The seed.

    Returns
    -------
    numpy.random.Generator
        Seeded from a SHA-256 digest of the three.
    """
    digest = hashlib.sha256(f"{experiment_id}|{cell_key(cell)}|{seed}".encode()).digest()
    return np.random.default_rng(np.frombuffer(digest, dtype=np.uint32))
