"""DPEqualizedOddsPostProcessor: the released fairness guarantee, its warning, the score-bin
variant (Hardt et al. on a thresholded score) and the paper's variant kept bit for bit."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

from dpfair.classification import _postprocessing_guarantee as guarantee_module
from dpfair.classification import postprocessing as pp_module
from dpfair.classification.postprocessing import DPEqualizedOddsPostProcessor, FairnessSlackWarning
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyBudget, audit_epsilon


class ScoreColumn(ClassifierMixin, BaseEstimator):
    """A 'fitted' base classifier whose probability of class 1 is the first column of X."""

    def fit(self, X, y=None):
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = 1
        return self

    def predict_proba(self, X):
        score = np.asarray(X, dtype=float)[:, 0]
        return np.column_stack([1.0 - score, score])

    def predict(self, X):
        return (np.asarray(X, dtype=float)[:, 0] > 0.5).astype(int)


class PredictOnly(ClassifierMixin, BaseEstimator):
    """A base classifier without scores."""

    def fit(self, X, y=None):
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(int)


def _population(m=4000, n_bins=4, seed=0):
    """Rows with a score bin, a group (a small group 1) and a label; the score carries signal and a group gap."""
    rng = np.random.default_rng(seed)
    group = (rng.uniform(size=m) < 0.2).astype(int)
    label = (rng.uniform(size=m) < np.where(group == 1, 0.3, 0.5)).astype(int)
    latent = label + 0.6 * group + rng.normal(0.0, 0.8, m)
    cell = np.clip(np.floor((latent + 1.0) / 3.0 * n_bins), 0, n_bins - 1).astype(int)
    X = ((cell + 0.5) / n_bins)[:, None]  # the bin centre: score_bins=n_bins recovers the cell
    return X, group, label, cell


def _exact_violation(p, cell, group, label, labels=(0, 1)):
    """The fitted predictor's equalized-odds violation on its training rows (the exact table)."""
    q_hat = pp_module.joint_frequencies(cell, group, label, 2, p.shape[0])
    worst = 0.0
    for y_value in labels:
        rates = (p * q_hat[:, :, y_value]).sum(axis=0) / q_hat[:, :, y_value].sum(axis=0)
        worst = max(worst, abs(rates[1] - rates[0]))
    return worst


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("score_bins", [None, 4])
def test_guarantee_holds_in_all_but_beta_of_the_fits_and_a_mutant_without_the_noise_term_is_caught(score_bins):
    """The in-sample violation exceeds guaranteed_violation_ in at most beta of the fits (here: never).

    The truth is known (the exact table of the simulated rows); 200 seeded noise draws.  A mutant guarantee without
    the noise term (the noisy rates taken at face value) is exceeded in a large share of the fits: the test can fail.
    """
    n_bins = 2 if score_bins is None else score_bins
    X, group, label, cell = _population(n_bins=n_bins)
    if score_bins is None:
        X = cell[:, None].astype(float)  # binary predictions: the paper's variant on PredictOnly
    base = (PredictOnly() if score_bins is None else ScoreColumn()).fit(X)
    beta, n_fits, exceeded, mutant_exceeded = 0.05, 200, 0, 0
    for seed in range(n_fits):
        est = DPEqualizedOddsPostProcessor(base, epsilon=1.0, gamma=0.02, beta=beta, groups=[0, 1], random_state=seed,
                                           score_bins=score_bins)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, label, sensitive_features=group)
        truth = _exact_violation(est.probabilities_, cell, group, label)
        exceeded += truth > est.guaranteed_violation_ + 1e-12
        mutant = est.guaranteed_violation_ - est.noise_slack_  # at most the noisy violation: no noise term
        mutant_exceeded += truth > mutant + 1e-12
    print(f"score_bins={score_bins}: guarantee exceeded in {exceeded}/{n_fits} fits, mutant in {mutant_exceeded}")
    assert exceeded <= beta * n_fits
    assert mutant_exceeded > 3 * beta * n_fits


def test_guaranteed_violation_closed_form_on_a_small_table():
    """E is the Gamma(K, 2/(m eps)) quantile at 1 - beta' with (1 - beta')^(2|A|) = 1 - beta; slack E/q~_ay + E/q~_0y."""
    from scipy.stats import gamma

    q = np.array([[[0.30, 0.05], [0.20, 0.02]], [[0.10, 0.15], [0.05, 0.13]]])  # [bin, group, label]
    p = np.array([[0.0, 0.1], [1.0, 0.9]])
    m, eps, beta = 1000, 2.0, 0.1
    beta_each = 1 - (1 - beta) ** (1 / 4)
    E = gamma.ppf(1 - beta_each, 2, scale=2 / (m * eps))
    assert guarantee_module.rate_error_bound(2, 4, m, eps, beta) == pytest.approx(E, rel=1e-12)
    expected = 0.0
    for y_value in (0, 1):
        mass = q[:, :, y_value].sum(axis=0)
        rates = (p * q[:, :, y_value]).sum(axis=0) / mass
        expected = max(expected, abs(rates[1] - rates[0]) + E / mass[1] + E / mass[0])
    value, noise = guarantee_module.guaranteed_violation(q, p, m, eps, beta, (0, 1))
    assert value == pytest.approx(expected, rel=1e-12)
    assert noise == pytest.approx(max(E / q[:, 1, y].sum() + E / q[:, 0, y].sum() for y in (0, 1)), rel=1e-12)
    assert guarantee_module.guaranteed_violation(q, p, m, math.inf, beta, (0, 1))[1] == 0.0


def test_fairness_slack_warning_fires_when_the_slack_exceeds_gamma_and_not_otherwise():
    X, group, label, cell = _population(m=20_000, n_bins=4, seed=1)
    base = ScoreColumn().fit(X)
    kwargs = {"groups": [0, 1], "score_bins": 4, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("error", FairnessSlackWarning)
        quiet = DPEqualizedOddsPostProcessor(base, epsilon=20.0, gamma=0.05, **kwargs).fit(X, label, sensitive_features=group)
    assert quiet.guaranteed_violation_ - 0.05 <= 0.05
    with pytest.warns(FairnessSlackWarning, match=r"guaranteed \(probability 0.95\)") as caught:
        loud = DPEqualizedOddsPostProcessor(base, epsilon=0.2, gamma=0.02, **kwargs).fit(X, label, sensitive_features=group)
    assert loud.guaranteed_violation_ - 0.02 > 0.02
    messages = [str(w.message) for w in caught if issubclass(w.category, FairnessSlackWarning)]
    assert f"{loud.guaranteed_violation_:.3g}" in messages[0]  # a released number, printed
    with warnings.catch_warnings():  # epsilon = inf: the exact violation, within gamma
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("error", FairnessSlackWarning)
        exact = DPEqualizedOddsPostProcessor(base, epsilon=math.inf, gamma=0.0, score_bins=4).fit(
            X, label, sensitive_features=group)
    assert exact.noise_slack_ == 0.0 and exact.guaranteed_violation_ <= 1e-9
    assert exact.guaranteed_violation_ == pytest.approx(_exact_violation(exact.probabilities_, cell, group, label),
                                                        abs=1e-12)


def test_the_papers_variant_is_bit_identical_to_before_part_d():
    """score_bins=None (the paper's variant, the default before score bins) reproduces the seeded results of
    dpfair before score bins and the released guarantee bit for bit."""
    X, y, g = make_classification(3000, disparity=2.0, random_state=12)
    base = LogisticRegression().fit(X, y)
    before = {  # probabilities_ (float.hex) and objective_ of the pre-part-D code, same data and seed
        (0.5, 0.02): (["0x0.0p+0", "0x1.4d77ff12f8c91p-5", "0x1.de8eea6f5fb5fp-1", "0x1.0000000000000p+0"],
                      "0x1.f4e0df4d70979p-3"),
        (2.0, 0.0): (["0x0.0p+0", "0x1.bc3e3c4da227fp-4", "0x1.b9e6698c39e05p-1", "0x1.0000000000000p+0"],
                     "0x1.04b0948cfd184p-2"),
    }
    for (eps, gamma), (probabilities, objective) in before.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = DPEqualizedOddsPostProcessor(base, epsilon=eps, gamma=gamma, groups=[0, 1], random_state=5,
                                               score_bins=None).fit(X, y, sensitive_features=g)
        assert [float(v).hex() for v in est.probabilities_.ravel()] == probabilities
        assert float(est.objective_).hex() == objective
        assert est.predict(X[:20], sensitive_features=g[:20]).tolist() == [
            1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0]


@pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")
def test_score_bins_at_epsilon_inf_is_never_worse_than_fairlearn_on_the_binned_score():
    """Non-private reference: the LP over all P(1 | bin, group) contains fairlearn's randomized thresholds."""
    X, group, label, cell = _population(m=6000, n_bins=6, seed=2)
    base = ScoreColumn().fit(X)
    ours = DPEqualizedOddsPostProcessor(base, epsilon=math.inf, gamma=0.0, score_bins=6).fit(
        X, label, sensitive_features=group)
    proba = ours.predict_proba(X, sensitive_features=group)[:, 1]
    error = float(np.mean(np.where(label == 1, 1 - proba, proba)))
    assert _exact_violation(ours.probabilities_, cell, group, label) <= 1e-9
    theirs = ThresholdOptimizer(estimator=base, constraints="equalized_odds", prefit=True,
                                predict_method="predict_proba", grid_size=2000).fit(X, label, sensitive_features=group)
    fl = theirs._pmf_predict(X, sensitive_features=group)[:, 1]
    fl_error = float(np.mean(np.where(label == 1, 1 - fl, fl)))
    assert error <= fl_error + 1e-9
    assert error < float(np.mean(label != 0))  # better than the best constant classifier


def test_score_bins_are_public_thresholds_and_the_table_is_the_papers_mechanism_on_k_rows():
    assert guarantee_module.score_bin_edges(4).tolist() == [0.25, 0.5, 0.75]
    np.testing.assert_array_equal(guarantee_module.score_bins_of(np.array([0.0, 0.2499, 0.25, 0.99, 1.0]), 4),
                                  [0, 0, 1, 3, 3])
    X, group, label, cell = _population(m=1000, n_bins=5, seed=3)
    base = ScoreColumn().fit(X)
    est = DPEqualizedOddsPostProcessor(base, epsilon=0.7, groups=[0, 1], score_bins=5, random_state=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, label, sensitive_features=group)
    from dpfair.privacy.noise import get_noise_source

    q_hat = pp_module.joint_frequencies(cell, group, label, 2, 5)
    np.testing.assert_allclose(est.noisy_frequencies_, get_noise_source(11).laplace(q_hat, 2.0 / (1000 * 0.7)),
                               rtol=0, atol=1e-15)
    assert est.probabilities_.shape == (5, 2) and est.score_bins_ == 5
    assert (est.slack_fp_ == 0).all() and (est.slack_tp_ == 0).all()  # not widened by the paper's slack
    # the first LP's widening: a quarter of the noise's sd of a rate difference (5 cells of Lap(2 / (m epsilon)))
    mass = np.maximum(est.noisy_frequencies_, 0).sum(axis=0)
    sd = np.sqrt(2 * 5) * 2 / (1000 * 0.7) / mass
    np.testing.assert_allclose(est.resolution_fp_, [0.0, 0.25 * np.hypot(sd[1, 0], sd[0, 0])], rtol=1e-12)
    np.testing.assert_allclose(est.resolution_tp_, [0.0, 0.25 * np.hypot(sd[1, 1], sd[0, 1])], rtol=1e-12)


def test_neighbouring_groups_move_exactly_one_row_between_two_cells_of_the_binned_table():
    """Identical noise, one row's group changed: the released tables differ in two cells, by 1/m each."""
    X, group, label, _ = _population(m=500, n_bins=6, seed=4)
    neighbour = group.copy()
    neighbour[7] = 1 - neighbour[7]
    base = ScoreColumn().fit(X)
    tables = []
    for groups_of_rows in (group, neighbour):
        est = DPEqualizedOddsPostProcessor(base, epsilon=1.0, groups=[0, 1], score_bins=6, random_state=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tables.append(est.fit(X, label, sensitive_features=groups_of_rows).noisy_frequencies_)
    difference = np.abs(tables[0] - tables[1])
    assert np.sum(difference > 1e-12) == 2
    np.testing.assert_allclose(difference[difference > 1e-12], 1 / 500, rtol=1e-9)


def _binned_table_statistic(half_noise: bool, n_bins=6, m=200):
    rng = np.random.default_rng(0)
    cell, label = rng.integers(0, n_bins, m), rng.integers(0, 2, m)
    i, j = (cell[-1], 0, label[-1]), (cell[-1], 1, label[-1])

    def mechanism(a, size, noise):
        q_hat = pp_module.joint_frequencies(cell, a, label, 2, n_bins)
        stack = np.broadcast_to(q_hat, (size, *q_hat.shape))
        noisy = pp_module.noisy_frequencies(stack, m, 2.0 if half_noise else 1.0, noise)
        return m * (noisy[(slice(None), *i)] - noisy[(slice(None), *j)])

    return mechanism, rng.integers(0, 2, m)


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_privacy_audit_of_the_binned_table_passes_and_catches_half_noise():
    honest, a = _binned_table_statistic(False)
    mutant, _ = _binned_table_statistic(True)
    a_prime = a.copy()
    a_prime[-1] = 1 - a[-1]
    lower = audit_epsilon(honest, a, a_prime, n_samples=100_000, n_bins=40, random_state=1).epsilon_lower_bound
    caught = audit_epsilon(mutant, a, a_prime, n_samples=100_000, n_bins=40, random_state=1).epsilon_lower_bound
    assert lower <= 1.0 < caught


def test_one_charge_per_fit_and_score_bins_refused_before_the_charge():
    X, group, label, _ = _population(m=800, n_bins=4, seed=5)
    budget = PrivacyBudget(10.0, neighbouring="change_attribute")
    est = DPEqualizedOddsPostProcessor(ScoreColumn().fit(X), epsilon=0.5, groups=[0, 1], score_bins=4, budget=budget)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessSlackWarning)
        est.fit(X, label, sensitive_features=group)
        est.fit(X, label, sensitive_features=group)
    assert len(budget.ledger) == 2 and budget.spent()[0] == pytest.approx(1.0)
    for bad in (1, 0, 2.5, "8", True, 1001):
        with pytest.raises(ValueError, match="score_bins must be 'auto', None"):
            DPEqualizedOddsPostProcessor(ScoreColumn().fit(X), epsilon=0.5, groups=[0, 1], score_bins=bad,
                                         budget=budget).fit(X, label, sensitive_features=group)
    with pytest.raises(ValueError, match="score_bins needs a base classifier with predict_proba"):
        DPEqualizedOddsPostProcessor(PredictOnly().fit(X), epsilon=0.5, groups=[0, 1], score_bins=4,
                                     budget=budget).fit(X, label, sensitive_features=group)
    assert len(budget.ledger) == 2  # nothing charged by the refused fits
