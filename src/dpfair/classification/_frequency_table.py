"""The table of :class:`~dpfair.classification.DPEqualizedOddsPostProcessor`, before and after its release.

Jagielski et al. (2019), Algorithm 1: the empirical joint frequencies of (base prediction, group, label) (line 2),
and the projection of the released table onto valid tables (post-processing).  The release itself (lines 3-4,
``noisy_frequencies``) and the linear program are :mod:`dpfair.classification._postprocessing_lp`;
:mod:`dpfair.classification.postprocessing` re-exports these two.
"""

from __future__ import annotations

import numpy as np

__all__ = ["joint_frequencies", "valid_frequencies"]


def joint_frequencies(
    y_pred: np.ndarray, group: np.ndarray, y: np.ndarray, n_groups: int, n_bins: int = 2
) -> np.ndarray:
    """Empirical joint frequencies ``q_hat[y_hat, a, y]`` (Algorithm 1, line 2).

    Parameters
    ----------
    y_pred : ndarray of shape (m,)
        Base predictions in {0, 1} (or score bins in ``range(n_bins)``).
    group : ndarray of shape (m,)
        Index of every row's group in ``range(n_groups)``.
    y : ndarray of shape (m,)
        Labels in {0, 1}.
    n_groups : int
        Number of declared groups.
    n_bins : int, default 2
        Number of values of ``y_pred`` (2: binary predictions, the paper's table).

    Returns
    -------
    ndarray of shape (n_bins, n_groups, 2)
        The fraction of rows with ``Y_hat = y_hat``, ``A = a`` and ``Y = y``; it sums to 1.
    """
    m = y.shape[0]
    flat = (y_pred * n_groups + group) * 2 + y
    return np.bincount(flat, minlength=2 * n_bins * n_groups).reshape(n_bins, n_groups, 2) / m


def valid_frequencies(q_tilde: np.ndarray) -> np.ndarray:
    """The noisy table projected onto valid frequency tables: every cell clipped at 0 (post-processing).

    The exact ``q_hat`` is non-negative, so clipping a noisy cell at 0 only moves it closer to ``q_hat``
    (``|max(q~, 0) - q_hat| <= |q~ - q_hat|``): the concentration behind LP~ (1)'s slack (Lemma B.2) holds for the
    clipped table too, and every rate ``q_(y_hat a y) / q_ay`` of a cell with ``q_ay > 0`` lies in ``[0, 1]``.
    A table without negative cells (e.g. at ``epsilon = inf``) is unchanged.

    Parameters
    ----------
    q_tilde : ndarray
        The released noisy table (any shape).

    Returns
    -------
    ndarray
        ``max(q_tilde, 0)``, same shape.
    """
    return np.maximum(np.asarray(q_tilde, dtype=float), 0.0)
