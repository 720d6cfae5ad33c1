"""One online protocol: every FairX learner driven per agent, with the server between them, is the simulator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpfair.bandits import (
    FairXLinUCB,
    FederatedServer,
    FederatedSyntheticEnvironment,
    FedFairXLinUCB,
    PrivFairXLinUCB,
    simulate_federated,
)
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning

L5 = math.sqrt(5)
ENV = FederatedSyntheticEnvironment(dim=5, n_actions=6)


def _drive(learner, horizon, n_agents, seed):
    """Each agent on its own share of the streams, the server between them: the deployment's loop."""
    agents = [learner.__class__(**learner.get_params()).reset(6, 5, horizon, n_agents=n_agents, agent=i, run_id=seed)
              for i in range(n_agents)]
    streams = [ENV.agent_stream(seed, horizon, n_agents, i) for i in range(n_agents)]
    server = agents[0].make_server(5, horizon, n_agents) if hasattr(agents[0], "make_server") else None
    actions, fair = np.zeros((n_agents, horizon), dtype=np.int64), np.zeros((n_agents, horizon))
    scheduled = server.next_round(0) if server is not None else None
    for t in range(1, horizon + 1):
        for i, (agent, stream) in enumerate(zip(agents, streams, strict=True)):
            x = stream.contexts(t)
            actions[i, t - 1] = agent.select(x, uniform=stream.uniform(t))
            agent.update(x, int(actions[i, t - 1]), stream.reward(t, int(actions[i, t - 1])))
            fair[i, t - 1] = stream.fairness_terms(t, agent.policy_)[0]
        if server is None:
            continue
        due = any(a.synchronization_requested() for a in agents) if server.protocol == "log-det" else t == scheduled
        if due:
            shared = server.aggregate({i: a.local_statistics() for i, a in enumerate(agents)})
            for agent in agents:
                agent.receive_shared(*shared)
            scheduled = server.next_round(t)
    return agents, actions, np.cumsum(fair.mean(axis=0))


@pytest.mark.parametrize(
    "learner",
    [
        FairXLinUCB(),
        FedFairXLinUCB("bounded-gap"),
        FedFairXLinUCB("p-fcb"),
        FedFairXLinUCB("log-det", sync_threshold=2.0),
        PrivFairXLinUCB(2.0, 0.1, L5, "p-fcb", random_state=7),
        PrivFairXLinUCB(1.0, 0.1, L5, "bounded-gap", noise_calibration="paper", random_state=8),
    ],
    ids=["B0", "bounded-gap", "p-fcb", "log-det", "priv-p-fcb", "priv-paper"],
)
def test_per_agent_protocol_is_the_simulator(learner):
    horizon, m, seed = 150, 3, 2
    agents, actions, fair = _drive(learner, horizon, m, seed)
    reference = simulate_federated(ENV, {"x": learner}, horizon, m, [seed], record_actions=True)
    compiled = simulate_federated(ENV, {"x": learner}, horizon, m, [seed])
    np.testing.assert_array_equal(actions, reference.actions[0, 0])
    np.testing.assert_allclose(fair, compiled.fair_regret[0, 0], rtol=0, atol=1e-9)
    np.testing.assert_array_equal(compiled.communication_rounds, reference.communication_rounds)
    assert all(a.n_synchronizations_ == reference.communication_rounds[0, 0] for a in agents)
    assert agents[0].privacy_spent_ == reference.privacy_spent["x"]


def test_seeded_noise_of_an_agent_does_not_depend_on_its_batch():
    learner = PrivFairXLinUCB(2.0, 0.1, L5, "p-fcb", random_state=3)
    two = simulate_federated(ENV, {"a": learner}, 64, 2, [5, 6], record_actions=True)
    one = simulate_federated(ENV, {"a": learner}, 64, 2, [6], record_actions=True)
    np.testing.assert_array_equal(two.actions[0, 1], one.actions[0, 0])


def test_reset_charges_the_budget_once_after_validating():
    budget = PrivacyBudget(2.5, 0.2)
    agent = PrivFairXLinUCB(2.0, 0.1, L5, budget=budget, random_state=0)
    with pytest.raises(ValueError, match="agent=3 must be below n_agents=3"):
        agent.reset(6, 5, 100, n_agents=3, agent=3)
    assert budget.spent()[0] == 0.0
    agent.reset(6, 5, 100, n_agents=3, agent=0)
    assert budget.spent()[0] == pytest.approx(2.0)
    with pytest.raises(PrivacyBudgetExceededError):
        agent.reset(6, 5, 100, n_agents=3, agent=1)
    assert budget.spent()[0] == pytest.approx(2.0)
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf"):
        PrivFairXLinUCB(math.inf, 0.1, L5, random_state=0).reset(6, 5, 100, n_agents=3)


def test_protocol_misuse_is_refused_by_name():
    learner = FedFairXLinUCB()
    with pytest.raises(ValueError, match="call reset"):
        learner.select(np.zeros((6, 5)))
    learner.reset(6, 5, 3, n_agents=2)
    with pytest.raises(ValueError, match=r"contexts must have shape \(6, 5\)"):
        learner.select(np.zeros((5, 5)))
    with pytest.raises(ValueError, match="NaN"):
        learner.select(np.full((6, 5), np.nan))
    with pytest.raises(ValueError, match=r"uniform must be in \[0, 1\)"):
        learner.select(np.zeros((6, 5)), uniform=1.5)
    x = np.full((6, 5), 0.5)
    with pytest.raises(ValueError, match=r"action must be an integer in \[0, 6\)"):
        learner.update(x, 6, 1.0)
    with pytest.raises(ValueError, match="reward holds NaN"):
        learner.update(x, 0, float("nan"))
    learner.update(x, 0, 1.0)
    learner.local_statistics()
    with pytest.raises(ValueError, match="already called"):
        learner.local_statistics()
    with pytest.raises(ValueError, match=r"gram must have shape \(5, 5\)"):
        learner.receive_shared(np.eye(4), np.zeros(5))
    with pytest.raises(ValueError, match="context_bound"):
        PrivFairXLinUCB(2.0, 0.1, 1.0, random_state=0).reset(6, 5, 10, n_agents=2).select(np.ones((6, 5)))
    learner.reset(6, 5, 1)
    learner.update(x, 0, 1.0)
    with pytest.raises(ValueError, match="horizon T=1 is used up"):
        learner.select(x)


def test_server_keeps_each_agents_latest_release():
    server = FederatedServer(FedFairXLinUCB("p-fcb"), dim=2, horizon=16, n_agents=3)
    assert [server.next_round(t) for t in (0, 1, 2, 3, 8, 16)] == [1, 2, 4, 4, 16, None]
    first = server.aggregate({0: (2 * np.eye(2), np.ones(2)), 1: (3 * np.eye(2), np.ones(2)), 2: (np.eye(2), np.zeros(2))})
    np.testing.assert_array_equal(first[0], 6 * np.eye(2))
    later = server.aggregate({0: (5 * np.eye(2), np.ones(2))})  # agents 1 and 2 silent: their last releases stay
    np.testing.assert_array_equal(later[0], 9 * np.eye(2))
    with pytest.raises(ValueError, match=r"agents are integers in \[0, 3\)"):
        server.aggregate({3: (np.eye(2), np.zeros(2))})
    with pytest.raises(TypeError, match="FedFairXLinUCB or PrivFairXLinUCB"):
        FederatedServer(FairXLinUCB(), 2, 16, 3)
    assert FederatedServer(FedFairXLinUCB("log-det"), 2, 16, 3).next_round(0) is None


def test_an_online_agent_with_a_merit_that_fails_on_public_input_is_refused_before_its_charge():
    """Refused before spending: the per-agent learner probes a callable merit before it charges (as simulate_federated does)."""
    import math

    from dpfair.bandits import PrivFairXLinUCB
    from dpfair.privacy import PrivacyBudget

    budget = PrivacyBudget(math.inf, 0.5)
    agent = PrivFairXLinUCB(epsilon=2.0, delta=0.1, context_bound=1.5, merit=lambda mu: -mu, budget=budget)
    with pytest.raises(ValueError, match="nothing was charged"):
        agent.reset(n_actions=3, dim=2, horizon=20, n_agents=2, agent=0)
    assert budget.ledger == ()


def test_the_exp1_learner_pickles_under_100_kb_with_secure_noise_and_its_schedule_survives():
    # a Flower agent's context.state holds the pickled learner on every message; Exp 1's plan has a
    # (T + 1) bool schedule (T = 100,000), packed to bits in the pickle and restored exactly
    import pickle
    import warnings

    from dpfair.bandits import PrivFairXLinUCB

    learner = PrivFairXLinUCB(context_bound=5**0.5)  # defaults: secure noise, the square-root factorization
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner.reset(5, 5, 100_000, n_agents=10, agent=0)
    blob = pickle.dumps(learner)
    assert len(blob) < 100_000
    copy = pickle.loads(blob)
    np.testing.assert_array_equal(copy._online.plan.schedule, learner._online.plan.schedule)
    assert copy._online.plan.schedule.dtype == bool and copy._online.plan.schedule.any()


@pytest.mark.parametrize("learner_class", ["fed", "priv"])
def test_a_second_release_before_receive_carries_only_the_pairs_since_the_first(learner_class):
    """update, local_statistics, update, local_statistics with no receive_shared between (a server that missed a
    round): the second increment holds the second pair only.  Each pair is in exactly one increment handed to the
    PRIVATIZER (one pair in two increments would move the stream by up to twice the sensitivity it was calibrated
    for); the non-private sums count each pair once likewise."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = (FedFairXLinUCB() if learner_class == "fed"
                   else PrivFairXLinUCB(2.0, 0.1, math.sqrt(2), random_state=1))
        learner.reset(2, 2, 50, n_agents=2, agent=0)
        sync = learner._sync()
        increments = []
        if sync.privatizer is not None:
            release = sync.privatizer.release

            def recorded(gram, target, rows):
                increments.append((gram.copy(), target.copy()))
                return release(gram, target, rows)

            sync.privatizer.release = recorded
        contexts = np.array([[1.0, 0.0], [0.0, 1.0]])
        learner.update(contexts, 0, 1.0)
        first = learner.local_statistics()
        learner.update(contexts, 1, 0.5)
        second = learner.local_statistics()
    lam = sync.plan.core.regularization
    if learner_class == "fed":
        np.testing.assert_array_equal(first[0], lam * np.eye(2) + np.diag([1.0, 0.0]))
        np.testing.assert_array_equal(second[0], lam * np.eye(2) + np.eye(2))
        np.testing.assert_array_equal(second[1], [1.0, 0.5])
    else:
        assert len(increments) == 2
        np.testing.assert_array_equal(increments[0][0][0, 0], np.diag([1.0, 0.0]))
        np.testing.assert_array_equal(increments[1][0][0, 0], np.diag([0.0, 1.0]))
        np.testing.assert_array_equal(increments[1][1][0, 0], [0.0, 0.5])
