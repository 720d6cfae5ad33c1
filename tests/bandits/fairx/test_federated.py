"""Fed-FairX-LinUCB, Priv-FairX-LinUCB, FairX-LinUCB and the communication baselines (Exp 1-4 of the federated paper)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfair.bandits import (
    FairXLinUCB,
    FederatedSyntheticEnvironment,
    FedFairXLinUCB,
    Privatizer,
    PrivFairXLinUCB,
    RidgeState,
    communication_schedule,
    confidence_radius,
    optimistic_parameter,
    privatizer_depth,
    privatizer_node_variance,
    project_onto_ellipsoid,
    simulate_federated,
)
from dpfair.bandits.fairx.merit_policy import _policy
from dpfair.bandits.fairx.synchronization import _plan as plan_options
from dpfair.bandits.fairx.synchronization import _Sync
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning, audit_epsilon

L5 = math.sqrt(5)


def _plan(name, learner, horizon, n_agents, dim):
    """The learner's plan of one run, as its reset plans it (a private learner: its template's step 1)."""
    if isinstance(learner, PrivFairXLinUCB):
        return learner._validate_all(1, dim, horizon, n_agents=n_agents, name=name)[1].plan
    return plan_options(name, learner._run_options(), horizon, n_agents, dim)


def _env() -> FederatedSyntheticEnvironment:
    return FederatedSyntheticEnvironment(dim=5, n_actions=6)


# ------------------------------------------------------------------ exact reductions
@pytest.mark.parametrize("protocol", ["bounded-gap", "log-det", "p-fcb"])
def test_one_agent_fed_equals_fairx_exactly(protocol):
    learners = {"B0": FairXLinUCB(), "Fed": FedFairXLinUCB(protocol, sync_threshold=0.5)}
    res = simulate_federated(_env(), learners, horizon=300, n_agents=1, seeds=[3, 4])
    assert res.communication_rounds[1].min() > 0  # Fed did synchronize
    np.testing.assert_array_equal(res.fair_regret[0], res.fair_regret[1])
    np.testing.assert_array_equal(res.reward_regret[0], res.reward_regret[1])
    # run separately (different batch): still identical
    alone = simulate_federated(_env(), {"B0": FairXLinUCB()}, horizon=300, n_agents=1, seeds=[3, 4])
    np.testing.assert_array_equal(alone.fair_regret[0], res.fair_regret[1])


@pytest.mark.parametrize("protocol", ["bounded-gap", "p-fcb", "log-det"])
def test_infinite_epsilon_priv_equals_fed_exactly(protocol):
    learners = {
        "Fed": FedFairXLinUCB(protocol, sync_threshold=20.0),
        "Priv": PrivFairXLinUCB(math.inf, 0.1, L5, protocol, sync_threshold=20.0, random_state=0),
    }
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf"):
        res = simulate_federated(_env(), learners, horizon=200, n_agents=3, seeds=[0, 1])
    np.testing.assert_array_equal(res.fair_regret[0], res.fair_regret[1])
    np.testing.assert_array_equal(res.communication_rounds[0], res.communication_rounds[1])
    assert math.isinf(res.privacy_spent["Priv"]["epsilon"])


def test_federation_differs_from_independent_agents():
    res = simulate_federated(_env(), {"B0": FairXLinUCB(), "Fed": FedFairXLinUCB()}, horizon=100, n_agents=3, seeds=[0])
    assert not np.array_equal(res.fair_regret[0], res.fair_regret[1])


# ------------------------------------------------------------------ protocols
def test_bounded_gap_schedule_hand_computed():
    # T = 10,000, m = 2, d = 2: G = ceil(10000 / (2 * 4 * ln(5001)^2)) = ceil(17.23) = 18
    rounds = communication_schedule("bounded-gap", 10_000, 2, 2)
    assert rounds[:9].tolist() == [1, 2, 4, 8, 16, 32, 50, 68, 86]
    assert np.all(np.diff(rounds[6:]) == 18) and rounds[-1] <= 10_000 < rounds[-1] + 18
    # G = 1 (T small against m d^2 log^2): every round
    assert communication_schedule("bounded-gap", 100, 2, 2).tolist() == list(range(1, 101))
    assert communication_schedule("p-fcb", 100, 2, 2).tolist() == [1, 2, 4, 8, 16, 32, 64]


def test_simulated_sync_counts_match_the_schedules():
    env = FederatedSyntheticEnvironment(dim=2, n_actions=3)
    learners = {"a": FedFairXLinUCB("bounded-gap", n_steps=1), "b": FedFairXLinUCB("p-fcb", n_steps=1)}
    res = simulate_federated(env, learners, horizon=600, n_agents=40, seeds=[0])
    # G = ceil(600 / (40 * 4 * ln(301)^2)) = 1: every round; powers of two up to 512: 10
    assert res.communication_rounds[:, 0].tolist() == [600, 10]
    assert len(communication_schedule("bounded-gap", 600, 40, 2)) == 600


def test_log_det_trigger_hand_computed():
    # d = 1, lambda = 1, one agent observing x = 1 every round: V_t = 1 + t.
    # Sync when (t - t_last) ln((1 + t) / (1 + t_last)) > D = 1: at t = 2, 4, 7, 11.
    learner = FedFairXLinUCB("log-det", sync_threshold=1.0)
    plan = _plan("B1", learner, horizon=12, n_agents=1, dim=1)
    sync = _Sync(plan, 0, n_seeds=1, n_agents=1, dim=1)
    ridge = RidgeState(1, batch_shape=(1, 1, 1), regularization=1.0)
    synced = []
    for t in range(1, 13):
        x = np.ones((1, 1, 1, 1))
        ridge.update(x, np.zeros((1, 1, 1)))
        before = sync.comms.copy()
        sync.after_round(t, x[0], np.zeros((1, 1)), ridge)
        if sync.comms[0] > before[0]:
            synced.append(t)
    assert synced == [2, 4, 7, 11]


# ------------------------------------------------------------------ privatizer
def test_privatizer_node_variance_formula_and_draws():
    eps, delta, L, tau = 2.0, 0.1, 1.5, 37
    n = privatizer_depth(tau)
    assert n == 1 + math.ceil(math.log2(tau)) == 7
    expected = 16 * n * (L**2 + 1) ** 2 * math.log(2 / delta) ** 2 / eps**2
    assert privatizer_node_variance(eps, delta, L, n) == pytest.approx(expected, rel=1e-14)
    priv = Privatizer(eps, delta, L, 3, tau, (4000,), noise_calibration="paper", random_state=1)
    assert priv.node_variance == pytest.approx(expected, rel=1e-14)
    priv.advance()  # release 1: one leaf node
    H, h = priv.noise()
    # N = (N_hat + N_hat^T) / sqrt(2): off-diagonal variance sigma^2, diagonal 2 sigma^2
    np.testing.assert_allclose(H, np.swapaxes(H, -1, -2))
    assert np.var(H[:, 0, 1]) == pytest.approx(expected, rel=0.08)
    assert np.var(H[:, 1, 1]) == pytest.approx(2 * expected, rel=0.08)
    assert np.var(h[:, 0]) == pytest.approx(expected, rel=0.08)
    priv.advance()  # release 2 = node of level 1 alone
    priv.advance()  # release 3 = level-1 node + a new leaf: variance doubles
    assert np.var(priv.noise()[1][:, 0]) == pytest.approx(2 * expected, rel=0.08)
    assert privatizer_node_variance(math.inf, delta, L, n) == 0.0


def test_privatizer_refuses_more_releases_than_planned():
    priv = Privatizer(1.0, 0.1, 1.0, 2, 2, (1,), random_state=0)
    priv.advance()
    priv.advance()
    with pytest.raises(ValueError, match="n_releases"):
        priv.advance()


def _released_target(priv_cls, sigma_factor=1.0, epsilon=12.0, delta=0.1, calibration="paper"):
    # one agent, one communication round holding one pair (x, y) in d = 1; output: s_hat = x y + h
    def mechanism(data, size, rng):
        x, y = data
        priv = priv_cls(epsilon, delta, 1.0, 1, 1, (size,), noise_calibration=calibration, random_state=rng)
        priv.node_sigma *= sigma_factor
        priv.advance()
        return x * y + priv.noise()[1][:, 0]

    return mechanism


@pytest.mark.parametrize(("epsilon", "delta", "calibration"), [(12.0, 0.1, "paper"), (1.0, 0.01, "tight")])
def test_privatizer_audit_passes_and_catches_half_noise(epsilon, delta, calibration):
    priv = Privatizer(epsilon, delta, 1.0, 1, 1, (1,), noise_calibration=calibration, random_state=0)
    audit_delta = 0.01
    claimed = priv.accounted_epsilon(audit_delta)
    if calibration == "tight":
        assert claimed == pytest.approx(epsilon, abs=1e-9)
    a, b = (1.0, 1.0), (-1.0, 1.0)  # |x y - x' y'| = 2 = L^2 + B^2
    kw = {"epsilon": epsilon, "delta": delta, "calibration": calibration}
    honest = audit_epsilon(_released_target(Privatizer, **kw), a, b, n_samples=100_000, delta=audit_delta, random_state=0)
    assert honest.epsilon_lower_bound <= claimed
    mutant = audit_epsilon(_released_target(Privatizer, 0.5, **kw), a, b, n_samples=100_000, delta=audit_delta,
                           random_state=0)
    assert mutant.epsilon_lower_bound > claimed


def test_priv_reports_and_charges_accounted_privacy():
    budget = PrivacyBudget(5.0, 0.5)
    learner = PrivFairXLinUCB(2.0, 0.1, L5, budget=budget, random_state=0, radius=1.0)
    res = simulate_federated(_env(), {"Priv": learner}, horizon=40, n_agents=2, seeds=[0])
    spent = res.privacy_spent["Priv"]
    assert spent["epsilon"] == 2.0 and spent["delta"] == 0.1
    assert 0.0 <= spent["epsilon_accounted"] <= 2.0 and spent["rho"] > 0
    assert budget.spent() == pytest.approx((2.0, 0.1))
    assert np.isfinite(res.fair_regret).all()


# ------------------------------------------------------------------ optimistic parameter
def test_projection_is_exact_and_inside():
    rng = np.random.default_rng(0)
    d = 4
    A = rng.normal(size=(50, d, d))
    gram = A @ np.swapaxes(A, 1, 2) * 10 ** rng.uniform(-1, 4, size=(50, 1, 1)) + 0.1 * np.eye(d)
    center = rng.normal(size=(50, d))
    radius = rng.uniform(0.1, 3.0, size=50)
    points = center + rng.normal(size=(50, d)) * rng.uniform(0.01, 50, size=(50, 1))
    proj = project_onto_ellipsoid(points, center, gram, radius)
    y = proj - center
    norm = np.sqrt(np.einsum("ni,nij,nj->n", y, gram, y))
    assert np.all(norm <= radius * (1 + 1e-9))
    # KKT: an outside point's projection lies on the boundary with p - y parallel to V (y - c)
    outside = np.einsum("ni,nij,nj->n", points - center, gram, points - center) > radius**2
    assert outside.sum() > 10
    np.testing.assert_allclose(norm[outside], radius[outside], rtol=1e-9)
    normal = np.einsum("nij,nj->ni", gram, y)[outside]
    diff = (points - proj)[outside]
    cos = (normal * diff).sum(-1) / np.linalg.norm(normal, axis=-1) / np.linalg.norm(diff, axis=-1)
    np.testing.assert_allclose(cos, 1.0, atol=1e-8)
    # no nearer boundary point: compare with many random points of the ellipsoid
    k = np.nonzero(outside)[0][0]
    w, q = np.linalg.eigh(gram[k])
    u = rng.normal(size=(20000, d))
    u = u / np.linalg.norm(u, axis=1, keepdims=True) * rng.uniform(0, 1, size=(20000, 1)) ** (1 / d)
    cand = center[k] + radius[k] * (u / np.sqrt(w)) @ q.T
    assert np.min(((cand - points[k]) ** 2).sum(-1)) >= ((proj[k] - points[k]) ** 2).sum() - 1e-10


def test_gradient_ascent_stays_inside_and_matches_brute_force():
    rng = np.random.default_rng(3)
    d, K = 2, 3
    contexts = rng.uniform(size=(K, d))
    gram = np.array([[3.0, 1.0], [1.0, 2.0]])
    center = np.array([0.3, 0.2])
    radius = 0.4

    def objective(theta):
        mu = theta @ contexts.T
        pi = _policy(mu, "exponential", 10.0)[0]
        return (pi * mu).sum(-1)

    theta = optimistic_parameter(contexts, center, gram, radius, n_steps=300, step_size=0.02)
    y = theta - center
    assert y @ gram @ y <= radius**2 * (1 + 1e-9)
    # brute force over a polar grid of the ellipsoid
    w, q = np.linalg.eigh(gram)
    rr, aa = np.meshgrid(np.linspace(0, 1, 400), np.linspace(0, 2 * np.pi, 1441))
    u = np.stack([rr.ravel() * np.cos(aa.ravel()), rr.ravel() * np.sin(aa.ravel())], axis=1)
    grid = center + radius * (u / np.sqrt(w)) @ q.T
    values = objective(grid)
    best = grid[np.argmax(values)]
    assert objective(theta[None])[0] >= values.max() - 1e-6
    np.testing.assert_allclose(theta, best, atol=5e-3)
    # every iterate stays inside, for any number of steps
    for steps in (1, 2, 5, 20):
        th = optimistic_parameter(contexts, center, gram, radius, n_steps=steps, step_size=1.0)
        yy = th - center
        assert yy @ gram @ yy <= radius**2 * (1 + 1e-9)
    np.testing.assert_array_equal(optimistic_parameter(contexts, center, gram, radius, n_steps=0), center)


# ------------------------------------------------------------------ learning
def test_fairness_regret_per_round_shrinks():
    env = FederatedSyntheticEnvironment(dim=3, n_actions=4, noise_std=0.1)
    res = simulate_federated(env, {"Fed": FedFairXLinUCB(radius=0.5)}, horizon=1500, n_agents=4, seeds=[0, 1])
    per_round = np.diff(res.fair_regret[0], axis=-1, prepend=0.0).mean(axis=0)
    assert per_round[-300:].mean() < 0.5 * per_round[:300].mean()
    assert res.fair_regret.shape == (1, 2, 1500) and res.reward_regret.shape == (1, 2, 1500)


def test_theory_radius_matches_confidence_radius():
    # the simulator's non-private theory radius is dpfair.bandits.confidence_radius
    plan = _plan("x", FairXLinUCB(noise_std=0.2, theta_norm_bound=0.7, confidence_delta=0.05), 10, 1, 3)
    c = plan.core
    logdet = 3 * math.log(2.5)
    ours = c.noise_std * math.sqrt(2 * math.log(1 / c.confidence_delta) + logdet - 0.0) + c.theta_norm_bound
    ref = confidence_radius(logdet, dim=3, regularization=1.0, noise_std=0.2, theta_norm_bound=0.7, delta=0.05)
    assert ours == pytest.approx(float(ref))


# ------------------------------------------------------------------ errors
def test_bad_input_raises_clear_errors():
    env = _env()
    with pytest.raises(ValueError, match="context_bound is required"):
        simulate_federated(env, {"P": PrivFairXLinUCB(1.0, 0.1)}, 10, 2, [0])
    # a declared bound below the documented sqrt(dim) is refused up front, before any budget is charged
    with pytest.raises(ValueError, match=r"context_bound=1\.0 is below the environment's documented bound"):
        simulate_federated(env, {"P": PrivFairXLinUCB(1.0, 0.1, 1.0, random_state=0)}, 10, 2, [0])
    with pytest.raises(ValueError, match="protocol must be one of"):
        simulate_federated(env, {"F": FedFairXLinUCB("every-round")}, 10, 2, [0])
    with pytest.raises(ValueError, match="epsilon"):
        simulate_federated(env, {"P": PrivFairXLinUCB(-1.0, 0.1, L5)}, 10, 2, [0])
    with pytest.raises(ValueError, match="delta"):
        simulate_federated(env, {"P": PrivFairXLinUCB(1.0, 0.0, L5)}, 10, 2, [0])
    with pytest.raises(ValueError, match="merit must be"):
        simulate_federated(env, {"F": FairXLinUCB(merit="linear")}, 10, 2, [0])
    with pytest.raises(ValueError, match="radius"):
        simulate_federated(env, {"F": FairXLinUCB(radius=-1.0)}, 10, 2, [0])
    with pytest.raises(TypeError, match="learners"):
        simulate_federated(env, {"F": object()}, 10, 2, [0])
    with pytest.raises(ValueError, match="seeds"):
        simulate_federated(env, {"F": FairXLinUCB()}, 10, 2, [])
    with pytest.raises(ValueError, match="n_agents"):
        simulate_federated(env, {"F": FairXLinUCB()}, 10, 0, [0])
    with pytest.raises(ValueError, match="n_actions"):
        simulate_federated(FederatedSyntheticEnvironment(n_actions=0), {"F": FairXLinUCB()}, 10, 1, [0])
    with pytest.raises(ValueError, match="merit"):
        bad = FairXLinUCB(merit=lambda mu: mu - 10.0)  # not positive
        simulate_federated(env, {"F": bad}, 5, 1, [0])


def test_callable_merit_matches_exponential():
    env = _env()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = simulate_federated(env, {"e": FairXLinUCB()}, 60, 2, [0])
        b = simulate_federated(env, {"c": FairXLinUCB(merit=lambda mu: np.exp(10.0 * mu))}, 60, 2, [0])
    np.testing.assert_allclose(a.fair_regret, b.fair_regret, rtol=1e-5, atol=1e-8)


# ------------------------------------------ refused after spending: a bad merit is refused before any charge
def _two_private_learners(budget, merit, random_state=0):
    return {"p1": PrivFairXLinUCB(2.0, 0.1, L5, budget=budget, random_state=random_state),
            "p2": PrivFairXLinUCB(2.0, 0.1, L5, budget=budget, random_state=random_state, merit=merit)}


@pytest.mark.parametrize("random_state", [0, None])
def test_a_merit_that_fails_on_the_public_probe_is_refused_before_any_charge(random_state):
    """Before: the first learner's (2, 0.1) and the second's were charged, then merit raised in round 1."""
    budget = PrivacyBudget(10.0, 0.5)
    learners = _two_private_learners(budget, lambda mu: -np.ones_like(mu), random_state)
    with pytest.raises(ValueError, match=r"learners\['p2'\]\.merit") as caught, warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        simulate_federated(_env(), learners, 20, 2, [0])
    assert "nothing was charged" in str(caught.value)
    assert budget.ledger == (), f"charged {budget.spent()} before refusing"


def test_a_merit_that_fails_on_the_public_probe_charges_no_default_ledger():
    from dpfair.privacy import set_default_budget

    ledger = PrivacyBudget(math.inf, 0.5)
    previous = set_default_budget(ledger)
    try:
        learners = _two_private_learners(None, lambda mu: np.full(np.shape(mu), np.nan), random_state=None)
        with pytest.raises(ValueError, match="merit"):
            simulate_federated(_env(), learners, 20, 2, [0])
    finally:
        set_default_budget(previous)
    assert ledger.ledger == ()


def test_a_merit_that_fails_only_during_the_run_is_a_handled_outcome():
    """What no probe can catch (the merit of the learners' own estimates) is reported, never raised after the charge."""

    class FailsLater:
        def __init__(self):
            self.calls = 0

        def __call__(self, mu):
            self.calls += 1
            return np.exp(10.0 * mu) if self.calls < 40 else np.zeros_like(mu)

    budget = PrivacyBudget(10.0, 0.5)
    learners = _two_private_learners(budget, FailsLater(), random_state=None)
    with pytest.warns(UserWarning, match=r"learners \['p2'\].*merit"), warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        result = simulate_federated(_env(), learners, 20, 2, [0])
    assert result.failed == {"p2": {"code": "invalid_merit", "argument": "merit"}}
    assert len(budget.ledger) == 2  # the charges stand: the noise was drawn
    assert np.isfinite(result.fair_regret[0]).all() and np.isnan(result.fair_regret[1]).all()
    assert (result.communication_rounds[1] == -1).all() and (result.communication_rounds[0] > 0).all()


def test_privacy_spent_says_what_each_federated_learner_shares_and_whether_its_noise_is_seeded():
    """Seeded noise says so, and Fed-FairX-LinUCB, which shares exact statistics, says epsilon = inf."""
    from dpfair.privacy import SeededNoiseWarning

    learners = {"B0": FairXLinUCB(), "Fed": FedFairXLinUCB(),
                "seeded": PrivFairXLinUCB(2.0, 0.1, L5, random_state=0), "secure": PrivFairXLinUCB(2.0, 0.1, L5)}
    with pytest.warns(SeededNoiseWarning, match="'seeded'") as record:
        res = simulate_federated(_env(), learners, 20, 2, [0])
    assert sum(issubclass(w.category, SeededNoiseWarning) for w in record) == 1  # the seeded learner only
    spent = res.privacy_spent
    assert spent["B0"]["epsilon"] == 0.0  # learns alone: sends nothing
    assert math.isinf(spent["Fed"]["epsilon"]) and "exact statistics" in spent["Fed"]["protects"]
    assert spent["seeded"]["noise"] == "seeded" and spent["secure"]["noise"] == "secure"
