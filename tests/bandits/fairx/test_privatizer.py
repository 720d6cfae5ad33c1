"""The PRIVATIZER's calibration (tight and paper), its noise draws and its inputs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfair.bandits import FederatedSyntheticEnvironment, PrivFairXLinUCB, simulate_federated
from dpfair.bandits.fairx.privatizer import (
    Privatizer,
    calibrate_privatizer,
    privatizer_depth,
    privatizer_node_variance,
)
from dpfair.privacy import PrivacyBudget, SecureNoise, SeededNoiseWarning, zcdp_delta, zcdp_to_approx_dp

L5 = math.sqrt(5.0)


def test_exp1_setting_tight_and_paper_numbers():
    tau = 20_002  # bounded-gap releases at T = 100,000, m = 10, d = 5
    tight = calibrate_privatizer(2.0, 0.1, L5, 5, tau)
    paper = calibrate_privatizer(2.0, 0.1, L5, 5, tau, noise_calibration="paper")
    n = privatizer_depth(tau)
    assert (n, tight.levels_used, tight.nodes_per_release) == (16, 15, 14)
    # the paper's formula, exactly (Algorithm 2, line 6)
    assert paper.node_variance == pytest.approx(16 * n * (5 + 1) ** 2 * math.log(2 / 0.1) ** 2 / 2.0**2, rel=1e-14)
    assert paper.node_variance == privatizer_node_variance(2.0, 0.1, L5, n)
    assert tight.epsilon_accounted == pytest.approx(2.0, abs=1e-9) and tight.delta_accounted == 0.1
    assert paper.epsilon_accounted < 0.1 and paper.delta_accounted < 1e-5
    assert paper.node_sigma / tight.node_sigma == pytest.approx(6.97, abs=0.01)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 5.0, 10.0])
@pytest.mark.parametrize(("delta", "tau", "dim", "reward_bound"), [(0.1, 20_002, 5, 1.0), (1e-5, 17, 3, 2.0), (0.01, 1, 1, 1.0)])
def test_tight_calibration_spends_exactly_the_request(epsilon, delta, tau, dim, reward_bound):
    cal = calibrate_privatizer(epsilon, delta, L5, dim, tau, reward_bound=reward_bound)
    assert cal.epsilon_accounted == pytest.approx(epsilon, abs=1e-9)
    # rho recomputed from sigma and the sensitivity, then the sampler's share of delta
    rho = tau.bit_length() * cal.sensitivity**2 / (4 * cal.node_sigma**2)
    assert rho == pytest.approx(cal.rho, rel=1e-12)
    assert zcdp_delta(rho, epsilon) + cal.delta_sampler <= delta * (1 + 1e-12)
    assert zcdp_to_approx_dp(rho * 1.001, delta - cal.delta_sampler) > epsilon  # no slack left
    assert cal.delta_sampler <= 0.01 * delta * (1 + 1e-9)
    paper = calibrate_privatizer(epsilon, delta, L5, dim, tau, reward_bound=reward_bound, noise_calibration="paper")
    assert cal.node_sigma < paper.node_sigma


def test_privatizer_draws_distinct_entries_in_one_call_per_release():
    calls = []

    class Counting(SecureNoise):
        def random_words(self, shape):
            calls.append(shape)
            return super().random_words(shape)

    priv = Privatizer(1.0, 0.1, 1.0, 3, 8, (2000, 3), random_state=Counting())
    priv.advance()
    assert calls == [(6000, 10)]  # (d+1)(d+2)/2 = 10 entries of every tree of the batch, one call
    H, h = priv.noise()
    sigma = priv.node_sigma
    np.testing.assert_array_equal(H, np.swapaxes(H, -1, -2))
    assert np.all(H / priv.granularity == np.rint(H / priv.granularity))
    assert np.var(H[..., 0, 1]) == pytest.approx(sigma**2, rel=0.06)
    assert np.var(H[..., 2, 2]) == pytest.approx(2 * sigma**2, rel=0.06)
    assert np.var(h[..., 1]) == pytest.approx(sigma**2, rel=0.06)
    priv.advance(np.array([True, False, True]))
    assert calls[-1] == (4000, 10)


def test_release_rounds_to_the_grid_and_refuses_bad_input():
    priv = Privatizer(2.0, 0.1, 1.0, 2, 4, (3,), random_state=0)
    gram = np.tile(np.array([[0.3, 0.1], [0.1, 0.7]]), (3, 1, 1))
    target = np.full((3, 2), 0.123456789)
    g_hat, t_hat = priv.release(gram, target)
    g = priv.granularity
    assert np.all(g_hat / g == np.rint(g_hat / g)) and np.all(t_hat / g == np.rint(t_hat / g))
    np.testing.assert_allclose(t_hat - priv.noise()[1], target, atol=g / 2)
    g_hat, t_hat = priv.release(gram, target, np.array([True, False, True]))  # the second tree keeps its release
    np.testing.assert_array_equal(priv.count, [2, 1, 2])
    np.testing.assert_allclose(t_hat - priv.noise()[1], target * np.array([[2], [1], [2]]), atol=g)
    with pytest.raises(ValueError, match="gram_increment"):
        priv.release(np.full((3, 2, 2), np.nan), target)
    with pytest.raises(ValueError, match=r"gram_increment must have shape \(3, 2, 2\)"):
        priv.release(gram[:2], target)
    with pytest.raises(ValueError, match="target_increment must have shape"):
        priv.release(gram, target[:, :1])
    with pytest.raises(ValueError, match="2\\*\\*62 grid steps"):
        priv.release(gram * 2.0**70, target)
    with pytest.raises(ValueError, match="mask of shape"):
        priv.advance(np.array([True, False]))
    with pytest.raises(TypeError, match="mask must be a boolean"):
        priv.advance(np.array([1, 0, 1]))
    with pytest.raises(ValueError, match="context_bound=1e\\+200 is too large"):
        Privatizer(1.0, 0.1, 1e200, 2, 4, (1,))
    with pytest.raises(ValueError, match="noise_calibration"):
        calibrate_privatizer(1.0, 0.1, 1.0, 2, 4, noise_calibration="loose")
    with pytest.raises(ValueError, match="batch_shape"):
        Privatizer(1.0, 0.1, 1.0, 2, 4, (2**40,))


def _env():
    return FederatedSyntheticEnvironment(dim=5, n_actions=4, noise_std=0.1)


def test_tight_learner_charges_exactly_its_request_and_reports_both_calibrations():
    budget = PrivacyBudget(2.0, 0.1)  # exactly the request: the tight learner must fit in it
    learners = {
        "tight": PrivFairXLinUCB(2.0, 0.1, L5, budget=budget, random_state=0, radius=1.0),
        "paper": PrivFairXLinUCB(2.0, 0.1, L5, noise_calibration="paper", random_state=1, radius=1.0),
    }
    res = simulate_federated(_env(), learners, horizon=60, n_agents=3, seeds=[0])
    tight, paper = res.privacy_spent["tight"], res.privacy_spent["paper"]
    assert (tight["epsilon"], tight["delta"]) == (2.0, 0.1)
    assert tight["noise_calibration"] == "tight" and tight["epsilon_accounted"] == pytest.approx(2.0, abs=1e-9)
    assert paper["noise_calibration"] == "paper" and paper["epsilon_accounted"] < 2.0 == paper["epsilon"]
    assert paper["node_sigma"] > tight["node_sigma"]
    assert budget.remaining()[0] == pytest.approx(0.0, abs=1e-12)


def test_tight_beats_paper_on_the_same_streams():
    kw = {"radius": 1.0}
    learners = {
        "tight": PrivFairXLinUCB(2.0, 0.1, L5, random_state=0, **kw),
        "paper": PrivFairXLinUCB(2.0, 0.1, L5, noise_calibration="paper", random_state=0, **kw),
    }
    res = simulate_federated(FederatedSyntheticEnvironment(), learners, horizon=1500, n_agents=10, seeds=[0, 1])
    final = res.final("fair_regret")["mean"]
    assert final["tight"] < 0.8 * final["paper"]


def test_one_agent_says_what_it_protects():
    learner = PrivFairXLinUCB(2.0, 0.1, L5, random_state=0, radius=1.0)
    with pytest.warns(UserWarning, match="n_agents=1"):
        res = simulate_federated(_env(), {"Priv": learner}, horizon=20, n_agents=1, seeds=[0])
    assert "no other agent" in res.privacy_spent["Priv"]["protects"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", SeededNoiseWarning)  # (seeded on purpose: said once, tested elsewhere)
        simulate_federated(_env(), {"Priv": learner}, horizon=20, n_agents=2, seeds=[0])


def test_large_epsilon_switches_secure_noise_to_the_exact_sampler():
    cal = calibrate_privatizer(20.0, 0.1, L5, 5, 20_002)
    assert cal.sampler == "exact" and cal.delta_sampler == 0.0
    assert cal.epsilon_accounted == pytest.approx(20.0, abs=1e-9)
    priv = Privatizer(20.0, 0.1, L5, 5, 20_002, (2, 3))  # secure: OpenDP's exact discrete Gaussian
    priv.advance()
    H, h = priv.noise()
    g = priv.granularity
    assert np.all(H / g == np.rint(H / g)) and np.all(np.isfinite(h)) and np.abs(H).max() > 0
    seeded = Privatizer(20.0, 0.1, L5, 5, 20_002, (2, 3), random_state=0)  # seeded: the lattice table
    seeded.advance()
    assert seeded.calibration == priv.calibration


def test_default_secure_lattice_noise_is_in_one_call_and_unpredictable():
    a = Privatizer(2.0, 0.1, L5, 5, 100, (4,))
    b = Privatizer(2.0, 0.1, L5, 5, 100, (4,))
    a.advance()
    b.advance()
    assert a.calibration.sampler == "lattice" and not np.array_equal(a.noise()[0], b.noise()[0])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"epsilon": 1.7e308}, "epsilon"), ({"epsilon": 1e-300}, "epsilon"), ({"context_bound": 1e-300}, "context_bound"),
     ({"reward_bound": 1e-300}, "reward_bound"), ({"context_bound": 1e200}, "context_bound")],
)
@pytest.mark.parametrize("calibration", ["tight", "paper"])
def test_extreme_privacy_inputs_are_refused_by_name(kwargs, name, calibration):
    args = {"epsilon": 2.0, "delta": 0.1, "context_bound": 1.0, "dim": 5, "n_releases": 10, **kwargs}
    reward = args.pop("reward_bound", 1.0)
    with pytest.raises(ValueError, match=name):
        calibrate_privatizer(**args, reward_bound=reward, noise_calibration=calibration)


def test_a_horizon_beyond_exact_running_sums_is_refused_before_the_charge():
    budget = PrivacyBudget(10.0, 0.5)
    learner = PrivFairXLinUCB(2.0, 0.1, 1.0, "log-det", budget=budget, random_state=0)
    with pytest.raises(ValueError, match=r"horizon=.* is too long for the PRIVATIZER's exact running sums"):
        learner.reset(2, 1, 2**61, n_agents=2)
    assert budget.spent() == (0.0, 0.0)
