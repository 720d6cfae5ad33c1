"""dpfair.linear_model: exactness at epsilon = inf, privacy audits with mutants, declared bounds, pipelines."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.datasets import make_classification, make_regression
from dpfair.linear_model import DPLinearRegression, DPLogisticRegression
from dpfair.linear_model import _logistic as logistic
from dpfair.linear_model._ssp import release_statistics, ssp_sensitivity, sufficient_statistics
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning, SeededNoiseWarning, audit_epsilon
from dpfair.privacy.noise import get_noise_source
from dpfair.regression import FairRegressionPostProcessor


def _regression(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, 3))
    y = np.clip(X @ [1.0, -0.5, 0.25] + 0.1 * rng.normal(size=n), -1, 1)
    return X, y


@pytest.mark.parametrize("alpha", [0.0, 2.0])
def test_linear_epsilon_inf_is_sklearn_ridge_with_a_leak_warning(alpha):
    X, y = _regression()
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf"):
        ours = DPLinearRegression(epsilon=math.inf, alpha=alpha).fit(X, y)
    ref = Ridge(alpha=alpha).fit(X, y) if alpha else LinearRegression().fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-10)
    assert ours.intercept_ == pytest.approx(ref.intercept_, abs=1e-10)
    assert ours.privacy_spent_["epsilon"] == math.inf


def test_logistic_epsilon_inf_is_sklearn_on_the_same_objective_any_two_labels():
    X, y01 = _regression()[0], (_regression()[1] > 0).astype(int)
    y = np.where(y01 == 1, "yes", "no")
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf"):
        ours = DPLogisticRegression(epsilon=math.inf, C=0.7, intercept_scaling=2.0).fit(X, y)
    # the same objective: the intercept is the weight of a constant column (2.0) and is penalised
    Z = np.column_stack([X, np.full(len(X), 2.0)])
    ref = LogisticRegression(C=0.7, fit_intercept=False, tol=1e-12, max_iter=1000).fit(Z, y)
    np.testing.assert_allclose(ours.coef_[0], ref.coef_[0, :3], rtol=1e-6)
    assert ours.intercept_[0] == pytest.approx(2.0 * ref.coef_[0, 3], rel=1e-6)
    assert ours.classes_.tolist() == ["no", "yes"]
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(Z), atol=1e-7)


def test_private_fits_are_close_report_privacy_and_need_declared_bounds():
    X, y = _regression(20_000)
    lin = DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=1.0, random_state=0).fit(X, y)
    np.testing.assert_allclose(lin.coef_, [1.0, -0.5, 0.25], atol=0.1)
    assert lin.privacy_spent_["epsilon"] == 1.0 and lin.privacy_spent_["delta"] == 1e-6
    lap = DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=1.0, mechanism="laplace", random_state=0).fit(X, y)
    assert lap.privacy_spent_["delta"] == 0.0
    log = DPLogisticRegression(epsilon=1.0, data_norm=1.0, C=0.5, random_state=0).fit(X, y > 0)
    spent = {key: log.privacy_spent_[key] for key in ("epsilon", "delta", "protects", "neighbouring")}
    assert log.score(X, y > 0) > 0.8 and spent == {
        "epsilon": 1.0, "delta": 0.0, "protects": "every training row (x, y): features and label",
        "neighbouring": "replace one training row (x, y) (the number of rows n is public)"}
    with pytest.raises(ValueError, match="data_norm is required with a finite epsilon"):
        DPLinearRegression(epsilon=1.0, target_bound=1.0).fit(X, y)
    with pytest.raises(ValueError, match="target_bound is required"):
        DPLinearRegression(epsilon=1.0, data_norm=1.0).fit(X, y)
    with pytest.raises(ValueError, match=r"exceeds the declared data_norm=0\.1"):
        DPLogisticRegression(epsilon=1.0, data_norm=0.1).fit(X, y > 0)
    with pytest.raises(ValueError, match="outside the declared target_bound"):
        DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=0.01).fit(X, y)
    with pytest.raises(ValueError, match="delta must be > 0 with mechanism='gaussian'"):
        DPLinearRegression(epsilon=1.0, delta=0.0, data_norm=1.0, target_bound=1.0, mechanism="gaussian").fit(X, y)
    # the default mechanism="auto" is pure epsilon-DP (Laplace) when no delta may be spent
    pure = DPLinearRegression(epsilon=1.0, delta=0.0, data_norm=1.0, target_bound=1.0, random_state=0).fit(X, y)
    assert pure.mechanism_ == "laplace" and pure.privacy_spent_["delta"] == 0.0


@pytest.mark.parametrize("make", [
    lambda b: DPLinearRegression(epsilon=0.6, data_norm=1.0, target_bound=1.0, budget=b, random_state=0),
    lambda b: DPLogisticRegression(epsilon=0.6, data_norm=1.0, budget=b, random_state=0),
])
def test_refused_budget_changes_nothing(make):
    X, y = _regression()
    y = y if isinstance(make(None), DPLinearRegression) else y > 0
    budget = PrivacyBudget(1.0, 1e-5)
    est = make(budget).fit(X, y)
    coef = est.coef_.copy()
    with pytest.raises(PrivacyBudgetExceededError):
        est.fit(X[:100], y[:100])
    np.testing.assert_array_equal(est.coef_, coef)
    assert budget.spent() == (pytest.approx(0.6), pytest.approx(1e-6 if isinstance(est, DPLinearRegression) else 0.0))
    with pytest.raises(NotFittedError):
        make(None).predict(X)


def _linear_mechanism(noise_factor):
    sensitivity = ssp_sensitivity(1.0 + 0.01**2, 3, "gaussian")  # data_norm 1, target_bound 0.01, 2 features

    def mechanism(data, size, rng):
        noisy = release_statistics(np.tile(data, (size, 1)), sensitivity=sensitivity * noise_factor, epsilon=1.0,
                                   delta=1e-6, mechanism="gaussian", noise=get_noise_source(rng))
        return (noisy[:, 0] - noisy[:, 2]) / math.sqrt(2.0)  # the direction in which the neighbours differ

    return mechanism


def test_linear_audit_passes_and_catches_half_noise():
    # neighbours: one row x = (1, 0) replaced by x' = (0, 1) (orthogonal: the L2 sensitivity is attained)
    rest = np.array([[0.5, 0.5]])
    a = sufficient_statistics(np.vstack([rest, [[1.0, 0.0]]]), np.zeros(2), False)
    b = sufficient_statistics(np.vstack([rest, [[0.0, 1.0]]]), np.zeros(2), False)
    honest = audit_epsilon(_linear_mechanism(1.0), a, b, n_samples=1_000_000, n_bins=40, delta=1e-6, random_state=1)
    mutant = audit_epsilon(_linear_mechanism(0.5), a, b, n_samples=1_000_000, n_bins=40, delta=1e-6, random_state=1)
    print(f"DPLinearRegression audit at epsilon=1, delta=1e-6: honest {honest.epsilon_lower_bound:.3f}, "
          f"half-noise mutant {mutant.epsilon_lower_bound:.3f}")
    assert honest.epsilon_lower_bound <= 1.0 < mutant.epsilon_lower_bound


def _logistic_mechanism(C, *, correct=True, noise_factor=1.0):
    def mechanism(data, size, rng):
        U, s = data
        n = U.shape[0]
        if correct:
            lam, extra, eps_prime = logistic.objective_perturbation_constants(1.0, C, 1.0, n)
        else:  # the classic bug: no curvature correction (epsilon' = epsilon, Delta = 0)
            lam, extra, eps_prime = 1.0 / (n * C), 0.0, 1.0
        b = logistic.draw_objective_noise(get_noise_source(rng), size, 1, eps_prime) * noise_factor
        F, _, converged = logistic.minimise_perturbed_objective(U, s, lam + extra, b / n, 100)
        assert converged
        return F[:, 0]

    return mechanism


def test_logistic_audit_passes_and_catches_broken_mutants():
    zero, one = (np.array([[0.0]]), np.array([1.0])), (np.array([[1.0]]), np.array([1.0]))
    flipped = (np.array([[1.0]]), np.array([-1.0]))
    bounds = {}
    # weak regularisation (C = 40): the curvature correction (Delta, epsilon / 2) is what keeps it private
    for name, mech, pair in [
        ("honest, C=40", _logistic_mechanism(40.0), (zero, one)),
        ("no curvature correction, C=40", _logistic_mechanism(40.0, correct=False), (zero, one)),
        ("honest, C=0.04", _logistic_mechanism(0.04), (one, flipped)),
        ("half noise, C=0.04", _logistic_mechanism(0.04, noise_factor=0.5), (one, flipped)),
        ("quarter noise, C=0.04", _logistic_mechanism(0.04, noise_factor=0.25), (one, flipped)),
    ]:
        bounds[name] = audit_epsilon(mech, *pair, n_samples=100_000, n_bins=40, random_state=1).epsilon_lower_bound
    print("DPLogisticRegression audit at epsilon=1:", {k: round(v, 3) for k, v in bounds.items()})
    assert bounds["honest, C=40"] <= 1.0 and bounds["honest, C=0.04"] <= 1.0
    assert bounds["no curvature correction, C=40"] > 1.0 and bounds["quarter noise, C=0.04"] > 1.0
    # Half the noise is not caught, and cannot be: for the logistic loss the gradient of one row moves by at
    # most 1 in one dimension (Chaudhuri et al. bound it by 2), so this mutant is still 1-DP on these neighbours.
    assert bounds["half noise, C=0.04"] <= 1.0


def test_private_base_makes_the_whole_post_processor_private_with_one_budget():
    X, y, g = make_classification(4000, disparity=1.5, random_state=0)
    X = X / np.linalg.norm(X, axis=1).max()  # a public scale, for the test
    budget = PrivacyBudget(1.0)
    post = DPEqualizedOddsPostProcessor(
        DPLogisticRegression(epsilon=0.5, data_norm=1.0, budget=budget, random_state=0), prefit=False, epsilon=0.5,
        groups=[0, 1], gamma=0.05, budget=budget, random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.simplefilter("ignore", SeededNoiseWarning)  # the seeds of these tests are not the leak checked here
        post.fit(X, y, sensitive_features=g)
    assert post.privacy_spent_["epsilon"] == 1.0 and "every training row (X, y, A)" in post.privacy_spent_["protects"]
    assert budget.spent()[0] == pytest.approx(1.0)
    # a budget too small for both fits is refused before the base model is fitted: nothing is spent
    small = PrivacyBudget(0.8)
    with pytest.raises(PrivacyBudgetExceededError, match="nothing was charged"):
        post.set_params(budget=small, estimator__budget=small).fit(X, y, sensitive_features=g)
    assert small.spent() == (0.0, 0.0)

    Xr, yr, gr = make_regression(4000, n_groups=2, disparity=2.0, random_state=0)
    Xr = Xr / np.linalg.norm(Xr, axis=1).max()
    yr = np.clip(yr, -0.5, 1.5)
    reg = FairRegressionPostProcessor(
        DPLinearRegression(epsilon=0.5, data_norm=1.0, target_bound=1.5, random_state=0), prefit=False, epsilon=0.5,
        bounds=(-3.0, 3.0), groups=[0, 1], random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        warnings.simplefilter("ignore", SeededNoiseWarning)  # the seeds of these tests are not the leak checked here
        warnings.filterwarnings("ignore", message="some outputs lie outside")  # a noisy regressor on 4000 rows
        reg.fit(Xr, yr, sensitive_features=gr)
    assert reg.privacy_spent_["epsilon"] == 1.0 and reg.privacy_spent_["delta"] == 1e-6
