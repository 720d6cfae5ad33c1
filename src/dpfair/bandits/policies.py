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
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from dpfair._estimator import privacy_spent
from dpfair._validation import check_bool, check_int, check_nonnegative_finite, check_open_unit, check_positive_finite
from dpfair.bandits.ridge import RidgeState, confidence_radius
from dpfair.privacy.continual import BinaryTreeMechanism
from dpfair.privacy.leaks import PrivacyLeakWarning, warn_privacy_leak
from dpfair.privacy.noise import get_noise_source

__all__ = ["OFUL", "BanditPolicy", "FairGreedy", "RandomPolicy"]

_NON_PRIVATE = "nothing: the policy's actions are an exact function of every candidate's context and reward"


def tie_break_argmax(scores: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Index of the largest score of each row, ties broken by the uniforms (uniformly at random).

    Parameters
    ----------
    scores : numpy.ndarray of shape (n_runs, K)
        Scores.
    uniforms : numpy.ndarray of shape (n_runs, K)
        Independent U[0, 1) variates.

    Returns
    -------
    numpy.ndarray of int64, shape (n_runs,)
        The chosen index per row.
    """
    best = scores == scores.max(axis=1, keepdims=True)
    return np.argmax(np.where(best, uniforms, -1.0), axis=1)


class _SupportPool:
    """Rank pool over a finite support: per-run counts of each support row (module docstring)."""

    def __init__(self, support: np.ndarray, offsets: np.ndarray, n_runs: int) -> None:
        self.support = support
        self.offsets = offsets
        self.sizes = np.diff(offsets)
        # counts are small integers: exact in float32 (and their sums, below 2**24)
        self.counts = np.zeros((support.shape[0], n_runs), dtype=np.float32)
        self._runs = np.arange(n_runs)[:, None]
        self._proj = np.empty((support.shape[0], n_runs))
        self._below = np.empty((support.shape[0], n_runs), dtype=bool)
        self._weighted = np.empty((support.shape[0], n_runs), dtype=np.float32)
        self._theta: np.ndarray | None = None

    def add(self, ids: np.ndarray, sign: float = 1.0) -> None:
        np.add.at(self.counts, (ids, np.broadcast_to(self._runs, ids.shape)), sign)

    def rank_counts(self, theta: np.ndarray, ids: np.ndarray) -> np.ndarray:
        if self._theta is None or not np.array_equal(theta, self._theta):
            # every support row under every run's theta_hat, (M, n_runs); reused while theta_hat is unchanged
            np.matmul(self.support, theta.T, out=self._proj)
            self._theta = theta.copy()
        q = self._proj[ids, self._runs]  # (n_runs, K): the candidates' own projections (same numbers)
        # 1{<x', theta_hat> <= <x_k, theta_hat>} for every support row x' of group k
        np.less_equal(self._proj, np.repeat(q.T, self.sizes, axis=0), out=self._below)
        np.multiply(self.counts, self._below, out=self._weighted)
        # sum the pool counts of the rows at or below the candidate, group by group
        return np.add.reduceat(self._weighted, self.offsets[:-1], axis=0).T.astype(float)


class _ContextPool:
    """Rank pool over stored contexts: the direct computation, ``O(N_t K d)`` per run and round."""

    def __init__(self, horizon: int, n_runs: int, n_groups: int, dim: int) -> None:
        self.buffer = np.zeros((horizon, n_runs, n_groups, dim))
        self.start = 0
        self.end = 0

    def add(self, contexts: np.ndarray) -> None:
        self.buffer[self.end] = contexts
        self.end += 1

    def remove_oldest(self) -> None:
        self.start += 1

    def rank_counts(self, theta: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        window = self.buffer[self.start : self.end]
        both = np.concatenate([window, contexts[None]], axis=0)
        proj = np.einsum("nskd,sd->nsk", both, theta)
        return (proj[:-1] <= proj[-1][None]).sum(axis=0).astype(float)


class BanditPolicy(BaseEstimator):
    """Base class of the group meritocratic selection policies (the online interface).

    Subclasses implement ``_validate``, ``_start``, ``_select`` and ``_observe``.
    """

    def _validate(self) -> dict[str, Any]:  # pragma: no cover - overridden
        return {}

    def _charge(self, config: dict[str, Any]) -> None:
        """Charge the budget (private policies), after validation and before any noise."""

    def _privacy_spent(self, config: dict[str, Any]) -> dict[str, Any]:
        return privacy_spent(math.inf, 0.0, protects=_NON_PRIVATE, neighbouring="none")

    def _warn(self, config: dict[str, Any]) -> None:
        warn_privacy_leak(
            f"{type(self).__name__} is not differentially private: its actions are an exact function of the "
            "candidates' contexts and rewards. Use PrivateFairGreedy with a finite epsilon on real people's data.",
            stacklevel=4,
        )

    def reset(
        self,
        n_groups: int,
        dim: int,
        horizon: int,
        *,
        n_runs: int | None = None,
        support: Any = None,
        support_groups: Any = None,
    ) -> BanditPolicy:
        """Validate the hyper-parameters, charge the budget and start a new run of ``horizon`` rounds.

        Parameters
        ----------
        n_groups : int
            Number of groups ``K >= 2`` (one candidate each per round).
        dim : int
            Context dimension ``d >= 1``.
        horizon : int
            Number of rounds ``T >= 1`` (private policies calibrate their noise to it).
        n_runs : int, optional
            Number of independent learners advanced together (batch axis of ``contexts``); ``None``
            for a single learner with ``contexts`` of shape ``(K, d)``.
        support : array-like of shape (M, d), optional
            Every context that can occur (distinct rows), for the support-count rank computation;
            ``select`` and ``update`` then need ``context_ids``.
        support_groups : array-like of int of shape (M,), optional
            Group of each support row (required with ``support``).

        Returns
        -------
        BanditPolicy
            ``self``.
        """
        n_groups = check_int(n_groups, "n_groups", minimum=2)
        dim = check_int(dim, "dim", minimum=1)
        horizon = check_int(horizon, "horizon", minimum=1)
        runs = 1 if n_runs is None else check_int(n_runs, "n_runs", minimum=1)
        support_info = self._check_support(support, support_groups, n_groups, dim)
        config = self._validate()
        noise = get_noise_source(self.random_state)
        self._charge(config)
        self._warn(config)
        self.n_groups_, self.dim_, self.horizon_, self.n_runs_ = n_groups, dim, horizon, runs
        self._single = n_runs is None
        self._noise = noise
        self._support = support_info
        self._runs = np.arange(runs)
        self.t_ = 0
        self._start(config)
        self.privacy_spent_ = self._privacy_spent(config)
        return self

    @staticmethod
    def _check_support(support: Any, support_groups: Any, n_groups: int, dim: int) -> Any:
        if support is None and support_groups is None:
            return None
        if support is None or support_groups is None:
            raise ValueError("give support and support_groups together (or neither).")
        sup = np.asarray(support, dtype=float)
        grp = np.asarray(support_groups)
        if sup.ndim != 2 or sup.shape[1] != dim or sup.shape[0] == 0:
            raise ValueError(f"support must have shape (M, dim={dim}), got {sup.shape}.")
        if not np.isfinite(sup).all():
            raise ValueError("support holds NaN or infinite values; contexts must be finite.")
        if grp.shape != (sup.shape[0],) or grp.dtype.kind not in "iu" or grp.min() < 0 or grp.max() >= n_groups:
            raise ValueError(f"support_groups must hold one group in [0, {n_groups}) per support row.")
        order = np.argsort(grp, kind="stable")
        counts = np.bincount(grp, minlength=n_groups)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        if (counts == 0).any():
            raise ValueError("support_groups must give every group at least one support row.")
        position = np.empty_like(order)
        position[order] = np.arange(order.size)  # caller's row -> sorted row
        return {"support": np.ascontiguousarray(sup[order]), "offsets": offsets, "position": position,
                "groups": grp, "raw": sup}

    # ------------------------------------------------------------------ online interface
    def _check_round(self, contexts: Any, context_ids: Any) -> tuple[np.ndarray, np.ndarray | None]:
        if not hasattr(self, "t_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} has not been started: call reset(n_groups, dim, horizon).")
        x = np.asarray(contexts, dtype=float)
        shape = (self.n_groups_, self.dim_) if self._single else (self.n_runs_, self.n_groups_, self.dim_)
        if x.shape != shape:
            raise ValueError(
                f"contexts must have shape {shape} (one candidate per group, n_groups={self.n_groups_}), got {x.shape}."
            )
        if not np.isfinite(x).all():
            raise ValueError("contexts hold NaN or infinite values; contexts must be finite.")
        x = x.reshape(self.n_runs_, self.n_groups_, self.dim_)
        ids = None
        if self._support is not None:
            if context_ids is None:
                raise ValueError("context_ids is required: reset() was given a support.")
            raw = np.asarray(context_ids)
            if raw.shape != shape[:-1] or raw.dtype.kind not in "iu":
                raise ValueError(f"context_ids must be integers of shape {shape[:-1]}, got {raw.shape}.")
            raw = raw.reshape(self.n_runs_, self.n_groups_)
            n_rows = self._support["groups"].size
            if raw.min() < 0 or raw.max() >= n_rows:
                raise ValueError(f"context_ids must index support rows in [0, {n_rows}).")
            if (self._support["groups"][raw] != np.arange(self.n_groups_)).any():
                raise ValueError("context_ids[..., k] must index a support row of group k.")
            ids = self._support["position"][raw]
        return x, ids

    def select(self, contexts: Any, *, context_ids: Any = None) -> Any:
        """Choose one candidate (group) per run.

        Parameters
        ----------
        contexts : array-like of shape (K, d), or (n_runs, K, d)
            The candidates of this round, candidate ``k`` from group ``k``.
        context_ids : array-like of int of shape (K,) or (n_runs, K), optional
            Rows of the ``support`` the candidates are (required when ``reset`` had a support).

        Returns
        -------
        int or numpy.ndarray of int
            The chosen group (an ``(n_runs,)`` array with ``n_runs``).
        """
        x, ids = self._check_round(contexts, context_ids)
        if self.t_ >= self.horizon_:
            raise ValueError(f"the horizon T={self.horizon_} is used up; call reset() to start again.")
        actions = self._select(x, ids)
        return int(actions[0]) if self._single else actions

    def update(self, contexts: Any, actions: Any, rewards: Any, *, context_ids: Any = None) -> BanditPolicy:
        """Observe the rewards of the chosen candidates and end the round.

        Parameters
        ----------
        contexts : array-like of shape (K, d), or (n_runs, K, d)
            The candidates of this round (as given to :meth:`select`).
        actions : int or array-like of int of shape (n_runs,)
            The chosen groups.
        rewards : float or array-like of shape (n_runs,)
            Their observed rewards.
        context_ids : array-like of int, optional
            As in :meth:`select`.

        Returns
        -------
        BanditPolicy
            ``self``.
        """
        x, ids = self._check_round(contexts, context_ids)
        if self.t_ >= self.horizon_:
            raise ValueError(f"the horizon T={self.horizon_} is used up; call reset() to start again.")
        a = np.asarray(actions)
        r = np.asarray(rewards, dtype=float)
        shape = () if self._single else (self.n_runs_,)
        if a.shape != shape or a.dtype.kind not in "iu" or (a < 0).any() or (a >= self.n_groups_).any():
            raise ValueError(f"actions must be integer group indices in [0, {self.n_groups_}) of shape {shape}.")
        if r.shape != shape:
            raise ValueError(f"rewards must have shape {shape}, got {r.shape}.")
        if not np.isfinite(r).all():
            raise ValueError("rewards hold NaN or infinite values; rewards must be finite.")
        self._observe(x, a.reshape(self.n_runs_).astype(np.int64), r.reshape(self.n_runs_), ids)
        self.t_ += 1
        return self

    def _tie_break(self, scores: np.ndarray) -> np.ndarray:
        return tie_break_argmax(scores, self._noise.uniform(scores.shape))

    def _start(self, config: dict[str, Any]) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _select(self, x: np.ndarray, ids: np.ndarray | None) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def _observe(self, x: np.ndarray, a: np.ndarray, r: np.ndarray, ids: np.ndarray | None) -> None:  # pragma: no cover
        raise NotImplementedError


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

    def _validate(self) -> dict[str, Any]:
        return {}

    def _warn(self, config: dict[str, Any]) -> None:
        pass

    def _privacy_spent(self, config: dict[str, Any]) -> dict[str, Any]:
        return privacy_spent(0.0, 0.0, protects="everything: the actions do not depend on any data",
                             neighbouring="any change")

    def _start(self, config: dict[str, Any]) -> None:
        pass

    def _select(self, x: np.ndarray, ids: np.ndarray | None) -> np.ndarray:
        return self._tie_break(np.zeros((self.n_runs_, self.n_groups_)))

    def _observe(self, x: np.ndarray, a: np.ndarray, r: np.ndarray, ids: np.ndarray | None) -> None:
        pass


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

    def _validate(self) -> dict[str, Any]:
        return {
            "regularization": check_positive_finite(self.regularization, "regularization"),
            "noise_std": check_nonnegative_finite(self.noise_std, "noise_std"),
            "theta_norm_bound": check_nonnegative_finite(self.theta_norm_bound, "theta_norm_bound"),
            "delta": check_open_unit(self.delta, "delta"),
            "exploration_scale": check_nonnegative_finite(self.exploration_scale, "exploration_scale"),
        }

    def _start(self, config: dict[str, Any]) -> None:
        self._config = config
        self.ridge_ = RidgeState(self.dim_, batch_shape=(self.n_runs_,), regularization=config["regularization"])

    def _select(self, x: np.ndarray, ids: np.ndarray | None) -> np.ndarray:
        c = self._config
        radius = confidence_radius(
            self.ridge_.log_det(), dim=self.dim_, regularization=c["regularization"], noise_std=c["noise_std"],
            theta_norm_bound=c["theta_norm_bound"], delta=c["delta"],
        )
        ucb = np.einsum("skd,sd->sk", x, self.ridge_.theta())
        ucb += c["exploration_scale"] * radius[:, None] * self.ridge_.norms(x)
        return self._tie_break(ucb)

    def _observe(self, x: np.ndarray, a: np.ndarray, r: np.ndarray, ids: np.ndarray | None) -> None:
        self.ridge_.update(x[self._runs, a], r)


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
    :class:`~dpfair.privacy.BinaryTreeMechanism` code as :class:`PrivateFairGreedy`, here with the noise
    off: ``FairGreedy`` *is* ``PrivateFairGreedy(epsilon=inf)``, action for action.

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

    def _validate(self) -> dict[str, Any]:
        return {
            "regularization": check_positive_finite(self.regularization, "regularization"),
            "split_history": check_bool(self.split_history, "split_history"),
            "rho_regression": math.inf,
            "rho_rank": math.inf,
            "sensitivity": 1.0,
            "shift_failure_probability": 0.5,
        }

    # ---------------------------------------------------------------- shared Fair-Greedy machinery
    def _start(self, config: dict[str, Any]) -> None:
        T, S, K, d = self.horizon_, self.n_runs_, self.n_groups_, self.dim_
        self._config = config
        self._split = config["split_history"]
        # rounds that can enter the regression: floor(T / 2) with the split, T without
        n_regression = max(T // 2 if self._split else T, 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # epsilon = inf: reset() already warned
            self.tree_ = BinaryTreeMechanism(
                n_regression, (S, d + 1, d + 1), sensitivity=config["sensitivity"], rho=config["rho_regression"],
                symmetric=True, random_state=self._noise, label="regression",
            )
        # the shift holds for all releases together with probability >= 1 - shift_failure_probability
        self._beta_release = config["shift_failure_probability"] / n_regression
        self.ridge_ = RidgeState(d, batch_shape=(S,), regularization=config["regularization"])
        self.theta_ = np.zeros((S, d))
        self.n_regression_ = 0
        self.n_shift_failures_ = 0
        self._chosen = np.zeros((T, S, d))
        self._rewards = np.zeros((T, S))
        if self._support is not None:
            self._pool: Any = _SupportPool(self._support["support"], self._support["offsets"], S)
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
        d, lam = self.dim_, self._config["regularization"]
        shift = 0.0
        if self.tree_.node_scale > 0:
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
