"""Seeded synthetic data for every setting, with controllable group disparity.

Every generator validates its arguments (a :class:`ValueError` or :class:`TypeError` that
names the argument) and returns finite arrays of the documented shapes.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from dpfair._validation import as_finite_array, check_allocation, check_int, check_nonnegative_finite, check_positive_finite

__all__ = [
    "make_bandit_contexts",
    "make_classification",
    "make_regression",
    "make_selection_pmf",
]


def _rng(random_state: Any) -> np.random.Generator:
    """``numpy.random.default_rng(random_state)`` with an error that names ``random_state``."""
    if isinstance(random_state, bool | np.bool_):
        raise TypeError("random_state must be None, a non-negative int or a numpy Generator, got a bool.")
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"random_state must be None, a non-negative int or a numpy Generator: {exc}") from None


def _finite(value: Any, name: str) -> float:
    """``value`` as a finite float (any sign)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")
    try:
        out = float(value)
    except OverflowError:
        raise ValueError(f"{name} is outside the float64 range.") from None
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {out!r}.")
    return out


def _check_fits(function: str, n_samples: int, n_features: int, floats_per_row: int) -> None:
    """Refuse, naming ``n_samples``, sizes whose arrays (``floats_per_row`` 8-byte values a row) cannot fit."""
    check_allocation(
        8 * n_samples * floats_per_row,
        subject=f"{function}(n_samples={n_samples}, n_features={n_features})",
        what="the features and targets",
        fix="lower n_samples (or n_features)",
    )


def make_bandit_contexts(
    n_rounds: int, n_arms: int, dim: int, *, group_shift: float = 0.5, noise_sd: float = 0.1, random_state: Any = None
) -> dict[str, np.ndarray]:
    """Linear contextual bandit with one sensitive group per arm.

    Arm ``k``'s contexts are Gaussian around a group-specific mean (the means differ by
    ``group_shift``), then scaled to norm at most 1; ``theta`` has norm 1, so expected
    rewards ``<x, theta>`` lie in [-1, 1].

    Parameters
    ----------
    n_rounds : int
        Number of rounds, >= 1.
    n_arms : int
        Number of arms (one group each), >= 1.
    dim : int
        Context dimension, >= 1.
    group_shift : float, default 0.5
        Scale of the group means (finite, >= 0).
    noise_sd : float, default 0.1
        Standard deviation of the reward noise (finite, >= 0).
    random_state : None, int or numpy.random.Generator, optional
        Seed; None draws fresh entropy.

    Returns
    -------
    dict of str to ndarray
        ``contexts`` (n_rounds, n_arms, dim), ``theta`` (dim,), ``mean_rewards``
        (n_rounds, n_arms) and ``rewards`` (mean plus Gaussian noise of sd ``noise_sd``).

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If an argument is out of range, or ``noise_sd`` is so large that rewards overflow.
    """
    n_rounds = check_int(n_rounds, "n_rounds", minimum=1)
    n_arms = check_int(n_arms, "n_arms", minimum=1)
    dim = check_int(dim, "dim", minimum=1)
    shift = check_nonnegative_finite(group_shift, "group_shift")
    noise_sd = check_nonnegative_finite(noise_sd, "noise_sd")
    rng = _rng(random_state)
    theta = rng.normal(size=dim)
    theta /= np.linalg.norm(theta)
    if shift <= 1.0:
        means = shift * rng.normal(size=(n_arms, dim)) / np.sqrt(dim)
        contexts = means[None] + rng.normal(size=(n_rounds, n_arms, dim)) / np.sqrt(dim)
        norms = np.linalg.norm(contexts, axis=-1, keepdims=True)
        contexts /= np.maximum(norms, 1.0)
    else:
        # the same draws, divided by ``shift`` first so that neither the means nor the norms overflow:
        # x / max(|x|, 1) == (x / s) / max(|x / s|, 1 / s)
        means = rng.normal(size=(n_arms, dim)) / np.sqrt(dim)
        contexts = means[None] + rng.normal(size=(n_rounds, n_arms, dim)) / (np.sqrt(dim) * shift)
        norms = np.linalg.norm(contexts, axis=-1, keepdims=True)
        contexts /= np.maximum(norms, 1.0 / shift)
    mean_rewards = contexts @ theta
    with np.errstate(over="ignore", invalid="ignore"):
        rewards = mean_rewards + noise_sd * rng.normal(size=mean_rewards.shape)
    if not np.isfinite(rewards).all():
        raise ValueError(f"noise_sd={noise_sd!r} is too large: the rewards overflow float64.")
    return {"contexts": contexts, "theta": theta, "mean_rewards": mean_rewards, "rewards": rewards}


def _vector(values: Any, name: str, size: int | None = None) -> np.ndarray:
    arr = as_finite_array(values, name, ndim=1)
    if size is not None and arr.size != size:
        raise ValueError(f"{name} must have one entry per group ({size}, the length of group_probabilities), got {arr.size}.")
    return arr


def make_selection_pmf(
    score_values: Any,
    *,
    group_probabilities: Any = (0.5, 0.5),
    qualified_rates: Any = (0.5, 0.5),
    qualified_means: Any = (0.7, 0.7),
    unqualified_means: Any = (0.3, 0.3),
    concentration: float = 10.0,
) -> np.ndarray:
    """Joint PMF ``P(A = a, Y = y, R = r)`` on a score grid.

    ``R | A = a, Y = y`` is a discretized Beta law with mean ``qualified_means[a]`` (y = 1)
    or ``unqualified_means[a]`` (y = 0) and the given concentration (alpha + beta); unequal
    means across groups create disparity.  Means are taken relative to the grid's range
    and kept inside (0.001, 0.999) of it.

    Parameters
    ----------
    score_values : array-like of shape (n_scores,)
        Strictly increasing, finite score grid with at least 2 points.
    group_probabilities : array-like of shape (n_groups,), default (0.5, 0.5)
        ``P(A = a)``: positive, summing to 1.
    qualified_rates : array-like of shape (n_groups,), default (0.5, 0.5)
        ``P(Y = 1 | A = a)``, in [0, 1].
    qualified_means, unqualified_means : array-like of shape (n_groups,)
        Mean score of qualified (y = 1) and unqualified (y = 0) members of each group.
    concentration : float, default 10.0
        ``alpha + beta`` of the Beta laws (finite, > 0).

    Returns
    -------
    ndarray of shape (n_groups, 2, n_scores)
        Non-negative probabilities summing to 1.

    Raises
    ------
    TypeError
        If an argument is not numeric.
    ValueError
        If an argument has the wrong shape or is out of range.
    """
    from scipy import stats

    grid = as_finite_array(score_values, "score_values", ndim=1)
    with np.errstate(over="ignore"):
        steps = np.diff(grid)
        span = grid[-1] - grid[0] if grid.size else 0.0
    if grid.size < 2 or not (steps > 0).all():
        raise ValueError("score_values must be a strictly increasing grid of at least 2 points.")
    if not np.isfinite(span):
        raise ValueError("score_values spans more than the float range (max - min overflows); rescale the grid.")
    p_a = _vector(group_probabilities, "group_probabilities")
    with np.errstate(over="ignore"):
        total = p_a.sum()
    if not ((p_a > 0).all() and np.isclose(total, 1.0)):
        raise ValueError("group_probabilities must be positive and sum to 1.")
    q = _vector(qualified_rates, "qualified_rates", p_a.size)
    if ((q < 0) | (q > 1)).any():
        raise ValueError("qualified_rates must lie in [0, 1].")
    mus = np.stack(
        [_vector(unqualified_means, "unqualified_means", p_a.size), _vector(qualified_means, "qualified_means", p_a.size)],
        axis=1,
    )
    concentration = check_positive_finite(concentration, "concentration")
    lo, hi = grid.min(), grid.max()
    edges = np.concatenate([[lo], (grid[1:] + grid[:-1]) / 2, [hi]])
    with np.errstate(over="ignore", invalid="ignore"):
        u = (edges - lo) / (hi - lo)
        relative = (mus - lo) / (hi - lo)
    if not np.isfinite(u).all() or np.isnan(relative).any():
        raise ValueError("score_values (and the means) span more than the float64 range; rescale them.")
    out = np.empty((p_a.size, 2, grid.size))
    with np.errstate(all="ignore"):
        for a in range(p_a.size):
            for y in range(2):
                m = float(np.clip(relative[a, y], 1e-3, 1 - 1e-3))
                cdf = stats.beta(m * concentration, (1 - m) * concentration).cdf(u)
                pmf = np.diff(cdf)
                out[a, y] = pmf / pmf.sum() * p_a[a] * (q[a] if y == 1 else 1 - q[a])
    if not np.isfinite(out).all() or (out < 0).any():
        raise ValueError(f"concentration={concentration!r} is too extreme for the Beta laws; use a moderate value (1 to 1e6).")
    return out


def make_regression(
    n_samples: int, *, n_groups: int = 2, n_features: int = 5, disparity: float = 1.0, random_state: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Linear regression data whose target distribution shifts by ``disparity`` per group.

    ``y`` is squashed into [0, 1] by a logistic function so its bounds can be declared as
    [0, 1].

    Parameters
    ----------
    n_samples : int
        Number of rows, >= 1.
    n_groups : int, default 2
        Number of groups, >= 1 (labels 0 .. n_groups - 1).
    n_features : int, default 5
        Number of features, >= 1.
    disparity : float, default 1.0
        Shift of the features between the first and the last group (finite).
    random_state : None, int or numpy.random.Generator, optional
        Seed; None draws fresh entropy.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features.
    y : ndarray of shape (n_samples,)
        Target in [0, 1].
    groups : ndarray of shape (n_samples,)
        Integer group labels.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If an argument is out of range, the arrays cannot fit in this machine's memory (the
        message names ``n_samples``), or ``disparity`` is so large that the linear predictor
        overflows.
    """
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    n_groups = check_int(n_groups, "n_groups", minimum=1)
    n_features = check_int(n_features, "n_features", minimum=1)
    disparity = _finite(disparity, "disparity")
    # X, its normal draws and the shift (3 n_features floats per row), groups, noise, linear and y (4 more)
    _check_fits("make_regression", n_samples, n_features, 3 * n_features + 4)
    rng = _rng(random_state)
    groups = rng.integers(0, n_groups, size=n_samples)
    with np.errstate(over="ignore", invalid="ignore"):
        X = rng.normal(size=(n_samples, n_features)) + disparity * groups[:, None] / max(n_groups - 1, 1)
        w = rng.normal(size=n_features) / np.sqrt(n_features)
        linear = X @ w + 0.3 * rng.normal(size=n_samples)
        if not (np.isfinite(X).all() and np.isfinite(linear).all()):
            raise ValueError(f"disparity={disparity!r} is too large: the features overflow float64.")
        y = 1.0 / (1.0 + np.exp(-linear))
    return X, y, groups


def make_classification(
    n_samples: int, *, n_features: int = 5, disparity: float = 1.0, random_state: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binary classification data with a binary group whose base rate differs by ``disparity``.

    Parameters
    ----------
    n_samples : int
        Number of rows, >= 1.
    n_features : int, default 5
        Number of features, >= 1.
    disparity : float, default 1.0
        Difference of the logit offsets of group 1 and group 0 (finite).
    random_state : None, int or numpy.random.Generator, optional
        Seed; None draws fresh entropy.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features.
    y : ndarray of shape (n_samples,)
        Labels in {0, 1}.
    groups : ndarray of shape (n_samples,)
        Group labels in {0, 1}.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If an argument is out of range, or the arrays cannot fit in this machine's memory (the
        message names ``n_samples``).
    """
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    n_features = check_int(n_features, "n_features", minimum=1)
    disparity = _finite(disparity, "disparity")
    # X (n_features floats per row), groups, X @ w, the offsets, logits, the uniforms, the probabilities and y
    _check_fits("make_classification", n_samples, n_features, n_features + 7)
    rng = _rng(random_state)
    groups = rng.integers(0, 2, size=n_samples)
    X = rng.normal(size=(n_samples, n_features))
    w = rng.normal(size=n_features)
    logits = X @ w + disparity * (groups - 0.5)
    with np.errstate(over="ignore"):
        y = (rng.uniform(size=n_samples) < 1.0 / (1.0 + np.exp(-logits))).astype(int)
    return X, y, groups
