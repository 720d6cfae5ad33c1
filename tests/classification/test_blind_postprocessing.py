"""DPBlindPostProcessor: the exact LP at epsilon = inf, the privacy of its two releases, the fallback, the guarantee."""

from __future__ import annotations

import inspect
import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor, SmallBudgetWarning, VacuousConstraintWarning
from dpfair.classification import blind_membership as membership_module
from dpfair.classification import blind_table as table_module
from dpfair.datasets import make_classification
from dpfair.linear_model import DPLogisticRegression
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning, audit_epsilon
from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import get_noise_source

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")


def _data(n=1200, seed=0, n_groups=2):
    X, y, g = make_classification(n, disparity=1.5, random_state=seed)
    if n_groups > 2:
        g = np.where(X[:, 1] > 0.5, 2, g)  # a third group, predictable from the features
    return X, y, g


def _rates(p1, y, g, labels):
    return [p1[(g == a) & np.isin(y, labels)].mean() for a in np.unique(g)]


# ------------------------------------------------------------------------------- epsilon = inf: the exact LP
def _pairwise_lp(q, error_table, gamma, families, n_membership):
    """The same LP written independently: pairwise |R_a - R_b| <= gamma (no targets), p monotone in the score bin."""
    n_groups = q.shape[1]
    rule = np.arange(q.shape[0]).reshape(-1, n_membership)  # cell index of (score bin, membership cell)
    rows = [np.eye(q.shape[0])[lower] - np.eye(q.shape[0])[upper]
            for lower, upper in zip(rule[:-1].ravel(), rule[1:].ravel(), strict=True)]
    rhs = [0.0] * len(rows)
    for labels in families:
        part = q[:, :, list(labels)].sum(axis=2)
        coef = part / part.sum(axis=0)
        for a, b in itertools.combinations(range(n_groups), 2):
            rows += [coef[:, a] - coef[:, b], coef[:, b] - coef[:, a]]
            rhs += [gamma, gamma]
    result = linprog(error_table[:, 0] - error_table[:, 1], A_ub=np.array(rows), b_ub=np.array(rhs), bounds=(0, 1),
                     method="highs")
    return result.fun + error_table[:, 1].sum()


@pytest.mark.parametrize("n_groups, constraints", [(2, "equalized_odds"), (3, "equalized_odds"),
                                                   (3, "demographic_parity")])
def test_epsilon_inf_is_the_exact_lp_on_the_training_table(n_groups, constraints):
    X, y, g = _data(n_groups=n_groups)
    base = LogisticRegression().fit(X, y)
    gamma = 0.03
    with pytest.warns(PrivacyLeakWarning):
        est = DPBlindPostProcessor(base, epsilon=math.inf, gamma=gamma, constraints=constraints, score_bins=5,
                                   random_state=0).fit(X, y, sensitive_features=g)
    assert est.noisy_frequencies_.shape == (5 * est.membership_bins_, n_groups, 2)
    families = table_module.BLIND_CONSTRAINTS[constraints]
    error_table = est.noisy_frequencies_.sum(axis=1)
    # the optimum of an independently written LP (pairwise constraints instead of a common target)
    expected = _pairwise_lp(est.noisy_frequencies_, error_table, gamma, families, est.membership_bins_)
    assert est.objective_ == pytest.approx(expected, abs=1e-7)
    assert (np.diff(est.probabilities_, axis=0) >= -1e-9).all()  # a randomized threshold on the score per cell
    # the fitted rule, evaluated row by row on the training data, has that error and satisfies the constraints exactly
    p1 = est.predict_proba(X)[:, 1]
    assert np.mean(np.where(y == 1, 1 - p1, p1)) == pytest.approx(est.objective_, abs=1e-9)
    for labels in families:
        rates = _rates(p1, y, g, labels)
        assert max(rates) - min(rates) <= gamma + 1e-7
    assert est.guaranteed_violation_ <= gamma + 1e-7
    assert est.objective_ <= est.constant_error_ + 1e-12 and not est.fallback_


def test_lp_matches_brute_force_on_a_two_cell_table():
    """Two cells, two groups, EO: the optimum over a fine grid of (p0, p1) equals the LP's."""
    rng = np.random.default_rng(3)
    q = rng.uniform(0.01, 0.2, size=(2, 2, 2))
    q /= q.sum()
    error_table = q.sum(axis=1)
    families = table_module.BLIND_CONSTRAINTS["equalized_odds"]
    gamma = 0.05
    p, error = table_module.solve_blind_lp(q, error_table, gamma, families, np.ones((2, 2), bool))
    grid = np.linspace(0, 1, 801)
    rules = np.stack(np.meshgrid(grid, grid, indexing="ij"), axis=-1).reshape(-1, 2)  # every (p0, p1) of the grid
    feasible = np.ones(len(rules), bool)
    for labels in families:
        coef, _ = table_module.constrained_rates(q, labels)
        rates = rules @ coef
        feasible &= np.abs(rates[:, 0] - rates[:, 1]) <= gamma + 1e-12
    best = (rules[feasible] @ (error_table[:, 0] - error_table[:, 1])).min() + error_table[:, 1].sum()
    assert best - 2e-3 <= error <= best + 1e-9
    assert error == pytest.approx(p @ (error_table[:, 0] - error_table[:, 1]) + error_table[:, 1].sum())


# ------------------------------------------------------------------------------- privacy
def _table_neighbours(m=200):
    rng = np.random.default_rng(0)
    s, cell, y = rng.integers(0, 3, m), rng.integers(0, 2, m), rng.integers(0, 2, m)
    a = rng.integers(0, 3, m)
    a_prime = a.copy()
    a_prime[-1] = (a[-1] + 1) % 3
    return s, cell, y, a, a_prime


def test_identical_noise_neighbours_differ_in_two_cells_by_one_over_m():
    s, cell, y, a, a_prime = _table_neighbours()
    m = y.size
    tables = []
    for groups in (a, a_prime):
        q_hat = table_module.blind_joint_frequencies(s, cell, groups, y, 3, 2, 3)
        tables.append(table_module.noisy_blind_table(q_hat, m, 0.7, get_noise_source(5)))
    difference = np.abs(tables[0] - tables[1])
    changed = np.flatnonzero(difference.ravel() > 1e-12)
    assert changed.size == 2
    np.testing.assert_allclose(difference.ravel()[changed], 1.0 / m, rtol=1e-9)
    assert difference.sum() == pytest.approx(2.0 / m)  # the L1 sensitivity the Laplace scale is calibrated to


def test_identical_noise_membership_models_change_only_where_the_row_moved():
    """Changing one row's group (0 -> 1 of three) changes the inputs of the models of groups 0 and 1 only."""
    X, _, g = _data(n=300, n_groups=3)
    Z = X / np.linalg.norm(X, axis=1).max()
    g_prime = g.copy()
    row = int(np.flatnonzero(g == 0)[0])
    g_prime[row] = 1
    fits = [membership_module.fit_membership_models(Z, groups, 3, 0.5, get_noise_source(11)) for groups in (g, g_prime)]
    np.testing.assert_array_equal(fits[0][2], fits[1][2])  # group 2's model: same rows, same noise, same release
    assert not np.allclose(fits[0][0], fits[1][0]) and not np.allclose(fits[0][1], fits[1][1])
    # so two of the three releases see the change: each gets half the membership share under this relation
    assert membership_module.membership_model_epsilons(1.0, 3, "change_attribute") == 0.5
    assert membership_module.membership_model_epsilons(1.0, 3, "replace") == pytest.approx(1.0 / 3)
    assert membership_module.membership_model_epsilons(1.0, 2, "change_attribute") == 1.0


def _table_statistic(half_noise):
    s, cell, y, _, _ = _table_neighbours()
    m, epsilon = y.size, 1.0
    i = (s[-1] * 2 + cell[-1], None, y[-1])

    def mechanism(groups, size, rng):
        q_hat = table_module.blind_joint_frequencies(s, cell, groups, y, 3, 2, 3)
        stack = np.broadcast_to(q_hat, (size, *q_hat.shape))
        noisy = table_module.noisy_blind_table(stack, m, 2 * epsilon if half_noise else epsilon, rng)
        return m * (noisy[:, i[0], 0, i[2]] - noisy[:, i[0], 1, i[2]])  # the two cells the changed row moves between

    return mechanism


@pytest.mark.statistical
def test_privacy_audit_passes_on_the_released_table_and_catches_half_noise():
    _, _, _, a, a_prime = _table_neighbours()
    a, a_prime = a.copy(), a_prime.copy()
    a[-1], a_prime[-1] = 0, 1
    honest = audit_epsilon(_table_statistic(False), a, a_prime, n_samples=60_000, n_bins=30, random_state=1)
    mutant = audit_epsilon(_table_statistic(True), a, a_prime, n_samples=60_000, n_bins=30, random_state=1)
    assert honest.epsilon_lower_bound <= 1.0
    assert mutant.epsilon_lower_bound > 1.0


# ------------------------------------------------------------------------------- fallback, guarantee, predict
def test_a_budget_that_buys_no_signal_falls_back_to_the_best_constant_with_a_warning():
    X, y, g = _data(n=150)
    base = LogisticRegression().fit(X, y)
    with pytest.warns(SmallBudgetWarning, match="best constant classifier"):
        est = DPBlindPostProcessor(base, epsilon=0.05, groups=[0, 1], random_state=0).fit(X, y, sensitive_features=g)
    assert est.fallback_ and np.ptp(est.probabilities_) == 0
    majority = float(np.mean(y) > 0.5)
    np.testing.assert_array_equal(est.predict_proba(X)[:, 1], majority)
    assert est.objective_ == est.constant_error_ == pytest.approx(min(np.mean(y), 1 - np.mean(y)))
    assert est.guaranteed_violation_ == 0.0


def test_finite_epsilon_never_errs_more_than_the_constant_on_training_rows_and_bounds_the_violation():
    X, y, g = _data(n=4000, seed=1)
    base = LogisticRegression().fit(X, y)
    budget = PrivacyBudget(1.0, neighbouring="change_attribute")
    est = DPBlindPostProcessor(base, epsilon=1.0, groups=[0, 1], budget=budget, random_state=2)
    est.fit(X, y, sensitive_features=g)
    assert budget.spent()[0] == pytest.approx(1.0) and len(budget.ledger) == 1
    p1 = est.predict_proba(X)[:, 1]
    error = np.mean(np.where(y == 1, 1 - p1, p1))
    assert error == pytest.approx(est.objective_, abs=1e-9)  # exact: X and y are public under this relation
    assert error <= est.constant_error_ + 1e-12
    assert est.objective_ < est.constant_error_ - 0.05  # and it buys real accuracy here
    for labels in ((0,), (1,)):
        rates = _rates(p1, y, g, labels)
        assert max(rates) - min(rates) <= est.guaranteed_violation_
    assert est.privacy_spent_["relation"] == "change_attribute"


def test_predict_takes_no_sensitive_features_and_is_randomized_by_probabilities():
    assert "sensitive_features" not in inspect.signature(DPBlindPostProcessor.predict).parameters
    assert "sensitive_features" not in inspect.signature(DPBlindPostProcessor.predict_proba).parameters
    X, y, g = _data(n=2000, n_groups=3)
    est = DPBlindPostProcessor(LogisticRegression().fit(X, y), epsilon=2.0, groups=[0, 1, 2], random_state=0)
    est.fit(X, y, sensitive_features=g)
    proba = est.predict_proba(X)[:, 1]
    draws = np.mean([est.predict(X, random_state=seed) for seed in range(40)], axis=0)
    assert np.abs(draws - proba).mean() < 0.1
    np.testing.assert_array_equal(est.predict(X), est.predict(X))  # a seeded fit: reproducible predictions


def test_a_private_base_fitted_here_makes_the_whole_row_guarantee_and_needs_data_norm():
    X, y, g = _data(n=2000)
    base = DPLogisticRegression(epsilon=0.5, data_norm=5.0, random_state=0)
    est = DPBlindPostProcessor(base, prefit=False, epsilon=1.0, groups=[0, 1], random_state=0)
    with pytest.raises(ValueError, match="data_norm is required"):
        est.fit(X, y, sensitive_features=g)
    budget = PrivacyBudget(1.5)
    est.set_params(data_norm=5.0, budget=budget).fit(X, y, sensitive_features=g)
    assert est.privacy_spent_["relation"] == "replace"
    assert est.privacy_spent_["epsilon"] == pytest.approx(1.5)
    np.testing.assert_array_equal(est.score_edges_, np.arange(1, est.score_bins_) / est.score_bins_)  # fixed grid
    assert est.objective_ <= est.constant_error_


def test_bad_parameters_are_refused_before_the_charge():
    X, y, g = _data(n=300)
    base = LogisticRegression().fit(X, y)
    budget = PrivacyBudget(5.0, neighbouring="change_attribute")
    for bad in ({"gamma": -0.1}, {"membership_share": 1.0}, {"constraints": "nope"}, {"score_bins": 1},
                {"membership_bins": 2, "groups": [0, 1, 2]}, {"data_norm": 0.01}):
        est = DPBlindPostProcessor(base, epsilon=1.0, groups=[0, 1], budget=budget, random_state=0).set_params(**bad)
        with pytest.raises(ValueError):
            est.fit(X, y, sensitive_features=g)
    with pytest.raises(TypeError, match="estimator"):
        DPBlindPostProcessor(None, epsilon=1.0, groups=[0, 1]).fit(X, y, sensitive_features=g)
    assert budget.spent()[0] == 0


def test_an_empty_declared_group_is_handled_after_the_charge_with_a_warning_naming_it():
    X, y, g = _data(n=3000)
    base = LogisticRegression().fit(X, y)
    budget = PrivacyBudget(2.0, neighbouring="change_attribute")
    with pytest.warns(VacuousConstraintWarning, match="'empty'"):
        est = DPBlindPostProcessor(base, epsilon=1.0, groups=[0, 1, "empty"], budget=budget, random_state=0).fit(
            X, y, sensitive_features=g.astype(object))
    assert est.measured_groups_.tolist() == [True, True, False] and not est.fallback_
    assert budget.spent()[0] == pytest.approx(1.0)
    assert est.objective_ <= est.constant_error_


def test_identical_noise_cluster_membership_changes_only_the_moved_rows_cluster_and_label():
    """The histogram membership model (attribute relation): one row's group changes, the same noise is drawn.

    The exact histograms differ by one count in two cells of the moved row's (cluster, label) (L1 sensitivity 2,
    what ``Lap(2 / epsilon)`` is calibrated to); with identical noise the released counts differ there only.
    """
    X, y, g = _data(n=600, n_groups=3)
    centres = membership_module.public_clusters(X, membership_module.plan_membership_clusters(600, 1.0, 3))
    clusters = membership_module.assign_clusters(X, centres)
    g_prime = g.copy()
    row = int(np.flatnonzero(g == 0)[0])
    g_prime[row] = 2
    k = centres.shape[0]
    exact = [membership_module.cluster_counts(clusters, y, groups, k, 3) for groups in (g, g_prime)]
    noisy = [laplace_mechanism(counts, sensitivity=2.0, epsilon=1.0, random_state=get_noise_source(5))
             for counts in exact]
    difference = np.abs(noisy[0] - noisy[1])
    changed = np.argwhere(difference > 1e-9)
    assert changed.tolist() == [[int(clusters[row]), int(y[row]), 0], [int(clusters[row]), int(y[row]), 2]]
    assert difference.sum() == pytest.approx(2.0)
    released = membership_module.released_cluster_counts(clusters, y, g, k, 3, 1.0, get_noise_source(5))
    # the function draws the same release, then projects it onto the public (cluster, label) totals
    projected = table_module.project_to_totals(np.moveaxis(noisy[0], 2, 1), exact[0].sum(axis=2))
    np.testing.assert_allclose(released, np.moveaxis(projected, 1, 2), atol=1e-12)
    weights = membership_module.fit_pooled_membership(centres, released)  # post-processing: no noise, no rows
    proba = membership_module.pooled_membership_at_prediction(X, np.full(X.shape[0], 0.5), weights)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # the public clusters do not depend on the groups at all
    np.testing.assert_array_equal(centres, membership_module.public_clusters(X, centres.shape[0]))
