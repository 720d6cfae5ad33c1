"""The sufficient-statistics oracle of :class:`~dpfair.classification.DPExponentiatedGradient` (``oracle="statistics"``).

Why a second oracle.  The paper's private Learner (Jagielski et al. 2019, Section 5 with Algorithm 3) releases a noisy
``Z^T C_1`` in *every* round, so its noise grows with the number of rounds ``T`` and is scaled by the worst
Lagrangian cost ``2 B / q_min``: on Adult with 2,000 rows and ``epsilon = 1`` its sensitivity (1,412) exceeds the
largest entry of the signal (1,040) and the classifier is worse than a constant one.

What this oracle releases instead.  Under the estimator's neighbouring relation (change one row's sensitive attribute;
``X`` and ``y`` public) the Lagrangian cost of row ``i`` is a function of its cell ``(a_i, y_i)`` and ``lambda`` only
(Subroutine 2: ``C_1 = 1{y != 1} + tau_(a, y)(lambda)``, ``C_0 = 1{y != 0}``).  With ``Z = [X, 1]``::

    Z^T C_1 = Z^T 1{y != 1} + sum_(a, y) tau_(a, y) S_(a, y),    S_(a, y) = sum_{i in cell (a, y)} z_i,

so the **cell sums** ``S`` (``2|A|`` vectors of length ``d + 1``; their last coordinate is the cell count) are the only
private inputs of every best response: they are released **once** (Gaussian mechanism) and every round's least-squares
best response ``(Z^T Z)^-1 (Z^T C_0 - Z^T C_1)`` is post-processing (``Z^T Z``, ``Z^T C_0`` and ``Z^T 1{y != 1}`` are
public).  The oracle's noise therefore does not grow with ``T`` and is not multiplied by ``1 / q_min``.

* Sensitivity of ``S``: changing row ``i``'s group moves ``z_i`` from cell ``(a, y)`` to ``(a', y)`` (same label, ``y``
  is public): L2 change ``sqrt(2) ||z_i||_2 <= sqrt(2) sqrt(R_2^2 + 1)``, ``R_2`` the declared bound on ``||x||_2``.
* The released sums are projected (post-processing) onto the public totals ``sum_a S_(a, y) = sum_{y_i = y} z_i``:
  for each label the same correction ``(total - sum_a S~_(a, y)) / |A|`` is added to every group's sum.
* Each round's normal equations are solved in the eigenbasis of the public ``Z^T Z`` with a non-negative garrote
  at the universal threshold (:class:`ShrunkSolver`): directions where ``1 / g_j`` would magnify the released
  noise are dropped unless the data support them (post-processing).
* The Auditor (Algorithm 3, lines 6-7) still needs the positive counts of every round's ``h_t`` per cell: released
  each round with the Gaussian mechanism (L2 sensitivity ``sqrt(2)``: the moved row leaves one cell's count and enters
  another's, ``h_t(x_i)`` being a function of public ``x_i`` and released values), projected onto the public number
  of positives of each label; the violations are computed from them (post-processing).

Accounting (Gaussian differential privacy, Dong, Roth & Su 2022): a Gaussian mechanism with L2 sensitivity ``D`` and
noise ``sigma`` is ``mu``-GDP with ``mu = D / sigma``; ``k`` adaptively composed ones are ``sqrt(sum mu_i^2)``-GDP
(their Corollary 3.3), and ``mu``-GDP is exactly the guarantee of one Gaussian mechanism with ``D / sigma = mu``, whose
``(epsilon, delta)`` curve is Balle & Wang's analytic one.  So the fit takes the ``mu`` with
``gaussian_sigma_approx_dp(1, epsilon, delta) = 1 / mu`` and splits ``mu^2`` (the documented rule,
:data:`STATISTICS_SHARE`): half to the one-off cell sums, half to the ``T`` Auditor rounds in equal parts.
"""

from __future__ import annotations

import math

import numpy as np

from dpfair.privacy.accounting import gaussian_sigma_approx_dp
from dpfair.privacy.mechanisms import gaussian_mechanism
from dpfair.privacy.noise import NoiseSource
from dpfair.privacy.relations import CHANGE_ATTRIBUTE

#: Share of ``mu^2`` spent on the one-off release of the cell sums; the ``T`` Auditor rounds share the rest.
STATISTICS_SHARE = 0.5
#: Rounds of the game with ``oracle="statistics"`` at finite ``epsilon`` (``n_iter=None``; never more than the
#: accuracy bound of Lemma 4.2).  The Auditor's per-round noise grows like ``sqrt(T)`` while Algorithm 3's step shrinks
#: like ``1 / sqrt(T)``, so the noise the multipliers accumulate does not depend on ``T``; but the best-prefix
#: selection's noise margin on a prefix of ``t`` rounds, ``2 sd_round / sqrt(t)``, grows like ``sqrt(T / t)``, pushing
#: the choice to long prefixes whose multipliers trade error for fairness beyond what the noisy violations justify.
#: Measured (held-out 1/3, 5 seeded splits, epsilon 1): 200 rounds gave ACS income by race .360 / .034 (error /
#: equalized-odds difference), Communities .282 / .047, 9 groups down to 20 rows .417 / .031; 50 rounds .337 / .080,
#: .243 / .075, .388 / .104 (every difference within the reference's + .03), Adult .165 / .042 either way, in a quarter
#: of the time.
STATISTICS_N_ITER = 50
#: The noise-to-signal ratio above which :class:`~dpfair.classification.SmallBudgetWarning` is raised.
NOISE_TO_SIGNAL_LIMIT = 1.0


def total_mu(epsilon: float, delta: float) -> float:
    """The ``mu`` of the ``mu``-GDP guarantee that is exactly ``(epsilon, delta)``-DP (analytic Gaussian curve).

    Parameters
    ----------
    epsilon : float
        Total ``epsilon`` (``> 0``, finite).
    delta : float
        Total ``delta`` in ``(0, 1)``.

    Returns
    -------
    float
        ``mu > 0``.
    """
    return 1.0 / gaussian_sigma_approx_dp(1.0, epsilon, delta)


def statistics_split(epsilon: float, delta: float, n_iter: int) -> tuple[float, float]:
    """``(mu_cells, mu_round)``: the GDP ``mu`` of the cell-sum release and of each of the ``n_iter`` Auditor releases.

    ``mu_cells^2 = STATISTICS_SHARE mu^2`` and ``n_iter mu_round^2 = (1 - STATISTICS_SHARE) mu^2``, so the
    composition is ``mu``-GDP, i.e. ``(epsilon, delta)``-DP (:func:`total_mu`).

    Parameters
    ----------
    epsilon : float
        Total ``epsilon`` (``> 0``, finite).
    delta : float
        Total ``delta`` in ``(0, 1)``.
    n_iter : int
        Number of Auditor releases ``T >= 1``.

    Returns
    -------
    tuple of float
        ``(mu_cells, mu_round)``.
    """
    mu = total_mu(epsilon, delta)
    return mu * math.sqrt(STATISTICS_SHARE), mu * math.sqrt((1.0 - STATISTICS_SHARE) / n_iter)


def l2_row_bound(l1_row_bound: float, l2: float | None, per_feature: np.ndarray | None) -> float:
    """The smallest bound on ``||x||_2`` that the declared bounds give (``||x||_2 <= ||x||_1``).

    Parameters
    ----------
    l1_row_bound : float
        The bound on ``||x||_1`` (from ``x_l1_bound`` or ``sqrt(d) x_norm_bound``).
    l2 : float or None
        ``x_norm_bound``.
    per_feature : ndarray or None
        Per-feature bounds on ``|x_j|`` (then ``||x||_2 <= sqrt(sum_j b_j^2)``).

    Returns
    -------
    float
        The bound.
    """
    bounds = [l1_row_bound]
    if l2 is not None:
        bounds.append(l2)
    if per_feature is not None:
        bounds.append(float(np.sqrt(np.sum(per_feature**2))))
    return min(bounds)


def count_weight(l2_bound: float) -> float:
    """The weight ``c = max(R_2 / 2, 1)`` of the count coordinate in the released cell sums of ``[x, c]``.

    The count of a cell (the last coordinate of its sum of ``[x, 1]``) is every rate's denominator and every Lagrangian
    cost's divisor (``tau = lambda / q~``), while a coordinate of ``x`` only enters the regression.  Released as one
    Gaussian vector, all coordinates get the same noise ``sigma``, calibrated to ``sqrt(2) sqrt(R_2^2 + 1)``: with
    ``R_2 = 11`` (121 features in [0, 1]) a count gets 15 times the noise it would get alone.  Releasing ``c`` times
    the count (and dividing by ``c`` after, post-processing) costs L2 sensitivity ``sqrt(2) sqrt(R_2^2 + c^2)`` and
    gives the count noise ``sigma / c``: with ``c = R_2 / 2`` the sums of ``x`` get ``sqrt(5) / 2 = 1.12`` times the
    noise (for ``R_2 >> 1``) and the counts about ``R_2 / 1.6`` times less.  Measured (5 seeds, held-out 1/3, epsilon
    1 and 2): ``c = R_2`` lost up to .03 of error on ACS income by race and fell back to the constant on the
    9-group synthetic task, ``c = 1`` left Communities' true-positive constraint without evidence (held-out
    equalized-odds difference .14 against .05 with ``c = R_2 / 2``).  ``c`` is a function of the declared bound only
    (public); ``R_2 <= 2`` gives ``c = 1``, the plain sums.

    Parameters
    ----------
    l2_bound : float
        Declared bound ``R_2`` on every ``||x||_2``.

    Returns
    -------
    float
        ``max(R_2, 1)``.
    """
    return max(0.5 * float(l2_bound), 1.0)


def cell_sum_sensitivity(l2_bound: float) -> float:
    """L2 sensitivity of the released cell sums of ``[x, c]``: ``sqrt(2) sqrt(R_2^2 + c^2)``, ``c`` = :func:`count_weight`.

    Changing one row's group moves ``[x_i, c]`` from one cell to another of the same label (module docstring).

    Parameters
    ----------
    l2_bound : float
        Declared bound ``R_2`` on every ``||x||_2``.

    Returns
    -------
    float
        The sensitivity.
    """
    return math.sqrt(2.0) * math.hypot(l2_bound, count_weight(l2_bound))


#: L2 sensitivity of one round's positive counts per cell (one row leaves one cell and enters another).
POSITIVES_SENSITIVITY = math.sqrt(2.0)


def _project_to_totals(noisy: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Project ``noisy[a, y, ...]`` onto ``sum_a noisy[a, y, ...] = totals[y, ...]`` (Euclidean; post-processing)."""
    return noisy + (totals - noisy.sum(axis=0)) / noisy.shape[0]


def release_cell_sums(
    cell_sums: np.ndarray, label_totals: np.ndarray, sensitivity: float, mu_cells: float, noise: NoiseSource,
    weight: float = 1.0,
) -> np.ndarray:
    """The one-off release: ``S + N(0, (sensitivity / mu_cells)^2)``, projected onto the public label totals.

    The count coordinate (the last) is released as ``weight`` times the count and divided by ``weight`` after
    (post-processing; :func:`count_weight`): ``sensitivity`` must cover the weighted sums.

    Parameters
    ----------
    cell_sums : ndarray of shape (n_groups, 2, n_weights)
        Exact ``S_(a, y)``.
    label_totals : ndarray of shape (2, n_weights)
        Public ``sum_a S_(a, y)``.
    sensitivity : float
        L2 sensitivity of ``S`` (:func:`cell_sum_sensitivity`).
    mu_cells : float
        The release's GDP ``mu`` (:func:`statistics_split`).
    noise : NoiseSource
        The fit's noise source.
    weight : float, default 1.0
        The weight of the count coordinate (:func:`count_weight`).

    Returns
    -------
    ndarray of shape (n_groups, 2, n_weights)
        The released sums (the count unweighted).
    """
    scale = np.ones(cell_sums.shape[-1])
    scale[-1] = weight
    released = gaussian_mechanism(cell_sums * scale, sensitivity=sensitivity, rho=0.5 * mu_cells**2,
                                  noise=noise, neighbouring=CHANGE_ATTRIBUTE)
    return _project_to_totals(released / scale, label_totals)


def release_positives(
    positives: np.ndarray, label_positives: np.ndarray, mu_round: float, noise: NoiseSource
) -> np.ndarray:
    """One Auditor round: the positive counts per cell ``+ N(0, (sqrt(2) / mu_round)^2)``, projected onto the labels.

    Parameters
    ----------
    positives : ndarray of shape (n_groups, 2)
        Exact positive counts of ``h_t`` per cell.
    label_positives : ndarray of shape (2,)
        Public positives of each label (``h_t`` and ``y`` are public).
    mu_round : float
        The round's GDP ``mu``.
    noise : NoiseSource
        The fit's noise source.

    Returns
    -------
    ndarray of shape (n_groups, 2)
        The released counts.
    """
    released = gaussian_mechanism(positives, sensitivity=POSITIVES_SENSITIVITY, rho=0.5 * mu_round**2,
                                  noise=noise, neighbouring=CHANGE_ATTRIBUTE)
    return _project_to_totals(released, label_positives)


def noise_to_signal(oracle_noise_norm: float, rhs_signal: float, violation_sd: float, n_rounds: int,
                    gamma: float) -> dict[str, float]:
    """The released noise-to-signal ratios that decide :class:`~dpfair.classification.SmallBudgetWarning`.

    Parameters
    ----------
    oracle_noise_norm : float
        Expected Euclidean norm (``sd sqrt(D)``) of the noise on the oracle's right-hand side ``Z^T (C_0 - C_1)``:
        for ``oracle="paper"`` the Laplace noise of every round (calibrated to the worst costs); for
        ``oracle="statistics"`` the noise of ``sum_c tau_c S~_c`` at the rounds' released multipliers (root mean
        square of ``sigma ||tau_t||_2``; before its shrinkage).
    rhs_signal : float
        ``||[X, 1]^T (2 y - 1)||_2``, the unconstrained least-squares right-hand side (public: ``X``, ``y`` public).
    violation_sd : float
        Standard deviation of one round's released violation entry (an upper bound).
    n_rounds : int
        ``T``: the multipliers follow the sum of the ``T`` releases, so the Auditor's noise is that of their average.
    gamma : float
        The allowed violation; the Auditor must resolve violations of about ``max(gamma, 0.01)``.

    Returns
    -------
    dict
        ``{"oracle": oracle_noise_norm / rhs_signal, "auditor": violation_sd / sqrt(T) / max(gamma, 0.01)}``.
    """
    oracle = oracle_noise_norm / rhs_signal if rhs_signal > 0 else math.inf
    return {"oracle": float(oracle), "auditor": float(violation_sd / math.sqrt(n_rounds) / max(gamma, 0.01))}


class ShrunkSolver:
    """The statistics oracle's normal equations ``Z^T Z w = Z^T (C_0 - C_1)``, denoised in the eigenbasis of ``Z^T Z``.

    ``Z^T Z`` is public (exact); the right-hand side ``b~`` carries the noise ``sum_c tau_c E_c`` of the released cell
    sums (``E_c`` i.i.d. ``N(0, sigma^2 I)``), of standard deviation at most ``sigma_e = sigma ||tau||_2`` in every
    direction.  In the orthonormal eigenbasis ``V`` of ``Z^T Z`` (eigenvalues ``g_j``) the coordinates
    ``c_j = (V^T b~)_j`` are each the signal plus ``N(0, <= sigma_e^2)``; the solution
    ``w = V diag(f_j / g_j) V^T b~`` keeps each with the non-negative garrote factor
    ``f_j = max(0, 1 - 2 ln(D) sigma_e^2 / c_j^2)`` (Breiman 1995; the positive-part James-Stein factor at the
    universal threshold ``sigma_e sqrt(2 ln D)`` of Donoho & Johnstone 1994, below which a coordinate is not told apart
    from the noise of ``D`` coordinates).  Directions of ``Z^T Z`` with small ``g_j``, where ``1 / g_j`` would magnify
    the noise, are dropped unless the data support them.  Round 1 (``tau = 0``) is the exact unconstrained least squares.
    Everything is post-processing of the released sums.

    Parameters
    ----------
    gram : ndarray of shape (D, D)
        ``Z^T Z`` (public).
    sigma : float
        Standard deviation of the noise on one released cell-sum coordinate.
    """

    def __init__(self, gram: np.ndarray, sigma: float) -> None:
        values, self.vectors = np.linalg.eigh(0.5 * (gram + gram.T))
        top = max(float(np.abs(values).max()), 1e-300)
        keep = values > 1e-10 * top  # the pseudo-inverse of the exact (possibly singular) Gram matrix
        self.inverse = np.zeros_like(values)
        self.inverse[keep] = 1.0 / values[keep]
        self.sigma, self.threshold = sigma, 2.0 * math.log(max(gram.shape[0], 2))

    def solve(self, rhs: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """The denoised solution for one round's right-hand side and cell costs ``tau``.

        Parameters
        ----------
        rhs : ndarray of shape (D,)
            ``Z^T (C_0 - C_1)`` from the released sums.
        tau : ndarray
            The round's cell costs (:func:`~dpfair.classification.reductions._game.cell_costs`).

        Returns
        -------
        ndarray of shape (D,)
            The weights.
        """
        coords = self.vectors.T @ rhs
        noise_var = (self.sigma * float(np.linalg.norm(tau))) ** 2
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            factor = np.nan_to_num(np.clip(1.0 - self.threshold * noise_var / coords**2, 0.0, 1.0), nan=0.0)
        return self.vectors @ (self.inverse * factor * coords)
