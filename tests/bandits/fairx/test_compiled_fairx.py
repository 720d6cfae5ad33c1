"""The compiled engine of simulate_federated (numba kernels) against the numpy reference."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfair.bandits import (
    FairXLinUCB,
    FederatedSyntheticEnvironment,
    FedFairXLinUCB,
    PrivFairXLinUCB,
    project_onto_ellipsoid,
    simulate_federated,
)
from dpfair.bandits.fairx import _kernels as kernels

L5 = math.sqrt(5)
PROTOCOLS = ("bounded-gap", "log-det", "p-fcb")


def _learners() -> dict:
    """Every learner kind, protocol and radius; the log-det threshold is low enough to fire often."""
    learners: dict = {"B0": FairXLinUCB(), "B0-const": FairXLinUCB(radius=1.0)}
    for protocol in PROTOCOLS:
        kw = {"sync_threshold": 3.0} if protocol == "log-det" else {}
        learners[f"Fed-{protocol}"] = FedFairXLinUCB(protocol, **kw)
        learners[f"Fed-{protocol}-const"] = FedFairXLinUCB(protocol, radius=0.5, **kw)
        learners[f"Priv-{protocol}"] = PrivFairXLinUCB(2.0, 0.1, L5, protocol, random_state=0, **kw)
        learners[f"Priv-{protocol}-const"] = PrivFairXLinUCB(2.0, 0.1, L5, protocol, radius=1.0, random_state=0, **kw)
        learners[f"Priv-{protocol}-tree"] = PrivFairXLinUCB(2.0, 0.1, L5, protocol, continual="tree", random_state=1, **kw)
    # a second batch (other ascent steps and ridge weight), run beside the first
    learners["Fed-other-batch"] = FedFairXLinUCB("log-det", n_steps=3, step_size=0.3, regularization=2.0,
                                                 merit_scale=5.0, sync_threshold=1.0)
    return learners


def _both(env, learners, horizon, n_agents, seeds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # n_agents = 1 private learners warn; not the subject here
        compiled = simulate_federated(env, learners, horizon, n_agents, seeds, engine="compiled", record_actions=True)
        reference = simulate_federated(env, learners, horizon, n_agents, seeds, engine="numpy", record_actions=True)
    return compiled, reference


def _assert_agree(compiled, reference) -> None:
    np.testing.assert_array_equal(compiled.actions, reference.actions)
    np.testing.assert_allclose(compiled.fair_regret, reference.fair_regret, rtol=0, atol=1e-9)
    np.testing.assert_allclose(compiled.reward_regret, reference.reward_regret, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(compiled.communication_rounds, reference.communication_rounds)
    assert compiled.privacy_spent == reference.privacy_spent
    assert compiled.learner_names == reference.learner_names


@pytest.mark.slow
@pytest.mark.parametrize("n_agents", [1, 3])
def test_compiled_agrees_with_numpy_for_every_learner_and_protocol(n_agents):
    env = FederatedSyntheticEnvironment(dim=5, n_actions=10)
    learners = _learners()
    compiled, reference = _both(env, learners, 300, n_agents, [0, 1, 2])
    _assert_agree(compiled, reference)
    comms = dict(zip(compiled.learner_names, compiled.communication_rounds, strict=True))
    assert comms["B0"].max() == 0
    assert comms["Fed-log-det"].min() >= 3  # the trigger fired, more than once
    assert comms["Priv-log-det"].min() >= 3
    assert comms["Fed-p-fcb"].min() == 9  # 1, 2, 4, ..., 256
    assert np.isfinite(compiled.fair_regret).all() and (compiled.fair_regret[:, :, -1] > 0).all()


@pytest.mark.slow
def test_compiled_agrees_across_blocks_and_other_shapes():
    # more than one 256-round context block, d = 3, K = 4, one learner per kind
    env = FederatedSyntheticEnvironment(dim=3, n_actions=4, noise_std=0.3, random_state=7)
    learners = {
        "B0": FairXLinUCB(radius=0.8),
        "Fed": FedFairXLinUCB("bounded-gap"),
        "FedL": FedFairXLinUCB("log-det", radius=1.0),  # default threshold: rarely fires
        "Priv": PrivFairXLinUCB(1.0, 0.1, math.sqrt(3), "log-det", sync_threshold=2.0, random_state=0),
    }
    compiled, reference = _both(env, learners, 600, 2, [5, 11])
    _assert_agree(compiled, reference)


def test_compiled_is_batch_independent_and_one_agent_fed_is_fairx():
    env = FederatedSyntheticEnvironment(dim=5, n_actions=6)
    learners = {"B0": FairXLinUCB(), "Fed": FedFairXLinUCB("log-det", sync_threshold=0.5)}
    both = simulate_federated(env, learners, 300, 1, [3, 4])
    alone = simulate_federated(env, {"B0": FairXLinUCB()}, 300, 1, [3, 4])
    assert both.communication_rounds[1].min() > 0
    np.testing.assert_array_equal(both.fair_regret[0], both.fair_regret[1])
    np.testing.assert_array_equal(alone.fair_regret[0], both.fair_regret[0])


def test_callable_merit_falls_back_to_numpy(monkeypatch):
    env = FederatedSyntheticEnvironment(dim=5, n_actions=6)
    learners = {"c": FairXLinUCB(merit=lambda mu: np.exp(10.0 * mu)), "f": FedFairXLinUCB(merit=lambda mu: 1.0 + mu * mu)}
    reference = simulate_federated(env, learners, 80, 2, [0], engine="numpy")

    def refuse(*args, **kwargs):
        raise AssertionError("a callable merit reached the compiled kernels")

    monkeypatch.setattr(kernels, "run", refuse)
    compiled = simulate_federated(env, learners, 80, 2, [0], engine="compiled")
    np.testing.assert_array_equal(compiled.fair_regret, reference.fair_regret)
    np.testing.assert_array_equal(compiled.reward_regret, reference.reward_regret)
    np.testing.assert_array_equal(compiled.communication_rounds, reference.communication_rounds)


def test_engine_is_validated():
    env = FederatedSyntheticEnvironment()
    with pytest.raises(ValueError, match="engine must be one of"):
        simulate_federated(env, {"B0": FairXLinUCB()}, 10, 1, [0], engine="cuda")


# ------------------------------------------------------------------ the kernels themselves
def test_kernel_projection_matches_project_onto_ellipsoid():
    rng = np.random.default_rng(0)
    n, d = 400, 5
    a = rng.normal(size=(n, d, d))
    gram = a @ np.swapaxes(a, -1, -2) + 0.05 * np.eye(d)
    gram[:40] = 2.0 * np.eye(d)  # repeated eigenvalues
    spread = np.exp(rng.uniform(-3, 4, size=(n, 1)))
    q = np.linalg.qr(a[40:80])[0]
    gram[40:80] = np.einsum("nij,nj,nkj->nik", q, spread[40:80] * np.arange(1, d + 1), q)  # ill-conditioned
    center = rng.normal(size=(n, d))
    points = center + rng.normal(size=(n, d)) * np.exp(rng.uniform(-4, 3, size=(n, 1)))
    radius = np.exp(rng.uniform(-3, 2, size=n))
    radius[:10] = 0.0
    ours = kernels.project_rows(points, center, gram, radius)
    reference = project_onto_ellipsoid(points, center, gram, radius)
    scale = 1.0 + np.abs(points).max(axis=1, keepdims=True)
    np.testing.assert_allclose(ours / scale, reference / scale, rtol=0, atol=1e-12)
    # inside points come back unchanged, outside ones land on the boundary
    y = ours - center
    norm = np.sqrt(np.einsum("ni,nij,nj->n", y, gram, y))
    z = points - center
    inside = np.einsum("ni,nij,nj->n", z, gram, z) <= radius**2
    assert inside.any() and (~inside).any()
    np.testing.assert_array_equal(ours[inside], points[inside])
    np.testing.assert_allclose(norm[~inside], radius[~inside], rtol=1e-9, atol=1e-12)


def test_rows_split_between_threads_give_identical_results(monkeypatch):
    env = FederatedSyntheticEnvironment(dim=4, n_actions=5)
    learners = {
        "B0": FairXLinUCB(),
        "FedL": FedFairXLinUCB("log-det", sync_threshold=2.0),
        "Priv": PrivFairXLinUCB(2.0, 0.1, 2.0, "p-fcb", random_state=0),
    }
    monkeypatch.setattr(kernels, "threads", lambda: 1)
    one = simulate_federated(env, learners, 300, 2, [0, 1])
    monkeypatch.setattr(kernels, "threads", lambda: 3)
    monkeypatch.setattr(kernels, "_PARALLEL_WORK", 0)
    three = simulate_federated(env, learners, 300, 2, [0, 1])
    np.testing.assert_array_equal(one.fair_regret, three.fair_regret)
    np.testing.assert_array_equal(one.reward_regret, three.reward_regret)
    np.testing.assert_array_equal(one.communication_rounds, three.communication_rounds)


def test_kernels_compile_without_a_writable_cache(monkeypatch):
    # a read-only install with no writable user cache: numba refuses cache=True when decorating
    from dpfair.bandits import _numba

    real = _numba.numba.njit
    used = []

    def njit(*args, cache=False, **kwargs):
        if cache:
            raise RuntimeError("cannot cache function 'f': no locator available for file 'x.py'")
        used.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(_numba.numba, "njit", njit)

    def add_one(x):
        return x + 1.0

    assert _numba.jit()(add_one)(1.0) == 2.0
    assert used and used[0]["nogil"]
