"""Regret of group meritocratic online selection (the Private-Fair-Greedy paper, "Definitions").

* Fair pseudo-regret: ``R(T) = sum_t F_{k*_t}(<x_{k*_t,t}, theta*>) - F_{k_t}(<x_{k_t,t}, theta*>)``, with
  ``k*_t`` a group meritocratic fair choice (the highest true relative rank);
* reward pseudo-regret: ``sum_t max_k <x_{k,t}, theta*> - <x_{k_t,t}, theta*>``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfair._validation import as_finite_array, check_int

__all__ = ["cumulative_fair_regret", "cumulative_regret"]


def _chosen(values: Any, actions: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    v = as_finite_array(values, name, allow_nonfinite=True)
    if isinstance(actions, str | bytes):
        raise TypeError(f"actions must be integer group indices, got a {type(actions).__name__}.")
    a = np.asarray(actions)
    if v.ndim < 1 or a.shape != v.shape[:-1]:
        raise ValueError(f"actions must have the shape of {name} without its last (group) axis, got {a.shape} and {v.shape}.")
    if a.dtype.kind not in "iu" or (a < 0).any() or (a >= v.shape[-1]).any():
        raise ValueError(f"actions must be integer group indices in [0, {v.shape[-1]}).")
    if not np.isfinite(v).all():
        raise ValueError(f"{name} holds NaN or infinite values; pass finite values.")
    return v, np.take_along_axis(v, a[..., None], axis=-1)[..., 0]


def _cumulative_gap(values: Any, actions: Any, axis: Any, name: str) -> np.ndarray:
    """Running sum along the round axis of the per-round gap ``max_k v_k - v_{k_t}`` (the chosen group's
    shortfall), refusing an overflow (never inf or NaN out)."""
    v, chosen = _chosen(values, actions, name)
    with np.errstate(over="ignore", invalid="ignore"):
        gaps = v.max(axis=-1) - chosen
    axis = check_int(axis, "axis")
    if gaps.ndim == 0 or not -gaps.ndim <= axis < gaps.ndim:
        raise ValueError(f"axis={axis} is out of range for actions of shape {gaps.shape}; pass the round axis.")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.cumsum(gaps, axis=axis)
    if not np.isfinite(out).all():
        raise ValueError(f"{name} is too large: the cumulative regret overflows float64; rescale {name}.")
    return out


def cumulative_fair_regret(relative_ranks: Any, actions: Any, axis: int = 0) -> np.ndarray:
    """Cumulative fair pseudo-regret along the round axis.

    Parameters
    ----------
    relative_ranks : array-like of shape (..., K)
        True relative ranks ``F_k(<x_{k,t}, theta*>)`` of every candidate.
    actions : array-like of int of shape (...)
        The chosen group of every round.
    axis : int, default 0
        The round axis of ``actions``.

    Returns
    -------
    numpy.ndarray
        Running sum of ``max_k F_k - F_{k_t}``, the shape of ``actions``.
    """
    return _cumulative_gap(relative_ranks, actions, axis, "relative_ranks")


def cumulative_regret(mean_rewards: Any, actions: Any, axis: int = 0) -> np.ndarray:
    """Cumulative reward pseudo-regret along the round axis.

    Parameters
    ----------
    mean_rewards : array-like of shape (..., K)
        ``<x_{k,t}, theta*>`` of every candidate.
    actions : array-like of int of shape (...)
        The chosen group of every round.
    axis : int, default 0
        The round axis of ``actions``.

    Returns
    -------
    numpy.ndarray
        Running sum of ``max_k <x_k, theta*> - <x_{k_t}, theta*>``, the shape of ``actions``.
    """
    return _cumulative_gap(mean_rewards, actions, axis, "mean_rewards")
