"""How many rounds the DP oracle learner plays and how its budget is split across them.

(Jagielski et al. 2019, Algorithm 3 and Theorem 4.5.)

``per_round_epsilon`` composes the 2T per-round Laplace releases with the tightest accountant available
(privacy-loss distributions or Renyi DP through dp-accounting, never worse than advanced composition);
:class:`~dpfair.classification.DPExponentiatedGradient` states which one it used.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from dpfair._validation import check_int, check_open_unit, check_positive_finite
from dpfair.privacy.accounting import advanced_composition

#: Cap on the number of rounds at finite epsilon (more rounds only spread the budget thinner) and
#: at ``epsilon = inf`` (where the game stops earlier, at duality gap ``nu``).
_MAX_ITER = 1000
_MAX_ITER_INF = 1000
#: Share of epsilon spent on the one-off releases (the cell counts; with the A-aware oracle, also
#: its Gram matrix); the ``2T`` per-round releases get the rest and all of delta.
_ONE_OFF_SHARE = 0.1
def _check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}.")
    return value




# ---------------------------------------------------------------------------- Algorithm 3 parameters
def n_constraints(n_groups: int, reference: str = "group0", constraint: Any = None) -> int:
    """Number ``K`` of constraints: ``constraint.n_constraints(n_groups)`` (a
    :class:`~dpfair.classification.constraints.FairnessConstraint`); ``None``: equalized odds, ``4(|A|-1)`` against
    group 0, ``4|A|`` against the overall rate."""
    if constraint is not None:
        return int(constraint.n_constraints(n_groups))
    return 4 * (n_groups - 1) if reference == "group0" else 4 * n_groups


def default_n_iter(
    epsilon: float, delta: float, bound_B: float, n_groups: int, n_rows: int, vc_dim: int, beta: float,
    *, reference: str = "group0", constraint: Any = None,
) -> int:
    """Algorithm 3, line 1: ``T = B sqrt(ln(K+1)) m eps / (2 (2|A|B+1) sqrt(ln(1/delta)) (d ln m + ln(2/beta)))``.

    ``K + 1 = 4|A| - 3`` against group 0 (the paper's); ``d`` is the VC dimension of the hypothesis
    class (linear thresholds: number of weights).  Rounded down, at least 1, at most ``_MAX_ITER``;
    ``_MAX_ITER_INF`` at ``epsilon = inf``.  With one group there is no constraint and one round solves
    the problem.
    """
    if n_groups == 1:
        return 1
    if math.isinf(epsilon):
        return _MAX_ITER_INF
    n_plus_1 = n_constraints(n_groups, reference, constraint) + 1
    numerator = bound_B * math.sqrt(math.log(n_plus_1)) * n_rows * epsilon
    denominator = 2.0 * (2 * n_groups * bound_B + 1) * math.sqrt(math.log(1.0 / delta))
    denominator *= vc_dim * math.log(max(n_rows, 2)) + math.log(2.0 / beta)
    t = numerator / denominator
    return int(min(max(math.floor(t), 1), _MAX_ITER)) if math.isfinite(t) else _MAX_ITER


def accuracy_n_iter(bound_B: float, nu: float, n_groups: int, *, reference: str = "group0", constraint: Any = None) -> int:
    """Rounds after which the exact game is a ``nu``-approximate equilibrium: ``ceil(16 B^2 ln(K+1) / nu^2)``.

    Lemma 4.2 (Freund & Schapire) without noise and with the step ``eta = (1/2) sqrt(ln(K+1) / T)``:
    the auditor's regret is ``B ln(K+1) / (eta T) + 4 eta B = 4 B sqrt(ln(K+1) / T)``, at most ``nu`` from
    this ``T`` on; the exact learner has no regret (Theorem 4.3 with ``R_Q = 0``).
    """
    if n_groups == 1:
        return 1
    n_plus_1 = n_constraints(n_groups, reference, constraint) + 1
    t = 16.0 * bound_B**2 * math.log(n_plus_1) / nu**2
    return int(min(max(math.ceil(t), 1), 10**9))  # at least one round (B^2 can underflow to 0)


def min_informative_n_iter(n_groups: int, *, reference: str = "group0", constraint: Any = None) -> int:
    """``ceil(16 ln(K+1))``: below it the auditor's regret bound ``4 B sqrt(ln(K+1) / T)`` is at least ``B``."""
    return math.ceil(16.0 * math.log(n_constraints(n_groups, reference, constraint) + 1)) if n_groups > 1 else 1


def default_eta(n_groups: int, n_iter: int, *, reference: str = "group0", constraint: Any = None) -> float:
    """Algorithm 3, line 1: ``eta = (1/2) sqrt(ln(K+1) / T)`` (any positive value with one group)."""
    return 0.5 * math.sqrt(math.log(n_constraints(n_groups, reference, constraint) + 1) / n_iter) if n_groups > 1 else 1.0


def split_epsilon(epsilon: float, delta: float, n_iter: int) -> tuple[float, float, float]:
    """Algorithm 3's accounting (``accountant="paper"``): ``(epsilon_step, epsilon_rest, delta_used)``.

    ``epsilon_step = epsilon / (4 sqrt(T ln(1/delta)))`` (Algorithm 3, line 5).  The ``2T`` pure
    ``epsilon_step``-DP releases compose (:func:`~dpfair.privacy.advanced_composition` with slack
    ``delta``, or basic composition when that is smaller) to ``epsilon_loop``; the rest,
    ``epsilon - epsilon_loop``, pays for the one-off releases.  When less than ``epsilon / 10`` would be
    left, ``epsilon_step`` is lowered (bisection) until ``epsilon / 10`` is.
    """
    k = 2 * n_iter
    step = epsilon / (4.0 * math.sqrt(n_iter * math.log(1.0 / delta)))
    target = (1.0 - _ONE_OFF_SHARE) * epsilon
    if _advanced_cost(step, k, delta)[0] > target:
        step = _largest_step(lambda s: _advanced_cost(s, k, delta)[0], target, step)
    spent, delta_used = _advanced_cost(step, k, delta)
    return step, epsilon - spent, delta_used


def _advanced_cost(step: float, k: int, delta: float) -> tuple[float, float]:
    """``(epsilon, delta)`` of ``k`` pure ``step``-DP releases: the smaller of basic and advanced composition."""
    basic = k * step
    adv, adv_delta = advanced_composition(step, 0.0, k, delta)
    return (basic, 0.0) if basic <= adv else (adv, adv_delta)


def _largest_step(cost: Any, target: float, hi: float, *, iterations: int = 200, rtol: float = 0.0) -> float:
    """Largest ``s`` in ``[0, hi]`` with ``cost(s) <= target`` (``cost`` increasing), by bisection."""
    lo = 0.0
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if cost(mid) <= target:
            lo = mid
        else:
            hi = mid
        if rtol and hi - lo <= rtol * hi:
            break
    return lo


def _laplace_event(step: float, k: int) -> Any:
    import dp_accounting

    return dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / step), k)


def _rdp_epsilon(step: float, k: int, delta: float) -> float:
    from dp_accounting import rdp

    accountant = rdp.RdpAccountant()
    accountant.compose(_laplace_event(step, k))
    return float(accountant.get_epsilon(delta))


def _pld_epsilon(step: float, k: int, delta: float) -> float:
    from dp_accounting import pld

    # pessimistic discretization (an upper bound on the privacy loss) on a grid of step / 100
    accountant = pld.PLDAccountant(value_discretization_interval=max(step * 1e-2, 1e-6))
    accountant.compose(_laplace_event(step, k))
    return float(accountant.get_epsilon(delta))


@functools.lru_cache(maxsize=512)
def per_round_epsilon(epsilon_loop: float, delta: float, n_releases: int, accountant: str = "tight") -> tuple[float, str]:
    """Largest per-release ``epsilon'`` for which ``n_releases`` adaptive Laplace releases are ``(epsilon_loop, delta)``-DP.

    Parameters
    ----------
    epsilon_loop : float
        Total ``epsilon`` of the releases (``> 0``, finite).
    delta : float
        Total ``delta`` in ``(0, 1)``.
    n_releases : int
        Number of releases (``2T`` in Algorithm 3), ``>= 1``.
    accountant : {"tight", "advanced"}, default "tight"
        ``"advanced"``: the larger ``epsilon'`` that basic composition or the advanced composition
        theorem (Dwork, Rothblum & Vadhan 2010) certifies.  ``"tight"``: the largest that the privacy loss
        distribution of the composed Laplace mechanisms (``dp_accounting``'s PLD accountant, whose
        pessimistic discretization only over-states the loss), their Renyi-DP curve
        (``dp_accounting``'s RDP accountant) or the ``"advanced"`` bound certifies.

    Returns
    -------
    epsilon_step : float
        The per-release ``epsilon'``.
    certified_by : str
        The bound that certifies it: ``"pld"``, ``"rdp"``, ``"advanced composition"`` or ``"basic composition"``.

    Raises
    ------
    ValueError
        If an argument is invalid (the message names it).

    Examples
    --------
    >>> step_tight, how = per_round_epsilon(9.0, 1e-7, 200)
    >>> step_advanced, _ = per_round_epsilon(9.0, 1e-7, 200, "advanced")
    >>> bool(step_tight > step_advanced), how
    (True, 'pld')
    """
    epsilon_loop = check_positive_finite(epsilon_loop, "epsilon_loop")
    delta = check_open_unit(delta, "delta")
    k = check_int(n_releases, "n_releases", minimum=1)
    accountant = _check_choice(accountant, "accountant", ("tight", "advanced"))
    basic = epsilon_loop / k
    adv_step = _largest_step(lambda s: advanced_composition(s, 0.0, k, delta)[0], epsilon_loop, epsilon_loop,
                             iterations=100, rtol=1e-12)
    best, how = (basic, "basic composition") if basic >= adv_step else (adv_step, "advanced composition")
    if accountant == "advanced":
        return best, how
    if not 1e-12 <= best <= 50.0:
        # beyond 50 the loss is nearly deterministic and basic composition is within ~1 % of the PLD bound;
        # below 1e-12 the releases carry no information (the estimator refuses such noise scales)
        return best, how
    with np.errstate(all="ignore"):
        try:  # Renyi DP: cheap, so a wide bisection; start above the best certified step
            hi = 2.0 * best
            while _rdp_epsilon(hi, k, delta) <= epsilon_loop and hi < 1e3:
                hi *= 2.0
            rdp_step = _largest_step(lambda s: _rdp_epsilon(s, k, delta), epsilon_loop, hi, iterations=60, rtol=1e-6)
            if rdp_step > best and _rdp_epsilon(rdp_step, k, delta) <= epsilon_loop:
                best, how = rdp_step, "rdp"
        except (ValueError, ArithmeticError):  # an accountant's numerical failure: keep the certified step
            pass
        try:  # privacy loss distributions: the exact loss of composed Laplace mechanisms (pessimistic grid)
            lo, hi = best, 1.5 * best
            while _pld_epsilon(hi, k, delta) <= epsilon_loop and hi < 1e3:
                lo, hi = hi, 1.5 * hi
            pld_step = lo
            for _ in range(20):
                mid = 0.5 * (pld_step + hi)
                if _pld_epsilon(mid, k, delta) <= epsilon_loop:
                    pld_step = mid
                else:
                    hi = mid
                if hi - pld_step <= 1e-4 * hi:
                    break
            if pld_step > best and _pld_epsilon(pld_step, k, delta) <= epsilon_loop:
                best, how = pld_step, "pld"
        except (ValueError, ArithmeticError):
            pass
    return best, how


def privacy_split(
    epsilon: float, delta: float, n_iter: int, accountant: str
) -> tuple[float, float, str]:
    """``(epsilon_step, epsilon_one_off, certified_by)``: per-round ``epsilon'`` and what the one-off releases get."""
    if accountant == "paper":
        step, rest, _ = split_epsilon(epsilon, delta, n_iter)
        return step, rest, "Algorithm 3's epsilon' = epsilon / (4 sqrt(T ln(1/delta))) under advanced composition"
    loop = (1.0 - _ONE_OFF_SHARE) * epsilon
    step, how = per_round_epsilon(loop, delta, 2 * n_iter, accountant)
    return step, epsilon - loop, how
