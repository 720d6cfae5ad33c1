"""Calibration of the PRIVATIZER's noise (split from :mod:`dpfair.bandits.fairx.privatizer`, whose module docstring
states the mechanism): the node noise of the binary tree (``"tight"`` zCDP or Algorithm 2's ``"paper"`` formula)
and the noise of a factorized continual release (:func:`calibrate_privatizer` with ``continual=``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpfair._validation import check_int
from dpfair.bandits.fairx._privatizer_checks import (
    _check_norm_bounds,
    _check_privacy,
    _check_summed_pairs,
    _entries,
    _summation_slack,
)
from dpfair.privacy.accounting import (  # *_unvalidated: calibrate_privatizer validated their arguments once
    gaussian_dp_delta,
    gaussian_dp_epsilon,
    gaussian_dp_mu,
    zcdp_delta_unvalidated,
    zcdp_for_approx_dp_unvalidated,
    zcdp_to_approx_dp_with_sampler_unvalidated,
)
from dpfair.privacy.lattice import lattice_granularity_unvalidated, lattice_total_variation

__all__ = [
    "CALIBRATIONS",
    "CONTINUAL",
    "PRIVATIZER_CONTINUAL",
    "PrivatizerCalibration",
    "calibrate_privatizer",
    "privatizer_depth",
    "privatizer_node_variance",
]

CALIBRATIONS = ("tight", "paper")
CONTINUAL = ("tree", "honaker", "sqrt", "blt")  # factorizations of the prefix-sum matrix (dpfair.privacy.continual)
# the PRIVATIZER's and the learners' options: "blt-exact" (_privatizer_exact) has no release_noise_units (its noise
# is added after the integer encoder of the data); the compiled engine runs that encoder itself (_exact_kernels)
PRIVATIZER_CONTINUAL = (*CONTINUAL, "blt-exact")
MAX_FACTORIZED_RELEASES = 2**22  # a factorized PRIVATIZER keeps each release's noise: O(tau) memory per agent
_PROFILE_MARGIN = 1e-9  # relative margin on delta against the float error of the Gaussian profile
_RESOLUTION_BITS = 14
# the lattice sampler may use at most this fraction of delta; beyond it (large epsilon: the share grows as
# e^epsilon) secure noise comes from OpenDP's exact discrete Gaussian instead (~8 us per entry)
_SAMPLER_SHARE_LIMIT = 0.01
_MAX_ENTRIES = 2**28  # noise entries held at once (2 GiB of int64 tables; the square root adds 16 B of spectra per entry)
_MAX_STEPS = 2.0**62  # running sums and noise are int64 numbers of grid steps


def privatizer_depth(n_releases: int) -> int:
    """Depth ``n = 1 + ceil(log2 tau)`` of the PRIVATIZER's tree over ``tau`` releases (Algorithm 2, line 3).

    Parameters
    ----------
    n_releases : int
        The planned number of communication rounds ``tau >= 1``.

    Returns
    -------
    int
        ``n``; every element lies in at most ``floor(log2 tau) + 1 <= n`` nodes.
    """
    tau = check_int(n_releases, "n_releases", minimum=1)
    return 1 + (tau - 1).bit_length()  # ceil(log2 tau) exactly, without floating point


def privatizer_node_variance(
    epsilon: float, delta: float, context_bound: float, n_levels: int, reward_bound: float = 1.0
) -> float:
    """Variance of the PRIVATIZER's node noise, ``16 n (L^2 + B^2)^2 ln(2/delta)^2 / epsilon^2`` (Algorithm 2, line 6).

    This is the paper's calibration (``noise_calibration="paper"``); :func:`calibrate_privatizer`
    also gives the tight one.

    Parameters
    ----------
    epsilon : float
        Privacy parameter ``epsilon > 0`` (``inf`` gives 0).
    delta : float
        Privacy parameter ``delta`` in (0, 1).
    context_bound : float
        Declared bound ``L`` on ``||x||_2``.
    n_levels : int
        Tree depth ``n`` (see :func:`privatizer_depth`).
    reward_bound : float, default 1.0
        Declared bound ``B`` on ``|y|`` (the paper's ``L^2 + 1`` is ``B = 1``).

    Returns
    -------
    float
        The variance ``sigma^2`` of each entry of ``N_hat``.
    """
    epsilon, delta = _check_privacy(epsilon, delta)
    bound, reward = _check_norm_bounds(context_bound, reward_bound)
    n = check_int(n_levels, "n_levels", minimum=1)
    if math.isinf(epsilon):
        return 0.0
    return _node_variance(epsilon, delta, bound, n, reward)


def _node_variance(epsilon: float, delta: float, bound: float, n_levels: int, reward: float) -> float:
    """Algorithm 2, line 6, on validated arguments (finite ``epsilon``): :func:`privatizer_node_variance`'s formula."""
    return 16.0 * n_levels * (bound**2 + reward**2) ** 2 * math.log(2.0 / delta) ** 2 / epsilon**2


@dataclass(frozen=True)
class PrivatizerCalibration:
    """The noise of one PRIVATIZER and what it buys (see the module docstring).

    Parameters
    ----------
    noise_calibration : str
        ``"tight"`` or ``"paper"``.
    epsilon, delta : float
        The requested guarantee.
    node_sigma : float
        Standard deviation of an off-diagonal node entry (diagonal: ``sqrt(2) node_sigma``).
    granularity : float
        The noise grid ``g`` (a power of two).
    n_levels : int
        The paper's depth ``n = 1 + ceil(log2 tau)``.
    levels_used : int
        Nodes an element can lie in, ``floor(log2 tau) + 1``.
    nodes_per_release : int
        Most nodes summed in one release, ``max popcount(k)`` for ``k <= tau``.
    sensitivity : float
        ``Delta``, the Frobenius sensitivity of one node with the grid rounding.
    rho : float
        zCDP of one agent's whole stream of releases.
    delta_sampler : float
        The part of ``delta`` the lattice sampler's total variation costs, at ``epsilon_accounted``.
    epsilon_accounted : float
        ``epsilon`` of ``rho`` at ``delta - delta_sampler`` (tight conversion): equal to ``epsilon`` for
        ``"tight"``, usually far below it for ``"paper"``.
    delta_accounted : float
        ``delta`` of ``rho`` at the requested ``epsilon`` (tight conversion, plus the sampler's share):
        ``delta`` for ``"tight"``, usually far below it for ``"paper"``.
    sampler : str
        ``"lattice"`` (tabulated, ~0.1 us per entry, its total variation charged to ``delta``) or
        ``"exact"`` (OpenDP's exact discrete Gaussian for secure noise, nothing charged), chosen when the
        lattice's share of ``delta`` would exceed 1 % (large ``epsilon``); ``"gaussian"`` for a factorized
        release (continuous Gaussian ``z``, rounded after ``B``: :class:`~dpfair.bandits.fairx.privatizer.Privatizer`);
        ``"rounded"`` for ``"blt-exact"`` (tabulated rounded Gaussian, its total variation charged to ``delta``).
    continual : str
        The factorization of the prefix-sum matrix: ``"tree"`` (Algorithm 2's tree), ``"honaker"``, ``"sqrt"``,
        ``"blt"`` or ``"blt-exact"``.
    column_sensitivity : float
        ``sens(C) = max_s ||C e_s||``: the tree's ``sqrt(levels_used)``.
    release_factor : float
        ``max_k ||row k of B||``: the worst release's noise std in units of ``node_sigma`` (the tree's
        ``sqrt(nodes_per_release)``).
    mu : float
        The stream is ``mu``-GDP with ``mu = column_sensitivity * sensitivity / (sqrt(2) node_sigma)``
        (``rho = mu^2 / 2``); the factorized releases are accounted by its exact profile.
    """

    noise_calibration: str
    epsilon: float
    delta: float
    node_sigma: float
    granularity: float
    n_levels: int
    levels_used: int
    nodes_per_release: int
    sensitivity: float
    rho: float
    delta_sampler: float
    epsilon_accounted: float
    delta_accounted: float
    sampler: str = "lattice"
    continual: str = "tree"
    column_sensitivity: float = 0.0
    release_factor: float = 0.0
    mu: float = 0.0

    @property
    def node_variance(self) -> float:
        """``node_sigma ** 2``."""
        return self.node_sigma**2


# the PRIVATIZER's names for the privacy layer's two helpers (per-entry tables' distance, epsilon less its share)
_lattice_tv = lattice_total_variation
_accounted = zcdp_to_approx_dp_with_sampler_unvalidated


def calibrate_privatizer(
    epsilon: float,
    delta: float,
    context_bound: float,
    dim: int,
    n_releases: int,
    *,
    reward_bound: float = 1.0,
    noise_calibration: str = "tight",
    continual: str = "tree",
    summed_pairs: int | None = None,
) -> PrivatizerCalibration:
    """Node noise of the PRIVATIZER for one agent's stream of ``n_releases`` releases (module docstring).

    **Sensitivity of one node** (``sensitivity`` below), under "replace one round's ``(x, y)`` of one
    agent".  A node holds the symmetric ``(d+1) x (d+1)`` sum of the *rounded* increments it covers;
    the released entries are all of them but the corner ``sum y^2`` (``(d+1)^2 - 1`` entries, the
    ``d`` entries of ``sum x y`` twice, as in ``N``).  Only the increment ``I = A + z z^T`` of the
    communication round holding the replaced pair changes, to ``I' = A + z' z'^T`` (``z = (x, y)``,
    ``||z||^2 <= L^2 + B^2``; ``A`` the round's other pairs, unchanged), so a node either holds it and
    moves by ``round_g(I) - round_g(I')`` or does not move at all.  Entrywise,
    ``round_g(I) - round_g(I') = (z z^T - z' z'^T) + E`` with ``E = (round_g(I) - I) - (round_g(I') - I')``,
    ``|E_ij| <= g / 2 + g / 2 = g``, and ``E`` symmetric (the increments are).  By the triangle
    inequality, over the released entries,

    * ``||z z^T - z' z'^T||_F^2 = ||z||^4 + ||z'||^4 - 2 (z . z')^2 <= 2 (L^2 + B^2)^2`` (dropping the
      corner only lowers it), and
    * ``||E||_F <= g sqrt((d+1)^2 - 1)``,

    so ``Delta = sqrt(2) (L^2 + B^2) + g sqrt((d+1)^2 - 1)``.  With the node noise ``N`` (off-diagonal
    variance ``sigma^2``, diagonal ``2 sigma^2``, its distinct entries independent) one node is
    ``sum_{i<j} D_ij^2 / (2 sigma^2) + sum_i D_ii^2 / (4 sigma^2) = ||D||_F^2 / (4 sigma^2)``-zCDP, and
    the changed increment lies in at most ``floor(log2 tau) + 1`` nodes.  This needs each increment
    rounded on its own: rounding running sums moves later nodes too (module docstring).  The
    increments are summed in float64 before they are rounded; that summation's own error (at most
    ``n 2**-53`` times the sum of the ``n`` terms' magnitudes: ``1e-5`` after ``10^5`` bandit rounds
    with ``L^2 + B^2 = 6``) is added to ``Delta`` when ``summed_pairs`` bounds the number of pairs an increment sums
    (the learners pass their horizon): ``2 n gamma_n (L^2 + B^2)`` in the Frobenius norm
    (``_privatizer_checks._summation_slack``); without it the summation is treated as exact arithmetic.

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
        Planned communication rounds ``tau`` (the tree's capacity).
    reward_bound : float, default 1.0
        Declared ``B >= |y|`` (shared rewards are clipped to it).
    noise_calibration : {"tight", "paper"}, default "tight"
        ``"tight"``: the smallest noise that makes the stream exactly ``(epsilon, delta)``-DP by the
        tight zCDP conversion; ``"paper"``: Algorithm 2's formula.
    continual : {"tree", "honaker", "sqrt", "blt", "blt-exact"}, default "tree"
        ``"blt-exact"``: the BLT with an integer encoder and rounded Gaussian noise, exact by construction
        (:mod:`dpfair.bandits.fairx._privatizer_exact`; ``column_sensitivity`` is then ``S g / Delta``, its
        rounding slack included, and ``delta_sampler`` the noise table's share).  Otherwise
        the factorization ``A = B C`` of the prefix-sum matrix over the ``tau`` releases
        (:mod:`dpfair.privacy._factorizations`; ``"blt"``: constant noise state per agent, its worst release
        within 3 % of the square root's up to ``tau = 100,000``).  ``"tree"`` is Algorithm 2's tree with lattice node
        noise, calibrated as above; the others (``"tight"`` only) add continuous Gaussian ``z`` with
        off-diagonal std ``node_sigma`` (diagonal ``sqrt(2) node_sigma``) to ``C m`` and are calibrated by
        the exact ``mu``-GDP profile (:func:`dpfair.privacy.accounting.gaussian_dp_mu`):
        ``mu = sens(C) Delta / (sqrt(2) node_sigma)`` at ``delta (1 - 1e-9)``, ``Delta`` as above.
    summed_pairs : int, optional
        The most ``(x, y)`` pairs one increment sums in float64 (a learner's horizon): their summation error is
        then added to ``Delta`` and charged.  ``None`` (default): the increments are taken as exact sums.

    Returns
    -------
    PrivatizerCalibration
        ``node_sigma``, the grid, ``rho`` and the accounted ``epsilon``.

    Examples
    --------
    >>> import math
    >>> tight = calibrate_privatizer(2.0, 0.1, math.sqrt(5), 5, 20_002)
    >>> paper = calibrate_privatizer(2.0, 0.1, math.sqrt(5), 5, 20_002, noise_calibration="paper")
    >>> round(tight.node_sigma, 1), round(paper.node_sigma, 1), round(tight.epsilon_accounted, 9)
    (20.6, 143.8, 2.0)
    >>> paper.epsilon_accounted, paper.delta_accounted < 1e-5
    (0.0, True)
    """
    epsilon, delta = _check_privacy(epsilon, delta)
    if math.isinf(epsilon):
        raise ValueError("the PRIVATIZER needs a finite epsilon; epsilon=inf shares exact statistics (no noise).")
    bound, reward = _check_norm_bounds(context_bound, reward_bound)
    dim = check_int(dim, "dim", minimum=1)
    tau = check_int(n_releases, "n_releases", minimum=1)
    if noise_calibration not in CALIBRATIONS:
        raise ValueError(f"noise_calibration must be 'tight' or 'paper', got {noise_calibration!r}.")
    if continual not in PRIVATIZER_CONTINUAL:
        raise ValueError(f"continual must be one of {PRIVATIZER_CONTINUAL}, got {continual!r}.")
    if continual != "tree" and noise_calibration != "tight":
        raise ValueError(f"noise_calibration={noise_calibration!r} is Algorithm 2's tree formula; use "
                         "continual='tree' with it, or noise_calibration='tight' with a factorization.")
    return _calibrate(epsilon, delta, bound, reward, dim, tau, noise_calibration, continual,
                      summed_pairs=_check_summed_pairs(summed_pairs))


def _calibrate(epsilon: float, delta: float, bound: float, reward: float, dim: int, tau: int, noise_calibration: str,
               continual: str, *, summed_pairs: int | None = None) -> PrivatizerCalibration:
    """:func:`calibrate_privatizer` on arguments validated once already (by it, or by a learner's release template
    and plan: ``synchronization._plan``); finite ``epsilon``, ``"paper"`` only with the tree."""
    slack = _summation_slack(summed_pairs, bound, reward)
    if continual == "blt-exact":
        return _calibrate_exact(epsilon, delta, bound, reward, dim, tau, summed_pairs)
    if continual != "tree":
        return _calibrate_factorized(epsilon, delta, bound, reward, dim, tau, continual, slack)
    return _calibrate_tree(epsilon, delta, bound, reward, dim, tau, noise_calibration, slack)


def _calibrate_tree(epsilon: float, delta: float, bound: float, reward: float, dim: int, tau: int,
                    noise_calibration: str, summation_slack: float = 0.0) -> PrivatizerCalibration:
    """Algorithm 2's tree with lattice node noise (:func:`calibrate_privatizer`'s ``continual="tree"``), validated input."""
    n_levels = privatizer_depth(tau)
    levels = tau.bit_length()  # floor(log2 tau) + 1
    per_release = (tau + 1).bit_length() - 1  # the most set bits of any k <= tau
    frobenius = math.sqrt(2.0) * (bound**2 + reward**2) + summation_slack  # the float64 sums' error, when bounded
    rounding = math.sqrt((dim + 1) ** 2 - 1)  # one grid unit per released entry
    entries = _entries(tau, dim)

    def sigma_for(rho: float, granularity: float) -> float:
        return math.sqrt(levels / (4.0 * rho)) * (frobenius + granularity * rounding)

    def share_of(tv: float, eps: float) -> float:
        return (1.0 + math.exp(min(eps, 700.0))) * entries * tv

    sampler = "lattice"
    if noise_calibration == "paper":
        sigma = math.sqrt(_node_variance(epsilon, delta, bound, n_levels, reward))
        granularity = lattice_granularity_unvalidated(sigma, _RESOLUTION_BITS)
        tv = lattice_total_variation(sigma, granularity)
        if share_of(tv, epsilon) > _SAMPLER_SHARE_LIMIT * delta:
            sampler, tv = "exact", 0.0
    else:
        granularity = lattice_granularity_unvalidated(sigma_for(zcdp_for_approx_dp_unvalidated(epsilon, delta), 0.0),
                                                      _RESOLUTION_BITS)
        # the share of delta is paid before sigma is known; the tables' distance depends (weakly) on sigma:
        # pay for 10 % more than measured and check it with the final sigma
        tv = 1.1 * lattice_total_variation(sigma_for(zcdp_for_approx_dp_unvalidated(epsilon, delta), granularity), granularity)
        for _ in range(5):
            if share_of(tv, epsilon) > _SAMPLER_SHARE_LIMIT * delta:
                sampler, tv = "exact", 0.0
            sigma = sigma_for(zcdp_for_approx_dp_unvalidated(epsilon, delta - share_of(tv, epsilon)), granularity)
            actual = 0.0 if sampler == "exact" else lattice_total_variation(sigma, granularity)
            if actual <= tv:
                break
            tv = 1.1 * actual
        else:  # pragma: no cover - the distance varies by a few percent at most
            raise RuntimeError("the lattice sampler's share of delta did not settle; report this as a bug.")
    sensitivity = frobenius + granularity * rounding
    rho = levels * sensitivity**2 / (4.0 * sigma**2)
    accounted, delta_sampler = zcdp_to_approx_dp_with_sampler_unvalidated(rho, delta, entries * tv, epsilon)
    delta_accounted = min(delta, zcdp_delta_unvalidated(rho, epsilon) + share_of(tv, epsilon))
    if noise_calibration == "tight":
        # zcdp_for_approx_dp verified (epsilon, delta - share) itself; the conversion's root may sit ~1e-13 above
        accounted, delta_accounted = min(accounted, epsilon), delta
    return PrivatizerCalibration(
        noise_calibration=noise_calibration, epsilon=epsilon, delta=delta, node_sigma=sigma, granularity=granularity,
        n_levels=n_levels, levels_used=levels, nodes_per_release=per_release, sensitivity=sensitivity, rho=rho,
        delta_sampler=delta_sampler, epsilon_accounted=accounted, delta_accounted=delta_accounted, sampler=sampler,
        column_sensitivity=math.sqrt(levels), release_factor=math.sqrt(per_release), mu=math.sqrt(2.0 * rho),
    )


def _calibrate_factorized(epsilon: float, delta: float, bound: float, reward: float, dim: int, tau: int,
                          continual: str, summation_slack: float = 0.0) -> PrivatizerCalibration:
    """``continual != "tree"``: the Gaussian matrix mechanism on ``C m``, by its exact ``mu``-GDP profile.

    ``m`` are the rounded increments in grid units; replacing one round moves one of them by at most
    ``Delta / g`` in the Frobenius norm over the released entries (:func:`calibrate_privatizer`), so
    ``C m`` moves by at most ``sens(C) Delta / g``; whitening the entries (off-diagonal std ``sigma``,
    diagonal ``sqrt(2) sigma``, the pair of off-diagonal copies counted once) the Gaussian mechanism
    has ``mu = sens(C) Delta / (sqrt(2) sigma)``.  Adaptive streams keep it: ``C`` is lower-triangular
    in time (Denisov, McMahan, Rush, Smith & Thakurta 2022, Theorem 2.1).
    """
    from dpfair.privacy.continual import get_factorization  # kept local to the branch

    if tau > MAX_FACTORIZED_RELEASES:
        raise ValueError(f"n_releases={tau:,} is beyond continual={continual!r}'s table of release noise (at most "
                         f"{MAX_FACTORIZED_RELEASES:,} releases, O(n_releases) memory per agent); use continual='tree' "
                         "(O(log n_releases) memory) or plan fewer releases.")
    factorization = get_factorization(continual, tau)
    column = factorization.sensitivity
    release = float(factorization.release_norms().max())
    frobenius = math.sqrt(2.0) * (bound**2 + reward**2) + summation_slack
    rounding = math.sqrt((dim + 1) ** 2 - 1)
    mu = gaussian_dp_mu(epsilon, delta * (1.0 - _PROFILE_MARGIN))

    def sigma_for(granularity: float) -> float:
        return column * (frobenius + granularity * rounding) / (math.sqrt(2.0) * mu)

    granularity = lattice_granularity_unvalidated(sigma_for(0.0), _RESOLUTION_BITS)
    sigma = sigma_for(granularity)
    sensitivity = frobenius + granularity * rounding
    mu = column * sensitivity / (math.sqrt(2.0) * sigma)
    delta_accounted = gaussian_dp_delta(mu, epsilon)
    if delta_accounted > delta:  # pragma: no cover - gaussian_dp_mu certified it with a margin
        raise RuntimeError("the factorized PRIVATIZER's calibration exceeds delta; report this as a bug.")
    return PrivatizerCalibration(
        noise_calibration="tight", epsilon=epsilon, delta=delta, node_sigma=sigma, granularity=granularity,
        n_levels=privatizer_depth(tau), levels_used=tau.bit_length(), nodes_per_release=(tau + 1).bit_length() - 1,
        sensitivity=sensitivity, rho=mu * mu / 2.0, delta_sampler=0.0, epsilon_accounted=gaussian_dp_epsilon(mu, delta),
        delta_accounted=delta_accounted, sampler="gaussian", continual=continual, column_sensitivity=column,
        release_factor=release, mu=mu,
    )


def _calibrate_exact(epsilon: float, delta: float, bound: float, reward: float, dim: int,
                     tau: int, summed_pairs: int | None = None) -> PrivatizerCalibration:
    """``continual="blt-exact"``: :func:`~dpfair.bandits.fairx._privatizer_exact.calibrate_exact_blt` as a calibration."""
    from dpfair.bandits.fairx._privatizer_exact import calibrate_exact_blt

    cal = calibrate_exact_blt(epsilon, delta, bound, dim, tau, reward_bound=reward, summed_pairs=summed_pairs)
    return PrivatizerCalibration(
        noise_calibration="tight", epsilon=epsilon, delta=delta, node_sigma=cal.sigma, granularity=cal.granularity,
        n_levels=privatizer_depth(tau), levels_used=tau.bit_length(), nodes_per_release=(tau + 1).bit_length() - 1,
        sensitivity=cal.sensitivity, rho=cal.mu * cal.mu / 2.0, delta_sampler=cal.delta_sampler,
        epsilon_accounted=cal.epsilon_accounted, delta_accounted=gaussian_dp_delta(cal.mu, epsilon) + cal.delta_sampler,
        sampler="rounded", continual="blt-exact",
        column_sensitivity=cal.stream_sensitivity * cal.granularity / cal.sensitivity,
        release_factor=cal.release_factor, mu=cal.mu,
    )
