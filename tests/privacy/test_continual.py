"""Continual release: the binary tree (exactness, stated variance, node count, its numbers for a seed) and the
general mechanism (charging, warnings, refusals, secure default noise)."""

import math
import warnings

import numpy as np
import pytest

from dpfair.privacy import (
    BinaryTreeMechanism,
    ContinualSumMechanism,
    PrivacyBudget,
    PrivacyBudgetExceededError,
    PrivacyLeakWarning,
    SeededNoiseWarning,
    set_default_budget,
)
from dpfair.privacy.budget import charged_release
from dpfair.privacy.continual import sqrt_coefficients

# exact analyses and epsilon=inf runs are deliberate here (tests/privacy/test_refusals.py checks the warning)
pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")


def test_noise_off_releases_exact_running_sums():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(37, 3, 3))
    tree = BinaryTreeMechanism(37, (3, 3), sensitivity=1.0, rho=math.inf, symmetric=True, random_state=0)
    for t in range(37):
        np.testing.assert_allclose(tree.step(xs[t]), xs[: t + 1].sum(axis=0), atol=1e-12)
    with pytest.raises(ValueError, match="horizon"):
        tree.update(xs[0])


@pytest.mark.parametrize("horizon", [1, 2, 3, 7, 8, 100, 1000, 1023, 1024])
def test_no_release_uses_more_than_log_nodes(horizon):
    bound = math.ceil(math.log2(horizon)) + 1
    assert max(BinaryTreeMechanism.nodes_used(t) for t in range(1, horizon + 1)) <= bound
    tree = BinaryTreeMechanism(horizon, (1,), sensitivity=1.0, rho=1.0, random_state=0)
    assert tree.n_levels <= bound


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_release_variance_matches_the_stated_variance(kind):
    reps, horizon = 20_000, 13
    cost = {"rho": 0.8} if kind == "gaussian" else {"epsilon": 2.0}
    tree = BinaryTreeMechanism(horizon, (reps,), sensitivity=1.0, random_state=5, **cost)
    for t in range(1, horizon + 1):
        release = tree.step(np.ones(reps))
        noise = release - t
        stated = tree.release_variance()
        assert noise.var() == pytest.approx(stated, rel=0.05), t
        assert abs(noise.mean()) < 5 * math.sqrt(stated / reps)
    assert tree.n_levels == 4
    expected_scale = math.sqrt(4 / 1.6) if kind == "gaussian" else 4 / 2.0
    assert tree.node_scale == pytest.approx(expected_scale)


def test_symmetric_noise_and_shift():
    tree = BinaryTreeMechanism(4, (5000, 3, 3), sensitivity=1.0, rho=1.0, symmetric=True, random_state=2)
    tree.update(np.zeros((5000, 3, 3)))
    tree.update(np.zeros((5000, 3, 3)))
    rel = tree.release()
    np.testing.assert_array_equal(rel, np.swapaxes(rel, -1, -2))
    assert rel[:, 0, 1].var() == pytest.approx(tree.release_variance(), rel=0.06)
    assert rel[:, 2, 2].var() == pytest.approx(tree.release_variance(), rel=0.06)
    shifted = tree.release(shift=2.5)
    np.testing.assert_allclose(shifted - rel, np.broadcast_to(2.5 * np.eye(3), rel.shape))
    # the documented shift makes the noisy matrix dominate the exact one w.p. >= 1 - beta
    bound = tree.noise_operator_norm_bound(0.05)
    eig_min = np.linalg.eigvalsh(rel + bound * np.eye(3)).min(axis=1)
    assert (eig_min >= 0).mean() >= 0.95


def test_budget_is_charged_once_for_the_horizon():
    budget = PrivacyBudget(10.0, 1e-5)
    BinaryTreeMechanism(100, (2,), sensitivity=1.0, rho=0.5, budget=budget, random_state=0)
    assert [entry.rho for entry in budget.ledger] == [0.5]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"horizon": 0}, "horizon"),
        ({"sensitivity": -1.0}, "sensitivity"),
        ({"rho": None}, "rho"),
        ({"rho": float("nan")}, "rho"),
        ({"symmetric": True, "shape": (2, 3)}, "symmetric"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"horizon": 8, "shape": (2,), "sensitivity": 1.0, "rho": 1.0, "random_state": 0, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        BinaryTreeMechanism(args.pop("horizon"), args.pop("shape"), **args)
    tree = BinaryTreeMechanism(8, (2,), sensitivity=1.0, rho=1.0, random_state=0)
    with pytest.raises(ValueError, match="element"):
        tree.update([np.nan, 1.0])
    with pytest.raises(ValueError, match="element"):
        tree.update([1.0, 2.0, 3.0])


# ------------------------------------------------------------------ the general continual-release mechanism
def _reference_tree_releases(horizon, shape, rho, seed, xs, symmetric=False):
    """BinaryTreeMechanism's arithmetic written out (node = block + rng.normal; release = sum of nodes)."""
    rng = np.random.default_rng(seed)
    n_levels = horizon.bit_length()
    scale = 1.0 * math.sqrt(n_levels / 2.0) / math.sqrt(rho)
    exact, noisy, out = np.zeros((n_levels, *shape)), np.zeros((n_levels, *shape)), []
    iu = np.triu_indices(shape[-1]) if symmetric else None
    for t in range(1, horizon + 1):
        level = (t & -t).bit_length() - 1
        block = exact[:level].sum(axis=0) + xs[t - 1]
        if symmetric:
            upper = block[..., iu[0], iu[1]] + rng.normal(0.0, scale, size=block[..., iu[0], iu[1]].shape)
            node = np.empty_like(block)
            node[..., iu[0], iu[1]] = upper
            node[..., iu[1], iu[0]] = upper
        else:
            node = block + rng.normal(0.0, scale, size=block.shape)
        exact[level], exact[:level], noisy[:level], noisy[level] = block, 0.0, 0.0, node
        out.append(noisy[[i for i in range(n_levels) if (t >> i) & 1]].sum(axis=0))
    return np.array(out)


@pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")
@pytest.mark.parametrize("symmetric", [False, True])
def test_binary_tree_numbers_are_bit_identical_for_a_seed(symmetric):
    """PrivateFairGreedy's policies use BinaryTreeMechanism: its releases for a seed must not move."""
    horizon, shape = 29, ((2, 3, 3) if symmetric else (4,))
    xs = np.random.default_rng(3).normal(size=(horizon, *shape))
    if symmetric:
        xs = xs + np.swapaxes(xs, -1, -2)
    tree = BinaryTreeMechanism(horizon, shape, sensitivity=1.0, rho=0.8, symmetric=symmetric, random_state=9)
    got = np.array([tree.step(x) for x in xs])
    np.testing.assert_array_equal(got, _reference_tree_releases(horizon, shape, 0.8, 9, xs, symmetric))
    # the general mechanism with the tree factorization draws the same noise: same releases up to rounding
    general = ContinualSumMechanism(horizon, shape, sensitivity=1.0, rho=0.8, factorization="tree",
                                    symmetric=symmetric, random_state=9)
    assert general.noise_scale == pytest.approx(tree.node_scale, rel=1e-15)
    np.testing.assert_allclose(np.array([general.step(x) for x in xs]), got, rtol=1e-12, atol=1e-12)
    assert [general.release_variance(t) for t in range(1, horizon + 1)] == pytest.approx(
        [tree.release_variance(t) for t in range(1, horizon + 1)], rel=1e-12)


def test_secure_default_noise_has_the_stated_variance_and_does_not_warn():
    """Default arguments: the square root, secure noise, no seeded-noise warning; variance = sigma^2 ||B_t||^2."""
    horizon, reps = 3, 1000
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeededNoiseWarning)
        mech = ContinualSumMechanism(horizon, (reps,), sensitivity=1.0, rho=0.5)
    assert mech.factorization.name == "sqrt" and mech.privacy_spent_ == {"rho": 0.5}
    assert mech.noise_scale == pytest.approx(mech.factorization.sensitivity)  # sens(C) / sqrt(2 * 0.5)
    for t in range(1, horizon + 1):
        noise = mech.step(np.ones(reps)) - t
        assert noise.var() == pytest.approx(mech.release_variance(), rel=0.2), t  # 4.5 standard errors
    c = sqrt_coefficients(horizon)
    assert mech.release_variance(horizon) == pytest.approx(mech.noise_scale**2 * (c**2).sum(), rel=1e-12)


@pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")
@pytest.mark.parametrize("name", ["sqrt", "honaker", "tree"])
def test_general_mechanism_variance_symmetry_and_shift(name):
    mech = ContinualSumMechanism(5, (4000, 3, 3), sensitivity=1.0, rho=1.0, factorization=name, symmetric=True,
                                 random_state=2)
    for _ in range(3):
        mech.update(np.zeros((4000, 3, 3)))
    rel = mech.release()
    np.testing.assert_array_equal(rel, np.swapaxes(rel, -1, -2))
    assert rel[:, 0, 1].var() == pytest.approx(mech.release_variance(), rel=0.08)
    assert rel[:, 2, 2].var() == pytest.approx(mech.release_variance(), rel=0.08)
    np.testing.assert_allclose(mech.release(shift=1.5) - rel, np.broadcast_to(1.5 * np.eye(3), rel.shape))
    bound = mech.noise_operator_norm_bound(0.05)
    assert (np.linalg.eigvalsh(rel + bound * np.eye(3)).min(axis=1) >= 0).mean() >= 0.95


def test_general_mechanism_charges_once_and_refuses_before_charging():
    budget = PrivacyBudget(10.0, 1e-5)
    with pytest.warns(SeededNoiseWarning):
        ContinualSumMechanism(100, (2,), sensitivity=1.0, rho=0.5, budget=budget, random_state=0)
    assert len(budget.ledger) == 1 and budget.ledger[0].rho == 0.5
    bad = [
        ({"horizon": 0}, "horizon"), ({"sensitivity": -1.0}, "sensitivity"), ({"rho": float("nan")}, "rho"),
        ({"factorization": "banded"}, "factorization"), ({"symmetric": True, "shape": (2, 3)}, "symmetric"),
        ({"symmetric": 1}, "symmetric"), ({"random_state": 0.5}, "random_state"),
        ({"sensitivity": 1e300, "rho": 1e-300}, "rho"),
        ({"shape": (10**9, 10**9)}, "shape"),
    ]
    for kwargs, match in bad:
        args = {"horizon": 8, "shape": (2,), "sensitivity": 1.0, "rho": 1.0, "random_state": 0, "budget": budget,
                **kwargs}
        with pytest.raises((ValueError, TypeError), match=match):
            ContinualSumMechanism(args.pop("horizon"), args.pop("shape"), **args)
    with pytest.raises(PrivacyBudgetExceededError):
        ContinualSumMechanism(8, (2,), sensitivity=1.0, rho=1e6, budget=budget, random_state=0)
    assert len(budget.ledger) == 1


@pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")
def test_general_mechanism_charges_the_process_ledger_unless_inside_a_charged_release():
    ledger = PrivacyBudget(10.0, 1e-5)
    previous = set_default_budget(ledger)
    try:
        ContinualSumMechanism(8, (2,), sensitivity=1.0, rho=0.25, random_state=0)
        assert [e.rho for e in ledger.ledger] == [0.25]
        with charged_release(), warnings.catch_warnings():
            warnings.simplefilter("error", SeededNoiseWarning)  # the release warned once already
            ContinualSumMechanism(8, (2,), sensitivity=1.0, rho=0.25, random_state=0)
        assert len(ledger.ledger) == 1
    finally:
        set_default_budget(previous)


def test_general_mechanism_without_noise_and_its_refusals():
    xs = np.random.default_rng(0).normal(size=(9, 2))
    with pytest.warns(PrivacyLeakWarning, match="exact running sums"):
        mech = ContinualSumMechanism(9, (2,), sensitivity=1.0, rho=math.inf)
    with pytest.raises(ValueError, match="nothing to release"):
        mech.release()
    for t in range(9):
        np.testing.assert_allclose(mech.step(xs[t]), xs[: t + 1].sum(axis=0), atol=1e-12)
    with pytest.raises(ValueError, match="horizon"):
        mech.update(xs[0])
    fresh = ContinualSumMechanism(9, (2,), sensitivity=1.0, rho=math.inf)
    for element, match in (([np.nan, 1.0], "element"), ([1.0, 2.0, 3.0], "element"), ([1e308, 1e308], None)):
        with pytest.raises(ValueError, match=match):
            fresh.update(element)
            fresh.update(element)  # the overflow case refuses on the second (the running sum overflows)
    assert fresh.t == 1  # only the first finite 1e308 element went in
    with pytest.raises(ValueError, match="shift"):
        fresh.release(shift=1.0)  # not square
    with pytest.raises(ValueError, match="symmetric"):
        fresh.noise_operator_norm_bound(0.1)


def test_continual_mechanisms_take_the_callers_noise_source_as_noise():
    """A policy hands the source its release opened as ``noise=``: the same nodes as ``random_state=`` with that
    source; both at once is refused before any charge."""
    from dpfair.privacy import BinaryTreeMechanism, PrivacyBudget
    from dpfair.privacy.noise import get_noise_source

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise outside a release says so; not what is tested here
        a = BinaryTreeMechanism(8, (2,), sensitivity=1.0, rho=1.0, noise=get_noise_source(5), budget=PrivacyBudget(1e9, 0.5))
        b = BinaryTreeMechanism(8, (2,), sensitivity=1.0, rho=1.0, random_state=get_noise_source(5),
                                budget=PrivacyBudget(1e9, 0.5))
    for step in range(8):
        a.update(np.full(2, float(step)))
        b.update(np.full(2, float(step)))
        np.testing.assert_array_equal(a.release(), b.release())
    budget = PrivacyBudget(1e9, 0.5)
    with pytest.raises(TypeError, match=r"either noise= \(a NoiseSource\) or random_state="):
        BinaryTreeMechanism(8, (2,), sensitivity=1.0, rho=1.0, random_state=0, noise=get_noise_source(0), budget=budget)
    assert budget.spent() == (0.0, 0.0)
