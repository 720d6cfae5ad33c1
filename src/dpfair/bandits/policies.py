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

Compiled rounds
---------------
``select`` and ``update`` are the numpy reference.  :func:`~dpfair.bandits.simulate` (its default
``engine="compiled"``) instead hands a fresh policy the whole pre-sampled stream (``_run_compiled``):
chunks of rounds run in numba kernels (:mod:`dpfair.bandits._gmf_kernels`) for all runs at once, with
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
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from dpfair._estimator import privacy_spent
from dpfair._validation import (
    as_finite_array,
    check_allocation,
    check_bool,
    check_int,
    check_nonnegative_finite,
    check_open_unit,
    check_positive_normal,
    check_squares_fit,
)
from dpfair.bandits.ridge import RidgeState, confidence_radius
from dpfair.privacy.continual import BinaryTreeMechanism
from dpfair.privacy.leaks import PrivacyLeakWarning, warn_privacy_leak
from dpfair.privacy.noise import get_noise_source

__all__ = ["OFUL", "BanditPolicy", "FairGreedy", "RandomPolicy"]

_FLOAT_MAX = float(np.finfo(float).max)
_NON_PRIVATE = "nothing: the policy's actions are an exact function of every candidate's context and reward"
_CHUNK_VALUES = 2**21  # random numbers drawn ahead per compiled kernel call (16 MB of float64)


def _chunks(horizon: int, values_per_round: int) -> list[tuple[int, int]]:
    """Spans ``[t0, t1)`` of rounds whose random numbers (``values_per_round`` each) fit in ``_CHUNK_VALUES``."""
    size = max(1, min(4096, _CHUNK_VALUES // max(values_per_round, 1)))
    return [(t0, min(t0 + size, horizon)) for t0 in range(0, horizon, size)]


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


def _factor_support(support: np.ndarray) -> tuple[np.ndarray, ...]:
    """Split the support's columns for ``_gmf_kernels._project_factored`` where that saves products.

    Columns are taken in order of increasing number of distinct values into the block ``A`` whose
    distinct combinations (``U`` of them) are projected once; the others are added row by row.  The
    block minimizing ``U |A| + M (|B| + 6)`` (a row's look-up costs about six products) is used when it
    saves a fifth of the ``M d`` products of the direct projection; otherwise ``cols_a`` is empty.

    Returns
    -------
    tuple of numpy.ndarray
        ``combos_t`` ``(|A|, U)``, ``codes`` ``(M,)``, ``rest_t`` ``(|B|, M)``, ``cols_a``, ``cols_b``.
    """
    n_rows, dim = support.shape
    values = [np.unique(support[:, i], return_inverse=True) for i in range(dim)]
    order = np.argsort([v.size for v, _ in values], kind="stable")
    best, best_cost = 0, 0.8 * n_rows * dim
    combo = np.zeros(n_rows, dtype=np.int64)  # dense code of each row's values in the columns taken so far
    for m, column in enumerate(order, start=1):
        distinct, inverse = values[column]
        _, combo = np.unique(combo * distinct.size + inverse.reshape(-1), return_inverse=True)
        cost = (int(combo.max()) + 1) * m + n_rows * (dim - m + 6)
        if cost < best_cost:
            best, best_cost = m, cost
    if best == 0:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros((0, 1)), np.zeros(n_rows, dtype=np.int64), np.zeros((0, n_rows)), empty, empty
    cols_a, cols_b = np.sort(order[:best]), np.sort(order[best:])
    combos, codes = np.unique(support[:, cols_a], axis=0, return_inverse=True)
    return (np.ascontiguousarray(combos.T), codes.reshape(-1).astype(np.int64), np.ascontiguousarray(support[:, cols_b].T),
            cols_a.astype(np.int64), cols_b.astype(np.int64))


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
            stacklevel=5,
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

        Raises
        ------
        TypeError, ValueError
            For an invalid argument or hyper-parameter, or sizes whose state cannot fit in memory
            (before any budget is charged).
        """
        return self._begin(
            self._prepare(n_groups, dim, horizon, n_runs=n_runs, support=support, support_groups=support_groups)
        )

    def _prepare(
        self,
        n_groups: int,
        dim: int,
        horizon: int,
        *,
        n_runs: int | None = None,
        support: Any = None,
        support_groups: Any = None,
    ) -> dict[str, Any]:
        """Everything :meth:`reset` checks, charging and allocating nothing (:func:`simulate` checks every
        policy this way before it charges any)."""
        n_groups = check_int(n_groups, "n_groups", minimum=2)
        dim = check_int(dim, "dim", minimum=1)
        horizon = check_int(horizon, "horizon", minimum=1)
        runs = 1 if n_runs is None else check_int(n_runs, "n_runs", minimum=1)
        support_info = self._check_support(support, support_groups, n_groups, dim)
        config = self._validate()
        n_support = 0 if support_info is None else support_info["support"].shape[0]
        terms = self._state_bytes(n_groups, dim, horizon, runs, n_support)
        check_allocation(
            sum(n_bytes for n_bytes, _ in terms),
            subject=f"n_groups={n_groups}, dim={dim}, horizon={horizon} and n_runs={runs}",
            what=f"the state of {type(self).__name__}", fix=max(terms)[1],
        )
        noise = get_noise_source(self.random_state)
        return {"n_groups": n_groups, "dim": dim, "horizon": horizon, "runs": runs, "single": n_runs is None,
                "support": support_info, "config": config, "noise": noise}

    def _begin(self, prepared: dict[str, Any], *, charge: bool = True) -> BanditPolicy:
        """Charge (unless the caller already has), warn and allocate the state of a run checked by :meth:`_prepare`."""
        config = prepared["config"]
        if charge:
            self._charge(config)
        self._warn(config)
        self.n_groups_, self.dim_, self.horizon_ = prepared["n_groups"], prepared["dim"], prepared["horizon"]
        self.n_runs_ = runs = prepared["runs"]
        self._single = prepared["single"]
        self._noise = prepared["noise"]
        self._support = prepared["support"]
        self._runs = np.arange(runs)
        self.t_ = 0
        self._start(config)
        self.privacy_spent_ = self._privacy_spent(config)
        return self

    def _state_bytes(self, n_groups: int, dim: int, horizon: int, runs: int, n_support: int) -> list[tuple[int, str]]:
        """Bytes of the arrays a run allocates, as ``(bytes, how to shrink them)`` terms (Python ints)."""
        return [(2 * 8 * runs * n_groups, "lower n_runs or n_groups")]  # one round's scores and uniforms

    def _check_environment(self, config: dict[str, Any], horizon: int, context_bound: float, reward_bound: float) -> None:
        """Refuse hyper-parameters that cannot work with data inside the given bounds (``simulate`` calls this
        before charging any budget, with the environment's documented bounds, so that no run fails midway)."""
        lam = config.get("regularization")
        if lam is None:
            return
        scale = context_bound * context_bound * (horizon + 1)  # the largest entry of sum x x^T over the horizon
        if math.isinf(config.get("rho_regression", math.inf)) and lam < 1e-12 * scale:
            # without privacy noise V = lambda I + sum x x^T; a lambda this small relative to the data makes V
            # singular in float64 (a Cholesky or log-det failure at some round)
            raise ValueError(
                f"regularization={lam!r} is too small for contexts of norm up to {context_bound!r} over horizon={horizon}: "
                f"V = regularization I + sum x x^T is singular in float64; use regularization >= {1e-12 * scale:.3g}."
            )
        if reward_bound * context_bound * (horizon + 1) / lam * max(context_bound, 1.0) > 1e300:
            # |<x, theta_hat>| <= ||x|| ||V^{-1} b|| <= C * (T + 1) B C / lambda
            raise ValueError(
                f"regularization={lam!r} is too small for rewards up to {reward_bound!r} and contexts up to "
                f"{context_bound!r}: the estimates theta_hat could overflow float64; use a larger regularization."
            )

    @staticmethod
    def _check_support(support: Any, support_groups: Any, n_groups: int, dim: int) -> Any:
        if support is None and support_groups is None:
            return None
        if support is None or support_groups is None:
            raise ValueError("give support and support_groups together (or neither).")
        sup = as_finite_array(support, "support", allow_empty=True, allow_nonfinite=True)
        if isinstance(support_groups, str | bytes):
            raise TypeError("support_groups must be an array of group indices, got a string.")
        grp = np.asarray(support_groups)
        if sup.ndim != 2 or sup.shape[1] != dim or sup.shape[0] == 0:
            raise ValueError(f"support must have shape (M, dim={dim}), got {sup.shape}.")
        if not np.isfinite(sup).all():
            raise ValueError("support holds NaN or infinite values; contexts must be finite.")
        check_squares_fit(sup, "support", norm_axis=1)
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
        if isinstance(contexts, np.ndarray) and contexts.dtype == np.float64:
            x = contexts  # the simulator's own arrays: the type checks below have nothing to refuse
        else:
            x = as_finite_array(contexts, "contexts", allow_empty=True, allow_nonfinite=True)
        shape = (self.n_groups_, self.dim_) if self._single else (self.n_runs_, self.n_groups_, self.dim_)
        if x.shape != shape:
            raise ValueError(
                f"contexts must have shape {shape} (one candidate per group, n_groups={self.n_groups_}), got {x.shape}."
            )
        with np.errstate(over="ignore", invalid="ignore"):
            largest = float(np.einsum("...d,...d->...", x, x).max())  # NaN or inf for a non-finite context
        if not largest <= _FLOAT_MAX / (2.0 * (self.horizon_ + 1)):
            if not np.isfinite(x).all():
                raise ValueError("contexts hold NaN or infinite values; contexts must be finite.")
            # x x^T summed over the horizon must stay finite (no NaN estimate later)
            check_squares_fit(x, "contexts", n_terms=self.horizon_ + 1, norm_axis=-1)
        config = getattr(self, "_config", {})
        lam = config.get("regularization")
        if lam is not None and math.isinf(config.get("rho_regression", math.inf)):
            # without privacy noise V = lambda I + sum x x^T: contexts this large relative to lambda make V singular
            # in float64 (condition number above 1e12), the same rule simulate() checks against the environment
            if largest * (self.horizon_ + 1) * 1e-12 > lam:
                raise ValueError(
                    f"contexts are too large for regularization={lam!r} over horizon={self.horizon_}: "
                    "V = regularization I + sum x x^T would be singular in float64; rescale the contexts or raise "
                    "regularization."
                )
        x = x.reshape(self.n_runs_, self.n_groups_, self.dim_)
        ids = None
        if self._support is not None:
            if context_ids is None:
                raise ValueError("context_ids is required: reset() was given a support.")
            if isinstance(context_ids, str | bytes):
                raise TypeError("context_ids must be integer support rows, got a string.")
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
        if isinstance(rewards, np.ndarray) and rewards.dtype == np.float64:
            r = rewards
        else:
            r = as_finite_array(rewards, "rewards", allow_empty=True, allow_nonfinite=True)
        shape = () if self._single else (self.n_runs_,)
        if a.shape != shape or a.dtype.kind not in "iu" or (a < 0).any() or (a >= self.n_groups_).any():
            raise ValueError(f"actions must be integer group indices in [0, {self.n_groups_}) of shape {shape}.")
        if r.shape != shape:
            raise ValueError(f"rewards must have shape {shape}, got {r.shape}.")
        if not np.isfinite(r).all():
            raise ValueError("rewards hold NaN or infinite values; rewards must be finite.")
        if not float(np.abs(r).max()) <= math.sqrt(_FLOAT_MAX / (2.0 * (self.horizon_ + 1))):
            check_squares_fit(r, "rewards", n_terms=self.horizon_ + 1)
        self._observe(x, a.reshape(self.n_runs_).astype(np.int64), r.reshape(self.n_runs_), ids)
        self.t_ += 1
        return self

    def _tie_break(self, scores: np.ndarray) -> np.ndarray:
        self._untouched = False  # a round has drawn: the compiled rounds no longer apply
        return tie_break_argmax(scores, self._noise.uniform(scores.shape))

    def _start(self, config: dict[str, Any]) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _select(self, x: np.ndarray, ids: np.ndarray | None) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def _observe(self, x: np.ndarray, a: np.ndarray, r: np.ndarray, ids: np.ndarray | None) -> None:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------------ compiled rounds (simulate)
    def _can_compile(self) -> bool:
        """Whether :meth:`_compiled_rounds` reproduces this policy's rounds (the library's own classes only)."""
        return False

    def _check_bounds(self, x: np.ndarray, r: np.ndarray) -> None:
        """Refuse data outside declared bounds (private policies; nothing here)."""

    def _run_compiled(self, context_ids: np.ndarray, rewards: np.ndarray) -> np.ndarray | None:
        """Run every round of a fresh :meth:`reset` at once, in compiled kernels.

        :func:`~dpfair.bandits.simulate` calls it with ``engine="compiled"`` and the whole pre-sampled
        stream.  The actions are those of ``select`` and ``update`` called round by round, with the
        same noise drawn from the same source in the same order; the learned state (``theta_``,
        ``ridge_``, ``n_shift_failures_``) agrees with the numpy rounds to floating-point rounding.
        Afterwards the horizon is used up; the per-round history buffers and the tree mechanism's
        nodes are left as :meth:`reset` made them.

        Parameters
        ----------
        context_ids : numpy.ndarray of int, shape (horizon, n_runs, K)
            Rows of the ``support`` given to :meth:`reset`, candidate ``k`` from group ``k``.
        rewards : numpy.ndarray of shape (horizon, n_runs, K)
            Reward of every candidate (the policy observes the chosen one's).

        Returns
        -------
        numpy.ndarray of int64 of shape (horizon, n_runs), or None
            The chosen groups.  ``None``, with nothing drawn or changed, when the policy has no
            compiled rounds, was reset without a support or has started, or when ``update`` might
            refuse some round of the stream (the caller then runs the numpy rounds, which raise there).
        """
        if not (self._can_compile() and self._support is not None and self.t_ == 0 and getattr(self, "_untouched", False)):
            return None
        stream = self._check_stream(context_ids, rewards)
        if stream is None:
            return None
        actions = np.zeros((self.n_runs_, self.horizon_), dtype=np.int64)
        self._compiled_rounds(*stream, actions)
        self.t_ = self.horizon_
        return np.ascontiguousarray(actions.T)

    def _check_stream(self, context_ids: Any, rewards: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """Kernel inputs ``(n_runs, T, K)``: sorted-support rows and rewards; ``None`` if a round could be refused.

        Stricter than the rounds: the rewards of *every* candidate must pass what ``update`` checks of the
        chosen ones (finite, no overflow, the declared bounds), so that the kernels never meet a refusal.
        """
        T, S, K = self.horizon_, self.n_runs_, self.n_groups_
        ids = np.asarray(context_ids)
        groups = self._support["groups"]
        if ids.shape != (T, S, K) or np.shape(rewards) != (T, S, K) or ids.dtype.kind not in "iu" or T >= 2**31:
            return None  # (the kernels count the pool in int32)
        if ids.min() < 0 or ids.max() >= groups.size or (groups[ids] != np.arange(K)).any():
            return None
        try:
            r = np.asarray(rewards, dtype=float)
            if not np.isfinite(r).all():
                return None
            used = self._support["raw"][np.flatnonzero(np.bincount(ids.ravel(), minlength=groups.size))]
            check_squares_fit(used, "contexts", n_terms=T + 1, norm_axis=-1)
            check_squares_fit(r, "rewards", n_terms=T + 1)
            self._check_bounds(used[:, None, :], r)
        except (TypeError, ValueError):
            return None
        rows = np.ascontiguousarray(self._support["position"][ids].transpose(1, 0, 2), dtype=np.int64)
        return rows, np.ascontiguousarray(r.transpose(1, 0, 2))

    def _compiled_rounds(self, rows: np.ndarray, rewards: np.ndarray, actions: np.ndarray) -> None:  # pragma: no cover
        """Fill ``actions`` ``(n_runs, T)`` from the stream of :meth:`_check_stream` (subclasses that compile)."""
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

    def _validate(self) -> dict[str, Any]:
        return {
            "regularization": check_positive_normal(self.regularization, "regularization"),
            "noise_std": check_nonnegative_finite(self.noise_std, "noise_std"),
            "theta_norm_bound": check_nonnegative_finite(self.theta_norm_bound, "theta_norm_bound"),
            "delta": check_open_unit(self.delta, "delta"),
            "exploration_scale": check_nonnegative_finite(self.exploration_scale, "exploration_scale"),
        }

    def _check_environment(self, config: dict[str, Any], horizon: int, context_bound: float, reward_bound: float) -> None:
        super()._check_environment(config, horizon, context_bound, reward_bound)
        lam = config["regularization"]
        # the largest radius over the horizon: ln det V_T / lambda^d <= d ln(1 + T C^2 / (lambda d)), d <= 10**6
        log_ratio = 1e6 * math.log1p(min((horizon + 1) * context_bound**2 / lam, 1e300))
        radius = config["noise_std"] * math.sqrt(2.0 * math.log(1.0 / config["delta"]) + log_ratio)
        radius += math.sqrt(lam) * config["theta_norm_bound"]
        # the exploration bonus scale * radius * ||x||_{V^{-1}} with ||x||_{V^{-1}} <= C / sqrt(lambda)
        if not config["exploration_scale"] * radius * context_bound / math.sqrt(lam) < 1e300:
            raise ValueError(
                "exploration_scale, noise_std and theta_norm_bound (with this regularization) give an exploration bonus "
                "that overflows float64; lower them or raise regularization."
            )

    def _state_bytes(self, n_groups: int, dim: int, horizon: int, runs: int, n_support: int) -> list[tuple[int, str]]:
        # V, V^{-1} and b per run, and one round's (n_runs, K, d) products
        return [(3 * 8 * runs * dim * dim, "lower dim or n_runs"), (3 * 8 * runs * n_groups * dim, "lower n_runs or n_groups")]

    def _start(self, config: dict[str, Any]) -> None:
        self._config = config
        self.ridge_ = RidgeState(self.dim_, batch_shape=(self.n_runs_,), regularization=config["regularization"])
        self._untouched = True

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

    def _can_compile(self) -> bool:
        return type(self) is OFUL

    def _compiled_rounds(self, rows: np.ndarray, rewards: np.ndarray, actions: np.ndarray) -> None:
        from dpfair.bandits import _gmf_kernels as kernels  # numba is imported at the first compiled run

        c, ridge = self._config, self.ridge_
        S, K, T, lam = self.n_runs_, self.n_groups_, self.horizon_, c["regularization"]
        # the terms of confidence_radius (Abbasi-Yadkori et al. 2011, Thm 2), as it computes them
        log_confidence = 2.0 * math.log(1.0 / c["delta"])
        dim_log_regularization = self.dim_ * math.log(lam)
        radius_offset = math.sqrt(lam) * c["theta_norm_bound"]
        gram, gram_inverse = np.array(ridge.gram, dtype=float), np.array(ridge.gram_inverse, dtype=float)
        target, n_observations = np.array(ridge.target, dtype=float), np.array(ridge.n_observations, dtype=np.int64)
        support = self._support["support"]
        with kernels.parallel_runs(S) as call:
            for t0, t1 in _chunks(T, S * K):
                uniforms = self._noise.uniform((t1 - t0, S, K))  # the tie-breaking draws of the rounds, in order
                call(
                    kernels.oful_rounds, t0, t1, rows, support, rewards, uniforms, gram, gram_inverse, target,
                    n_observations, log_confidence, dim_log_regularization, c["noise_std"], radius_offset,
                    c["exploration_scale"], actions,
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
            "regularization": check_positive_normal(self.regularization, "regularization"),
            "split_history": check_bool(self.split_history, "split_history"),
            "rho_regression": math.inf,
            "rho_rank": math.inf,
            "sensitivity": 1.0,
            "shift_failure_probability": 0.5,
        }

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
    def _start(self, config: dict[str, Any]) -> None:
        T, S, K, d = self.horizon_, self.n_runs_, self.n_groups_, self.dim_
        self._config = config
        self._untouched = True  # no round has drawn yet (_run_compiled)
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

    # ---------------------------------------------------------------- compiled rounds (simulate)
    def _can_compile(self) -> bool:
        return type(self) is FairGreedy

    def _compiled_rounds(self, rows: np.ndarray, rewards: np.ndarray, actions: np.ndarray) -> None:
        from dpfair.bandits import _gmf_kernels as kernels  # numba is imported at the first compiled run

        T, S, d = self.horizon_, self.n_runs_, self.dim_
        tree, split, lam = self.tree_, self._split, self._config["regularization"]
        support, offsets = self._support["support"], self._support["offsets"]
        pack_row, pack_col = np.triu_indices(d + 1)  # the tree's symmetric nodes, upper triangles packed
        # lambda + c_t of the release after n regression rows, c_t as _refresh_theta gets it (depends on popcount(n))
        shifts = np.full(tree.horizon + 1, lam + 0.0)
        if tree.node_scale > 0:
            by_popcount: dict[int, float] = {}
            for n in range(1, tree.horizon + 1):
                if n.bit_count() not in by_popcount:
                    by_popcount[n.bit_count()] = lam + tree.noise_operator_norm_bound(self._beta_release, t=n)
                shifts[n] = by_popcount[n.bit_count()]
        rank_noisy, tree_noisy = math.isfinite(self._config["rho_rank"]), tree.node_scale > 0
        counts = np.zeros((S, support.shape[0]), dtype=np.int32)
        proj, fresh = np.zeros((S, support.shape[0])), np.zeros(S, dtype=np.bool_)
        theta = np.array(self.theta_, dtype=float)
        gram, target = np.array(self.ridge_.gram, dtype=float), np.array(self.ridge_.target, dtype=float)
        exact, noisy = np.zeros((2, S, tree.n_levels, pack_row.size))
        failures = np.zeros(S, dtype=np.int64)
        support_t = np.ascontiguousarray(support.T)
        factored = _factor_support(support)
        with kernels.parallel_runs(S) as call:
            for t0, t1 in _chunks(T, S * (2 * self.n_groups_ + pack_row.size)):
                uniforms, rank_noise, tree_noise = self._compiled_noise(t0, t1, rank_noisy, tree_noisy, pack_row.size)
                call(
                    kernels.fair_greedy_rounds, t0, t1, split, rows, support, support_t, offsets, rewards, uniforms,
                    rank_noise, tree_noise, shifts, *factored, pack_row, pack_col, counts, proj, fresh, theta, gram,
                    target, exact, noisy, failures, actions,
                )
        # the learned state, as the numpy rounds leave it
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
        last two are empty when that part is exact.
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
                # update: the node completed by the new leaf (BinaryTreeMechanism._draw on its upper triangle)
                tree_noise[i] = rng.normal(0.0, self.tree_.node_scale, size=(S, n_packed))
        return uniforms, rank_noise, tree_noise
