"""An exact constant-memory continual release: the BLT matrix mechanism with rounded Gaussian noise on an integer encoder.

The square-root and BLT PRIVATIZERs (:mod:`dpfair.bandits.fairx._privatizer_factorized`) add a continuous Gaussian
``z`` drawn in doubles and prove the releases private only for an ideal ``z``; the tree is exact but noisier.  This
module makes the Gaussian-mechanism stage itself integer-valued, so every step of the proof from the rounded
increments on is about the numbers the code computes (the increments themselves are float64 sums: see *What is not
covered* below), and keeps ``O(1)`` state per agent whatever the horizon.

The mechanism (one agent; every entry of the symmetric ``(d+1) x (d+1)`` increment runs the same scalar stream)
---------------------------------------------------------------------------------------------------------------
``m_1, m_2, ..`` are the agent's increments rounded to the grid ``g`` (integers, exact: ``Privatizer.to_units``).

Below ``d`` is the context dimension (``(d+1)^2 - 1`` released entries per increment) and ``k`` the BLT's number of
buffers (``i = 1 .. k``; ``k = 3`` by default).

1. **Encoder, integers only.**  ``C^{-1}`` is the BLT ``q(x) = 1 + sum_i omega_i x / (1 - theta_i x)`` of
   :func:`dpfair.privacy._blt.blt_parameters` with ``theta_i = Theta_i 2^-W`` and ``omega_i = Omega_i 2^-W``
   rounded to dyadics (``W = 48``; the rounded values *are* the factorization: ``C = 1 / q`` exactly for them).  The
   encoder holds ``k`` Python integers per entry (fixed point, ``F = 24`` fraction bits of a grid unit) and runs,
   with ``R_b(x) = floor(x / 2^b + 1/2)`` (an integer shift)::

       w_t = m_t 2^F - sum_i R_W(Omega_i s_i)        r_t = R_F(w_t)        s_i <- R_W(Theta_i s_i) + w_t

   the recursion ``q w = 2^F m`` (``w = 2^F C m``) with one rounding per product.  No floating-point operation
   touches the data.  A step whose buffers would leave ``[-2^78, 2^78)`` (or whose ``r_t`` would leave
   ``[-2^62, 2^62)``) is refused before any change, so that the compiled engine's two-word integers
   (:mod:`dpfair.bandits.fairx._exact_kernels`, where this bound is proved sufficient) compute the same integers;
   the buffers reach about ``2^70`` at Exp 1.  The refusal depends on the data, not on the noise: nothing is
   released by a refused step, but whether a step was refused is itself a function of the data, so **a refusal is
   outside the guarantee** below.  The learners never meet it: their plan refuses, before any charge, every horizon
   whose declared bounds could reach the range (:func:`check_encoder_range`); a
   :class:`~dpfair.bandits.fairx.privatizer.Privatizer` used on its own knows no bound on an increment's number of
   rounds and makes no such check, so its user can meet the refusal mid-stream, and the proof says nothing about a
   stream that ends in one.
2. **Rounded Gaussian noise.**  ``Y_t = r_t + Z_t`` with ``Z_t`` drawn by :class:`dpfair.privacy.lattice.LatticeGaussian`
   with ``law="rounded"``: the law of ``rint(X)``, ``X ~ N(0, sigma_u^2)`` (off-diagonal entries ``sigma_u = sigma / g``,
   diagonal ``sqrt(2) sigma_u``, grid ``g = 2^(floor(log2 sigma) - 16)``, a power of two, so that
   ``sigma_u in [2^16, 2^17)``), tabulated within total variation ``tv`` per sample, by a search whose length does
   not depend on the value drawn.  Since ``r_t`` is an integer, ``Y_t = rint(r_t + X_t)``: a
   rounding of the *continuous* Gaussian mechanism ``r_t + X_t``, computed without a floating-point Gaussian.
3. **Decoder, post-processing.**  The release is ``g (B Y)_t``, ``B = A C^{-1}``: ``u_t = Y_t + sum_i omega_i v_i``,
   ``v_i <- theta_i v_i + Y_t``, release ``= g sum_{j <= t} u_j``, in doubles (any computation on ``Y`` alone is
   post-processing).  It is ``A m + B Z + B e`` with ``e = r - C m``, ``|e_t| <= 1/2 + eta`` (below): a
   deterministic error of about ``2^-16`` of the noise's standard deviation per release.

Proof of privacy (replace one round's ``(x, y)`` of one agent; adaptive streams)
--------------------------------------------------------------------------------
*Encoder error.*  Let ``w*`` solve the exact recursion (``w* = 2^F C m``).  The encoder's roundings are
``s_i(t+1) = theta_i s_i(t) + w_t + alpha_i(t)`` and ``w_t = 2^F m_t - sum_i omega_i s_i(t) - beta_t`` with
``|alpha_i| <= 1/2`` and ``|beta| <= k/2``, so ``e_w = w - w*`` solves ``q e_w = v``,
``v = -beta - sum_i omega_i (x / (1 - theta_i x)) alpha_i``, ``|v_t| <= V = k/2 + sum_i |omega_i| / (2 (1 - theta_i))``:
``e_w = C v`` and ``|e_w(t)| <= V S_1`` with ``S_1 = sum_{j < T} |c_j|``.  In grid units
``eta = V S_1 2^-F`` (``4e-5`` at ``T = 100,000``), so ``|r_t - (C m)_t| <= 1/2 + eta``.

*Neighbours.*  Fix the outputs ``Y_{<t}``.  The agent's later increments are functions of its data and of what it
saw, so two neighbouring streams give the same ``m_j`` for ``j != s`` (``s`` the round holding the replaced pair)
and ``r_t = r'_t`` for ``t < s`` (the same integer computation).  For ``t >= s``, ``r_t - r'_t = c_{t-s} (m_s - m'_s)
+ (e_t - e'_t)`` with ``|e_t - e'_t| <= kappa = 1 + 2 eta`` per entry.  Over the released entries (the corner
``sum y^2`` is never released), in the Frobenius norm of the symmetric matrices, the difference ``D`` satisfies
``||D|| <= ||C e_s|| Delta / g + kappa sqrt(T ((d+1)^2 - 1)) =: S`` on every path, with ``Delta`` the increment's
sensitivity of :func:`~dpfair.bandits.fairx._privatizer_calibration.calibrate_privatizer` (its grid term included)
and ``||C e_s|| <= sens(C)`` computed from the dyadic ``q`` in 160-bit fixed point, rounded up
(:func:`encoder_bounds`).

*Composition (exact Gaussian profile).*  Fix the pair of neighbouring streams; the transcript to analyse is the
continuous one, ``r_t + X_t`` (``Y`` is its rounding, and an adversary who sees ``Y`` is one who sees ``r + X`` and
rounds).  Its log-likelihood ratio under the first stream is ``L = sum_t (<a_t, X_t>_W + ||a_t||_W^2 / 2)`` with
``a_t`` the shift of step ``t`` (predictable: fixed by the data and the earlier outputs) and ``||.||_W`` whitened by
the entries' variances (``||D||_W^2 = ||D||_F^2 / (2 sigma_u^2)`` for the symmetric matrices).  Pad the transcript
with one more Gaussian output whose shift brings ``sum_t ||a_t||_W^2`` to exactly ``mu^2 = S^2 / (2 sigma_u^2)`` on
every path (possible because the bound ``S`` holds on every path; dropping that output is post-processing).  Then
``M = sum_t <a_t, X_t>_W`` has conditionally Gaussian increments with predictable variances summing to the constant
``mu^2``: by iterated conditional characteristic functions, ``E exp(i u M) = exp(-u^2 mu^2 / 2)``, so
``L ~ N(mu^2 / 2, mu^2)`` exactly for the *padded* transcript: the privacy-loss law of the ``mu``-GDP Gaussian
mechanism.  The released stream is a post-processing of it (the padding output dropped, ``r + X`` rounded), so its
``(epsilon, delta)`` profile is *at most* ``mu``-GDP's, and equal to it only where the shifts already use the whole
budget (Dong, Roth & Su 2022; the fully adaptive GDP filter of Smith & Thakurta 2022 and its individual form,
Koskela, Tobaben & Honkela 2023).  The same argument with the discrete
Gaussian instead gives only zCDP (the noise is then not a rounding of a Gaussian), ``21 %`` more noise at
``epsilon = 2, delta = 0.1``.

*Sampler.*  Coupling each table sample with an exact rounded Gaussian (equal with probability ``1 - tv``, given the
past), the releases are ``(epsilon, delta_mu + (1 + e^epsilon) n tv)``-DP with ``n = tau (d+1)(d+2)/2`` samples per
agent: :func:`calibrate_exact_blt` takes that share from ``delta`` first, so ``privacy_spent`` equals the request.

What is not covered
-------------------
*The float64 sums of the increments* (covered when the calibration is told how many pairs an increment sums, as
the learners do).  The proof starts from the increments ``m_t`` rounded to the grid.  The
learners gather each increment as a float64 running sum of ``x x^T`` and ``x y`` over the bandit rounds since the
previous release (``local_gram += x x^T``, :mod:`dpfair.bandits.fairx.synchronization` and the compiled kernels) and
round that float sum (``Privatizer.to_units``); a direct ``Privatizer`` user passes float increments however they
were summed.  Recursive summation of ``n`` products is off by at most ``gamma_n sum_j |z_j z_j^T|`` per entry
(``gamma_n = n 2^-53 / (1 - n 2^-53)``), so two neighbouring increments of ``n`` pairs can differ, beyond the
``sqrt(2) (L^2 + B^2)`` of ``Delta``, by up to ``2 n gamma_n (L^2 + B^2)`` in Frobenius norm: ``1.3e-5`` data units
(``1.6e-6`` of ``Delta``) for ``n = 10^5`` rounds with ``L^2 + B^2 = 6``.  :func:`calibrate_exact_blt` adds that
term to ``Delta`` (so to ``S``, and to the charge) when ``summed_pairs = n`` is given: the learners pass their
horizon, which bounds the pairs any increment of theirs sums.  Without it (a ``Privatizer`` used on its own, whose
increments are summed by its user) the summation is treated as exact arithmetic and the proof starts from the
rounded increments.

*Timing.*  The encoder's Python integers take time that grows with the number of their 30-bit digits, which follows
the magnitude of the buffers, that is of the agent's private running sums: the encoder's running time depends on the
data (a side channel on the data, a few nanoseconds per digit, not a guarantee of constant time).  The noise's own
search is of fixed length, but ``r + Z`` and ``float(Y)`` work on Python integers too, whose digit counts change with
the noise where ``r + Z`` crosses a multiple of ``2^30``.  The compiled engine (:mod:`dpfair.bandits.fairx._exact_kernels`)
holds fixed two-word integers instead (no digit counts; its time against the data is not measured).

*Refusals.*  A stream that meets the encoder's range refusal (step 1) mid-way: see there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpfair.bandits.fairx._privatizer_checks import (
    _check_norm_bounds,
    _check_privacy,
    _check_summed_pairs,
    _entries,
    _summation_slack,
)
from dpfair.privacy.accounting import gaussian_dp_delta, gaussian_dp_epsilon, gaussian_dp_mu
from dpfair.privacy.continual import blt_parameters
from dpfair.privacy.lattice import (
    LatticeGaussian,
    lattice_granularity_unvalidated,
    lattice_total_variation,
    lattice_total_variation_estimate,
)

__all__ = [
    "ExactBLTCalibration", "ExactBLTRelease", "calibrate_exact_blt", "check_encoder_range", "decoder_l1", "encoder_bounds",
]

PARAM_BITS = 48  # W: theta and omega are multiples of 2^-W
STATE_BITS = 24  # F: the encoder's fixed-point fraction bits of a grid unit
RESOLUTION_BITS = 16  # sigma / g in [2^16, 2^17): the diagonal's sqrt(2) sigma_u stays within the lattice's 2^18
_PROFILE_MARGIN = 1e-9  # relative margin on delta against the float error of the Gaussian profile
_NORM_BITS = 160  # fixed point of the coefficient computation (encoder_bounds)
MAX_RELEASES = 2**22


ENCODER_LIMIT = 2**78  # buffers in [-2^78, 2^78) and outputs in [-2^62, 2^62): the compiled engine's 128-bit range
OUTPUT_LIMIT = 2**62


class ExactBLTRefused(ValueError):
    """The exact BLT release cannot serve a plan (its noise table's share of ``delta``, or its encoder's range):
    ``continual="auto"`` then takes the tight tree; any other error of the exact path is raised as it is."""


def _outside(values: np.ndarray, limit: int) -> bool:
    """Whether some integer lies outside ``[-limit, limit)``."""
    flat = np.asarray(values, dtype=object).reshape(-1)
    return bool(flat.size) and (min(flat) < -limit or max(flat) >= limit)


def _round_shift(x, bits: int):
    """``R_b(x) = floor(x / 2^b + 1/2)``: exact on Python integers, ``|R_b(x) - x / 2^b| <= 1/2``."""
    return (x + (1 << (bits - 1))) >> bits


@functools.lru_cache(maxsize=16)
def dyadic_blt(horizon: int, buffers: int = 3) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(Theta, Omega)``: :func:`~dpfair.privacy._blt.blt_parameters` rounded to multiples of ``2^-PARAM_BITS``.

    Parameters
    ----------
    horizon : int
        Number of releases ``T``.
    buffers : int, default 3
        Number of buffers ``k``.

    Returns
    -------
    tuple
        The integer numerators of ``theta`` and ``omega``.
    """
    theta, omega = blt_parameters(horizon, buffers)
    scale = 2**PARAM_BITS
    return tuple(round(t * scale) for t in theta), tuple(round(w * scale) for w in omega)


@functools.lru_cache(maxsize=16)
def encoder_bounds(horizon: int, buffers: int = 3) -> tuple[float, float, float]:
    """Rigorous upper bounds ``(sens(C), S_1, V)`` of the encoder ``C = 1 / q`` of the dyadic BLT (module docstring).

    The coefficients ``c_j`` run through the encoder's own recursion in ``P = 160``-bit fixed point (``c~_j``, error
    ``|c~_j - c_j| <= V S_1 2^-P`` by the encoder-error argument with ``2^P`` for ``2^F``), so
    ``sens(C) = sqrt(sum_{j<T} c_j^2) <= sqrt(sum c~_j^2) + sqrt(T) V S_1 2^-P`` and
    ``S_1 <= sum |c~_j| / (1 - T V 2^-P)``; integer square roots and an upward step of the last float make the
    returned numbers upper bounds.

    Parameters
    ----------
    horizon : int
        Number of releases ``T``.
    buffers : int, default 3
        Number of buffers ``k``.

    Returns
    -------
    tuple of float
        ``sens(C)``, ``S_1 = sum_{j<T} |c_j|`` and ``V = k/2 + sum_i |omega_i| / (2 (1 - theta_i))``, each rounded up.
    """
    Theta, Omega = dyadic_blt(horizon, buffers)
    W, P = PARAM_BITS, _NORM_BITS
    s = [0] * len(Theta)
    sum_sq = sum_abs = 0
    for t in range(horizon):
        w = (1 << P if t == 0 else 0) - sum(_round_shift(o * si, W) for o, si in zip(Omega, s, strict=True))
        s = [_round_shift(th * si, W) + w for th, si in zip(Theta, s, strict=True)]
        sum_sq += w * w
        sum_abs += abs(w)

    def up(x: float) -> float:  # the next double above: a float rounded to nearest, made an upper bound
        return math.nextafter(x, math.inf)

    V = up(len(Theta) / 2 + sum(abs(o) / (2.0 * (2**W - th)) for th, o in zip(Theta, Omega, strict=True)))
    s1 = up(up(sum_abs / 2.0**P) / (1.0 - horizon * V * 2.0**-P))
    sens = up(up((math.isqrt(sum_sq) + 1) / 2.0**P) + math.sqrt(horizon) * V * s1 * 2.0**-P * 2.0)
    return sens, s1, V


def _decoder_norm(horizon: int, buffers: int) -> float:
    """``max_t ||row t of B||`` for the dyadic BLT (the worst release's noise in units of ``sigma_u``; utility only)."""
    Theta, Omega = dyadic_blt(horizon, buffers)
    theta, omega = np.array(Theta) / 2.0**PARAM_BITS, np.array(Omega) / 2.0**PARAM_BITS
    q = np.ones(horizon)
    j = np.arange(horizon - 1, dtype=float)
    q[1:] = (omega[:, None] * theta[:, None] ** j[None, :]).sum(axis=0)
    b = np.cumsum(q)
    return float(np.sqrt(np.sum(b * b)))


@functools.lru_cache(maxsize=16)
def decoder_l1(horizon: int, buffers: int = 3) -> float:
    """``(1 + eta) max_t ||row t of B||_1`` for the dyadic BLT: a release's bounded error per entry, grid units.

    The release is ``A m + B X + B (rho + e)`` with ``|rho_t| <= 1/2`` (``rint(X) - X``) and
    ``|e_t| <= 1/2 + eta`` (module docstring), so each entry's bounded part is at most this (utility only: the
    confidence width of the learners; a relative margin of ``1e-9`` covers the float sum).

    Parameters
    ----------
    horizon : int
        Number of releases ``T``.
    buffers : int, default 3
        Number of buffers ``k``.

    Returns
    -------
    float
    """
    Theta, Omega = dyadic_blt(horizon, buffers)
    theta, omega = np.array(Theta) / 2.0**PARAM_BITS, np.array(Omega) / 2.0**PARAM_BITS
    q = np.ones(horizon)
    j = np.arange(horizon - 1, dtype=float)
    q[1:] = (omega[:, None] * theta[:, None] ** j[None, :]).sum(axis=0)
    _, s1, V = encoder_bounds(horizon, buffers)
    eta = V * s1 * 2.0**-STATE_BITS
    return float(np.abs(np.cumsum(q)).sum()) * (1.0 + eta) * (1.0 + 1e-9)


def check_encoder_range(increment_units: float, horizon: int, buffers: int = 3) -> None:
    """Refuse a plan whose increments (at most ``increment_units`` grid steps per entry) could take the encoder out
    of its range (``ENCODER_LIMIT``, ``OUTPUT_LIMIT``), before any charge.

    ``|w_t| <= 2^F S_1 M + V S_1`` (``w = 2^F C m + C v``, module docstring) and
    ``s_i <- R_W(Theta_i s_i) + w`` give ``|s_i| <= (max |w| + 1/2) min(T, 1 / (1 - theta_i))``;
    ``|r_t| <= S_1 M + 1/2 + eta``.
    A plan that passes never meets the encoder's data-dependent refusal.

    Parameters
    ----------
    increment_units : float
        ``M``: a bound on every increment's entries, grid units.
    horizon : int
        Number of releases ``T``.
    buffers : int, default 3
        Number of buffers ``k``.

    Raises
    ------
    ExactBLTRefused
        Where the bound reaches the range (a ``ValueError``).
    """
    Theta, _ = dyadic_blt(horizon, buffers)
    _, s1, V = encoder_bounds(horizon, buffers)
    growth = max(min(float(horizon), 2.0**PARAM_BITS / (2**PARAM_BITS - t)) for t in Theta)  # sum_k theta^k
    w = (2.0**STATE_BITS * s1 * (increment_units + 1.0) + V * s1) * (1.0 + 1e-9)
    if (w + 1.0) * growth >= 0.5 * ENCODER_LIMIT or s1 * (increment_units + 1.0) + 1.0 >= 0.5 * OUTPUT_LIMIT:
        raise ExactBLTRefused(
            "the exact BLT encoder's buffers could reach 2**78 grid steps at this horizon and noise grid; use a "
            "shorter horizon, a smaller epsilon or another continual release."
        )


@dataclass(frozen=True)
class ExactBLTCalibration:
    """The noise of the exact BLT release and what it buys (module docstring).

    Parameters
    ----------
    epsilon, delta : float
        The requested guarantee.
    sigma : float
        Off-diagonal noise standard deviation in data units (diagonal: ``sqrt(2) sigma``).
    granularity : float
        The grid ``g``.
    sensitivity : float
        ``Delta``: one increment's Frobenius sensitivity, its grid term included (data units).
    column_sensitivity : float
        Upper bound on ``sens(C)`` (:func:`encoder_bounds`).
    rounding_slack : float
        ``kappa sqrt(T ((d+1)^2 - 1))``: the encoder's rounding part of ``S``, grid units.
    stream_sensitivity : float
        ``S = sens(C) Delta / g + rounding_slack``, grid units.
    mu : float
        One agent's stream is ``mu``-GDP with ``mu = S / (sqrt(2) sigma_u)`` (the exact Gaussian profile).
    delta_sampler : float
        The table sampler's share of ``delta``, ``(1 + e^epsilon) n tv``.
    epsilon_accounted : float
        ``epsilon`` of ``mu`` at ``delta - delta_sampler``: the request.
    release_factor : float
        ``max_t ||row t of B||``: the worst release's noise std in units of ``sigma``.
    n_releases, dim, buffers : int
        ``tau``, ``d`` and the BLT's buffers.
    """

    epsilon: float
    delta: float
    sigma: float
    granularity: float
    sensitivity: float
    column_sensitivity: float
    rounding_slack: float
    stream_sensitivity: float
    mu: float
    delta_sampler: float
    epsilon_accounted: float
    release_factor: float
    n_releases: int
    dim: int
    buffers: int

    @property
    def worst_release_std(self) -> float:
        """The worst release's off-diagonal noise standard deviation, ``sigma * release_factor`` (data units)."""
        return self.sigma * self.release_factor


def _sigma_for(mu: float, granularity: float, frobenius: float, rounding: float, slack_units: float, sens: float) -> float:
    """``sigma`` (data units) with ``S / (sqrt(2) sigma_u) = mu`` on the grid ``granularity``."""
    return (sens * (frobenius + granularity * rounding) + granularity * slack_units) / (math.sqrt(2.0) * mu)


def calibrate_exact_blt(
    epsilon: float, delta: float, context_bound: float, dim: int, n_releases: int, *, reward_bound: float = 1.0, buffers: int = 3,
    summed_pairs: int | None = None,
) -> ExactBLTCalibration:
    """The smallest noise whose exact BLT release spends exactly ``(epsilon, delta)`` (module docstring's proof).

    Parameters
    ----------
    epsilon : float
        Requested ``epsilon > 0`` (finite).
    delta : float
        Requested ``delta`` in (0, 1).
    context_bound : float
        Declared ``L >= ||x||_2``.
    dim : int
        Context dimension ``d``.
    n_releases : int
        Planned releases ``tau`` (at most ``2^22``).
    reward_bound : float, default 1.0
        Declared ``B >= |y|``.
    buffers : int, default 3
        The BLT's buffers.
    summed_pairs : int, optional
        The most ``(x, y)`` pairs one increment sums in float64 (the learners pass their horizon): the summation's
        error is added to ``Delta`` and charged (module docstring, *The float64 sums of the increments*).  ``None``:
        the increments are taken as exact sums.

    Returns
    -------
    ExactBLTCalibration
        ``sigma``, the grid, ``mu`` and the sampler's share.

    Examples
    --------
    >>> import math
    >>> cal = calibrate_exact_blt(2.0, 0.1, math.sqrt(5), 5, 2_000)
    >>> round(cal.epsilon_accounted, 6), cal.rounding_slack < 0.01 * cal.stream_sensitivity
    (2.0, True)
    """
    epsilon, delta = _check_privacy(epsilon, delta)
    if math.isinf(epsilon):
        raise ValueError("the exact BLT release needs a finite epsilon; epsilon=inf shares exact statistics.")
    bound, reward = _check_norm_bounds(context_bound, reward_bound)
    if not isinstance(dim, int | np.integer) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}.")
    if not isinstance(n_releases, int | np.integer) or not 1 <= n_releases <= MAX_RELEASES:
        raise ValueError(f"n_releases must be an integer in [1, {MAX_RELEASES:,}], got {n_releases!r}.")
    tau, dim = int(n_releases), int(dim)
    sens, s1, V = encoder_bounds(tau, buffers)
    kappa = 1.0 + 2.0 * V * s1 * 2.0**-STATE_BITS
    rounding = math.sqrt((dim + 1) ** 2 - 1)
    slack_units = kappa * math.sqrt(tau) * rounding
    frobenius = math.sqrt(2.0) * (bound**2 + reward**2) + _summation_slack(_check_summed_pairs(summed_pairs), bound, reward)
    entries = _entries(tau, dim)

    def share_of(tv: float) -> float:
        return (1.0 + math.exp(min(epsilon, 700.0))) * entries * tv

    def grid_and_sigma(mu: float) -> tuple[float, float]:
        g = lattice_granularity_unvalidated(_sigma_for(mu, 0.0, frobenius, rounding, slack_units, sens), RESOLUTION_BITS)
        for _ in range(8):  # sigma grows with g; g with sigma: a few rounds settle (monotone)
            sigma = _sigma_for(mu, g, frobenius, rounding, slack_units, sens)
            g_next = lattice_granularity_unvalidated(sigma, RESOLUTION_BITS)
            if g_next == g:
                return g, sigma
            g = g_next
        raise RuntimeError("the exact BLT grid did not settle; report this as a bug.")  # pragma: no cover

    def mu_for(share: float) -> float:  # the exact profile, a relative margin against its own float error
        return gaussian_dp_mu(epsilon, (delta - share) * (1.0 - _PROFILE_MARGIN))

    g, sigma = grid_and_sigma(mu_for(0.0))
    # paid before sigma is final, so estimated (no table built: tables cost 0.3-0.5 s each here) and checked below
    # with the final sigma's tables, the ones the release then samples from
    tv = lattice_total_variation_estimate(sigma, g, "rounded")
    for _ in range(5):
        if share_of(tv) >= 0.5 * delta:
            raise ExactBLTRefused(
                f"epsilon={epsilon:g} with delta={delta:g}: the noise sampler's share of delta "
                f"({share_of(tv):.3g}) is too large; use a larger delta or a smaller epsilon."
            )
        g, sigma = grid_and_sigma(mu_for(share_of(tv)))
        actual = lattice_total_variation(sigma, g, "rounded")
        if actual <= tv:
            break
        tv = 1.1 * actual
    else:  # pragma: no cover - the distance varies by a few percent at most
        raise RuntimeError("the noise sampler's share of delta did not settle; report this as a bug.")
    sensitivity = frobenius + g * rounding
    stream = sens * sensitivity / g + slack_units
    mu = stream / (math.sqrt(2.0) * (sigma / g))
    delta_sampler = share_of(tv)
    if gaussian_dp_delta(mu, epsilon) + delta_sampler > delta:  # pragma: no cover - mu_for kept a margin
        raise RuntimeError("the exact BLT calibration exceeds delta; report this as a bug.")
    accounted = gaussian_dp_epsilon(mu, delta - delta_sampler)
    return ExactBLTCalibration(
        epsilon=epsilon,
        delta=delta,
        sigma=sigma,
        granularity=g,
        sensitivity=sensitivity,
        column_sensitivity=sens,
        rounding_slack=slack_units,
        stream_sensitivity=stream,
        mu=mu,
        delta_sampler=delta_sampler,
        epsilon_accounted=min(accounted, epsilon),
        release_factor=_decoder_norm(tau, buffers),
        n_releases=tau,
        dim=dim,
        buffers=buffers,
    )


class ExactBLTRelease:
    """The exact BLT release of ``n_rows`` independent streams of ``n_entries`` integer entries (module docstring).

    Parameters
    ----------
    n_releases : int
        ``tau``.
    sigma_units : float
        ``sigma / g``: the off-diagonal noise in grid units (``calibrate_exact_blt``'s ``sigma / granularity``).
    on_diagonal : numpy.ndarray of bool, shape ``(n_entries,)``
        Entries whose noise is ``sqrt(2) sigma_units`` (the diagonal of the symmetric increments).
    n_rows : int
        Independent streams (agents).
    words : callable
        ``words(rows, counts, n_entries)`` returns uniform uint64 words, shape ``(len(rows), n_entries)``, for the
        releases ``counts`` (0-based) of ``rows`` (a noise source's ``random_words``, or a keyed stream).
    buffers : int, default 3
        The BLT's buffers.

    Attributes
    ----------
    count : numpy.ndarray of int64
        Releases made so far per row.
    """

    def __init__(
        self,
        n_releases: int,
        sigma_units: float,
        on_diagonal: np.ndarray,
        n_rows: int,
        words: Callable[[np.ndarray, np.ndarray, int], np.ndarray],
        *,
        buffers: int = 3,
    ) -> None:
        self.n_releases = int(n_releases)
        self.on_diagonal = np.asarray(on_diagonal, dtype=bool)
        self.n_rows, self.n_entries = int(n_rows), int(self.on_diagonal.size)
        self.words = words
        Theta, Omega = dyadic_blt(self.n_releases, buffers)
        self._Theta, self._Omega = Theta, Omega
        self._theta = np.array(Theta, dtype=float) / 2.0**PARAM_BITS  # exact: W <= 52 bits
        self._omega = np.array(Omega, dtype=float) / 2.0**PARAM_BITS
        self.sigma_units = float(sigma_units)
        self._samplers()
        shape = (len(Theta), self.n_rows, self.n_entries)
        self._encoder = np.zeros(shape, dtype=object)  # Python ints: O(buffers) per entry, whatever tau
        self._encoder[...] = 0
        self._decoder = np.zeros(shape)
        self._total = np.zeros((self.n_rows, self.n_entries))
        self.count = np.zeros(self.n_rows, dtype=np.int64)

    def _samplers(self) -> None:
        self._off = LatticeGaussian(self.sigma_units, 1.0, "rounded")
        self._diag = LatticeGaussian(math.sqrt(2.0) * self.sigma_units, 1.0, "rounded")

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_off"], state["_diag"]  # tables of a few MiB: rebuilt (or found in the process cache) on load
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._samplers()

    def encode(self, m_units: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """One encoder step of ``rows``: ``r = R_F(2^F m - sum_i R_W(Omega_i s_i))``, buffers advanced (integers only).

        Parameters
        ----------
        m_units : numpy.ndarray of int64, shape ``(len(rows), n_entries)``
            The rows' increments in grid units.
        rows : numpy.ndarray of int
            The rows that release.

        Returns
        -------
        numpy.ndarray of object (Python ints), shape ``(len(rows), n_entries)``
        """
        r, s = self._encoded(m_units, rows)
        self._encoder[:, rows] = s
        return r

    def _encoded(self, m_units: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The encoder step of ``rows`` without changing the state: ``(r, buffers after the step)``; refuses out of range."""
        s = self._encoder[:, rows]
        w = np.asarray(m_units, dtype=np.int64).astype(object) * (1 << STATE_BITS)
        for i, omega in enumerate(self._Omega):
            w = w - _round_shift(s[i] * omega, PARAM_BITS)
        for i, theta in enumerate(self._Theta):
            s[i] = _round_shift(s[i] * theta, PARAM_BITS) + w
        r = _round_shift(w, STATE_BITS)
        if _outside(s, ENCODER_LIMIT) or _outside(r, OUTPUT_LIMIT):  # before any change
            raise ValueError(
                "the exact BLT encoder's buffers would reach 2**78 (or its output 2**62) grid steps, beyond the "
                "compiled engine's two-word integers; rescale the contexts and rewards (smaller context_bound and "
                "reward_bound) or plan fewer rounds."
            )
        return r, s

    def noise(self, rows: np.ndarray) -> np.ndarray:
        """Rounded Gaussian noise of the next release of ``rows`` (grid units, int64): one word per entry, a
        constant-time search each."""
        rows = np.asarray(rows)
        return self.noise_at(rows, self.count[rows])

    def noise_at(self, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Rounded Gaussian noise of release ``counts[j]`` (0-based) of row ``rows[j]`` (grid units, int64).

        It depends on the words alone (keyed words: on the row's key and the release; a noise source's words:
        on the order of the calls), never on the data: the compiled engine fetches it ahead of the releases.

        Parameters
        ----------
        rows, counts : numpy.ndarray of int
            The rows and their 0-based release numbers.

        Returns
        -------
        numpy.ndarray of int64, shape ``(len(rows), n_entries)``
        """
        rows = np.asarray(rows)
        words = np.ascontiguousarray(self.words(rows, np.asarray(counts, dtype=np.int64), self.n_entries))
        out = np.empty(words.shape, dtype=np.int64)
        out[:, self.on_diagonal] = self._diag.sample_units(words[:, self.on_diagonal])
        out[:, ~self.on_diagonal] = self._off.sample_units(words[:, ~self.on_diagonal])
        return out

    def decode(self, y: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Post-processing of ``Y`` alone: ``(B Y)_t`` of ``rows`` in doubles (grid units)."""
        y = np.asarray(y, dtype=float)
        v = self._decoder[:, rows]
        acc = self._omega[0] * v[0]  # summed in buffer order, as the compiled decoder (_exact_kernels) does
        for i in range(1, len(self._omega)):
            acc = acc + self._omega[i] * v[i]
        u = y + acc
        self._decoder[:, rows] = self._theta[:, None, None] * v + y[None]
        self._total[rows] += u
        return self._total[rows]

    def step(self, m_units: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Release the next prefix sums of the rows of ``mask``: ``(B Y)_t`` in grid units, ``Y = r + Z``.

        Parameters
        ----------
        m_units : numpy.ndarray of int64, shape ``(n_rows, n_entries)``
            Each row's increment in grid units (the rows outside ``mask`` are ignored).
        mask : numpy.ndarray of bool, shape ``(n_rows,)``, optional
            The rows that release (default all).

        Returns
        -------
        numpy.ndarray of float, shape ``(n_rows, n_entries)``
            Every row's latest release (rows outside ``mask`` repeat their previous one), grid units.

        Raises
        ------
        ValueError
            For a row past its ``n_releases`` or increments of the wrong shape or type.
        """
        m = np.asarray(m_units)
        if m.shape != (self.n_rows, self.n_entries) or not np.issubdtype(m.dtype, np.integer):
            raise ValueError(
                f"m_units must be an integer array of shape {(self.n_rows, self.n_entries)} (the "
                f"increments in grid units), got dtype {m.dtype} and shape {m.shape}."
            )
        sel = np.ones(self.n_rows, bool) if mask is None else np.asarray(mask, dtype=bool)
        if (self.count + sel > self.n_releases).any():
            raise ValueError(f"the exact BLT release holds n_releases={self.n_releases}; plan more releases.")
        rows = np.flatnonzero(sel)
        if rows.size:
            # the state changes only once the noise is drawn: a refused encoder step or a failing word source
            # leaves the encoder, the decoder and the counts as they were
            r, buffers = self._encoded(m[rows], rows)
            y = r + self.noise(rows).astype(object)  # exact integers: Y = r + Z
            self._encoder[:, rows] = buffers
            self.decode(y, rows)
            self.count[rows] += 1
        return self._total.copy()
