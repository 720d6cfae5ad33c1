"""The private model of group membership ``P(A | X)`` of :class:`~dpfair.classification.DPBlindPostProcessor`.

Two models, by what is public.  Under the attribute relation (``X`` and ``y`` public) a *histogram* model: the
public rows are grouped into k-means clusters (:func:`public_clusters`, :func:`plan_membership_clusters`), one
Laplace release of the (cluster, label, group) counts on their public (cluster, label) totals
(:func:`released_cluster_counts`, L1 sensitivity 2; 1 with two groups), and a
multinomial logistic model of ``P(A | x, y)`` fitted to those counts at the public centres
(:func:`fit_pooled_membership`, post-processing).  It replaced the logistic models there: on the ACS excerpt
(race, 4 groups) at ``epsilon = 1`` their 0.15 of epsilon each left objective perturbation a noise-to-signal ratio
of 0.16 and a ridge that made them barely better than the prior (held-out race accuracy 0.61 against 0.59 for the
majority, 0.77 exact); an exact membership model alone lifted the utility share from 0.24 to 0.70.  Under
whole-row privacy, where clusters of the private rows could not be used, the logistic models below.

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

import math
import warnings

import numpy as np
from scipy.special import expit
from sklearn.cluster import KMeans
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import pairwise_distances_argmin

from dpfair.classification.blind_table import project_to_totals
from dpfair.linear_model import DPLogisticRegression, NoiseDominatesWarning
from dpfair.privacy.leaks import PrivacyLeakWarning
from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import NoiseSource
from dpfair.privacy.relations import CHANGE_ATTRIBUTE

__all__ = [
    "CLUSTERS_PER_WEIGHT",
    "MAX_MEMBERSHIP_CLUSTERS",
    "ROWS_PER_CLUSTER",
    "assign_clusters",
    "cluster_counts",
    "fit_membership_models",
    "fit_pooled_membership",
    "membership_cells",
    "membership_model_epsilons",
    "membership_probabilities",
    "n_membership_models",
    "plan_membership_clusters",
    "pooled_membership",
    "pooled_membership_at_prediction",
    "pooled_membership_regularization",
    "public_clusters",
    "released_cluster_counts",
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


#: The most public clusters :func:`plan_membership_clusters` gives (k-means on the public rows costs ``m k d``).
MAX_MEMBERSHIP_CLUSTERS = 1024

#: The average number of training rows per public cluster the plan aims at.
ROWS_PER_CLUSTER = 16

#: The fewest public clusters per weight of :func:`fit_pooled_membership`'s model (``d + 2`` per group: the features,
#: the label and the intercept) below which its ridge is strengthened: ``C = min(1, k / (CLUSTERS_PER_WEIGHT (d + 2)))``
#: (:func:`pooled_membership_regularization`).  With nearly as many weights as noisy pseudo-rows the model fits the
#: release's noise, and the membership cells it draws move the rule from fit to fit.  On the fairness suite's
#: Communities task (1,329 training rows, 121 features: 83 clusters, ``C = 0.34``) at ``epsilon = 1``
#: (``DPFairClassifier`` blind, attribute private; 5 splits x 24 seeded draws, paired) the draws meeting both
#: thresholds rose from 18 to 21 of 24, the median of the 5-split median error / held-out violation from 0.214 /
#: 0.084 to 0.217 / 0.069; ``C = 0.67`` (one cluster per weight) 21 of 24 at 0.214 / 0.077, ``C = 0.17`` (four)
#: 21 of 24 at 0.217 / 0.062.  With ``C = 1`` fixed,
#: the held-out violation of single fits came from: the membership model's noise (exact membership histogram: the
#: median violation 0.096 -> 0.072 over 12 draws), the table's noise (0.096 -> 0.076), the held-out sampling of the
#: positives of the group with fewer (33-50 held-out rows; both exact: 0.048, the first split 0.115 against
#: 0.02-0.07, where ExponentiatedGradient's is 0.082 and the exact program's at ``epsilon = inf`` 0.171).  Tried,
#: not kept: ``C = 0.3`` and ``0.1`` on every task (the 1,000-row task, 6 features, fell from 9 to 7 of 12 draws);
#: ``C = 0.03`` (Communities error 0.225); 32 or 64 rows per cluster (9 and 10 of 12 against 9); out-of-fold base
#: scores for the table (8 of 12); with this ridge, a membership share of 0.2 / 0.4 instead of 0.3: 21 / 22 of
#: 24 at 0.211 / 0.075 and 0.226 / 0.068 (the utility share 0.53, near its 0.5).  24 more draws (seeds 24-47):
#: 18 -> 20 of 24, 0.215 / 0.088 -> 0.218 / 0.077.  Every other task of the suite and the held-out ones has at least
#: ``2 (d + 2)`` clusters: unchanged.  (scikit-learn's ridge acts against the total weight, the released counts, about
#: ``n``: the shrinkage also falls with more rows per cluster; the figures are at :data:`ROWS_PER_CLUSTER`.)
CLUSTERS_PER_WEIGHT = 2.0


def plan_membership_clusters(n_rows: int, epsilon_membership: float, n_groups: int) -> int:
    """The number of public clusters of the histogram membership model, from the public number of rows.

    About 16 rows per cluster (``m / 16``), between 2 and :data:`MAX_MEMBERSHIP_CLUSTERS`.  The released counts of
    a cluster are then mostly noise at small epsilon, but :func:`fit_pooled_membership` pools them along the
    features' directions, so finer clusters cost little noise and keep more of ``X``'s resolution: on the ACS
    excerpt (race, 4 groups, 13,180 training rows) at ``epsilon = 1`` the utility share was 0.43 / 0.56 / 0.49 with
    412 / 824 / 1,648 clusters (one run of 5 splits each, secure noise), and 0.45 with 247 clusters
    (``m epsilon_m / (4 n_groups)``, a plan for unpooled per-cluster shares).

    Parameters
    ----------
    n_rows : int
        The number of training rows (public).
    epsilon_membership : float
        The membership model's epsilon (not used by this plan: the pooling absorbs the noise).
    n_groups : int
        The number of declared groups (not used by this plan).

    Returns
    -------
    int
    """
    del epsilon_membership, n_groups
    return int(min(max(round(n_rows / ROWS_PER_CLUSTER), 2), MAX_MEMBERSHIP_CLUSTERS))


def public_clusters(features: np.ndarray, n_clusters: int) -> np.ndarray:
    """Centres of ``n_clusters`` k-means clusters of *public* rows (seeded: a function of the rows alone).

    Under the attribute relation ``X`` is public, so the clusters, and every row's cluster, are public.  Never called
    on private rows.

    Parameters
    ----------
    features : ndarray of shape (m, d)
        The public rows.
    n_clusters : int
        The number of clusters wanted (at most the number of distinct rows are returned).

    Returns
    -------
    ndarray of shape (k, d)
    """
    distinct = np.unique(features, axis=0).shape[0]
    k = int(max(1, min(n_clusters, distinct)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (ConvergenceWarning on duplicated rows: the clusters are still valid)
        model = KMeans(n_clusters=k, n_init=1, max_iter=30, random_state=0).fit(features)
    return np.asarray(model.cluster_centers_, dtype=float)


def assign_clusters(features: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Each row's nearest centre (a fixed map of the row: no data of other rows is read).

    Parameters
    ----------
    features : ndarray of shape (m, d)
    centres : ndarray of shape (k, d)

    Returns
    -------
    ndarray of shape (m,), int64
    """
    if centres.shape[0] == 1:
        return np.zeros(features.shape[0], dtype=np.int64)
    return pairwise_distances_argmin(features, centres).astype(np.int64)


def cluster_counts(clusters: np.ndarray, labels: np.ndarray, group_index: np.ndarray, n_clusters: int,
                   n_groups: int) -> np.ndarray:
    """The exact histogram ``h[c, y, a]``: the number of rows of cluster ``c``, label ``y`` and group ``a``.

    Parameters
    ----------
    clusters, labels, group_index : ndarray of shape (m,), int
    n_clusters, n_groups : int

    Returns
    -------
    ndarray of shape (n_clusters, 2, n_groups), float
    """
    flat = (clusters * 2 + labels) * n_groups + group_index
    return np.bincount(flat, minlength=n_clusters * 2 * n_groups).reshape(n_clusters, 2, n_groups).astype(float)


def released_cluster_counts(
    clusters: np.ndarray, labels: np.ndarray, group_index: np.ndarray, n_clusters: int, n_groups: int,
    epsilon: float, noise: NoiseSource,
) -> np.ndarray:
    """:func:`cluster_counts` released on its public ``(cluster, label)`` totals: ``epsilon``-DP for the groups.

    The clusters are a function of the public ``X`` and the labels are public, so each total ``T[c, y]`` (the rows of
    cluster ``c`` and label ``y``) is public; only its split among the groups is private.  Two groups: group 1's
    counts plus ``Lap(1 / epsilon)`` (changing one row's group changes group 1's count of that row's ``(c, y)`` by
    1 and no other count: L1 sensitivity 1), group 0's ``T - `` those.  More groups: every count plus
    ``Lap(2 / epsilon)`` (the change moves one count between two groups of the same ``(c, y)``: L1 sensitivity 2).
    Then each ``(c, y)`` is projected onto ``{x >= 0, sum_a x_a = T[c, y]}``
    (:func:`~dpfair.classification.blind_table.project_to_totals`): post-processing with public totals.

    Against every count with ``Lap(2 / epsilon)`` clipped at 0, on the fairness suite at ``epsilon = 1``
    (``DPFairClassifier`` blind, attribute private; paired seeded draws of 5 splits; error / held-out violation,
    draws meeting the thresholds): Communities 0.222 / 0.089 (9 of 12) to 0.225 / 0.061 (11 of 12), 1,000 rows
    0.372 / 0.084 (4 of 12) to 0.366 / 0.090 (7 of 12), the nine groups 10 to 12 of 12, the empty group 8 to 9 of
    12; Adult by race 4 of 7 either way (violation 0.062 to 0.052 over 4 draws, 0.071 to 0.082 over 3), ACS by race
    3 to 5 of 7 (0.326 / 0.100 to 0.326 / 0.085 over 4 draws), Law School 4 of 4 either way, Adult by sex 0.139 /
    0.045 to 0.139 / 0.046 and ACS by sex 0.216 / 0.024 to 0.217 / 0.019 (3 of 3 either way).

    Parameters
    ----------
    clusters, labels, group_index : ndarray of shape (m,), int
    n_clusters, n_groups : int
    epsilon : float
        ``inf``: the exact counts.
    noise : NoiseSource

    Returns
    -------
    ndarray of shape (n_clusters, 2, n_groups)
        Non-negative; the groups of each ``(cluster, label)`` sum to its public total.
    """
    counts = cluster_counts(clusters, labels, group_index, n_clusters, n_groups)
    if math.isinf(epsilon):
        return counts
    totals = counts.sum(axis=2)
    if n_groups == 2:
        one = laplace_mechanism(counts[:, :, 1], sensitivity=1.0, epsilon=epsilon, noise=noise)
        noisy = np.stack([totals - one, one], axis=2)
    else:
        noisy = laplace_mechanism(counts, sensitivity=2.0, epsilon=epsilon, noise=noise)
    return np.moveaxis(project_to_totals(np.moveaxis(noisy, 2, 1), totals), 1, 2)  # (c, y, a) <-> (c, a, y)


def pooled_membership_regularization(n_clusters: int, n_features: int) -> float:
    """The inverse ridge strength ``C`` of the pooled membership model, from its public shape only.

    ``min(1, k / (CLUSTERS_PER_WEIGHT (d + 2)))``: scikit-learn's default ``C = 1`` while there are at least
    :data:`CLUSTERS_PER_WEIGHT` public clusters per weight of a group (``d`` features, the label, the intercept), a
    stronger ridge in proportion below (figures at :data:`CLUSTERS_PER_WEIGHT`).

    Parameters
    ----------
    n_clusters : int
        The number of public clusters ``k`` (>= 1; :func:`public_clusters` never returns fewer).
    n_features : int
        The number of features ``d``.

    Returns
    -------
    float
        In ``(0, 1]``.

    Raises
    ------
    ValueError
        If ``n_clusters`` is below 1.
    """
    if n_clusters < 1:
        raise ValueError(f"n_clusters must be at least 1 (the public clusters of the rows), got {n_clusters}.")
    return float(min(1.0, n_clusters / (CLUSTERS_PER_WEIGHT * (n_features + 2))))


def fit_pooled_membership(centres: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """A multinomial logistic model of ``P(A | x, y)`` fitted to the released counts at the public centres.

    Post-processing of :func:`released_cluster_counts`: one weighted pseudo-row ``([centre_c, y], a)`` per cell,
    of weight the released count, so the model pools the clusters' evidence along the features' directions.  Its
    ridge ``C`` is :func:`pooled_membership_regularization` of the public ``k`` and ``d``.

    Parameters
    ----------
    centres : ndarray of shape (k, d)
    counts : ndarray of shape (k, 2, n_groups)

    Returns
    -------
    ndarray of shape (n_groups, d + 2)
        ``[w, b]`` per group on the rows ``[x, y]``: ``P(A = a | x, y)`` is the softmax of ``[x, y] . w_a + b_a``.
    """
    k, d = centres.shape
    n_groups = counts.shape[2]
    regularization = pooled_membership_regularization(k, d)
    cell_c, cell_y, cell_a = np.meshgrid(np.arange(k), np.arange(2), np.arange(n_groups), indexing="ij")
    rows = np.column_stack([centres[cell_c.ravel()], cell_y.ravel()])
    weights = counts.ravel()
    keep = weights > 0
    targets = cell_a.ravel()
    if np.unique(targets[keep]).size < 2:
        out = np.zeros((n_groups, d + 2))
        out[:, -1] = np.log((counts.sum(axis=(0, 1)) + 1.0) / (counts.sum() + n_groups))
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LogisticRegression(C=regularization, max_iter=500).fit(rows[keep], targets[keep],
                                                                       sample_weight=weights[keep])
    out = np.zeros((n_groups, d + 2))
    seen = model.classes_.astype(np.int64)
    if seen.size == 2:
        out[seen[1], :-1], out[seen[1], -1] = model.coef_[0], model.intercept_[0]
        out[seen[0], -1] = 0.0
        missing = np.setdiff1d(np.arange(n_groups), seen)
    else:
        out[seen, :-1], out[seen, -1] = model.coef_, model.intercept_
        missing = np.setdiff1d(np.arange(n_groups), seen)
    out[missing, -1] = -50.0
    return out


def pooled_membership(features: np.ndarray, labels: np.ndarray | float, weights: np.ndarray) -> np.ndarray:
    """``P(A | x, y)`` of :func:`fit_pooled_membership`'s model.

    Parameters
    ----------
    features : ndarray of shape (m, d)
    labels : ndarray of shape (m,) or float
    weights : ndarray of shape (n_groups, d + 2)

    Returns
    -------
    ndarray of shape (m, n_groups)
    """
    y = np.broadcast_to(np.asarray(labels, dtype=float), (features.shape[0],))
    logits = features @ weights[:, :-2].T + y[:, None] * weights[:, -2] + weights[:, -1]
    logits -= logits.max(axis=1, keepdims=True)
    odds = np.exp(logits)
    return odds / odds.sum(axis=1, keepdims=True)


def pooled_membership_at_prediction(features: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``P(A | x) = s(x) P(A | x, 1) + (1 - s(x)) P(A | x, 0)`` of the pooled model, ``s`` the base score.

    Parameters
    ----------
    features : ndarray of shape (m, d)
    scores : ndarray of shape (m,)
        The base classifier's probability of the positive class.
    weights : ndarray of shape (n_groups, d + 2)
        :func:`fit_pooled_membership`'s output.

    Returns
    -------
    ndarray of shape (m, n_groups)
    """
    score = scores[:, None]
    return score * pooled_membership(features, 1.0, weights) + (1.0 - score) * pooled_membership(features, 0.0, weights)
