"""A public benchmark suite of fair classification tasks: every private classifier on its defaults, beside references.

One command runs every task at every epsilon over seeded 2/3 - 1/3 splits and writes a CSV of every fit, a
Markdown and an RST table of the medians, and a PNG plot::

    DPFAIR_DATA_HOME=/path/to/data OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/fairness_suite.py \\
        [--quick] [--tasks adult-sex acs-race ...] [--epsilons 0.5 1 2 5] [--splits 5] [--out DIR]

and on any table a user has (the held-out check: data the team does not have)::

    .venv/bin/python benchmarks/fairness_suite.py --data credit.csv --target default --sensitive sex \\
        --groups female male [--positive 1] [--ranges age:18:100 income:0:1e6]
    .venv/bin/python benchmarks/fairness_suite.py --task-function mymodule:make_task

Protocol
--------
* **Tasks** (:data:`TASKS`): Adult by sex and by race; the NIST ACS 2019 excerpt (income > 50,000) by race in
  four groups and by sex; Communities & Crime (race, Kearns et al.'s binary label); Law School by race (label:
  undergraduate GPA above 3.2, the median of the LSAC sample); three synthetic stress cases (nine groups down to
  20 rows, 1,000 rows in all, a declared group with no row).  Features are scaled by public constants only (the
  documented ranges and levels of each data set), so every row's norm is within a declared bound.
* **Splits**: seeded permutations, 2/3 of the rows to train and 1/3 held out; every figure is a median over
  the splits.  The private methods draw secure noise (``random_state=None``, their default).
* **Metrics** on the held-out rows, of the *expected* prediction of randomized classifiers (their probability of
  predicting 1, no prediction noise): the error and the equalized-odds difference (fairlearn's
  ``equalized_odds_difference``: the larger, over the two labels, of the largest gap between the groups' rates of
  predicting 1; groups without held-out rows of a label are left out).
* **References** (non-private, cached per task and split under ``OUT/cache``): the best constant on the training
  labels, scikit-learn's ``LogisticRegression``, fairlearn's ``ExponentiatedGradient`` (``EqualizedOdds()``, a
  ``LogisticRegression`` learner) and ``ThresholdOptimizer(constraints="equalized_odds")`` on the logistic
  regression.  The **hand glue** is at every epsilon: a private ``DPLogisticRegression`` and then fairlearn's
  ``ThresholdOptimizer`` with the exact attribute (it protects the records in the base model only).
* **Private methods** (:func:`private_methods`): whatever exists when the suite runs, each import guarded (a
  class that is not there is listed as "not available"), on its defaults: only what a user must declare is
  passed (epsilon, the groups, the bound on the rows' norm; ``delta`` and ``gamma`` where a class has no default:
  :data:`REQUIRED_FILL`).
* **Utility share** ``u = (err_const - err) / (err_const - err_ref)``, ``ref`` fairlearn's
  ``ExponentiatedGradient`` for a method blind to the attribute at prediction and ``ThresholdOptimizer`` for one
  that uses it.  Each private row is judged (:func:`verdict`) at the thresholds of :data:`THRESHOLDS`.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import math
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: The epsilons of the suite (total epsilon of each private method).
EPSILONS = (0.5, 1.0, 2.0, 5.0)
#: Held-out share of every split.
TEST_SHARE = 1 / 3
#: Values the suite passes for a parameter a private class requires and gives no default for.
REQUIRED_FILL = {"delta": 1e-6, "gamma": 0.05}
#: The judgement of a private row: (minimum utility share, EO allowance as (floor, margin over the reference EO)).
THRESHOLDS = {
    "blind": {"u": 0.5, "eo_floor": 0.10, "eo_margin": 0.03},
    "attribute": {"u": 0.8, "eo_floor": 0.0, "eo_margin": 0.03},
    "records": {"u": 0.3, "eo_floor": 0.10, "eo_margin": 0.03, "min_train_rows": 4000},
}
#: A private method on its defaults never errs more than the constant plus this, at every epsilon >= 0.5.
CONSTANT_MARGIN = 0.005
#: Version of the reference computations: bump it when a reference changes, so cached ones are recomputed.
CACHE_VERSION = 1


# ---------------------------------------------------------------------------------------------------- tasks
@dataclass
class Task:
    """One fair classification task: public-scaled features, binary labels, a sensitive attribute, declared groups.

    Parameters
    ----------
    name : str
        Short name (used in file names and tables).
    X : ndarray of shape (n_rows, n_features)
        Features scaled by public constants; every row's Euclidean norm is at most ``x_norm_bound``.
    y : ndarray of shape (n_rows,)
        Labels in {0, 1}.
    sensitive_features : ndarray of shape (n_rows,)
        Group of every row, each one of ``groups``.
    groups : list
        The declared groups (a declared group may have no row).
    x_norm_bound : float
        Declared bound on every row's Euclidean norm.
    description : str
        Where the rows, the label and the groups come from.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    sensitive_features: np.ndarray
    groups: list
    x_norm_bound: float
    description: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.X = np.asarray(self.X, dtype=float)
        self.y = np.asarray(self.y).astype(int)
        self.sensitive_features = np.asarray(self.sensitive_features, dtype=object)
        if self.X.ndim != 2 or self.X.shape[0] != self.y.size or self.sensitive_features.size != self.y.size:
            raise ValueError(f"task {self.name!r}: X, y and sensitive_features must have one row per example.")
        if not set(np.unique(self.y)) <= {0, 1}:
            raise ValueError(f"task {self.name!r}: y must hold labels in {{0, 1}}.")
        if not np.isfinite(self.X).all():
            raise ValueError(f"task {self.name!r}: X holds NaN or infinite values; encode them first.")
        undeclared = set(self.sensitive_features.tolist()) - set(self.groups)
        if undeclared:
            raise ValueError(f"task {self.name!r}: sensitive_features hold groups that are not declared in groups.")
        if np.linalg.norm(self.X, axis=1).max(initial=0.0) > self.x_norm_bound * (1 + 1e-9):
            raise ValueError(f"task {self.name!r}: a row's norm exceeds the declared x_norm_bound.")

    def fingerprint(self) -> str:
        """A hash of the task's data and groups (the key of the cached references)."""
        digest = hashlib.sha256()
        for part in (self.X, self.y, self.sensitive_features.astype(str)):
            digest.update(np.ascontiguousarray(part).tobytes())
        digest.update(json.dumps([str(g) for g in self.groups]).encode())
        return digest.hexdigest()[:16]


def _scaled(values: Any, low: float, high: float) -> np.ndarray:
    """``values`` mapped to [0, 1] by a declared range (values outside it clipped: a fixed per-row map)."""
    return ((np.asarray(values, dtype=float) - low) / (high - low)).clip(0.0, 1.0)


def _one_hot(values: Any, levels: Sequence[Any]) -> np.ndarray:
    """One column per declared level (a value that is not a declared level is an error, never a new column)."""
    values = np.asarray(values, dtype=object)
    levels = list(levels)
    unknown = set(values.tolist()) - set(levels)
    if unknown:
        raise ValueError(f"a value is not one of the declared levels {levels[:5]}...")
    return np.column_stack([(values == level).astype(float) for level in levels])


#: Adult's numeric columns and their documented ranges (UCI adult.names and the published minima / maxima).
ADULT_RANGES = {"age": (17.0, 90.0), "education-num": (1.0, 16.0), "capital-gain": (0.0, 99999.0),
                "capital-loss": (0.0, 4356.0), "hours-per-week": (1.0, 99.0)}
#: Adult's race levels (adult.names).
ADULT_RACES = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"]


def _adult_features(frame: pd.DataFrame) -> tuple[list[np.ndarray], int]:
    """The "public" encoding of Adult (benchmarks/bench_private_pipeline.py): numeric columns by their ranges
    (capital gain and loss on a log scale), one-hot categories, native-country as United-States / other."""
    columns, n_blocks = [], 0
    for name, (low, high) in ADULT_RANGES.items():
        values = frame[name].to_numpy(float)
        columns.append(np.log1p(values) / np.log1p(high) if name.startswith("capital") else _scaled(values, low, high))
        n_blocks += 1
    categorical = frame[[c for c in frame.columns if c not in ADULT_RANGES]].astype(str).copy()
    if "native-country" in categorical:
        categorical["native-country"] = np.where(categorical["native-country"] == "United-States", "United-States",
                                                 "other")
    for name in sorted(categorical.columns):
        # the levels of adult.names; the rows hold no other (drop_missing removed the "?")
        levels = sorted(categorical[name].unique())
        columns.append(_one_hot(categorical[name].to_numpy(), levels))
        n_blocks += 1
    return columns, n_blocks


def adult_task(sensitive: str, data_home: Any = None) -> Task:
    """UCI Adult (45,222 rows), income > 50K, by ``sensitive`` ("sex": 2 groups, or "race": the 5 of adult.names)."""
    from dpfair.datasets import load_adult

    adult = load_adult(data_home=data_home, download=False)
    frame = adult.X.copy()
    if sensitive == "sex":
        groups, attribute = ["Female", "Male"], adult.sensitive.astype(str).to_numpy()
    else:
        frame["sex"] = adult.sensitive.astype(str)  # a feature when race is the attribute
        groups, attribute = list(ADULT_RACES), frame.pop("race").astype(str).to_numpy()
    columns, n_blocks = _adult_features(frame)
    # every block is one value in [0, 1] or one 1 among zeros: ||x||^2 <= the number of blocks
    return Task(f"adult-{sensitive}", np.column_stack(columns), adult.y.to_numpy(int), attribute, groups,
                math.sqrt(n_blocks), f"UCI Adult, income > 50K, groups: {sensitive}")


#: The ACS excerpt's categorical columns and their levels (data_dictionary.json; "N" is a level of its own).
ACS_LEVELS = {
    "MSP": ["N", "1", "2", "3", "4", "5", "6"],
    "EDU": ["N", *map(str, range(1, 13))],
    "INDP_CAT": ["N", *map(str, range(0, 19))],
    "DREM": ["N", "1", "2"], "DPHY": ["N", "1", "2"], "DEYE": ["1", "2"], "DEAR": ["1", "2"],
    "SEX": ["1", "2"],
}


def acs_task(sensitive: str, data_home: Any = None) -> Task:
    """The NIST ACS 2019 national excerpt, income > 50,000, by race (white, black, asian, other) or by sex."""
    from dpfair.datasets import load_acs_excerpt

    acs = load_acs_excerpt("national", data_home=data_home, download=False)
    frame = acs.X
    columns = [_scaled(frame["AGEP"], 17.0, 99.0),  # the dictionary's range; the task keeps ages above 16
               np.log(frame["DENSITY"].to_numpy(float) / 16.3).clip(0.0, None) / math.log(52864.7 / 16.3)]
    levels = dict(ACS_LEVELS)
    if sensitive == "sex":
        attribute = frame["SEX"].map({1.0: "male", 2.0: "female"}).to_numpy()
        groups = ["female", "male"]
        levels.pop("SEX")
        columns.append(_one_hot(acs.sensitive.to_numpy(), ["white", "black", "asian", "other"]))  # race, a feature
    else:
        attribute, groups = acs.sensitive.to_numpy(), ["white", "black", "asian", "other"]
    for name, declared in levels.items():
        codes = frame[name].map(lambda v: "N" if pd.isna(v) else str(int(v))).to_numpy()
        columns.append(_one_hot(codes, declared))
    X = np.column_stack(columns)
    return Task(f"acs-{sensitive}", X, acs.y.to_numpy(int), attribute, groups, math.sqrt(2 + len(levels) + (
        sensitive == "sex")), f"NIST ACS 2019 national excerpt, income > 50,000, groups: {sensitive}")


def communities_task(data_home: Any = None) -> Task:
    """Communities & Crime as Kearns et al. (2018) prepared it: 1,994 rows, A = racepctblack above its median."""
    from dpfair.datasets import load_communities

    data = load_communities("kearns", data_home=data_home, download=False)
    X = data.X.to_numpy(float)  # normalized to [0, 1] by the UCI publication (missing -> 0)
    return Task("communities", X, data.y.to_numpy(int), data.sensitive.to_numpy(), [0, 1], math.sqrt(X.shape[1]),
                "Communities & Crime (Kearns et al.), violent crime above its 70th percentile, A: racepctblack high")


def law_school_task(data_home: Any = None) -> Task:
    """LSAC Law School by race (4 groups); label: undergraduate GPA above 3.2 (the median of the LSAC sample).

    Features: LSAT (scaled by its range 10-48), gender (a missing one is 0.5, a declared fill) and bar passage;
    the data set's own neural-network prediction is left out.
    """
    from dpfair.datasets import load_law_school
    from dpfair.datasets.loaders import LAW_GROUPS

    data = load_law_school(data_home=data_home, download=False)
    X = np.column_stack([_scaled(data.X["lsat"], 10.0, 48.0), data.X["male"].fillna(0.5).to_numpy(float),
                         data.X["pass_bar"].to_numpy(float)])
    return Task("law-school-race", X, (data.y.to_numpy(float) > 3.2).astype(int), data.sensitive.to_numpy(),
                list(LAW_GROUPS), math.sqrt(3), "LSAC Law School, undergraduate GPA > 3.2, groups: race (4)")


def synthetic_task(name: str, group_sizes: Sequence[int], *, n_declared_groups: int | None = None,
                   n_features: int = 6, seed: int = 0) -> Task:
    """Seeded synthetic data: features in [0, 1], groups of the given sizes whose features and base rates differ.

    Parameters
    ----------
    name : str
        The task's name.
    group_sizes : sequence of int
        Rows of each group (group ``g`` is labelled ``"g{g}"``).
    n_declared_groups : int or None, default None
        Number of declared groups (more than ``len(group_sizes)``: the last ones have no row).
    n_features : int, default 6
        Number of features.
    seed : int, default 0
        Seed of the generator.

    Returns
    -------
    Task
        The task (bound ``sqrt(n_features)``).
    """
    rng = np.random.default_rng(seed)
    n_groups = len(group_sizes)
    declared = n_declared_groups or n_groups
    group = np.repeat(np.arange(n_groups), group_sizes)
    shift = np.linspace(-0.15, 0.15, n_groups)[group]
    X = (rng.uniform(size=(group.size, n_features)) + shift[:, None] * (np.arange(n_features) < 2)).clip(0.0, 1.0)
    weights = np.linspace(2.5, -1.0, n_features)
    # a feature signal of logit standard deviation 1.7, and base rates that differ between the groups
    logits = 6.0 * (X - 0.5) @ weights / np.linalg.norm(weights) + np.linspace(-0.8, 0.8, n_groups)[group]
    y = (rng.uniform(size=group.size) < 1 / (1 + np.exp(-logits))).astype(int)
    order = rng.permutation(group.size)
    labels = np.array([f"g{g}" for g in range(declared)], dtype=object)
    return Task(name, X[order], y[order], labels[group[order]], labels.tolist(), math.sqrt(n_features),
                f"synthetic: {group.size} rows, group sizes {list(group_sizes)}, {declared} declared groups")


def fico_credit_task(n_rows: int = 1000, groups: Sequence[str] = ("white", "black"), seed: int = 0,
                     data_home: Any = None) -> Task:
    """A held-out credit task drawn from the FICO TransRisk aggregates (Hardt, Price & Srebro 2016).

    No default of dpfair was tuned on it: ``n_rows`` people drawn with the published group shares, each a score
    from their group's published score distribution and a label "repays" from the published non-default rate at
    that score.  Run it with ``--task-function benchmarks/fairness_suite.py:fico_credit_task`` (1,000 rows, two
    groups, the shape of a small credit data set).

    Parameters
    ----------
    n_rows : int, default 1000
        Rows drawn.
    groups : sequence of str, default ("white", "black")
        FICO's groups to draw from (their published totals give the shares).
    seed : int, default 0
        Seed of the draw.
    data_home : str or path-like, optional
        Folder holding the FICO files.

    Returns
    -------
    Task
        Features: the score and its square (both in [0, 1]); label 1 = repays.
    """
    from dpfair.datasets import load_fico

    fico = load_fico(data_home=data_home, download=False)
    groups = list(groups)
    rng = np.random.default_rng(seed)
    shares = fico.totals[groups].to_numpy(float)
    group = rng.choice(len(groups), size=n_rows, p=shares / shares.sum())
    score_index = np.array([rng.choice(fico.scores.size, p=fico.pmf[groups[g]].to_numpy()) for g in group])
    repays = fico.non_default.to_numpy()[score_index, [fico.groups.index(groups[g]) for g in group]]
    y = (rng.uniform(size=n_rows) < repays).astype(int)
    score = fico.scores[score_index]
    return Task("fico-credit", np.column_stack([score, score**2]), y, np.asarray(groups, dtype=object)[group], groups,
                math.sqrt(2), f"FICO TransRisk draw: {n_rows} rows, groups {groups}, label repays")



def bar_passage_task(data_home: Any = None) -> Task:
    """A held-out task of extreme label imbalance: Law School bar passage (95 % pass) by race (4 groups).

    The suite's Law School task predicts the undergraduate GPA; this one predicts ``pass_bar`` from LSAT (scaled
    by its range 10-48), gender (a missing one 0.5) and the undergraduate GPA (scaled by its range 1.5-4.0).  No
    default was tuned on it.  Every fair reference is the constant here (ExponentiatedGradient beats it by under 0.001),
    so the utility share has no scale and the rows are judged on EO and the constant rule.  Run it with
    ``--task-function benchmarks/fairness_suite.py:bar_passage_task``.

    Parameters
    ----------
    data_home : str or path-like, optional
        Folder holding the Law School file.

    Returns
    -------
    Task
        21,983 rows; label 1 = passed the bar.
    """
    from dpfair.datasets import load_law_school
    from dpfair.datasets.loaders import LAW_GROUPS

    data = load_law_school(data_home=data_home, download=False)
    X = np.column_stack([_scaled(data.X["lsat"], 10.0, 48.0), data.X["male"].fillna(0.5).to_numpy(float),
                         _scaled(data.y, 1.5, 4.0)])
    return Task("bar-passage", X, data.X["pass_bar"].to_numpy(int), data.sensitive.to_numpy(), list(LAW_GROUPS),
                math.sqrt(3), "LSAC Law School, passed the bar (95 %), groups: race (4)")


def weak_signal_task(seed: int = 11) -> Task:
    """A held-out task of weak signal: the synthetic generator, 3 groups of 3,000 / 1,500 / 500, 30 % labels redrawn.

    Each label is replaced, with probability 0.3, by a fair coin: the best fair classifier is then only a few points
    better than the constant (ExponentiatedGradient 0.377 against 0.408), the regime where a private method's noise
    is as large as the signal.  No default was tuned on it.  Run it with
    ``--task-function benchmarks/fairness_suite.py:weak_signal_task``.

    Parameters
    ----------
    seed : int, default 11
        Seed of the generator (the redrawn labels use ``seed - 6``).

    Returns
    -------
    Task
        5,000 rows, 8 features in [0, 1].
    """
    task = synthetic_task("weak-signal", (3000, 1500, 500), n_features=8, seed=seed)
    rng = np.random.default_rng(seed - 6)
    redrawn = rng.uniform(size=task.y.size) < 0.3
    y = np.where(redrawn, rng.integers(0, 2, task.y.size), task.y)
    return Task("weak-signal", task.X, y, task.sensitive_features, task.groups, task.x_norm_bound,
                "synthetic, weak signal: 5,000 rows, 3 groups, 30 % of labels redrawn")


#: Nine groups from 2,000 rows down to 20 (5,030 rows in all).
NINE_GROUP_SIZES = (2000, 1200, 700, 450, 300, 200, 110, 50, 20)

#: name -> builder(data_home): the suite's tasks.
TASKS: dict[str, Callable[[Any], Task]] = {
    "adult-sex": lambda home: adult_task("sex", home),
    "adult-race": lambda home: adult_task("race", home),
    "acs-race": lambda home: acs_task("race", home),
    "acs-sex": lambda home: acs_task("sex", home),
    "communities": communities_task,
    "law-school-race": law_school_task,
    "synthetic-9-groups": lambda home: synthetic_task("synthetic-9-groups", NINE_GROUP_SIZES, seed=1),
    "synthetic-1000-rows": lambda home: synthetic_task("synthetic-1000-rows", (600, 400), seed=2),
    "synthetic-empty-group": lambda home: synthetic_task("synthetic-empty-group", (2400, 1600), n_declared_groups=3,
                                                         seed=3),
}
#: The tasks of ``--quick``.
QUICK_TASKS = ("communities", "synthetic-1000-rows", "synthetic-empty-group")


def task_from_table(path: str | os.PathLike, *, target: str, sensitive: str, groups: Sequence[Any],
                    positive: Any = None, ranges: dict[str, tuple[float, float]] | None = None,
                    levels: dict[str, Sequence[Any]] | None = None, name: str | None = None) -> Task:
    """A task from a CSV or Parquet table a user has (the held-out check).

    Numeric columns are scaled to [0, 1] by ``ranges`` (declared), or by the table's own minimum and maximum
    when not declared; other columns are one-hot over ``levels`` (declared) or the table's own levels, a missing
    value being a level of its own.  Reading ranges or levels off the table is fine for a benchmark whose rows
    are not the ones to protect; declare them for a deployment.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` or ``.parquet`` file, one row per example.
    target : str
        The label column (two values; ``positive`` is the positive one, else the larger sorted value).
    sensitive : str
        The sensitive attribute column (not a feature).
    groups : sequence
        The declared groups (compared with the column's values as strings).
    positive : any, optional
        The positive label.
    ranges : dict, optional
        ``{column: (low, high)}`` for numeric columns.
    levels : dict, optional
        ``{column: [levels]}`` for categorical columns.
    name : str, optional
        The task's name (default: the file's stem).

    Returns
    -------
    Task
        The encoded task.
    """
    path = Path(path)
    frame = pd.read_parquet(path) if path.suffix in (".parquet", ".pq") else pd.read_csv(path)
    for column in (target, sensitive):
        if column not in frame:
            raise ValueError(f"column {column!r} is not in {path.name}; the columns are {list(frame.columns)}.")
    labels = frame.pop(target)
    if positive is None:
        values = sorted(labels.dropna().unique().tolist(), key=str)
        if len(values) != 2:
            raise ValueError(f"the target {target!r} must have two values (pass positive= for more).")
        positive = values[-1]
    y = (labels.astype(str) == str(positive)).to_numpy(int)
    attribute = frame.pop(sensitive).astype(str).to_numpy(dtype=object)
    groups = [str(g) for g in groups]
    ranges, levels = dict(ranges or {}), dict(levels or {})
    columns, n_blocks = [], 0
    for column in frame.columns:
        values = frame[column]
        if column not in levels and pd.api.types.is_numeric_dtype(values) and values.nunique() > 2:
            low, high = ranges.get(column, (float(values.min()), float(values.max())))
            filled = values.fillna((low + high) / 2).to_numpy(float)
            columns.append(_scaled(filled, low, high) if high > low else np.zeros(len(values)))
        else:
            codes = values.astype(object).where(values.notna(), "missing").astype(str).to_numpy()
            declared = [str(v) for v in levels.get(column, sorted(set(codes.tolist())))]
            codes = np.where(np.isin(codes, declared), codes, "other")
            columns.append(_one_hot(codes, declared + (["other"] if "other" in codes and "other" not in declared
                                                       else [])))
        n_blocks += 1
    return Task(name or path.stem, np.column_stack(columns), y, attribute, groups, math.sqrt(max(n_blocks, 1)),
                f"user table {path.name}: target {target} = {positive}, groups: {sensitive}")


def task_from_function(spec: str) -> Task:
    """A task from ``"module:function"`` (or ``"path/to/file.py:function"``): the function returns a :class:`Task`.

    Parameters
    ----------
    spec : str
        ``module:function``; the function takes no argument.

    Returns
    -------
    Task
        What the function returned (a ``(X, y, sensitive_features, groups, x_norm_bound)`` tuple is accepted too).
    """
    module_name, _, function_name = spec.rpartition(":")
    if not module_name or not function_name:
        raise ValueError(f"--task-function must be 'module:function', got {spec!r}.")
    if module_name.endswith(".py") and Path(module_name).resolve() == Path(__file__).resolve():
        module = sys.modules[__name__]  # a task of the suite itself (fico_credit_task)
    elif module_name.endswith(".py"):
        loader_spec = importlib.util.spec_from_file_location(f"user_tasks_{Path(module_name).stem}", module_name)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[loader_spec.name] = module  # dataclasses of the file look their module up by name
        loader_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    made = getattr(module, function_name)()
    if isinstance(made, Task):
        return made
    if all(hasattr(made, name) for name in ("X", "y", "sensitive_features", "groups", "x_norm_bound")):
        # a Task of another copy of this module (a file loaded by path): the same fields
        return Task(getattr(made, "name", function_name), made.X, made.y, made.sensitive_features, list(made.groups),
                    float(made.x_norm_bound), getattr(made, "description", spec))
    X, y, attribute, groups, bound = made
    return Task(function_name, X, y, attribute, list(groups), float(bound), f"{spec}")


def splits(n_rows: int, n_splits: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Seeded 2/3 - 1/3 splits: ``[(train rows, held-out rows)]`` for seeds ``0 .. n_splits - 1``."""
    out = []
    for seed in range(n_splits):
        order = np.random.default_rng(seed).permutation(n_rows)
        n_test = round(TEST_SHARE * n_rows)
        out.append((np.sort(order[n_test:]), np.sort(order[:n_test])))
    return out


# ---------------------------------------------------------------------------------------------------- metrics
def expected_metrics(positive: np.ndarray, y: np.ndarray, sensitive_features: np.ndarray) -> tuple[float, float]:
    """Expected error and equalized-odds difference of a classifier predicting 1 with probability ``positive``.

    The difference is fairlearn's ``equalized_odds_difference`` of the expected predictions: the larger, over
    the two labels, of ``max - min`` over the groups of the mean of ``positive`` (groups without a row of that
    label left out).

    Parameters
    ----------
    positive : ndarray of shape (n_rows,)
        Probability of predicting 1 for each row.
    y : ndarray of shape (n_rows,)
        Labels in {0, 1}.
    sensitive_features : ndarray of shape (n_rows,)
        Group of every row.

    Returns
    -------
    error, eo_difference : float
        Both in [0, 1].
    """
    positive = np.asarray(positive, dtype=float)
    error = float(np.mean(np.where(y == 1, 1.0 - positive, positive)))
    difference = 0.0
    for label in (0, 1):
        rates = [positive[(sensitive_features == g) & (y == label)].mean()
                 for g in pd.unique(sensitive_features) if ((sensitive_features == g) & (y == label)).any()]
        if len(rates) >= 2:
            difference = max(difference, float(max(rates) - min(rates)))
    return error, difference


def utility_share(err: float, err_const: float, err_ref: float) -> float:
    """``u = (err_const - err) / (err_const - err_ref)``: 1 at the reference, 0 at the constant.

    NaN (no scale: not judged) when the reference beats the constant by less than :data:`CONSTANT_MARGIN`, the
    suite's own resolution for "as good as the constant".  On a held-out task whose labels are 95 % one value
    (:func:`bar_passage_task`) ExponentiatedGradient erred 0.0486 against the constant's 0.0490: a scale of 0.0004,
    on which every private method that matched the constant to three digits scored ``u = 0``.
    """
    gap = err_const - err_ref
    if not (math.isfinite(err) and math.isfinite(gap)) or gap < CONSTANT_MARGIN:
        return math.nan
    return (err_const - err) / gap


def verdict(kind: str, *, epsilon: float, err: float, eo: float, u: float, err_const: float, ref_eo: float,
            n_train: int) -> str:
    """The mark of a private row: ``"ok"`` or what it misses (``u``, ``EO``, ``const``), ``"n/a"`` if not judged.

    ``kind`` is ``"blind"`` (attribute private, blind at prediction), ``"attribute"`` (attribute private, used at
    prediction) or ``"records"`` (whole records private; judged on tasks with at least 4,000 training rows).
    Every private method is also held to ``err <= err_const + 0.005`` at every ``epsilon >= 0.5``.  A utility share
    that is NaN (the reference beats the constant by less than CONSTANT_MARGIN: no scale to measure it on) is not judged.

    Parameters
    ----------
    kind : str
        The method's kind.
    epsilon : float
        The row's epsilon.
    err, eo, u : float
        The row's median error, EO difference and utility share.
    err_const : float
        The constant classifier's median error.
    ref_eo : float
        The reference's median EO difference.
    n_train : int
        Training rows of the task.

    Returns
    -------
    str
        The mark.
    """
    misses = []
    if epsilon >= 0.5 and err > err_const + CONSTANT_MARGIN:
        misses.append("const")
    rule = THRESHOLDS.get(kind)
    judged = rule is not None and n_train >= rule.get("min_train_rows", 0)
    if judged:
        if math.isfinite(u) and u < rule["u"]:  # NaN: the reference beats the constant by < CONSTANT_MARGIN
            misses.append("u")
        if not eo <= max(rule["eo_floor"], ref_eo + rule["eo_margin"]):
            misses.append("EO")
    if misses:
        return "MISS " + "+".join(misses)
    return "ok" if judged else "n/a (const ok)"


# ---------------------------------------------------------------------------------------------------- methods
@dataclass
class Method:
    """A classifier of the suite.

    Parameters
    ----------
    name : str
        Its name in the tables.
    kind : str
        ``"reference"``, ``"glue"``, ``"blind"``, ``"attribute"`` or ``"records"``.
    uses_attribute : bool
        Whether it reads the attribute at prediction (decides the reference of its utility share).
    fit_predict : callable or None
        ``fit_predict(task, train, test, epsilon) -> P(predict 1)`` on the held-out rows; ``None`` when the class is
        not available.
    note : str
        What it is (or why it is not available).
    """

    name: str
    kind: str
    uses_attribute: bool
    fit_predict: Callable[[Task, np.ndarray, np.ndarray, float], np.ndarray] | None
    note: str = ""

    @property
    def private(self) -> bool:
        """A private method of the suite (judged)."""
        return self.kind in THRESHOLDS


def _positive(model: Any, X: np.ndarray, sensitive_features: Any = None) -> np.ndarray:
    """P(predict 1) of a fitted classifier on ``X`` (with the groups when given)."""
    kwargs = {} if sensitive_features is None else {"sensitive_features": sensitive_features}
    if hasattr(model, "_pmf_predict"):  # fairlearn's randomized classifiers
        return np.asarray(model._pmf_predict(X, **kwargs))[:, 1]
    if hasattr(model, "predict_proba"):
        proba = np.asarray(model.predict_proba(X, **kwargs))
        classes = list(getattr(model, "classes_", [0, 1]))
        return proba[:, classes.index(1) if 1 in classes else -1]
    return (np.asarray(model.predict(X, **kwargs)) == 1).astype(float)


def _constant(task: Task, train: np.ndarray, test: np.ndarray, epsilon: float) -> np.ndarray:
    return np.full(test.size, float(task.y[train].mean() > 0.5))


def _logistic(task: Task, train: np.ndarray) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=2000).fit(task.X[train], task.y[train])


def _sklearn_logistic(task: Task, train: np.ndarray, test: np.ndarray, epsilon: float) -> np.ndarray:
    return _positive(_logistic(task, train), task.X[test])


def _fairlearn_eg(task: Task, train: np.ndarray, test: np.ndarray, epsilon: float) -> np.ndarray:
    from fairlearn.reductions import EqualizedOdds, ExponentiatedGradient
    from sklearn.linear_model import LogisticRegression

    model = ExponentiatedGradient(LogisticRegression(max_iter=2000), constraints=EqualizedOdds())
    model.fit(task.X[train], task.y[train], sensitive_features=task.sensitive_features[train].astype(str))
    return _positive(model, task.X[test])


def _threshold_optimizer(base: Any, task: Task, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    from fairlearn.postprocessing import ThresholdOptimizer
    from sklearn.frozen import FrozenEstimator

    model = ThresholdOptimizer(estimator=FrozenEstimator(base), constraints="equalized_odds",
                               predict_method="predict_proba")
    model.fit(task.X[train], task.y[train], sensitive_features=task.sensitive_features[train].astype(str))
    return _positive(model, task.X[test], task.sensitive_features[test].astype(str))


def _fairlearn_to(task: Task, train: np.ndarray, test: np.ndarray, epsilon: float) -> np.ndarray:
    return _threshold_optimizer(_logistic(task, train), task, train, test)


def _hand_glue(task: Task, train: np.ndarray, test: np.ndarray, epsilon: float) -> np.ndarray:
    from dpfair.linear_model import DPLogisticRegression

    base = DPLogisticRegression(epsilon=epsilon, data_norm=task.x_norm_bound).fit(task.X[train], task.y[train])
    return _threshold_optimizer(base, task, train, test)


REFERENCES = [
    Method("constant (best on training labels)", "reference", False, _constant),
    Method("sklearn LogisticRegression", "reference", False, _sklearn_logistic),
    Method("fairlearn ExponentiatedGradient", "reference", False, _fairlearn_eg, "EqualizedOdds(), logistic learner"),
    Method("fairlearn ThresholdOptimizer", "reference", True, _fairlearn_to, "equalized_odds, on the logistic model"),
]
CONSTANT, EG_REF, TO_REF = REFERENCES[0].name, REFERENCES[2].name, REFERENCES[3].name
GLUE = Method("hand glue: DPLogisticRegression + ThresholdOptimizer (exact A)", "glue", True, _hand_glue)


def _import(path: str) -> Any:
    """``module:Name`` imported, or ``None`` when it is not there (the suite runs on whatever has landed)."""
    module_name, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError):
        return None


def declared_arguments(cls: Any, task: Task, epsilon: float, **given: Any) -> dict[str, Any]:
    """The arguments a user must declare for ``cls`` on ``task``: epsilon, groups, a bound on the rows, and a value
    for every parameter without a default (:data:`REQUIRED_FILL`); everything else stays at its default.

    Parameters
    ----------
    cls : type
        A dpfair private classifier.
    task : Task
        The task (its groups and bound are declared).
    epsilon : float
        The total epsilon.
    **given
        Arguments passed as they are (they win).

    Returns
    -------
    dict
        Keyword arguments for ``cls``.
    """
    parameters = inspect.signature(cls.__init__).parameters
    declared = {"epsilon": epsilon, "groups": list(task.groups), "x_norm_bound": task.x_norm_bound,
                "data_norm": task.x_norm_bound}
    out = {}
    for name, parameter in parameters.items():
        if name in ("self",) or parameter.kind in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
            continue
        if name in given:
            out[name] = given[name]
        elif name in declared:
            out[name] = declared[name]
        elif parameter.default is inspect.Parameter.empty and name in REQUIRED_FILL:
            out[name] = REQUIRED_FILL[name]
    return out


def _private_fit_predict(cls: Any, *, uses_attribute: bool, base: str | None = None, base_share: float = 0.5,
                         **given: Any) -> Callable[[Task, np.ndarray, np.ndarray, float], np.ndarray]:
    """fit/predict of a dpfair private classifier on its defaults (secure noise: ``random_state`` left at None).

    ``base="logistic"``: a non-private ``LogisticRegression`` fitted on ``(X, y)`` of the training rows (public in
    the attribute model) is passed prefit; ``base="private"``: a ``DPLogisticRegression`` at ``base_share`` of the
    epsilon is fitted inside (``prefit=False``), the post-processor gets the rest.
    """

    def fit_predict(task: Task, train: np.ndarray, test: np.ndarray, epsilon: float) -> np.ndarray:
        kwargs = dict(given)
        own_epsilon = epsilon
        if base == "logistic":
            kwargs["estimator"] = _logistic(task, train)
        elif base == "private":
            from dpfair.linear_model import DPLogisticRegression

            kwargs["estimator"] = DPLogisticRegression(epsilon=base_share * epsilon, data_norm=task.x_norm_bound)
            kwargs["prefit"] = False
            own_epsilon = (1 - base_share) * epsilon
        model = cls(**declared_arguments(cls, task, own_epsilon, **kwargs))
        model.fit(task.X[train], task.y[train], sensitive_features=task.sensitive_features[train])
        return _positive(model, task.X[test], task.sensitive_features[test] if uses_attribute else None)

    return fit_predict


#: The private methods the suite knows: (name, "module:Class", kind, uses_attribute, options).  Classes that have
#: not landed are listed as "not available"; any other private classifier of dpfair.classification is picked up
#: by :func:`private_methods` too.
KNOWN_PRIVATE = [
    ("DPExponentiatedGradient", "dpfair.classification:DPExponentiatedGradient", "blind", False, {}),
    ("DPEqualizedOddsPostProcessor (logistic base, A private)", "dpfair.classification:DPEqualizedOddsPostProcessor",
     "attribute", True, {"base": "logistic"}),
    ("DPEqualizedOddsPostProcessor + DPLogisticRegression (whole records)",
     "dpfair.classification:DPEqualizedOddsPostProcessor", "records", True, {"base": "private"}),
    ("DPBlindPostProcessor (logistic base, A private)", "dpfair.classification:DPBlindPostProcessor", "blind", False,
     {"base": "logistic"}),
    ("DPBlindPostProcessor + DPLogisticRegression (whole records)", "dpfair.classification:DPBlindPostProcessor",
     "records", False, {"base": "private"}),
    ("DPFairClassifier (A private, blind)", "dpfair.classification:DPFairClassifier", "blind", False,
     {"settings": "blind"}),
    ("DPFairClassifier (A private, used at prediction)", "dpfair.classification:DPFairClassifier", "attribute", True,
     {"settings": "attribute"}),
    ("DPFairClassifier (whole records, blind)", "dpfair.classification:DPFairClassifier", "records", False,
     {"settings": "records-blind"}),
    ("DPFairClassifier (whole records, A used at prediction)", "dpfair.classification:DPFairClassifier", "records",
     True, {"settings": "records"}),
]

#: How the suite tells ``DPFairClassifier`` what is protected and whether A is there at prediction (a row is "not
#: available" when its signature lacks one of these parameters).
FAIR_CLASSIFIER_SETTINGS = {
    "blind": {"protects": "attribute", "attribute_at_prediction": False},
    "attribute": {"protects": "attribute", "attribute_at_prediction": True},
    "records-blind": {"protects": "records", "attribute_at_prediction": False},
    "records": {"protects": "records", "attribute_at_prediction": True},
}


def _settings_for(cls: Any, settings: str) -> dict[str, Any] | None:
    """The settings of ``cls`` for one row of the table, or ``None`` when its signature does not take them all."""
    names = inspect.signature(cls.__init__).parameters
    wanted = FAIR_CLASSIFIER_SETTINGS[settings]
    return dict(wanted) if all(name in names for name in wanted) else None


def private_methods() -> list[Method]:
    """Every private method the suite runs, each import guarded: what has landed runs, the rest is "not available".

    Returns
    -------
    list of Method
        The known methods, then any other private classifier exported by :mod:`dpfair.classification` (run on
        its defaults, its kind read from the fitted ``privacy_spent_`` is not needed: it is judged as blind unless
        its ``predict`` needs the groups).
    """
    methods, seen = [], set()
    for name, path, kind, uses_attribute, options in KNOWN_PRIVATE:
        cls = _import(path)
        seen.add(path.partition(":")[2])
        if cls is None:
            methods.append(Method(name, kind, uses_attribute, None, f"not available ({path} is not there)"))
            continue
        options = dict(options)
        settings = options.pop("settings", None)
        if settings is not None:
            given = _settings_for(cls, settings)
            if given is None:
                wanted = ", ".join(FAIR_CLASSIFIER_SETTINGS[settings])
                methods.append(Method(name, kind, uses_attribute, None, f"not available (no parameters {wanted})"))
                continue
            options.update(given)
        methods.append(Method(name, kind, uses_attribute, _private_fit_predict(cls, uses_attribute=uses_attribute,
                                                                              **options)))
    methods.extend(_other_private_classifiers(seen))
    return methods


def _other_private_classifiers(seen: set[str]) -> list[Method]:
    """Private classifiers of dpfair.classification that the suite does not know by name (e.g. a new
    attribute-blind post-processor): run on their defaults, blind when ``predict_proba(X)`` needs no groups."""
    try:
        module = importlib.import_module("dpfair.classification")
        from sklearn.base import is_classifier

        from dpfair.base import PrivateEstimator
    except ImportError:
        return []
    out = []
    for name in getattr(module, "__all__", []):
        cls = getattr(module, name, None)
        if name in seen or not isinstance(cls, type) or not issubclass(cls, PrivateEstimator):
            continue
        try:
            if not is_classifier(cls.__new__(cls)):
                continue
        except Exception:  # a class the suite cannot even inspect is not run
            continue
        parameters = inspect.signature(cls.__init__).parameters
        blind = "sensitive_features" not in inspect.signature(getattr(cls, "predict_proba", cls.predict)).parameters
        needs_estimator = "estimator" in parameters
        out.append(Method(f"{name} (defaults)", "blind" if blind else "attribute", not blind,
                          _private_fit_predict(cls, uses_attribute=not blind,
                                               base="logistic" if needs_estimator else None),
                          "picked up from dpfair.classification"))
    return out


# ---------------------------------------------------------------------------------------------------- running
def _cached_reference(method: Method, task: Task, split: int, train: np.ndarray, test: np.ndarray,
                      cache: Path | None) -> np.ndarray:
    """A reference's held-out P(predict 1), from ``cache`` when computed before on the same task and split."""
    if cache is None:
        return method.fit_predict(task, train, test, math.inf)
    key = hashlib.sha256(f"{CACHE_VERSION}|{task.fingerprint()}|{split}|{method.name}".encode()).hexdigest()[:20]
    path = cache / f"{task.name}-{split}-{key}.npy"
    if path.exists():
        return np.load(path)
    cache.mkdir(parents=True, exist_ok=True)
    positive = method.fit_predict(task, train, test, math.inf)
    np.save(path, positive)
    return positive


def _run_one(method: Method, task: Task, train: np.ndarray, test: np.ndarray, epsilon: float,
             positive: Callable[..., np.ndarray], *args: Any) -> dict[str, Any]:
    start = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            p1 = positive(*args)
            error, eo = expected_metrics(p1, task.y[test], task.sensitive_features[test])
            failure = ""
        except Exception as exc:  # a failed fit is a row of the table, not the end of the run
            error, eo, failure = math.nan, math.nan, f"{type(exc).__name__}: {str(exc)[:160]}"
    # dpfair's own warnings (and convergence), less the leak warnings every non-private reference raises by design
    names = sorted({w.category.__name__ for w in caught
                    if (w.category.__module__.startswith("dpfair") or w.category.__name__ == "ConvergenceWarning")
                    and w.category.__name__ not in ("PrivacyLeakWarning", "SeededNoiseWarning")})
    return {"task": task.name, "method": method.name, "kind": method.kind, "uses_attribute": method.uses_attribute,
            "epsilon": epsilon, "error": error, "eo": eo, "cpu_s": time.process_time() - start,
            "warnings": " ".join(names), "failure": failure}


def run_suite(tasks: Sequence[Task], *, epsilons: Sequence[float] = EPSILONS, n_splits: int = 5,
              methods: Sequence[Method] | None = None, cache: Path | None = None,
              progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Every method on every task, epsilon and split: one row per fit.

    Parameters
    ----------
    tasks : sequence of Task
        The tasks.
    epsilons : sequence of float, default (0.5, 1, 2, 5)
        Total epsilons of the private methods (and of the hand glue).
    n_splits : int, default 5
        Seeded 2/3 - 1/3 splits.
    methods : sequence of Method or None, default None
        The private methods (default :func:`private_methods`); the references and the hand glue always run.
    cache : Path or None, default None
        Folder of the cached references (``None``: no cache).
    progress : callable or None, default None
        Called with one line per fit.

    Returns
    -------
    pandas.DataFrame
        Columns ``task, method, kind, uses_attribute, epsilon, split, n_train, error, eo, cpu_s, warnings,
        failure`` (references at ``epsilon = inf``; unavailable methods have no rows).
    """
    methods = private_methods() if methods is None else list(methods)
    runnable = [m for m in methods if m.fit_predict is not None]
    rows = []
    for t_index, task in enumerate(tasks, 1):
        for split, (train, test) in enumerate(splits(task.y.size, n_splits)):
            prefix = f"[{t_index}/{len(tasks)}] {task.name} split {split + 1}/{n_splits}"
            for method in REFERENCES:
                row = _run_one(method, task, train, test, math.inf, _cached_reference, method, task, split, train,
                               test, cache)
                rows.append({**row, "split": split, "n_train": train.size})
                if progress:
                    progress(f"{prefix}: {method.name} ({row['cpu_s']:.1f} s CPU)")
            for epsilon in epsilons:
                for method in (GLUE, *runnable):
                    row = _run_one(method, task, train, test, epsilon, method.fit_predict, task, train, test, epsilon)
                    rows.append({**row, "split": split, "n_train": train.size})
                    if progress:
                        mark = f" FAILED {row['failure']}" if row["failure"] else f" err {row['error']:.3f}"
                        progress(f"{prefix} eps {epsilon:g}: {method.name}{mark} ({row['cpu_s']:.1f} s CPU)")
    return pd.DataFrame(rows)


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Medians over the splits, the utility share against the reference of each method's kind, and the verdict.

    Parameters
    ----------
    results : pandas.DataFrame
        :func:`run_suite`'s rows.

    Returns
    -------
    pandas.DataFrame
        One row per (task, method, epsilon): ``error, eo`` (medians), ``reference``, ``u``, ``verdict``,
        ``failures`` (splits that failed), ``warnings`` (warning classes raised in any split), ``n_train``.
    """
    out = []
    for task, frame in results.groupby("task", sort=False):
        medians = frame.groupby(["method", "epsilon"], sort=False).agg(
            error=("error", "median"), eo=("eo", "median"), n_train=("n_train", "median"),
            failures=("failure", lambda f: int((f != "").sum())), kind=("kind", "first"),
            uses_attribute=("uses_attribute", "first"),
            warnings=("warnings", lambda w: " ".join(sorted({x for v in w for x in v.split()}))),
            cpu_s=("cpu_s", "median"))
        reference = {name: medians.loc[(name, math.inf)] for name in (CONSTANT, EG_REF, TO_REF)
                     if (name, math.inf) in medians.index}
        err_const = reference[CONSTANT]["error"] if CONSTANT in reference else math.nan
        for (method, epsilon), row in medians.iterrows():
            ref_name = TO_REF if row["uses_attribute"] else EG_REF
            ref = reference.get(ref_name)
            err_ref = ref["error"] if ref is not None else math.nan
            ref_eo = ref["eo"] if ref is not None else math.nan
            u = utility_share(row["error"], err_const, err_ref)
            if row["kind"] == "reference":
                mark = ""
            else:
                mark = verdict(row["kind"] if row["kind"] != "glue" else "attribute", epsilon=epsilon,
                               err=row["error"], eo=row["eo"], u=u, err_const=err_const, ref_eo=ref_eo,
                               n_train=int(row["n_train"]))
                if row["failures"]:
                    mark = f"FAILED {row['failures']} split(s)"
            out.append({"task": task, "method": method, "kind": row["kind"], "epsilon": epsilon,
                        "error": row["error"], "eo": row["eo"],
                        "reference": "" if row["kind"] == "reference" else ("TO" if row["uses_attribute"] else "EG"),
                        "u": u, "verdict": mark, "failures": row["failures"], "warnings": row["warnings"],
                        "n_train": int(row["n_train"]), "cpu_s": row["cpu_s"]})
    return pd.DataFrame(out)


def _judged(kind: str, n_train: int) -> bool:
    """Whether :func:`verdict` judges a row of this kind beyond the constant rule (glue is judged as "attribute")."""
    rule = THRESHOLDS.get("attribute" if kind == "glue" else kind)
    return rule is not None and n_train >= rule.get("min_train_rows", 0)


def across_runs(summaries: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Every private row over repeated runs of the suite: how often it met, and its medians over the runs.

    Under secure noise two runs of the same command differ by their noise only (the splits are seeded and the
    references cached), so one run's verdicts are one draw of each row's chance of meeting.  This table gives, for
    each private row, the verdict of every run (``verdict_1``, ``verdict_2``, ...; ``"missing"`` where a run has no
    such row), the number of runs whose verdict is ``"ok"`` (or ``"n/a (const ok)"`` where only the constant rule
    judges it), and the verdict of the medians over the runs of its error and equalized-odds difference, its utility
    share recomputed from the median error on the same scale (the references are the first run's; cached, they are
    the same in every run).  A row that failed in any run is marked ``"FAILED in k run(s)"`` whatever its medians.
    The suite's criterion is a single run; the medians over runs read a row on its typical run rather than on one
    draw, beside it, not in its place.

    Parameters
    ----------
    summaries : sequence of pandas.DataFrame
        :func:`summarize` of each run (the same tasks, methods and epsilons).

    Returns
    -------
    pandas.DataFrame
        One row per private (task, method, epsilon): ``judged`` (beyond the constant rule, as :func:`verdict`
        decides it), ``verdict_1 ... verdict_<runs>``, ``runs_met``, ``runs`` (runs holding the row), ``error, eo, u``
        (medians over the runs; ``u`` from the median error) and ``verdict`` (of the medians).
    """
    if not summaries:
        raise ValueError("summaries is empty: pass the summarize() table of at least one run.")
    first = summaries[0]
    references = first[first["kind"] == "reference"].set_index(["task", "method"])
    stacked = pd.concat([frame.assign(run=i) for i, frame in enumerate(summaries)])
    private = stacked[stacked["kind"] != "reference"]
    out = []
    for (task, method, epsilon), rows in private.groupby(["task", "method", "epsilon"], sort=False):
        head = rows.iloc[0]
        err_const = references.loc[(task, CONSTANT), "error"] if (task, CONSTANT) in references.index else math.nan
        ref_name = TO_REF if head["reference"] == "TO" else EG_REF
        ref = references.loc[(task, ref_name)] if (task, ref_name) in references.index else None
        err_ref, ref_eo = (math.nan, math.nan) if ref is None else (ref["error"], ref["eo"])
        error, eo = float(rows["error"].median()), float(rows["eo"].median())
        u = utility_share(error, err_const, err_ref)
        by_run = rows.set_index("run")["verdict"].astype(str)
        verdicts = {f"verdict_{i + 1}": by_run.get(i, "missing") for i in range(len(summaries))}
        failed = sum(v.startswith("FAILED") for v in by_run)
        mark = f"FAILED in {failed} run(s)" if failed else verdict(
            head["kind"] if head["kind"] != "glue" else "attribute", epsilon=epsilon, err=error, eo=eo, u=u,
            err_const=err_const, ref_eo=ref_eo, n_train=int(head["n_train"]))
        out.append({"task": task, "method": method, "kind": head["kind"], "epsilon": epsilon,
                    "judged": _judged(head["kind"], int(head["n_train"])), **verdicts,
                    "runs_met": sum(v == "ok" or v.startswith("n/a") for v in by_run), "runs": len(by_run),
                    "error": error, "eo": eo, "reference": head["reference"], "u": u, "verdict": mark})
    return pd.DataFrame(out)


def across_runs_header(table: pd.DataFrame, focus: str = "DPFairClassifier") -> list[str]:
    """The opening lines of ``across_runs.md``: the judged rows of ``focus`` that met, run by run and on the medians.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`across_runs`.
    focus : str, default "DPFairClassifier"
        The prefix of the methods counted (the recommended entry point).

    Returns
    -------
    list of str
        Three lines: the rows met in each run, the runs in which every one met, the rows whose medians meet.
    """
    n_runs = sum(column.startswith("verdict_") for column in table.columns)
    judged = table[table["method"].str.startswith(focus) & table["judged"].astype(bool)]
    met = [judged[f"verdict_{i + 1}"] == "ok" for i in range(n_runs)]
    per_run = "; ".join(f"run {i + 1}: {int(m.sum())} of {len(judged)}" for i, m in enumerate(met))
    return [f"{n_runs} runs. Judged rows of {focus} meeting their thresholds: {per_run}.",
            f"Runs in which every judged row of {focus} met: {sum(bool(m.all()) for m in met)} of {n_runs}.",
            f"Judged rows of {focus} whose medians over the runs meet: {int((judged['verdict'] == 'ok').sum())} of "
            f"{len(judged)}."]


def write_across_runs(table: pd.DataFrame, out: Path, command: str,
                      focus: str = "DPFairClassifier") -> dict[str, Path]:
    """Write ``across_runs.csv`` and ``across_runs.md`` (:func:`across_runs`) under ``out``.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`across_runs` of the runs.
    out : Path
        The folder.
    command : str
        The command line, written at the top of the Markdown file.
    focus : str, default "DPFairClassifier"
        The methods the opening lines count (:func:`across_runs_header`).

    Returns
    -------
    dict
        ``"across_csv"`` and ``"across_markdown"`` -> their paths.
    """
    out.mkdir(parents=True, exist_ok=True)
    paths = {"across_csv": out / "across_runs.csv", "across_markdown": out / "across_runs.md"}
    table.to_csv(paths["across_csv"], index=False)
    runs = [column for column in table.columns if column.startswith("verdict_")]
    lines = [f"Command: `{command}`", "", *across_runs_header(table, focus), "",
             "| task | method | epsilon | verdict per run | runs met | error | EO | ref | u | verdict of the medians |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for _, row in table.iterrows():
        per_run = " / ".join(str(row[column]) for column in runs)
        lines.append(f"| {row['task']} | {row['method']} | {row['epsilon']:g} | {per_run} | {row['runs_met']} of "
                     f"{row['runs']} | {_fmt(row['error'])} | {_fmt(row['eo'])} | {row['reference']} | "
                     f"{_fmt(row['u'], 2)} | {row['verdict']} |")
    paths["across_markdown"].write_text("\n".join(lines) + "\n")
    return paths


def _fmt(value: float, digits: int = 3) -> str:
    return "-" if not isinstance(value, float | int) or not math.isfinite(value) else f"{value:.{digits}f}"


def table_rows(summary: pd.DataFrame, epsilon: float, methods: Sequence[Method] = (), *,
               with_warnings: bool = False) -> list[list[str]]:
    """The rows of the table at one epsilon: references, hand glue, private methods, unavailable ones last.

    With ``with_warnings``, a last column names the dpfair warnings raised in any split.
    """
    rows = []
    for task, frame in summary.groupby("task", sort=False):
        chosen = frame[(frame["epsilon"] == epsilon) | (frame["kind"] == "reference")]
        for _, row in chosen.iterrows():
            eps = "inf" if math.isinf(row["epsilon"]) else f"{row['epsilon']:g}"
            rows.append([task, row["method"], row["kind"], eps, _fmt(row["error"]), _fmt(row["eo"]),
                         row["reference"], _fmt(row["u"], 2), row["verdict"]])
            if with_warnings:
                rows[-1].append(row["warnings"] if isinstance(row["warnings"], str) else "")
        for method in methods:
            if method.fit_predict is None:
                rows.append([task, method.name, method.kind, f"{epsilon:g}", "-", "-", "", "-", method.note]
                            + ([""] if with_warnings else []))
    return rows


HEADER = ["task", "method", "kind", "epsilon", "error", "EO", "ref", "u", "verdict"]


def markdown_table(rows: list[list[str]]) -> str:
    """A Markdown table of :func:`table_rows` (with its warnings column when the rows have one)."""
    header = HEADER + (["warnings"] if rows and len(rows[0]) > len(HEADER) else [])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def rst_table(rows: list[list[str]], title: str = "") -> str:
    """An RST ``list-table`` of :func:`table_rows` (the user guide's table)."""
    lines = [f".. list-table:: {title}".rstrip(), "   :header-rows: 1", ""]
    for row in [HEADER, *rows]:
        lines.append(f"   * - {row[0] or ' '}")
        lines += [f"     - {cell}" if cell else "     -" for cell in row[1:]]
    return "\n".join(lines) + "\n"


def plot(summary: pd.DataFrame, path: Path) -> None:
    """Held-out error against epsilon, one panel per task: every private method and the hand glue, with the
    constant classifier and the two fairlearn references as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(summary["task"]))
    n_cols = min(3, len(tasks))
    n_rows = math.ceil(len(tasks) / n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(4.6 * n_cols, 3.4 * n_rows), squeeze=False)
    styles = {CONSTANT: ("k", "-"), EG_REF: ("tab:blue", "--"), TO_REF: ("tab:orange", "--")}
    for ax, task in zip(axes.flat, tasks, strict=False):
        frame = summary[summary["task"] == task]
        for name, (color, style) in styles.items():
            value = frame.loc[frame["method"] == name, "error"]
            if len(value):
                ax.axhline(float(value.iloc[0]), color=color, ls=style, lw=1, label=name.split(" (")[0])
        for name, curve in frame[frame["kind"] != "reference"].groupby("method", sort=False):
            ax.plot(curve["epsilon"], curve["error"], marker="o", ms=3, lw=1, label=name[:48])
        ax.set_xscale("log")
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("held-out error")
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.12 if n_rows > 1 else 0.25, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(results: pd.DataFrame, summary: pd.DataFrame, out: Path, methods: Sequence[Method],
                  epsilons: Sequence[float], command: str) -> dict[str, Path]:
    """Write ``results.csv``, ``summary.csv``, ``table.md``, ``table_eps<e>.rst`` and ``errors.png`` under ``out``.

    Parameters
    ----------
    results, summary : pandas.DataFrame
        :func:`run_suite` and :func:`summarize`.
    out : Path
        The folder.
    methods : sequence of Method
        The private methods (the unavailable ones are listed in the tables).
    epsilons : sequence of float
        The epsilons run.
    command : str
        The command line, written at the top of the tables.

    Returns
    -------
    dict
        Name -> path of every file written.
    """
    out.mkdir(parents=True, exist_ok=True)
    paths = {"results": out / "results.csv", "summary": out / "summary.csv", "markdown": out / "table.md",
             "plot": out / "errors.png"}
    results.to_csv(paths["results"], index=False)
    summary.to_csv(paths["summary"], index=False)
    parts = [f"Command: `{command}`\n", "Medians over the splits; error and EO held out; u against the reference of "
             "the method's kind (EG: fairlearn ExponentiatedGradient, TO: ThresholdOptimizer).\n"]
    for epsilon in epsilons:
        parts.append(f"\n## epsilon = {epsilon:g}\n\n"
                     + markdown_table(table_rows(summary, epsilon, methods, with_warnings=True)))
        rst = out / f"table_eps{epsilon:g}.rst"
        rst.write_text(rst_table(table_rows(summary, epsilon, methods)))
        paths[f"rst_eps{epsilon:g}"] = rst
    paths["markdown"].write_text("".join(parts))
    plot(summary, paths["plot"])
    return paths


# ---------------------------------------------------------------------------------------------------- tuning
#: The candidates of the private search: the post-processor's gamma and the private base model's C.
SEARCH_GRID = {"gamma": [0.0, 0.01, 0.02, 0.05], "estimator__C": ["auto", 0.01, 0.02, 0.04]}
#: The searches compared with the untuned pipeline, name -> (settings, grid): the default law of K, and the truncated
#: negative binomial (eta = -0.5: each trial gets about 2/3 of the total epsilon instead of 1/3, for a delta of
#: 1e-6) over the whole grid and over the base model's C alone (gamma at the post-processor's default, 0).
_TNB = {"n_trials": "truncated_negative_binomial", "eta": -0.5, "delta": 1e-6, "mean_trials": 10.0,
        "validation_fraction": 0.2}
SEARCHES = {
    "PrivateRandomSearch (geometric K, defaults)": ({"mean_trials": 10.0}, SEARCH_GRID),
    "PrivateRandomSearch (truncated negative binomial, eta -0.5, delta 1e-6, validation 0.2)": (_TNB, SEARCH_GRID),
    "PrivateRandomSearch (truncated negative binomial, base C only, gamma 0)": (
        _TNB, {"gamma": [0.0], "estimator__C": SEARCH_GRID["estimator__C"]}),
}


def _pipeline(task: Task, epsilon: float, base_epsilon: float | None = None) -> Any:
    """The whole-records pipeline on its defaults: ``DPLogisticRegression`` (half of ``epsilon`` unless
    ``base_epsilon``) and ``DPEqualizedOddsPostProcessor`` (the rest), ``prefit=False``."""
    from dpfair.classification import DPEqualizedOddsPostProcessor
    from dpfair.linear_model import DPLogisticRegression

    base_epsilon = epsilon / 2 if base_epsilon is None else base_epsilon
    base = DPLogisticRegression(epsilon=base_epsilon, data_norm=task.x_norm_bound)
    return DPEqualizedOddsPostProcessor(base, epsilon=epsilon - base_epsilon, groups=list(task.groups), prefit=False)


def search_comparison(task: Task, *, epsilon: float = 3.0, n_splits: int = 5,
                      progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The private search against the untuned pipeline at the same total epsilon, held out, one row per split.

    The untuned pipeline is :func:`_pipeline` at ``epsilon``; each search of :data:`SEARCHES` tunes the same
    pipeline over its grid with ``PrivateEqualizedOddsScorer`` (error + equalized-odds violation) at
    total ``epsilon``, each trial's base model getting half of the trial's epsilon.  Every search's public-facts check
    (``PrivateRandomSearch.payoff``) is recorded beside its result.

    Parameters
    ----------
    task : Task
        The task (Adult by sex in the user guide).
    epsilon : float, default 3.0
        The total epsilon of every method.
    n_splits : int, default 5
        Seeded 2/3 - 1/3 splits.
    progress : callable or None, default None
        Called with one line per fit.

    Returns
    -------
    pandas.DataFrame
        ``method, split, error, eo, loss`` (``error + eo``, the scorer's objective), ``predicted_handicap``,
        ``can_pay`` and ``warned`` (a ``SearchPayoffWarning`` was raised).
    """
    from dpfair.model_selection import PrivateEqualizedOddsScorer, PrivateRandomSearch, SearchPayoffWarning

    rows = []
    for split, (train, test) in enumerate(splits(task.y.size, n_splits)):
        X, y, groups = task.X, task.y, task.sensitive_features
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = _pipeline(task, epsilon).fit(X[train], y[train], sensitive_features=groups[train])
        error, eo = expected_metrics(_positive(model, X[test], groups[test]), y[test], groups[test])
        rows.append({"method": f"untuned pipeline (epsilon {epsilon:g})", "split": split, "error": error, "eo": eo,
                     "predicted_handicap": 0.0, "can_pay": True, "warned": False})
        for name, (settings, grid) in SEARCHES.items():
            probe = PrivateRandomSearch(_pipeline(task, 1.0), grid, scoring=PrivateEqualizedOddsScorer(
                list(task.groups), pos_label=1), epsilon=epsilon, **settings)
            payoff = probe.payoff(train.size, X.shape[1])
            search = probe.set_params(estimator=_pipeline(task, 1.0, base_epsilon=payoff.trial_epsilon / 2))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                search.fit(X[train], y[train], sensitive_features=groups[train])
            error, eo = expected_metrics(_positive(search.best_estimator_, X[test], groups[test]), y[test],
                                         groups[test])
            rows.append({"method": name, "split": split, "error": error, "eo": eo,
                         "predicted_handicap": payoff.predicted_handicap, "can_pay": payoff.can_pay,
                         "warned": any(issubclass(w.category, SearchPayoffWarning) for w in caught),
                         "best_params": str(search.best_params_)})
            if progress:
                progress(f"search split {split + 1}/{n_splits}: {name}: err {error:.3f} EO {eo:.3f}")
    frame = pd.DataFrame(rows)
    frame["loss"] = frame["error"] + frame["eo"]
    return frame


def noise_law(task: Task, epsilons: Sequence[float] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), n_splits: int = 3
              ) -> pd.DataFrame:
    """Held-out excess error of ``DPLogisticRegression`` (defaults) over scikit-learn's, against ``n epsilon / d``.

    The measurement behind :data:`dpfair.model_selection._payoff.NOISE_LAW_CONSTANT`: the excess follows
    ``c d / (n epsilon)``; the column ``c`` is ``excess n epsilon / d``.

    Parameters
    ----------
    task : Task
        The task.
    epsilons : sequence of float
        The epsilons.
    n_splits : int, default 3
        Seeded splits (medians).

    Returns
    -------
    pandas.DataFrame
        ``task, epsilon, rows_epsilon_per_feature, excess, c``.
    """
    from dpfair.linear_model import DPLogisticRegression

    excess: dict[float, list[float]] = {epsilon: [] for epsilon in epsilons}
    for train, test in splits(task.y.size, n_splits):
        reference = np.mean(_logistic(task, train).predict(task.X[test]) != task.y[test])
        for epsilon in epsilons:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = DPLogisticRegression(epsilon=epsilon, data_norm=task.x_norm_bound).fit(task.X[train],
                                                                                              task.y[train])
            excess[epsilon].append(float(np.mean(model.predict(task.X[test]) != task.y[test]) - reference))
    n_train, n_features = train.size, task.X.shape[1]
    rows = []
    for epsilon, values in excess.items():
        per_feature = n_train * epsilon / n_features
        median = float(np.median(values))
        rows.append({"task": task.name, "epsilon": epsilon, "rows_epsilon_per_feature": per_feature,
                     "excess": median, "c": median * per_feature})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------- command
def _parse_ranges(items: Sequence[str]) -> dict[str, tuple[float, float]]:
    ranges = {}
    for item in items:
        name, low, high = item.rsplit(":", 2)
        ranges[name] = (float(low), float(high))
    return ranges


def _at_least_one(text: str) -> int:
    """``--runs``: an integer of at least 1 (refused at parsing, before any data set is read)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command line of the suite."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"the small tasks {list(QUICK_TASKS)}, epsilon 1, 2 splits (for development)")
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), help="tasks to run (default: all)")
    parser.add_argument("--epsilons", type=float, nargs="+", help=f"default {list(EPSILONS)}")
    parser.add_argument("--splits", type=int, help="number of seeded 2/3 - 1/3 splits (default 5)")
    parser.add_argument("--out", type=Path, default=Path("results/fairness_suite"),
                        help="output folder (default results/fairness_suite, ignored by git)")
    parser.add_argument("--runs", type=_at_least_one, default=1,
                        help="repeat the private methods of the table this many times (fresh secure noise each run, references "
                             "computed once): OUT/run1, OUT/run2, ... and OUT/across_runs.md, how often each row met")
    parser.add_argument("--no-cache", action="store_true", help="recompute the non-private references")
    parser.add_argument("--cache", type=Path, help="folder of the cached references (default OUT/cache)")
    parser.add_argument("--search", action="store_true",
                        help="instead of the table: PrivateRandomSearch against the untuned pipeline at the same total "
                             "epsilon (--search-epsilon) on the first task (default adult-sex)")
    parser.add_argument("--search-epsilon", type=float, default=3.0)
    parser.add_argument("--noise-law", action="store_true",
                        help="instead of the table: DPLogisticRegression's excess error against n epsilon / d on the "
                             "tasks (default adult-sex and acs-race)")
    held_out = parser.add_argument_group("a table of your own (replaces the built-in tasks)")
    held_out.add_argument("--data", type=Path, help="a .csv or .parquet file")
    held_out.add_argument("--target", help="label column")
    held_out.add_argument("--sensitive", help="sensitive attribute column")
    held_out.add_argument("--groups", nargs="+", help="declared groups")
    held_out.add_argument("--positive", help="positive label (default: the larger sorted value)")
    held_out.add_argument("--ranges", nargs="*", default=[], help="declared ranges of numeric columns, name:low:high")
    held_out.add_argument("--task-function", action="append", default=[],
                          help="module:function (or file.py:function) returning a Task")
    return parser


def load_tasks(args: argparse.Namespace) -> list[Task]:
    """The tasks the command line asks for."""
    custom = []
    if args.data is not None:
        if not (args.target and args.sensitive and args.groups):
            raise SystemExit("--data needs --target, --sensitive and --groups.")
        custom.append(task_from_table(args.data, target=args.target, sensitive=args.sensitive, groups=args.groups,
                                      positive=args.positive, ranges=_parse_ranges(args.ranges)))
    custom += [task_from_function(spec) for spec in args.task_function]
    if custom:
        return custom
    names = args.tasks or (list(QUICK_TASKS) if args.quick else list(TASKS))
    return [TASKS[name](None) for name in names]


def _tuning_main(args: argparse.Namespace, n_splits: int) -> int:
    """``--search`` and ``--noise-law``: print the medians and write ``search.csv`` / ``noise_law.csv``."""
    args.out.mkdir(parents=True, exist_ok=True)
    with pd.option_context("display.width", 220, "display.max_colwidth", 90):
        if args.noise_law:
            names = args.tasks or ["adult-sex", "acs-race"]
            frame = pd.concat([noise_law(TASKS[name](None), n_splits=min(n_splits, 3)) for name in names])
            frame.to_csv(args.out / "noise_law.csv", index=False)
            print(frame.round(4).to_string(index=False))
        if args.search:
            task = load_tasks(argparse.Namespace(**{**vars(args), "tasks": args.tasks or ["adult-sex"],
                                                     "quick": False}))[0]
            frame = search_comparison(task, epsilon=args.search_epsilon, n_splits=n_splits,
                                      progress=lambda line: print(line, file=sys.stderr, flush=True))
            frame.to_csv(args.out / "search.csv", index=False)
            medians = frame.groupby("method", sort=False).agg(
                error=("error", "median"), eo=("eo", "median"), loss=("loss", "median"),
                predicted_handicap=("predicted_handicap", "first"), can_pay=("can_pay", "first"),
                warned=("warned", "all"))
            print(f"{task.name}, total epsilon {args.search_epsilon:g}, medians of {n_splits} splits (held out):")
            print(medians.round(4).to_string())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite; exit status 0 (the verdicts are in the tables, not in the status)."""
    args = build_parser().parse_args(argv)
    epsilons = args.epsilons or ([1.0] if args.quick else list(EPSILONS))
    n_splits = args.splits or (2 if args.quick else 5)
    if args.search or args.noise_law:
        return _tuning_main(args, n_splits)
    tasks = load_tasks(args)
    methods = private_methods()
    for method in methods:
        if method.fit_predict is None:
            print(f"{method.name}: {method.note}", file=sys.stderr)
    start = time.time()

    def progress(line: str) -> None:
        print(f"{time.time() - start:7.1f} s  {line}", file=sys.stderr, flush=True)

    command = ("python benchmarks/fairness_suite.py " + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    with tempfile.TemporaryDirectory() as scratch:
        # --no-cache with several runs: the references are computed afresh once, in a cache of this command alone
        cache = (Path(scratch) if args.runs > 1 else None) if args.no_cache else (args.cache or args.out / "cache")
        summaries, paths = [], {}
        for run in range(1, args.runs + 1):
            if args.runs > 1:
                progress(f"run {run} of {args.runs}")
            results = run_suite(tasks, epsilons=epsilons, n_splits=n_splits, methods=methods, cache=cache,
                                progress=progress)
            summary = summarize(results)
            summaries.append(summary)
            written = write_outputs(results, summary, args.out if args.runs == 1 else args.out / f"run{run}", methods,
                                    epsilons, command)
            paths.update(written if args.runs == 1 else {f"run{run} {name}": path for name, path in written.items()})
    if args.runs > 1:
        table = across_runs(summaries)
        paths.update(write_across_runs(table, args.out, command))
        print("\n".join(across_runs_header(table)))
        print(f"The medians of the last run (run {args.runs} of {args.runs}):")
    with pd.option_context("display.width", 220, "display.max_colwidth", 70, "display.max_rows", 500):
        shown = summary[(summary["epsilon"] == 1.0) | (summary["kind"] == "reference")] if 1.0 in epsilons else summary
        print(shown[["task", "method", "epsilon", "error", "eo", "reference", "u", "verdict", "warnings"]]
              .round(3).to_string(index=False))
    print("\n".join(f"wrote {path}" for path in paths.values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
