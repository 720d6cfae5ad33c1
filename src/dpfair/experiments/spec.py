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

__all__ = [
    "ExperimentSpec",
    "FigureInfo",
    "PaperValue",
    "TableInfo",
    "Verdict",
    "VerdictRow",
    "cell_key",
    "save_figure",
    "task_rng",
]


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
class PaperValue:
    """A number as a paper prints it, and where.

    Parameters
    ----------
    printed : str
        The number exactly as printed (``"2.76"``, ``"0.50"``, ``"12.5%"``); verdicts quote it so.
    where : str
        Where the paper prints it (``"Table 1"``, ``"Figure 3"``, ``"Section 6.5"``).

    Examples
    --------
    >>> PaperValue("12.5%", "Table 3").value
    0.125
    """

    printed: str
    where: str

    @property
    def value(self) -> float:
        """The printed number as a float (a percentage as a fraction: ``"12.5%"`` is 0.125).

        Returns
        -------
        float
            The number.

        Raises
        ------
        ValueError
            If ``printed`` is not a number.
        """
        text = self.printed.strip()
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)


#: Statuses of a :class:`VerdictRow`.
ROW_STATUSES = ("matches", "differs")
#: Statuses of a :class:`Verdict`.
VERDICT_STATUSES = ("matches", "differs", "not run", "not checked")


@dataclass(frozen=True)
class VerdictRow:
    """One printed number of a paper against the value an experiment measured.

    Parameters
    ----------
    quantity : str
        What is compared (``"Table 1, m = 1: eps_o"``).
    status : {"matches", "differs"}
        Whether ``measured`` is within the check's tolerance of ``printed``.
    measured : str
        The experiment's value, formatted as the check shows it.
    printed : str
        The paper's value as printed (:attr:`PaperValue.printed`).
    where : str, default ""
        Where the paper prints it (:attr:`PaperValue.where`).
    tolerance : str, default ""
        The tolerance of the comparison, in words (``"within 10 %"``).
    comment : str, default ""
        Why the two differ, or what the printed value means (``"no perfectly fair epsilon"``).

    Raises
    ------
    ValueError
        If ``status`` is not ``"matches"`` or ``"differs"``.
    """

    quantity: str
    status: str
    measured: str
    printed: str
    where: str = ""
    tolerance: str = ""
    comment: str = ""

    def __post_init__(self) -> None:
        if self.status not in ROW_STATUSES:
            raise ValueError(f"status must be one of {ROW_STATUSES}, got {self.status!r}.")


@dataclass(frozen=True)
class Verdict:
    """The judgement of one experiment's results against its paper: the report's verdict column.

    Parameters
    ----------
    status : {"matches", "differs", "not run", "not checked"}
        *matches*: every number the paper prints is reproduced within the stated tolerance;
        *differs*: at least one is not (``detail`` says which, quoting the paper as printed);
        *not run*: no results (``detail`` says why: data missing or corrupt, or not yet run);
        *not checked*: the paper prints no numbers for it (compare the figures).
    detail : str
        The reason, in words.
    rows : tuple of VerdictRow, default ()
        The printed numbers compared one by one (the report shows them as a table in the experiment's section).

    Raises
    ------
    ValueError
        If ``status`` is not one of the four.
    """

    status: str
    detail: str
    rows: tuple[VerdictRow, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in VERDICT_STATUSES:
            raise ValueError(f"status must be one of {VERDICT_STATUSES}, got {self.status!r}.")
        object.__setattr__(self, "rows", tuple(self.rows))

    @classmethod
    def from_rows(cls, rows: Sequence[VerdictRow], note: str = "") -> Verdict:
        """Summarize compared numbers: *differs* naming each that differs, else *matches*.

        Parameters
        ----------
        rows : sequence of VerdictRow
            The numbers compared (at least one).
        note : str, default ""
            A sentence appended to the detail (for example why the numbers may differ).

        Returns
        -------
        Verdict
            ``"differs"`` with ``"k of n printed numbers: <quantity> <measured>, printed <printed>; ..."``
            when any row differs, else ``"matches"`` with ``"all n printed numbers within tolerance."``;
            ``rows`` kept.

        Raises
        ------
        ValueError
            If ``rows`` is empty.

        Examples
        --------
        >>> row = VerdictRow("Table 1: accuracy", "differs", "0.81", "0.90", "Table 1")
        >>> Verdict.from_rows([row]).detail
        '1 of 1 printed numbers: Table 1: accuracy 0.81, printed 0.90.'
        """
        rows = tuple(rows)
        if not rows:
            raise ValueError("from_rows needs at least one compared number.")
        differs = [r for r in rows if r.status == "differs"]
        tail = f" {note}" if note else ""
        if differs:
            listed = "; ".join(
                f"{r.quantity} {r.measured}, printed {r.printed}" + (f" ({r.comment})" if r.comment else "") for r in differs
            )
            return cls("differs", f"{len(differs)} of {len(rows)} printed numbers: {listed}.{tail}", rows)
        return cls("matches", f"all {len(rows)} printed numbers within tolerance.{tail}", rows)


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
    paper_values : mapping of str to PaperValue, optional
        The numbers the paper prints for this experiment, by name (a metric name, or one with the cell it
        belongs to, such as ``"epsilon_o[m=1]"``), each with where it is printed; handed to ``verdict``.
    verdict : callable, optional
        ``verdict(results: DataFrame, paper_values: Mapping[str, PaperValue]) -> Verdict``: the experiment's
        own check of its results against what the paper prints or claims (the report's verdict column),
        usually with one :class:`VerdictRow` per printed number.  Without it the report says *not checked*.
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
    paper_values: Mapping[str, PaperValue] = field(default_factory=dict)
    verdict: Callable[[pd.DataFrame, Mapping[str, PaperValue]], Verdict] | None = None

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
