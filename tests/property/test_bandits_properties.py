"""Property tests of the group meritocratic bandit entry points: valid input runs, bad input raises by name."""

import math
import warnings

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dpfair.bandits import OFUL, FairGreedy, GroupEnvironment, PrivateFairGreedy, RandomPolicy, simulate
from dpfair.privacy import PrivacyLeakWarning

finite = st.floats(-3, 3, allow_nan=False)


@st.composite
def environments(draw):
    k = draw(st.integers(2, 4))
    d = draw(st.integers(1, 3))
    pops = [np.array(draw(st.lists(st.lists(finite, min_size=d, max_size=d), min_size=1, max_size=6))) for _ in range(k)]
    theta = np.array(draw(st.lists(finite, min_size=d, max_size=d)))
    return GroupEnvironment(pops, theta, noise_std=draw(st.floats(0, 1)))


@given(env=environments(), horizon=st.integers(1, 12), seeds=st.lists(st.integers(0, 50), min_size=1, max_size=3),
       epsilon=st.one_of(st.just(math.inf), st.floats(0.1, 50)))
def test_simulate_any_environment(env, horizon, seeds, epsilon):
    bound_x = max(env.context_bound, 1e-3)
    policies = {
        "oful": OFUL(), "fg": FairGreedy(split_history=horizon % 2 == 0), "r": RandomPolicy(),
        "pfg": PrivateFairGreedy(epsilon, 0.1, context_bound=bound_x, reward_bound=env.reward_bound + 1e-9),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        result = simulate(env, policies, horizon, seeds)
    assert result.fair_regret.shape == (4, len(seeds), horizon)
    assert np.isfinite(result.fair_regret).all() and np.isfinite(result.regret).all()
    assert (result.fair_regret >= -1e-12).all() and (result.fair_regret[..., -1] <= horizon).all()
    assert (result.selections.sum(axis=-1) == horizon).all()


@given(contexts=st.lists(st.lists(st.one_of(finite, st.just(math.nan), st.just(math.inf)), min_size=2, max_size=2),
                         min_size=1, max_size=4),
       reward=st.one_of(finite, st.just(math.nan), st.floats(5, 1e6)))
def test_private_policy_refuses_bad_rounds_by_name(contexts, reward):
    x = np.array(contexts)
    pfg = PrivateFairGreedy(1.0, 0.1, context_bound=2.0, reward_bound=4.0, random_state=0).reset(3, 2, 5)
    ok_shape = x.shape == (3, 2)
    ok = ok_shape and np.isfinite(x).all() and (np.linalg.norm(x, axis=1) <= 2.0).all() and abs(reward) <= 4.0
    try:
        pfg.update(x, 0, reward)
    except ValueError as exc:
        assert not ok
        assert any(word in str(exc) for word in ("contexts", "context_bound", "reward", "NaN"))
    else:
        assert ok and pfg.t_ == 1
