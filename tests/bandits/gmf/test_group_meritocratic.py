"""Group meritocratic online selection: Fair-Greedy, Private-Fair-Greedy, OFUL, environments and simulate."""

import math
import warnings
from dataclasses import replace

import numpy as np
import pytest

from dpfair.bandits import (
    OFUL,
    FairGreedy,
    GroupEnvironment,
    PrivateFairGreedy,
    RandomPolicy,
    SyntheticGroupEnvironment,
    cumulative_fair_regret,
    rank_noise_std,
    simulate,
)
from dpfair.bandits.gmf.policies import _regression_noise_scale
from dpfair.fairness import relative_rank
from dpfair.privacy import (
    BinaryTreeMechanism,
    PrivacyBudget,
    PrivacyLeakWarning,
    approx_dp_to_zcdp,
    audit_epsilon,
    zcdp_to_approx_dp,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")


@pytest.fixture(scope="module")
def env():
    return SyntheticGroupEnvironment(n_groups=4, dim=5, population_size=300, random_state=3)


def _run(policy, env, horizon, seeds, *, support=True, capture=None):
    """Run a policy by hand on the environment's streams; return the actions (T, S)."""
    episodes = [env.sample(horizon, s) for s in seeds]
    ids = np.stack([e.context_ids for e in episodes], axis=1)
    rewards = np.stack([e.rewards for e in episodes], axis=1)
    kwargs = {"support": env.support, "support_groups": env.support_group} if support else {}
    policy.reset(env.n_groups, env.dim, horizon, n_runs=len(seeds), **kwargs)
    actions = np.empty((horizon, len(seeds)), dtype=np.int64)
    runs = np.arange(len(seeds))
    for t in range(horizon):
        x = env.support[ids[t]]
        extra = {"context_ids": ids[t]} if support else {}
        a = policy.select(x, **extra)
        if capture is not None:
            capture(policy, t, x)
        policy.update(x, a, rewards[t, runs, a], **extra)
        actions[t] = a
    return actions


def test_fair_greedy_fair_regret_far_below_oful(env):
    result = simulate(env, {"OFUL": OFUL(), "FairGreedy": FairGreedy(), "Random": RandomPolicy()}, 1500, [0, 1, 2])
    final = result.final("fair_regret")["mean"]
    assert final["FairGreedy"] < 0.2 * final["OFUL"]
    assert final["OFUL"] < final["Random"]
    assert result.final("regret")["mean"]["OFUL"] < result.final("regret")["mean"]["FairGreedy"]
    share = result.selection_share()["mean"].loc["FairGreedy"].to_numpy()
    np.testing.assert_allclose(share, 0.25, atol=0.03)  # GMF selects each group about equally often
    assert result.fair_regret.shape == (3, 3, 1500) and result.selections.shape == (3, 3, 4)
    assert (np.diff(result.fair_regret, axis=-1) >= 0).all()


@pytest.mark.parametrize("split_history", [True, False])
@pytest.mark.parametrize("support", [True, False])
def test_private_fair_greedy_at_infinity_is_fair_greedy_exactly(env, split_history, support):
    fg = _run(FairGreedy(split_history=split_history, random_state=5), env, 400, [0, 1], support=support)
    with pytest.warns(PrivacyLeakWarning):
        pfg = PrivateFairGreedy(math.inf, 0.1, split_history=split_history, reward_bound=env.reward_bound,
                                random_state=5)
        pfg.reset(env.n_groups, env.dim, 10)
    pfg_actions = _run(pfg, env, 400, [0, 1], support=support)
    np.testing.assert_array_equal(pfg_actions, fg)


@pytest.mark.parametrize("split_history", [True, False])
def test_support_counts_equal_the_direct_ranks(env, split_history):
    """The support-count ranks are the empirical CDF of the pooled contexts (fairness.relative_rank)."""
    seen = {}

    def capture(policy, t, x):
        if t in (50, 199):
            n_past = t
            start = n_past // 2 if split_history else 0
            pool = np.stack(history[start:n_past])  # (N, S, K, d)
            theta = policy.theta_
            ranks = np.empty((2, env.n_groups))
            for s in range(2):
                for k in range(env.n_groups):
                    # one non-BLAS loop for pool and candidate: a repeated record projects to the same number
                    both = np.einsum("nd,d->n", np.concatenate([pool[:, s, k], x[s, k][None]]), theta[s])
                    ranks[s, k] = relative_rank(both[-1:], [0], both[:-1], np.zeros(both.size - 1))[0]
            counts = policy._pool.rank_counts(theta, policy._last_ids) / (n_past - start)
            seen[t] = (ranks, counts)
        history.append(x.copy())

    history = []

    class Spy(FairGreedy):
        def _select(self, x, ids):
            self._last_ids = ids
            return super()._select(x, ids)

    _run(Spy(split_history=split_history, random_state=0), env, 200, [0, 1], capture=capture)
    for ranks, counts in seen.values():
        np.testing.assert_allclose(counts, ranks, atol=1e-12)


def test_tree_ridge_with_noise_off_equals_exact_ridge_every_round(env):
    checked = []

    def capture(policy, t, x):
        # theta_ is the ridge estimate of the regression half: rounds [0, floor(t / 2))
        n_reg = t // 2
        if n_reg:
            X, y = np.stack(chosen[:n_reg]), np.stack(rew[:n_reg])  # (n, S, d), (n, S)
            for s in range(2):
                exact = np.linalg.solve(0.7 * np.eye(env.dim) + X[:, s].T @ X[:, s], X[:, s].T @ y[:, s])
                np.testing.assert_allclose(policy.theta_[s], exact, rtol=1e-9, atol=1e-11)
            checked.append(t)

    chosen, rew = [], []

    class Recorder(PrivateFairGreedy):
        def update(self, contexts, actions, rewards, **kw):
            chosen.append(np.asarray(contexts)[np.arange(2), actions])
            rew.append(np.asarray(rewards))
            return super().update(contexts, actions, rewards, **kw)

    _run(Recorder(math.inf, 0.1, regularization=0.7, reward_bound=env.reward_bound, random_state=1), env, 120, [0, 1],
         capture=capture)
    assert len(checked) == 118


@pytest.mark.parametrize("continual", ["tree", "sqrt"])
def test_private_release_is_shifted_and_positive_definite(env, continual):
    pfg = PrivateFairGreedy(15.0, 0.1, reward_bound=env.reward_bound, random_state=0, continual=continual)
    _run(pfg, env, 300, [0, 1, 2])
    tree = pfg.tree_
    assert _regression_noise_scale(tree) > 0 and pfg.n_shift_failures_ == 0
    assert np.all(np.linalg.eigvalsh(pfg.ridge_.gram) > 0)
    # the shift is the privacy core's operator-norm bound at beta = shift_failure_probability / T_reg
    expected = tree.noise_operator_norm_bound(0.05 / 150)
    exact_xx = pfg.ridge_.gram - np.eye(env.dim) * (1.0 + expected)
    assert exact_xx.shape == (3, env.dim, env.dim)


def test_privacy_spent_equals_the_requested_budget(env):
    budget = PrivacyBudget(30.0, 0.2)
    pfg = PrivateFairGreedy(15.0, 0.1, budget_split=0.3, reward_bound=env.reward_bound, budget=budget, random_state=0)
    _run(pfg, env, 50, [0])
    assert budget.spent() == pytest.approx((15.0, 0.1), rel=1e-12)
    assert pfg.privacy_spent_["epsilon"] == 15.0 and pfg.privacy_spent_["delta"] == 0.1
    # each part is (epsilon_part, delta_part)-DP by the standard zCDP conversion: they add up to (15, 0.1)
    eps_reg = zcdp_to_approx_dp(pfg.rho_regression_, 0.03, method="standard")
    eps_rank = zcdp_to_approx_dp(pfg.rho_rank_, 0.07, method="standard")
    assert eps_reg + eps_rank == pytest.approx(15.0, rel=1e-9)
    assert eps_reg == pytest.approx(4.5, rel=1e-9)
    result = simulate(env, {"p": pfg}, 20, [0, 1])
    assert result.privacy_spent["p"] == {"epsilon": 15.0, "delta": 0.1}
    assert budget.spent() == pytest.approx((30.0, 0.2))  # simulate's clone charges the shared budget once
    with pytest.raises(Exception, match="budget"):
        simulate(env, {"p": pfg}, 20, [0])


def test_rank_noise_sigma_matches_the_formula(env):
    T = 200
    pfg = PrivateFairGreedy(4.0, 0.01, reward_bound=env.reward_bound, random_state=0)
    pfg.reset(env.n_groups, env.dim, T)
    rho = (math.sqrt(math.log(1 / 0.005) + 2.0) - math.sqrt(math.log(1 / 0.005))) ** 2
    assert pfg.rho_rank_ == pytest.approx(rho, rel=1e-12)
    for t in (2, 3, 10, 101, 200):
        n_past = t - 1
        n = n_past - n_past // 2
        assert pfg.rank_noise_std(t) == pytest.approx(math.sqrt(T / (2 * n * n * rho)), rel=1e-12)
        assert rank_noise_std(n, T, pfg.rho_rank_) == pfg.rank_noise_std(t)
    assert pfg.rank_noise_std(1) == math.inf
    # the noise actually added: noisy minus exact ranks over 3000 runs of one stream
    scores = {}

    class Spy(PrivateFairGreedy):
        def _tie_break(self, ranks):
            scores[self.t_] = ranks.copy()
            return super()._tie_break(ranks)

    n_runs, horizon = 3000, 12
    ep = env.sample(horizon, 0)
    for private in (True, False):
        spy = Spy(4.0 if private else math.inf, 0.01, reward_bound=env.reward_bound, random_state=1)
        spy.reset(env.n_groups, env.dim, horizon, n_runs=n_runs)
        for t in range(horizon):
            x = np.broadcast_to(env.support[ep.context_ids[t]], (n_runs, env.n_groups, env.dim))
            spy.select(x)
            # a fixed public action keeps every run on the same history
            spy.update(x, np.zeros(n_runs, dtype=np.int64), np.full(n_runs, ep.rewards[t, 0]))
            if t == horizon - 1:
                break
        if private:
            noisy, sigma = scores[horizon - 1], spy.rank_noise_std(horizon)
    # the exact ranks differ between runs only through the private theta_hat; compare spreads around each run's
    # exact rank by re-running the count without noise on the private theta_hat is not possible here, so check
    # the total spread is at least sigma and not far above it (ranks lie in [0, 1])
    spread = noisy.std(axis=0)
    assert np.all(spread >= 0.95 * sigma) and np.all(spread <= math.sqrt(sigma**2 + 0.25) * 1.05)


def _rank_release_mechanism(noise_factor):
    """One noisy rank release of group 0 at round 2 (unsplit, theta_hat fixed to a public value)."""

    def mechanism(pool_context, size, rng):
        pfg = PrivateFairGreedy(8.0, 1e-3, budget_split=0.5, split_history=False, random_state=rng)
        pfg.reset(2, 1, 2, n_runs=size)
        pfg.update(np.broadcast_to([[pool_context], [0.5]], (size, 2, 1)), np.zeros(size, dtype=np.int64),
                   np.zeros(size))
        pfg.theta_ = np.ones((size, 1))  # a public theta_hat: the audit isolates the rank release
        pfg._config = replace(pfg._config, rho_rank=pfg._config.rho_rank * noise_factor**2)  # factor > 1: too little noise
        out = {}

        def capture(ranks):
            out["r"] = ranks
            return np.zeros(size, dtype=np.int64)

        pfg._tie_break = capture
        pfg.select(np.broadcast_to([[0.5], [0.5]], (size, 2, 1)))
        return out["r"][:, 0]

    return mechanism


def test_rank_release_audit_honest_and_broken():
    pfg = PrivateFairGreedy(8.0, 1e-3, split_history=False)
    pfg.reset(2, 1, 2)
    per_release = zcdp_to_approx_dp(pfg.rho_rank_ / 2, 1e-3)  # one of T = 2 releases, rho_rank / T each
    honest = audit_epsilon(_rank_release_mechanism(1.0), 0.2, 0.8, n_samples=20000, delta=1e-3)
    assert honest.epsilon_lower_bound <= per_release
    broken = audit_epsilon(_rank_release_mechanism(2.0), 0.2, 0.8, n_samples=20000, delta=1e-3)
    assert broken.epsilon_lower_bound > per_release


def test_bad_input_raises_clear_errors(env):
    pfg = PrivateFairGreedy(1.0, 0.1, context_bound=0.5, reward_bound=1.0, random_state=0)
    pfg.reset(4, env.dim, 10)
    x = env.support[env.sample(1, 0).context_ids[0]]
    with pytest.raises(ValueError, match="context_bound"):
        pfg.update(x, 0, 0.1)
    small = x / np.linalg.norm(x, axis=1, keepdims=True) * 0.4
    with pytest.raises(ValueError, match="reward_bound"):
        pfg.update(small, 0, 5.0)
    assert pfg.t_ == 0 and pfg.n_regression_ == 0  # refused rounds change nothing
    with pytest.raises(ValueError, match="NaN"):
        pfg.select(np.full_like(small, np.nan))
    with pytest.raises(ValueError, match="n_groups=4"):
        pfg.select(small[:3])
    with pytest.raises(ValueError, match="horizon"):
        FairGreedy().reset(4, 3, 0)
    with pytest.raises(ValueError, match="horizon"):
        simulate(env, {"r": RandomPolicy()}, 0, [0])
    with pytest.raises(ValueError, match="seeds"):
        simulate(env, {"r": RandomPolicy()}, 5, [])
    with pytest.raises(ValueError, match="epsilon"):
        PrivateFairGreedy(-1.0, 0.1).reset(4, 3, 5)
    with pytest.raises(ValueError, match="delta"):
        PrivateFairGreedy(1.0, 0.0).reset(4, 3, 5)
    with pytest.raises(ValueError, match="budget_split"):
        PrivateFairGreedy(1.0, 0.1, budget_split=1.0).reset(4, 3, 5)
    with pytest.raises(TypeError, match="split_history"):
        FairGreedy(split_history="yes").reset(4, 3, 5)
    with pytest.raises(ValueError, match="delta"):
        OFUL(delta=2.0).reset(4, 3, 5)
    done = RandomPolicy(random_state=0).reset(4, 3, 1)
    done.update(np.zeros((4, 3)), 0, 0.0)
    with pytest.raises(ValueError, match="used up"):
        done.select(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="actions"):
        RandomPolicy().reset(4, 3, 2).update(np.zeros((4, 3)), 7, 0.0)
    with pytest.raises(ValueError, match="context_ids"):
        FairGreedy().reset(4, env.dim, 5, support=env.support, support_groups=env.support_group).select(x)


def test_environment_ranks_and_bounds(env):
    ep = env.sample(500, 7)
    assert ep.context_ids.shape == (500, 4)
    np.testing.assert_array_equal(env.support_group[ep.context_ids], np.broadcast_to(np.arange(4), (500, 4)))
    np.testing.assert_allclose(ep.mean_rewards, env.support[ep.context_ids] @ env.theta)
    for k in range(4):
        np.testing.assert_allclose(env.relative_rank(k, ep.mean_rewards[:, k]), ep.relative_ranks[:, k])
    assert np.abs(ep.rewards).max() <= env.reward_bound and env.context_bound <= 1 + 1e-12
    assert np.abs(ep.rewards - ep.mean_rewards).max() <= 3 * env.noise_std + 1e-12
    np.testing.assert_array_equal(env.sample(500, 7).context_ids, ep.context_ids)
    pops = [np.array([[0.0], [1.0], [1.0], [2.0]]), np.array([[0.5], [0.5]])]
    small = GroupEnvironment(pops, [1.0], noise_std=0.0)
    np.testing.assert_allclose(small.relative_rank(0, [0.0, 1.0, 1.5, 2.0]), [0.25, 0.75, 0.75, 1.0])
    assert small.support.shape == (4, 1)  # duplicates collapse into one support row
    with pytest.raises(ValueError, match="populations"):
        GroupEnvironment([np.ones((3, 2))], [1.0, 2.0])


def test_cumulative_fair_regret_closed_form():
    ranks = np.array([[0.9, 0.1], [0.2, 0.6], [0.5, 0.5]])
    np.testing.assert_allclose(cumulative_fair_regret(ranks, np.array([1, 1, 0])), [0.8, 0.8, 0.8])
    with pytest.raises(ValueError, match="actions"):
        cumulative_fair_regret(ranks, np.array([0, 2, 0]))


def test_non_private_policies_warn_and_random_spends_nothing(env):
    with pytest.warns(PrivacyLeakWarning):
        FairGreedy().reset(4, 3, 5)
    with pytest.warns(PrivacyLeakWarning):
        OFUL().reset(4, 3, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        assert RandomPolicy().reset(4, 3, 5).privacy_spent_["epsilon"] == 0.0
        PrivateFairGreedy(1.0, 0.1).reset(4, 3, 5)


def test_simulate_refuses_policies_whose_shared_budget_pays_each_but_not_both():
    """The one budget-can-pay trial (PrivacyBudget.check_can_pay): both charges tried together, nothing charged."""
    from dpfair.privacy import PrivacyBudgetExceededError

    env = SyntheticGroupEnvironment(n_groups=3, dim=2, population_size=20, random_state=0)
    budget, own = PrivacyBudget(1.5, 0.2), PrivacyBudget(1.0, 0.1)
    policies = {name: PrivateFairGreedy(1.0, 0.05, reward_bound=env.reward_bound, budget=b, random_state=0)
                for name, b in (("a", budget), ("b", own), ("c", budget))}
    with pytest.raises(PrivacyBudgetExceededError,
                       match=r"policies\['a'\]\.budget and policies\['c'\]\.budget \(one shared budget\) cannot pay"):
        simulate(env, policies, 5, [0])
    assert budget.ledger == () and own.ledger == ()
    del policies["c"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        simulate(env, policies, 5, [0])
    assert [e.epsilon for e in budget.ledger] == [1.0] and [e.epsilon for e in own.ledger] == [1.0]


# ------------------------------------------------------------------ continual release of the regression sums
# sha256 of the actions (int64, (T, S)) of _run(PrivateFairGreedy(6.0, 0.1, split_history=..., random_state=5), env,
# 300, [0, 1]), recorded with the code before `continual` existed (the binary tree was the only mechanism)
_TREE_ACTIONS_SHA256 = {
    True: "eecf5c0974f646b031f4071076bde806750bd5f0addb070263516793d02a89d5",
    False: "bf84f94030a60cd41d2beb8d14966ec4d3f47f5e2675e5c51d43e6e03d744d5f",
}


@pytest.mark.parametrize("split_history", [True, False])
def test_continual_tree_is_the_papers_release_bit_for_bit(env, split_history):
    import hashlib

    pfg = PrivateFairGreedy(6.0, 0.1, split_history=split_history, reward_bound=env.reward_bound, random_state=5,
                            continual="tree")
    actions = _run(pfg, env, 300, [0, 1])
    assert type(pfg.tree_) is BinaryTreeMechanism and pfg.continual_ == "tree"
    assert hashlib.sha256(actions.astype(np.int64).tobytes()).hexdigest() == _TREE_ACTIONS_SHA256[split_history]
    # the default is the square root: another noise, other actions on the same seed
    default = PrivateFairGreedy(6.0, 0.1, split_history=split_history, reward_bound=env.reward_bound, random_state=5)
    assert not np.array_equal(_run(default, env, 300, [0, 1]), actions) and default.continual_ == "sqrt"


@pytest.mark.parametrize("continual", ["sqrt", "honaker", "tree"])
def test_regression_noise_is_calibrated_by_the_factorizations_column_norm(continual):
    """sigma = sensitivity * max_s ||C e_s|| / sqrt(2 rho_reg), the norm recomputed from the dense C (A = B C)."""
    T, d = 40, 2  # T_reg = 20 rows of [x; y][x; y]^T
    pfg = PrivateFairGreedy(3.0, 0.1, reward_bound=2.0, random_state=0, continual=continual)
    pfg.reset(3, d, T)
    mech = pfg.tree_
    rho = approx_dp_to_zcdp(1.5, 0.05)
    assert pfg.rho_regression_ == rho
    sensitivity = math.sqrt(2.0) * (1.0 + 4.0)  # sqrt(2) (C^2 + B^2)
    if continual == "tree":
        assert mech.node_scale == pytest.approx(sensitivity * math.sqrt(5 / (2 * rho)), rel=1e-12)  # L = 5 levels
        return
    B, C = mech.factorization.matrices()
    np.testing.assert_allclose(B @ C, np.tril(np.ones((20, 20))), atol=1e-12)  # a factorization of the prefix sums
    column = np.linalg.norm(C, axis=0).max()
    assert mech.noise_scale == pytest.approx(sensitivity * column / math.sqrt(2.0 * rho), rel=1e-12)
    for t in (1, 7, 20):  # each release's noise: std sigma ||B_t|| per entry
        assert mech.release_variance(t) == pytest.approx(mech.noise_scale**2 * np.sum(B[t - 1] ** 2), rel=1e-12)
    if continual == "sqrt":  # the worst release of the tree sums popcount(t) <= L nodes: the root is smaller
        tree = BinaryTreeMechanism(20, (1,), sensitivity=sensitivity, rho=rho, random_state=0)
        assert max(mech.release_variance(t) for t in range(1, 21)) < max(tree.release_variance(t) for t in range(1, 21))


def test_sqrt_identical_noise_neighbours_move_the_releases_by_exactly_the_change():
    """Same noise, one regression row replaced at step s: every release t >= s moves by exactly A e_s (the change),
    the releases before s not at all (the noise B z is data-independent)."""
    T, d, s = 60, 3, 11
    rng = np.random.default_rng(1)
    z = rng.uniform(-0.5, 0.5, size=(T // 2, 2, d + 1))
    leaves = z[:, :, :, None] * z[:, :, None, :]
    other = leaves.copy()
    w = np.array([0.3, -0.2, 0.1, 0.4])
    other[s - 1] = np.outer(w, w)  # the neighbour's row s
    releases = []
    for stream in (leaves, other):
        pfg = PrivateFairGreedy(2.0, 0.1, reward_bound=1.0, random_state=7, continual="sqrt")
        pfg.reset(3, d, T, n_runs=2)
        out = []
        for leaf in stream:
            pfg.tree_.update(leaf)
            out.append(pfg.tree_.release())
        releases.append(np.array(out))
    moved = releases[1] - releases[0]
    np.testing.assert_array_equal(moved[: s - 1], 0.0)
    np.testing.assert_allclose(moved[s - 1 :], np.broadcast_to(other[s - 1] - leaves[s - 1], moved[s - 1 :].shape),
                               rtol=0, atol=1e-12)
    noise = releases[0] - np.cumsum(leaves, axis=0)
    assert np.abs(noise).min() > 0  # and the releases are noisy
    np.testing.assert_allclose(noise, noise.transpose(0, 1, 3, 2), atol=0)  # symmetric noise (Gram matrices)


def _release_noise_ratios(continual, *, mutant=False):
    """Empirical std of the releases' noise over 600 runs / the std the privacy accounting promises, computed
    independently of the mechanism: sqrt(2) (C^2 + B^2) max_s ||C e_s|| / sqrt(2 rho_reg) * ||B_t|| (dense B, C)."""
    T, d, runs = 32, 1, 600
    pfg = PrivateFairGreedy(2.0, 0.1, reward_bound=1.0, random_state=3, continual=continual)
    pfg.reset(3, d, T, n_runs=runs)
    mech = pfg.tree_
    if mutant:  # a broken calibration: half the noise
        mech.noise_scale *= 0.5
    B, C = mech.factorization.matrices()
    sigma = math.sqrt(2.0) * 2.0 * np.linalg.norm(C, axis=0).max() / math.sqrt(2.0 * approx_dp_to_zcdp(1.0, 0.05))
    leaf = np.zeros((runs, d + 1, d + 1))
    ratios = []
    for t in range(1, T // 2 + 1):
        mech.update(leaf)
        if t in (1, 5, 16):
            noise = mech.release()  # the exact sums are zero: the release is its noise
            ratios.append(noise.reshape(runs, -1).std() / (sigma * np.linalg.norm(B[t - 1])))
    return np.array(ratios)


@pytest.mark.parametrize("continual", ["sqrt", "honaker"])
def test_release_noise_std_matches_the_calibration_and_a_half_noise_mutant_is_caught(continual):
    np.testing.assert_allclose(_release_noise_ratios(continual), 1.0, atol=0.08)
    assert (np.abs(_release_noise_ratios(continual, mutant=True) - 1.0) > 0.3).all()


def test_continual_budget_and_bad_values(env):
    budget = PrivacyBudget(4.0, 0.2)
    for continual in ("auto", "honaker"):
        pfg = PrivateFairGreedy(2.0, 0.1, reward_bound=env.reward_bound, budget=budget, random_state=0,
                                continual=continual)
        _run(pfg, env, 60, [0])
        assert pfg.privacy_spent_["epsilon"] == 2.0 and pfg.privacy_spent_["delta"] == 0.1
    assert budget.spent() == pytest.approx((4.0, 0.2), rel=1e-12)
    for bad in ("square-root", None, 3):
        with pytest.raises(ValueError, match="continual must be one of"):
            PrivateFairGreedy(2.0, 0.1, continual=bad).reset(2, 2, 5)
    assert budget.spent() == pytest.approx((4.0, 0.2), rel=1e-12)  # a refused reset charges nothing
    # epsilon = inf: the exact sums are Fair-Greedy's tree whatever the factorization
    exact = PrivateFairGreedy(math.inf, 0.1, reward_bound=env.reward_bound, random_state=5, continual="sqrt")
    np.testing.assert_array_equal(_run(exact, env, 120, [0]), _run(FairGreedy(random_state=5), env, 120, [0]))
