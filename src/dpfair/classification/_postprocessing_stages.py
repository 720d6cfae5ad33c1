"""The typed stages of :class:`~dpfair.classification.DPEqualizedOddsPostProcessor`'s release (:mod:`dpfair.base`).

Each step of the template hands the next one a frozen dataclass, so that a misspelt field fails where it is
written.  Kept beside :mod:`dpfair.classification.postprocessing` (the estimator), which is near the 800-line limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpfair.base import ValidatedData, ValidatedOptions


@dataclass(frozen=True, eq=False)
class EqualizedOddsOptions(ValidatedOptions):
    """The post-processor's validated parameters that are not privacy parameters.

    Parameters
    ----------
    gamma : float
        The tolerance of LP~ (1).
    beta : float
        The failure probability of the slack.
    constraints : str
        The rates constrained (one of ``CONSTRAINTS``).
    prefit : bool
        Whether the base classifier is used as given.
    score_bins : int or None
        The base model's score bins (``None``: its 0/1 predictions).
    constant_mix : float, default 0.0
        The share of the best constant classifier mixed into the fitted rule (``_postprocessing_mix``).
    public_totals : bool, default False
        Whether the released table is projected onto its public totals over the groups (``_postprocessing_table``).
    """

    gamma: float
    beta: float
    constraints: str
    prefit: bool
    score_bins: int | None
    constant_mix: float = 0.0
    public_totals: bool = False


@dataclass(frozen=True, eq=False, kw_only=True)
class EqualizedOddsData(ValidatedData):
    """Step 1's data: the rows and their labels (``groups`` / ``group_index``: the template's fields).

    Parameters
    ----------
    X : array-like
        The features, as given (the base classifier's to validate).
    y : ndarray
        The labels, as given (one per row).
    classes : ndarray
        The two classes, sorted.
    labels : ndarray of int
        Each row's label as 0/1 (the index in ``classes``).
    """

    X: Any
    y: np.ndarray
    classes: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True, eq=False)
class FrequencyTable:
    """Step 3's output (Algorithm 1, lines 1-2): the base classifier and the exact table of joint frequencies.

    Parameters
    ----------
    estimator : classifier
        The base classifier (fitted here with ``prefit=False``).
    q_hat : ndarray
        The exact joint frequencies ``q_hat[y_hat, a, y]``.
    n_rows : int
        The number of rows ``m`` (public).
    n_positive : float, default 0.0
        The exact number of positive labels (released with noise only under whole-row privacy with score bins).
    public_totals : ndarray or None, default None
        The (bin, label) frequencies of all rows, counted without the groups (a function of the public ``(X, y)``
        only, bit for bit), with ``public_totals=True``.
    """

    estimator: Any
    q_hat: np.ndarray
    n_rows: int
    n_positive: float = 0.0
    public_totals: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class ReleasedTable:
    """Step 5's output (lines 3-4): the released table, beside what post-processing needs.

    Parameters
    ----------
    estimator : classifier
        The base classifier.
    q_tilde : ndarray
        The released (noisy) joint frequencies (the exact ones at ``epsilon = inf``).
    n_rows : int
        The number of rows ``m``.
    predict_seed : list of int or None
        The seed of the randomized predictions (``None``: secure randomness).
    epsilon_table : float or None, default None
        The table's share of the epsilon (``None``: all of it).
    positive_count : float or None, default None
        The released positive-label count (whole-row privacy with score bins only, else ``None``).
    epsilon_count : float, default 0.0
        The count's share of the epsilon.
    public_totals : ndarray or None, default None
        The public totals over the groups the table is projected onto (``None``: no projection).
    """

    estimator: Any
    q_tilde: np.ndarray
    n_rows: int
    predict_seed: list[int] | None
    epsilon_table: float | None = None
    positive_count: float | None = None
    epsilon_count: float = 0.0
    public_totals: np.ndarray | None = None
