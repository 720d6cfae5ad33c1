"""The PRIVATIZER's argument checks and entry count, shared by its calibrations.

Kept apart from :mod:`dpfair.bandits.fairx._privatizer_calibration` so that the exact BLT release
(:mod:`dpfair.bandits.fairx._privatizer_exact`), which that calibration dispatches to, can use them without the two
modules importing each other.
"""

from __future__ import annotations

import math
from typing import Any

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
