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
count ranks over the support instead of over the whole history (see :mod:`dpfair.bandits.policies`).

Reward noise is Gaussian with standard deviation ``noise_std``, clipped symmetrically at
``noise_clip * noise_std``: still zero-mean and ``noise_std``-sub-Gaussian, and bounded, so that a
private learner can *declare* a bound on ``|y|`` (:attr:`GroupEnvironment.reward_bound`) that every
reward obeys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpfair._validation import check_int, check_nonnegative_finite, check_positive_finite

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
    context_bound : float
        ``max ||x||_2`` over the populations (a property of the environment, which a caller may declare
        to a private policy).
    reward_bound : float
        Bound on every observed reward: ``max |<x, theta*>| + noise_clip * noise_std``.
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

    def _setup(self, populations: Sequence[Any], theta: Any, noise_std: Any, noise_clip: Any, group_names: Any) -> None:
        theta = np.asarray(theta, dtype=float)
        if theta.ndim != 1 or theta.size == 0 or not np.isfinite(theta).all():
            raise ValueError("theta must be a non-empty 1-d array of finite numbers (the true reward vector).")
        if isinstance(populations, np.ndarray) and populations.ndim == 2:
            raise TypeError("populations must be a sequence with one (n_k, d) array per group, not a single 2-d array.")
        pops = [np.asarray(p, dtype=float) for p in populations]
        if len(pops) < 2:
            raise ValueError(f"populations must hold at least 2 groups, got {len(pops)}.")
        for k, p in enumerate(pops):
            if p.ndim != 2 or p.shape[0] == 0 or p.shape[1] != theta.size:
                raise ValueError(
                    f"populations[{k}] must have shape (n_k >= 1, d={theta.size}) to match theta, got {p.shape}."
                )
            if not np.isfinite(p).all():
                raise ValueError(f"populations[{k}] holds NaN or infinite values; contexts must be finite.")
        self.noise_std = check_nonnegative_finite(noise_std, "noise_std")
        self.noise_clip = check_positive_finite(noise_clip, "noise_clip")
        self.theta = theta
        self.n_groups = len(pops)
        self.dim = theta.size
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
        self.support_mean = self.support @ theta
        self._record_ids = record_ids
        self.support_offsets = np.asarray(offsets, dtype=np.int64)
        self.context_bound = float(np.linalg.norm(self.support, axis=1).max())
        self.reward_bound = float(np.abs(self.support_mean).max() + self.noise_clip * self.noise_std)

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
        rec = self._record_ids[k]
        pop_values = np.sort(self.support_mean[rec])
        return np.searchsorted(pop_values, np.asarray(values, dtype=float), side="right") / rec.size

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
        self._setup(pops, theta, noise_std, noise_clip, None)


class CensusHiringEnvironment(GroupEnvironment):
    """Hiring from census person records: groups from a column, ``theta*`` fitted on held-out records.

    The features are min-max scaled to ``[0, 1]`` (by the table's ranges), an intercept ``1`` is
    appended and the vector is divided by ``sqrt(d)``, so ``||x|| <= 1`` for every record.
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
        Numeric feature columns (missing values are filled with the column's minimum).
    target_column : str
        Numeric target (for example income).
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
        frame = frame[frame[group_column].notna() & frame[target_column].notna()]
        counts = frame[group_column].value_counts()
        if counts.size < n_groups:
            raise ValueError(f"group_column has {counts.size} groups, fewer than n_groups={n_groups}.")
        keep = counts.index[:n_groups].tolist()
        frame = frame[frame[group_column].isin(keep)].reset_index(drop=True)
        X = frame[features].apply(pd.to_numeric, errors="raise").astype(float)
        X = X.fillna(X.min())
        lo, hi = X.min().to_numpy(), X.max().to_numpy()
        scaled = (X.to_numpy() - lo) / np.where(hi > lo, hi - lo, 1.0)
        contexts = np.hstack([scaled, np.ones((len(frame), 1))]) / math.sqrt(len(features) + 1)
        y = frame[target_column].to_numpy(float) / scale
        rng = np.random.default_rng(seed)
        held_out = rng.random(len(frame)) < frac
        theta, *_ = np.linalg.lstsq(contexts[held_out], y[held_out], rcond=None)
        groups = frame[group_column].to_numpy()
        pops = [contexts[(groups == g) & ~held_out] for g in keep]
        if any(p.shape[0] == 0 for p in pops):
            raise ValueError("a kept group has no records outside the held-out split; lower fit_fraction.")
        self.feature_columns = tuple(features)
        self.fit_fraction = frac
        self._setup(pops, theta, noise_std, noise_clip, [str(g) for g in keep])

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
