"""The vectorized simulator of group meritocratic online selection.

:func:`simulate` pre-samples one :class:`~dpfair.bandits.Episode` per seed (contexts and reward noise),
then runs each policy on all seeds at once: one policy object with ``n_runs = len(seeds)``
independent learners, one vectorized step per round.  Every policy sees the same candidates and the
same reward noise for a given seed (a paired comparison).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from dpfair._validation import check_allocation, check_int
from dpfair.bandits.gmf.environments import GroupEnvironment
from dpfair.bandits.gmf.policy_base import BanditPolicy
from dpfair.bandits.regret import cumulative_fair_regret, cumulative_regret
from dpfair.bandits.results import BanditResult
from dpfair.privacy.budget import check_budgets_cover

__all__ = ["simulate"]

ENGINES = ("compiled", "numpy")

_MAX_FLOAT = float(np.finfo(float).max)


def simulate(
    env: GroupEnvironment,
    policies: Mapping[str, BanditPolicy],
    horizon: int,
    seeds: Sequence[int],
    *,
    engine: str = "compiled",
) -> BanditResult:
    """Run every policy on the same pre-sampled streams, batched over seeds.

    Each policy is cloned (the caller's object is not modified; a shared ``budget`` is charged once per
    policy).  A policy whose ``random_state`` is ``None`` gets a seed derived from ``seeds`` and its
    position, so that a simulation, an experiment by nature, is reproducible; give a policy its own
    ``random_state`` to choose.  The private noise of all seeds of a policy comes from one generator:
    a seed's curve depends on the whole list of seeds, and is reproduced by the same list.

    Parameters
    ----------
    env : GroupEnvironment
        The environment (its ``support`` lets the policies count ranks over distinct contexts).
    policies : mapping of str to BanditPolicy
        Named policies, in the order of the result's first axis.
    horizon : int
        Number of rounds ``T >= 1``.
    seeds : sequence of int
        Seeds of the streams (one run of every policy per seed).
    engine : {"compiled", "numpy"}, default "compiled"
        ``"compiled"``: each policy runs every round of every seed in numba kernels
        (:mod:`dpfair.bandits.gmf._kernels`, compiled at the first call of a process, then read from
        numba's on-disk cache), its noise drawn by its noise source in numpy, in the reference's order;
        ``"numpy"``: the reference, one vectorized ``select`` and ``update`` per round.  Both give the
        same actions and curves (the tests check 1e-9).  A subclass of the policies, a private policy
        with secure noise (``random_state`` a non-seeded :class:`~dpfair.privacy.NoiseSource`) or a
        stream some round of which ``update`` would refuse runs the numpy rounds under either engine.

    Returns
    -------
    BanditResult
        ``fair_regret`` and ``regret`` of shape ``(n_policies, n_seeds, horizon)`` (cumulative),
        ``selections`` of shape ``(n_policies, n_seeds, n_groups)``, and each policy's privacy spent.

    Raises
    ------
    TypeError, ValueError
        For an invalid environment, policy, horizon, seed list or engine, a private policy's declared
        ``context_bound`` / ``reward_bound`` below the environment's documented ``context_norm_bound`` /
        ``reward_bound``, or sizes whose arrays cannot fit in memory.
    PrivacyBudgetExceededError
        When the policies' budgets cannot pay for all of them together (policies sharing one budget
        are charged together).  Every check runs before any budget is charged: a refused call
        spends nothing.
    """
    horizon, seeds = _check_arguments(env, policies, horizon, seeds, engine)
    n_seeds = len(seeds)
    learners = _checked_policies(env, policies, horizon, seeds)
    episodes = [env.sample(horizon, s) for s in seeds]
    ids = np.stack([e.context_ids for e in episodes], axis=1)  # (T, S, K)
    rewards = np.stack([e.rewards for e in episodes], axis=1)
    means = np.stack([e.mean_rewards for e in episodes], axis=1)
    ranks = np.stack([e.relative_ranks for e in episodes], axis=1)
    del episodes
    fair, regret, selections, spent = [], [], [], {}
    for name in policies:
        learner = learners.pop(0)  # one policy's state in memory at a time
        # every check passed for every policy and the budgets pay for all of them: reset charges this one (a
        # private policy runs the release template: its one charge, then, only then, its noise source)
        learner.reset(env.n_groups, env.dim, horizon, n_runs=n_seeds, support=env.support,
                      support_groups=env.support_group)
        actions = _play(env, learner, ids, rewards, horizon, n_seeds, engine)
        fair.append(cumulative_fair_regret(ranks, actions).T)
        regret.append(cumulative_regret(means, actions).T)
        selections.append(np.stack([np.bincount(actions[:, s], minlength=env.n_groups) for s in range(n_seeds)]))
        spent[name] = {"epsilon": learner.privacy_spent_["epsilon"], "delta": learner.privacy_spent_["delta"]}
    return BanditResult(
        seeds=seeds, privacy_spent=spent, policy_names=tuple(policies), fair_regret=np.stack(fair),
        regret=np.stack(regret), selections=np.stack(selections),
    )


def _check_arguments(env: Any, policies: Any, horizon: Any, seeds: Any, engine: Any) -> tuple[int, tuple[int, ...]]:
    """The arguments of :func:`simulate`, whether its arrays fit, and the environment's bounds: ``(horizon, seeds)``."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES} ('numpy' is the reference implementation), got {engine!r}.")
    if not isinstance(env, GroupEnvironment):
        raise TypeError(f"env must be a dpfair.bandits GroupEnvironment, got {type(env).__name__}.")
    if not isinstance(policies, Mapping) or not policies:
        raise ValueError("policies must be a non-empty mapping of name -> policy, e.g. {'OFUL': OFUL()}.")
    for name, policy in policies.items():
        if not isinstance(name, str) or not isinstance(policy, BanditPolicy):
            raise TypeError(f"policies must map str names to BanditPolicy objects; got {name!r}: {type(policy).__name__}.")
    horizon = check_int(horizon, "horizon", minimum=1)
    if (isinstance(seeds, numbers.Integral | str | bytes) or not isinstance(seeds, Sequence | np.ndarray)
            or np.ndim(seeds) != 1 or len(seeds) == 0):
        raise ValueError("seeds must be a non-empty sequence of non-negative ints, e.g. seeds=range(10).")
    seeds = tuple(check_int(s, "seeds", minimum=0) for s in seeds)
    n_seeds = len(seeds)
    # the episodes and their stacked copies (ids, rewards, means, ranks: 2 x 4 arrays of (horizon, n_seeds,
    # n_groups)), and per policy its actions and both regret curves (and their temporaries)
    check_allocation(
        8 * horizon * n_seeds * (8 * env.n_groups + 4 * len(policies) + 4),
        subject=f"horizon={horizon} with {n_seeds} seed(s), {len(policies)} policies and n_groups={env.n_groups}",
        what="the simulated rounds and regret curves", fix="lower horizon or use fewer seeds",
    )
    # every context and reward obeys the environment's documented bounds: their squares summed over the horizon
    # must stay finite, or a policy would refuse a round midway (after the budgets were charged)
    for value, documented in ((env.context_norm_bound, "context_norm_bound"), (env.reward_bound, "reward_bound")):
        if not value * value * (horizon + 1) < _MAX_FLOAT / 2:
            raise ValueError(
                f"env.{documented}={value!r} is too large for horizon={horizon}: squared values summed over the horizon "
                "overflow float64; rescale the environment's contexts and rewards (or lower horizon)."
            )
    return horizon, seeds


def _checked_policies(env: GroupEnvironment, policies: Mapping[str, BanditPolicy], horizon: int,
                      seeds: tuple[int, ...]) -> list[BanditPolicy]:
    """Each policy cloned and seeded, its run checked by its dry run (nothing charged), the budgets tried together."""
    # Validate every policy (hyper-parameters, sizes, declared bounds against the environment's documented
    # ones), then check that the budgets pay for all of them together, then charge: a refused call spends nothing.
    learners, charges = [], []
    for index, (name, policy) in enumerate(policies.items()):
        learner = clone(policy)
        if "random_state" in learner.get_params() and learner.random_state is None:
            learner.set_params(random_state=np.random.default_rng([*seeds, 0xB4D17, index]))
        try:
            planned = learner.check_reset(env.n_groups, env.dim, horizon, n_runs=len(seeds), support=env.support,
                                          support_groups=env.support_group,
                                          environment_bounds=(env.context_norm_bound, env.reward_bound))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"policies[{name!r}]: {exc}") from None
        if planned is not None:  # what its reset will charge (budget=None: the default ledger, if one is set)
            charges.append((planned.budget, planned.epsilon, planned.delta, f"policies[{name!r}].budget",
                            planned.relation))
        learners.append(learner)
    check_budgets_cover(charges, fix="give each private policy a budget that pays for it, or a larger shared budget")
    return learners


def _play(env: GroupEnvironment, learner: BanditPolicy, ids: np.ndarray, rewards: np.ndarray, horizon: int,
          n_seeds: int, engine: str) -> np.ndarray:
    """One started policy over every round of every seed: its actions ``(horizon, n_seeds)``."""
    # compiled: every round at once in numba kernels (None: this policy or stream has no compiled rounds)
    actions = learner.play_compiled(ids, rewards) if engine == "compiled" else None
    if actions is None:  # the numpy reference: one vectorized select and update per round
        actions = np.empty((horizon, n_seeds), dtype=np.int64)
        runs = np.arange(n_seeds)
        # the per-round products are small: threaded BLAS only adds contention (10-50x slower on a busy machine)
        with threadpool_limits(limits=1, user_api="blas"):
            for t in range(horizon):
                ids_t = ids[t]
                contexts = env.support[ids_t]
                a = learner.select(contexts, context_ids=ids_t)
                learner.update(contexts, a, rewards[t, runs, a], context_ids=ids_t)
                actions[t] = a
    return actions
