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
    """A figure written by an experiment: file name (inside the figure folder) and caption."""

    filename: str
    caption: str


def save_figure(fig: Any, folder: Path, filename: str, caption: str, dpi: int = 115) -> FigureInfo:
    """Lay out, save as PNG in ``folder``, close, and describe a matplotlib figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(Path(folder) / filename, dpi=dpi)
    plt.close(fig)
    return FigureInfo(filename, caption)


@dataclass(frozen=True)
class TableInfo:
    """A table for the report: title, the table itself and a note (for example on paper numbers)."""

    title: str
    table: pd.DataFrame
    note: str = ""


@dataclass(frozen=True)
class ExperimentSpec:
    """One reproducible experiment.

    Attributes
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
    quick_grid : mapping, optional
        Grid of the quick variant (defaults to ``grid``).
    quick_seeds : sequence of int
        Seeds of the quick variant.
    metrics : tuple of str
        Metric names every task returns.
    task : callable
        ``task(cell: dict, seed: int) -> dict[str, float]``.
    figures : callable, optional
        ``figures(results: DataFrame, folder: Path) -> list[FigureInfo]``.
    tables : callable, optional
        ``tables(results: DataFrame) -> list[TableInfo]``.
    privacy : str
        Privacy parameters, in words, for the report.
    requires_data : tuple of str
        Dataset names whose files must be in the data home.
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

    def cells(self, quick: bool) -> list[dict[str, Any]]:
        """Every parameter combination of the chosen variant."""
        grid = self.quick_grid if (quick and self.quick_grid is not None) else self.grid
        keys = list(grid)
        return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]

    def seed_list(self, quick: bool, n_seeds: int | None = None) -> list[int]:
        """Seeds of the chosen variant; ``n_seeds`` keeps the first ones (or extends the sequence)."""
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
    """Canonical JSON text of a cell (the key of its rows in the results store)."""
    return json.dumps(dict(cell), sort_keys=True, default=float)


def task_rng(experiment_id: str, cell: Mapping[str, Any], seed: int) -> np.random.Generator:
    """A generator determined by (experiment, cell, seed) only: identical on every worker."""
    digest = hashlib.sha256(f"{experiment_id}|{cell_key(cell)}|{seed}".encode()).digest()
    return np.random.default_rng(np.frombuffer(digest, dtype=np.uint32))
