"""The compiled rounds of group meritocratic selection equal the numpy reference (``simulate(engine=...)``)."""

import math

import numpy as np
import pandas as pd
import pytest

from dpfair.bandits import (
    OFUL,
    CensusHiringEnvironment,
    FairGreedy,
    PrivateFairGreedy,
    RandomPolicy,
    SyntheticGroupEnvironment,
    simulate,
)
from dpfair.privacy.noise import SeededNoise

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")

ATOL = 1e-9


@pytest.fixture(scope="module")
def synthetic():
    return SyntheticGroupEnvironment(n_groups=4, dim=5, population_size=300, random_state=3)


@pytest.fixture(scope="module")
def census():
    """A small census-like table with discrete features: repeated records, equal contexts in different groups
    (exact ties of the optimistic scores and of the ranks, broken by the uniforms), and one-hot blocks whose few
    combinations make the compiled Fair-Greedy project the support factored."""
    rng = np.random.default_rng(7)
    n = 3000
    table = pd.DataFrame({
        "race": rng.choice(["a", "b", "c", "d", "e"], size=n, p=[0.4, 0.25, 0.2, 0.1, 0.05]),
        "age": rng.integers(18, 70, size=n) // 5,
        "sex": rng.integers(0, 2, size=n),
    })
    marital, edu = rng.integers(0, 6, size=n), rng.integers(0, 5, size=n)
    for level in range(6):
        table[f"marital_{level}"] = (marital == level).astype(float)
    for level in range(5):
        table[f"edu_{level}"] = (edu == level).astype(float)
    table["income"] = 0.3 * edu + 0.05 * table["age"] + 0.2 * table["sex"] + 0.1 * marital + rng.normal(0, 0.3, size=n)
    features = ["age", "sex", *(f"marital_{level}" for level in range(6)), *(f"edu_{level}" for level in range(5))]
    return CensusHiringEnvironment(table, "race", features, "income", n_groups=4, noise_std=0.1)


def _policies(env):
    return {
        "OFUL": OFUL(noise_std=env.noise_std, theta_norm_bound=float(np.linalg.norm(env.theta))),
        "Fair-Greedy": FairGreedy(),
        "Fair-Greedy, no split": FairGreedy(split_history=False, regularization=0.7),
        "Private-Fair-Greedy": PrivateFairGreedy(15.0, 0.1, reward_bound=env.reward_bound),  # the square root
        "Private-Fair-Greedy, tree": PrivateFairGreedy(15.0, 0.1, reward_bound=env.reward_bound, continual="tree"),
        "Private-Fair-Greedy, Honaker": PrivateFairGreedy(8.0, 0.1, reward_bound=env.reward_bound, continual="honaker"),
        "Private-Fair-Greedy, no split": PrivateFairGreedy(4.0, 0.2, split_history=False, reward_bound=env.reward_bound,
                                                           random_state=11),
        "Private-Fair-Greedy eps=inf": PrivateFairGreedy(math.inf, 0.1, reward_bound=env.reward_bound),
        "Random": RandomPolicy(),
    }



def _assert_same_results(compiled, reference):
    assert compiled.policy_names == reference.policy_names
    np.testing.assert_allclose(compiled.fair_regret, reference.fair_regret, rtol=0, atol=ATOL)
    np.testing.assert_allclose(compiled.regret, reference.regret, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(compiled.selections, reference.selections)
    assert compiled.privacy_spent == reference.privacy_spent


@pytest.mark.parametrize("env_name", ["synthetic", "census"])
def test_compiled_simulate_equals_numpy_for_every_policy(env_name, request, compiled_runs):
    env = request.getfixturevalue(env_name)
    policies = _policies(env)
    compiled = simulate(env, policies, 400, [0, 1, 2])
    assert compiled_runs == [type(p).__name__ for p in policies.values()]
    reference = simulate(env, policies, 400, [0, 1, 2], engine="numpy")
    assert len(compiled_runs) == len(policies)  # the reference ran the numpy rounds
    _assert_same_results(compiled, reference)
    # the policies differ (the comparison is not vacuous)
    final = compiled.final("fair_regret")["mean"]
    assert final.nunique() == len(policies)


def test_compiled_simulate_equals_numpy_on_the_acs_excerpt(compiled_runs):
    try:
        env = CensusHiringEnvironment.from_acs_excerpt("national", n_groups=4, noise_std=0.1, random_state=0)
    except Exception as exc:  # the ACS excerpt is not in the data home
        pytest.skip(f"ACS excerpt unavailable: {exc}")
    policies = _policies(env)
    for name in ("Fair-Greedy, no split", "Private-Fair-Greedy eps=inf"):
        del policies[name]
    compiled = simulate(env, policies, 300, [0, 1])
    reference = simulate(env, policies, 300, [0, 1], engine="numpy")
    assert len(compiled_runs) == len(policies)
    _assert_same_results(compiled, reference)


def _stream(env, horizon, seeds):
    episodes = [env.sample(horizon, s) for s in seeds]
    ids = np.stack([e.context_ids for e in episodes], axis=1)
    rewards = np.stack([e.rewards for e in episodes], axis=1)
    return ids, rewards


def _by_hand(policy, env, ids, rewards):
    """The numpy rounds, select then update, as simulate(engine="numpy") drives them."""
    runs = np.arange(ids.shape[1])
    actions = np.empty(ids.shape[:2], dtype=np.int64)
    for t in range(ids.shape[0]):
        x = env.support[ids[t]]
        a = policy.select(x, context_ids=ids[t])
        policy.update(x, a, rewards[t, runs, a], context_ids=ids[t])
        actions[t] = a
    return actions


def _reset(policy, env, horizon, n_runs, support=True):
    kwargs = {"support": env.support, "support_groups": env.support_group} if support else {}
    return policy.reset(env.n_groups, env.dim, horizon, n_runs=n_runs, **kwargs)


@pytest.mark.parametrize("continual", ["tree", "sqrt", "honaker"])
@pytest.mark.parametrize("split_history", [True, False])
def test_compiled_state_and_noise_stream_equal_the_numpy_rounds(synthetic, split_history, continual):
    ids, rewards = _stream(synthetic, 300, [4, 5])
    make = lambda: PrivateFairGreedy(6.0, 0.1, split_history=split_history,  # noqa: E731
                                     reward_bound=synthetic.reward_bound, random_state=3, continual=continual)
    reference, compiled = _reset(make(), synthetic, 300, 2), _reset(make(), synthetic, 300, 2)
    expected = _by_hand(reference, synthetic, ids, rewards)
    np.testing.assert_array_equal(compiled.play_compiled(ids, rewards), expected)
    # the same numbers were drawn from the seeded source, as many of them: the generators end in the same state
    assert type(compiled._noise) is SeededNoise
    assert compiled._noise.rng.bit_generator.state == reference._noise.rng.bit_generator.state
    assert compiled.t_ == reference.t_ == 300 and compiled.n_regression_ == reference.n_regression_
    assert compiled.n_shift_failures_ == reference.n_shift_failures_
    np.testing.assert_allclose(compiled.theta_, reference.theta_, rtol=1e-9, atol=ATOL)
    np.testing.assert_allclose(compiled.ridge_.gram, reference.ridge_.gram, rtol=1e-12, atol=ATOL)
    np.testing.assert_allclose(compiled.ridge_.gram_inverse, reference.ridge_.gram_inverse, rtol=1e-9, atol=ATOL)
    np.testing.assert_array_equal(compiled._pool.counts, reference._pool.counts)
    with pytest.raises(ValueError, match="horizon"):  # the horizon is used up, as after the numpy rounds
        compiled.select(synthetic.support[ids[0]], context_ids=ids[0])
    # sigma_t of the compiled rounds is the public rank_noise_std, round for round
    sigmas = compiled._rank_noise_stds(0, 300)
    assert all(sigmas[t] == (compiled.rank_noise_std(t + 1) if t else 0.0) for t in range(300))


def test_compiled_oful_ridge_state_equals_sherman_morrison_rounds(census):
    ids, rewards = _stream(census, 300, [0, 1, 2])
    reference, compiled = (_reset(OFUL(exploration_scale=0.5, random_state=1), census, 300, 3) for _ in range(2))
    np.testing.assert_array_equal(compiled.play_compiled(ids, rewards), _by_hand(reference, census, ids, rewards))
    for name in ("gram", "target", "gram_inverse"):
        np.testing.assert_allclose(getattr(compiled.ridge_, name), getattr(reference.ridge_, name), rtol=1e-10, atol=ATOL)
    np.testing.assert_array_equal(compiled.ridge_.n_observations, reference.ridge_.n_observations)


@pytest.mark.parametrize("continual", ["tree", "sqrt"])
def test_releases_that_are_not_positive_definite_keep_the_last_estimate(synthetic, continual):
    """A shift far too small (patched in): both engines keep a run's estimate on the same failed releases."""
    from dpfair.bandits.gmf.policies import _regression_noise_scale

    ids, rewards = _stream(synthetic, 300, [0, 1, 2])
    policies = []
    for _ in range(2):
        policy = _reset(PrivateFairGreedy(1.0, 0.1, reward_bound=synthetic.reward_bound, random_state=8,
                                          continual=continual), synthetic, 300, 3)
        scale = _regression_noise_scale(policy.tree_)
        policy.tree_.noise_operator_norm_bound = lambda beta, t=None, s=scale: -2.0 * s
        policies.append(policy)
    reference, compiled = policies
    expected = _by_hand(reference, synthetic, ids, rewards)
    np.testing.assert_array_equal(compiled.play_compiled(ids, rewards), expected)
    assert compiled.n_shift_failures_ == reference.n_shift_failures_ > 0
    np.testing.assert_allclose(compiled.theta_, reference.theta_, rtol=1e-9, atol=ATOL)


def test_what_the_kernels_cannot_reproduce_runs_the_numpy_rounds(synthetic):
    ids, rewards = _stream(synthetic, 50, [0, 1])
    # without a support (contexts stored, ranks by a pass over them) there are no compiled rounds
    assert _reset(FairGreedy(random_state=0), synthetic, 50, 2, support=False).play_compiled(ids, rewards) is None

    class Custom(FairGreedy):
        pass

    assert _reset(Custom(random_state=0), synthetic, 50, 2).play_compiled(ids, rewards) is None
    # secure noise is added by OpenDP to the statistics themselves: the numpy rounds draw it
    secure = _reset(PrivateFairGreedy(2.0, 0.1, reward_bound=synthetic.reward_bound), synthetic, 50, 2)
    assert not secure._can_compile()
    exact = _reset(PrivateFairGreedy(math.inf, 0.1, reward_bound=synthetic.reward_bound), synthetic, 50, 2)
    assert exact._can_compile()  # secure uniforms only: no noise on the statistics
    # a stream some round of which update() could refuse: nothing drawn, nothing changed; the numpy rounds raise
    private = _reset(PrivateFairGreedy(2.0, 0.1, reward_bound=1.0, random_state=0), synthetic, 50, 2)
    state = private._noise.rng.bit_generator.state
    assert private.play_compiled(ids, 3.0 * np.sign(rewards)) is None
    assert private.t_ == 0 and private._noise.rng.bit_generator.state == state
    with pytest.raises(ValueError, match="reward_bound"):
        _by_hand(private, synthetic, ids, 3.0 * np.sign(rewards))
    # a started policy is left to its rounds
    started = _reset(OFUL(random_state=0), synthetic, 50, 2)
    started.select(synthetic.support[ids[0]], context_ids=ids[0])
    assert started.play_compiled(ids, rewards) is None


def test_factored_projection_is_the_projection(census, synthetic):
    from dpfair.bandits._ranks import _factor_support
    from dpfair.bandits.gmf import _kernels as kernels

    combos_t, codes, rest_t, cols_a, cols_b = _factor_support(census.support)
    assert cols_a.size > cols_b.size > 0  # the one-hot blocks and the flags take few combinations
    np.testing.assert_array_equal(combos_t.T[codes], census.support[:, cols_a])
    theta = np.random.default_rng(0).normal(size=census.dim)
    out, partial = np.empty(codes.size), np.empty(combos_t.shape[1])
    kernels._project_factored(combos_t, codes, rest_t, theta[cols_a], theta[cols_b], partial, out)
    np.testing.assert_allclose(out, census.support @ theta, rtol=0, atol=1e-12)
    assert _factor_support(synthetic.support)[3].size == 0  # continuous contexts: the direct projection


def test_rank_comparisons_count_rounding_ties_as_ties():
    """Distinct rows whose projections differ by rounding only are ties for both rank pools.

    ``x_a = (s, s, 2s)`` and ``x_b = (2s, 0, 2s)`` project to the same number when ``theta_0 == theta_1``; a
    ``theta_hat`` one ulp off (another engine's rounding) puts ``x_a`` one ulp above ``x_b``.  Each must count
    the other as at or below it; a clear gap must still order them.
    """
    from dpfair.bandits._ranks import _ContextPool, _SupportPool

    s = 1.0 / math.sqrt(24.0)
    support = np.array([[s, s, 2 * s], [2 * s, 0.0, 2 * s], [1.0, 1.0, 1.0]])  # group 0: rows 0, 1; group 1: row 2
    offsets = np.array([0, 2, 3])
    tied = np.array([[1.25, np.nextafter(1.25, 2.0), 0.5]])
    assert support[0] @ tied[0] > support[1] @ tied[0]  # the rounding separates them: a strict <= says 0 below
    apart = np.array([[1.0, 1.0 - 1e-6, 1.0]])  # x_a 1e-6 s below x_b: a gap far above the tolerance
    for theta, expected in ((tied, [[1.0, 1.0], [1.0, 1.0]]), (apart, [[1.0, 1.0], [0.0, 1.0]])):
        for pooled, candidate, want in ((0, 1, expected[0]), (1, 0, expected[1])):
            ids = np.array([[pooled, 2]])
            pool = _SupportPool(support, offsets, 1)
            pool.add(ids)
            np.testing.assert_array_equal(pool.rank_counts(theta, np.array([[candidate, 2]])), [want])
            direct = _ContextPool(2, 1, 2, 3)
            direct.add(support[ids])
            np.testing.assert_array_equal(direct.rank_counts(theta, support[np.array([[candidate, 2]])]), [want])


def test_engine_is_validated(synthetic):
    with pytest.raises(ValueError, match="engine must be one of"):
        simulate(synthetic, {"R": RandomPolicy()}, 10, [0], engine="numba")


def _fair_regret_in_child(env):
    return simulate(env, {"FG": FairGreedy(random_state=0)}, 60, [0, 1]).fair_regret


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="no fork here")
def test_a_process_forked_after_a_compiled_run_runs_compiled_rounds(synthetic):
    """No numba OpenMP threads (which abort a forked child): the experiment runner forks its workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    expected = _fair_regret_in_child(synthetic)  # the kernels have run in this process
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        np.testing.assert_array_equal(pool.submit(_fair_regret_in_child, synthetic).result(timeout=120), expected)
