"""Priv-FairX-LinUCB on dpfair.base's one release template.

``reset`` is ``_begin(_open(...))``: ``_open`` runs the template (every check, one charge, the warnings at the user's
line), ``_begin`` starts the rounds; ``simulate_federated`` runs each private learner's dry run, then its template.
The dry runs (``planned_charge()`` from the parameters, ``check_reset(...)`` with the run's sizes) say exactly
the ledger entry a reset then makes; a refused charge leaves the learner and the budget as they were.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfair.bandits import FederatedSyntheticEnvironment, FedFairXLinUCB, PrivFairXLinUCB, simulate_federated
from dpfair.base import PlannedCharge, PrivateMechanismMixin
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning, SeededNoiseWarning

L5 = math.sqrt(5)
HERE = __file__


def _entry(charge: PlannedCharge) -> tuple:
    return charge.label, charge.epsilon, charge.delta, charge.relation


def _ledger(budget: PrivacyBudget) -> list[tuple]:
    return [(e.label, e.epsilon, e.delta, e.relation) for e in budget.ledger]


def _quiet_reset(learner, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return learner.reset(*args, **kwargs)


@pytest.mark.parametrize("continual", ["sqrt", "tree", "honaker"])
@pytest.mark.parametrize("protocol", ["bounded-gap", "p-fcb", "log-det"])
def test_planned_charge_is_the_ledger_entry_reset_makes(continual, protocol):
    budget = PrivacyBudget(10.0, 0.5)
    learner = PrivFairXLinUCB(1.5, 0.05, L5, protocol, continual=continual, budget=budget, random_state=0)
    planned = learner.planned_charge()
    assert budget.ledger == () and planned.budget is budget
    _quiet_reset(learner, 6, 5, 60, n_agents=3, agent=0)
    assert _ledger(budget) == [_entry(planned)] == [("Priv-FairX-LinUCB agent 0", 1.5, 0.05, "replace")]
    assert (learner.privacy_spent_["epsilon"], learner.privacy_spent_["delta"]) == (planned.epsilon, planned.delta)


def test_check_reset_plans_the_papers_charge_that_the_parameters_alone_cannot():
    # Algorithm 2's formula at a large epsilon and delta: the accounted epsilon (which depends on the number of
    # releases and dim) is above the request, and the reported and charged epsilon is the larger
    budget = PrivacyBudget(math.inf, 0.99)
    learner = PrivFairXLinUCB(50.0, 0.9, L5, noise_calibration="paper", budget=budget, random_state=0)
    with pytest.raises(ValueError, match="check_reset"):
        learner.planned_charge()
    planned = learner.check_reset(6, 5, 60, n_agents=3, agent=2)
    assert planned.epsilon > 50.0 and planned.label == "Priv-FairX-LinUCB agent 2"  # a mutant charging 50 is caught
    assert budget.ledger == () and not hasattr(learner, "privacy_spent_")
    _quiet_reset(learner, 6, 5, 60, n_agents=3, agent=2)
    assert _ledger(budget) == [_entry(planned)]
    assert learner.privacy_spent_["epsilon"] == planned.epsilon == learner.privacy_spent_["epsilon_accounted"]


def test_epsilon_inf_warns_as_fed_fairx_and_is_charged_as_inf():
    """The exact sharing of Fed-FairX-LinUCB carries no guarantee: it warns, and a finite budget cannot pay for it."""
    learner = PrivFairXLinUCB(math.inf, 0.1, L5, random_state=0)
    assert _entry(learner.planned_charge()) == ("Priv-FairX-LinUCB agent 0", math.inf, 0.0, "replace")
    with pytest.warns(PrivacyLeakWarning, match=r"epsilon=inf: this agent shares exact statistics \(Fed-FairX-LinUCB\)"):
        learner.reset(6, 5, 50, n_agents=3)
    assert learner.privacy_spent_["epsilon"] == math.inf and learner.privacy_spent_["noise"] == "none"
    infinite = PrivacyBudget(math.inf, 0.5)
    _quiet_reset(learner.set_params(budget=infinite), 6, 5, 50, n_agents=3, agent=1)
    assert _ledger(infinite) == [("Priv-FairX-LinUCB agent 1", math.inf, 0.0, "replace")]
    finite = PrivacyBudget(100.0, 0.5)
    with pytest.raises(PrivacyBudgetExceededError):
        _quiet_reset(PrivFairXLinUCB(math.inf, 0.1, L5, budget=finite), 6, 5, 50, n_agents=3)
    assert finite.ledger == ()


def test_fed_fairx_linucb_is_not_a_release_and_warns_nothing():
    assert not isinstance(FedFairXLinUCB(), PrivateMechanismMixin)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        learner = FedFairXLinUCB().reset(6, 5, 30, n_agents=2)
    assert learner.privacy_spent_["epsilon"] == math.inf


def test_a_budget_that_cannot_pay_refuses_before_any_state_changes():
    budget = PrivacyBudget(3.0, 0.5)
    learner = PrivFairXLinUCB(2.0, 0.1, L5, budget=budget, random_state=0)
    _quiet_reset(learner, 6, 5, 40, n_agents=2, agent=0)
    x = np.full((6, 5), 0.4)
    learner.update(x, learner.select(x), 0.5)
    before = dict(vars(learner))
    ledger = budget.ledger
    with pytest.raises(PrivacyBudgetExceededError):
        _quiet_reset(learner, 6, 5, 80, n_agents=2, agent=1)  # another 2.0 does not fit in 3.0
    assert budget.ledger == ledger
    assert vars(learner).keys() == before.keys()
    assert all(vars(learner)[key] is value for key, value in before.items()), "a refused reset changed the learner"
    assert learner.t_ == 1 and learner.agent_ == 0 and learner.horizon_ == 40
    # a fresh learner keeps no fitted attribute, and the dry runs leave nothing on it either
    fresh = PrivFairXLinUCB(2.0, 0.1, L5, budget=budget, random_state=0)
    params = dict(vars(fresh))
    fresh.planned_charge()
    fresh.check_reset(6, 5, 40, n_agents=2)
    with pytest.raises(PrivacyBudgetExceededError):
        _quiet_reset(fresh, 6, 5, 40, n_agents=2)
    assert vars(fresh) == params and budget.ledger == ledger


def test_reset_runs_the_template_once_and_creates_the_privatizer_only_after_the_charge(monkeypatch):
    import dpfair.bandits.fairx.synchronization as synchronization

    events, release = [], PrivateMechanismMixin._release

    class RecordingBudget(PrivacyBudget):
        def spend(self, *args, **kwargs):
            events.append("charge")
            return super().spend(*args, **kwargs)

    def counting(self, *args, **kwargs):
        events.append("template")
        return release(self, *args, **kwargs)

    class RecordingPrivatizer(synchronization.Privatizer):
        def _setup(self, *args, **kwargs):  # the trees of the plan's calibration (no second calibration)
            events.append("privatizer")
            super()._setup(*args, **kwargs)

    monkeypatch.setattr(PrivateMechanismMixin, "_release", counting)
    monkeypatch.setattr(synchronization, "Privatizer", RecordingPrivatizer)
    _quiet_reset(PrivFairXLinUCB(2.0, 0.1, L5, budget=RecordingBudget(5.0, 0.5), random_state=0), 6, 5, 40, n_agents=2)
    assert events == ["template", "charge", "privatizer"]


def test_the_warnings_of_reset_point_at_the_callers_line():
    with pytest.warns(SeededNoiseWarning) as seeded:
        PrivFairXLinUCB(2.0, 0.1, L5, random_state=0).reset(6, 5, 40, n_agents=2)
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf") as exact:
        PrivFairXLinUCB(math.inf, 0.1, L5).reset(6, 5, 40, n_agents=2)
    with pytest.warns(UserWarning, match="n_agents=1") as alone:
        PrivFairXLinUCB(2.0, 0.1, L5).reset(6, 5, 40, n_agents=1)
    for caught in (seeded, exact, alone):
        assert caught.list and all(w.filename == HERE for w in caught.list), [(w.filename, w.lineno) for w in caught]
    assert str(seeded.list[0].message).startswith("Priv-FairX-LinUCB agent 0 draws seeded noise")  # names the agent


def test_the_warnings_of_simulate_federated_point_at_the_callers_line():
    env = FederatedSyntheticEnvironment(dim=2, n_actions=3)
    with pytest.warns(PrivacyLeakWarning) as caught:
        simulate_federated(env, {"s": PrivFairXLinUCB(2.0, 0.1, 2.0, random_state=1),
                                 "x": PrivFairXLinUCB(math.inf, 0.1, 2.0)}, 10, 2, [0])
    assert caught.list and all(w.filename == HERE for w in caught.list), [(w.filename, w.lineno) for w in caught]
    # each names the learner it is about
    assert any(str(w.message).startswith("learner 's' (Priv-FairX-LinUCB) draws seeded noise") for w in caught.list)
    assert any("learner 'x' shares exact statistics" in str(w.message) for w in caught.list)


def test_simulate_federated_dry_runs_every_learner_before_one_template_run_each(monkeypatch):
    # the simulator checks every learner (the public dry run check_reset) before any template runs; then each private
    # learner's template runs once and charges once; a shared budget that cannot pay for both runs no template at all
    events, release = [], PrivateMechanismMixin._release

    def counting(self, *args, **kwargs):
        events.append(("template", kwargs.get("name")))
        return release(self, *args, **kwargs)

    monkeypatch.setattr(PrivateMechanismMixin, "_release", counting)
    env = FederatedSyntheticEnvironment(dim=2, n_actions=3)
    budget = PrivacyBudget(3.0, 0.5)
    learners = {"a": PrivFairXLinUCB(2.0, 0.1, 2.0, budget=budget, random_state=0), "fed": FedFairXLinUCB(),
                "b": PrivFairXLinUCB(2.0, 0.1, 2.0, budget=budget, random_state=1)}
    with pytest.raises(PrivacyBudgetExceededError):
        _quiet_simulate(env, learners, 10, 2, [0])
    assert events == [] and budget.ledger == ()
    budget = PrivacyBudget(4.0, 0.5)
    learners = {name: (learner.set_params(budget=budget) if name != "fed" else learner)
                for name, learner in learners.items()}
    _quiet_simulate(env, learners, 10, 2, [0])
    assert events == [("template", "a"), ("template", "b")]
    assert _ledger(budget) == [("Priv-FairX-LinUCB a", 2.0, 0.1, "replace"), ("Priv-FairX-LinUCB b", 2.0, 0.1, "replace")]


def _quiet_simulate(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulate_federated(*args, **kwargs)


def test_agents_on_their_defaults_charge_once_each_with_secure_noise():
    # what a user runs: no random_state (secure noise, the square root), the default protocol, two agents on one
    # shared budget, driven per agent through real synchronizations; each agent's reset is one ledger entry, its
    # planned charge beforehand is that entry, nothing says "seeded", and a third agent is refused by the budget
    env = FederatedSyntheticEnvironment(dim=5, n_actions=6)
    budget = PrivacyBudget(4.0, 0.2)
    horizon, n_agents = 30, 2
    template = PrivFairXLinUCB(2.0, 0.1, L5, budget=budget)
    plans = [template.check_reset(6, 5, horizon, n_agents=n_agents, agent=i) for i in range(n_agents)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededNoiseWarning)  # secure noise: no seeded-noise warning anywhere
        agents = [PrivFairXLinUCB(2.0, 0.1, L5, budget=budget).reset(6, 5, horizon, n_agents=n_agents, agent=i)
                  for i in range(n_agents)]
        server = agents[0].make_server(5, horizon, n_agents)
        streams = [env.agent_stream(0, horizon, n_agents, i) for i in range(n_agents)]
        scheduled, synchronizations = server.next_round(0), 0
        for t in range(1, horizon + 1):
            for agent, stream in zip(agents, streams, strict=True):
                x = stream.contexts(t)
                a = agent.select(x)
                agent.update(x, int(a), stream.reward(t, int(a)))
            if t == scheduled:
                shared = server.aggregate({i: agent.local_statistics() for i, agent in enumerate(agents)})
                for agent in agents:
                    agent.receive_shared(*shared)
                scheduled, synchronizations = server.next_round(t), synchronizations + 1
    assert synchronizations >= 2
    assert _ledger(budget) == [_entry(plan) for plan in plans]
    assert [(e.epsilon, e.delta) for e in budget.ledger] == [(2.0, 0.1)] * n_agents
    assert all(agent.privacy_spent_["noise"] == "secure" for agent in agents)
    with pytest.raises(PrivacyBudgetExceededError):
        PrivFairXLinUCB(2.0, 0.1, L5, budget=budget).reset(6, 5, horizon, n_agents=3, agent=2)
    assert len(budget.ledger) == n_agents


def test_reset_checks_epsilon_once_and_calibrates_the_privatizer_once(monkeypatch):
    """The template checks epsilon and delta; the plan takes them as validated and calibrates once, and the
    agent's trees are made from that calibration (no second check, no second calibration)."""
    import dpfair.bandits.fairx._privatizer_calibration as calibration
    import dpfair.bandits.fairx.synchronization as synchronization
    import dpfair.base

    calls = []
    for module, name in ((dpfair.base, "check_epsilon"), (calibration, "_check_privacy"),
                         (synchronization, "_calibrate")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    learner = _quiet_reset(PrivFairXLinUCB(2.0, 0.1, L5, continual="sqrt", random_state=0), 6, 5, 40, n_agents=2)
    assert calls == ["check_epsilon", "_calibrate"]
    assert learner._online.sync.privatizer.calibration is learner._online.plan.calibration
    # continual="auto" (the default) calibrates the exact BLT once (the tree only where the exact BLT refuses)
    calls.clear()
    learner = _quiet_reset(PrivFairXLinUCB(2.0, 0.1, L5, random_state=0), 6, 5, 40, n_agents=2)
    assert calls == ["check_epsilon", "_calibrate"]
    assert learner._online.sync.privatizer.calibration is learner._online.plan.calibration
    assert learner._online.plan.continual == "blt-exact"
