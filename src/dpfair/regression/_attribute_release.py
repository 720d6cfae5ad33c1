"""The regression post-processors' table when only the sensitive attribute is private (``protects="attribute"``).

Both :class:`~dpfair.regression.FairRegressionPostProcessor` and
:class:`~dpfair.regression.BlindFairRegressionPostProcessor` release one joint table of (group, column), a column
being a score bin (aware) or a (score bin, membership cell) cell (blind).  Under ``protects="records"`` (the
default) a whole post-processing row is private: one replaced row moves ``1/n`` of mass between two entries (L1
sensitivity ``2/n``, the paper's Remark B.1).  Under ``protects="attribute"`` (the relation of Jagielski et al.
2019, Section 2.3, that the classification post-processors use) the features and labels are public, so every
row's column (a function of its public ``x`` through the released or public models) and the column totals
``T(c) = sum_a p(a, c)`` are public; changing one row's attribute moves ``1/n`` between two groups *within* its
column.  :func:`release_on_public_totals` releases the table for that relation:

* **two groups**: group 1's column only, ``p(1, c) + Lap(1 / (n epsilon))`` (L1 sensitivity ``1/n``: the change
  touches one entry of it), group 0's ``T(c)`` minus it (post-processing with public totals);
* **more groups**: every entry plus ``Lap(2 / (n epsilon))`` (L1 sensitivity ``2/n``: two entries of one column);
* **one group**: the table is the totals, public: released exactly.

The program then reads the table projected by least squares, column by column, onto ``{x : sum_a x_a = T(c)}``
(:func:`project_onto_totals`, post-processing: the totals are public): each column's noise loses its component along
the total (its variance falls by ``1 / G``; with two groups the release already sums to the totals).  It is not
clipped at 0: the Euclidean projection onto ``{x >= 0, sum_a x_a = T(c)}`` (what the classification post-processors
use) biases a small group's mass towards the cells it is absent from, and cost held-out KS or excess MSE here (the
regression guide, the blind post-processor's attribute-relation table); the isotonic repair of each group's partial
sums handles negative entries as under whole-row privacy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpfair._estimator import privacy_spent
from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import NoiseSource
from dpfair.privacy.relations import CHANGE_ATTRIBUTE, REPLACE

#: The values of ``protects``: whole post-processing rows (the default), or the sensitive attribute only.
PROTECTS = ("records", "attribute")

ATTRIBUTE_NEIGHBOURING = (
    "change one post-processing row's sensitive attribute (its features, label and the number of rows n are public)"
)


def check_protects(value: Any) -> str:
    """``"records"`` or ``"attribute"``; anything else raises, naming ``protects`` and its values."""
    if not isinstance(value, str) or value not in PROTECTS:
        raise ValueError(
            f"protects must be one of {list(PROTECTS)} (whole post-processing rows private, or only their sensitive "
            f"attribute, with features and labels public), got {value!r}."
        )
    return value


def relation_of(protects: str) -> str:
    """The neighbouring relation's key (:mod:`dpfair.privacy.relations`) for a ``protects`` value."""
    return CHANGE_ATTRIBUTE if protects == "attribute" else REPLACE


def entry_noise_scale(epsilon: float, n_rows: int, n_groups: int, protects: str) -> float:
    """The Laplace scale every released entry errs by: ``1 / (n epsilon)`` for two groups under the attribute
    relation (group 0's entry is the total less group 1's), ``2 / (n epsilon)`` otherwise, 0 at ``epsilon = inf``."""
    if math.isinf(epsilon):
        return 0.0
    return (1.0 if protects == "attribute" and n_groups == 2 else 2.0) / (n_rows * epsilon)


def release_on_public_totals(joint: np.ndarray, n_rows: int, epsilon: float, noise: NoiseSource) -> np.ndarray:
    """The (group, column) table released under the attribute relation (module docstring), not yet projected.

    **Proof.** Neighbours ``D, D'`` differ in one row's attribute, ``a`` in ``D`` and ``a'`` in ``D'``; its
    column ``c`` is the same in both (a function of its public ``x``), so ``p' = p + (e_{a'} - e_a) / n`` in column
    ``c`` only and the totals ``T`` are equal.  Two groups: the released column ``p(1, .)`` moves by ``1/n`` in one
    entry (L1 sensitivity ``1/n``), so ``Lap(1 / (n epsilon))`` per entry is ``epsilon``-DP; group 0's entries
    ``T - p~(1, .)`` are a function of the release and the public totals.  More groups: the table moves by ``1/n``
    in two entries (L1 sensitivity ``2/n``) and ``Lap(2 / (n epsilon))`` per entry is ``epsilon``-DP.  One group:
    ``p = T`` is public.  Everything after (projection, pooling, program) is post-processing.

    Parameters
    ----------
    joint : ndarray of shape (n_groups, n_columns)
        The exact table of fractions of rows.
    n_rows : int
        ``n`` (public).
    epsilon : float
        The table's epsilon (``inf``: the exact table).
    noise : NoiseSource
        The estimator's noise source, opened after its charge.

    Returns
    -------
    ndarray of shape (n_groups, n_columns)
        The released table; every column sums to its public total.
    """
    if math.isinf(epsilon) or joint.shape[0] == 1:
        return joint.copy()
    if joint.shape[0] == 2:
        one = laplace_mechanism(joint[1], sensitivity=1.0 / n_rows, epsilon=epsilon, noise=noise,
                                neighbouring=CHANGE_ATTRIBUTE)
        return np.stack([joint.sum(axis=0) - one, one])
    return laplace_mechanism(joint, sensitivity=2.0 / n_rows, epsilon=epsilon, noise=noise,
                             neighbouring=CHANGE_ATTRIBUTE)


def project_onto_totals(table: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Each column of ``table`` projected by least squares onto ``{x : sum_a x_a = totals[c]}``.

    ``x_a - (sum_b x_b - T(c)) / G``: the nearest point (Euclidean) of the column's hyperplane; unbiased (the
    noise's mean is kept, 0) and, for a column that already sums to its total (two groups released on the totals),
    the identity.

    Parameters
    ----------
    table : ndarray of shape (n_groups, n_columns)
        The released table.
    totals : ndarray of shape (n_columns,)
        The public column totals.

    Returns
    -------
    ndarray of shape (n_groups, n_columns)
        Each column summing to its total (entries may be negative, as the released ones).
    """
    return table - (table.sum(axis=0) - totals)[None, :] / table.shape[0]


def attribute_privacy_spent(epsilon: float, released: str, membership: str = "") -> dict[str, Any]:
    """``privacy_spent_`` under ``protects="attribute"``: the table's epsilon for every row's sensitive attribute.

    A regressor fitted here (``prefit=False``, private or not) reads only the public ``(X, y)``, so it leaves this
    guarantee as it is (a private one's own charge still goes to its budget).  The blind post-processor's
    membership model is another matter: it reads groups.  The proof needs each row's cell to be a function of its
    public ``x``, so the model must be public or trained on other rows; trained privately on these rows' groups,
    its epsilon composes with this one (``membership`` says so in ``protects``).
    """
    if math.isinf(epsilon):
        return privacy_spent(math.inf, 0.0, neighbouring=ATTRIBUTE_NEIGHBOURING, relation=CHANGE_ATTRIBUTE,
                             protects=f"nothing: epsilon=inf releases the exact {released}")
    return privacy_spent(
        epsilon, 0.0, neighbouring=ATTRIBUTE_NEIGHBOURING, relation=CHANGE_ATTRIBUTE,
        protects=(f"the sensitive attribute of every post-processing row (the {released} released on its public "
                  "column totals); the features, the labels and so the regressor's outputs are public, not "
                  f"protected{membership}"),
    )
