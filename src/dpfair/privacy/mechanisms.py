"""Differentially private mechanisms: Laplace, Gaussian, exponential and exact top-m.

Every mechanism

* takes its privacy parameter and a *declared* sensitivity (never read off the data),
* draws noise only through :mod:`dpfair.privacy.noise` (secure by default; seeded when
  ``random_state`` is given),
* optionally charges a :class:`~dpfair.privacy.budget.PrivacyBudget` *before* drawing,
  so a refused charge releases nothing,
* treats ``epsilon = inf`` (or ``rho = inf``) as the exact non-private computation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import softmax

from dpfair._validation import as_finite_array, check_epsilon, check_int, check_sensitivity
from dpfair.privacy._topm import ConditionalPoissonTree
from dpfair.privacy.accounting import gaussian_sigma_approx_dp, gaussian_sigma_zcdp, laplace_scale
from dpfair.privacy.budget import PrivacyBudget
from dpfair.privacy.noise import NoiseSource, get_noise_source

__all__ = [
    "TopMExponentialMechanism",
    "exponential_mechanism",
    "exponential_probabilities",
    "gaussian_mechanism",
    "laplace_mechanism",
    "top_m_exponential_mechanism",
    "top_m_inclusion_probabilities",
]


def laplace_mechanism(
    values: Any,
    *,
    sensitivity: float,
    epsilon: float,
    random_state: Any = None,
    budget: PrivacyBudget | None = None,
    label: str = "laplace",
) -> np.ndarray:
    """Release ``values + Laplace(sensitivity / epsilon)``: pure ``epsilon``-DP.

    Parameters
    ----------
    values : array-like
        The exact statistic (any shape).
    sensitivity : float
        Declared L1 sensitivity of ``values`` to one individual's data.
    epsilon : float
        Privacy parameter (> 0; ``inf`` returns ``values`` unchanged).
    random_state : None, int, Generator or NoiseSource
        ``None``: secure noise (OpenDP). Otherwise seeded, reproducible noise.
    budget : PrivacyBudget, optional
        Charged ``(epsilon, 0)`` before any noise is drawn.
    label : str
        Ledger label for the charge.
    """
    arr = as_finite_array(values, "values", allow_empty=True)
    scale = laplace_scale(sensitivity, epsilon)
    if budget is not None:
        budget.spend(epsilon, 0.0, label=label)
    return get_noise_source(random_state).laplace(arr, scale)


def gaussian_mechanism(
    values: Any,
    *,
    sensitivity: float,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    random_state: Any = None,
    budget: PrivacyBudget | None = None,
    label: str = "gaussian",
) -> np.ndarray:
    """Release ``values + N(0, sigma**2)``, calibrated to ``rho``-zCDP or ``(epsilon, delta)``-DP.

    Give exactly one of ``rho`` (``sigma = sensitivity / sqrt(2*rho)``) or the pair
    ``(epsilon, delta)`` (the analytic Gaussian mechanism of Balle & Wang 2018, tight).

    Parameters
    ----------
    values : array-like
        The exact statistic.
    sensitivity : float
        Declared L2 sensitivity.
    rho, epsilon, delta : float
        Privacy target (see above).
    random_state, budget, label
        As in :func:`laplace_mechanism`; the budget is charged ``rho`` (zCDP) or
        ``(epsilon, delta)``.
    """
    arr = as_finite_array(values, "values", allow_empty=True)
    if (rho is None) == (epsilon is None and delta is None):
        raise ValueError("give either rho (zCDP) or both epsilon and delta, not both and not neither.")
    if rho is not None:
        sigma = gaussian_sigma_zcdp(sensitivity, rho)
        if budget is not None:
            budget.spend_zcdp(rho, label=label)
    else:
        if epsilon is None or delta is None:
            raise ValueError("the (epsilon, delta) calibration needs both epsilon and delta.")
        sigma = gaussian_sigma_approx_dp(sensitivity, epsilon, delta)
        if budget is not None:
            budget.spend(epsilon, delta, label=label)
    return get_noise_source(random_state).gaussian(arr, sigma)


def _utilities(utilities: Any) -> np.ndarray:
    return as_finite_array(utilities, "utilities", ndim=1)


def exponential_probabilities(utilities: Any, *, sensitivity: float, epsilon: float) -> np.ndarray:
    """Exact output distribution of the exponential mechanism.

    ``P(i) = exp(epsilon * u_i / (2 * sensitivity)) / Z`` (McSherry & Talwar 2007); at
    ``epsilon = inf`` it is uniform over the maximizers.
    """
    u = _utilities(utilities)
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon)
    if math.isinf(epsilon):
        best = (u == u.max()).astype(float)
        return best / best.sum()
    return softmax(epsilon * u / (2.0 * sensitivity))


def exponential_mechanism(
    utilities: Any,
    *,
    sensitivity: float,
    epsilon: float,
    random_state: Any = None,
    budget: PrivacyBudget | None = None,
    label: str = "exponential",
) -> int:
    """Pick one index with probability proportional to ``exp(epsilon * u_i / (2*sensitivity))``.

    Sampled by Gumbel-max (exact).  The secure source uses OpenDP's Gumbel noisy-max.

    Returns
    -------
    int
        The selected index.
    """
    u = _utilities(utilities)
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon)
    if budget is not None:
        budget.spend(epsilon, 0.0, label=label)
    noise = get_noise_source(random_state)
    scale = 0.0 if math.isinf(epsilon) else 2.0 * sensitivity / epsilon
    if scale == 0.0:
        best = np.flatnonzero(u == u.max())
        return int(best[min(int(noise.uniform(1)[0] * best.size), best.size - 1)])
    return noise.noisy_argmax_gumbel(u, scale)


class TopMExponentialMechanism:
    """Exact exponential mechanism over subsets of size m with an additive utility.

    ``P(G) = exp(epsilon * sum_{j in G} u_j / (2 * sensitivity)) / Z`` over all subsets
    ``G`` with ``|G| = n_select``.  ``sensitivity`` is the sensitivity of the *subset*
    utility ``sum_{j in G} u_j`` (for the mean utility of m scores in ``[lo, hi]``, pass
    ``u_j = score_j / m`` and ``sensitivity = (hi - lo) / m``).

    Sampling and inclusion probabilities are exact and take O(n * m) time (see
    :mod:`dpfair.privacy._topm`): no enumeration, and not sequential sampling without
    replacement (a different distribution).  The table built here is reused by every
    draw, so many draws from the same utilities are cheap.

    At ``epsilon = inf`` the mechanism returns the m largest utilities with ties broken
    uniformly at random.

    Parameters
    ----------
    utilities : array-like of shape (n,)
        Per-item utilities.
    n_select : int
        Subset size m, ``1 <= m <= n``.
    sensitivity : float
        Declared sensitivity of the subset utility.
    epsilon : float
        Privacy parameter (> 0, or ``inf``).
    """

    def __init__(self, utilities: Any, n_select: int, *, sensitivity: float, epsilon: float) -> None:
        self.utilities = _utilities(utilities)
        n = self.utilities.size
        self.n_select = check_int(n_select, "n_select", minimum=1)
        if self.n_select > n:
            raise ValueError(f"n_select must be <= the number of items ({n}), got {self.n_select}.")
        self.sensitivity = check_sensitivity(sensitivity)
        self.epsilon = check_epsilon(epsilon)
        self._tree: ConditionalPoissonTree | None = None
        if not math.isinf(self.epsilon) and 0 < self.n_select < n:
            log_weights = self.epsilon * self.utilities / (2.0 * self.sensitivity)
            self._tree = ConditionalPoissonTree(log_weights, self.n_select)

    def inclusion_probabilities(self) -> np.ndarray:
        """Exact ``P(j in G)`` for every item; they sum to ``n_select``."""
        n, m = self.utilities.size, self.n_select
        if m == n:
            return np.ones(n)
        if self._tree is not None:
            return self._tree.inclusion_probabilities()
        # epsilon = inf: the top m, ties at the threshold shared uniformly
        u = self.utilities
        threshold = np.sort(u)[n - m]
        above = u > threshold
        tied = u == threshold
        probs = above.astype(float)
        probs[tied] = (m - above.sum()) / tied.sum()
        return probs

    def sample(self, size: int | None = None, random_state: Any = None) -> np.ndarray:
        """Draw subsets.

        Parameters
        ----------
        size : int, optional
            Number of independent draws; ``None`` gives one draw.
        random_state : None, int, Generator or NoiseSource
            ``None``: uniforms from the OS CSPRNG. Otherwise seeded.

        Returns
        -------
        ndarray of int
            Sorted selected indices: shape ``(n_select,)``, or ``(size, n_select)``.
        """
        n_draws = 1 if size is None else check_int(size, "size", minimum=1)
        noise: NoiseSource = get_noise_source(random_state)
        n, m = self.utilities.size, self.n_select
        if m == n:
            out = np.tile(np.arange(n), (n_draws, 1))
        elif self._tree is not None:
            uniforms = noise.uniform((n_draws, len(self._tree.levels) - 1, m))
            out = self._tree.sample(uniforms)
        else:
            keys = noise.uniform((n_draws, n))
            order = np.lexsort((keys, np.broadcast_to(-self.utilities, (n_draws, n))), axis=-1)
            out = np.sort(order[:, :m], axis=1)
        return out[0] if size is None else out


def top_m_exponential_mechanism(
    utilities: Any,
    n_select: int,
    *,
    sensitivity: float,
    epsilon: float,
    random_state: Any = None,
    size: int | None = None,
    budget: PrivacyBudget | None = None,
    label: str = "top_m_exponential",
) -> np.ndarray:
    """Draw from the exact top-m exponential mechanism (see :class:`TopMExponentialMechanism`).

    ``budget`` (optional) is charged ``epsilon`` per draw before anything is drawn.
    """
    mech = TopMExponentialMechanism(utilities, n_select, sensitivity=sensitivity, epsilon=epsilon)
    if budget is not None:
        n_draws = 1 if size is None else check_int(size, "size", minimum=1)
        budget.spend(epsilon * n_draws, 0.0, label=label)
    return mech.sample(size=size, random_state=random_state)


def top_m_inclusion_probabilities(
    utilities: Any, n_select: int, *, sensitivity: float, epsilon: float
) -> np.ndarray:
    """Exact inclusion probabilities of the top-m exponential mechanism."""
    return TopMExponentialMechanism(utilities, n_select, sensitivity=sensitivity, epsilon=epsilon).inclusion_probabilities()

