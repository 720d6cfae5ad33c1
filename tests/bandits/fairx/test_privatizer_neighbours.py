"""Identical-noise neighbour tests of the PRIVATIZER.

The PRIVATIZER once rounded the running sum, not each round's increment, so a changed element moved every
later node by up to one grid step (true delta 3.5e-4 against 1e-6 claimed at epsilon = 0.1, tau = 1e5).

Two neighbouring streams of one agent (one round's ``(x, y)`` replaced) are released with *identical*
noise (the same keyed tree), the releases are turned back into tree nodes, and the nodes are compared:
only the ``floor(log2 tau) + 1`` nodes that contain the changed round may differ, and each by at most
the stated sensitivity.  The pair is chosen adversarially: the other rounds put the running sums a
quarter grid step either side of a rounding boundary, so that rounding running sums (instead of each
round's increment) moves nodes that do not contain the change.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpfair.bandits import PrivFairXLinUCB
from dpfair.bandits.fairx.privatizer import Privatizer


def _lowbit(k: int) -> int:
    return k & -k


def _adversarial_streams(granularity: float, n_releases: int, changed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Contexts ``x`` (d = 1) of both streams and rewards ``y_a``, ``y_b``: one pair per communication round.

    The running sums of ``x^2`` and ``x y`` of stream A sit at ``g (n + 0.25)`` after round ``k`` when
    ``popcount(k)`` is odd and at ``g (n + 0.75)`` when it is even; stream B replaces round ``changed``'s
    pair so that both sums move by ``g / 2`` from then on.  Rounding running sums then flips at every
    other popcount, i.e. at one end of *every* later node.
    """
    g = granularity
    k = np.arange(n_releases + 1)
    offset = np.where(np.array([bin(int(i)).count("1") % 2 for i in k]) == 1, 0.25, 0.75) * g
    offset[:changed] = 0.75 * g
    offset[0] = 0.0
    sums = 0.25 * k + offset  # running sums of x^2 (and of x y) after round k
    increments = np.diff(sums)  # ~0.25: x ~ 0.5, y ~ 0.5
    x = np.sqrt(increments)
    y_a = increments / x
    x_b_sq = increments[changed - 1] + 0.5 * g
    x_b = x.copy()
    x_b[changed - 1] = math.sqrt(x_b_sq)
    y_b = y_a.copy()
    y_b[changed - 1] = (increments[changed - 1] + 0.5 * g) / x_b[changed - 1]
    return np.stack([x, x_b]), y_a, y_b


def _releases(learner: PrivFairXLinUCB, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Agent 0 of 2 releases after every round (the log-det protocol plans one release per round)."""
    n = x.size
    learner.reset(1, 1, n, n_agents=2, agent=0, run_id=3)
    grams, targets = np.empty(n), np.empty(n)
    for t in range(n):
        learner.update(np.array([[x[t]]]), 0, float(y[t]))
        gram, target = learner.local_statistics()
        grams[t], targets[t] = gram[0, 0], target[0]
        learner.receive_shared(np.eye(1), np.zeros(1))  # what the server sends back plays no part here
    return grams, targets


def _nodes(releases: np.ndarray, start: float) -> np.ndarray:
    """Tree nodes from releases: node ``k`` (covering rounds ``k - lowbit(k) + 1 .. k``) is ``R_k - R_{k - lowbit(k)}``."""
    full = np.concatenate([[start], releases])
    k = np.arange(1, releases.size + 1)
    return full[k] - full[k - (k & -k)]


@pytest.mark.parametrize("continual", ["sqrt", "tree"])
@pytest.mark.parametrize(("epsilon", "delta"), [(0.1, 1e-6), (2.0, 0.1)])
def test_identical_noise_neighbours_differ_only_in_the_nodes_holding_the_change(epsilon, delta, continual):
    n_releases, changed = 1024, 300
    # integer prefix sums plus noise that does not depend on the data; the exact BLT's neighbours differ after the
    # change by its encoder's rounding too, within its proved slack (test_privatizer_exact)
    learner = PrivFairXLinUCB(epsilon, delta, 1.0, "log-det", continual=continual, random_state=11, radius=1.0)
    learner.reset(1, 1, n_releases, n_agents=2)
    privatizer = learner._online.sync.privatizer
    g, sensitivity, levels = privatizer.granularity, privatizer.calibration.sensitivity, privatizer.levels_used
    assert levels == math.floor(math.log2(n_releases)) + 1
    (x_a, x_b), y_a, y_b = _adversarial_streams(g, n_releases, changed)
    assert abs(x_b[changed - 1]) <= 1.0 and abs(y_b[changed - 1]) <= 1.0  # a valid replacement
    gram_a, target_a = _releases(learner, x_a, y_a)
    gram_b, target_b = _releases(learner, x_b, y_b)
    lam = learner.regularization
    node_gram = _nodes(gram_a, lam) - _nodes(gram_b, lam)
    node_target = _nodes(target_a, 0.0) - _nodes(target_b, 0.0)
    k = np.arange(1, n_releases + 1)
    holds_change = (k - (k & -k) < changed) & (changed <= k)
    assert holds_change.sum() <= levels
    differing = (node_gram != 0) | (node_target != 0)
    outside = int((differing & ~holds_change).sum())
    assert outside == 0, f"{outside} nodes without the changed round differ"
    # white box: the symmetric (d+1) x (d+1) node without its corner moves by at most the stated sensitivity
    frobenius = np.sqrt(node_gram**2 + 2 * node_target**2)
    assert frobenius.max() <= sensitivity


def test_every_release_is_the_sum_of_rounded_increments_plus_the_noise_with_secure_noise():
    dim, n_releases = 3, 40
    privatizer = Privatizer(1.0, 1e-5, 1.0, dim, n_releases, (2,))  # default: secure noise
    g = privatizer.granularity
    rng = np.random.default_rng(0)
    exact_gram, exact_target = np.zeros((2, dim, dim)), np.zeros((2, dim))
    rounded_gram, rounded_target = np.zeros((2, dim, dim)), np.zeros((2, dim))
    for k in range(n_releases):
        x = rng.uniform(-0.5, 0.5, (2, 4, dim))  # four bandit rounds per communication round
        y = rng.uniform(-1.0, 1.0, (2, 4))
        increment_gram = np.einsum("bri,brj->bij", x, x)
        increment_target = np.einsum("bri,br->bi", x, y)
        exact_gram += increment_gram
        exact_target += increment_target
        rounded_gram += np.rint(increment_gram / g) * g
        rounded_target += np.rint(increment_target / g) * g
        mask = np.array([True, k % 3 != 0])
        if not mask[1]:  # a tree that does not communicate keeps its increment for later
            increment_gram[1], increment_target[1] = 0.0, 0.0
            rounded_gram[1] -= np.rint(np.einsum("ri,rj->ij", x[1], x[1]) / g) * g
            rounded_target[1] -= np.rint(np.einsum("ri,r->i", x[1], y[1]) / g) * g
            exact_gram[1] -= np.einsum("ri,rj->ij", x[1], x[1])
            exact_target[1] -= np.einsum("ri,r->i", x[1], y[1])
        gram_hat, target_hat = privatizer.release(increment_gram, increment_target, mask)
        H, h = privatizer.noise()
        # exact multiples of the grid, released as sum + noise with no further rounding
        assert np.all(gram_hat / g == np.rint(gram_hat / g)) and np.all(target_hat / g == np.rint(target_hat / g))
        np.testing.assert_array_equal(gram_hat - H, rounded_gram)
        np.testing.assert_array_equal(target_hat - h, rounded_target)
        np.testing.assert_array_equal(gram_hat, np.swapaxes(gram_hat, -1, -2))
    np.testing.assert_allclose(rounded_gram, exact_gram, atol=n_releases * g)


def test_one_node_moves_by_at_most_the_sensitivity_for_the_worst_replacement():
    # z = (x, y) and z' = (-x, y) are orthogonal at the bounds: ||z z^T - z' z'^T||_F (corner dropped) is
    # sqrt(2) (L^2 + B^2), all in the target entries 2 x; each x_i sits just above half a grid step, so every
    # target entry also rounds away from zero in both streams and the rounding adds to the move
    dim, bound, reward = 2, 1.0, 1.0
    keys = np.array([7, 7], dtype=np.uint64)  # identical noise in both trees
    privatizer = Privatizer(0.5, 1e-6, bound, dim, 4, (2,), random_state=0, tree_keys=keys)
    g = privatizer.granularity
    x = (np.floor(np.array([0.6, 0.8]) / g) - 1 + 0.51) * g
    assert np.linalg.norm(x) <= bound
    gram = np.stack([np.outer(x, x), np.outer(-x, -x)])
    target = np.stack([x * reward, -x * reward])
    gram_hat, target_hat = privatizer.release(gram, target)
    node_gram, node_target = gram_hat[0] - gram_hat[1], target_hat[0] - target_hat[1]
    moved = math.sqrt(float((node_gram**2).sum() + 2 * (node_target**2).sum()))
    exact = math.sqrt(2 * float(((2 * x * reward) ** 2).sum()))
    assert exact < moved <= privatizer.calibration.sensitivity  # the rounding counts, and the bound holds
    assert moved > math.sqrt(2) * (bound**2 + reward**2) - 8 * g  # the bound is nearly reached


def test_release_refuses_bad_increments_by_name():
    privatizer = Privatizer(1.0, 0.1, 1.0, 2, 4, (3,), random_state=0)
    gram, target = np.zeros((3, 2, 2)), np.zeros((3, 2))
    with pytest.raises(ValueError, match="gram_increment"):
        privatizer.release(np.full((3, 2, 2), np.nan), target)
    with pytest.raises(ValueError, match=r"gram_increment must have shape \(3, 2, 2\)"):
        privatizer.release(gram[:2], target)
    with pytest.raises(ValueError, match="target_increment must have shape"):
        privatizer.release(gram, target[:, :1])
    asymmetric = gram.copy()
    asymmetric[:, 0, 1] = 1.0
    with pytest.raises(ValueError, match="gram_increment must be symmetric"):
        privatizer.release(asymmetric, target)
    with pytest.raises(ValueError, match="mask of shape"):
        privatizer.release(gram, target, np.array([True, False]))
    assert (privatizer.count == 0).all()  # nothing released, no noise drawn
