"""Environments of group meritocratic online selection: one candidate per sensitive group per round.

Each round ``t`` presents ``K`` candidates, candidate ``k`` drawn from group ``k``'s population, with
context ``x_{k,t}`` in ``R^d``; the learner picks one and observes ``<x, theta*> + eta`` (the
Private-Fair-Greedy paper's "Problem Formulation").  The *relative rank* of a candidate is
``F_k(<x_{k,t}, theta*>)``, ``F_k`` the CDF of the true reward over group ``k``'s population
("Definitions").

Every environment here is a :class:`GroupEnvironment`: a finite population of context vectors per
group (a large synthetic sample, or real person records), candidates resampled uniformly within
their group each round.  So ``F_k`` is *exact*: it is the CDF of the very distribution the
candidates are drawn from.  The distinct context vectors of all groups form the environment's
``support``; an episode is stored as indices into it (``context_ids``), which lets the policies
count ranks over the support instead of over the whole history (see :mod:`dpfair.bandits.gmf.policies`).

Reward noise is Gaussian with standard deviation ``noise_std``, clipped symmetrically at
``noise_clip * noise_std``: still zero-mean and ``noise_std``-sub-Gaussian, and bounded, so that a
private learner can *declare* a bound on ``|y|`` (:attr:`GroupEnvironment.reward_bound`) that every
reward obeys.

Documented bounds
-----------------
Every environment has two public bounds, stated in its documentation and computed from public facts
(how its features are scaled, ``theta*``, the noise clipping), never from the candidates it draws:
:attr:`GroupEnvironment.context_norm_bound` (``||x||_2`` of every candidate) and
:attr:`GroupEnvironment.reward_bound` (``|y|`` of every observed reward).  A private policy must declare
bounds at least these (:func:`dpfair.bandits.simulate` checks this before it charges any budget).
:class:`SyntheticGroupEnvironment` and :class:`CensusHiringEnvironment` scale every context into the
unit ball, so their context bound is 1; a :class:`GroupEnvironment` built from explicit populations
(the caller's public definition of the world) has the largest norm among them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpfair._validation import (
    as_finite_array,
    check_allocation,
    check_int,
    check_nonnegative_finite,
    check_positive_finite,
    check_squares_fit,
)

__all__ = ["CensusHiringEnvironment", "Episode", "GroupEnvironment", "SyntheticGroupEnvironment"]


@dataclass(frozen=True)
class Episode:
    """One pre-sampled stream of rounds (contexts and reward noise) for one seed.

    Parameters
    ----------
    context_ids : numpy.ndarray
        Index into the environment's ``support`` of every candidate, shape ``(horizon, n_groups)``.
    mean_rewards : numpy.ndarray
        ``<x_{k,t}, theta*>``, shape ``(horizon, n_groups)``.
    rewards : numpy.ndarray
        Observed rewards ``<x_{k,t}, theta*> + eta_{k,t}`` (the learner sees only the chosen one's).
    relative_ranks : numpy.ndarray
        True relative ranks ``F_k(<x_{k,t}, theta*>)``, shape ``(horizon, n_groups)``.
    """

    context_ids: np.ndarray
    mean_rewards: np.ndarray
    rewards: np.ndarray
    relative_ranks: np.ndarray


class GroupEnvironment:
    """A linear bandit with one finite population of candidates per sensitive group.

    Parameters
    ----------
    populations : sequence of array-like
        ``populations[k]`` is group ``k``'s population, shape ``(n_k, d)`` (duplicates allowed: each
        row is one person, drawn with probability ``1 / n_k``).
    theta : array-like of shape (d,)
        The true reward vector ``theta*``.
    noise_std : float, default 0.1
        Standard deviation of the Gaussian reward noise (before clipping), ``>= 0``.
    noise_clip : float, default 3.0
        The noise is clipped to ``[-noise_clip * noise_std, noise_clip * noise_std]`` (``> 0``).
    group_names : sequence of str, optional
        Names of the groups (default ``"0"``, ``"1"``, ...).

    Attributes
    ----------
    n_groups : int
        Number of groups ``K``.
    dim : int
        Context dimension ``d``.
    support : numpy.ndarray
        The distinct context vectors of every group, group by group, shape ``(M, d)``.
    support_group : numpy.ndarray
        Group of each support row, shape ``(M,)``.
    support_rank : numpy.ndarray
        True relative rank ``F_k(<x, theta*>)`` of each support row.
    context_norm_bound : float
        Documented bound on every candidate's ``||x||_2``: here the largest norm among the given
        populations (the caller's public definition of the world); 1 for the subclasses, which scale
        every context into the unit ball.  Declare at least this to a private policy.
    context_bound : float
        The same number (the older name).
    reward_bound : float
        Documented bound on every observed ``|y|``: a bound on ``|<x, theta*>|`` over the
        environment's contexts (here the largest over the populations; the subclasses document
        theirs) plus ``noise_clip * noise_std``.
    """

    def __init__(
        self,
        populations: Sequence[Any],
        theta: Any,
        *,
        noise_std: float = 0.1,
        noise_clip: float = 3.0,
        group_names: Sequence[str] | None = None,
    ) -> None:
        self._setup(populations, theta, noise_std, noise_clip, group_names)

    def _setup(
        self,
        populations: Sequence[Any],
        theta: Any,
        noise_std: Any,
        noise_clip: Any,
        group_names: Any,
        *,
        context_norm_bound: float | None = None,
        mean_reward_bound: float | None = None,
    ) -> None:
        # context_norm_bound / mean_reward_bound: the subclasses' documented bounds (from their scaling)
        theta = as_finite_array(theta, "theta", allow_nonfinite=True)
        if theta.ndim != 1 or theta.size == 0 or not np.isfinite(theta).all():
            raise ValueError("theta must be a non-empty 1-d array of finite numbers (the true reward vector).")
        check_squares_fit(theta, "theta", norm_axis=0)
        if isinstance(populations, np.ndarray) and populations.ndim == 2:
            raise TypeError("populations must be a sequence with one (n_k, d) array per group, not a single 2-d array.")
        if isinstance(populations, str | bytes) or not hasattr(populations, "__iter__"):
            raise TypeError(
                f"populations must be a sequence with one (n_k, d) array per group, got {type(populations).__name__}."
            )
        pops = [as_finite_array(p, f"populations[{k}]", allow_empty=True, allow_nonfinite=True)
                for k, p in enumerate(populations)]
        if len(pops) < 2:
            raise ValueError(f"populations must hold at least 2 groups, got {len(pops)}.")
        for k, p in enumerate(pops):
            if p.ndim != 2 or p.shape[0] == 0 or p.shape[1] != theta.size:
                raise ValueError(
                    f"populations[{k}] must have shape (n_k >= 1, d={theta.size}) to match theta, got {p.shape}."
                )
            if not np.isfinite(p).all():
                raise ValueError(f"populations[{k}] holds NaN or infinite values; contexts must be finite.")
            check_squares_fit(p, f"populations[{k}]", norm_axis=1)
        self.noise_std = check_nonnegative_finite(noise_std, "noise_std")
        self.noise_clip = check_positive_finite(noise_clip, "noise_clip")
        if not math.isfinite(self.noise_clip * self.noise_std):
            raise ValueError("noise_clip * noise_std overflows float64; lower noise_std or noise_clip.")
        self.theta = theta
        self.n_groups = len(pops)
        self.dim = theta.size
        if isinstance(group_names, str | bytes):
            raise TypeError("group_names must be a sequence of names, one per group, not a single string.")
        names = [str(k) for k in range(self.n_groups)] if group_names is None else [str(g) for g in group_names]
        if len(names) != self.n_groups:
            raise ValueError(f"group_names must name each of the {self.n_groups} groups, got {len(names)} names.")
        self.group_names = tuple(names)
        supports, groups, ranks, record_ids, offsets = [], [], [], [], [0]
        self.group_sizes = tuple(p.shape[0] for p in pops)
        for k, p in enumerate(pops):
            unique, inverse = np.unique(p, axis=0, return_inverse=True)
            values = np.sort(p @ theta)
            # F_k(y) = P(<X_k, theta*> <= y) over the population (paper, "Group Meritocratic Fairness")
            rank = np.searchsorted(values, unique @ theta, side="right") / p.shape[0]
            supports.append(unique)
            groups.append(np.full(unique.shape[0], k, dtype=np.int64))
            ranks.append(rank)
            record_ids.append(offsets[-1] + inverse.reshape(-1).astype(np.int64))
            offsets.append(offsets[-1] + unique.shape[0])
        self.support = np.ascontiguousarray(np.concatenate(supports))
        self.support_group = np.concatenate(groups)
        self.support_rank = np.concatenate(ranks)
        with np.errstate(over="ignore", invalid="ignore"):
            self.support_mean = self.support @ theta
        if not np.isfinite(self.support_mean).all():
            raise ValueError("populations and theta give rewards <x, theta> that overflow float64; rescale them.")
        self._record_ids = record_ids
        self.support_offsets = np.asarray(offsets, dtype=np.int64)
        largest_norm = float(np.sqrt(np.einsum("md,md->m", self.support, self.support).max()))
        largest_mean = float(np.abs(self.support_mean).max())
        tolerance = 1.0 + 1e-12  # floating-point rounding of the norms and products
        if context_norm_bound is not None and largest_norm > context_norm_bound * tolerance:
            raise RuntimeError("internal error: a context exceeds the environment's documented context_norm_bound.")
        if mean_reward_bound is not None and largest_mean > mean_reward_bound * tolerance:
            raise RuntimeError("internal error: a mean reward exceeds the environment's documented reward bound.")
        self._context_norm_bound = largest_norm if context_norm_bound is None else float(context_norm_bound)
        mean_bound = largest_mean if mean_reward_bound is None else float(mean_reward_bound)
        self._reward_bound = mean_bound + self.noise_clip * self.noise_std
        if not math.isfinite(self._reward_bound):
            raise ValueError("theta, noise_std and noise_clip give a reward bound that overflows float64; rescale them.")

    @property
    def context_norm_bound(self) -> float:
        """Documented bound on every candidate's ``||x||_2`` (see the class docstring).

        Returns
        -------
        float
            Declare at least this as a private policy's ``context_bound``.
        """
        return self._context_norm_bound

    @property
    def context_bound(self) -> float:
        """The documented context bound under its older name (:attr:`context_norm_bound`).

        Returns
        -------
        float
            ``context_norm_bound``.
        """
        return self._context_norm_bound

    @property
    def reward_bound(self) -> float:
        """Documented bound on every observed reward's ``|y|`` (see the class docstring).

        Returns
        -------
        float
            Declare at least this as a private policy's ``reward_bound``.
        """
        return self._reward_bound

    def relative_rank(self, group: int, values: Any) -> np.ndarray:
        """True CDF ``F_k`` of group ``k``'s reward at ``values``.

        Parameters
        ----------
        group : int
            The group ``k``.
        values : array-like
            Reward values ``y``.

        Returns
        -------
        numpy.ndarray
            ``P(<X_k, theta*> <= y)``, the shape of ``values``.
        """
        k = check_int(group, "group", minimum=0)
        if k >= self.n_groups:
            raise ValueError(f"group must be in [0, {self.n_groups}), got {k}.")
        y = as_finite_array(values, "values", allow_empty=True, allow_nonfinite=True)
        if np.isnan(y).any():
            raise ValueError("values holds NaN; pass reward values (F_k(-inf) = 0 and F_k(inf) = 1 are accepted).")
        rec = self._record_ids[k]
        pop_values = np.sort(self.support_mean[rec])
        return np.searchsorted(pop_values, y, side="right") / rec.size

    def sample(self, horizon: int, seed: int) -> Episode:
        """Pre-sample the candidates and reward noise of ``horizon`` rounds.

        Parameters
        ----------
        horizon : int
            Number of rounds ``T >= 1``.
        seed : int
            Seed of the stream (the same seed gives the same stream to every policy).

        Returns
        -------
        Episode
            Candidates (as support indices), mean and noisy rewards and true relative ranks.
        """
        horizon = check_int(horizon, "horizon", minimum=1)
        seed = check_int(seed, "seed", minimum=0)
        # context ids, noise, mean and noisy rewards, ranks: five (horizon, n_groups) arrays of 8 bytes
        check_allocation(
            5 * 8 * horizon * self.n_groups, subject=f"horizon={horizon} with n_groups={self.n_groups}",
            what="the pre-sampled rounds", fix="lower horizon",
        )
        rng = np.random.default_rng([seed, 0x6D66])
        ids = np.empty((horizon, self.n_groups), dtype=np.int64)
        for k, rec in enumerate(self._record_ids):
            ids[:, k] = rec[rng.integers(rec.size, size=horizon)]
        clip = self.noise_clip * self.noise_std
        noise = np.clip(rng.normal(0.0, self.noise_std, size=(horizon, self.n_groups)), -clip, clip)
        mean = self.support_mean[ids]
        return Episode(context_ids=ids, mean_rewards=mean, rewards=mean + noise, relative_ranks=self.support_rank[ids])

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_groups={self.n_groups}, dim={self.dim}, group_sizes={self.group_sizes}, "
            f"noise_std={self.noise_std:g})"
        )


class SyntheticGroupEnvironment(GroupEnvironment):
    """Synthetic groups with different context distributions, inside the unit ball.

    Group ``k``'s population is a Gaussian sample around a group-specific mean, shifted along
    ``theta*`` so that the groups' reward distributions differ (a reward-maximizing learner then
    prefers one group), each row scaled into the unit ball.  ``theta*`` is a random unit vector.
    Documented bounds: ``context_norm_bound = 1`` (the unit ball) and
    ``reward_bound = 1 + noise_clip * noise_std`` (``|<x, theta*>| <= ||x|| ||theta*|| <= 1``).

    Parameters
    ----------
    n_groups : int, default 4
        Number of groups ``K >= 2``.
    dim : int, default 17
        Context dimension ``d >= 1``.
    noise_std : float, default 0.1
        Reward noise standard deviation (clipped at ``noise_clip * noise_std``).
    population_size : int, default 2000
        Rows per group population (``F_k`` is exact for this population).
    group_gap : float, default 0.3
        Difference between consecutive groups' mean reward, before scaling into the unit ball.
    noise_clip : float, default 3.0
        Clipping of the reward noise, in standard deviations.
    random_state : int, optional
        Seed of the populations and ``theta*`` (``None``: fresh entropy).
    """

    def __init__(
        self,
        n_groups: int = 4,
        dim: int = 17,
        noise_std: float = 0.1,
        *,
        population_size: int = 2000,
        group_gap: float = 0.3,
        noise_clip: float = 3.0,
        random_state: int | None = None,
    ) -> None:
        n_groups = check_int(n_groups, "n_groups", minimum=2)
        dim = check_int(dim, "dim", minimum=1)
        size = check_int(population_size, "population_size", minimum=1)
        gap = check_nonnegative_finite(group_gap, "group_gap")
        if random_state is not None:
            check_int(random_state, "random_state", minimum=0)
        # the populations, their scaling and the distinct rows: about three (n_groups * population_size, dim) arrays
        check_allocation(
            3 * 8 * n_groups * size * dim, subject=f"n_groups={n_groups}, dim={dim} and population_size={size}",
            what="the group populations", fix="lower dim or population_size",
        )
        if not gap * n_groups < 1e150:  # group means of norm about gap * n_groups: their squares must not overflow
            raise ValueError(
                f"group_gap={gap!r} is too large: the group means overflow float64; use a gap below 1e150 / n_groups."
            )
        rng = np.random.default_rng(random_state)
        theta = rng.normal(size=dim)
        theta /= np.linalg.norm(theta)
        pops = []
        for k in range(n_groups):
            mean = 0.3 * rng.normal(size=dim) / math.sqrt(dim) + gap * (k - (n_groups - 1) / 2) * theta
            spread = 0.5 + 0.5 * rng.random()  # groups also differ in their spread
            x = mean + spread * rng.normal(size=(size, dim)) / math.sqrt(dim)
            x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1.0)
            pops.append(x)
        self.population_size = size
        self.group_gap = gap
        # documented: every row in the unit ball, theta* a unit vector, so |<x, theta*>| <= 1
        self._setup(pops, theta, noise_std, noise_clip, None, context_norm_bound=1.0, mean_reward_bound=1.0)


class CensusHiringEnvironment(GroupEnvironment):
    """Hiring from census person records: groups from a column, ``theta*`` fitted on held-out records.

    The features are min-max scaled to ``[0, 1]`` (by the table's ranges), an intercept ``1`` is
    appended and the vector is divided by ``sqrt(d)``, so ``||x|| <= 1`` for every record.
    Documented bounds: ``context_norm_bound = 1``, and ``reward_bound`` is the largest ``|<x, theta*>|``
    over that whole box of scaled features (a function of ``theta*`` alone, never of the records) plus
    ``noise_clip * noise_std``.
    ``theta*`` is the least-squares fit of the (scaled) target on a random ``fit_fraction`` of the
    records (the held-out split); the candidates are resampled, within each group, from the other
    records, and ``F_k`` is the CDF over all of them (the whole group's candidate pool).  Only the
    ``n_groups`` largest groups are kept (the paper: K = 4 races).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per person.
    group_column : str
        Column of the sensitive group.
    feature_columns : sequence of str
        Numeric feature columns (missing values are filled with the column's minimum; a column needs
        at least one value among the kept records).
    target_column : str
        Numeric target (for example income); finite where present.
    n_groups : int, default 4
        Keep the ``n_groups`` largest groups.
    target_scale : float, default 1.0
        The target is divided by this before fitting (for example ``100_000`` for income in dollars).
    fit_fraction : float, default 0.5
        Share of the records held out to fit ``theta*`` (in ``(0, 1)``).
    noise_std : float, default 0.1
        Reward noise standard deviation (clipped at ``noise_clip * noise_std``).
    noise_clip : float, default 3.0
        Clipping of the reward noise, in standard deviations.
    random_state : int, default 0
        Seed of the held-out split.

    Notes
    -----
    folktables downloads the ACS PUMS files from the Census Bureau at run time, which this
    project's machines cannot reach; :meth:`from_acs_excerpt` uses the NIST ACS 2019 excerpts and
    :meth:`from_adult` UCI Adult instead.  Any table with a group column plugs in, so a user with
    folktables data passes its data frame here.
    """

    def __init__(
        self,
        table: pd.DataFrame,
        group_column: str,
        feature_columns: Sequence[str],
        target_column: str,
        *,
        n_groups: int = 4,
        target_scale: float = 1.0,
        fit_fraction: float = 0.5,
        noise_std: float = 0.1,
        noise_clip: float = 3.0,
        random_state: int = 0,
    ) -> None:
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}.")
        features = list(feature_columns)
        missing = [c for c in [group_column, target_column, *features] if c not in table.columns]
        if missing:
            raise ValueError(f"table has no column(s) {missing}; check group_column, feature_columns and target_column.")
        if not features:
            raise ValueError("feature_columns must name at least one column.")
        n_groups = check_int(n_groups, "n_groups", minimum=2)
        scale = check_positive_finite(target_scale, "target_scale")
        frac = check_positive_finite(fit_fraction, "fit_fraction")
        if not frac < 1:
            raise ValueError(f"fit_fraction must lie in (0, 1), got {fit_fraction!r}.")
        seed = check_int(random_state, "random_state", minimum=0)
        frame = table[[group_column, target_column, *features]].copy()
        for column, argument in [(target_column, "target_column"), *[(c, "feature_columns") for c in features]]:
            values = frame[column]
            if isinstance(values, pd.DataFrame):
                raise ValueError(f"{argument} names column {column!r}, which the table holds more than once; rename it.")
            if values.dtype.kind == "b":
                values = values.astype(float)
            try:
                values = pd.to_numeric(values, errors="raise")
            except (TypeError, ValueError):
                raise TypeError(
                    f"{argument} column {column!r} must be numeric (missing values allowed); encode it as numbers first."
                ) from None
            if values.dtype.kind not in "biuf":
                raise TypeError(f"{argument} column {column!r} must be real numbers, got dtype {values.dtype}.")
            if np.isinf(values.to_numpy(dtype=float)).any():
                raise ValueError(f"{argument} column {column!r} holds infinite values; replace them first.")
            frame[column] = values.astype(float)
        frame = frame[frame[group_column].notna() & frame[target_column].notna()]
        counts = frame[group_column].value_counts()
        if counts.size < n_groups:
            raise ValueError(f"group_column has {counts.size} groups, fewer than n_groups={n_groups}.")
        keep = counts.index[:n_groups].tolist()
        frame = frame[frame[group_column].isin(keep)].reset_index(drop=True)
        X = frame[features].astype(float)
        empty = [c for c in features if X[c].isna().all()]
        if empty:
            raise ValueError(
                f"feature_columns {empty} have no values among the kept groups' records; drop or fill them first."
            )
        X = X.fillna(X.min())
        lo, hi = X.min().to_numpy(), X.max().to_numpy()
        with np.errstate(over="ignore", invalid="ignore"):
            span = np.where(hi > lo, hi - lo, 1.0)
        if not np.isfinite(span).all():
            raise ValueError("feature_columns hold a range that overflows float64 (max - min); rescale the features.")
        scaled = (X.to_numpy() - lo) / span
        contexts = np.hstack([scaled, np.ones((len(frame), 1))]) / math.sqrt(len(features) + 1)
        with np.errstate(over="ignore"):
            y = frame[target_column].to_numpy(float) / scale
        if not np.isfinite(y).all():
            raise ValueError(
                f"target_scale={scale!r} is too small: the target divided by it overflows float64; raise target_scale."
            )
        rng = np.random.default_rng(seed)
        held_out = rng.random(len(frame)) < frac
        with np.errstate(all="ignore"):
            theta, *_ = np.linalg.lstsq(contexts[held_out], y[held_out], rcond=None)
            # documented reward bound: max |<x, theta*>| over the box [0, 1]^p x {1}, divided by sqrt(p + 1)
            weights, intercept = theta[:-1], theta[-1]
            top = (intercept + np.maximum(weights, 0.0).sum()) / math.sqrt(len(features) + 1)
            bottom = (intercept + np.minimum(weights, 0.0).sum()) / math.sqrt(len(features) + 1)
        mean_bound = float(max(abs(top), abs(bottom)))
        if not (np.isfinite(theta).all() and math.isfinite(mean_bound) and mean_bound < 1e150):
            raise ValueError(
                f"target_scale={scale!r} is too small: the fitted theta* overflows float64; raise target_scale."
            )
        groups = frame[group_column].to_numpy()
        pops = [contexts[(groups == g) & ~held_out] for g in keep]
        if any(p.shape[0] == 0 for p in pops):
            raise ValueError("a kept group has no records outside the held-out split; lower fit_fraction.")
        self.feature_columns = tuple(features)
        self.fit_fraction = frac
        self._setup(pops, theta, noise_std, noise_clip, [str(g) for g in keep], context_norm_bound=1.0,
                    mean_reward_bound=mean_bound)

    @classmethod
    def from_acs_excerpt(cls, region: str = "national", **kwargs: Any) -> CensusHiringEnvironment:
        """Hiring on the NIST ACS 2019 excerpt: race groups (``RAC1P``), income (``PINCP``) as the reward.

        Features: age, sex, marital status (one-hot), education, density and the four disability
        flags; target income in units of $100,000.  The ``n_groups`` largest ``RAC1P`` codes are kept
        (national: White, Black, Asian, Some other race).

        Parameters
        ----------
        region : {"national", "ma", "tx"}, default "national"
            Which excerpt (:func:`dpfair.datasets.load_acs_excerpt`).
        **kwargs
            Passed to the constructor (``n_groups``, ``noise_std``, ``random_state``, ...).

        Returns
        -------
        CensusHiringEnvironment
            The environment.
        """
        from dpfair.datasets import load_acs_excerpt

        data = load_acs_excerpt(region)
        table = data.X.copy()
        for code in range(1, 7):
            table[f"MSP_{code}"] = (table["MSP"] == code).astype(float)
        table["DENSITY"] = np.log10(table["DENSITY"])
        table["race"] = data.extra["RAC1P"].map(
            {1: "white", 2: "black", 3: "american-indian", 6: "asian", 8: "some-other-race", 9: "two-or-more"}
        ).fillna("other-small")
        table["income"] = data.extra["PINCP"].to_numpy(float)
        features = ["AGEP", "SEX", *[f"MSP_{c}" for c in range(1, 7)], "EDU", "DENSITY", "DREM", "DPHY", "DEYE", "DEAR"]
        kwargs.setdefault("target_scale", 100_000.0)
        return cls(table, "race", features, "income", **kwargs)

    @classmethod
    def from_adult(cls, **kwargs: Any) -> CensusHiringEnvironment:
        """Hiring on UCI Adult: race groups, the label ``income > 50K`` as the (linear-probability) reward.

        Parameters
        ----------
        **kwargs
            Passed to the constructor.

        Returns
        -------
        CensusHiringEnvironment
            The environment (Adult has no income amount, only the 0/1 label).
        """
        from dpfair.datasets import load_adult

        data = load_adult()
        table = data.X[["age", "education-num", "capital-gain", "capital-loss", "hours-per-week", "race"]].copy()
        table["male"] = (data.sensitive.astype(str).str.strip() == "Male").astype(float)
        table["married"] = data.X["marital-status"].astype(str).str.startswith("Married").astype(float)
        table["income"] = data.y.to_numpy(float)
        features = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week", "male", "married"]
        return cls(table, "race", features, "income", **kwargs)
