"""Private-Fair-Greedy (An, Palacci & Paschalidis): Fair-Greedy with joint differential privacy.

The privacy budget ``(epsilon, delta)`` is split between the two private subroutines of the paper
("The Private-Fair-Greedy Policy"): ``budget_split`` of it, ``(epsilon_reg, delta_reg)``, for the
continually private ridge regression, and the rest, ``(epsilon_rank, delta_rank)``, for the relative
rank estimates.  Each part is converted to zCDP with
``rho = (sqrt(ln(1/delta_part) + epsilon_part) - sqrt(ln(1/delta_part)))**2``
(:func:`dpfair.privacy.approx_dp_to_zcdp`, the inverse of ``epsilon = rho + 2 sqrt(rho ln(1/delta))``,
Bun & Steinke 2016 Prop. 1.3), so each part is ``(epsilon_part, delta_part)``-DP and, by basic
composition, the whole policy ``(epsilon, delta)``-jointly DP: the budget is charged exactly
``(epsilon, delta)``.

* Regression ("Continually Private Regression"): the rows ``z = [x; y]`` of the regression half enter a
  :class:`~dpfair.privacy.BinaryTreeMechanism` as ``z z^T``, Gaussian node noise for ``rho_reg``-zCDP over
  the whole stream, with the Frobenius sensitivity of replacing one leaf,
  ``||z z^T - z' z'^T||_F <= sqrt(||z||^4 + ||z'||^4) <= sqrt(2) (C^2 + B^2)``, from the *declared*
  bounds ``||x|| <= C`` (``context_bound``) and ``|y| <= B`` (``reward_bound``); data outside them is
  refused.  The released ``X^T X`` block is shifted by ``c_t I`` with
  ``c_t = noise_operator_norm_bound(beta)`` (privacy core), ``beta = shift_failure_probability / T_reg``:
  with probability at least ``1 - shift_failure_probability`` every released Gram matrix satisfies
  ``noisy + c_t I >= X^T X`` (PSD order), so ``noisy + (lambda + c_t) I`` is positive definite and no
  larger a shift is used (the bound scales with the noise of that release, not with a worst case).
  In the rare other event a run keeps its previous estimate (counted in ``n_shift_failures_``).
* Continual release (``continual=``): the paper's binary tree (``"tree"``) sums ``popcount(t)`` noisy
  nodes, each of std ``sensitivity * sqrt(L / (2 rho_reg))``, ``L = floor(log2 T_reg) + 1``.  The same
  running sums can go through any factorization ``A = B C`` of the prefix-sum matrix
  (:class:`~dpfair.privacy.ContinualSumMechanism`: ``"honaker"``, ``"sqrt"``), noise
  ``sigma = sensitivity * max_s ||C e_s|| / sqrt(2 rho_reg)``; the whole stream of releases is the
  Gaussian mechanism on ``C x`` followed by ``B``, so it is exactly ``rho_reg``-zCDP, also for the
  adaptively chosen rows here (``C`` is lower-triangular in time; Denisov et al. 2022): the same
  guarantee as the tree, with less noise per release.  Release ``t``'s noise is a symmetric matrix with
  independent entries of std ``sigma ||B_t||`` on and above the diagonal, exactly the structure the
  shift bound ``c_t`` needs, so ``c_t`` follows that std.  ``"auto"`` (the default) is ``"sqrt"``, the
  least noise measured (over ``T_reg = 25,000`` releases, the census experiment's, the worst release's std
  is 14.49 (tree), 10.82 (Honaker), 4.29 (sqrt), the RMS 10.36, 7.72, 4.13, in units of
  ``sensitivity / sqrt(2 rho)``: ``get_factorization(name, T).release_norms() * .sensitivity``); ``"tree"`` is the
  paper's mechanism, numbers unchanged, for the reproduction.  Every factorization draws floating-point
  Gaussian noise from the policy's noise source, as the tree does (secure noise by default).  At
  ``epsilon = inf`` the exact sums are the tree's whatever ``continual`` says (Fair-Greedy exactly).
* Ranks ("Private Relative Rank Estimation"): each round's rank of each group is a count over ``N_t``
  pooled contexts divided by ``N_t`` (sensitivity ``1/N_t``), released with Gaussian noise
  ``sigma_t = sqrt(T / (2 N_t^2 rho_rank))``, i.e. ``rho_rank / T``-zCDP per round, ``rho_rank`` over
  ``T`` rounds by zCDP composition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from dpfair._validation import (
    check_bool,
    check_int,
    check_open_unit,
    check_positive_finite,
    check_rho,
)
from dpfair.bandits.gmf.policies import FairGreedy, _GreedyConfig, _regression_noise_scale
from dpfair.bandits.gmf.policy_base import _CheckedRun, _OpenedRun
from dpfair.base import PrivacyParameters, PrivateMechanismMixin, ValidatedData, ValidatedOptions
from dpfair.privacy.accounting import approx_dp_to_zcdp
from dpfair.privacy.leaks import warn_privacy_leak
from dpfair.privacy.noise import NoiseSource

__all__ = ["PrivateFairGreedy", "rank_noise_std"]

_MAX_FLOAT = 1.7976931348623157e308
_TINY = 2.2250738585072014e-308  # smallest positive normal float64

_PROTECTS = (
    "every candidate's context and reward (x_{k,t}, y_{k,t}): the actions of all other rounds are "
    "(epsilon, delta)-jointly differentially private"
)
_NEIGHBOURING = "t-neighbours: replace one candidate's (context, reward) tuple of one round"


def rank_noise_std(pool_size: int, horizon: int, rho_rank: float) -> float:
    """Noise ``sigma_t = sqrt(T / (2 N_t^2 rho_rank))`` of a private rank estimate (the paper's formula).

    Parameters
    ----------
    pool_size : int
        ``N_t >= 1``, the number of past contexts the empirical CDF averages.
    horizon : int
        ``T``, the number of rank releases the budget covers.
    rho_rank : float
        The zCDP budget of all rank releases (``inf``: no noise).

    Returns
    -------
    float
        ``sigma_t`` (0 for ``rho_rank = inf``).
    """
    n = check_int(pool_size, "pool_size", minimum=1)
    T = check_int(horizon, "horizon", minimum=1)
    rho = check_rho(rho_rank, "rho_rank")
    if math.isinf(rho):
        return 0.0
    variance = T / (2.0 * float(n) * float(n) * rho) if n < 2**500 and T < 2**500 else math.inf
    if 0.0 < variance < math.inf:
        return math.sqrt(variance)
    # the same formula factored so that no intermediate over- or underflows
    sigma = math.exp(0.5 * (math.log(T) - math.log(2.0) - math.log(rho)) - math.log(n))
    if not math.isfinite(sigma):
        raise ValueError(
            f"rho_rank={rho!r} is too small for horizon={T}: the rank noise overflows float64; use a larger rho_rank."
        )
    return sigma


_CONTINUAL = ("auto", "sqrt", "honaker", "tree")


def _check_continual(continual: Any) -> str:
    """``continual`` resolved: ``"auto"`` is ``"sqrt"`` (the least noise per release measured: benchmarks/bench_continual.py)."""
    if not isinstance(continual, str) or continual not in _CONTINUAL:
        raise ValueError(
            f"continual must be one of {_CONTINUAL}, got {continual!r}; use 'tree' for the paper's binary tree or "
            "'auto' for the least noise."
        )
    return "sqrt" if continual == "auto" else continual


@dataclass(frozen=True, eq=False)
class _GreedyOptions(ValidatedOptions):
    """The hyper-parameters step 1 validates beside the template's own (``epsilon``, ``delta``, ``budget``,
    ``random_state``), before the sizes are known; the regression's sensitivity from the declared bounds."""

    budget_split: float
    regularization: float
    split_history: bool
    shift_failure_probability: float
    context_bound: float
    reward_bound: float
    sensitivity: float
    continual: str


@dataclass(frozen=True, kw_only=True)
class _PrivateGreedyConfig(_GreedyConfig):
    """The configuration of one private run: :class:`_GreedyOptions` with the template's ``(epsilon, delta)`` and
    their zCDP split between the regression and the ranks (what ``BanditPolicy`` and the rounds read)."""

    epsilon: float
    delta: float
    context_bound: float
    reward_bound: float


@dataclass(frozen=True, eq=False, kw_only=True)
class _Run(ValidatedData):
    """Step 1's data: the checked run (sizes, support, the configuration), as ``BanditPolicy._begin`` reads it."""

    run: _CheckedRun


class PrivateFairGreedy(PrivateMechanismMixin, FairGreedy):
    """Private-Fair-Greedy: Fair-Greedy with private regression and private ranks (joint DP).

    See the module :mod:`dpfair.bandits.gmf.private_fair_greedy` for the mechanism.  ``epsilon=float("inf")`` is
    :class:`FairGreedy` exactly (the same code with the noise off), and raises
    :class:`~dpfair.privacy.PrivacyLeakWarning`.

    Parameters
    ----------
    epsilon : float
        Total privacy parameter ``epsilon > 0`` of the whole run (``inf``: no privacy).
    delta : float
        Total ``delta`` in ``(0, 1)``.
    budget_split : float, default 0.5
        Share of ``(epsilon, delta)`` given to the regression (the paper: half); the ranks get the rest.
    context_bound : float, default 1.0
        Declared bound ``C`` on every candidate's ``||x||_2`` (a context above it raises).
    reward_bound : float, default 1.0
        Declared bound ``B`` on every reward's ``|y|`` (a reward above it raises).
    regularization : float, default 1.0
        Ridge parameter ``lambda > 0`` (added to the shift ``c_t``).
    split_history : bool, default True
        Split the history between regression and ranks, as :class:`FairGreedy`.
    shift_failure_probability : float, default 0.05
        Probability, over the whole horizon, that some shifted Gram release is not positive definite.
    continual : {"auto", "sqrt", "honaker", "tree"}, default "auto"
        How the regression's running sums are released (same ``rho_reg``-zCDP for all): ``"tree"`` the
        paper's binary tree, ``"honaker"`` Honaker's tree estimator, ``"sqrt"`` the square-root
        factorization (``O(T)`` memory of noise vectors), ``"auto"`` the least noise measured: ``"sqrt"``.
    budget : PrivacyBudget, optional
        Charged ``(epsilon, delta)`` once per :meth:`reset` (or :func:`~dpfair.bandits.simulate`), after every
        argument is checked and before the noise source exists (:mod:`dpfair.base`'s release template);
        ``None`` charges the default ledger (:func:`dpfair.privacy.set_default_budget`) when one is set.
    random_state : None, int or numpy.random.Generator, optional
        ``None`` for secure noise; a seed only for reproducible experiments.

    Attributes
    ----------
    rho_regression_ : float
        zCDP budget of the regression's continual release (the tree or the factorization).
    rho_rank_ : float
        zCDP budget of all rank releases.
    continual_ : str
        The factorization the regression uses (``"auto"`` resolved).
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring", "relation", "noise"}`` (the template's shape).
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "delta": "delta", "budget": "budget", "random_state": "random_state",
    }
    _privacy_protects: ClassVar[str] = _PROTECTS
    _privacy_neighbouring: ClassVar[str] = _NEIGHBOURING
    _privacy_label: ClassVar[str | None] = "PrivateFairGreedy (regression + ranks)"

    def __init__(
        self,
        epsilon: float,
        delta: float,
        *,
        budget_split: float = 0.5,
        context_bound: float = 1.0,
        reward_bound: float = 1.0,
        regularization: float = 1.0,
        split_history: bool = True,
        shift_failure_probability: float = 0.05,
        continual: str = "auto",
        budget: Any = None,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.budget_split = budget_split
        self.context_bound = context_bound
        self.reward_bound = reward_bound
        self.regularization = regularization
        self.split_history = split_history
        self.shift_failure_probability = shift_failure_probability
        self.continual = continual
        self.budget = budget
        self.random_state = random_state

    def _validate_params(self) -> _GreedyOptions:
        # every hyper-parameter but the template's own (epsilon, delta, budget, random_state: dpfair.base)
        split = check_open_unit(self.budget_split, "budget_split")
        bound_x = check_positive_finite(self.context_bound, "context_bound")
        bound_y = check_positive_finite(self.reward_bound, "reward_bound")
        # replacing one leaf z z^T by z' z'^T: ||z z^T - z' z'^T||_F <= sqrt(2) (C^2 + B^2)
        sensitivity = math.sqrt(2.0) * (bound_x * bound_x + bound_y * bound_y)  # float products: inf, never raise
        if not sensitivity < _MAX_FLOAT / 2.0**64:  # T <= 2**63 leaves of that size must sum to a finite Gram matrix
            raise ValueError(
                "context_bound and reward_bound are too large: the regression sensitivity sqrt(2) (context_bound^2 + "
                "reward_bound^2) leaves no float64 room for the running sums; rescale the contexts and rewards so "
                "both bounds are near 1."
            )
        if sensitivity < _TINY:
            raise ValueError(
                "context_bound and reward_bound are too small: the regression sensitivity sqrt(2) (context_bound^2 + "
                "reward_bound^2) underflows float64; rescale the contexts and rewards so both bounds are near 1."
            )
        regularization = check_positive_finite(self.regularization, "regularization")
        split_history = check_bool(self.split_history, "split_history")
        failure = check_open_unit(self.shift_failure_probability, "shift_failure_probability")
        if failure / 2.0**63 < _TINY:  # beta = p / T_reg > 0 for every T_reg < 2**63
            raise ValueError(
                f"shift_failure_probability={failure!r} is too small: the per-release failure probability underflows "
                "float64; use a value above 1e-280."
            )
        return _GreedyOptions(budget_split=split, regularization=regularization, split_history=split_history,
                              shift_failure_probability=failure, context_bound=bound_x, reward_bound=bound_y,
                              sensitivity=sensitivity, continual=_check_continual(self.continual))

    def _private_config(self, options: _GreedyOptions, epsilon: float, delta: float) -> _PrivateGreedyConfig:
        """The run's configuration from the validated options and the template's ``(epsilon, delta)``: the zCDP split."""
        if delta == 0:
            raise ValueError("delta must lie in (0, 1): the Gaussian noise gives (epsilon, delta)-DP with delta > 0.")
        split, sensitivity = options.budget_split, options.sensitivity
        # the paper's split of (epsilon, delta), each part converted to zCDP
        try:
            rho = approx_dp_to_zcdp(split * epsilon, split * delta)
            rho_rank = approx_dp_to_zcdp((1.0 - split) * epsilon, (1.0 - split) * delta)
        except ValueError:
            raise ValueError(
                f"epsilon={epsilon!r}, delta={delta!r} and budget_split={split!r} give a part of the budget whose zCDP "
                "parameter underflows float64; use a larger epsilon or delta, or a budget_split nearer 0.5."
            ) from None
        if math.isfinite(rho):
            # the tree's node scale sensitivity * sqrt(n_levels / (2 rho)), n_levels <= 64 for T < 2**63 (privacy
            # core): refuse here, before any charge, what the tree would refuse at its creation
            smallest = sensitivity * math.sqrt(0.5) / math.sqrt(rho)
            largest = sensitivity * math.sqrt(32.0) / math.sqrt(rho)
            if not largest * 64 * 1000 < _MAX_FLOAT / 2:
                raise ValueError(
                    "context_bound, reward_bound and epsilon give a regression noise scale that overflows float64; "
                    "rescale the contexts and rewards so the bounds are near 1, or use a larger epsilon."
                )
            if not smallest > 0:
                raise ValueError(
                    "epsilon is so large (for these context_bound and reward_bound) that the regression noise underflows "
                    "to 0; use epsilon=float('inf') for the exact algorithm."
                )
        return _PrivateGreedyConfig(
            epsilon=epsilon, delta=delta, regularization=options.regularization, split_history=options.split_history,
            shift_failure_probability=options.shift_failure_probability, context_bound=options.context_bound,
            reward_bound=options.reward_bound, sensitivity=sensitivity, continual=options.continual,
            rho_regression=rho, rho_rank=rho_rank,
        )

    # ---------------------------------------------------------------- the release template (dpfair.base)
    # One run is one release: reset (or simulate) validates every argument, charges (epsilon, delta) once
    # through dpfair._estimator.charge_budget (budget=None: the default ledger), and only then creates the
    # noise source that every round draws from.  The statistics arrive round by round, after the charge.
    def _validate_data(
        self,
        params: PrivacyParameters,
        n_groups: int,
        dim: int,
        horizon: int,
        *,
        n_runs: int | None = None,
        support: Any = None,
        support_groups: Any = None,
    ) -> _Run:
        config = self._private_config(params.options, params.epsilon, params.delta)
        return _Run(run=self._check_reset(config, n_groups, dim, horizon, n_runs=n_runs, support=support,
                                          support_groups=support_groups))

    def _plan_release(self, params: PrivacyParameters, data: _Run) -> _CheckedRun:
        return data.run  # checked: the charge's hooks need not check the split again (planned_charge() does)

    def _privacy_cost(self, params: PrivacyParameters) -> tuple[float, float]:
        if params.plan is None:  # planned_charge(): the parameters alone, checked as a release checks them
            self._private_config(params.options, params.epsilon, params.delta)
        return params.epsilon, params.delta

    def _compute_statistics(self, params: PrivacyParameters, data: _Run) -> None:
        return None  # the regression and rank statistics arrive round by round, after the charge

    def _draw_noise(self, params: PrivacyParameters, statistics: None, noise: NoiseSource) -> NoiseSource:
        return noise  # the source the tree mechanism and the rank releases of every round draw from

    def _solve(self, params: PrivacyParameters, noisy: NoiseSource, data: _Run) -> dict[str, Any]:
        return {"run": data.run, "noise": noisy}

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        warn_privacy_leak(  # at the user's line: the caller of reset or simulate
            "epsilon=inf: PrivateFairGreedy runs Fair-Greedy exactly; its actions carry no privacy guarantee. "
            "Use a finite epsilon on real people's data.",
        )

    def _validate(self) -> Any:
        """Refused: :class:`FairGreedy`'s configuration is the exact, non-private one (nothing charged); this
        policy's runs are checked and opened by the release template (:meth:`_dry_run_reset`, :meth:`_open`)."""
        raise RuntimeError("PrivateFairGreedy runs through its release template; FairGreedy's exact configuration "
                           "would play without noise and without a charge.")

    def _dry_run_reset(self, n_groups: int, dim: int, horizon: int, **keywords: Any) -> tuple[_CheckedRun, Any]:
        params, data = self._validate_all(n_groups, dim, horizon, **keywords)  # the template's dry run
        return data.run, self._planned(params)

    def _open(self, n_groups: int, dim: int, horizon: int, **keywords: Any) -> _OpenedRun:
        """Run the release template on the run: validate, charge once, and only then create the noise source."""
        results = self._release(n_groups, dim, horizon, **keywords)
        return _OpenedRun(run=results["run"], noise=results["noise"], privacy_spent=results["privacy_spent_"])

    def _check_environment(self, config: _PrivateGreedyConfig, horizon: int, context_bound: float,
                           reward_bound: float) -> None:
        super()._check_environment(config, horizon, context_bound, reward_bound)
        for key, declared, bound, documented in (
                ("context_bound", config.context_bound, context_bound, "context_norm_bound"),
                ("reward_bound", config.reward_bound, reward_bound, "reward_bound")):
            if declared < bound:
                raise ValueError(
                    f"{key}={declared!r} is below the environment's documented bound env.{documented}={bound!r}; "
                    f"declare {key} >= {bound!r} (a bound every candidate obeys, from the environment's "
                    "documentation, never from its data)."
                )

    def _warn(self, config: _GreedyConfig) -> None:
        pass  # the template warned (epsilon = inf) before the charge

    def _start(self, config: _GreedyConfig) -> None:
        self.rho_regression_ = config.rho_regression
        self.rho_rank_ = config.rho_rank
        self.continual_ = config.continual
        super()._start(config)

    def _state_bytes(self, n_groups: int, dim: int, horizon: int, runs: int, n_support: int) -> list[tuple[int, str]]:
        terms = super()._state_bytes(n_groups, dim, horizon, runs, n_support)
        if _check_continual(self.continual) == "sqrt":
            # the square root's noise vectors z of every release, and one block's convolution (<= as many again)
            n_regression = max(horizon // 2 if self.split_history else horizon, 1)
            n_packed = (dim + 1) * (dim + 2) // 2
            terms.append((3 * 8 * n_regression * runs * n_packed, "lower horizon or n_runs, or use continual='honaker'"))
        return terms

    def rank_noise_std(self, t: int) -> float:
        """Standard deviation ``sigma_t`` of the Gaussian noise on the rank estimates of round ``t``.

        Parameters
        ----------
        t : int
            Round ``1 <= t <= horizon``; ``N_t`` is the number of past rounds in the rank half.

        Returns
        -------
        float
            ``sqrt(T / (2 N_t^2 rho_rank))``; ``inf`` when ``N_t = 0`` (no estimate is released then).
        """
        if not hasattr(self, "t_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                f"This {type(self).__name__} has not been started: call reset(n_groups, dim, horizon) first; "
                "sigma_t depends on the horizon."
            )
        t = check_int(t, "t", minimum=1)
        if t > self.horizon_:
            raise ValueError(f"t must be a round in [1, horizon={self.horizon_}], got {t}.")
        n_past = t - 1
        pool = n_past - n_past // 2 if self._split else n_past
        if pool == 0:
            return math.inf
        return rank_noise_std(pool, self.horizon_, self._config.rho_rank)

    def _check_bounds(self, x: Any, r: Any) -> None:
        import numpy as np

        c = self._config
        if (np.einsum("skd,skd->sk", x, x) > c.context_bound ** 2 * (1 + 1e-12)).any():
            raise ValueError(
                f"a context has norm above the declared context_bound={c.context_bound!r}; declare a bound "
                "that holds for every candidate (it must not be read off the data), or rescale the contexts."
            )
        if (np.abs(r) > c.reward_bound * (1 + 1e-12)).any():  # the same rounding allowance as the contexts
            raise ValueError(
                f"a reward lies outside the declared reward_bound={c.reward_bound!r}; declare a bound that "
                "holds for every reward (it must not be read off the data), or clip the rewards first."
            )

    def _rank_noise_stds(self, t0: int, t1: int) -> Any:
        """``rank_noise_std(t + 1)`` of the rounds ``t0 <= t < t1`` at once (0 in rounds without a rank pool).

        The same float operations as :func:`rank_noise_std`, elementwise; a variance that over- or
        underflows takes the scalar function's factored path.
        """
        import numpy as np

        t = np.arange(t0, t1)
        pool = (t - t // 2 if self._split else t).astype(float)
        sigmas = np.zeros(t.size)
        rho = self._config.rho_rank
        if math.isinf(rho):
            return sigmas
        released = pool > 0
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            # sigma_t = sqrt(T / (2 N_t^2 rho_rank)) (Private relative rank estimation)
            variance = self.horizon_ / (2.0 * pool[released] * pool[released] * rho)
        sigmas[released] = np.sqrt(np.where((variance > 0) & (variance < math.inf), variance, 0.0))
        for i in np.flatnonzero(released & (sigmas == 0)):
            sigmas[i] = self.rank_noise_std(t0 + int(i) + 1)
        return sigmas

    def _can_compile(self) -> bool:
        from dpfair.privacy.noise import SeededNoise

        if type(self) is not PrivateFairGreedy:
            return False
        # the compiled rounds add noise drawn beforehand to the statistics; only the seeded source draws it so.
        # Secure noise is added to the values themselves (OpenDP): those runs keep the numpy rounds.
        exact = _regression_noise_scale(self.tree_) == 0 and math.isinf(self._config.rho_rank)
        return exact or type(self._noise) is SeededNoise
