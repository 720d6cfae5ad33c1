"""Property tests of the federated fairness-of-exposure entry points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfair.bandits import (
    FairXLinUCB,
    FederatedSyntheticEnvironment,
    FedFairXLinUCB,
    PrivFairXLinUCB,
    communication_schedule,
    merit_policy,
    project_onto_ellipsoid,
    simulate_federated,
)

finite = st.floats(-50, 50, allow_nan=False)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**31), d=st.integers(1, 4), log_scale=st.floats(-2, 5), radius=st.floats(0, 5))
def test_projection_lands_inside_and_is_idempotent(seed, d, log_scale, radius):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    gram = A @ A.T * 10**log_scale + 1e-2 * np.eye(d)
    center = rng.normal(size=d)
    point = center + rng.normal(size=d) * 10
    proj = project_onto_ellipsoid(point, center, gram, radius)
    y = proj - center
    assert y @ gram @ y <= radius**2 * (1 + 1e-8) + 1e-12
    again = project_onto_ellipsoid(proj, center, gram, radius)
    np.testing.assert_allclose(again, proj, atol=1e-9 * (1 + np.abs(proj).max()))


@given(mu=st.lists(finite, min_size=1, max_size=8), scale=st.floats(0.01, 30))
def test_merit_policy_is_a_distribution_increasing_in_mu(mu, scale):
    pi = merit_policy(np.array(mu), merit_scale=scale)
    assert np.isfinite(pi).all() and abs(pi.sum() - 1) < 1e-12 and (pi >= 0).all()
    order = np.argsort(mu, kind="stable")
    assert np.all(np.diff(pi[order]) >= -1e-15)


@given(T=st.integers(1, 5000), m=st.integers(1, 60), d=st.integers(1, 10))
def test_schedules_are_increasing_within_horizon_and_gaps_bounded(T, m, d):
    rounds = communication_schedule("bounded-gap", T, m, d)
    assert rounds[0] == 1 and np.all(np.diff(rounds) > 0) and rounds[-1] <= T
    gap = max(1, math.ceil(T / (m * d * d * math.log1p(T / d) ** 2)))
    assert np.all(np.diff(rounds) <= gap)  # bounded gaps
    assert T - rounds[-1] < gap
    assert communication_schedule("p-fcb", T, m, d).tolist() == [2**k for k in range(T.bit_length())]


@pytest.mark.slow
@settings(max_examples=12)
@given(
    T=st.integers(1, 25),
    m=st.integers(1, 3),
    d=st.integers(1, 3),
    k=st.integers(1, 4),
    protocol=st.sampled_from(["bounded-gap", "log-det", "p-fcb"]),
    epsilon=st.sampled_from([0.5, 2.0, 50.0]),
)
def test_simulation_outputs_are_finite_and_shaped(T, m, d, k, protocol, epsilon):
    env = FederatedSyntheticEnvironment(dim=d, n_actions=k)
    learners = {
        "B0": FairXLinUCB(n_steps=2),
        "Fed": FedFairXLinUCB(protocol, n_steps=2),
        "Priv": PrivFairXLinUCB(epsilon, 0.1, math.sqrt(d), protocol, n_steps=2, random_state=0),
    }
    res = simulate_federated(env, learners, T, m, [0, 1])
    assert res.fair_regret.shape == res.reward_regret.shape == (3, 2, T)
    assert np.isfinite(res.fair_regret).all() and np.isfinite(res.reward_regret).all()
    per_round = np.diff(res.fair_regret, axis=-1, prepend=0.0)
    assert (per_round >= -1e-12).all() and (per_round <= 2 + 1e-12).all()
    assert res.communication_rounds.shape == (3, 2) and (res.communication_rounds[0] == 0).all()


@given(bad=st.one_of(st.just(0), st.just(-1), st.just(1.5), st.just("3"), st.none()))
def test_bad_horizon_raises_value_or_type_error(bad):
    try:
        simulate_federated(FederatedSyntheticEnvironment(), {"F": FairXLinUCB()}, bad, 1, [0])
    except (ValueError, TypeError):
        return
    raise AssertionError("a bad horizon was accepted")
