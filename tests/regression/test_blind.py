"""BlindFairRegressionPostProcessor: the exact program against an LP reference, its privacy, its guarantee."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
from scipy import optimize
from sklearn.linear_model import LinearRegression, LogisticRegression

import dpfair.regression.blind as blind_module
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning, audit_epsilon
from dpfair.regression import BlindFairRegressionPostProcessor, FairRegressionPostProcessor
from dpfair.regression._blind_lp import (
    max_partial_sum_bound,
    membership_cell_index,
    membership_lattice,
    n_membership_cells,
    solve_blind_lp,
)


def _rows(n=300, n_groups=2, seed=0, signal=0.3):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, n)
    outputs = np.clip(rng.normal(0.35 + 0.3 * groups / max(n_groups - 1, 1), 0.12), 0, 1)
    logits = signal * 8 * (np.eye(n_groups)[groups] - 1 / n_groups) + rng.normal(0, 1, (n, n_groups))
    membership = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return np.column_stack([outputs, membership]), groups


def _pp(**kwargs):
    args = {"epsilon": 1.0, "n_bins": 6, "alpha": 0.1, "bounds": (0.0, 1.0), "groups": [0, 1], "random_state": 0,
            **kwargs}
    return BlindFairRegressionPostProcessor(**args)


def _exact(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return _pp(epsilon=math.inf, **kwargs)


def _group_cdfs(pp, X, groups):
    """Every group's exact output CDF on the rows (the map's randomness integrated out)."""
    dist = pp.output_distribution(X)
    return np.array([np.cumsum(dist[groups == a].mean(axis=0)) for a in range(pp.groups_.size)])


# ------------------------------------------------------------------ the reference LP (pi variables, pairwise KS)
def _reference_lp(cell_pmfs, weights, cell_bin, grid, alpha):
    """The program written directly on the joint masses pi(c, l), one KS constraint per pair of groups and cut."""
    n_groups, n_cells = cell_pmfs.shape
    k = grid.size
    w = weights / weights.sum()
    mass = w @ cell_pmfs
    n_var = n_cells * k
    cost = (mass[:, None] > 0) * (grid[cell_bin][:, None] - grid[None, :]) ** 2
    a_eq = np.zeros((n_cells, n_var))
    for c in range(n_cells):
        a_eq[c, c * k:(c + 1) * k] = 1.0
    b_eq = mass
    rows = []
    for a in range(n_groups):
        for b in range(n_groups):
            if a == b:
                continue
            for cut in range(k - 1):
                row = np.zeros(n_var)
                for c in range(n_cells):
                    if mass[c] > 0:
                        row[c * k:c * k + cut + 1] = (cell_pmfs[a, c] - cell_pmfs[b, c]) / mass[c]
                rows.append(row)
    result = optimize.linprog(cost.ravel(), A_ub=np.array(rows) if rows else None,
                              b_ub=np.full(len(rows), alpha) if rows else None, A_eq=a_eq, b_eq=b_eq,
                              bounds=(0, None), method="highs")
    assert result.status == 0
    return result.fun


@pytest.mark.parametrize("seed", range(6))
def test_the_program_equals_the_direct_lp_reference_on_small_random_tables(seed):
    rng = np.random.default_rng(seed)
    n_groups, k, n_m = 2 + seed % 2, 4, 3
    n_cells = k * n_m
    table = rng.dirichlet(np.full(n_cells, 0.6), size=n_groups)
    table[:, rng.integers(0, n_cells, 2)] = 0.0  # some cells empty
    table /= table.sum(axis=1, keepdims=True)
    weights = rng.dirichlet(np.ones(n_groups))
    grid = np.sort(rng.uniform(0, 1, k))
    cell_bin = np.arange(n_cells) // n_m
    alpha = [0.0, 0.05, 0.2][seed % 3]
    transport, objective = solve_blind_lp(table, weights, cell_bin, grid, alpha)
    assert objective == pytest.approx(_reference_lp(table, weights, cell_bin, grid, alpha), abs=1e-7)
    np.testing.assert_allclose(transport.sum(axis=1), 1.0)
    assert (transport >= -1e-12).all()
    cdfs = np.cumsum(table @ transport, axis=1)[:, :-1]
    assert (cdfs.max(axis=0) - cdfs.min(axis=0)).max() <= alpha + 1e-7  # the map is fair, as claimed


def test_with_exact_membership_the_blind_program_is_the_aware_one():
    """One-hot P(A | x): every cell holds one group, and the blind optimum is the aware barycenter LP's."""
    X, groups = _rows(400, n_groups=3, seed=2)
    one_hot = np.eye(3)[groups]
    for alpha in (0.0, 0.1):
        blind = _exact(alpha=alpha, n_bins=8, membership_bins=1, groups=[0, 1, 2]).fit(
            np.column_stack([X[:, 0], one_hot]), sensitive_features=groups)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            aware = FairRegressionPostProcessor(epsilon=math.inf, n_bins=8, alpha=alpha, bounds=(0, 1),
                                                groups=[0, 1, 2]).fit(X[:, 0], sensitive_features=groups)
        assert blind.objective_ == pytest.approx(aware.objective_, rel=1e-6, abs=1e-9)


def test_epsilon_inf_is_the_exact_program_on_the_training_rows_and_its_guarantee_is_alpha():
    X, groups = _rows(500, seed=1)
    for alpha in (0.0, 0.05, 0.2):
        pp = _exact(alpha=alpha).fit(X, sensitive_features=groups)
        cdfs = _group_cdfs(pp, X, groups)[:, :-1]
        assert np.abs(cdfs[0] - cdfs[1]).max() <= alpha + 1e-7
        assert pp.guaranteed_violation_ == alpha and pp.privacy_spent_["epsilon"] == math.inf
        # the table is the exact one: group-by-cell frequencies
        np.testing.assert_allclose(pp.noisy_table_.sum(), 1.0)
        np.testing.assert_allclose(pp.group_weights_, np.bincount(groups) / groups.size)


def test_brute_force_two_cells_two_points():
    """Cells {low score, high score} x one membership cell per group: the optimum by a fine grid search."""
    # group 0 sits in cell 0 (score point 0), group 1 in cell 1 (score point 1); w = (1/2, 1/2)
    table = np.array([[1.0, 0.0], [0.0, 1.0]])
    grid = np.array([0.0, 1.0])
    for alpha in (0.0, 0.3, 0.8):
        _, objective = solve_blind_lp(table, np.array([0.5, 0.5]), np.array([0, 1]), grid, alpha)
        # t0 = P(cell 0 -> 1), t1 = P(cell 1 -> 0); KS = |(1 - t0) - t1| <= alpha; cost (t0 + t1) / 2
        t = np.linspace(0, 1, 401)
        t0, t1 = np.meshgrid(t, t)
        feasible = np.abs(1 - t0 - t1) <= alpha + 1e-12
        assert objective == pytest.approx(((t0 + t1) / 2)[feasible].min(), abs=1e-9)


def test_membership_lattice_and_rounding():
    assert n_membership_cells(4, 4) == membership_lattice(4, 4).shape[0] == 35
    lattice = membership_lattice(3, 2)
    assert (lattice.sum(axis=1) == 2).all() and len({tuple(r) for r in lattice}) == 6
    cells = membership_cell_index(np.array([[0.9, 0.1, 0.0], [0.34, 0.33, 0.33], [0.0, 0.0, 0.0]]), 2)
    assert [tuple(lattice[c]) for c in cells] == [(2, 0, 0), (1, 1, 0), (1, 1, 0)]  # ties to the first groups


# ------------------------------------------------------------------ privacy
def test_one_charge_privacy_spent_and_no_sensitive_features_at_prediction():
    X, groups = _rows()
    budget = PrivacyBudget(1.5)
    pp = _pp(budget=budget).fit(X, sensitive_features=groups)
    assert budget.spent() == (1.0, 0.0) and [e.label for e in budget.ledger] == [
        "BlindFairRegressionPostProcessor.fit (Laplace cell histogram)"]
    assert pp.privacy_spent_["epsilon"] == 1.0 and pp.privacy_spent_["delta"] == 0.0
    assert pp.privacy_spent_["relation"] == "replace" and "membership" in pp.privacy_spent_["protects"]
    assert "sensitive_features" not in inspect.signature(pp.predict).parameters
    assert pp.predict(X).shape == (X.shape[0],)
    with pytest.raises(PrivacyBudgetExceededError):
        _pp(budget=budget).fit(X, sensitive_features=groups)
    assert budget.spent() == (1.0, 0.0)


def test_identical_noise_neighbours_differ_only_in_the_two_cells_of_the_replaced_row():
    X, groups = _rows(200, seed=3)
    X2, groups2 = X.copy(), groups.copy()
    X2[7] = [0.95, 0.05, 0.95]  # replace one row: other output bin, other membership cell, other group
    groups2[7] = 1 - groups[7]
    first = _pp(random_state=11).fit(X, sensitive_features=groups)
    second = _pp(random_state=11).fit(X2, sensitive_features=groups2)
    difference = second.noisy_table_ - first.noisy_table_
    changed = np.flatnonzero(np.abs(difference).ravel() > 1e-12)
    assert changed.size == 2  # the row's old cell and its new one; every other entry carries identical noise
    assert np.abs(difference).sum() == pytest.approx(2.0 / 200)  # the L1 sensitivity 2/n, exactly


class _HalfNoise(BlindFairRegressionPostProcessor):
    """A broken mutant: Laplace noise calibrated to sensitivity 1/n instead of 2/n."""

    def _draw_noise(self, params, statistics, noise):
        released = super()._draw_noise(params, statistics, noise)
        exact = statistics.joint
        return blind_module._ReleasedCells(estimator=released.estimator, bounds=released.bounds,
                                           histogram=exact + (released.histogram - exact) / 2.0,
                                           n_rows=released.n_rows, predict_seed=released.predict_seed)


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.filterwarnings("ignore:the private weight")
def test_audit_the_release_is_epsilon_dp_and_a_half_noise_mutant_is_caught():
    eps = 1.0
    X = np.column_stack([np.full(10, 0.2), np.full(10, 0.5), np.full(10, 0.5)])
    groups = np.array([0] * 5 + [1] * 5)
    neighbour = groups.copy()
    neighbour[-1] = 0  # the last row moves from group 1 to group 0 in cell 1, lattice point (1, 0): both move 1/n

    def released_entry(cls):
        def mechanism(g, size, rng):
            return np.array([cls(epsilon=eps, n_bins=1, membership_bins=1, bounds=(0, 1), groups=[0, 1],
                                 random_state=int(s)).fit(X, sensitive_features=g).noisy_table_[:, 1] @ [-1, 1]
                             for s in rng.integers(0, 2**32, size=size)])
        return mechanism

    honest = audit_epsilon(released_entry(BlindFairRegressionPostProcessor), groups, neighbour, n_samples=2000)
    assert honest.epsilon_lower_bound <= eps
    broken = audit_epsilon(released_entry(_HalfNoise), groups, neighbour, n_samples=2000)
    assert broken.epsilon_lower_bound > eps


def test_refusals_come_before_the_charge():
    X, groups = _rows(100)
    budget = PrivacyBudget(5.0)
    with pytest.raises(ValueError, match="bounds is required"):
        _pp(bounds=None, budget=budget).fit(X, sensitive_features=groups)
    with pytest.raises(ValueError, match="1 \\+ n_groups = 3 columns"):
        _pp(budget=budget).fit(X[:, :2], sensitive_features=groups)
    with pytest.raises(TypeError, match="membership_estimator is required"):
        _pp(estimator=LinearRegression().fit(X[:, :1], X[:, 0]), budget=budget).fit(X[:, :1],
                                                                                     sensitive_features=groups)
    with pytest.raises(ValueError, match="beta"):
        _pp(beta=1.0, budget=budget).fit(X, sensitive_features=groups)
    assert budget.spent() == (0.0, 0.0)


def test_wrapped_regressor_and_membership_model_predict_without_the_group():
    rng = np.random.default_rng(4)
    n = 600
    groups = rng.integers(0, 2, n)
    features = np.column_stack([rng.normal(groups, 1.0), rng.normal(0, 1, n)])
    y = np.clip(0.5 + 0.15 * features[:, 0] + 0.1 * features[:, 1] + rng.normal(0, 0.05, n), 0, 1)
    regressor = LinearRegression().fit(features[:300], y[:300])
    membership = LogisticRegression().fit(features[:300], groups[:300])
    pp = _pp(estimator=regressor, membership_estimator=membership, n_bins=8, alpha=0.05, epsilon=math.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        pp.fit(features[300:], sensitive_features=groups[300:])
    assert pp.n_features_in_ == 2 and pp.membership_estimator_ is membership
    cdfs = _group_cdfs(pp, features[300:], groups[300:])[:, :-1]
    assert np.abs(cdfs[0] - cdfs[1]).max() <= 0.05 + 1e-7
    assert np.isin(pp.predict(features[:5], random_state=0), pp.grid_).all()


def test_refit_alpha_is_free_and_loosens_the_map():
    X, groups = _rows(400, seed=5)
    budget = PrivacyBudget(1.0)
    pp = _pp(alpha=0.0, budget=budget).fit(X, sensitive_features=groups)
    strict = pp.objective_
    pp.refit_alpha(0.3)
    assert pp.alpha_ == 0.3 and pp.objective_ <= strict and budget.spent() == (1.0, 0.0)


@pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")
def test_the_released_guarantee_holds_on_the_training_rows():
    """Large n and a small table: the guarantee is informative (< 1) and bounds the exact KS of the map."""
    X, groups = _rows(60_000, seed=6, signal=0.5)
    for seed in range(3):
        pp = _pp(n_bins=4, membership_bins=1, alpha=0.05, epsilon=1.0, random_state=seed).fit(
            X, sensitive_features=groups)
        cdfs = _group_cdfs(pp, X, groups)[:, :-1]
        assert pp.guaranteed_violation_ < 0.5
        assert np.abs(cdfs[0] - cdfs[1]).max() <= pp.guaranteed_violation_


def test_max_partial_sum_bound_covers_simulated_laplace_walks():
    rng = np.random.default_rng(0)
    walks = np.abs(np.cumsum(rng.laplace(0, 0.5, size=(20_000, 40)), axis=1)).max(axis=1)
    bound = max_partial_sum_bound(40, 0.5, 0.05)
    assert np.mean(walks > bound) <= 0.05 and bound < 4 * np.quantile(walks, 0.95)


def test_lattice_rounding_is_a_nearest_point_by_brute_force():
    rng = np.random.default_rng(7)
    for n_groups, membership_bins in ((2, 3), (3, 4), (4, 2)):
        lattice = membership_lattice(n_groups, membership_bins)
        probabilities = rng.dirichlet(np.full(n_groups, 0.7), size=200)
        chosen = lattice[membership_cell_index(probabilities, membership_bins)]
        distances = np.abs(probabilities[:, None, :] * membership_bins - lattice[None, :, :]).sum(axis=2)
        np.testing.assert_allclose(np.abs(probabilities * membership_bins - chosen).sum(axis=1), distances.min(axis=1))


@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_epsilon_inf_fit_equals_the_reference_lp_on_a_brute_force_table(alpha):
    """The whole estimator at epsilon = inf: cells by brute force, the exact table, the direct LP's optimum."""
    X, groups = _rows(150, n_groups=3, seed=8)
    k, membership_bins, (lo, hi) = 4, 2, (0.0, 1.0)
    pp = _exact(alpha=alpha, n_bins=k, membership_bins=membership_bins, groups=[0, 1, 2]).fit(
        X, sensitive_features=groups)
    lattice = membership_lattice(3, membership_bins)
    nearest = np.abs(X[:, None, 1:] * membership_bins - lattice[None]).sum(axis=2).argmin(axis=1)
    score = np.minimum((X[:, 0] - lo) / (hi - lo) * k, k - 1).astype(int)
    cells = score * lattice.shape[0] + nearest
    table = np.zeros((3, k * lattice.shape[0]))
    np.add.at(table, (groups, cells), 1.0)
    weights = table.sum(axis=1)
    grid = (np.arange(k) + 0.5) / k
    reference = _reference_lp(table / weights[:, None], weights, np.arange(table.shape[1]) // lattice.shape[0], grid,
                              alpha)
    assert pp.objective_ == pytest.approx(reference * (hi - lo) ** 2, abs=1e-9)


@pytest.mark.filterwarnings("ignore:some outputs lie outside bounds")
def test_membership_columns_follow_the_declared_groups_and_undeclared_classes_are_refused():
    rng = np.random.default_rng(9)
    features = rng.normal(size=(300, 2))
    labels = np.where(features[:, 0] > 0, "b", "a")
    regressor = LinearRegression().fit(features, np.clip(0.5 + 0.2 * features[:, 1], 0, 1))
    membership = LogisticRegression().fit(features, labels)  # classes_ ["a", "b"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        pp = _pp(estimator=regressor, membership_estimator=membership, epsilon=math.inf, groups=["b", "a"],
                 membership_bins=4).fit(features, sensitive_features=labels)
    # group "b" (declared first) has most of its mass in the cells where P("b" | x) is high
    lattice = membership_lattice(2, 4)
    cell_mass_b = pp.cell_pmfs_[0].reshape(pp.grid_.size, -1).sum(axis=0)
    assert cell_mass_b @ lattice[:, 0] / 4 > 0.7
    budget = PrivacyBudget(1.0)
    with pytest.raises(ValueError, match="outside the declared groups"):  # the model predicts "b": not declared
        _pp(estimator=regressor, membership_estimator=membership, groups=["a", "c"], budget=budget).fit(
            features[labels == "a"], sensitive_features=labels[labels == "a"])
    assert budget.spent() == (0.0, 0.0)


@pytest.mark.filterwarnings("ignore:some outputs lie outside bounds")
def test_a_private_regressor_fitted_inside_is_charged_first_and_composed():
    from dpfair.linear_model import DPLinearRegression

    rng = np.random.default_rng(10)
    features = rng.uniform(0, 1, size=(400, 2))
    labels = rng.integers(0, 2, 400)
    y = np.clip(0.8 * features[:, 0] + rng.normal(0, 0.1, 400), 0, 1)
    membership = LogisticRegression().fit(features, labels)
    budget = PrivacyBudget(3.0, 1e-3)
    base = DPLinearRegression(epsilon=0.5, data_norm=2.0, target_bound=1.0, budget=budget, random_state=1)
    pp = _pp(estimator=base, membership_estimator=membership, prefit=False, budget=budget).fit(
        features, y, sensitive_features=labels)
    labels_charged = [entry.label for entry in budget.ledger]
    assert labels_charged[0].startswith("DPLinearRegression.fit") and labels_charged[-1].endswith("cell histogram)")
    assert pp.privacy_spent_["epsilon"] == pytest.approx(1.5)
    small = PrivacyBudget(1.2, 1e-3)  # cannot pay both: refused before the base model is fitted
    refused = _pp(estimator=DPLinearRegression(epsilon=0.5, data_norm=2.0, target_bound=1.0, budget=small),
                  membership_estimator=membership, prefit=False, budget=small)
    with pytest.raises(PrivacyBudgetExceededError):
        refused.fit(features, y, sensitive_features=labels)
    assert not small.ledger


def test_a_solver_failure_after_the_release_falls_back_to_the_constant_map(monkeypatch):
    """Nothing can fail after the charge: if HiGHS reports no optimum the constant (exactly fair) map is used."""
    import dpfair.regression._blind_lp as lp_module

    class _Failed:
        status, message = 4, "numerical difficulties"

    monkeypatch.setattr(lp_module.optimize, "linprog", lambda *args, **kwargs: _Failed())
    X, groups = _rows(200, seed=11)
    budget = PrivacyBudget(1.0)
    with pytest.warns(UserWarning, match="constant map"):
        pp = _pp(budget=budget).fit(X, sensitive_features=groups)
    assert budget.spent() == (1.0, 0.0)
    assert (pp.transport_.max(axis=1) == 1.0).all() and np.unique(pp.transport_.argmax(axis=1)).size == 1


def test_the_experiments_public_output_range_is_the_linear_models_range_over_the_declared_box():
    """The blind table's bounds in the comparison come from the (public) regressor and a declared box only."""
    from types import SimpleNamespace

    from dpfair.experiments.regression_blind import _linear_output_range

    model = SimpleNamespace(coef_=np.array([0.05, -0.2]), intercept_=1.0)  # range 1.0 + [0.5 - 0.2, 2.4 - 0]
    box = {"a": (10.0, 48.0), "b": (0.0, 1.0)}
    assert _linear_output_range(model, ["a", "b"], box, (1.0, 4.0)) == pytest.approx((1.3, 3.4))
    assert _linear_output_range(model, ["a", "b"], box, (1.0, 2.0)) == pytest.approx((1.3, 2.0))  # within bounds
    assert _linear_output_range(model, ["a", "c"], box, (1.0, 4.0)) == (1.0, 4.0)  # a feature outside the box
    assert _linear_output_range(model, ["a", "b"], None, (0.0, 1.0)) == (0.0, 1.0)
