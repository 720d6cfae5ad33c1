"""The synchronizations of the compiled federated engine (inside the numba kernels) against the numpy reference."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpfair.bandits import (
    FairXLinUCB,
    FederatedSyntheticEnvironment,
    FedFairXLinUCB,
    PrivFairXLinUCB,
    simulate_federated,
)
from dpfair.bandits.fairx import _kernels as kernels
from dpfair.bandits.fairx import online
from dpfair.bandits.fairx import simulator as federated
from dpfair.bandits.fairx.privatizer import Privatizer
from dpfair.bandits.fairx.synchronization import _AgentSync, _ServerSync, _Sync

L5 = math.sqrt(5)


def _run(env, learners, horizon, n_agents, seeds, engine):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded-noise and n_agents = 1 warnings: not the subject here
        return simulate_federated(env, learners, horizon, n_agents, seeds, engine=engine, record_actions=True)


def _assert_same(compiled, reference) -> None:
    np.testing.assert_array_equal(compiled.actions, reference.actions)
    np.testing.assert_allclose(compiled.fair_regret, reference.fair_regret, rtol=0, atol=1e-9)
    np.testing.assert_allclose(compiled.reward_regret, reference.reward_regret, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(compiled.communication_rounds, reference.communication_rounds)
    assert compiled.privacy_spent == reference.privacy_spent


def _refuse_numpy_syncs(monkeypatch) -> None:
    """Make every numpy synchronization path fail: the compiled run must not reach any of them."""

    def refuse(*args, **kwargs):
        raise AssertionError("a synchronization went through numpy")

    for owner, name in ((_Sync, "check"), (_AgentSync, "release"), (_AgentSync, "receive"), (_ServerSync, "aggregate"),
                        (Privatizer, "release")):
        monkeypatch.setattr(owner, name, refuse)


@pytest.fixture
def kernel_calls(monkeypatch):
    """Count the calls of the kernel (each is one entry from Python)."""
    calls = []
    real = kernels.run_groups

    def spy(groups, *args):
        calls.append(len(groups))
        return real(groups, *args)

    monkeypatch.setattr(kernels, "run_groups", spy)
    monkeypatch.setattr(kernels, "threads", lambda: 1)
    return calls


def _every_protocol() -> dict:
    learners: dict = {"B0": FairXLinUCB()}
    for protocol in ("bounded-gap", "log-det", "p-fcb"):
        kw = {"sync_threshold": 2.0} if protocol == "log-det" else {}
        learners[f"Fed-{protocol}"] = FedFairXLinUCB(protocol, **kw)
        learners[f"Priv-{protocol}"] = PrivFairXLinUCB(2.0, 0.1, L5, protocol, random_state=0, **kw)
        learners[f"Priv-{protocol}-tree"] = PrivFairXLinUCB(2.0, 0.1, L5, protocol, continual="tree", random_state=1,
                                                            **kw)
    return learners


@pytest.mark.slow
def test_synchronizations_run_inside_the_kernels(monkeypatch, kernel_calls):
    env = FederatedSyntheticEnvironment(dim=5, n_actions=8)
    learners = _every_protocol()
    reference = _run(env, learners, 300, 3, [0, 1], "numpy")
    _refuse_numpy_syncs(monkeypatch)
    compiled = _run(env, learners, 300, 3, [0, 1], "compiled")
    _assert_same(compiled, reference)
    comms = dict(zip(compiled.learner_names, compiled.communication_rounds, strict=True))
    assert comms["Fed-bounded-gap"].min() == 300  # G = 1 here: a synchronization every round
    assert comms["Priv-log-det"].min() >= 3 and comms["Fed-log-det"].min() >= 3
    # two blocks of contexts (256 + 44 rounds): one kernel call per block (the noise is fetched before each block;
    # a log-det trigger within 1e-7 of its threshold would add one)
    assert len(kernel_calls) <= 3, kernel_calls


def test_small_noise_blocks_and_every_trigger_decided_in_python(monkeypatch, kernel_calls):
    # refills every 3 releases, and every log-det trigger sent to Python's exact decision: the same run
    env = FederatedSyntheticEnvironment(dim=4, n_actions=5, noise_std=0.3, random_state=2)
    learners = _every_protocol()
    reference = _run(env, learners, 120, 2, [4, 5], "numpy")
    monkeypatch.setattr(federated._NoiseFeed, "block_length", staticmethod(lambda rows, dim: 3))
    monkeypatch.setattr(kernels, "TRIGGER_MARGIN", 1e3)
    compiled = _run(env, learners, 120, 2, [4, 5], "compiled")
    _assert_same(compiled, reference)
    assert len(kernel_calls) > 120  # Python was entered for the decisions and the refills


def test_unkeyed_tree_is_fed_in_release_order(monkeypatch):
    # without tree keys (as with secure noise) a tree's nodes are drawn in release order: with a seeded source
    # the feed's draws are the numpy engine's, release by release (the schedules keep every tree in lock-step)
    monkeypatch.setattr(federated, "_keys", lambda plan, seeds, n_agents: None)
    env = FederatedSyntheticEnvironment(dim=3, n_actions=4)
    learners = {p: PrivFairXLinUCB(1.0, 0.1, math.sqrt(3), p, continual="tree", random_state=3)
                for p in ("bounded-gap", "p-fcb")}
    monkeypatch.setattr(federated._NoiseFeed, "block_length", staticmethod(lambda rows, dim: 7))
    _assert_same(_run(env, learners, 200, 2, [0, 1], "compiled"), _run(env, learners, 200, 2, [0, 1], "numpy"))


def test_generator_end_states_match():
    env = FederatedSyntheticEnvironment(dim=3, n_actions=4)
    results, states = [], []
    for engine in ("compiled", "numpy"):
        rng = np.random.default_rng(11)
        learners = {"P": PrivFairXLinUCB(2.0, 0.1, math.sqrt(3), "log-det", sync_threshold=1.0, random_state=rng),
                    "T": PrivFairXLinUCB(2.0, 0.1, math.sqrt(3), "bounded-gap", continual="tree", random_state=rng)}
        results.append(_run(env, learners, 150, 2, [0, 1], engine))
        states.append(rng.bit_generator.state)
    _assert_same(*results)
    assert states[0] == states[1]


def test_secure_noise_runs_compiled(monkeypatch):
    # secure noise cannot be compared with the numpy engine (fresh noise each run): it runs, and syncs in the kernels
    # (the factorization's table answers any release; the unkeyed tree is advanced release by release)
    _refuse_numpy_syncs(monkeypatch)
    env = FederatedSyntheticEnvironment(dim=3, n_actions=4)
    learners = {"sqrt": PrivFairXLinUCB(2.0, 0.1, math.sqrt(3), "bounded-gap"),
                "tree": PrivFairXLinUCB(2.0, 0.1, math.sqrt(3), "log-det", continual="tree", sync_threshold=1.0)}
    result = simulate_federated(env, learners, 300, 2, [0])
    assert np.isfinite(result.fair_regret).all()
    assert result.communication_rounds[0, 0] == 300 and result.communication_rounds[1, 0] >= 3
    assert result.privacy_spent["sqrt"]["noise"] == "secure"


def test_kernel_raises_the_reference_errors(monkeypatch):
    # a shift far below the release noise: V is not positive definite at the first synchronization, in both engines
    real = online._plan

    def negative_shift(*args, **kwargs):
        plan = real(*args, **kwargs)
        if plan.private:
            plan.shift = -1e6
        return plan

    monkeypatch.setattr(online, "_plan", negative_shift)  # every learner plans its run itself (its dry run, its release)
    env = FederatedSyntheticEnvironment(dim=3, n_actions=4)
    learners = {"P": PrivFairXLinUCB(2.0, 0.1, math.sqrt(3), "bounded-gap", random_state=0)}
    for engine in ("compiled", "numpy"):
        with pytest.raises(ValueError, match="synchronized Gram matrix is not positive definite"):
            _run(env, learners, 20, 2, [0], engine)


def test_cholesky_inverse_kernel():
    rng = np.random.default_rng(0)
    d = 6
    for _ in range(50):
        a = rng.normal(size=(d, d))
        matrix = a @ a.T + 0.1 * np.eye(d)
        chol, chol_inverse, inverse = np.zeros((d, d)), np.zeros((d, d)), np.zeros((d, d))
        assert kernels._cholesky_inverse(matrix, chol, chol_inverse, inverse)
        np.testing.assert_allclose(np.tril(chol), np.linalg.cholesky(matrix), rtol=0, atol=1e-12 * np.abs(matrix).max())
        np.testing.assert_allclose(inverse, np.linalg.inv(matrix), rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(inverse, inverse.T)
    assert not kernels._cholesky_inverse(-np.eye(d), chol, chol_inverse, inverse)


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    dim=st.integers(2, 4),
    n_actions=st.integers(2, 5),
    n_agents=st.integers(1, 3),
    protocol=st.sampled_from(["bounded-gap", "log-det", "p-fcb"]),
    kind=st.sampled_from(["fed", "sqrt", "honaker", "tree"]),
    threshold=st.floats(0.2, 5.0),
    seed=st.integers(0, 2**16),
)
@pytest.mark.slow
def test_engines_agree_on_random_small_problems(dim, n_actions, n_agents, protocol, kind, threshold, seed):
    env = FederatedSyntheticEnvironment(dim=dim, n_actions=n_actions, noise_std=0.2, random_state=seed)
    kw = {"sync_threshold": threshold} if protocol == "log-det" else {}
    if kind == "fed":
        learner = FedFairXLinUCB(protocol, **kw)
    else:
        learner = PrivFairXLinUCB(3.0, 0.1, math.sqrt(dim), protocol, continual=kind, random_state=seed, **kw)
    learners = {"B0": FairXLinUCB(radius=0.5), "L": learner}
    _assert_same(_run(env, learners, 60, n_agents, [seed], "compiled"), _run(env, learners, 60, n_agents, [seed], "numpy"))


def test_run_groups_lockstep_runs_the_pending_sync_of_a_group_waiting_at_the_block_end(monkeypatch):
    # run_groups' own control flow (its Python source, with the round, the trigger and the synchronization
    # recorded): a retry call where group 0 resumes at round 2 and stops again for Python, while group 1 already
    # played the block and waits at its end with a synchronization due -- which must still run
    calls = []

    def sync(group, t, *args):
        calls.append(("sync", group, t))
        return kernels.DONE

    def trigger(group, t, *args):
        calls.append(("trigger", group, t))
        return kernels.UNDECIDED

    def play(j, rows, *args):
        calls.append(("round", j, tuple(rows)))

    monkeypatch.setattr(kernels, "_sync_group", sync)
    monkeypatch.setattr(kernels, "_trigger", trigger)
    monkeypatch.setattr(kernels, "round_lanes", play)
    d, n_actions, n_agents, stop, t0 = 2, 3, 2, 6, 100
    rows = 2 * n_agents
    control = tuple(np.zeros(2, dtype=np.int64) for _ in range(6))  # synced, comms, progress, pending, decision, status
    control[2][:] = [2, stop]
    control[3][:] = [kernels.UNDECIDED, kernels.SYNC_DUE]
    control[4][:] = [1, 0]  # Python decided: group 0 synchronizes
    kernels.run_groups.py_func(
        np.array([0, 1]), stop, t0, 2, n_agents, 1, 1.0, 1e-7, (np.zeros((stop, 2, n_agents, n_actions, d)),),
        (np.zeros((rows, d, d)),), (None, None, None, np.zeros(rows)), None,
        tuple(np.zeros(rows) for _ in range(5)), None, np.array([2]), None, None, None, (np.zeros(1),), None, None,
        control, None, (np.zeros((rows, 2, d, d)), None),
    )
    assert calls == [("sync", 0, t0 + 2), ("round", 2, (0, 1)), ("trigger", 0, t0 + 3), ("sync", 1, t0 + stop)]
    np.testing.assert_array_equal(control[2], [3, stop])  # progress
    np.testing.assert_array_equal(control[3], [kernels.UNDECIDED, kernels.NO_SYNC])  # pending
    np.testing.assert_array_equal(control[5], [kernels.NEED_DECISION, kernels.DONE])  # status


@pytest.mark.parametrize(("continual", "random_state", "ahead"), [("sqrt", 0, True), ("sqrt", None, True),
                                                                   ("tree", 0, False)])
def test_noise_is_computed_ahead_only_from_keyed_tables(monkeypatch, continual, random_state, ahead):
    # another thread may grow a table that is a function of keys (seeded keys, secure PRF keys); a tree is advanced
    # in release order by the feed itself, never ahead
    seen = []
    real = federated._NoiseFeed.prefetch
    monkeypatch.setattr(federated._NoiseFeed, "prefetch", lambda self, upto: (seen.append(upto), real(self, upto)))
    env = FederatedSyntheticEnvironment(dim=3, n_actions=4)
    learner = PrivFairXLinUCB(2.0, 0.1, math.sqrt(3), "bounded-gap", continual=continual, random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = simulate_federated(env, {"P": learner}, 600, 2, [0])
    assert bool(seen) is ahead and seen == sorted(seen)
    assert result.communication_rounds[0, 0] > 0
