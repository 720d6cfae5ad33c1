"""DPEqualizedOddsPostProcessor: Hardt et al. / fairlearn at epsilon = inf, the Laplace table, the privacy audit,
budgets and the undefined-slack / infeasible errors (Jagielski et al. 2019, Algorithm 1)."""

from __future__ import annotations

import itertools
import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

from dpfair.classification import _postprocessing_lp, _postprocessing_score_lp
from dpfair.classification import postprocessing as pp_module
from dpfair.classification.postprocessing import DPEqualizedOddsPostProcessor
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning, audit_epsilon
from dpfair.privacy.noise import get_noise_source


class ColumnClassifier(ClassifierMixin, BaseEstimator):
    """A 'fitted' base classifier whose prediction is the first column of X (the base predictions)."""

    def fit(self, X, y=None):
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = 1
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(int)


def _from_counts(cells):
    """Rows from counts per group: (n[y_hat=0, y=0], n[1, 0], n[0, 1], n[1, 1])."""
    yp, a, y = [], [], []
    for g, counts in cells.items():
        for (y_hat, label), n in zip(((0, 0), (1, 0), (0, 1), (1, 1)), counts, strict=True):
            yp += [y_hat] * n
            a += [g] * n
            y += [label] * n
    return np.array(yp, dtype=float)[:, None], np.array(a), np.array(y)


def _error_and_violation(proba, a, y):
    """Exact expected error and equalized-odds violation of P(Y_hat_p = 1 | row) = proba."""
    error = float(np.mean(np.where(y == 1, 1.0 - proba, proba)))
    groups = list(dict.fromkeys(a.tolist()))
    fp = np.array([proba[(a == g) & (y == 0)].mean() for g in groups])
    tp = np.array([proba[(a == g) & (y == 1)].mean() for g in groups])
    return error, float(max(np.ptp(fp), np.ptp(tp)))


DATASETS = {
    "two groups": {"a": (150, 50, 60, 140), "b": (120, 80, 30, 170)},
    "three groups": {"a": (150, 50, 60, 140), "b": (120, 80, 30, 170), "c": (180, 70, 90, 160)},
    "four groups": {0: (300, 40, 50, 110), 1: (90, 110, 20, 180), 2: (400, 100, 200, 300), 3: (50, 30, 25, 95)},
}


@pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")
@pytest.mark.parametrize("name", list(DATASETS))
def test_epsilon_inf_equals_fairlearn_threshold_optimizer(name):
    """Same objective (error = P(Y=0) FP + P(Y=1) (1 - TP) at equal rates), so the same optimum.

    fairlearn searches false-positive rates on the grid linspace(0, 1, grid_size + 1) while our LP is exact:
    (i) at its default grid fairlearn is never better than the LP; (ii) with grid_size the denominator of the
    LP's (rational) optimal false-positive rate the grid contains the optimum and both agree to 1e-6.
    """
    X, a, y = _from_counts(DATASETS[name])
    base = ColumnClassifier().fit(X)
    ours = DPEqualizedOddsPostProcessor(base, epsilon=math.inf, prefit=True).fit(X, y, sensitive_features=a)
    proba = ours.predict_proba(X, sensitive_features=a)[:, 1]
    error, violation = _error_and_violation(proba, a, y)
    assert violation <= 1e-9

    def fairlearn(grid_size):
        to = ThresholdOptimizer(estimator=base, constraints="equalized_odds", prefit=True, predict_method="predict",
                                grid_size=grid_size).fit(X, y, sensitive_features=a)
        return _error_and_violation(to._pmf_predict(X, sensitive_features=a)[:, 1], a, y)

    coarse_error, _ = fairlearn(1000)
    assert error <= coarse_error + 1e-12
    fp_rate = Fraction(float(proba[(a == a[0]) & (y == 0)].mean())).limit_denominator(10**5)
    fl_error, fl_violation = fairlearn(fp_rate.denominator)
    assert error == pytest.approx(fl_error, abs=1e-6)
    assert violation == pytest.approx(fl_violation, abs=1e-6)


@pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")
def test_epsilon_inf_equals_fairlearn_on_a_trained_base_classifier():
    X, y, g = make_classification(3000, disparity=2.0, random_state=1)
    base = LogisticRegression().fit(X[:1000], y[:1000])
    X, y, g = X[1000:], y[1000:], g[1000:]
    ours = DPEqualizedOddsPostProcessor(base, epsilon=math.inf, prefit=True).fit(X, y, sensitive_features=g)
    proba = ours.predict_proba(X, sensitive_features=g)[:, 1]
    error, violation = _error_and_violation(proba, g, y)
    fp_rate = Fraction(float(proba[(g == 0) & (y == 0)].mean())).limit_denominator(10**6)
    to = ThresholdOptimizer(estimator=base, constraints="equalized_odds", prefit=True, predict_method="predict",
                            grid_size=fp_rate.denominator).fit(X, y, sensitive_features=g)
    fl_error, fl_violation = _error_and_violation(to._pmf_predict(X, sensitive_features=g)[:, 1], g, y)
    assert error == pytest.approx(fl_error, abs=1e-6) and violation == pytest.approx(fl_violation, abs=1e-6)


@pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")
def test_gamma_relaxes_and_single_rate_constraints_only_bind_their_rate():
    X, a, y = _from_counts(DATASETS["three groups"])
    base = ColumnClassifier().fit(X)
    errors = []
    for gamma in (0.0, 0.05, 0.2, 1.0):
        est = DPEqualizedOddsPostProcessor(base, epsilon=math.inf, gamma=gamma, prefit=True).fit(X, y, sensitive_features=a)
        error, violation = _error_and_violation(est.predict_proba(X, sensitive_features=a)[:, 1], a, y)
        assert violation <= 2 * gamma + 1e-9  # |R_a - R_0| <= gamma for every a, so any two differ by <= 2 gamma
        errors.append(error)
    assert all(e1 >= e2 - 1e-12 for e1, e2 in itertools.pairwise(errors))
    unconstrained = float(np.mean(X[:, 0] != y))
    assert errors[-1] == pytest.approx(unconstrained)  # gamma = 1: the base classifier itself
    for constraints, y_value in (("true_positive_rate_parity", 1), ("false_positive_rate_parity", 0)):
        est = DPEqualizedOddsPostProcessor(base, epsilon=math.inf, constraints=constraints, prefit=True)
        proba = est.fit(X, y, sensitive_features=a).predict_proba(X, sensitive_features=a)[:, 1]
        rates = [proba[(a == g) & (y == y_value)].mean() for g in "abc"]
        assert np.ptp(rates) <= 1e-9


def test_noisy_table_is_the_laplace_mechanism_with_scale_2_over_m_epsilon():
    X, y, g = make_classification(2000, disparity=1.0, random_state=0)
    base = LogisticRegression().fit(X, y)
    m, epsilon = X.shape[0], 0.7
    est = DPEqualizedOddsPostProcessor(base, epsilon=epsilon, groups=[0, 1], prefit=True, random_state=11,
                                       score_bins=None)  # the paper's table of binary predictions
    est.fit(X, y, sensitive_features=g)
    q_hat = pp_module.joint_frequencies(base.predict(X).astype(int), g.astype(int), y.astype(int), 2)
    expected = get_noise_source(11).laplace(q_hat, 2.0 / (m * epsilon))  # Algorithm 1, line 3: Lap(2/(m eps))
    np.testing.assert_allclose(est.noisy_frequencies_, expected, rtol=0, atol=1e-15)
    # statistically: the noise of one cell has mean 0 and variance 2 b^2, b = 2/(m eps)
    draws = pp_module.noisy_frequencies(np.zeros(200_000), m, epsilon, 5)
    b = 2.0 / (m * epsilon)
    assert abs(draws.mean()) < 5 * math.sqrt(2) * b / math.sqrt(draws.size)
    assert np.var(draws) == pytest.approx(2 * b * b, rel=0.03)
    assert est.privacy_spent_["epsilon"] == epsilon and "sensitive attribute A" in est.privacy_spent_["protects"]
    assert "change one row's sensitive attribute" in est.privacy_spent_["neighbouring"]
    # slack of LP~ (1): 4 ln(4|A|/beta) / (min{q~_a y, q~_0 y} m eps)
    q_ay = est.noisy_frequencies_.sum(axis=0)
    expected_fp = 4 * math.log(4 * 2 / 0.05) / (min(q_ay[1, 0], q_ay[0, 0]) * m * epsilon)
    assert est.slack_fp_[1] == pytest.approx(expected_fp) and est.slack_fp_[0] == 0.0


def _neighbours(m=200):
    """Public (y_hat, y); A differs in the last row only."""
    rng = np.random.default_rng(0)
    y_pred, y = rng.integers(0, 2, m), rng.integers(0, 2, m)
    a = rng.integers(0, 2, m)
    a_prime = a.copy()
    a_prime[-1] = 1 - a[-1]
    return y_pred, y, a, a_prime


def _table_statistic(half_noise: bool):
    y_pred, y, _, _ = _neighbours()
    m, epsilon = y.size, 1.0
    i, j = (y_pred[-1], 0, y[-1]), (y_pred[-1], 1, y[-1])  # the two cells the changed row moves between

    def mechanism(a, size, rng):
        q_hat = pp_module.joint_frequencies(y_pred, a, y, 2)
        stack = np.broadcast_to(q_hat, (size, *q_hat.shape))
        eps = 2 * epsilon if half_noise else epsilon  # the mutant adds Lap(1/(m eps)): half the noise
        noisy = pp_module.noisy_frequencies(stack, m, eps, rng)
        return m * (noisy[(slice(None), *i)] - noisy[(slice(None), *j)])  # L1 sensitivity 2 in these units

    return mechanism


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_privacy_audit_passes_on_the_noisy_table_and_catches_half_noise():
    _, _, a, a_prime = _neighbours()
    honest = audit_epsilon(_table_statistic(False), a, a_prime, n_samples=100_000, n_bins=40, random_state=1)
    mutant = audit_epsilon(_table_statistic(True), a, a_prime, n_samples=100_000, n_bins=40, random_state=1)
    print(f"audit lower bounds at claimed epsilon=1: honest {honest.epsilon_lower_bound:.3f}, "
          f"half-noise mutant {mutant.epsilon_lower_bound:.3f}")
    assert honest.epsilon_lower_bound <= 1.0
    assert mutant.epsilon_lower_bound > 1.0


def test_refused_budget_leaves_budget_and_fitted_state_unchanged():
    X, y, g = make_classification(1000, random_state=2)
    budget = PrivacyBudget(1.0, neighbouring="change_attribute")
    est = DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=0.8, groups=[0, 1], budget=budget,
                                       random_state=0)
    est.fit(X, y, sensitive_features=g)
    before = (est.probabilities_.copy(), est.noisy_frequencies_.copy(), est.estimator_)
    with pytest.raises(PrivacyBudgetExceededError):
        est.fit(X[:500], y[:500], sensitive_features=g[:500])
    assert budget.spent()[0] == pytest.approx(0.8) and len(budget.ledger) == 1
    np.testing.assert_array_equal(est.probabilities_, before[0])
    np.testing.assert_array_equal(est.noisy_frequencies_, before[1])
    assert est.estimator_ is before[2]
    fresh = DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=0.8, groups=[0, 1], budget=budget)
    with pytest.raises(PrivacyBudgetExceededError):
        fresh.fit(X, y, sensitive_features=g)
    assert not hasattr(fresh, "probabilities_") and not hasattr(fresh, "estimator_")
    with pytest.raises(ValueError, match="outside the declared groups"):  # validated before charging
        DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=0.1, groups=[0], budget=budget).fit(
            X, y, sensitive_features=g)
    assert budget.spent()[0] == pytest.approx(0.8)


def _empty_declared_group_data(m=400):
    """Two populated groups "F", "M" and a declared third group "X" with no rows."""
    X, y, g = make_classification(m, random_state=3)
    return X, y, np.where(g == 0, "F", "M"), LogisticRegression().fit(X, y)


def test_an_empty_declared_group_is_handled_by_the_mechanism_after_one_charge_per_fit():
    """Nothing fails after the charge: 17 of 20 fits used to raise "noisy q~_ay <= 0" AFTER the charge.

    A declared group without rows is handled by the mechanism (CONTRIBUTING, rule 9): every fit that charged
    completes with a valid classifier.  Secure noise and the default arguments.
    """
    X, y, g, base = _empty_declared_group_data()
    budget = PrivacyBudget(100.0, neighbouring="change_attribute")
    n_fits = 20
    for _ in range(n_fits):
        est = DPEqualizedOddsPostProcessor(base, groups=["F", "M", "X"], budget=budget)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the vacuous constraints of "X" are announced
            est.fit(X, y, sensitive_features=g)
        assert est.score_bins_ == 8  # the default for a base model with predict_proba
        assert est.probabilities_.shape == (8, 3) and ((est.probabilities_ >= 0) & (est.probabilities_ <= 1)).all()
        assert np.isfinite(est.objective_)
        proba = est.predict_proba(X[:5], sensitive_features=["X"] * 5)
        assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1.0)
    assert len(budget.ledger) == n_fits  # exactly one charge per fit, and every fit that charged returned
    assert budget.spent()[0] == pytest.approx(n_fits * 1.0)


def test_a_tiny_group_never_raises_after_the_charge_and_warnings_hold_no_private_values():
    X, y, g = make_classification(300, random_state=3)
    g = g.astype(object)
    g[:3] = "rare"  # a tiny third group: its noisy q~_ay is <= 0 for some noise draws
    base = LogisticRegression().fit(X, y)
    budget = PrivacyBudget(100.0, neighbouring="change_attribute")
    warned = named_empty = 0
    for seed in range(40):
        est = DPEqualizedOddsPostProcessor(base, epsilon=0.05, groups=[0, 1, "rare"], prefit=True, random_state=seed,
                                           budget=budget, score_bins=None)  # the paper's slack of LP~ (1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X, y, sensitive_features=g)
        assert ((est.probabilities_ >= 0) & (est.probabilities_ <= 1)).all()
        for warning in caught:
            if issubclass(warning.category, pp_module.VacuousConstraintWarning):
                message = str(warning.message)
                assert "larger epsilon" in message
                # the tiny group is named by the specific warning (released mass indistinguishable from 0)
                named_empty += issubclass(warning.category, pp_module.EmptyGroupWarning) and "'rare'" in message
                # no count, frequency or slack is printed: only the declared labels, epsilon and public constants
                assert set(re.findall(r"\d+(?:\.\d+)?", message)) <= {"0", "1", "0.05"}, message
                warned += 1
    assert len(budget.ledger) == 40 and warned > 0 and named_empty > 0
    # epsilon = inf: a declared group absent from the data has no rates; its constraints are vacuous, announced
    with pytest.warns(PrivacyLeakWarning), pytest.warns(pp_module.VacuousConstraintWarning, match="'absent'"):
        est = DPEqualizedOddsPostProcessor(base, epsilon=math.inf, groups=[0, 1, "absent"], prefit=True).fit(
            X, y, sensitive_features=np.where(g == "rare", 0, g))
    assert est.slack_fp_[2] >= 1.0 and est.slack_tp_[2] >= 1.0 and est.slack_fp_[1] == 0.0


def test_a_failed_lp_after_the_charge_falls_back_to_the_best_constant_classifier(monkeypatch):
    """The other raise after the charge (HiGHS reporting no optimum): a valid, fair result instead."""
    X, y, g, base = _empty_declared_group_data()
    budget = PrivacyBudget(10.0, neighbouring="change_attribute")

    class Failed:
        status, x, fun, message = 4, None, None, "numerical difficulties "

    monkeypatch.setattr(_postprocessing_lp, "linprog", lambda *args, **kwargs: Failed())
    monkeypatch.setattr(_postprocessing_score_lp, "linprog", lambda *args, **kwargs: Failed())  # the score-bin LP
    est = DPEqualizedOddsPostProcessor(base, groups=["F", "M"], budget=budget)
    with pytest.warns(pp_module.VacuousConstraintWarning, match="constant classifier"):
        est.fit(X, y, sensitive_features=g)
    assert len(budget.ledger) == 1
    assert np.ptp(est.probabilities_) == 0.0 and est.probabilities_[0, 0] in (0.0, 1.0)  # equal rates in every group
    with pytest.raises(ValueError, match="has no solution"):  # the public helper still reports the failure
        pp_module.solve_lp(np.full((2, 2, 2), 0.125), np.zeros(2), np.zeros(2))


def test_infeasible_lp_raises_value_error():
    q = np.full((2, 2, 2), 0.125)
    q[1, 1, 0] = 0.2
    q[0, 1, 0] = 0.05
    with pytest.raises(ValueError, match=r"has no solution.*larger epsilon.*larger gamma"):
        pp_module.solve_lp(q, np.array([0.0, -0.1]), None)  # a negative bound: |FP_1 - FP_0| <= -0.1
    p, _ = pp_module.solve_lp(q, np.array([0.0, 0.0]), np.array([0.0, 0.0]))
    assert ((0 <= p) & (p <= 1)).all()


def test_labels_must_be_binary_and_groups_declared():
    X, y, g = make_classification(200, random_state=4)
    est = DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=1.0, groups=[0, 1], random_state=0)
    with pytest.raises(ValueError, match="y must hold exactly two class labels"):
        est.fit(X, y + (np.arange(y.size) % 3 == 0), sensitive_features=g)  # three labels: 0, 1, 2
    with pytest.raises(ValueError, match="groups is required with a finite epsilon"):
        DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=1.0).fit(X, y, sensitive_features=g)
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf"):
        inf = DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=math.inf).fit(X, y, sensitive_features=g)
    assert inf.groups_.tolist() == [0, 1] and inf.privacy_spent_["epsilon"] == math.inf


def test_prefit_false_trains_a_clone_on_x_y_only_without_leak_warning():
    X, y, g = make_classification(500, random_state=5)
    logreg = LogisticRegression(C=0.5)
    # secure noise: a seed would (rightly) raise its own SeededNoiseWarning, a PrivacyLeakWarning
    est = DPEqualizedOddsPostProcessor(logreg, epsilon=1.0, groups=[0, 1], prefit=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        est.fit(X, y, sensitive_features=g)
    assert not hasattr(logreg, "coef_") and est.estimator_ is not logreg
    np.testing.assert_allclose(est.estimator_.coef_, LogisticRegression(C=0.5).fit(X, y).coef_)
    assert est.privacy_spent_["epsilon"] == 1.0
    with pytest.raises(Exception, match="estimator is not fitted but prefit=True"):
        DPEqualizedOddsPostProcessor(LogisticRegression(), epsilon=1.0, groups=[0, 1], prefit=True).fit(
            X, y, sensitive_features=g)


def test_predict_matches_predict_proba_and_seeded_predictions_are_reproducible():
    X, y, g = make_classification(4000, disparity=2.0, random_state=6)
    kwargs = {"epsilon": 2.0, "groups": [0, 1], "random_state": 7}
    first = DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, **kwargs).fit(X, y, sensitive_features=g)
    second = DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, **kwargs).fit(X, y, sensitive_features=g)
    p1 = first.predict(X, sensitive_features=g)
    np.testing.assert_array_equal(p1, second.predict(X, sensitive_features=g))
    proba = first.predict_proba(X, sensitive_features=g)
    assert proba.shape == (X.shape[0], 2) and np.allclose(proba.sum(axis=1), 1.0)
    draws = np.mean([first.predict(X, sensitive_features=g, random_state=s) for s in range(200)], axis=0)
    assert np.abs(draws - proba[:, 1]).max() < 0.15
    secure = DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=2.0, groups=[0, 1])
    secure.fit(X, y, sensitive_features=g)
    assert secure._predict_seed_ is None and set(np.unique(secure.predict(X, sensitive_features=g))) <= {0, 1}


def test_any_two_class_labels_as_in_scikit_learn():
    X, y, g = make_classification(800, random_state=3)
    kwargs = {"prefit": False, "epsilon": 2.0, "groups": [0, 1], "random_state": 0}
    ref = DPEqualizedOddsPostProcessor(LogisticRegression(), **kwargs).fit(X, y, sensitive_features=g)
    named = DPEqualizedOddsPostProcessor(LogisticRegression(), **kwargs).fit(
        X, np.where(y == 1, "yes", "no"), sensitive_features=g)
    assert named.classes_.tolist() == ["no", "yes"] and ref.classes_.tolist() == [0, 1]
    np.testing.assert_array_equal(named.probabilities_, ref.probabilities_)
    np.testing.assert_array_equal(named.predict(X, sensitive_features=g),
                                  np.where(ref.predict(X, sensitive_features=g) == 1, "yes", "no"))
    signed = DPEqualizedOddsPostProcessor(LogisticRegression(), **kwargs).fit(X, 2 * y - 1, sensitive_features=g)
    assert signed.classes_.tolist() == [-1, 1] and set(np.unique(signed.predict(X, sensitive_features=g))) <= {-1, 1}


def test_prefit_defaults_to_true_and_an_unfitted_estimator_says_how_to_fit_it():
    X, y, g = make_classification(300, random_state=3)
    with pytest.raises(NotFittedError, match=r"prefit=True \(the default; before dpfair 0.3 it was False\).*prefit=False"):
        DPEqualizedOddsPostProcessor(LogisticRegression(), epsilon=1.0, groups=[0, 1]).fit(X, y, sensitive_features=g)


def test_score_is_the_accuracy_of_predict_and_names_y():
    """The one ``score`` of the post-processors: accuracy here, ``y`` validated and named."""
    X, y, g = make_classification(400, random_state=2)
    est = DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=2.0, groups=[0, 1], random_state=0)
    est.fit(X, y, sensitive_features=g)
    expected = np.mean(est.predict(X, sensitive_features=g) == y)  # a seeded estimator predicts reproducibly
    assert est.score(X, y, sensitive_features=g) == pytest.approx(expected)
    with pytest.raises(ValueError, match=r"^y contains"):
        est.score(X, np.where(y == 1, np.nan, 0.0), sensitive_features=g)
    with pytest.raises(ValueError, match="y must have one value per row"):
        est.score(X, y[:-1], sensitive_features=g)
