"""Binary-tree continual release: exactness without noise, stated variance, node count."""

import math

import numpy as np
import pytest

from dpfair.privacy import BinaryTreeMechanism, PrivacyBudget

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
    assert budget.ledger[0].rho == 0.5


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
