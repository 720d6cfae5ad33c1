"""protects="attribute" on both regression post-processors: the table released on its public column totals."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning, audit_epsilon
from dpfair.privacy.noise import get_noise_source
from dpfair.regression import BlindFairRegressionPostProcessor, FairRegressionPostProcessor
from dpfair.regression._attribute_release import (
    entry_noise_scale,
    project_onto_totals,
    release_on_public_totals,
)


def _rows(n=300, n_groups=2, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, n)
    outputs = np.clip(rng.normal(0.35 + 0.3 * groups / max(n_groups - 1, 1), 0.12), 0, 1)
    logits = 2.4 * (np.eye(n_groups)[groups] - 1 / n_groups) + rng.normal(0, 1, (n, n_groups))
    membership = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return np.column_stack([outputs, membership]), groups


def _blind(**kwargs):
    args = {"epsilon": 1.0, "n_bins": 6, "alpha": 0.1, "bounds": (0.0, 1.0), "groups": [0, 1], "random_state": 0,
            "protects": "attribute", **kwargs}
    return BlindFairRegressionPostProcessor(**args)


def _aware(**kwargs):
    args = {"epsilon": 1.0, "n_bins": 8, "alpha": 0.1, "bounds": (0.0, 1.0), "groups": [0, 1], "random_state": 0,
            "protects": "attribute", **kwargs}
    return FairRegressionPostProcessor(**args)


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.filterwarnings("ignore", message="the private weight")
        return fit()


# ------------------------------------------------------------------ the projection, by brute force
def test_projection_onto_the_totals_is_the_nearest_column_with_that_sum():
    rng = np.random.default_rng(1)
    for n_groups in (2, 3, 5):
        table = rng.normal(0.02, 0.05, (n_groups, 40))
        totals = np.abs(rng.normal(0.03, 0.03, 40))
        projected = project_onto_totals(table, totals)
        np.testing.assert_allclose(projected.sum(axis=0), totals, atol=1e-12)
        for c in range(8):  # no point of the hyperplane in a random sample is nearer
            points = rng.normal(0.0, 0.05, (400, n_groups))
            points += (totals[c] - points.sum(axis=1, keepdims=True)) / n_groups
            best = np.linalg.norm(points - table[:, c], axis=1).min()
            assert np.linalg.norm(projected[:, c] - table[:, c]) <= best + 1e-12
    one = np.array([-0.01, 0.02, 0.09])
    totals = np.array([0.05, 0.05, 0.05])
    released = np.stack([totals - one, one])  # two groups on the totals: already on the hyperplane, kept as is
    np.testing.assert_allclose(project_onto_totals(released, totals), released, atol=1e-15)


# ------------------------------------------------------------------ privacy: neighbours and the audit
@pytest.mark.parametrize("n_groups", [2, 4])
def test_identical_noise_neighbours_differ_by_the_sensitivity_in_the_changed_rows_cell_only(n_groups):
    X, groups = _rows(200, n_groups=n_groups, seed=3)
    neighbour = groups.copy()
    neighbour[7] = (groups[7] + 1) % n_groups  # the same row (features, output, cell), another attribute
    declared = list(range(n_groups))
    first = _quiet(lambda: _blind(groups=declared, random_state=11).fit(X, sensitive_features=groups))
    second = _quiet(lambda: _blind(groups=declared, random_state=11).fit(X, sensitive_features=neighbour))
    difference = second.noisy_table_ - first.noisy_table_
    changed_cells = np.flatnonzero(np.abs(difference).sum(axis=0) > 1e-12)
    assert changed_cells.size == 1  # one cell: the row's own (its cell is a function of its public x)
    np.testing.assert_allclose(difference.sum(axis=0), 0.0, atol=1e-15)  # the public totals do not move
    if n_groups == 2:  # group 1's released column moves by 1/n: L1 sensitivity 1/n of the one noisy column
        assert abs(difference[1]).sum() == pytest.approx(1.0 / 200)
        assert first._noise_scale_ == pytest.approx(1.0 / (200 * 1.0))
    else:  # two entries of that cell move by 1/n: L1 sensitivity 2/n
        assert abs(difference).sum() == pytest.approx(2.0 / 200)
        assert first._noise_scale_ == pytest.approx(2.0 / (200 * 1.0))
    aware = [_quiet(lambda g=g: _aware(groups=declared, random_state=11).fit(X[:, 0], sensitive_features=g))
             for g in (groups, neighbour)]
    # the aware table (group weights times their pmfs: the released table on its totals) moves in the row's bin only,
    # by 1/n in two groups' entries: 1/n in group 1's released column with two groups, 2/n in all with more
    tables = [fit.group_weights_[:, None] * fit.pmfs_ for fit in aware]
    difference = tables[1] - tables[0]
    assert np.flatnonzero(np.abs(difference).sum(axis=0) > 1e-12).size == 1
    np.testing.assert_allclose(difference.sum(axis=0), 0.0, atol=1e-15)
    assert abs(difference).sum() == pytest.approx(2.0 / 200)
    assert abs(difference[neighbour[7]]).sum() == pytest.approx(1.0 / 200)


def _half_noise_release(joint, n_rows, epsilon, noise):
    """A broken mutant: half the Laplace scale (as if the two-group column's sensitivity were 1/(2n))."""
    released = release_on_public_totals(joint, n_rows, epsilon, noise)
    return joint + (released - joint) / 2.0


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("n_groups", [2, 3])
def test_audit_the_release_on_public_totals_and_catch_a_half_noise_mutant(n_groups):
    eps, n = 1.0, 10
    groups = np.arange(n) % n_groups
    neighbour = groups.copy()
    neighbour[0] = 1  # one row's attribute, 0 -> 1, in cell 0 (every row's cell is fixed: public)
    cells = np.arange(n) % 2

    def released(release):
        def mechanism(g, size, rng):
            joint = np.zeros((n_groups, 2))
            np.add.at(joint, (g, cells), 1.0 / n)
            # group 1's entry less group 0's in the row's cell: the change moves it by 2/n, the most any test can see
            return np.array([release(joint, n, eps, get_noise_source(int(s)))[:2, 0] @ [-1, 1]
                             for s in rng.integers(0, 2**32, size=size)])
        return mechanism

    honest = audit_epsilon(released(release_on_public_totals), groups, neighbour, n_samples=3000)
    assert honest.epsilon_lower_bound <= eps
    broken = audit_epsilon(released(_half_noise_release), groups, neighbour, n_samples=3000)
    assert broken.epsilon_lower_bound > eps


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.filterwarnings("ignore:the private weight")
def test_audit_the_fitted_blind_post_processor_under_the_attribute_relation():
    eps = 1.0
    X = np.column_stack([np.full(10, 0.2), np.full(10, 0.5), np.full(10, 0.5)])
    groups = np.array([0] * 5 + [1] * 5)
    neighbour = groups.copy()
    neighbour[-1] = 0  # the last row's attribute only

    def mechanism(g, size, rng):
        return np.array([_blind(epsilon=eps, n_bins=1, membership_bins=1, random_state=int(s)).fit(
            X, sensitive_features=g).noisy_table_[1, 1] for s in rng.integers(0, 2**32, size=size)])

    assert audit_epsilon(mechanism, groups, neighbour, n_samples=2000).epsilon_lower_bound <= eps


# ------------------------------------------------------------------ epsilon = inf, the default, the declarations
@pytest.mark.parametrize("n_groups", [2, 3])
def test_epsilon_inf_is_exactly_the_non_private_fit(n_groups):
    X, groups = _rows(400, n_groups=n_groups, seed=5)
    declared = list(range(n_groups))
    for make, data in ((_blind, X), (_aware, X[:, 0])):
        attribute = _quiet(lambda make=make, data=data: make(epsilon=math.inf, groups=declared).fit(
            data, sensitive_features=groups))
        records = _quiet(lambda make=make, data=data: make(epsilon=math.inf, groups=declared, protects="records").fit(
            data, sensitive_features=groups))
        np.testing.assert_array_equal(attribute.transport_, records.transport_)
        assert attribute.objective_ == records.objective_
        assert attribute.privacy_spent_["epsilon"] == math.inf
        assert attribute.privacy_spent_["relation"] == "change_attribute"


def test_records_default_and_what_privacy_spent_says():
    X, groups = _rows(300)
    default = BlindFairRegressionPostProcessor(epsilon=1.0, n_bins=6, alpha=0.1, bounds=(0, 1), groups=[0, 1],
                                               random_state=4).fit(X, sensitive_features=groups)
    records = _blind(protects="records", random_state=4).fit(X, sensitive_features=groups)
    for name in ("noisy_table_", "transport_", "cell_pmfs_"):
        np.testing.assert_array_equal(getattr(default, name), getattr(records, name))
    assert default.privacy_spent_["relation"] == "replace" and default.get_params()["protects"] == "records"
    attribute = _blind(random_state=4).fit(X, sensitive_features=groups)
    spent = attribute.privacy_spent_
    assert spent["relation"] == "change_attribute" and spent["epsilon"] == 1.0
    assert "sensitive attribute" in spent["protects"] and "public, not protected" in spent["protects"]
    assert "change one post-processing row's sensitive attribute" in spent["neighbouring"]
    aware = _aware().fit(X[:, 0], sensitive_features=groups)
    assert aware.privacy_spent_["relation"] == "change_attribute"
    assert FairRegressionPostProcessor().get_params()["protects"] == "records"


def test_two_groups_release_one_laplace_column_of_half_the_scale():
    X, groups = _rows(2000, seed=2)
    fits = [_blind(n_bins=12, membership_bins=3, random_state=s).fit(X, sensitive_features=groups) for s in range(20)]
    exact = _quiet(lambda: _blind(epsilon=math.inf, n_bins=12, membership_bins=3).fit(X, sensitive_features=groups))
    errors = np.array([fit.noisy_table_ - exact.noisy_table_ for fit in fits])
    # every released entry errs by one Laplace(1/(n eps)) draw (sd sqrt(2)/(n eps)), group 0 by its negative
    np.testing.assert_allclose(errors[:, 0], -errors[:, 1], atol=1e-15)
    assert np.std(errors[:, 1]) == pytest.approx(math.sqrt(2) / 2000, rel=0.15)
    assert entry_noise_scale(1.0, 2000, 2, "attribute") == 1 / 2000 == entry_noise_scale(1.0, 2000, 4, "records") / 2
    np.testing.assert_array_equal(fits[0]._projection_shift_, 0.0)  # nothing to project with two groups


def test_bad_protects_and_budget_relations_are_refused_before_the_charge():
    X, groups = _rows(100)
    budget = PrivacyBudget(5.0)
    for bad in ("rows", None, 1):
        with pytest.raises(ValueError, match="protects must be one of"):
            _blind(protects=bad, budget=budget).fit(X, sensitive_features=groups)
        with pytest.raises(ValueError, match="protects must be one of"):
            _aware(protects=bad, budget=budget).fit(X[:, 0], sensitive_features=groups)
    assert budget.spent() == (0.0, 0.0)
    attribute_budget = PrivacyBudget(1.5, neighbouring="change_attribute")
    _blind(budget=attribute_budget).fit(X, sensitive_features=groups)
    with pytest.raises(PrivacyBudgetExceededError):
        _aware(budget=attribute_budget).fit(X[:, 0], sensitive_features=groups)
    assert attribute_budget.spent()[0] == pytest.approx(1.0)
    with pytest.raises(PrivacyBudgetExceededError, match="no sound conversion"):
        _aware(budget=PrivacyBudget(5.0)).fit(X[:, 0], sensitive_features=groups)


def test_refit_alpha_keeps_the_projection_shift_in_the_guarantee():
    # three groups: with two the release already sums to the totals and the projection moves nothing
    X, groups = _rows(60_000, n_groups=3, seed=6)
    pp = _blind(groups=[0, 1, 2], n_bins=4, membership_bins=1, alpha=0.2, epsilon=2.0).fit(X, sensitive_features=groups)
    assert (pp._projection_shift_ > 0).any()
    first = pp.guaranteed_violation_
    assert first < 1.0
    again = pp.refit_alpha(0.1).refit_alpha(0.2).guaranteed_violation_
    assert again == first
    # the shift enters: with it forced to zero the bound is smaller or equal
    shifted = pp._solution_attributes(pp.cell_pmfs_, pp.group_weights_, (pp.pooled_cell_, pp._representative_),
                                      pp._unit_grid_, 1.0, 0.2, pp._beta_, (pp._noise_scale_, True, 0 * pp._projection_shift_),
                                      pp._noise_multiple_)
    assert shifted["guaranteed_violation_"] < first
    # and it holds: the exact KS on the training rows (the map's randomness integrated out) is within the bound
    dist = pp.output_distribution(X)
    cdfs = np.array([np.cumsum(dist[groups == a].mean(axis=0)) for a in (0, 1, 2)])
    assert max(np.abs(cdfs[a] - cdfs[b]).max() for a in range(3) for b in range(a)) <= first


@pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")
def test_a_regressor_fitted_here_reads_only_public_rows_under_the_attribute_relation():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(8)
    X = rng.uniform(size=(300, 2))
    y = X @ [0.5, 0.3]
    groups = rng.integers(0, 2, 300)
    budget = PrivacyBudget(5.0, neighbouring="change_attribute")
    with pytest.warns(PrivacyLeakWarning, match="prefit=False"):  # the rows are not protected, as it says
        pp = _aware(estimator=LinearRegression(), prefit=False, budget=budget).fit(X, y, sensitive_features=groups)
    # the attribute's guarantee is the table's: the regressor read (X, y) only, public under this relation
    assert pp.privacy_spent_["epsilon"] == 1.0 and pp.privacy_spent_["relation"] == "change_attribute"
    assert budget.spent() == (1.0, 0.0)
    records = _aware(estimator=LinearRegression(), prefit=False, protects="records")
    with pytest.warns(PrivacyLeakWarning):
        records.fit(X, y, sensitive_features=groups)
    assert records.privacy_spent_["epsilon"] == math.inf  # whole rows: the clone saw them non-privately


@pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")
@pytest.mark.parametrize("make", [_aware, _blind])
def test_a_private_regressor_fitted_here_is_refused_before_any_charge_by_a_replace_one_budget(make):
    from dpfair.linear_model import DPLinearRegression

    rng = np.random.default_rng(9)
    X = rng.uniform(size=(300, 3))
    y = X[:, 0] * 0.5 + 0.2
    groups = rng.integers(0, 2, 300)
    shared = PrivacyBudget(5.0, 1e-3)  # kept under replace-one: it cannot count the table's change_attribute charge
    regressor = DPLinearRegression(epsilon=1.0, data_norm=2.0, target_bound=(0.0, 1.0), budget=shared)
    with pytest.raises(PrivacyBudgetExceededError, match="nothing was charged"):
        make(estimator=regressor, prefit=False, budget=shared).fit(X, y, sensitive_features=groups)
    assert shared.spent() == (0.0, 0.0)  # the regressor's fit did not spend before the table was refused
    apart = PrivacyBudget(5.0, 1e-3)
    regressor = DPLinearRegression(epsilon=1.0, data_norm=2.0, target_bound=(0.0, 1.0), budget=apart)
    with pytest.raises(PrivacyBudgetExceededError, match="nothing was charged"):
        make(estimator=regressor, prefit=False, budget=PrivacyBudget(5.0)).fit(X, y, sensitive_features=groups)
    assert apart.spent() == (0.0, 0.0)


@pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")
def test_the_records_default_releases_what_it_released_before_the_option():
    # values of a seeded fit computed with the code before protects= existed (three groups)
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 3, 200)
    outputs = np.clip(rng.normal(0.3 + 0.2 * groups, 0.15), 0, 1)
    X = np.column_stack([outputs, rng.dirichlet(np.ones(3), 200)])
    blind = BlindFairRegressionPostProcessor(epsilon=1.0, n_bins=3, alpha=0.1, bounds=(0, 1), groups=[0, 1, 2],
                                             random_state=5).fit(X, sensitive_features=groups)
    aware = FairRegressionPostProcessor(epsilon=1.0, n_bins=4, alpha=0.1, bounds=(0, 1), groups=[0, 1, 2],
                                        random_state=5).fit(outputs, sensitive_features=groups)
    np.testing.assert_allclose(blind.noisy_table_[:, :4], [
        [0.024416235335369, 0.069568043871467, 0.020311306927612, 0.034406889959218],
        [0.019359944783565, -0.011069736894249, 0.001178743028927, 0.018891757728718],
        [0.009478605095614, -0.004574362509057, -0.012104028761088, 0.00505877851929]], rtol=0, atol=1e-14)
    np.testing.assert_allclose(aware.pmfs_, [
        [0.500225135888737, 0.48343209853935, 0.016342765571913, 0.0],
        [0.0, 0.60951175950249, 0.386970711830909, 0.003517528666601],
        [0.0, 0.187107183512146, 0.506251751455982, 0.306641065031872]], rtol=0, atol=1e-14)


@pytest.mark.parametrize("n_groups", [2, 3])
def test_secure_noise_by_default_under_the_attribute_relation(n_groups):
    # as a user runs it: random_state=None, no seed warning, a fresh draw each fit, on the public totals
    X, groups = _rows(400, n_groups=n_groups, seed=2)
    declared = list(range(n_groups))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither a SeededNoiseWarning nor a leak warning
        first = _blind(groups=declared, random_state=None).fit(X, sensitive_features=groups)
        second = _blind(groups=declared, random_state=None).fit(X, sensitive_features=groups)
        aware = _aware(groups=declared, random_state=None).fit(X[:, 0], sensitive_features=groups)
    for fitted in (first, aware):
        spent = fitted.privacy_spent_
        assert (spent["noise"], spent["relation"], spent["epsilon"]) == ("secure", "change_attribute", 1.0)
    assert not np.array_equal(first.noisy_table_, second.noisy_table_)
    exact = _quiet(lambda: _blind(groups=declared, epsilon=math.inf).fit(X, sensitive_features=groups)).noisy_table_
    if n_groups == 2:  # group 0's column is the public total less group 1's released one
        np.testing.assert_allclose(first.noisy_table_.sum(axis=0), exact.sum(axis=0), atol=1e-12)
