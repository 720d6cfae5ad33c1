"""Property test (hypothesis): the compiled GMF engine equals the numpy reference on random small problems.

``tests/bandits/gmf/test_compiled_gmf.py`` compares ``simulate(engine="compiled")`` with ``engine="numpy"`` on two
fixed environments and seeds; here hypothesis draws the problem -- groups (the arms: one candidate per group
each round), dimension, population, continuous or discrete contexts (discrete ones repeat records and tie the
optimistic scores and the ranks across groups, and make the compiled projection factored), horizon, stream
seeds and the policy: OFUL, Fair-Greedy (split history or not) or Private-Fair-Greedy at a finite or an
infinite epsilon, with each continual release -- and the two engines must give the same actions, the same
regrets (to the fixed-seed test's ``1e-9``) and the same ``privacy_spent``.  A spy on
:meth:`dpfair.bandits.BanditPolicy.play_compiled` proves the compiled rounds ran (no silent fallback to numpy).
Derandomized (the same examples on every run), as ``tests/bandits/fairx/test_compiled_fairx_sync.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from dpfair.bandits import (
    OFUL,
    BanditPolicy,
    CensusHiringEnvironment,
    FairGreedy,
    PrivateFairGreedy,
    SyntheticGroupEnvironment,
    simulate,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")

ATOL = 1e-9  # the tolerance of tests/bandits/gmf/test_compiled_gmf.py


def _discrete_environment(n_groups: int, n_features: int, population: int, seed: int) -> CensusHiringEnvironment:
    """A census-like table of few integer levels: repeated records and equal contexts in different groups."""
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({f"f{j}": rng.integers(0, 3, size=population) for j in range(n_features)})
    table["group"] = rng.integers(0, n_groups, size=population)
    table["target"] = table[[f"f{j}" for j in range(n_features)]].to_numpy() @ rng.normal(size=n_features) \
        + rng.normal(0.0, 0.3, size=population)
    return CensusHiringEnvironment(table, "group", [f"f{j}" for j in range(n_features)], "target", n_groups=n_groups,
                                   noise_std=0.1, random_state=seed)


def _policy(kind: str, env, epsilon: float, continual: str, split_history: bool, seed: int) -> BanditPolicy:
    if kind == "OFUL":
        return OFUL(noise_std=env.noise_std, theta_norm_bound=float(np.linalg.norm(env.theta)), random_state=seed)
    if kind == "Fair-Greedy":
        return FairGreedy(split_history=split_history, random_state=seed)
    # seeded noise (random_state): secure noise is drawn by OpenDP in the numpy rounds, never compiled
    return PrivateFairGreedy(epsilon, 0.1, reward_bound=env.reward_bound, split_history=split_history,
                             continual=continual, random_state=seed)




def _assert_engines_agree(compiled_runs, env, kind, epsilon, continual, split_history, horizon, seeds, seed):
    compiled_runs.clear()  # the fixture is shared by the examples of one test call
    policies = {kind: _policy(kind, env, epsilon, continual, split_history, seed)}
    compiled = simulate(env, policies, horizon, seeds)
    assert compiled_runs == [type(policies[kind]).__name__], "the compiled rounds did not run"
    reference = simulate(env, policies, horizon, seeds, engine="numpy")
    assert len(compiled_runs) == 1  # the reference ran the numpy rounds
    assert compiled.policy_names == reference.policy_names
    np.testing.assert_array_equal(compiled.selections, reference.selections)
    np.testing.assert_allclose(compiled.fair_regret, reference.fair_regret, rtol=0, atol=ATOL)
    np.testing.assert_allclose(compiled.regret, reference.regret, rtol=0, atol=ATOL)
    assert compiled.privacy_spent == reference.privacy_spent


_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
_POLICIES = {
    "kind": st.sampled_from(["OFUL", "Fair-Greedy", "Private-Fair-Greedy"]),
    "epsilon": st.one_of(st.just(math.inf), st.floats(0.5, 30.0)),
    "continual": st.sampled_from(["auto", "tree", "sqrt", "honaker"]),
    "split_history": st.booleans(),
}
_STREAMS = {"horizon": st.integers(1, 120), "seeds": st.lists(st.integers(0, 2**16), min_size=1, max_size=3, unique=True),
            "seed": st.integers(0, 2**16)}


@pytest.mark.slow
@_SETTINGS
@given(n_groups=st.integers(2, 4), dim=st.integers(1, 5), population=st.integers(40, 200), **_POLICIES, **_STREAMS)
def test_engines_agree_on_random_small_problems(compiled_runs, n_groups, dim, population, kind, epsilon, continual,
                                               split_history, horizon, seeds, seed):
    """Continuous contexts (``SyntheticGroupEnvironment``): no two support rows tie."""
    env = SyntheticGroupEnvironment(n_groups=n_groups, dim=dim, population_size=population, random_state=seed)
    _assert_engines_agree(compiled_runs, env, kind, epsilon, continual, split_history, horizon, seeds, seed)


@pytest.mark.slow
@settings(_SETTINGS, phases=[Phase.explicit, Phase.generate])  # no shrinking: the explicit example first
@example(n_groups=2, dim=5, population=151, kind="Fair-Greedy", epsilon=math.inf, continual="auto", split_history=True,
         horizon=52, seeds=[0, 1], seed=1)
@given(n_groups=st.integers(2, 4), dim=st.integers(1, 5), population=st.integers(40, 200), **_POLICIES, **_STREAMS)
def test_engines_agree_on_random_discrete_problems(compiled_runs, n_groups, dim, population, kind, epsilon, continual,
                                                  split_history, horizon, seeds, seed):
    """Discrete contexts: repeated records, projections tied across rows and groups, ranks tied.

    The explicit example: distinct rows whose projections tie in exact arithmetic (theta_hat has
    equal coordinates) were ordered by the last bits of each engine's rounding until the rank comparisons
    got their tolerance (``dpfair.bandits._ranks.RANK_RTOL``).
    """
    env = _discrete_environment(n_groups, dim, population, seed)
    _assert_engines_agree(compiled_runs, env, kind, epsilon, continual, split_history, horizon, seeds, seed)
