"""Seeded synthetic data for every setting, with controllable group disparity."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfair._validation import check_int, check_nonnegative_finite

__all__ = [
    "make_bandit_contexts",
    "make_classification",
    "make_regression",
    "make_selection_pmf",
]


def make_bandit_contexts(
    n_rounds: int, n_arms: int, dim: int, *, group_shift: float = 0.5, noise_sd: float = 0.1, random_state: Any = None
) -> dict[str, np.ndarray]:
    """Linear contextual bandit with one sensitive group per arm.

    Arm ``k``'s contexts are Gaussian around a group-specific mean (the means differ by
    ``group_shift``), then scaled to norm at most 1; ``theta`` has norm 1, so expected
    rewards ``<x, theta>`` lie in [-1, 1].

    Returns
    -------
    dict
        ``contexts`` (n_rounds, n_arms, dim), ``theta`` (dim,), ``mean_rewards``
        (n_rounds, n_arms) and ``rewards`` (mean plus Gaussian noise of sd ``noise_sd``).
    """
    n_rounds = check_int(n_rounds, "n_rounds", minimum=1)
    n_arms = check_int(n_arms, "n_arms", minimum=1)
    dim = check_int(dim, "dim", minimum=1)
    shift = check_nonnegative_finite(group_shift, "group_shift")
    rng = np.random.default_rng(random_state)
    theta = rng.normal(size=dim)
    theta /= np.linalg.norm(theta)
    means = shift * rng.normal(size=(n_arms, dim)) / np.sqrt(dim)
    contexts = means[None] + rng.normal(size=(n_rounds, n_arms, dim)) / np.sqrt(dim)
    norms = np.linalg.norm(contexts, axis=-1, keepdims=True)
    contexts /= np.maximum(norms, 1.0)
    mean_rewards = contexts @ theta
    rewards = mean_rewards + noise_sd * rng.normal(size=mean_rewards.shape)
    return {"contexts": contexts, "theta": theta, "mean_rewards": mean_rewards, "rewards": rewards}


def make_selection_pmf(
    score_values: Any,
    *,
    group_probabilities: Any = (0.5, 0.5),
    qualified_rates: Any = (0.5, 0.5),
    qualified_means: Any = (0.7, 0.7),
    unqualified_means: Any = (0.3, 0.3),
    concentration: float = 10.0,
) -> np.ndarray:
    """Joint PMF ``P(A = a, Y = y, R = r)`` on a score grid, shape (n_groups, 2, n_scores).

    ``R | A = a, Y = y`` is a discretized Beta law with mean ``qualified_means[a]`` (y = 1)
    or ``unqualified_means[a]`` (y = 0) and the given concentration (alpha + beta); unequal
    means across groups create disparity.
    """
    from scipy import stats

    grid = np.asarray(score_values, dtype=float)
    p_a = np.asarray(group_probabilities, dtype=float)
    q = np.asarray(qualified_rates, dtype=float)
    mus = np.stack([np.asarray(unqualified_means, float), np.asarray(qualified_means, float)], axis=1)
    if not (np.isclose(p_a.sum(), 1.0) and (p_a > 0).all()):
        raise ValueError("group_probabilities must be positive and sum to 1.")
    lo, hi = grid.min(), grid.max()
    edges = np.concatenate([[lo], (grid[1:] + grid[:-1]) / 2, [hi]])
    u = (edges - lo) / (hi - lo)
    out = np.empty((p_a.size, 2, grid.size))
    for a in range(p_a.size):
        for y in range(2):
            m = float(np.clip((mus[a, y] - lo) / (hi - lo), 1e-3, 1 - 1e-3))
            cdf = stats.beta(m * concentration, (1 - m) * concentration).cdf(u)
            pmf = np.diff(cdf)
            out[a, y] = pmf / pmf.sum() * p_a[a] * (q[a] if y == 1 else 1 - q[a])
    return out


def make_regression(
    n_samples: int, *, n_groups: int = 2, n_features: int = 5, disparity: float = 1.0, random_state: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Linear regression data whose target distribution shifts by ``disparity`` per group.

    Returns ``(X, y, groups)``; ``y`` is squashed into (0, 1) by a logistic function so its
    bounds can be declared as [0, 1].
    """
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    rng = np.random.default_rng(random_state)
    groups = rng.integers(0, n_groups, size=n_samples)
    X = rng.normal(size=(n_samples, n_features)) + disparity * groups[:, None] / max(n_groups - 1, 1)
    w = rng.normal(size=n_features) / np.sqrt(n_features)
    y = 1.0 / (1.0 + np.exp(-(X @ w + 0.3 * rng.normal(size=n_samples))))
    return X, y, groups


def make_classification(
    n_samples: int, *, n_features: int = 5, disparity: float = 1.0, random_state: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binary classification data with a binary group whose base rate differs by ``disparity``.

    Returns ``(X, y, groups)``.
    """
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    rng = np.random.default_rng(random_state)
    groups = rng.integers(0, 2, size=n_samples)
    X = rng.normal(size=(n_samples, n_features))
    w = rng.normal(size=n_features)
    logits = X @ w + disparity * (groups - 0.5)
    y = (rng.uniform(size=n_samples) < 1.0 / (1.0 + np.exp(-logits))).astype(int)
    return X, y, groups
