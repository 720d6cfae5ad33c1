"""Single-agent policies of group meritocratic online selection: OFUL, Fair-Greedy, random.

Every policy is a scikit-learn estimator (``get_params``, ``set_params``, ``clone``, ``repr``) with an
online interface shared by all of them (:class:`BanditPolicy`):

* ``reset(n_groups, dim, horizon, n_runs=None, support=None, support_groups=None)`` validates the
  hyper-parameters, charges a budget (private policies) and allocates the state;
* ``select(contexts)`` returns the chosen group of each run, ``contexts`` of shape ``(K, d)``, or
  ``(n_runs, K, d)`` for ``n_runs`` independent learners advanced together (seeds of a simulation);
* ``update(contexts, actions, rewards)`` gives the observed rewards of the chosen candidates.

Ranks without a pass over the history
-------------------------------------
Fair-Greedy ranks candidate ``k`` by the empirical CDF of ``<x, theta_hat_t>`` over group ``k``'s
past contexts.  ``theta_hat_t`` changes every round, so every past projection changes with it; a
direct implementation recomputes ``N_t`` projections per round (``O(T^2 K d)`` in all).  When the
contexts come from a finite *support* of distinct vectors (every :class:`~dpfair.bandits.GroupEnvironment`:
person records, or a large population sample), the empirical CDF is a count-weighted CDF over the
support: the policy keeps, per run, how many times each support row is in the rank pool
(``+1`` when it arrives, ``-1`` when it leaves for the regression half) and each round projects the
``M`` support rows once (one ``(M, d) x (d, n_runs)`` product), then sums the counts of the rows at or
below each candidate, group by group (``np.add.reduceat``).  The ranks are *exactly* those of the
direct computation (the same indicator sum, grouped by identical vectors) at ``O(M (d + 1))`` per run
and round, independent of ``t``.  Without a support (``support=None``) the policy stores the contexts
and computes the ranks directly, ``O(N_t K d)`` per run and round.

"At or below" is to a tolerance: a pooled ``x'`` counts when ``<x', theta_hat> <= <x_k, theta_hat> +
RANK_RTOL ||theta_hat|| (||x'|| + ||x_k||)`` (``RANK_RTOL = 1e-9``, :mod:`dpfair.bandits._ranks`), in both
pools and in the compiled kernels.  On a discrete support distinct records often project to the same
real number, and the last bits of ``theta_hat`` would otherwise order them differently in each engine.

Compiled rounds
---------------
``select`` and ``update`` are the numpy reference.  :func:`~dpfair.bandits.simulate` (its default
``engine="compiled"``) instead hands a fresh policy the whole pre-sampled stream
(:meth:`~dpfair.bandits.BanditPolicy.play_compiled`):
chunks of rounds run in numba kernels (:mod:`dpfair.bandits.gmf._kernels`) for all runs at once, with
every random number drawn beforehand by the policy's noise source, in the order and shapes of the
numpy rounds, so that a seeded run gives the same actions under both engines.  The support rows are
projected only when ``theta_hat`` has changed (every other round with the history split), directly or,
when the support's columns take few distinct values (census features), through the distinct
combinations of those columns.  Policies the kernels do not reproduce (subclasses, no support, secure
noise on the private statistics, a stream some round of which ``update`` might refuse) run the numpy
rounds under either engine.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpfair._estimator import privacy_spent
from dpfair._validation import (
    check_bool,
    check_nonnegative_finite,
    check_open_unit,
    check_positive_normal,
)
from dpfair.bandits._ranks import (
    RANK_RTOL,
    _chunks,
    _ContextPool,
    _factor_support,
    _SupportPool,
    tie_break_argmax,
)
from dpfair.bandits.gmf.policy_base import BanditPolicy, _PolicyConfig
from dpfair.bandits.ridge import RidgeState, confidence_radius
from dpfair.privacy.budget import suspend_default_budget
from dpfair.privacy.continual import BinaryTreeMechanism, ContinualSumMechanism
from dpfair.privacy.leaks import PrivacyLeakWarning

__all__ = ["OFUL", "FairGreedy", "RandomPolicy"]


def _regression_noise_scale(mechanism: Any) -> float:
    """The noise scale of the regression's running sums: the tree's node scale or the factorization's sigma."""
    if isinstance(mechanism, ContinualSumMechanism):
        return mechanism.noise_scale
    return mechanism.node_scale



@dataclass(frozen=True, kw_only=True)
class _OFULConfig(_PolicyConfig):
    """OFUL's validated hyper-parameters."""

    regularization: float
    noise_std: float
    theta_norm_bound: float
    delta: float
    exploration_scale: float


@dataclass(frozen=True, kw_only=True)
class _GreedyConfig(_PolicyConfig):
    """Fair-Greedy's validated hyper-parameters: its exact regression (``rho_regression = inf``) and ranks.

    :class:`~dpfair.bandits.PrivateFairGreedy` subclasses it with the privacy parameters and the zCDP split.
    """

    regularization: float
    split_history: bool
    rho_rank: float = math.inf
    sensitivity: float = 1.0
    shift_failure_probability: float = 0.5
    continual: str = "tree"


class RandomPolicy(BanditPolicy):
    """Choose a group uniformly at random every round: the floor of every comparison.

    It reads no context and no reward, so it releases nothing about anyone
    (``privacy_spent_["epsilon"] == 0``).

    Parameters
    ----------
    random_state : None, int or numpy.random.Generator, optional
        ``None`` for OS randomness, a seed for reproducible runs.
    """

    def __init__(self, *, random_state: Any = None) -> None:
        self.random_state = random_state

    def _validate(self) -> _PolicyConfig:
        return _PolicyConfig()

    def _warn(self, config: _PolicyConfig) -> None:
        pass

    def _policy_privacy_spent(self, config: _PolicyConfig) -> dict[str, Any]:
        return privacy_spent(0.0, 0.0, protects="everything: the actions do not depend on any data",
                             neighbouring="any change")

    def _start(self, config: _PolicyConfig) -> None:
        self._untouched = True

    def _select(self, x: np.ndarray, ids: np.ndarray | None) -> np.ndarray:
        return self._tie_break(np.zeros((self.n_runs_, self.n_groups_)))

    def _observe(self, x: np.ndarray, a: np.ndarray, r: np.ndarray, ids: np.ndarray | None) -> None:
        pass

    def _can_compile(self) -> bool:
        return type(self) is RandomPolicy

    def _compiled_rounds(self, rows: np.ndarray, rewards: np.ndarray, actions: np.ndarray) -> None:
        S, K, T = self.n_runs_, self.n_groups_, self.horizon_
        for t0, t1 in _chunks(T, S * K):
            # one (t1 - t0, S, K) draw is the same stream as one (S, K) draw per round
            uniforms = self._noise.uniform((t1 - t0, S, K)).reshape(-1, K)
            actions[:, t0:t1] = tie_break_argmax(np.zeros_like(uniforms), uniforms).reshape(t1 - t0, S).T


class OFUL(BanditPolicy):
    """Optimism in the face of uncertainty for linear bandits (Abbasi-Yadkori, Pal & Szepesvari 2011).

    Chooses ``argmax_k <x_k, theta_hat> + scale * sqrt(beta_t) * ||x_k||_{V^{-1}}`` with the ridge
    estimate on every observed (context, reward) and the textbook radius
    ``sqrt(beta_t) = R sqrt(2 ln(1/delta) + ln(det V_t / lambda^d)) + sqrt(lambda) S`` (their Theorem 2,
    :func:`~dpfair.bandits.confidence_radius`).  It maximizes reward and ignores the groups.

    Parameters
    ----------
    regularization : float, default 1.0
        Ridge parameter ``lambda > 0``.
    noise_std : float, default 0.1
        Sub-Gaussian level ``R`` of the reward noise.
    theta_norm_bound : float, default 1.0
        Bound ``S`` on ``||theta*||``.
    delta : float, default 0.05
        Confidence level of the ellipsoid, in ``(0, 1)``.
    exploration_scale : float, default 1.0
        Multiplier of the radius (``0`` is the greedy ridge policy).
    random_state : None, int or numpy.random.Generator, optional
        Randomness of the tie-breaking (``None``: OS randomness).
    """

    def __init__(
        self,
        *,
        regularization: float = 1.0,
        noise_std: float = 0.1,
        theta_norm_bound: float = 1.0,
        delta: float = 0.05,
        exploration_scale: float = 1.0,
        random_state: Any = None,
    ) -> None:
        self.regularization = regularization
        self.noise_std = noise_std
        self.theta_norm_bound = theta_norm_bound
        self.delta = delta
        self.exploration_scale = exploration_scale
        self.random_state = random_state

    def _validate(self) -> _OFULConfig:
        return _OFULConfig(
            regularization=check_positive_normal(self.regularization, "regularization"),
            noise_std=check_nonnegative_finite(self.noise_std, "noise_std"),
            theta_norm_bound=check_nonnegative_finite(self.theta_norm_bound, "theta_norm_bound"),
            delta=check_open_unit(self.delta, "delta"),
            exploration_scale=check_nonnegative_finite(self.exploration_scale, "exploration_scale"),
        )

    def _check_environment(self, config: _OFULConfig, horizon: int, context_bound: float, reward_bound: float) -> None:
        super()._check_environment(config, horizon, context_bound, reward_bound)
        lam = config.regularization
        # the largest radius over the horizon: ln det V_T / lambda^d <= d ln(1 + T C^2 / (lambda d)), d <= 10**6
        log_ratio = 1e6 * math.log1p(min((horizon + 1) * context_bound**2 / lam, 1e300))
        radius = config.noise_std * math.sqrt(2.0 * math.log(1.0 / config.delta) + log_ratio)
        radius += math.sqrt(lam) * config.theta_norm_bound
        # the exploration bonus scale * radius * ||x||_{V^{-1}} with ||x||_{V^{-1}} <= C / sqrt(lambda)
        if not config.exploration_scale * radius * context_bound / math.sqrt(lam) < 1e300:
            raise ValueError(
                "exploration_scale, noise_std and theta_norm_bound (with this regularization) give an exploration bonus "
                "that overflows float64; lower them or raise regularization."
            )

    def _state_bytes(self, n_groups: int, dim: int, horizon: int, runs: int, n_support: int) -> list[tuple[int, str]]:
        # V, V^{-1} and b per run, and one round's (n_runs, K, d) products
        return [(3 * 8 * runs * dim * dim, "lower dim or n_runs"), (3 * 8 * runs * n_groups * dim, "lower n_runs or n_groups")]

    def _start(self, config: _OFULConfig) -> None:
        self._config = config
        self.ridge_ = RidgeState(self.dim_, batch_shape=(self.n_runs_,), regularization=config.regularization)
        self._untouched = True

    def _select(self, x: np.ndarray, ids: np.ndarray | None) -> np.ndarray:
        c = self._config
        radius = confidence_radius(
            self.ridge_.log_det(), dim=self.dim_, regularization=c.regularization, noise_std=c.noise_std,
            theta_norm_bound=c.theta_norm_bound, delta=c.delta,
        )
        ucb = np.einsum("skd,sd->sk", x, self.ridge_.theta())
        ucb += c.exploration_scale * radius[:, None] * self.ridge_.norms(x)
        return self._tie_break(ucb)

    def _observe(self, x: np.ndarray, a: np.ndarray, r: np.ndarray, ids: np.ndarray | None) -> None:
        self.ridge_.update(x[self._runs, a], r)

    def _can_compile(self) -> bool:
        return type(self) is OFUL

    def _compiled_rounds(self, rows: np.ndarray, rewards: np.ndarray, actions: np.ndarray) -> None:
        from dpfair.bandits.gmf import _kernels as kernels  # numba is imported at the first compiled run

        c, ridge = self._config, self.ridge_
        S, K, T, lam = self.n_runs_, self.n_groups_, self.horizon_, c.regularization
        # the terms of confidence_radius (Abbasi-Yadkori et al. 2011, Thm 2), as it computes them
        log_confidence = 2.0 * math.log(1.0 / c.delta)
        dim_log_regularization = self.dim_ * math.log(lam)
        radius_offset = math.sqrt(lam) * c.theta_norm_bound
        gram, gram_inverse = np.array(ridge.gram, dtype=float), np.array(ridge.gram_inverse, dtype=float)
        target, n_observations = np.array(ridge.target, dtype=float), np.array(ridge.n_observations, dtype=np.int64)
        support = self._support.support
        with kernels.parallel_runs(S) as call:
            for t0, t1 in _chunks(T, S * K):
                uniforms = self._noise.uniform((t1 - t0, S, K))  # the tie-breaking draws of the rounds, in order
                call(
                    kernels.oful_rounds, t0, t1, rows, support, rewards, uniforms, gram, gram_inverse, target,
                    n_observations, log_confidence, dim_log_regularization, c.noise_std, radius_offset,
                    c.exploration_scale, actions,
                )
        ridge.gram, ridge.gram_inverse, ridge.target, ridge.n_observations = gram, gram_inverse, target, n_observations


class FairGreedy(BanditPolicy):
    """Fair-Greedy (Grazzi, Akhavan, Falk, Cella & Pontil 2022): pick the highest estimated relative rank.

    Each round, every candidate ``x_k`` is ranked within its own group by the empirical CDF of
    ``<x, theta_hat>`` over group ``k``'s past contexts, ``F_hat_k(<x_k, theta_hat>)``, with ``theta_hat``
    the ridge estimate; the highest rank is chosen, ties uniformly at random (and uniformly at random
    while there is no past context).

    History split (``split_history=True``, the original's default): of the ``n = t - 1`` past rounds,
    the first ``floor(n / 2)`` feed the regression (chosen context and reward) and the last
    ``ceil(n / 2)`` the empirical CDFs (every group's context), so that ``theta_hat`` and the CDF
    estimates use independent data; a round moves from the CDF half to the regression half as the
    history grows.  ``split_history=False`` uses every past round for both.

    The regression statistics are the running sums of ``[x; y][x; y]^T``, kept by the same
    :class:`~dpfair.privacy.BinaryTreeMechanism` code as ``PrivateFairGreedy(continual="tree")``, here
    with the noise off: ``FairGreedy`` *is* ``PrivateFairGreedy(epsilon=inf)`` (whatever its
    ``continual``), action for action.

    Parameters
    ----------
    regularization : float, default 1.0
        Ridge parameter ``lambda > 0``.
    split_history : bool, default True
        Split the history between the regression and the CDF estimates (see above).
    random_state : None, int or numpy.random.Generator, optional
        Randomness of the tie-breaking (``None``: OS randomness).
    """

    def __init__(self, *, regularization: float = 1.0, split_history: bool = True, random_state: Any = None) -> None:
        self.regularization = regularization
        self.split_history = split_history
        self.random_state = random_state

    def _validate(self) -> _GreedyConfig:
        return _GreedyConfig(
            regularization=check_positive_normal(self.regularization, "regularization"),
            split_history=check_bool(self.split_history, "split_history"),
        )

    def _state_bytes(self, n_groups: int, dim: int, horizon: int, runs: int, n_support: int) -> list[tuple[int, str]]:
        levels = max(horizon, 1).bit_length() + 1
        terms = [
            (8 * runs * (dim + 1) * (dim + 1) * (2 * levels + 2), "lower dim or n_runs"),  # tree nodes, release
            (3 * 8 * runs * dim * dim, "lower dim or n_runs"),  # ridge state
            (8 * horizon * runs * (dim + 1), "lower horizon or n_runs"),  # chosen contexts and rewards
        ]
        if n_support:
            terms += [(8 * horizon * runs * n_groups, "lower horizon or n_runs"),  # context ids
                      (21 * n_support * runs, "lower n_runs or the support size")]  # the support pool
        else:
            terms.append((8 * horizon * runs * n_groups * dim, "lower horizon or n_runs"))  # the context pool
        return terms

    # ---------------------------------------------------------------- shared Fair-Greedy machinery
    def _start(self, config: _GreedyConfig) -> None:
        T, S, K, d = self.horizon_, self.n_runs_, self.n_groups_, self.dim_
        self._config = config
        self._untouched = True  # no round has drawn yet (play_compiled)
        self._split = config.split_history
        # rounds that can enter the regression: floor(T / 2) with the split, T without
        n_regression = max(T // 2 if self._split else T, 1)
        # the tree is a part of the policy's one release: the policy charged it (its budget, or the default
        # ledger) and warned (epsilon = inf, seeded noise); the tree must neither charge nor warn again
        continual = config.continual
        with warnings.catch_warnings(), suspend_default_budget():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            if continual == "tree" or math.isinf(config.rho_regression):
                # the paper's binary tree (and the exact sums of Fair-Greedy, whatever the factorization)
                self.tree_: Any = BinaryTreeMechanism(
                    n_regression, (S, d + 1, d + 1), sensitivity=config.sensitivity, rho=config.rho_regression,
                    symmetric=True, noise=self._noise, label="regression",
                )
            else:
                # the same running sums through another factorization A = B C (Gaussian matrix mechanism)
                self.tree_ = ContinualSumMechanism(
                    n_regression, (S, d + 1, d + 1), sensitivity=config.sensitivity, rho=config.rho_regression,
                    factorization=continual, symmetric=True, noise=self._noise, label="regression",
                )
        # the shift holds for all releases together with probability >= 1 - shift_failure_probability
        self._beta_release = config.shift_failure_probability / n_regression
        self.ridge_ = RidgeState(d, batch_shape=(S,), regularization=config.regularization)
        self.theta_ = np.zeros((S, d))
        self.n_regression_ = 0
        self.n_shift_failures_ = 0
        self._chosen = np.zeros((T, S, d))
        self._rewards = np.zeros((T, S))
        if self._support is not None:
            self._pool: Any = _SupportPool(self._support.support, self._support.offsets, S)
            self._ids = np.zeros((T, S, K), dtype=np.int64)
        else:
            self._pool = _ContextPool(T, S, K, d)

    def rank_noise_std(self, t: int) -> float:
        """Standard deviation ``sigma_t`` of the noise on the rank estimates of round ``t`` (0 here).

        Parameters
        ----------
        t : int
            Round, ``1 <= t <= horizon``.

        Returns
        -------
        float
            0: Fair-Greedy's ranks are exact.
        """
        return 0.0

    def _pool_size(self) -> int:
        return self.t_ - self.n_regression_ if self._split else self.t_

    def _select(self, x: np.ndarray, ids: np.ndarray | None) -> np.ndarray:
        n_pool = self._pool_size()
        if n_pool == 0:
            ranks = np.zeros((self.n_runs_, self.n_groups_))
        else:
            if ids is not None:
                counts = self._pool.rank_counts(self.theta_, ids)
            else:
                counts = self._pool.rank_counts(self.theta_, x)
            # F_hat_k(<x_k, theta_hat>): share of group k's pooled contexts at or below the candidate
            ranks = counts / n_pool
            sigma = self.rank_noise_std(self.t_ + 1)
            if sigma > 0:
                # Private relative rank estimation: Gaussian noise sigma_t = sqrt(T / (2 N_t^2 rho_rank))
                ranks = self._noise.gaussian(ranks, sigma)
        return self._tie_break(ranks)

    def _check_bounds(self, x: np.ndarray, r: np.ndarray) -> None:
        """Private subclass: refuse data outside the declared bounds."""

    def _observe(self, x: np.ndarray, a: np.ndarray, r: np.ndarray, ids: np.ndarray | None) -> None:
        self._check_bounds(x, r)
        t = self.t_
        self._chosen[t] = x[self._runs, a]
        self._rewards[t] = r
        if ids is not None:
            self._ids[t] = ids
            self._pool.add(ids)
        else:
            self._pool.add(x)
        done = t + 1
        target = done // 2 if self._split else done
        moved = False
        while self.n_regression_ < target:
            s = self.n_regression_
            if self._split:  # the round leaves the CDF half for the regression half
                if ids is not None:
                    self._pool.add(self._ids[s], -1.0)
                else:
                    self._pool.remove_oldest()
            z = np.concatenate([self._chosen[s], self._rewards[s][:, None]], axis=1)  # [x; y]
            # Continually private regression: the tree's i-th leaf is [x; y][x; y]^T
            self.tree_.update(z[:, :, None] * z[:, None, :])
            self.n_regression_ += 1
            moved = True
        if moved:
            self._refresh_theta()

    def _refresh_theta(self) -> None:
        d, lam = self.dim_, self._config.regularization
        shift = 0.0
        if _regression_noise_scale(self.tree_) > 0:
            # noisy Gram + c I >= exact Gram (PSD order) w.p. >= 1 - beta_release (privacy core's bound)
            shift = self.tree_.noise_operator_norm_bound(self._beta_release)
        released = self.tree_.release(shift=lam + shift)
        gram, target = released[:, :d, :d], released[:, :d, d]
        try:
            self.ridge_.set_statistics(gram, target)
        except ValueError:
            # the shift failed (probability <= shift_failure_probability over the horizon): keep the last
            # estimate of the runs whose release is not positive definite (post-processing, no privacy cost)
            ok = np.array([np.all(np.linalg.eigvalsh(0.5 * (g + g.T)) > 0) for g in gram])
            self.n_shift_failures_ += int((~ok).sum())
            gram = np.where(ok[:, None, None], gram, self.ridge_.gram)
            target = np.where(ok[:, None], target, self.ridge_.target)
            self.ridge_.set_statistics(gram, target)
        self.theta_ = self.ridge_.theta()

    # ---------------------------------------------------------------- compiled rounds (simulate)
    def _can_compile(self) -> bool:
        return type(self) is FairGreedy

    def _compiled_rounds(self, rows: np.ndarray, rewards: np.ndarray, actions: np.ndarray) -> None:
        from dpfair.bandits.gmf import _kernels as kernels  # numba is imported at the first compiled run

        T, S, d = self.horizon_, self.n_runs_, self.dim_
        tree, split, lam = self.tree_, self._split, self._config.regularization
        support, offsets = self._support.support, self._support.offsets
        pack_row, pack_col = np.triu_indices(d + 1)  # the tree's symmetric nodes, upper triangles packed
        # lambda + c_t of the release after n regression rows, c_t as _refresh_theta gets it (depends on popcount(n))
        shifts = np.full(tree.horizon + 1, lam + 0.0)
        factorized = isinstance(tree, ContinualSumMechanism)  # a factorization other than the tree (noisy)
        tree_noisy = _regression_noise_scale(tree) > 0
        if factorized:  # c_t follows each release's own noise std, sigma ||B_t||
            for n in range(1, tree.horizon + 1):
                shifts[n] = lam + tree.noise_operator_norm_bound(self._beta_release, t=n)
        elif tree_noisy:
            by_popcount: dict[int, float] = {}
            for n in range(1, tree.horizon + 1):
                if n.bit_count() not in by_popcount:
                    by_popcount[n.bit_count()] = lam + tree.noise_operator_norm_bound(self._beta_release, t=n)
                shifts[n] = by_popcount[n.bit_count()]
        # the factorization's release noise, from a fresh copy of the mechanism's own stream (same draws)
        self._release_stream = tree.factorization.stream((S, pack_row.size)) if factorized else None
        rank_noisy = math.isfinite(self._config.rho_rank)
        counts = np.zeros((S, support.shape[0]), dtype=np.int32)
        proj, fresh = np.zeros((S, support.shape[0])), np.zeros(S, dtype=np.bool_)
        theta = np.array(self.theta_, dtype=float)
        gram, target = np.array(self.ridge_.gram, dtype=float), np.array(self.ridge_.target, dtype=float)
        exact, noisy = np.zeros((2, S, 1 if factorized else tree.n_levels, pack_row.size))
        failures = np.zeros(S, dtype=np.int64)
        support_t = np.ascontiguousarray(support.T)
        factored = _factor_support(support)
        with kernels.parallel_runs(S) as call:
            for t0, t1 in _chunks(T, S * (2 * self.n_groups_ + pack_row.size)):
                uniforms, rank_noise, tree_noise = self._compiled_noise(t0, t1, rank_noisy, tree_noisy, pack_row.size)
                call(
                    kernels.fair_greedy_rounds, t0, t1, split, rows, support, support_t, offsets, self._pool.norms, RANK_RTOL,
                    rewards, uniforms,
                    rank_noise, tree_noise, factorized, shifts, *factored, pack_row, pack_col, counts, proj, fresh, theta, gram,
                    target, exact, noisy, failures, actions,
                )
        # the learned state, as the numpy rounds leave it
        self._release_stream = None
        self.n_regression_ = T // 2 if split else T
        self.n_shift_failures_ = int(failures.sum())
        self.ridge_.set_statistics(gram, target)
        self.theta_ = self.ridge_.theta()
        self._pool.counts[...] = counts.T
        self._pool._theta = None

    def _rank_noise_stds(self, t0: int, t1: int) -> np.ndarray:
        """``rank_noise_std(t + 1)`` of the rounds ``t0 <= t < t1`` that release ranks (0 in the others)."""
        pools = [t - t // 2 if self._split else t for t in range(t0, t1)]
        return np.array([self.rank_noise_std(t + 1) if pool else 0.0 for t, pool in zip(range(t0, t1), pools, strict=True)])

    def _compiled_noise(
        self, t0: int, t1: int, rank_noisy: bool, tree_noisy: bool, n_packed: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The random numbers of rounds ``t0 <= t < t1``, drawn as the numpy rounds draw them, in their order.

        Returns the tie-breaking uniforms ``(n, S, K)``, the rank noise ``(n, S, K)`` (zero in rounds
        without a rank release) and the noise of the tree node each round completes ``(n, S, P)``; the
        last two are empty when that part is exact.  With a factorization other than the tree
        (:class:`~dpfair.privacy.ContinualSumMechanism`) the third holds each round's release noise
        ``(B z)_t`` instead: the noise vectors ``z`` drawn when ``ContinualSumMechanism.update`` draws them
        (``n_draws`` at a block's first step) and convolved by the same stream code.
        """
        S, K, n = self.n_runs_, self.n_groups_, t1 - t0
        empty_ranks, empty_tree = np.zeros((0, S, K)), np.zeros((0, S, n_packed))
        if not (rank_noisy or tree_noisy):
            # uniforms only: one (n, S, K) draw is the same stream as one (S, K) draw per round
            return self._noise.uniform((n, S, K)), empty_ranks, empty_tree
        rng = self._noise.rng  # SeededNoise (PrivateFairGreedy._can_compile): what gaussian() and the tree draw from
        uniforms = np.empty((n, S, K))
        rank_noise = np.zeros((n, S, K)) if rank_noisy else empty_ranks
        tree_noise = np.zeros((n, S, n_packed)) if tree_noisy else empty_tree
        sigmas = self._rank_noise_stds(t0, t1) if rank_noisy else np.zeros(n)
        for i in range(n):
            t = t0 + i
            n_regression = t // 2 if self._split else t
            if sigmas[i] > 0:  # select: ranks + N(0, sigma_t^2) (SeededNoise.gaussian)
                rank_noise[i] = rng.normal(0.0, sigmas[i], size=(S, K))
            rng.random(out=uniforms[i])  # select: the tie-break (SeededNoise.uniform)
            if tree_noisy and n_regression < ((t + 1) // 2 if self._split else t + 1):
                if self._release_stream is not None:
                    # update: ContinualSumMechanism._draw of leaf n_regression + 1, then its stream's release noise
                    k = self.tree_.factorization.n_draws(n_regression + 1)
                    z = rng.normal(0.0, self.tree_.noise_scale, size=(k, S, n_packed)) if k else empty_tree
                    tree_noise[i] = self._release_stream.step(z)
                else:
                    # update: the node completed by the new leaf (BinaryTreeMechanism._draw on its upper triangle)
                    tree_noise[i] = rng.normal(0.0, self.tree_.node_scale, size=(S, n_packed))
        return uniforms, rank_noise, tree_noise
