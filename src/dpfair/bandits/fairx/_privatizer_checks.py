"""The PRIVATIZER's argument checks and entry count, shared by its calibrations.

Kept apart from :mod:`dpfair.bandits.fairx._privatizer_calibration` so that the exact BLT release
(:mod:`dpfair.bandits.fairx._privatizer_exact`), which that calibration dispatches to, can use them without the two
modules importing each other.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpfair._validation import check_epsilon, check_open_unit, check_positive_finite

__all__: list[str] = []


def _check_privacy(epsilon: Any, delta: Any) -> tuple[float, float]:
    """The public functions' own check of ``(epsilon, delta)`` (a learner's template checked its own already)."""
    epsilon = check_epsilon(epsilon)
    delta = check_open_unit(delta, "delta")  # the PRIVATIZER's Gaussian noise needs delta > 0
    _check_privatizer_range(epsilon, delta)
    return epsilon, delta


def _check_privatizer_range(epsilon: float, delta: float) -> None:
    """The PRIVATIZER's range of a validated ``(epsilon, delta)``: ``delta > 0``, ``epsilon`` representable noise."""
    if not delta > 0.0:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {delta!r}.")
    if math.isfinite(epsilon) and not 1e-100 <= epsilon <= 1e4:
        raise ValueError(
            f"epsilon={epsilon:g} is outside [1e-100, 1e4], where the PRIVATIZER's noise is representable in float64; "
            "use epsilon=inf for exact statistics (Fed-FairX-LinUCB) or a moderate epsilon."
        )


def _check_norm_bounds(context_bound: Any, reward_bound: Any) -> tuple[float, float]:
    bound = check_positive_finite(context_bound, "context_bound")
    reward = check_positive_finite(reward_bound, "reward_bound")
    for value, name in ((bound, "context_bound"), (reward, "reward_bound")):
        if value < 1e-75:
            raise ValueError(f"{name}={value:g} is too small: the noise it calls for underflows float64; rescale the "
                             "contexts and rewards (declare bounds above 1e-75).")
        if value > 1e75:
            raise ValueError(f"{name}={value:g} is too large: the noise it needs overflows float64; rescale the contexts "
                             "and rewards (declare bounds below 1e75).")
    return bound, reward


def _entries(n_releases: int, dim: int) -> int:
    return n_releases * (dim + 1) * (dim + 2) // 2  # one node completed per release, its distinct entries


def _check_summed_pairs(summed_pairs: Any) -> int | None:
    """``summed_pairs``: ``None`` (the summation not covered) or a positive integer below ``2**40``."""
    if summed_pairs is None:
        return None
    if isinstance(summed_pairs, bool) or not isinstance(summed_pairs, int | np.integer) or not 1 <= summed_pairs < 2**40:
        raise ValueError(f"summed_pairs must be None or an integer in [1, 2**40), got {summed_pairs!r}; pass the most "
                         "(x, y) pairs one increment sums (a learner's horizon).")
    return int(summed_pairs)


def _summation_slack(summed_pairs: int | None, bound: float, reward: float) -> float:
    """How far, in the Frobenius norm, two neighbouring increments' float64 sums can move beyond their exact difference.

    An increment is the float64 sum of ``n`` products ``z z^T`` (``z = (x, y)``, ``||z||^2 <= L^2 + B^2``), in any
    order: each entry is within ``gamma_n sum_j |z_j z_j^T|`` of the exact sum (Higham 2002, equation 3.5, the
    products' own roundings included), ``gamma_n = n u / (1 - n u)``, ``u = 2^-53``, and the matrix of those bounds
    has Frobenius norm at most ``gamma_n sum_j ||z_j||^2 <= gamma_n n (L^2 + B^2)``.  Two neighbouring increments
    each carry such an error: ``2 n gamma_n (L^2 + B^2)``, added to ``Delta`` (1.3e-5 for ``n = 10^5`` and
    ``L^2 + B^2 = 6``), times ``1 + 1e-12`` for this bound's own float evaluation.  ``None``: 0 (a direct
    ``Privatizer`` user summing increments however it likes; the proof then starts from the rounded increments).
    """
    if summed_pairs is None:
        return 0.0
    unit = 2.0**-53
    gamma = summed_pairs * unit / (1.0 - summed_pairs * unit)
    return 2.0 * summed_pairs * gamma * (bound**2 + reward**2) * (1.0 + 1e-12)
