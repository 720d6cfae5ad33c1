"""The private model of group membership ``P(A | X)`` of :class:`~dpfair.classification.DPBlindPostProcessor`.

One-vs-rest logistic regressions of the group on the features, each released by objective perturbation
(Chaudhuri, Monteleoni and Sarwate 2011, Algorithm 2, through the same functions as
:class:`~dpfair.linear_model.DPLogisticRegression`): with two groups one model (group 1 against group 0), with
``K >= 3`` groups one model per group.

**Privacy.** Each model is ``epsilon_j``-DP when one row's ``(x, label)`` is replaced (Chaudhuri et al., Theorem 9
with the bound ``||z|| <= radius``).  Changing one row's group changes the label of that row in at most two of the
``K`` one-vs-rest models (its old group's and its new group's; one model with two groups) and leaves the inputs of
the others unchanged, so by composition the models together are ``2 epsilon_j``-DP under "change one row's
attribute" (``epsilon_j`` with two groups).  Replacing a whole row changes every model's input: ``K epsilon_j``.
:func:`membership_model_epsilons` splits the membership share of the budget accordingly.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit

from dpfair.linear_model import DPLogisticRegression, NoiseDominatesWarning
from dpfair.privacy.leaks import PrivacyLeakWarning
from dpfair.privacy.noise import NoiseSource
from dpfair.privacy.relations import CHANGE_ATTRIBUTE

__all__ = [
    "fit_membership_models",
    "membership_cells",
    "membership_model_epsilons",
    "membership_probabilities",
    "n_membership_models",
]

def n_membership_models(n_groups: int) -> int:
    """The number of one-vs-rest models: 0 with one group, 1 with two, ``n_groups`` with more.

    Parameters
    ----------
    n_groups : int
        The number of declared groups.

    Returns
    -------
    int
    """
    return 0 if n_groups < 2 else (1 if n_groups == 2 else n_groups)


def membership_model_epsilons(epsilon_membership: float, n_groups: int, relation: str) -> float:
    """The epsilon of each one-vs-rest model so that all of them together spend ``epsilon_membership``.

    Parameters
    ----------
    epsilon_membership : float
        The membership model's share of the budget.
    n_groups : int
        The number of declared groups.
    relation : str
        ``"change_attribute"`` (one row's group changes: at most 2 models see a change) or ``"replace"`` (every
        model sees a change).

    Returns
    -------
    float
        ``epsilon_membership`` with two groups; ``/ 2`` (attribute) or ``/ n_groups`` (whole rows) with more.
    """
    models = n_membership_models(n_groups)
    if models <= 1:
        return epsilon_membership
    return epsilon_membership / (2.0 if relation == CHANGE_ATTRIBUTE else float(models))


def fit_membership_models(
    Z: np.ndarray, group_index: np.ndarray, n_groups: int, epsilon_each: float, noise: NoiseSource
) -> np.ndarray:
    """The released weights of the one-vs-rest models (objective perturbation, one release each).

    Each model is :class:`~dpfair.linear_model.DPLogisticRegression` (Algorithm 2 of Chaudhuri et al. 2011) with
    ``data_norm=1`` on the scaled rows, ``C="auto"``, drawing from the caller's noise source with no budget: it runs
    inside the caller's charged release (its charge covers them).  Two public pseudo-rows ``(0, +1)`` and
    ``(0, -1)`` are appended to every model's rows: the mechanism then runs on ``D + P`` with ``P`` fixed and public
    (the neighbouring relation and the sensitivity are unchanged), and a declared group without rows still gives
    a two-label fit, so nothing can fail after the charge.

    Parameters
    ----------
    Z : ndarray of shape (m, d)
        The scaled rows, every row of L2 norm ``<= 1``.
    group_index : ndarray of shape (m,)
        Each row's group (private).
    n_groups : int
        The number of declared groups (>= 2).
    epsilon_each : float
        Each model's epsilon (``inf``: the exact regularised fits).
    noise : NoiseSource
        The release's noise source (after the charge).

    Returns
    -------
    ndarray of shape (n_models, d + 1)
        The weights and intercept ``[w_j, b_j]`` of ``P(A = j | x) ~ sigmoid(w_j . x + b_j)`` (row 0 is group 1
        against group 0 with two groups).
    """
    d = Z.shape[1]
    targets = [1] if n_groups == 2 else list(range(n_groups))
    rows = np.vstack([Z, np.zeros((2, d))])
    weights = np.zeros((len(targets), d + 1))
    for row, target in enumerate(targets):
        labels = np.concatenate([(group_index == target).astype(np.int64), [1, 0]])
        model = DPLogisticRegression(epsilon=epsilon_each, data_norm=1.0, random_state=noise)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # (the caller warned once for its whole release)
            warnings.simplefilter("ignore", NoiseDominatesWarning)  # (the caller decides from its table: fallback_)
            model.fit(rows, labels)
        weights[row, :d] = model.coef_[0]
        weights[row, d] = model.intercept_[0]
    return weights


def membership_probabilities(Z: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``P(A = a | x)`` of every row and group from the released weights (normalised one-vs-rest).

    Parameters
    ----------
    Z : ndarray of shape (m, d)
        Scaled rows.
    weights : ndarray of shape (n_models, d + 1)
        :func:`fit_membership_models`' weights.

    Returns
    -------
    ndarray of shape (m, n_groups)
        Rows summing to 1 (two groups: ``[1 - sigma, sigma]``).
    """
    scores = expit(Z @ weights[:, :-1].T + weights[:, -1])
    if weights.shape[0] == 1:
        return np.column_stack([1.0 - scores[:, 0], scores[:, 0]])
    total = scores.sum(axis=1, keepdims=True)
    return scores / np.where(total > 0, total, 1.0)


def membership_cells(probabilities: np.ndarray, n_cells: int, edges: np.ndarray | None,
                     prior: np.ndarray | None) -> np.ndarray:
    """Each row's membership cell: a bin of ``P(A = 1 | x)`` (two groups) or the group of largest relative odds.

    Parameters
    ----------
    probabilities : ndarray of shape (m, n_groups)
        :func:`membership_probabilities`.
    n_cells : int
        The number of membership cells (1: every row in one cell).
    edges : ndarray or None
        Two groups: the increasing inner edges on ``P(A = 1 | x)`` (``n_cells - 1`` of them).
    prior : ndarray of shape (n_groups,) or None
        Three or more groups: each group's average membership over public rows; the cell is
        ``argmax_a P(A = a | x) / prior_a`` (``None``: ``argmax_a P(A = a | x)``).

    Returns
    -------
    ndarray of shape (m,), int64
    """
    m = probabilities.shape[0]
    if n_cells <= 1:
        return np.zeros(m, dtype=np.int64)
    if probabilities.shape[1] == 2:
        return np.searchsorted(np.asarray(edges), probabilities[:, 1], side="right").astype(np.int64)
    relative = probabilities if prior is None else probabilities / np.maximum(prior, 1e-12)
    return np.argmax(relative, axis=1).astype(np.int64)


def with_label(Z: np.ndarray, labels: np.ndarray | float) -> np.ndarray:
    """The membership model's rows: the scaled features and the label, divided by ``sqrt(2)`` (norm ``<= 1``).

    The label is a feature so that the model estimates ``P(A | X, Y)``, what the group-conditional rates of
    equalized odds need (:func:`~dpfair.classification.blind_table.shrunk_table`); at prediction, where ``Y`` is
    unknown, :func:`membership_at_prediction` mixes the two labels by the base classifier's score.

    Parameters
    ----------
    Z : ndarray of shape (m, d)
        Features scaled into the unit ball.
    labels : ndarray of shape (m,) or float
        Each row's label (0/1), or one label for every row.

    Returns
    -------
    ndarray of shape (m, d + 1)
    """
    column = np.broadcast_to(np.asarray(labels, dtype=float), (Z.shape[0],))
    return np.column_stack([Z, column]) / np.sqrt(2.0)


def membership_at_prediction(Z: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``P(A = a | x) = s(x) P(A = a | x, 1) + (1 - s(x)) P(A = a | x, 0)``, with ``s`` the base classifier's score.

    Parameters
    ----------
    Z : ndarray of shape (m, d)
        Features scaled into the unit ball.
    scores : ndarray of shape (m,)
        The base classifier's probability of the positive class.
    weights : ndarray of shape (n_models, d + 2)
        :func:`fit_membership_models`' weights on :func:`with_label` rows.

    Returns
    -------
    ndarray of shape (m, n_groups)
    """
    positive = membership_probabilities(with_label(Z, 1.0), weights)
    negative = membership_probabilities(with_label(Z, 0.0), weights)
    return scores[:, None] * positive + (1.0 - scores[:, None]) * negative
