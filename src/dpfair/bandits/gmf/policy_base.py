"""The online interface every group meritocratic policy shares (:class:`BanditPolicy`).

``reset`` validates and charges, ``select`` and ``update`` advance all runs one round; see
:mod:`dpfair.bandits.gmf.policies` for the policies themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from dpfair._estimator import privacy_spent
from dpfair._validation import (
    as_finite_array,
    check_allocation,
    check_int,
    check_nonnegative_finite,
    check_squares_fit,
)
from dpfair.bandits._ranks import tie_break_argmax
from dpfair.base import PlannedCharge
from dpfair.privacy.leaks import warn_privacy_leak
from dpfair.privacy.noise import NoiseSource, check_random_state, get_noise_source

__all__ = ["BanditPolicy"]

_FLOAT_MAX = float(np.finfo(float).max)
_NON_PRIVATE = "nothing: the policy's actions are an exact function of every candidate's context and reward"


@dataclass(frozen=True, kw_only=True)
class _PolicyConfig:
    """A policy's validated hyper-parameters (what ``_validate`` returns): a typed stage, read by name.

    Each policy subclasses it with its own fields.  ``regularization`` is the ridge weight of a policy that
    regresses (``None``: it does not), ``rho_regression`` the zCDP of its regression's release (``inf``: exact
    sums); the base class's checks of the data against the regression read them.
    """

    regularization: float | None = None
    rho_regression: float = math.inf


@dataclass(frozen=True, eq=False)
class _Support:
    """The support of a run, checked and sorted by group (``reset``'s ``support`` and ``support_groups``).

    ``support``: the rows sorted by group; ``offsets``: where each group's rows start; ``position``: the sorted
    row of each of the caller's rows; ``groups``: the caller's group of each row; ``raw``: the caller's rows.
    """

    support: np.ndarray
    offsets: np.ndarray
    position: np.ndarray
    groups: np.ndarray
    raw: np.ndarray


@dataclass(frozen=True, eq=False)
class _CheckedRun:
    """A run every check of :meth:`BanditPolicy.reset` passed: nothing charged, nothing allocated, no noise."""

    n_groups: int
    dim: int
    horizon: int
    runs: int
    single: bool  # n_runs=None: one learner, contexts of shape (K, d)
    support: _Support | None
    config: _PolicyConfig


@dataclass(frozen=True, eq=False)
class _OpenedRun:
    """A checked run after its charge (private policies): the noise source it draws from, its ``privacy_spent_``."""

    run: _CheckedRun
    noise: NoiseSource
    privacy_spent: dict[str, Any]


def _environment_bounds(bounds: Any) -> tuple[float, float]:
    """``check_reset``'s ``environment_bounds``: two finite numbers >= 0, checked by name."""
    try:
        context_bound, reward_bound = bounds
    except (TypeError, ValueError):
        raise ValueError(
            "environment_bounds must be a pair (context_norm_bound, reward_bound) of finite numbers >= 0, "
            f"got {bounds!r}."
        ) from None
    return (check_nonnegative_finite(context_bound, "environment_bounds[0] (the context norm bound)"),
            check_nonnegative_finite(reward_bound, "environment_bounds[1] (the reward bound)"))


class BanditPolicy(BaseEstimator):
    """Base class of the group meritocratic selection policies (the online interface).

    Subclasses implement ``_validate``, ``_start``, ``_select`` and ``_observe``.  A run starts in the order of
    :mod:`dpfair.base`'s release template: ``_open`` checks everything, charges the budget (private policies)
    and only then creates the noise source; ``_begin`` allocates the state.  A private policy subclasses
    :class:`dpfair.base.PrivateMechanismMixin` first and runs the template itself in ``_open``
    (:class:`~dpfair.bandits.PrivateFairGreedy`): the one charge path of every private class
    (:func:`dpfair._estimator.charge_budget`, ``budget=None`` charging the default ledger).  :meth:`check_reset`
    is the dry run of the same checks; :meth:`play_compiled` runs a fresh run's rounds at once.
    """

    def _validate(self) -> _PolicyConfig:  # pragma: no cover - overridden
        return _PolicyConfig()

    def _policy_privacy_spent(self, config: _PolicyConfig) -> dict[str, Any]:
        """``privacy_spent_`` of a policy that charges nothing (private policies get theirs from the template)."""
        return privacy_spent(math.inf, 0.0, protects=_NON_PRIVATE, neighbouring="none")

    def _warn(self, config: _PolicyConfig) -> None:
        warn_privacy_leak(
            f"{type(self).__name__} is not differentially private: its actions are an exact function of the "
            "candidates' contexts and rewards. Use PrivateFairGreedy with a finite epsilon on real people's data.",
        )  # at the user's line: the caller of reset or simulate

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
        return self._begin(self._open(n_groups, dim, horizon, n_runs=n_runs, support=support,
                                      support_groups=support_groups))

    def check_reset(
        self,
        n_groups: int,
        dim: int,
        horizon: int,
        *,
        n_runs: int | None = None,
        support: Any = None,
        support_groups: Any = None,
        environment_bounds: tuple[float, float] | None = None,
    ) -> PlannedCharge | None:
        """A dry run of :meth:`reset`: every check it makes before its charge, and what it would charge.

        Nothing is started or allocated, no noise source is created and no budget is touched.

        Parameters
        ----------
        n_groups, dim, horizon : int
            As for :meth:`reset`.
        n_runs : int, optional
            As for :meth:`reset`.
        support, support_groups : array-like, optional
            As for :meth:`reset`.
        environment_bounds : tuple of float, optional
            ``(context_norm_bound, reward_bound)`` documented by the environment the run will see (never read
            off its data).  Also refuse hyper-parameters that some data within these bounds would break midway
            (a singular or overflowing ridge state), and declared bounds below them (private policies).

        Returns
        -------
        PlannedCharge or None
            The one charge :meth:`reset` would make (private policies), or ``None`` for a policy that charges
            nothing.

        Raises
        ------
        TypeError, ValueError
            Whatever :meth:`reset` would refuse before its charge, or hyper-parameters that cannot work within
            ``environment_bounds``.
        """
        run, charge = self._dry_run_reset(n_groups, dim, horizon, n_runs=n_runs, support=support,
                                          support_groups=support_groups)
        if environment_bounds is not None:
            context_bound, reward_bound = _environment_bounds(environment_bounds)
            self._check_environment(run.config, run.horizon, context_bound, reward_bound)
        return charge

    def _dry_run_reset(self, n_groups: int, dim: int, horizon: int, **keywords: Any) -> tuple[_CheckedRun, Any]:
        """:meth:`check_reset`'s checks: the checked run and the planned charge (``None``: nothing charged)."""
        return self._check_reset(self._validate(), n_groups, dim, horizon, **keywords), None

    def _check_reset(
        self,
        config: _PolicyConfig,
        n_groups: int,
        dim: int,
        horizon: int,
        *,
        n_runs: int | None = None,
        support: Any = None,
        support_groups: Any = None,
    ) -> _CheckedRun:
        """The checks of :meth:`reset`'s arguments (sizes, support, memory, ``random_state``), given the validated
        hyper-parameters ``config``; returns the checked run :meth:`_open` and :meth:`_begin` read."""
        n_groups = check_int(n_groups, "n_groups", minimum=2)
        dim = check_int(dim, "dim", minimum=1)
        horizon = check_int(horizon, "horizon", minimum=1)
        runs = 1 if n_runs is None else check_int(n_runs, "n_runs", minimum=1)
        support_info = self._check_support(support, support_groups, n_groups, dim)
        n_support = 0 if support_info is None else support_info.support.shape[0]
        terms = self._state_bytes(n_groups, dim, horizon, runs, n_support)
        check_allocation(
            sum(n_bytes for n_bytes, _ in terms),
            subject=f"n_groups={n_groups}, dim={dim}, horizon={horizon} and n_runs={runs}",
            what=f"the state of {type(self).__name__}", fix=max(terms)[1],
        )
        check_random_state(self.random_state)  # checked here, used only in _open (after any charge)
        return _CheckedRun(n_groups=n_groups, dim=dim, horizon=horizon, runs=runs, single=n_runs is None,
                           support=support_info, config=config)

    def _open(self, n_groups: int, dim: int, horizon: int, **keywords: Any) -> _OpenedRun:
        """Check a run, charge (private policies: nothing here) and only then create its noise source."""
        run = self._check_reset(self._validate(), n_groups, dim, horizon, **keywords)
        return _OpenedRun(run=run, noise=get_noise_source(self.random_state),
                          privacy_spent=self._policy_privacy_spent(run.config))

    def _begin(self, opened: _OpenedRun) -> BanditPolicy:
        """Warn and allocate the state of a run :meth:`_open` checked and opened."""
        run = opened.run
        self._warn(run.config)
        self.n_groups_, self.dim_, self.horizon_ = run.n_groups, run.dim, run.horizon
        self.n_runs_ = run.runs
        self._single = run.single
        self._noise = opened.noise
        self._support = run.support
        self._runs = np.arange(run.runs)
        self.t_ = 0
        self._start(run.config)
        self.privacy_spent_ = opened.privacy_spent
        return self

    def _state_bytes(self, n_groups: int, dim: int, horizon: int, runs: int, n_support: int) -> list[tuple[int, str]]:
        """Bytes of the arrays a run allocates, as ``(bytes, how to shrink them)`` terms (Python ints)."""
        return [(2 * 8 * runs * n_groups, "lower n_runs or n_groups")]  # one round's scores and uniforms

    def _check_environment(self, config: _PolicyConfig, horizon: int, context_bound: float, reward_bound: float) -> None:
        """Refuse hyper-parameters that cannot work with data inside the given bounds (:meth:`check_reset` with
        ``environment_bounds``: ``simulate`` checks every policy so before charging any, so that no run fails midway)."""
        lam = config.regularization
        if lam is None:
            return
        scale = context_bound * context_bound * (horizon + 1)  # the largest entry of sum x x^T over the horizon
        if math.isinf(config.rho_regression) and lam < 1e-12 * scale:
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
    def _check_support(support: Any, support_groups: Any, n_groups: int, dim: int) -> _Support | None:
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
        return _Support(support=np.ascontiguousarray(sup[order]), offsets=offsets, position=position, groups=grp,
                        raw=sup)

    # ------------------------------------------------------------------ online interface
    def _check_started(self) -> None:
        if not hasattr(self, "t_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} has not been started: call reset(n_groups, dim, horizon).")

    def _check_round(self, contexts: Any, context_ids: Any) -> tuple[np.ndarray, np.ndarray | None]:
        self._check_started()
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
        config = getattr(self, "_config", _PolicyConfig())
        lam = config.regularization
        if lam is not None and math.isinf(config.rho_regression):
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
            n_rows = self._support.groups.size
            if raw.min() < 0 or raw.max() >= n_rows:
                raise ValueError(f"context_ids must index support rows in [0, {n_rows}).")
            if (self._support.groups[raw] != np.arange(self.n_groups_)).any():
                raise ValueError("context_ids[..., k] must index a support row of group k.")
            ids = self._support.position[raw]
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

    def _start(self, config: _PolicyConfig) -> None:  # pragma: no cover - overridden
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

    def play_compiled(self, context_ids: np.ndarray, rewards: np.ndarray) -> np.ndarray | None:
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
        self._check_started()
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
        groups = self._support.groups
        if ids.shape != (T, S, K) or np.shape(rewards) != (T, S, K) or ids.dtype.kind not in "iu" or T >= 2**31:
            return None  # (the kernels count the pool in int32)
        if ids.min() < 0 or ids.max() >= groups.size or (groups[ids] != np.arange(K)).any():
            return None
        try:
            r = np.asarray(rewards, dtype=float)
            if not np.isfinite(r).all():
                return None
            used = self._support.raw[np.flatnonzero(np.bincount(ids.ravel(), minlength=groups.size))]
            check_squares_fit(used, "contexts", n_terms=T + 1, norm_axis=-1)
            check_squares_fit(r, "rewards", n_terms=T + 1)
            self._check_bounds(used[:, None, :], r)
        except (TypeError, ValueError):
            return None
        rows = np.ascontiguousarray(self._support.position[ids].transpose(1, 0, 2), dtype=np.int64)
        return rows, np.ascontiguousarray(r.transpose(1, 0, 2))

    def _compiled_rounds(self, rows: np.ndarray, rewards: np.ndarray, actions: np.ndarray) -> None:  # pragma: no cover
        """Fill ``actions`` ``(n_runs, T)`` from the stream of :meth:`_check_stream` (subclasses that compile)."""
        raise NotImplementedError
