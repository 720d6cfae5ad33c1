"""Bad input to every public ``dpfair.bandits`` entry point: a clear error naming the argument (and the fix),
no budget spent on a refused call, never NaN out.

The first tests pin one finding each of the bad-input sweep; the parametrized table at the end sweeps
every public entry point; the hypothesis tests (derandomized: fixed examples) sweep extreme numbers.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

from dpfair.bandits import (
    OFUL,
    CensusHiringEnvironment,
    FairGreedy,
    FairXLinUCB,
    FederatedSyntheticEnvironment,
    FedFairXLinUCB,
    GroupEnvironment,
    PrivateFairGreedy,
    PrivFairXLinUCB,
    RandomPolicy,
    RidgeState,
    SyntheticGroupEnvironment,
    communication_schedule,
    confidence_radius,
    cumulative_fair_regret,
    cumulative_regret,
    mean_and_standard_error,
    merit_policy,
    rank_noise_std,
    simulate,
    simulate_federated,
)
from dpfair.bandits.fairx.schedules import bounded_gap
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning", "ignore::UserWarning")

HUGE = 2**64  # a size no machine can hold


@pytest.fixture(scope="module")
def env():
    return SyntheticGroupEnvironment(n_groups=3, dim=2, population_size=30, random_state=0)


def _pfg(budget=None, **kwargs):
    kwargs.setdefault("reward_bound", 2.0)
    return PrivateFairGreedy(1.0, 0.05, budget=budget, random_state=0, **kwargs)


def _unspent(budget):
    return budget.spent() == (0.0, 0.0) and not budget.ledger


# ------------------------------------------------------------------ simulate: refuse before charging
def test_simulate_refuses_an_invalid_second_policy_before_charging_the_first(env):
    budget = PrivacyBudget(1.0, 0.1)
    with pytest.raises(ValueError, match=r"policies\['b'\]: delta must"):
        simulate(env, {"a": _pfg(budget), "b": OFUL(delta=2.0)}, 5, [0])
    assert _unspent(budget)


def test_simulate_refuses_a_declared_context_bound_below_the_documented_one(env):
    budget = PrivacyBudget(1.0, 0.1)
    with pytest.raises(ValueError, match=r"context_bound=0.5 is below the environment's documented bound "
                                         r"env.context_norm_bound=1.0"):
        simulate(env, {"a": _pfg(budget, context_bound=0.5)}, 5, [0])
    assert _unspent(budget)
    with pytest.raises(ValueError, match=r"policies\['a'\]: reward_bound=1.0 is below .*env.reward_bound"):
        simulate(env, {"a": _pfg(budget, reward_bound=1.0)}, 5, [0])
    assert _unspent(budget)


def test_check_reset_is_reset_without_the_charge(env):
    """The public dry run: what reset would charge (None for a policy that charges nothing), nothing touched."""
    sizes = (env.n_groups, env.dim, 20)
    kwargs = {"n_runs": 2, "support": env.support, "support_groups": env.support_group}
    assert OFUL().check_reset(*sizes, **kwargs) is None and FairGreedy().check_reset(*sizes, **kwargs) is None
    budget = PrivacyBudget(5.0, 0.5)
    policy = _pfg(budget)
    planned = policy.check_reset(*sizes, **kwargs, environment_bounds=(env.context_norm_bound, env.reward_bound))
    assert _unspent(budget) and not hasattr(policy, "t_")
    policy.reset(*sizes, **kwargs)
    (entry,) = budget.ledger
    assert (entry.label, entry.epsilon, entry.delta) == (planned.label, planned.epsilon, planned.delta)
    with pytest.raises(ValueError, match=r"reward_bound=0.5 is below the environment's documented bound"):
        _pfg(reward_bound=0.5).check_reset(*sizes, environment_bounds=(1.0, 1.0))
    with pytest.raises(ValueError, match="n_groups"):
        OFUL().check_reset(1, env.dim, 20)


def test_private_fair_greedy_checks_epsilon_once_per_reset(env, monkeypatch):
    """The release template checks epsilon and delta; the policy's own steps take them as validated."""
    import dpfair.bandits.gmf.private_fair_greedy as module
    import dpfair.base

    calls = []
    real = dpfair.base.check_epsilon
    monkeypatch.setattr(dpfair.base, "check_epsilon", lambda *a, **k: calls.append("template") or real(*a, **k))
    assert not hasattr(module, "check_epsilon")  # the policy never validates epsilon itself
    _pfg().reset(env.n_groups, env.dim, 10)
    assert calls == ["template"]


def test_simulate_refuses_two_policies_one_budget_cannot_pay_for(env):
    budget = PrivacyBudget(1.5, 0.1)
    with pytest.raises(PrivacyBudgetExceededError, match=r"policies\['a'\].budget and policies\['b'\].budget"):
        simulate(env, {"a": _pfg(budget), "b": _pfg(budget)}, 5, [0])
    assert _unspent(budget)
    enough = PrivacyBudget(2.0, 0.1)
    result = simulate(env, {"a": _pfg(enough), "b": _pfg(enough)}, 5, [0])
    assert enough.spent() == pytest.approx((2.0, 0.1)) and np.isfinite(result.fair_regret).all()


def test_simulate_refuses_hyper_parameters_that_would_fail_midway_before_charging(env):
    budget = PrivacyBudget(1.0, 0.1)
    with pytest.raises(ValueError, match=r"policies\['o'\]: exploration_scale, noise_std"):
        simulate(env, {"p": _pfg(budget), "o": OFUL(noise_std=1e300)}, 5, [0])
    with pytest.raises(ValueError, match=r"policies\['f'\]: regularization=1e-300 is too small"):
        simulate(env, {"p": _pfg(budget), "f": FairGreedy(regularization=1e-300)}, 5, [0])
    assert _unspent(budget)
    loud = SyntheticGroupEnvironment(n_groups=3, dim=2, noise_std=1e300, population_size=30, random_state=0)
    with pytest.raises(ValueError, match=r"env\.reward_bound"):
        simulate(loud, {"o": OFUL()}, 5, [0])


def test_simulate_refuses_a_horizon_whose_arrays_cannot_fit(env):
    with pytest.raises(ValueError, match=r"horizon=1000000000000 .* needs .* more than this machine's"):
        simulate(env, {"r": RandomPolicy()}, 10**12, [0])


# ------------------------------------------------------------------ simulate_federated
def test_simulate_federated_refuses_a_context_bound_below_sqrt_dim_before_charging():
    budget = PrivacyBudget(5.0, 0.5)
    fed = FederatedSyntheticEnvironment(dim=2)
    with pytest.raises(ValueError, match=r"learners\['p'\].context_bound=0.5 is below .* sqrt\(dim\)"):
        simulate_federated(fed, {"p": PrivFairXLinUCB(2.0, 0.1, context_bound=0.5, budget=budget, random_state=0)},
                           5, 2, [0])
    assert _unspent(budget)


def test_simulate_federated_refuses_learners_sharing_a_budget_that_pays_for_one():
    budget = PrivacyBudget(3.0, 0.5)
    fed = FederatedSyntheticEnvironment(dim=2)
    learners = {name: PrivFairXLinUCB(2.0, 0.1, context_bound=2.0, budget=budget, random_state=0) for name in "pq"}
    with pytest.raises(PrivacyBudgetExceededError, match=r"learners\['p'\].budget and learners\['q'\].budget"):
        simulate_federated(fed, learners, 5, 2, [0])
    assert _unspent(budget)


def test_communication_schedule_refuses_horizons_beyond_int64_and_matches_algorithm_1():
    for protocol in ("p-fcb", "bounded-gap"):
        with pytest.raises(ValueError, match=r"horizon=\d+ does not fit the int64 round numbers"):
            communication_schedule(protocol, 2**70, 2, 2)
    assert communication_schedule("p-fcb", 2**63 - 1, 2, 2)[-1] == 2**62

    def reference(T, m, d):  # Algorithm 1, lines 10-17, literally
        gap, rounds, tau = bounded_gap(T, m, d), [], 1
        while tau <= T:
            rounds.append(tau)
            tau = 2 * tau if tau < gap else tau + gap
        return rounds

    for T, m, d in [(1, 1, 1), (17, 2, 1), (10_000, 2, 2), (123_457, 3, 5), (5000, 7, 17)]:
        assert communication_schedule("bounded-gap", T, m, d).tolist() == reference(T, m, d)
    assert bounded_gap(10, 2, 10**400) == 1  # no NaN from inf * 0


def test_federated_sizes_are_refused_by_name():
    with pytest.raises(ValueError, match="horizon=1000000000000"):
        simulate_federated(FederatedSyntheticEnvironment(), {"a": FairXLinUCB()}, 10**12, 2, [0])
    with pytest.raises(ValueError, match="n_agents=1000000000"):
        simulate_federated(FederatedSyntheticEnvironment(), {"a": FairXLinUCB()}, 5, 10**9, [0])
    with pytest.raises(ValueError, match="noise_std"):
        simulate_federated(FederatedSyntheticEnvironment(noise_std=1e200), {"a": FedFairXLinUCB()}, 5, 2, [0])


# ------------------------------------------------------------------ NaN passing silently
def test_oful_refuses_contexts_and_rewards_whose_squares_overflow():
    oful = OFUL(random_state=0).reset(2, 2, 5)
    with pytest.raises(ValueError, match="contexts holds values too large"):
        oful.update(np.full((2, 2), 1e200), 0, 1.0)
    with pytest.raises(ValueError, match="rewards holds values too large"):
        oful.update(np.ones((2, 2)), 0, 1e308)
    assert oful.t_ == 0 and np.isfinite(oful.ridge_.theta()).all()
    oful.update(np.ones((2, 2)), 0, 1.0)
    assert np.isfinite(oful.ridge_.theta()).all()


def test_ridge_state_refuses_nan_statistics():
    state = RidgeState(2)
    with pytest.raises(ValueError, match="gram holds NaN"):
        state.set_statistics(np.full((2, 2), np.nan), [1.0, 1.0])
    with pytest.raises(ValueError, match="target_increment holds NaN"):
        state.add_statistics(np.eye(2), [np.nan, 1.0])
    with pytest.raises(ValueError, match="gram_increment holds NaN"):
        state.add_statistics(np.full((2, 2), np.inf), [1.0, 1.0])
    with pytest.raises(ValueError, match="x holds NaN"):
        state.norms([[np.nan, 1.0]])
    with pytest.raises(ValueError, match="x is too large"):
        state.update([1e200, 1.0], 1.0)
    assert np.array_equal(state.gram, np.eye(2)) and np.array_equal(state.target, np.zeros(2))
    with pytest.raises(ValueError, match="regularization=1e-320 is subnormal"):
        RidgeState(2, regularization=1e-320)


def test_merit_policy_of_extreme_rewards_is_a_distribution():
    assert merit_policy([1e308, -1e308]).tolist() == [1.0, 0.0]
    assert merit_policy([[1.0, 1.0]], merit_scale=1e308).tolist() == [[0.5, 0.5]]
    assert merit_policy([0.1, 0.2]) == pytest.approx(np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum())
    with pytest.raises(TypeError, match="mu"):
        merit_policy(["1", "2"])


def test_confidence_radius_and_mean_and_standard_error_refuse_nan():
    kwargs = dict(dim=2, regularization=1.0, noise_std=1.0, theta_norm_bound=1.0, delta=0.1)
    with pytest.raises(ValueError, match="log_det_gram"):
        confidence_radius(math.nan, **kwargs)
    with pytest.raises(TypeError, match="log_det_gram"):
        confidence_radius("a", **kwargs)
    with pytest.raises(ValueError, match="values contains"):
        mean_and_standard_error([[math.nan, 1.0]])
    with pytest.raises(ValueError, match="values is empty"):
        mean_and_standard_error([])
    mean, se = mean_and_standard_error([[1e308, -1e308, 1e308]])
    assert np.isfinite(mean).all() and np.isfinite(se).all()


# ------------------------------------------------------------------ numeric strings
def test_numeric_strings_are_refused():
    with pytest.raises(TypeError, match="theta"):
        GroupEnvironment([np.ones((2, 2)), np.eye(2)], ["1", "2"])
    with pytest.raises(TypeError, match="rewards"):
        OFUL(random_state=0).reset(2, 2, 5).update(np.ones((2, 2)), 0, "0.5")
    with pytest.raises(TypeError, match="contexts"):
        FairGreedy(random_state=0).reset(2, 2, 5).select([["1", "2"], ["3", "4"]])
    with pytest.raises(TypeError, match="mean_rewards"):
        cumulative_regret([["a", "b"]], [0])


# ------------------------------------------------------------------ overflow of declared bounds
@pytest.mark.parametrize("kwargs", [{"context_bound": 1e200}, {"context_bound": 1e154}, {"reward_bound": 1e200}])
def test_private_fair_greedy_refuses_bounds_that_overflow_by_name(kwargs):
    budget = PrivacyBudget(2.0, 0.1)
    with pytest.raises(ValueError, match="context_bound and reward_bound are too large") as info:
        PrivateFairGreedy(1.0, 0.1, budget=budget, random_state=0, **kwargs).reset(2, 2, 5)
    assert "rho" not in str(info.value) and _unspent(budget)


def test_private_fair_greedy_refuses_other_underflows_by_name():
    with pytest.raises(ValueError, match="shift_failure_probability=1e-300 is too small"):
        PrivateFairGreedy(1.0, 0.1, shift_failure_probability=1e-300).reset(2, 2, 5)
    with pytest.raises(ValueError, match=r"delta=1e-320"):
        PrivateFairGreedy(1.0, 1e-320).reset(2, 2, 5)
    with pytest.raises(ValueError, match="regularization=1e-320 is subnormal"):
        FairGreedy(regularization=1e-320).reset(2, 2, 5)


# ------------------------------------------------------------------ others
def test_relative_rank_refuses_nan_and_strings(env):
    with pytest.raises(ValueError, match="values holds NaN"):
        env.relative_rank(0, [math.nan])
    with pytest.raises(TypeError, match="values"):
        env.relative_rank(0, "abc")
    assert env.relative_rank(0, [-math.inf, math.inf]).tolist() == [0.0, 1.0]


def _table():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"g": ["a", "b"] * 20, "text": ["x"] * 40, "empty": [np.nan] * 40,
                         "f": rng.random(40), "y": rng.random(40)})


@pytest.mark.parametrize(("features", "kwargs", "error", "message"), [
    (["text"], {}, TypeError, "feature_columns column 'text' must be numeric"),
    (["f", "empty"], {}, ValueError, r"feature_columns \['empty'\] have no values"),
    (["f"], {"target_scale": 1e-320}, ValueError, "target_scale=1e-320 is too small"),
])
def test_census_environment_names_the_bad_column_or_argument(features, kwargs, error, message):
    with pytest.raises(error, match=message):
        CensusHiringEnvironment(_table(), "g", features, "y", n_groups=2, **kwargs)


def test_rank_noise_std_before_reset_says_call_reset():
    with pytest.raises(NotFittedError, match=r"call reset\(n_groups, dim, horizon\) first"):
        PrivateFairGreedy(1.0, 0.1).rank_noise_std(1)
    with pytest.raises(TypeError, match="rho_rank"):
        rank_noise_std(1, 5, "a")
    assert math.isfinite(rank_noise_std(1, 2**62, 5e-324)) and rank_noise_std(10**400, 5, 1.0) == 0.0


@pytest.mark.parametrize(("call", "argument"), [
    (lambda: SyntheticGroupEnvironment(dim=HUGE), "dim="),
    (lambda: OFUL().reset(2, HUGE, 5), "lower dim"),
    (lambda: FairGreedy().reset(2, 2, HUGE), "lower horizon"),
    (lambda: RidgeState(2, batch_shape=(HUGE,)), "batch_shape"),
    (lambda: GroupEnvironment([np.ones((2, 2)), np.eye(2)], [1.0, 2.0]).sample(HUGE, 0), "horizon="),
])
def test_sizes_that_cannot_fit_are_refused_by_name(call, argument):
    with pytest.raises(ValueError, match="more than this machine's") as info:
        call()
    assert argument in str(info.value)


def test_documented_bounds_come_from_the_scaling_not_the_sample():
    a = SyntheticGroupEnvironment(n_groups=3, dim=2, population_size=30, random_state=0)
    b = SyntheticGroupEnvironment(n_groups=3, dim=2, population_size=30, random_state=1)
    assert a.context_norm_bound == b.context_norm_bound == a.context_bound == 1.0
    assert a.reward_bound == b.reward_bound == pytest.approx(1.0 + 3.0 * 0.1)
    episode = a.sample(200, 0)
    assert np.abs(episode.rewards).max() <= a.reward_bound
    census = CensusHiringEnvironment(_table(), "g", ["f"], "y", n_groups=2)
    assert census.context_norm_bound == 1.0
    rewards = census.sample(200, 0).rewards
    assert np.abs(rewards).max() <= census.reward_bound * (1 + 1e-12)
    with pytest.raises(TypeError, match="group_names"):
        GroupEnvironment([np.ones((2, 2)), np.eye(2)], [1.0, 2.0], group_names="ab")


# ------------------------------------------------------------------ the sweep over every public entry point
def _env_small():
    return GroupEnvironment([np.ones((2, 2)), np.eye(2)], [1.0, 2.0])


def _started(policy, **kwargs):
    return policy.reset(2, 2, 5, **kwargs)


def _pfg_small(budget, **kwargs):  # bounds that _env_small obeys (||x|| <= sqrt(2), |y| <= 3.3)
    kwargs.setdefault("context_bound", 2.0)
    kwargs.setdefault("reward_bound", 4.0)
    return _pfg(budget, **kwargs)


# (id, call taking (bad value, budget), bad value, argument name expected in the message)
SWEEP = [
    ("simulate-horizon", lambda v, b: simulate(_env_small(), {"p": _pfg_small(b)}, v, [0]), 2.5, "horizon"),
    ("simulate-seeds", lambda v, b: simulate(_env_small(), {"p": _pfg_small(b)}, 3, v), "01", "seeds"),
    ("simulate-policy", lambda v, b: simulate(_env_small(), {"p": _pfg_small(b), "o": OFUL(delta=v)}, 3, [0]),
     2.0, "delta"),
    ("simulate-bound", lambda v, b: simulate(_env_small(), {"p": _pfg_small(b, context_bound=v)}, 3, [0]),
     0.5, "context_bound"),
    ("simulate-reward-bound", lambda v, b: simulate(_env_small(), {"p": _pfg_small(b, reward_bound=v)}, 3, [0]), 1.0,
     "reward_bound"),
    ("simulate-shared-budget", lambda v, b: simulate(_env_small(), {
        name: PrivateFairGreedy(v, 0.05, context_bound=2.0, reward_bound=4.0, budget=b) for name in "pq"}, 3, [0]),
     6.0, "budget"),
    ("pfg-epsilon", lambda v, b: PrivateFairGreedy(v, 0.1, budget=b).reset(2, 2, 5), "1", "epsilon"),
    ("pfg-context-bound", lambda v, b: PrivateFairGreedy(1.0, 0.1, context_bound=v, budget=b).reset(2, 2, 5), 1e200,
     "context_bound"),
    ("pfg-split", lambda v, b: PrivateFairGreedy(1.0, 0.1, budget_split=v, budget=b).reset(2, 2, 5), 1e-320,
     "budget_split"),
    ("pfg-horizon", lambda v, b: PrivateFairGreedy(1.0, 0.1, budget=b).reset(2, 2, v), HUGE, "horizon"),
    ("pfg-support", lambda v, b: PrivateFairGreedy(1.0, 0.1, budget=b).reset(2, 2, 5, support=v, support_groups=[0, 1]),
     [["1", "2"], ["3", "4"]], "support"),
    ("pfg-rank-noise-std", lambda v, b: PrivateFairGreedy(1.0, 0.1).rank_noise_std(v), 1, "reset"),
    ("oful-dim", lambda v, b: OFUL().reset(2, v, 5), HUGE, "dim="),
    ("oful-reg", lambda v, b: OFUL(regularization=v).reset(2, 2, 5), 1e-320, "regularization"),
    ("oful-update-contexts", lambda v, b: _started(OFUL(random_state=0)).update(v, 0, 1.0), np.full((2, 2), 1e200),
     "contexts"),
    ("oful-update-rewards", lambda v, b: _started(OFUL(random_state=0)).update(np.ones((2, 2)), 0, v), 1e308, "rewards"),
    ("oful-update-actions", lambda v, b: _started(OFUL(random_state=0)).update(np.ones((2, 2)), v, 1.0), "0", "actions"),
    ("fg-select-contexts", lambda v, b: _started(FairGreedy(random_state=0)).select(v), [[math.nan, 1], [1, 1]],
     "contexts"),
    ("fg-context-ids", lambda v, b: _started(FairGreedy(random_state=0), support=np.eye(2), support_groups=[0, 1])
     .select(np.eye(2), context_ids=v), "01", "context_ids"),
    ("random-runs", lambda v, b: RandomPolicy().reset(2, 2, 5, n_runs=v), 0, "n_runs"),
    ("ridge-set", lambda v, b: RidgeState(2).set_statistics(v, [0.0, 0.0]), np.full((2, 2), np.nan), "gram"),
    ("ridge-add", lambda v, b: RidgeState(2).add_statistics(np.eye(2), v), [np.nan, 0.0], "target_increment"),
    ("ridge-norms", lambda v, b: RidgeState(2).norms(v), [[np.nan, 1.0]], "x"),
    ("ridge-update", lambda v, b: RidgeState(2).update([1.0, 1.0], v), "0.5", "reward"),
    ("ridge-mask", lambda v, b: RidgeState(2).update([1.0, 1.0], 1.0, mask=v), 0.5, "mask"),
    ("confidence-radius", lambda v, b: confidence_radius(v, dim=2, regularization=1.0, noise_std=1.0,
                                                         theta_norm_bound=1.0, delta=0.1), math.nan, "log_det_gram"),
    ("merit-policy", lambda v, b: merit_policy(v), "ab", "mu"),
    ("mean-se", lambda v, b: mean_and_standard_error(v), [[math.nan, 1.0]], "values"),
    ("mean-se-axis", lambda v, b: mean_and_standard_error([[1.0, 2.0]], axis=v), 5, "axis"),
    ("regret", lambda v, b: cumulative_regret(v, [0]), [["a", "b"]], "mean_rewards"),
    ("fair-regret", lambda v, b: cumulative_fair_regret([[0.1, 0.2]], [0], axis=v), 3, "axis"),
    ("rank-noise-std", lambda v, b: rank_noise_std(1, 5, v), "a", "rho_rank"),
    ("relative-rank", lambda v, b: _env_small().relative_rank(0, v), [math.nan], "values"),
    ("env-theta", lambda v, b: GroupEnvironment([np.ones((2, 2)), np.eye(2)], v), ["1", "2"], "theta"),
    ("env-populations", lambda v, b: GroupEnvironment(v, [1.0, 2.0]), [np.full((2, 2), 1e200), np.eye(2)],
     "populations[0]"),
    ("env-noise", lambda v, b: GroupEnvironment([np.ones((2, 2)), np.eye(2)], [1.0, 2.0], noise_std=v, noise_clip=1e10),
     1e300, "noise_std"),
    ("env-sample", lambda v, b: _env_small().sample(v, 0), HUGE, "horizon"),
    ("synthetic-dim", lambda v, b: SyntheticGroupEnvironment(dim=v), HUGE, "dim="),
    ("synthetic-gap", lambda v, b: SyntheticGroupEnvironment(group_gap=v, population_size=5), 1e300, "group_gap"),
    ("census-feature", lambda v, b: CensusHiringEnvironment(_table(), "g", v, "y", n_groups=2), ["text"],
     "feature_columns"),
    ("census-scale", lambda v, b: CensusHiringEnvironment(_table(), "g", ["f"], "y", n_groups=2, target_scale=v),
     1e-320, "target_scale"),
    ("schedule", lambda v, b: communication_schedule("p-fcb", v, 2, 2), 2**70, "horizon"),
    ("result-plot", lambda v, b: simulate(_env_small(), {"r": RandomPolicy()}, 3, [0]).plot("regret", n_points=v), 0,
     "n_points"),
    ("result-final", lambda v, b: simulate(_env_small(), {"r": RandomPolicy()}, 3, [0]).final(v), ["regret"], "metric"),
    ("federated-bound", lambda v, b: simulate_federated(
        FederatedSyntheticEnvironment(dim=2), {"p": PrivFairXLinUCB(2.0, 0.1, context_bound=v, budget=b, random_state=0)},
        5, 2, [0]), 0.5, "context_bound"),
    ("federated-merit-scale", lambda v, b: simulate_federated(FederatedSyntheticEnvironment(), {"a": FairXLinUCB(
        merit_scale=v)}, 5, 2, [0]), 1e308, "merit_scale"),
    ("federated-regularization", lambda v, b: simulate_federated(FederatedSyntheticEnvironment(), {
        "p": PrivFairXLinUCB(2.0, 0.1, context_bound=3.0, budget=b, random_state=0), "a": FedFairXLinUCB(
            regularization=v)}, 5, 2, [0]), 1e-300, "regularization"),
    ("federated-step", lambda v, b: simulate_federated(FederatedSyntheticEnvironment(), {
        "p": PrivFairXLinUCB(2.0, 0.1, context_bound=3.0, budget=b, random_state=0), "a": FairXLinUCB(step_size=v)},
        5, 2, [0]), 1e300, "step_size"),
    ("federated-noise", lambda v, b: simulate_federated(FederatedSyntheticEnvironment(), {
        "p": PrivFairXLinUCB(2.0, 0.1, context_bound=3.0, budget=b, random_state=0), "a": FairXLinUCB(noise_std=v)},
        5, 2, [0]), 1e300, "noise_std"),
    ("federated-confidence", lambda v, b: simulate_federated(FederatedSyntheticEnvironment(), {
        "p": PrivFairXLinUCB(2.0, 0.1, context_bound=3.0, budget=b, random_state=0), "a": FairXLinUCB(
            confidence_delta=v)}, 5, 2, [0]), 1e-320, "confidence_delta"),
    ("federated-horizon", lambda v, b: simulate_federated(FederatedSyntheticEnvironment(), {"a": FairXLinUCB()}, v, 2,
                                                          [0]), 10**12, "horizon"),
]


@pytest.mark.parametrize(("call", "bad", "argument"), [row[1:] for row in SWEEP], ids=[row[0] for row in SWEEP])
def test_every_entry_point_refuses_bad_input_by_name_before_charging(call, bad, argument):
    budget = PrivacyBudget(10.0, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((TypeError, ValueError, PrivacyBudgetExceededError)) as info:
            out = call(bad, budget)
            # never reached: a bad input must raise, and never give NaN out
            assert np.isfinite(np.asarray(out, dtype=float)).all()
    assert argument in str(info.value), f"the message does not name {argument!r}: {info.value}"
    assert "could not convert" not in str(info.value)
    assert _unspent(budget)


# ------------------------------------------------------------------ hypothesis: extreme numbers
extreme = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e-320, 1e154, 1e200, 1e308]))


@settings(derandomize=True, database=None, deadline=None, max_examples=60)
@given(x=st.lists(extreme, min_size=4, max_size=4), r=extreme)
def test_oful_update_never_gives_nan(x, r):
    oful = OFUL(random_state=0).reset(2, 2, 3)
    try:
        oful.update(np.reshape(x, (2, 2)), 0, r)
    except ValueError as exc:
        assert "contexts" in str(exc) or "rewards" in str(exc)
        assert oful.t_ == 0
    assert np.isfinite(oful.ridge_.theta()).all()
    assert oful.select(np.ones((2, 2))) in (0, 1)


@settings(derandomize=True, database=None, deadline=None, max_examples=60)
@given(mu=st.lists(extreme, min_size=1, max_size=4), scale=st.floats(1e-300, 1e308))
def test_merit_policy_never_gives_nan(mu, scale):
    try:
        pi = merit_policy(mu, merit_scale=scale)
    except ValueError as exc:
        assert "mu" in str(exc)
    else:
        assert np.isfinite(pi).all() and pi.sum() == pytest.approx(1.0)


@settings(derandomize=True, database=None, deadline=None, max_examples=40)
@given(values=st.lists(st.lists(extreme, min_size=2, max_size=2), min_size=1, max_size=3))
def test_summaries_never_give_nan(values):
    for call, name in ((lambda: mean_and_standard_error(values), "values"),
                       (lambda: cumulative_regret(values, [0] * len(values)), "mean_rewards"),
                       (lambda: confidence_radius(values, dim=2, regularization=1.0, noise_std=1.0, theta_norm_bound=1.0,
                                                  delta=0.1), "log_det_gram")):
        try:
            out = call()
        except ValueError as exc:
            assert name in str(exc)
        else:
            assert all(np.isfinite(part).all() for part in (out if isinstance(out, tuple) else (out,)))


@settings(derandomize=True, database=None, deadline=None, max_examples=30)
@given(scale=st.sampled_from([1e-300, 1e-150, 1.0, 1e100, 1e150, 1e154, 1e300]),
       shift=st.sampled_from([0.0, 1e150, 1e300]))
def test_group_environment_and_simulate_never_give_nan(scale, shift):
    try:
        env = GroupEnvironment([np.array([[1.0, 0.0], [0.5, 0.5]]) * scale, np.eye(2) * scale], [1.0 + shift, -2.0])
        result = simulate(env, {"o": OFUL(), "f": FairGreedy(), "r": RandomPolicy()}, 6, [0, 1])
    except ValueError as exc:
        assert any(name in str(exc) for name in ("populations", "theta", "regularization", "env."))
    else:
        assert np.isfinite(result.fair_regret).all() and np.isfinite(result.regret).all()


positive = st.sampled_from([1e-320, 1e-300, 1e-150, 1e-12, 1e-3, 0.5, 1.0, 10.0, 1e12, 1e150, 1e300, 1.7e308])


@settings(derandomize=True, database=None, deadline=None, max_examples=40)
@given(regularization=positive, noise_std=positive, theta_norm_bound=positive, exploration_scale=positive,
       epsilon=positive, context_bound=positive, reward_bound=positive, env_noise=st.sampled_from([0.0, 0.1, 1e100]))
def test_simulate_either_runs_finite_or_refuses_by_name_before_charging(
        regularization, noise_std, theta_norm_bound, exploration_scale, epsilon, context_bound, reward_bound, env_noise):
    env = SyntheticGroupEnvironment(n_groups=3, dim=2, noise_std=env_noise, population_size=20, random_state=0)
    budget = PrivacyBudget(math.inf, 0.5)
    policies = {
        "p": PrivateFairGreedy(epsilon, 0.1, context_bound=context_bound, reward_bound=reward_bound,
                               regularization=regularization, budget=budget, random_state=0),
        "o": OFUL(regularization=regularization, noise_std=noise_std, theta_norm_bound=theta_norm_bound,
                  exploration_scale=exploration_scale),
        "f": FairGreedy(regularization=regularization),
    }
    names = ("regularization", "noise_std", "theta_norm_bound", "exploration_scale", "epsilon", "context_bound",
             "reward_bound", "env.")
    try:
        result = simulate(env, policies, 8, [0, 1], engine="numpy")
    except (TypeError, ValueError) as exc:
        assert any(name in str(exc) for name in names), str(exc)
        assert _unspent(budget)
    else:
        assert np.isfinite(result.fair_regret).all() and np.isfinite(result.regret).all()
        assert len(budget.ledger) == 1


# ------------------------------------------------------------------ the dry runs and the template's guards
@pytest.mark.parametrize("epsilon, delta", [(0.0, 1e-6), (float("nan"), 1e-6), (1.0, 1.5), (True, 1e-6)])
def test_federated_server_refuses_a_private_learners_bad_privacy_settings(epsilon, delta):
    """The server plans the schedule from the learner's options; a private learner's settings are checked there
    too (its one-agent dry run), so a bad run configuration fails at the server, not at the agents."""
    from dpfair.bandits import FederatedServer

    bounds = {"context_bound": 2.0, "reward_bound": 1.0, "random_state": 0}
    learner = PrivFairXLinUCB(epsilon=epsilon, delta=delta, **bounds)
    with pytest.raises((TypeError, ValueError), match=r"epsilon|delta"):
        FederatedServer(learner, dim=3, horizon=50, n_agents=4)
    FederatedServer(PrivFairXLinUCB(epsilon=1.0, delta=1e-6, **bounds), dim=3, horizon=50, n_agents=4)


def test_private_fair_greedy_never_runs_the_exact_configuration():
    """FairGreedy's configuration plays without noise or charge: the private subclass refuses it outright."""
    with pytest.raises(RuntimeError, match="release template"):
        PrivateFairGreedy(1.0, 0.1)._validate()


@pytest.mark.parametrize("bounds", [(float("nan"), 1.0), (1.0, float("inf")), (-1.0, 1.0), (1.0,), "ab", None])
def test_check_reset_checks_environment_bounds_by_name(bounds):
    policy = PrivateFairGreedy(2.0, 0.1, context_bound=0.5, random_state=0)
    if bounds is None:  # not given: no environment check, the planned charge only
        assert policy.check_reset(3, 2, 10).epsilon == 2.0
        return
    with pytest.raises((TypeError, ValueError), match="environment_bounds"):
        policy.check_reset(3, 2, 10, environment_bounds=bounds)


def test_play_compiled_before_reset_is_not_fitted():
    with pytest.raises(NotFittedError, match="has not been started"):
        OFUL().play_compiled(np.zeros((2, 1, 2), dtype=np.int64), np.zeros((2, 1, 2)))
