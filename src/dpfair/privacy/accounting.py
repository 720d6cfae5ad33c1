"""Pure functions for privacy conversion, composition and noise calibration.

Notation: pure ``epsilon``-DP, approximate ``(epsilon, delta)``-DP and ``rho``-zCDP
(zero-concentrated DP, Bun & Steinke 2016).  ``inf`` means "no privacy" everywhere.
Every function of ``__all__`` validates its arguments (NaN is always refused), then calls its kernel:
``zcdp_delta_unvalidated``, ``zcdp_to_approx_dp_unvalidated`` and ``zcdp_for_approx_dp_unvalidated`` (outside
``__all__``) compute the same numbers without a check, for a calibration inside dpfair that validated its
arguments once and calls the conversions many times in its search
(the PRIVATIZER's ``calibrate_privatizer``), as does ``zcdp_to_approx_dp_with_sampler_unvalidated`` (the
conversion less a tabulated sampler's share of ``delta``).

Float range
-----------
Conversions that return a privacy *loss* (an epsilon, a delta or a rho that a release
costs) round towards more loss, never less: a value beyond the float64 range is
returned as ``inf`` (a vacuous but true bound) and one that underflows is returned as
the smallest positive float.  Calibrations that return a noise scale refuse, with a
:class:`ValueError` naming the argument, any input whose scale is not representable
(it would overflow to ``inf`` or underflow to 0, which would add no noise at a finite
epsilon).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from scipy import optimize

from dpfair._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_nonnegative_finite,
    check_rho,
    check_sensitivity,
)

# the Gaussian mechanism's calibration and its exact privacy profile live in their own module (the 800-line rule),
# re-exported here; that module imports nothing of this one
from dpfair.privacy._gaussian_profile import (
    _check_delta_open,
    _representable_scale,
    gaussian_delta,
    gaussian_dp_delta,
    gaussian_dp_epsilon,
    gaussian_dp_mu,
    gaussian_sigma_approx_dp,
    gaussian_sigma_zcdp,
)

__all__ = [
    "advanced_composition",
    "approx_dp_to_zcdp",
    "basic_composition",
    "exponential_mechanism_to_zcdp",
    "gaussian_delta",
    "gaussian_dp_delta",
    "gaussian_dp_epsilon",
    "gaussian_dp_mu",
    "gaussian_sigma_approx_dp",
    "gaussian_sigma_zcdp",
    "laplace_scale",
    "pure_dp_to_zcdp",
    "rdp_to_approx_dp",
    "zcdp_composition",
    "zcdp_delta",
    "zcdp_to_approx_dp",
]


_SMALLEST = math.ulp(0.0)  # smallest positive float (subnormal)
_MAX_FLOAT = float(np.finfo(float).max)


def _round_up_loss(value: float) -> float:
    """A privacy loss that underflowed to 0 is reported as the smallest positive float (never 0)."""
    return value if value > 0 else _SMALLEST


def _cks_log_delta(rho: float, epsilon: float, log_am1: float) -> float:
    # Canonne, Kamath & Steinke (2020), Prop. 12: for every alpha > 1,
    # delta <= exp((alpha-1)(alpha*rho - eps)) / (alpha - 1) * (1 - 1/alpha)^alpha.
    # With a = alpha - 1 = exp(log_am1) the log of the bound is
    # a*(a*rho + rho - eps) + a*log(a) - (1 + a)*log1p(a)
    # = a*(a*rho + rho - eps) - a*log1p(1/a) - log1p(a), written without cancellation.
    a = math.exp(log_am1)
    value = a * (a * rho + (rho - epsilon)) - a * math.log1p(math.exp(-log_am1)) - math.log1p(a)
    # clipped so the minimizer's arithmetic cannot overflow; exp(-1e300) is 0 and exp(1e300) capped at 1 anyway
    return min(max(value, -1e300), 1e300)


def _zcdp_log_delta(rho: float, epsilon: float) -> float:
    """``log`` of :func:`zcdp_delta` (finite rho > 0), without over- or underflow."""
    # the optimal alpha - 1 is about sqrt(log(1/delta) / rho) for large rho: search low enough
    lower = max(-700.0, min(-30.0, -0.5 * math.log(rho) - 10.0))
    upper = min(700.0, max(30.0, -0.5 * math.log(rho) + 10.0))
    res = optimize.minimize_scalar(
        lambda la: _cks_log_delta(rho, epsilon, la),
        bounds=(lower, upper),
        method="bounded",
        options={"xatol": 1e-12},
    )
    # every alpha gives a valid bound: take the best of the optimum and the search's ends
    best = min(float(res.fun), _cks_log_delta(rho, epsilon, lower), _cks_log_delta(rho, epsilon, upper))
    return min(0.0, best)


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest ``delta`` such that ``rho``-zCDP implies ``(epsilon, delta)``-DP (tight bound).

    Uses the optimal conversion of Canonne, Kamath & Steinke (2020, Prop. 12),
    minimized over the Renyi order ``alpha > 1``.

    Parameters
    ----------
    rho : float
        The zCDP parameter (> 0; ``inf`` gives 1).
    epsilon : float
        Finite ``epsilon >= 0``.

    Returns
    -------
    float
        ``delta`` in ``[0, 1]`` (0 when it underflows).

    Raises
    ------
    TypeError, ValueError
        If an argument is not a real number in its range.
    """
    return zcdp_delta_unvalidated(check_rho(rho), check_nonnegative_finite(epsilon, "epsilon"))


def zcdp_delta_unvalidated(rho: float, epsilon: float) -> float:
    """:func:`zcdp_delta` of validated arguments (``rho > 0``, finite ``epsilon >= 0``): for callers that checked them."""
    if math.isinf(rho):
        return 1.0
    return math.exp(_zcdp_log_delta(rho, epsilon))


def zcdp_to_approx_dp(rho: float, delta: float, *, method: str = "tight") -> float:
    """Convert ``rho``-zCDP to ``(epsilon, delta)``-DP and return ``epsilon``.

    Parameters
    ----------
    rho : float
        The zCDP parameter (> 0; ``inf`` gives ``inf``).
    delta : float
        Target ``delta`` in (0, 1).
    method : {"tight", "standard"}
        ``"standard"``: ``rho + 2*sqrt(rho*ln(1/delta))`` (Bun & Steinke 2016, Prop. 1.3).
        ``"tight"``: the optimal conversion of Canonne, Kamath & Steinke (2020), the one
        OpenDP's ``make_zCDP_to_approxDP`` uses; never larger than ``"standard"`` (where
        float64 cannot resolve the difference, for huge ``rho``, it returns ``"standard"``).

    Returns
    -------
    float
        ``epsilon >= 0``; ``inf`` for ``rho = inf`` or beyond the float64 range.

    Raises
    ------
    TypeError, ValueError
        If an argument is not a real number in its range, or ``method`` is unknown.
    """
    rho = check_rho(rho)
    delta = _check_delta_open(delta)
    if method not in ("tight", "standard"):
        raise ValueError(f"method must be 'tight' or 'standard', got {method!r}.")
    return zcdp_to_approx_dp_unvalidated(rho, delta, method)


def zcdp_to_approx_dp_unvalidated(rho: float, delta: float, method: str = "tight") -> float:
    """:func:`zcdp_to_approx_dp` of validated arguments (``rho > 0``, ``delta`` in (0, 1), a known ``method``)."""
    if math.isinf(rho):
        return math.inf
    standard = rho + 2.0 * math.sqrt(rho) * math.sqrt(math.log(1.0 / delta))
    if method == "standard" or math.isinf(standard):
        return standard
    # epsilon(delta) is the inverse of the decreasing function zcdp_delta(rho, .)
    log_delta = math.log(delta)
    if _zcdp_log_delta(rho, 0.0) <= log_delta:
        return 0.0
    hi = min(standard * (1.0 + 1e-9) + 1.0, _MAX_FLOAT)
    if _zcdp_log_delta(rho, hi) - log_delta > 0:
        return standard  # the tight bound is not resolvable in float64 here; the standard one is valid
    tight = float(optimize.brentq(lambda e: _zcdp_log_delta(rho, e) - log_delta, 0.0, hi, xtol=1e-14, rtol=1e-13))
    # brentq may stop just below the root: return only an epsilon whose delta is verified
    for step in (0.0, 1e-13, 1e-11, 1e-9):
        candidate = tight * (1.0 + step) + step
        if candidate < standard and _zcdp_log_delta(rho, candidate) <= log_delta:
            return candidate
    return standard


def zcdp_to_approx_dp_with_sampler_unvalidated(rho: float, delta: float, tv: float,
                                               epsilon_hint: float) -> tuple[float, float]:
    """``epsilon`` of ``rho``-zCDP at ``delta`` less a tabulated sampler's share, validated arguments.

    A mechanism whose exact Gaussian noise is ``rho``-zCDP, drawn from tables at total variation ``tv`` in all
    (``n`` samples of ``tv`` each: ``n tv``), is ``(epsilon, delta)``-DP with ``epsilon`` that of ``rho`` at
    ``delta - (1 + e^epsilon) tv``: a fixed point, found in at most four rounds from ``epsilon_hint`` (each
    round's share is paid at the previous, larger ``epsilon``).  For a calibration inside dpfair that validated
    its arguments once (the PRIVATIZER's ``calibrate_privatizer``).

    Parameters
    ----------
    rho : float
        zCDP parameter of the exact mechanism (> 0).
    delta : float
        Target ``delta`` in (0, 1).
    tv : float
        The samples' total variation distance to the exact law, all samples together (>= 0).
    epsilon_hint : float
        Where the search starts: an ``epsilon`` at least the answer (the requested one).

    Returns
    -------
    tuple of float
        ``(epsilon, share)``: ``epsilon`` (``inf`` when the share alone reaches ``delta``) and the share of
        ``delta`` the sampler takes, ``(1 + e^epsilon) tv``.
    """
    eps = epsilon_hint
    for _ in range(4):
        share = (1.0 + math.exp(min(eps, 700.0))) * tv
        if share >= delta:
            return math.inf, share
        new = zcdp_to_approx_dp_unvalidated(rho, delta - share)
        if new <= eps:
            return new, (1.0 + math.exp(min(eps, 700.0))) * tv
        eps = new
    return eps, (1.0 + math.exp(min(eps, 700.0))) * tv


def zcdp_for_approx_dp(epsilon: float, delta: float) -> float:
    """Largest ``rho`` whose tight conversion (:func:`zcdp_to_approx_dp`) gives at most ``(epsilon, delta)``.

    The inverse of the tight conversion of Canonne, Kamath & Steinke (2020, Prop. 12): a mechanism
    calibrated to this ``rho`` spends exactly the requested ``(epsilon, delta)`` (to about 1e-12 in
    ``epsilon``), where :func:`approx_dp_to_zcdp` (the inverse of the *standard* conversion) leaves part
    of it unused.

    Parameters
    ----------
    epsilon : float
        Target ``epsilon > 0`` (``inf`` gives ``inf``).
    delta : float
        Target ``delta`` in (0, 1).

    Returns
    -------
    float
        ``rho > 0`` with ``zcdp_delta(rho, epsilon) <= delta``; never below ``approx_dp_to_zcdp(epsilon, delta)``.

    Raises
    ------
    TypeError, ValueError
        If an argument is not a real number in its range, or ``epsilon`` is 0 or so small that ``rho``
        underflows.
    """
    return zcdp_for_approx_dp_unvalidated(check_epsilon(epsilon), _check_delta_open(delta))


def zcdp_for_approx_dp_unvalidated(epsilon: float, delta: float) -> float:
    """:func:`zcdp_for_approx_dp` of validated arguments (``epsilon > 0``, ``delta`` in (0, 1)): for callers that checked them."""
    if math.isinf(epsilon):
        return math.inf
    standard = _approx_dp_to_zcdp(epsilon, delta)  # valid: the tight epsilon of this rho is at most epsilon
    log_delta = math.log(delta)

    def excess(log_rho: float) -> float:
        return _zcdp_log_delta(math.exp(log_rho), epsilon) - log_delta

    lo = math.log(standard)
    if excess(lo) > 0:  # pragma: no cover - the tight bound is never above the standard one
        return standard
    hi = lo + 0.5
    while excess(hi) <= 0 and hi < 700.0:
        lo, hi = hi, hi + 0.5
    if excess(hi) <= 0:  # pragma: no cover - beyond float64
        return math.exp(lo)
    rho = math.exp(float(optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=1e-15)))
    # brentq may stop just above the root: return only a rho whose delta is verified
    for step in (0.0, 1e-14, 1e-12, 1e-10):
        candidate = rho * (1.0 - step)
        log_candidate = _zcdp_log_delta(candidate, epsilon)
        if log_candidate <= log_delta and math.exp(log_candidate) <= delta:
            return max(candidate, standard)
    return max(math.exp(lo), standard)


def approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """``rho`` whose standard conversion gives exactly ``(epsilon, delta)``.

    ``rho = (sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)))**2``, the rule the
    Private-Fair-Greedy paper uses to split an ``(epsilon, delta)`` budget across
    zCDP releases (it inverts ``epsilon = rho + 2*sqrt(rho*ln(1/delta))``).

    Parameters
    ----------
    epsilon : float
        Target ``epsilon > 0`` (``inf`` gives ``inf``).
    delta : float
        Target ``delta`` in (0, 1).

    Returns
    -------
    float
        ``rho > 0``.

    Raises
    ------
    TypeError, ValueError
        If an argument is not a real number in its range, or ``epsilon`` is so small that
        ``rho`` underflows float64 (a rho of 0 cannot be spent).
    """
    return _approx_dp_to_zcdp(check_epsilon(epsilon), _check_delta_open(delta))


def _approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """:func:`approx_dp_to_zcdp` of validated arguments (``epsilon > 0``, ``delta`` in (0, 1))."""
    if math.isinf(epsilon):
        return math.inf
    log_inv = math.log(1.0 / delta)
    # (sqrt(L + eps) - sqrt(L))**2 written without cancellation
    root = epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))
    rho = root * root
    if rho == 0:
        raise ValueError(f"epsilon={epsilon!r} is so small that rho underflows float64; use a larger epsilon.")
    return rho


def _real_vector(values: object, name: str) -> np.ndarray:
    """``values`` as a 1-d float64 array of real numbers (NaN refused; ``inf`` kept for the caller)."""
    try:
        arr = np.atleast_1d(np.asarray(values))
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number or a 1-d array of real numbers.") from None
    if arr.dtype.kind not in "iuf" or arr.ndim != 1 or arr.size == 0:
        raise TypeError(f"{name} must be a real number or a non-empty 1-d array of real numbers, got dtype {arr.dtype}"
                        f" and shape {arr.shape}.")
    arr = arr.astype(np.float64)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN.")
    return arr


def rdp_to_approx_dp(rdp: float | Iterable[float], orders: float | Iterable[float], delta: float) -> float:
    """Convert a Renyi-DP curve to ``(epsilon, delta)``-DP and return ``epsilon``.

    A mechanism that is ``(lambda, rdp(lambda))``-RDP at each order ``lambda > 1`` is
    ``(rdp(lambda) + log(1/delta) / (lambda - 1), delta)``-DP for every one of them (Mironov 2017,
    Proposition 3); the smallest of these epsilons over the given orders is returned.  Any set of
    orders gives a valid bound; a finer grid gives a smaller one.

    Parameters
    ----------
    rdp : float or array-like of shape (n_orders,)
        RDP parameters ``rdp(lambda) >= 0`` at each order (``inf``: no bound at that order).
    orders : float or array-like of shape (n_orders,)
        Renyi orders ``lambda``, finite and ``> 1``.
    delta : float
        Target ``delta`` in (0, 1).

    Returns
    -------
    float
        ``epsilon >= 0``; ``inf`` when no order gives a finite bound.

    Raises
    ------
    TypeError, ValueError
        If an argument is not real, ``rdp`` is negative or NaN, an order is not finite and ``> 1``,
        the two arrays differ in length, or ``delta`` is not in (0, 1).

    Examples
    --------
    A ``rho``-zCDP mechanism is ``(lambda, lambda rho)``-RDP at every order (Bun & Steinke 2016);
    over a fine grid of orders this recovers ``rho + 2 sqrt(rho log(1/delta))``:

    >>> import numpy as np
    >>> orders = 1 + np.logspace(-3, 4, 700)
    >>> round(rdp_to_approx_dp(orders * 0.005, orders, 1e-6), 3)
    0.531
    """
    delta = check_delta(delta)
    if delta == 0.0:
        raise ValueError("delta must be > 0 for this conversion (Renyi DP never gives pure DP).")
    rdp_arr = _real_vector(rdp, "rdp")
    order_arr = _real_vector(orders, "orders")
    if rdp_arr.shape != order_arr.shape:
        raise ValueError(f"rdp and orders must have the same length, got {rdp_arr.size} and {order_arr.size}.")
    if (rdp_arr < 0).any():
        raise ValueError("rdp must be >= 0 at every order (a Renyi divergence is non-negative).")
    if not (np.isfinite(order_arr).all() and (order_arr > 1).all()):
        raise ValueError("orders must be finite and > 1 (Renyi orders).")
    with np.errstate(over="ignore"):
        epsilons = rdp_arr + math.log(1.0 / delta) / (order_arr - 1.0)  # Mironov (2017), Proposition 3
    best = float(np.min(epsilons))
    return best if math.isfinite(best) else math.inf


def pure_dp_to_zcdp(epsilon: float) -> float:
    """``epsilon``-DP implies ``epsilon**2 / 2``-zCDP (Bun & Steinke 2016, Prop. 1.4).

    Parameters
    ----------
    epsilon : float
        ``epsilon > 0`` (``inf`` gives ``inf``).

    Returns
    -------
    float
        ``rho``, rounded up (``inf`` past the float range, never 0).

    Raises
    ------
    TypeError, ValueError
        If ``epsilon`` is not a real number > 0.
    """
    epsilon = check_epsilon(epsilon)
    return _round_up_loss(epsilon * epsilon / 2.0)


def exponential_mechanism_to_zcdp(epsilon: float) -> float:
    """The ``epsilon``-DP exponential mechanism is ``epsilon**2 / 8``-zCDP.

    Bounded-range argument of Cesar & Rogers (2021); applies to the exponential
    mechanism only, not to arbitrary pure-DP mechanisms.

    Parameters
    ----------
    epsilon : float
        ``epsilon > 0`` (``inf`` gives ``inf``).

    Returns
    -------
    float
        ``rho``, rounded up (``inf`` past the float range, never 0).

    Raises
    ------
    TypeError, ValueError
        If ``epsilon`` is not a real number > 0.
    """
    epsilon = check_epsilon(epsilon)
    return _round_up_loss(epsilon * epsilon / 8.0)


def _iterate(values: Iterable, name: str) -> Iterable:
    if isinstance(values, str | bytes):
        raise TypeError(f"{name} must be an iterable of numbers or pairs, got a {type(values).__name__}.")
    try:
        return iter(values)
    except TypeError:
        raise TypeError(f"{name} must be an iterable, got {type(values).__name__}.") from None


def basic_composition(costs: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """Sum of ``(epsilon_i, delta_i)``: the basic composition theorem.

    Parameters
    ----------
    costs : iterable of (epsilon, delta) pairs
        Each ``epsilon_i > 0`` (``inf`` allowed) and ``0 <= delta_i < 1``.

    Returns
    -------
    epsilon_total : float
        The sum of the ``epsilon_i``; ``inf`` if a cost is infinite or the sum exceeds the
        float range (0.0 for an empty ``costs``).
    delta_total : float
        The sum of the ``delta_i``, capped at 1 (0.0 for an empty ``costs``).

    Raises
    ------
    TypeError, ValueError
        If ``costs`` is not an iterable of valid pairs (the message names ``costs[i]``).
    """
    total_eps = 0.0
    total_delta = 0.0
    for i, pair in enumerate(_iterate(costs, "costs")):
        if isinstance(pair, str | bytes):
            raise TypeError(f"costs[{i}] must be an (epsilon, delta) pair, got a string.")
        try:
            eps, delta = pair
        except (TypeError, ValueError):
            raise TypeError(f"costs[{i}] must be an (epsilon, delta) pair, got {type(pair).__name__}.") from None
        total_eps += check_epsilon(eps, f"costs[{i}].epsilon")
        total_delta += check_delta(delta, f"costs[{i}].delta")
    return total_eps, min(total_delta, 1.0)


def advanced_composition(epsilon: float, delta: float, k: int, delta_slack: float) -> tuple[float, float]:
    """Compose ``k`` adaptively chosen ``(epsilon, delta)``-DP mechanisms (advanced composition).

    Dwork, Rothblum & Vadhan (2010), Theorem III.3: the composition is
    ``(sqrt(2k ln(1/delta_slack)) * epsilon + k * epsilon * (exp(epsilon) - 1), k*delta + delta_slack)``-DP.

    Parameters
    ----------
    epsilon : float
        Per-mechanism ``epsilon > 0`` (``inf`` allowed).
    delta : float
        Per-mechanism ``delta`` in [0, 1).
    k : int
        Number of mechanisms, ``>= 1``.
    delta_slack : float
        The extra ``delta'`` in (0, 1).

    Returns
    -------
    epsilon_total : float
        ``sqrt(2k ln(1/delta_slack)) * epsilon + k * epsilon * (exp(epsilon) - 1)``; ``inf``
        when it exceeds the float64 range (for example ``epsilon > 709``, where
        ``exp(epsilon)`` overflows).
    delta_total : float
        ``k * delta + delta_slack``, capped at 1.

    Raises
    ------
    TypeError, ValueError
        If an argument is not valid (the message names it).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    k = check_int(k, "k", minimum=1)
    delta_slack = _check_delta_open(delta_slack, "delta_slack")
    if k > 2**1000:
        raise ValueError(f"k={k} is beyond the float64 range; compose fewer mechanisms.")
    k_float = float(k)
    delta_total = min(1.0, k_float * delta + delta_slack)
    if math.isinf(epsilon):
        return math.inf, delta_total
    try:
        growth = math.expm1(epsilon)
    except OverflowError:
        return math.inf, delta_total
    eps_total = math.sqrt(2.0 * k_float) * math.sqrt(math.log(1.0 / delta_slack)) * epsilon + k_float * epsilon * growth
    return eps_total, delta_total


def zcdp_composition(rhos: Iterable[float]) -> float:
    """Compose zCDP guarantees: the sum of the ``rho_i`` (zCDP composes additively).

    Parameters
    ----------
    rhos : iterable of float
        Each ``rho_i > 0`` (``inf`` allowed).

    Returns
    -------
    float
        The sum (``inf`` past the float range; 0.0 for an empty iterable).

    Raises
    ------
    TypeError, ValueError
        If ``rhos`` is not an iterable of valid values (the message names ``rhos[i]``).
    """
    return float(sum(check_rho(r, f"rhos[{i}]") for i, r in enumerate(_iterate(rhos, "rhos"))))


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Laplace scale ``b = sensitivity_L1 / epsilon`` for ``epsilon``-DP (0 when epsilon is inf).

    Parameters
    ----------
    sensitivity : float
        Declared L1 sensitivity (finite, > 0).
    epsilon : float
        ``epsilon > 0``; ``inf`` gives 0 (no noise).

    Returns
    -------
    float
        The Laplace scale ``b = sensitivity / epsilon`` (0.0 when ``epsilon`` is ``inf``).

    Raises
    ------
    TypeError, ValueError
        If an argument is invalid, or the scale is not representable: ``inf`` (epsilon
        too small for this sensitivity) or 0 at a finite epsilon (epsilon too large).
    """
    sensitivity = check_sensitivity(sensitivity, "sensitivity")
    epsilon = check_epsilon(epsilon)
    if math.isinf(epsilon):
        return 0.0
    return _representable_scale(sensitivity / epsilon, "epsilon")


