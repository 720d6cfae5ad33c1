"""The score-bin post-processor's anchor is the group of largest released mass, whatever the declared order."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import postprocessing as pp
from dpfair.classification.postprocessing import DPEqualizedOddsPostProcessor

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")

SIZES = {"small": 40, "a": 2000, "b": 2000}  # the small group declared first: the old anchor


def _draw(rng: np.random.Generator, scale: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Groups whose features and base rates differ (seeded): X, y, the rows' groups."""
    parts = []
    for shift, (name, size) in zip((0.8, -0.3, 0.2), SIZES.items(), strict=True):
        x = rng.normal(shift, 1.0, size=(size * scale, 2))
        y = (rng.uniform(size=size * scale) < 1.0 / (1.0 + np.exp(-(1.5 * x[:, 0] - x[:, 1] + shift)))).astype(int)
        parts.append((x, y, np.full(size * scale, name, dtype=object)))
    return tuple(np.concatenate(part) for part in zip(*parts, strict=True))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X, y, a = _draw(rng)
    X_test, y_test, a_test = _draw(rng, scale=5)  # held out: the small group's rates measured on 200 rows
    base = LogisticRegression().fit(X, y)
    return base, (X, y, a), (X_test, y_test, a_test)


def _fit(base, train, groups, seed, epsilon, score_bins=8):
    est = DPEqualizedOddsPostProcessor(base, epsilon=epsilon, groups=groups, random_state=seed, score_bins=score_bins)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*train[:2], sensitive_features=train[2])


def _held_out_eo(est, test) -> float:
    """Equalized-odds difference of the expected predictions on held-out rows (max over labels of max - min)."""
    X, y, a = test
    p = est.predict_proba(X, sensitive_features=a)[:, 1]
    return max(np.ptp([p[(a == g) & (y == label)].mean() for g in SIZES]) for label in (0, 1))


@pytest.mark.parametrize("score_bins", [8, None])
@pytest.mark.parametrize("epsilon", [np.inf, 1.0])
def test_two_declared_orders_give_the_same_rule_per_group(data, epsilon, score_bins, monkeypatch):
    # the same noise per (bin, group, label) in both orders: the table of the second order is the first's permuted
    base, train, _ = data
    first, second = ["small", "a", "b"], ["b", "small", "a"]
    perm = [first.index(g) for g in second]
    noise = np.random.default_rng(7).laplace(0.0, 2.0 / (train[1].size * 1.0), size=(score_bins or 2, 3, 2))
    fits = []
    for order, cells in ((first, noise), (second, noise[:, perm, :])):
        if not np.isinf(epsilon):
            monkeypatch.setattr(pp, "noisy_frequencies", lambda q, m, eps, source, cells=cells: q + cells)
        fits.append(_fit(base, train, order, 0, epsilon, score_bins))
    one, two = fits
    assert list(two.groups_) == second  # the declared order is kept
    np.testing.assert_allclose(two.probabilities_, one.probabilities_[:, perm], atol=1e-7)
    np.testing.assert_allclose(two.resolution_tp_, one.resolution_tp_[perm], atol=1e-12)
    np.testing.assert_allclose(two.slack_fp_, one.slack_fp_[perm], atol=1e-12)
    np.testing.assert_allclose(two.noisy_frequencies_, one.noisy_frequencies_[:, perm, :])
    assert two.guaranteed_violation_ == pytest.approx(one.guaranteed_violation_, abs=1e-9)
    # the anchor (a group of 2,000 rows) gets no widening nor slack; the small group is widened against it
    widening = one.resolution_tp_ if score_bins else one.slack_tp_
    assert widening[first.index("a")] == 0.0 or widening[first.index("b")] == 0.0
    if not np.isinf(epsilon):
        assert widening[first.index("small")] > 0.0


def test_the_papers_slack_of_a_large_group_is_set_against_the_largest_group(data, monkeypatch):
    # LP~ (1)'s slack 4 ln(4|A|/beta) / (min{q~_ay, q~_0y} m epsilon): against the 40-row anchor, both large groups'
    # constraints were as loose as the small group's; against the largest, the other large group's is ~35 times tighter
    base, train, _ = data
    new = _fit(base, train, list(SIZES), 0, 1.0, score_bins=None)
    monkeypatch.setattr(pp, "_anchor_order", lambda q_tilde: None)
    old = _fit(base, train, list(SIZES), 0, 1.0, score_bins=None)
    small, a, b = range(3)
    assert old.slack_tp_[small] == 0.0 and min(old.slack_tp_[a], old.slack_tp_[b]) > 0.2
    assert min(new.slack_tp_[a], new.slack_tp_[b]) == 0.0  # one of them is the anchor
    assert max(new.slack_tp_[a], new.slack_tp_[b]) < old.slack_tp_[a] / 20  # measured .026 against .91
    assert new.slack_tp_[small] == pytest.approx(old.slack_tp_[a], rel=0.1)


def test_a_small_group_declared_first_no_longer_anchors_the_constraints(data, monkeypatch):
    # paired seeded draws at epsilon = 2: the old anchor (the 40-row group, declared first) against the largest.
    # Measured over 40 draws: held-out EO .071 against .103 (paired difference -.032, standard error .003; at
    # epsilon = 1 .091 against .125, s.e. .009, too unsteady for 24 draws; at .5 no difference, +.006 +- .010)
    base, train, test = data
    groups, seeds = list(SIZES), range(24)
    new = np.array([_held_out_eo(_fit(base, train, groups, s, 2.0), test) for s in seeds])
    monkeypatch.setattr(pp, "_anchor_order", lambda q_tilde: None)  # the old rule: group 0 anchors
    old = np.array([_held_out_eo(_fit(base, train, groups, s, 2.0), test) for s in seeds])
    assert new.mean() < old.mean() - 0.015, (new.mean(), old.mean())
    assert (new < old - 1e-6).mean() > 0.6  # most draws gain, not a few large ones
