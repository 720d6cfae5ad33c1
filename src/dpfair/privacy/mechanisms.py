"""Differentially private mechanisms: Laplace, Gaussian, exponential and exact top-m.

Every mechanism

* takes its privacy parameter and a *declared* sensitivity (never read off the data),
* draws noise only through :mod:`dpfair.privacy.noise` (secure by default; seeded when
  ``random_state`` is given; ``noise=`` takes a :class:`~dpfair.privacy.NoiseSource` the caller already
  holds, as an estimator passes the one its release template opened after the charge),
* optionally charges a :class:`~dpfair.privacy.budget.PrivacyBudget` *before* drawing,
  so a refused charge releases nothing,
* validates every argument (values, sensitivity, privacy parameters, ``random_state`` / ``noise``,
  ``budget``) *before* it charges the budget, and charges just before the first noise
  draw: a refused call spends nothing,
* treats ``epsilon = inf`` (or ``rho = inf``) as the exact non-private computation and
  then raises :class:`~dpfair.privacy.PrivacyLeakWarning`.

The exact probability analyses (:func:`exponential_probabilities`,
:func:`top_m_inclusion_probabilities`, :meth:`TopMExponentialMechanism.inclusion_probabilities`)
are noise-free functions of their input: they are analysis tools for public or synthetic
scores and always raise :class:`~dpfair.privacy.PrivacyLeakWarning`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import softmax

from dpfair._validation import as_finite_array, check_epsilon, check_int, check_sensitivity
from dpfair.privacy._topm import ConditionalPoissonTree
from dpfair.privacy.accounting import gaussian_sigma_approx_dp, gaussian_sigma_zcdp, laplace_scale
from dpfair.privacy.budget import PrivacyBudget, charge, check_budget, inside_charged_release
from dpfair.privacy.leaks import warn_exact_release, warn_privacy_leak, warn_seeded_noise
from dpfair.privacy.noise import NoiseSource, check_noise_room, check_random_state, get_noise_source, one_noise_source
from dpfair.privacy.relations import REPLACE, check_relation

__all__ = [
    "TopMExponentialMechanism",
    "exponential_mechanism",
    "exponential_probabilities",
    "gaussian_mechanism",
    "laplace_mechanism",
    "top_m_exponential_mechanism",
    "top_m_inclusion_probabilities",
]


_MAX_FLOAT = float(np.finfo(float).max)
_FLOOR = -1e300  # log-weight floor: exp(-1e300) is exactly 0 next to the best item's exp(0)


def _warn_exact_analysis(what: str) -> None:
    warn_privacy_leak(
        f"{what} are exact, noise-free functions of the utilities: an analysis tool for public or synthetic "
        "scores, with no privacy guarantee; release selections with the sampling mechanisms instead.",
    )


def _release_checks(arr: np.ndarray, scale: float, random_state: Any, budget: Any, neighbouring: str) -> None:
    """The last checks of an additive release, before its charge: ``random_state``, ``budget``, relation, overflow room."""
    check_random_state(random_state)
    check_budget(budget)
    check_relation(neighbouring)
    if scale:
        check_noise_room(arr, scale)


def _noise_after_charge(random_state: Any, epsilon: float, what: str) -> NoiseSource:
    """The noise source, created only after the charge; seeded noise at finite epsilon says so."""
    noise = get_noise_source(random_state)
    if not inside_charged_release():  # (a release calling this mechanism warned once for all its draws)
        warn_seeded_noise(noise, epsilon, what)
    return noise


def laplace_mechanism(
    values: Any,
    *,
    sensitivity: float,
    epsilon: float,
    random_state: Any = None,
    noise: NoiseSource | None = None,
    budget: PrivacyBudget | None = None,
    label: str = "laplace",
    neighbouring: str = REPLACE,
) -> np.ndarray:
    """Release ``values + Laplace(sensitivity / epsilon)``: pure ``epsilon``-DP.

    Parameters
    ----------
    values : array-like of real numbers
        The exact statistic (any shape, empty and 0-d included).
    sensitivity : float
        Declared L1 sensitivity of ``values`` to one individual's data.
    epsilon : float
        Privacy parameter (> 0; ``inf`` returns ``values`` unchanged and raises
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    random_state : None, int, Generator or NoiseSource
        ``None``: secure noise (OpenDP). Otherwise seeded, reproducible noise.
    noise : NoiseSource, optional
        A noise source the caller already holds (an estimator passes its own, opened after its
        charge); mutually exclusive with ``random_state``.
    budget : PrivacyBudget, optional
        Charged ``(epsilon, 0)`` after every argument is validated and before any noise
        is drawn.
    label : str
        Ledger label for the charge.
    neighbouring : str, default "replace"
        The relation the declared sensitivity holds under (:mod:`dpfair.privacy.relations`); the budget
        converts it into its own or refuses.

    Returns
    -------
    ndarray of float
        Same shape as ``values``.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments (nothing is charged), including ``values`` and noise scale
        so large that the release could overflow.
    PrivacyBudgetExceededError
        If ``budget`` refuses the charge (nothing is released).
    """
    random_state = one_noise_source(random_state, noise)
    arr = as_finite_array(values, "values", allow_empty=True)
    scale = laplace_scale(sensitivity, epsilon)
    _release_checks(arr, scale, random_state, budget, neighbouring)
    charge(budget, epsilon, 0.0, label=label, neighbouring=neighbouring)
    noise = _noise_after_charge(random_state, epsilon, "laplace_mechanism")
    warn_exact_release(epsilon, "laplace_mechanism's output")  # epsilon = inf: scale 0, the exact values
    return noise.laplace(arr, scale)


def gaussian_mechanism(
    values: Any,
    *,
    sensitivity: float,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    random_state: Any = None,
    noise: NoiseSource | None = None,
    budget: PrivacyBudget | None = None,
    label: str = "gaussian",
    neighbouring: str = REPLACE,
) -> np.ndarray:
    """Release ``values + N(0, sigma**2)``, calibrated to ``rho``-zCDP or ``(epsilon, delta)``-DP.

    Give exactly one of ``rho`` (``sigma = sensitivity / sqrt(2*rho)``) or the pair
    ``(epsilon, delta)`` (the analytic Gaussian mechanism of Balle & Wang 2018, tight).

    Parameters
    ----------
    values : array-like of real numbers
        The exact statistic (any shape).
    sensitivity : float
        Declared L2 sensitivity.
    rho : float, optional
        The zCDP target (> 0; ``inf`` releases ``values`` unchanged with a
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    epsilon, delta : float, optional
        Approximate-DP target (``epsilon > 0`` or ``inf``; ``0 < delta < 1``).
    random_state : None, int, Generator or NoiseSource
        As in :func:`laplace_mechanism`.
    noise : NoiseSource, optional
        A noise source the caller already holds (an estimator passes its own, opened after its
        charge); mutually exclusive with ``random_state``.
    budget : PrivacyBudget, optional
        Charged ``rho`` (zCDP) or ``(epsilon, delta)`` after validation, before any draw.
    label : str
        Ledger label for the charge.
    neighbouring : str, default "replace"
        The relation the declared sensitivity holds under (:mod:`dpfair.privacy.relations`); the budget
        converts it into its own or refuses.

    Returns
    -------
    ndarray of float
        Same shape as ``values``.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments (nothing is charged).
    PrivacyBudgetExceededError
        If ``budget`` refuses the charge (nothing is released).
    """
    random_state = one_noise_source(random_state, noise)
    arr = as_finite_array(values, "values", allow_empty=True)
    if (rho is None) == (epsilon is None and delta is None):
        raise ValueError("give either rho (zCDP) or both epsilon and delta, not both and not neither.")
    if rho is not None:
        sigma = gaussian_sigma_zcdp(sensitivity, rho)
    else:
        if epsilon is None or delta is None:
            raise ValueError("the (epsilon, delta) calibration needs both epsilon and delta.")
        sigma = gaussian_sigma_approx_dp(sensitivity, epsilon, delta)
    _release_checks(arr, sigma, random_state, budget, neighbouring)
    if rho is not None:
        charge(budget, rho=rho, label=label, neighbouring=neighbouring)
    else:
        charge(budget, epsilon, delta, label=label, neighbouring=neighbouring)
    noise = _noise_after_charge(random_state, epsilon if rho is None else rho, "gaussian_mechanism")
    warn_exact_release(epsilon if rho is None else rho, "gaussian_mechanism's output")  # inf: sigma 0
    return noise.gaussian(arr, sigma)


def _utilities(utilities: Any) -> np.ndarray:
    return as_finite_array(utilities, "utilities", ndim=1)


def _log_weights(u: np.ndarray, epsilon: float, sensitivity: float) -> np.ndarray:
    """``epsilon * u / (2 * sensitivity)`` shifted so its maximum is 0, exact where float64 allows.

    Terms that overflow are ``-inf``: such an item's weight is below ``exp(-1e308)`` times the
    best item's, i.e. exactly 0 in float64.  ``epsilon = inf`` gives 0 for the maximizers and
    ``-inf`` elsewhere.
    """
    diff = u - u.max()  # <= 0; -inf only if the utilities span more than the float range
    factor = epsilon / (2.0 * sensitivity)
    with np.errstate(over="ignore", invalid="ignore"):
        w = diff * factor
    w[diff == 0] = 0.0  # inf * 0
    return np.nan_to_num(w, nan=-np.inf, neginf=-np.inf)


def _exponential_probabilities(u: np.ndarray, sensitivity: float, epsilon: float) -> np.ndarray:
    if math.isinf(epsilon):
        best = (u == u.max()).astype(float)
        return best / best.sum()
    return softmax(_log_weights(u, epsilon, sensitivity))


def exponential_probabilities(utilities: Any, *, sensitivity: float, epsilon: float) -> np.ndarray:
    """Exact output distribution of the exponential mechanism.

    ``P(i) = exp(epsilon * u_i / (2 * sensitivity)) / Z`` (McSherry & Talwar 2007); at
    ``epsilon = inf`` it is uniform over the maximizers.

    This is an analysis tool for public or synthetic scores: the probabilities are an exact
    function of ``utilities`` and always raise :class:`~dpfair.privacy.PrivacyLeakWarning`.

    Parameters
    ----------
    utilities : array-like of shape (n,)
        Finite utilities, ``n >= 1``.
    sensitivity : float
        Declared sensitivity of the utility.
    epsilon : float
        ``epsilon > 0`` or ``inf``.

    Returns
    -------
    ndarray of shape (n,)
        Probabilities summing to 1 (an item whose weight underflows gets exactly 0).

    Raises
    ------
    TypeError, ValueError
        For invalid arguments.
    """
    u = _utilities(utilities)
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon)
    _warn_exact_analysis("exponential_probabilities")
    return _exponential_probabilities(u, sensitivity, epsilon)


def exponential_mechanism(
    utilities: Any,
    *,
    sensitivity: float,
    epsilon: float,
    random_state: Any = None,
    noise: NoiseSource | None = None,
    budget: PrivacyBudget | None = None,
    label: str = "exponential",
    neighbouring: str = REPLACE,
) -> int:
    """Pick one index with probability proportional to ``exp(epsilon * u_i / (2*sensitivity))``.

    Sampled by Gumbel-max (exact).  The secure source uses OpenDP's Gumbel noisy-max.

    Parameters
    ----------
    utilities : array-like of shape (n,)
        Finite utilities, ``n >= 1``.
    sensitivity : float
        Declared sensitivity of the utility.
    epsilon : float
        ``epsilon > 0``; ``inf`` picks uniformly among the maximizers and raises
        :class:`~dpfair.privacy.PrivacyLeakWarning`.
    random_state : None, int, Generator or NoiseSource
        As in :func:`laplace_mechanism`.
    noise : NoiseSource, optional
        A noise source the caller already holds (an estimator passes its own, opened after its
        charge); mutually exclusive with ``random_state``.
    budget : PrivacyBudget, optional
        Charged ``(epsilon, 0)`` after validation, before any draw.
    label : str
        Ledger label for the charge.
    neighbouring : str, default "replace"
        The relation the declared sensitivity holds under (:mod:`dpfair.privacy.relations`); the budget
        converts it into its own or refuses.

    Returns
    -------
    int
        The selected index.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments (nothing is charged).
    PrivacyBudgetExceededError
        If ``budget`` refuses the charge.
    """
    random_state = one_noise_source(random_state, noise)
    u = _utilities(utilities)
    sensitivity = check_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon)
    check_random_state(random_state)
    check_budget(budget)
    check_relation(neighbouring)
    charge(budget, epsilon, 0.0, label=label, neighbouring=neighbouring)
    noise = _noise_after_charge(random_state, epsilon, "exponential_mechanism")
    if math.isinf(epsilon):
        warn_exact_release(epsilon, "exponential_mechanism's choice")
        return noise._uniform_argmax(u)  # the maximizers, uniformly (NoiseSource's scale = 0 rule)
    scale = 2.0 * sensitivity / epsilon
    if 0.0 < scale <= 1e300 and float(np.max(np.abs(u))) <= 1e300:
        return noise.noisy_argmax_gumbel(u, scale)
    # scale under- or overflows: Gumbel-max on the centred log-weights (the same law, exactly)
    return noise.noisy_argmax_gumbel(np.maximum(_log_weights(u, epsilon, sensitivity), _FLOOR), 1.0)


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
    uniformly at random (and :meth:`sample` raises :class:`~dpfair.privacy.PrivacyLeakWarning`).

    Parameters
    ----------
    utilities : array-like of shape (n,)
        Per-item utilities (finite real numbers).
    n_select : int
        Subset size m, ``1 <= m <= n``.
    sensitivity : float
        Declared sensitivity of the subset utility.
    epsilon : float
        Privacy parameter (> 0, or ``inf``).

    Raises
    ------
    TypeError, ValueError
        For invalid arguments, or when ``epsilon * utilities / (2 * sensitivity)`` spans
        more than float64 can hold and fewer than ``n_select`` items remain resolvable
        (rescale the utilities, or pass ``epsilon=inf`` for the exact top m).

    Notes
    -----
    Constructing the mechanism releases nothing and charges no budget; use
    :func:`top_m_exponential_mechanism` to charge a budget per draw.
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
            with np.errstate(over="ignore", invalid="ignore"):
                log_weights = self.epsilon * self.utilities / (2.0 * self.sensitivity)
            if np.isfinite(log_weights).all():
                self._tree = self._build_tree(log_weights)
            elif not self._concentrated_on_top_m():
                self._tree = self._build_tree(self._resolvable_log_weights())
            # else: the law is the exact top m with ties shared uniformly, as at epsilon = inf

    def _build_tree(self, log_weights: np.ndarray) -> ConditionalPoissonTree:
        try:
            return ConditionalPoissonTree(log_weights, self.n_select)
        except FloatingPointError:
            raise ValueError(self._span_message()) from None

    def _concentrated_on_top_m(self) -> bool:
        """True when every subset but the best ones has probability below exp(-800) (0 in float64).

        A subset that is not among the best differs from one by swapping an item for another
        whose utility is lower by at least the smallest gap between distinct utilities, so its
        log-weight is lower by ``gap * epsilon / (2 * sensitivity)``; there are at most
        ``C(n, m) <= n**m`` subsets.
        """
        distinct = np.unique(self.utilities)
        if distinct.size < 2:
            return True
        gap = float(np.min(np.diff(distinct)))
        with np.errstate(over="ignore"):
            margin = gap * (self.epsilon / (2.0 * self.sensitivity))
        return margin >= 800.0 + self.n_select * math.log(self.utilities.size)

    def _span_message(self) -> str:
        return (
            "epsilon * utilities / (2 * sensitivity) spans more than float64 can resolve for this n_select; "
            "rescale the utilities and sensitivity, or pass epsilon=float('inf') for the exact top m."
        )

    def _resolvable_log_weights(self) -> np.ndarray:
        # centred log-weights; an item at -inf is at least exp(1e292) times less likely than any
        # finite one, so with n_select finite items it is never chosen (exact in float64)
        w = _log_weights(self.utilities, self.epsilon, self.sensitivity)
        finite = np.isfinite(w)
        if finite.sum() < self.n_select:
            raise ValueError(self._span_message())
        return np.where(finite, w, -_MAX_FLOAT)

    def _inclusion_probabilities(self) -> np.ndarray:
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

    def inclusion_probabilities(self) -> np.ndarray:
        """Exact ``P(j in G)`` for every item; they sum to ``n_select``.

        An analysis tool for public or synthetic scores: the result is an exact function
        of the utilities and raises :class:`~dpfair.privacy.PrivacyLeakWarning`.

        Returns
        -------
        ndarray of shape (n,)
            Probabilities in [0, 1].
        """
        _warn_exact_analysis("TopMExponentialMechanism.inclusion_probabilities")
        return self._inclusion_probabilities()

    def _sample(self, n_draws: int, noise: NoiseSource) -> np.ndarray:
        n, m = self.utilities.size, self.n_select
        try:
            if m == n:
                return np.tile(np.arange(n), (n_draws, 1))
            if self._tree is not None:
                uniforms = noise.uniform((n_draws, len(self._tree.levels) - 1, m))
                return self._tree.sample(uniforms)
            keys = noise.uniform((n_draws, n))
            order = np.lexsort((keys, np.broadcast_to(-self.utilities, (n_draws, n))), axis=-1)
            return np.sort(order[:, :m], axis=1)
        except MemoryError:
            raise ValueError(f"size={n_draws} draws of {m} items need too much memory; draw in batches.") from None

    def sample(self, size: int | None = None, random_state: Any = None, *, noise: NoiseSource | None = None,
               budget: PrivacyBudget | None = None,
               label: str = "top_m_exponential", neighbouring: str = REPLACE) -> np.ndarray:
        """Draw subsets; charges ``epsilon`` per draw (to ``budget``, or the process-wide ledger).

        Parameters
        ----------
        size : int, optional
            Number of independent draws (``>= 1``); ``None`` gives one draw.
        random_state : None, int, Generator or NoiseSource
            ``None``: uniforms from the OS CSPRNG. Otherwise seeded.
        noise : NoiseSource, optional
            A noise source the caller already holds (an estimator passes its own, opened after its
            charge); mutually exclusive with ``random_state``.
        budget : PrivacyBudget, optional
            Charged ``epsilon`` per draw, after validation and before anything is drawn; ``None``
            charges the process-wide ledger when the program opted in
            (:func:`~dpfair.privacy.set_default_budget`).
        label : str
            Ledger label for the charge.
        neighbouring : str, default "replace"
            The relation the declared sensitivity holds under (:mod:`dpfair.privacy.relations`).

        Returns
        -------
        ndarray of int
            Sorted selected indices: shape ``(n_select,)``, or ``(size, n_select)``.

        Raises
        ------
        TypeError, ValueError
            For an invalid ``size``, ``random_state`` or ``noise`` (or both of the last two).
        """
        return self._draw(size, one_noise_source(random_state, noise), budget, label, neighbouring,
                          "TopMExponentialMechanism.sample")

    def _draw(self, size: int | None, random_state: Any, budget: PrivacyBudget | None, label: str, neighbouring: str,
              what: str) -> np.ndarray:
        n_draws = 1 if size is None else check_int(size, "size", minimum=1)
        check_random_state(random_state)
        check_budget(budget)
        check_relation(neighbouring)
        charge(budget, self.epsilon * n_draws, 0.0, label=label, neighbouring=neighbouring)
        noise = _noise_after_charge(random_state, self.epsilon, what)
        warn_exact_release(self.epsilon, f"{what}'s subset")
        out = self._sample(n_draws, noise)
        return out[0] if size is None else out


def top_m_exponential_mechanism(
    utilities: Any,
    n_select: int,
    *,
    sensitivity: float,
    epsilon: float,
    random_state: Any = None,
    noise: NoiseSource | None = None,
    size: int | None = None,
    budget: PrivacyBudget | None = None,
    label: str = "top_m_exponential",
    neighbouring: str = REPLACE,
) -> np.ndarray:
    """Draw from the exact top-m exponential mechanism (see :class:`TopMExponentialMechanism`).

    Parameters
    ----------
    utilities : array-like of shape (n,)
        Per-item utilities.
    n_select : int
        Subset size m, ``1 <= m <= n``.
    sensitivity : float
        Declared sensitivity of the subset utility.
    epsilon : float
        ``epsilon > 0`` per draw; ``inf`` gives the exact top m (with a
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    random_state : None, int, Generator or NoiseSource
        As in :func:`laplace_mechanism`.
    noise : NoiseSource, optional
        A noise source the caller already holds (an estimator passes its own, opened after its
        charge); mutually exclusive with ``random_state``.
    size : int, optional
        Number of independent draws; ``None`` gives one.
    budget : PrivacyBudget, optional
        Charged ``epsilon`` per draw, after validation and before anything is drawn.
    label : str
        Ledger label for the charge.
    neighbouring : str, default "replace"
        The relation the declared sensitivity holds under (:mod:`dpfair.privacy.relations`); the budget
        converts it into its own or refuses.

    Returns
    -------
    ndarray of int
        Sorted indices: shape ``(n_select,)``, or ``(size, n_select)``.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments (nothing is charged).
    PrivacyBudgetExceededError
        If ``budget`` refuses the charge.
    """
    mech = TopMExponentialMechanism(utilities, n_select, sensitivity=sensitivity, epsilon=epsilon)
    return mech._draw(size, one_noise_source(random_state, noise), budget, label, neighbouring, "top_m_exponential_mechanism")


def top_m_inclusion_probabilities(
    utilities: Any, n_select: int, *, sensitivity: float, epsilon: float
) -> np.ndarray:
    """Exact inclusion probabilities of the top-m exponential mechanism.

    An analysis tool for public or synthetic scores: the result is an exact function of
    ``utilities`` and raises :class:`~dpfair.privacy.PrivacyLeakWarning`.

    Parameters
    ----------
    utilities : array-like of shape (n,)
        Per-item utilities.
    n_select : int
        Subset size m, ``1 <= m <= n``.
    sensitivity : float
        Declared sensitivity of the subset utility.
    epsilon : float
        ``epsilon > 0`` or ``inf``.

    Returns
    -------
    ndarray of shape (n,)
        ``P(j in G)``, summing to ``n_select``.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments.
    """
    mech = TopMExponentialMechanism(utilities, n_select, sensitivity=sensitivity, epsilon=epsilon)
    _warn_exact_analysis("top_m_inclusion_probabilities")
    return mech._inclusion_probabilities()
