"""The vectorized simulator of group meritocratic online selection.

:func:`simulate` pre-samples one :class:`~dpfair.bandits.Episode` per seed (contexts and reward noise),
then runs each policy on all seeds at once: one policy object with ``n_runs = len(seeds)``
independent learners, one vectorized step per round.  Every policy sees the same candidates and the
same reward noise for a given seed (a paired comparison).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from dpfair._validation import check_int
from dpfair.bandits.environments import GroupEnvironment
from dpfair.bandits.metrics import cumulative_fair_regret, cumulative_regret
from dpfair.bandits.policies import BanditPolicy
from dpfair.bandits.results import BanditResult

__all__ = ["simulate"]


def simulate(
    env: GroupEnvironment,
    policies: Mapping[str, BanditPolicy],
    horizon: int,
    seeds: Sequence[int],
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

    Returns
    -------
    BanditResult
        ``fair_regret`` and ``regret`` of shape ``(n_policies, n_seeds, horizon)`` (cumulative),
        ``selections`` of shape ``(n_policies, n_seeds, n_groups)``, and each policy's privacy spent.

    Raises
    ------
    TypeError, ValueError
        For an invalid environment, policy, horizon or seed list.
    """
    if not isinstance(env, GroupEnvironment):
        raise TypeError(f"env must be a dpfair.bandits GroupEnvironment, got {type(env).__name__}.")
    if not isinstance(policies, Mapping) or not policies:
        raise ValueError("policies must be a non-empty mapping of name -> policy, e.g. {'OFUL': OFUL()}.")
    for name, policy in policies.items():
        if not isinstance(name, str) or not isinstance(policy, BanditPolicy):
            raise TypeError(f"policies must map str names to BanditPolicy objects; got {name!r}: {type(policy).__name__}.")
    horizon = check_int(horizon, "horizon", minimum=1)
    if isinstance(seeds, numbers.Integral) or not isinstance(seeds, Sequence) or len(seeds) == 0:
        raise ValueError("seeds must be a non-empty sequence of non-negative ints, e.g. seeds=range(10).")
    seeds = tuple(check_int(s, "seeds", minimum=0) for s in seeds)
    episodes = [env.sample(horizon, s) for s in seeds]
    ids = np.stack([e.context_ids for e in episodes], axis=1)  # (T, S, K)
    rewards = np.stack([e.rewards for e in episodes], axis=1)
    means = np.stack([e.mean_rewards for e in episodes], axis=1)
    ranks = np.stack([e.relative_ranks for e in episodes], axis=1)
    n_seeds, runs = len(seeds), np.arange(len(seeds))
    fair, regret, selections, spent = [], [], [], {}
    for index, (name, policy) in enumerate(policies.items()):
        learner = clone(policy)
        if "random_state" in learner.get_params() and learner.random_state is None:
            learner.set_params(random_state=np.random.default_rng([*seeds, 0xB4D17, index]))
        learner.reset(env.n_groups, env.dim, horizon, n_runs=n_seeds, support=env.support,
                      support_groups=env.support_group)
        actions = np.empty((horizon, n_seeds), dtype=np.int64)
        # the per-round products are small: threaded BLAS only adds contention (10-50x slower on a busy machine)
        with threadpool_limits(limits=1, user_api="blas"):
            for t in range(horizon):
                ids_t = ids[t]
                contexts = env.support[ids_t]
                a = learner.select(contexts, context_ids=ids_t)
                learner.update(contexts, a, rewards[t, runs, a], context_ids=ids_t)
                actions[t] = a
        fair.append(cumulative_fair_regret(ranks, actions).T)
        regret.append(cumulative_regret(means, actions).T)
        selections.append(np.stack([np.bincount(actions[:, s], minlength=env.n_groups) for s in range(n_seeds)]))
        spent[name] = {"epsilon": learner.privacy_spent_["epsilon"], "delta": learner.privacy_spent_["delta"]}
    return BanditResult(
        seeds=seeds, privacy_spent=spent, policy_names=tuple(policies), fair_regret=np.stack(fair),
        regret=np.stack(regret), selections=np.stack(selections),
    )
