"""When federated agents synchronize: Algorithm 1's bounded-gap schedule and the doubling (P-FCB) baseline.

The log-det trigger (B1) depends on the data and is decided while the simulation runs
(:mod:`dpfair.bandits.fairx.simulator`), whose docstring states every rule.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpfair._validation import (
    check_allocation,
    check_int,
)

__all__ = ["PROTOCOLS", "bounded_gap", "communication_schedule"]

PROTOCOLS = ("bounded-gap", "log-det", "p-fcb")



# --------------------------------------------------------------------------------------------------
# protocols
# --------------------------------------------------------------------------------------------------
def _check_protocol(protocol: Any) -> str:
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")
    return protocol


def bounded_gap(horizon: int, n_agents: int, dim: int) -> int:
    """The fixed gap ``G = ceil(T / (m d^2 ln(1 + T/d)^2))`` of Algorithm 1, lines 12 and 15.

    Parameters
    ----------
    horizon, n_agents, dim : int
        ``T``, ``m`` and ``d``.

    Returns
    -------
    int
        ``G >= 1``.
    """
    T = check_int(horizon, "horizon", minimum=1)
    m = check_int(n_agents, "n_agents", minimum=1)
    d = check_int(dim, "dim", minimum=1)
    if T >= 2**63:
        raise ValueError(f"horizon={T} does not fit the int64 round numbers; use a horizon below 2**63.")
    # float(v) raises for integers above the float64 range: such m or d give a denominator of inf (G = 1)
    as_float = lambda v: float(v) if v < 2**1000 else math.inf  # noqa: E731
    denominator = as_float(m) * as_float(d) * as_float(d) * math.log1p(T / as_float(d)) ** 2
    if not denominator > 0 or math.isinf(denominator):  # d so large that T / d underflows: m d^2 (T/d)^2 = m T^2 >= T
        return 1
    return max(1, math.ceil(T / denominator))


def communication_schedule(protocol: str, horizon: int, n_agents: int, dim: int) -> np.ndarray:
    """Return the rounds (1-based) at whose end the agents synchronize, for the data-independent protocols.

    Parameters
    ----------
    protocol : {"bounded-gap", "p-fcb"}
        ``"bounded-gap"``: Algorithm 1, lines 10-17; ``"p-fcb"``: powers of two.  (``"log-det"``
        depends on the data.)
    horizon, n_agents, dim : int
        ``T``, ``m`` and ``d``.

    Returns
    -------
    numpy.ndarray
        Increasing round numbers in ``[1, T]``.

    Examples
    --------
    >>> communication_schedule("bounded-gap", 10_000, 2, 2)[:8].tolist()  # G = 18
    [1, 2, 4, 8, 16, 32, 50, 68]
    """
    protocol = _check_protocol(protocol)
    T = check_int(horizon, "horizon", minimum=1)
    if protocol == "log-det":
        raise ValueError("the log-det protocol's rounds depend on the data; simulate it instead.")
    if T >= 2**63:
        raise ValueError(f"horizon={T} does not fit the int64 round numbers; use a horizon below 2**63.")
    if protocol == "p-fcb":
        return 2 ** np.arange(T.bit_length(), dtype=np.int64)
    gap = bounded_gap(T, n_agents, dim)
    # Algorithm 1, lines 12-16: tau = 1, 2, 4, ... doubles while tau < G, then grows by G.  The doubling
    # phase ends at the first power of two >= G, 2**k with k = ceil(log2 G); from there tau = 2**k + i G.
    k = (gap - 1).bit_length()
    doubling = [2**i for i in range(k) if 2**i <= T]
    start = 2**k
    count = (T - start) // gap + 1 if start <= T else 0
    check_allocation(
        8 * (len(doubling) + count), subject=f"horizon={T} with n_agents={n_agents} and dim={dim}",
        what="the communication rounds", fix="lower horizon",
    )
    return np.concatenate([np.asarray(doubling, dtype=np.int64), start + gap * np.arange(count, dtype=np.int64)])
