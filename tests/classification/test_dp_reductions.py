"""DPExponentiatedGradient (Jagielski et al. 2019, Algorithm 3): fairlearn at epsilon=inf, privacy audits, contract."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fairlearn.reductions import EqualizedOdds, ExponentiatedGradient
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LinearRegression

from dpfair.classification.reductions import DPExponentiatedGradient
from dpfair.classification.reductions import _accounting as reductions_accounting
from dpfair.classification.reductions import _game as reductions_game
from dpfair.classification.reductions import _run as reductions_run
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning, audit_epsilon
from dpfair.privacy.noise import get_noise_source

pytestmark = [
    pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning"),
    pytest.mark.filterwarnings("ignore:Setting a value on a Series via .at"),  # inside fairlearn
    pytest.mark.filterwarnings("ignore::dpfair.classification.SmallBudgetWarning"),  # small fits on purpose
]


def _data(n=2000, disparity=1.0, seed=0):
    X, y, g = make_classification(n, n_features=10, disparity=disparity, random_state=seed)
    return X / np.linalg.norm(X, axis=1).max(), y, g


def _error_and_violation(p1, y, g):
    """Expected error and equalized-odds violation max_y |rate_1 - rate_0| (group against group 0, the paper's)."""
    err = float(np.mean(np.where(y == 1, 1 - p1, p1)))
    viol = max(abs(p1[(g == 1) & (y == t)].mean() - p1[(g == 0) & (y == t)].mean()) for t in (0, 1))
    return err, float(viol)


class LeastSquaresClassifier(ClassifierMixin, BaseEstimator):
    """Weighted least-squares classifier: the cost-sensitive oracle fairlearn gets, like ours a linear regression."""

    def fit(self, X, y, sample_weight=None):
        self.regression_ = LinearRegression().fit(X, y, sample_weight=sample_weight)
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return (self.regression_.predict(X) > 0.5).astype(int)


# ------------------------------------------------------------------ epsilon = inf against fairlearn
def test_matches_fairlearn_exponentiated_gradient_at_epsilon_inf():
    X, y, g = _data()
    gamma = 0.02
    fl = ExponentiatedGradient(LeastSquaresClassifier(), constraints=EqualizedOdds(difference_bound=gamma))
    fl.fit(X, y, sensitive_features=g)
    fl_err, _ = _error_and_violation(fl._pmf_predict(X)[:, 1], y, g)
    with pytest.warns(PrivacyLeakWarning):
        ours = DPExponentiatedGradient(
            epsilon=math.inf, delta=1e-5, gamma=gamma, bound_B=5.0, x_norm_bound=1.0, n_iter=300, eta=1.0
        ).fit(X, y, sensitive_features=g)
    err, viol = _error_and_violation(ours.predict_proba(X)[:, 1], y, g)
    assert abs(err - fl_err) <= 0.02
    assert viol <= gamma + 0.02
    assert ours.privacy_spent_["epsilon"] == math.inf


def test_private_fit_is_reasonable_and_reports_its_guarantee():
    X, y, g = _data(4000, seed=1)
    clf = DPExponentiatedGradient(
        epsilon=50.0, delta=1e-6, gamma=0.05, bound_B=2.0, x_norm_bound=1.0, groups=[0, 1], random_state=0
    ).fit(X, y, sensitive_features=g)
    spent = clf.privacy_spent_
    assert spent["epsilon"] == 50.0 and spent["delta"] == 1e-6
    assert "sensitive attribute" in spent["protects"] and "group label" in spent["neighbouring"]
    err, _ = _error_and_violation(clf.predict_proba(X)[:, 1], y, g)
    assert 0.0 <= err < 0.5
    assert clf.coef_.shape == (clf.best_iter_, X.shape[1] + 1) and 1 <= clf.best_iter_ <= clf.n_iter_
    assert clf.oracle_ == "statistics" and "Gaussian DP" in spent["protects"]  # the default oracle
    paper = DPExponentiatedGradient(
        epsilon=50.0, delta=1e-6, gamma=0.05, bound_B=2.0, x_norm_bound=1.0, groups=[0, 1], random_state=0,
        oracle="paper").fit(X, y, sensitive_features=g)
    assert "accountant='tight'" in paper.privacy_spent_["protects"]


# ------------------------------------------------------------------ Algorithm 3's parameters
def test_n_iter_eta_and_epsilon_step_follow_algorithm_3():
    T = reductions_accounting.default_n_iter(10.0, 1e-5, 1.0, 2, 10_000, 3, 0.05)
    denominator = 2 * 5 * math.sqrt(math.log(1e5)) * (3 * math.log(10_000) + math.log(40))
    expected = 1.0 * math.sqrt(math.log(5)) * 10_000 * 10.0 / denominator
    assert T == math.floor(expected)
    assert reductions_accounting.default_eta(2, T) == pytest.approx(0.5 * math.sqrt(math.log(5) / T))
    step, rest, _ = reductions_accounting.split_epsilon(1.0, 1e-6, 20)
    assert step == pytest.approx(1.0 / (4 * math.sqrt(20 * math.log(1e6))))
    assert rest > 0.1  # the advanced composition of the 2T releases leaves room for the counts
    _, rest_big, _ = reductions_accounting.split_epsilon(1000.0, 1e-6, 20)
    assert 100.0 - 1e-9 <= rest_big < 1000.0


@pytest.mark.parametrize("aware", [False, True])
def test_overall_reference_sensitivity_is_the_worst_case_change(aware):
    rng = np.random.default_rng(1)
    n_groups, den = 3, np.array([[40.0, 50.0], [30.0, 60.0], [45.0, 35.0]])
    labels = np.array([150.0, 170.0])
    bound = reductions_game.auditor_sensitivity(den, reference="overall", label_counts=labels, aware=aware)
    worst = 0.0
    for _ in range(400):
        pos = rng.integers(0, 30, size=(n_groups, 2)).astype(float)
        a, b = rng.choice(n_groups, 2, replace=False)
        t = rng.integers(0, 2)
        moved = pos.copy()
        moved[a, t] -= 1
        moved[b, t] += 1 if not aware else rng.integers(0, 2)  # A-aware: the row's h may change with its group
        kw = dict(reference="overall", label_counts=labels)
        diff = reductions_game.violations(pos, den, 0.1, **kw) - reductions_game.violations(moved, den, 0.1, **kw)
        worst = max(worst, np.abs(diff).sum())
    assert worst <= bound + 1e-12 and worst >= 0.5 * bound
    # the oracle against the overall rate: a row changing group changes its cost by at most B / q_min
    props = den / den.sum()
    for _ in range(200):
        lam = rng.dirichlet(np.ones(4 * n_groups)).reshape(n_groups, 4) * 2.0  # ||lambda||_1 = B = 2
        tau = reductions_game.cell_costs(lam, props, reference="overall", label_proportions=labels / labels.sum())
        assert np.abs(tau[:, None, :] - tau[None, :, :]).max() <= 2.0 / props.min() + 1e-9
    assert reductions_game.oracle_sensitivity(2.0, props, 3.0, aware=False, reference="overall") == pytest.approx(
        2.0 / props.min() * 4.0)


def test_sensitivities_are_the_worst_case_change():
    rng = np.random.default_rng(0)
    n_groups, den = 3, np.array([[40.0, 50.0], [30.0, 60.0], [45.0, 35.0]])
    bound = reductions_game.auditor_sensitivity(den)
    worst = 0.0
    for _ in range(300):  # random counts and a random row moved between random groups
        pos = rng.integers(0, 30, size=(n_groups, 2)).astype(float)
        a, b = rng.choice(n_groups, 2, replace=False)
        t = rng.integers(0, 2)
        moved = pos.copy()
        moved[a, t] -= 1
        moved[b, t] += 1
        diff = reductions_game.violations(pos, den, 0.1) - reductions_game.violations(moved, den, 0.1)
        worst = max(worst, np.abs(diff).sum())
    assert worst <= bound + 1e-12 and worst >= 0.5 * bound
    # the oracle: one row's cost changes by at most 2B/q_min, so Z^T C_1 by (||x||_1 + 1) 2B/q_min
    props = den / den.sum()
    lam = np.zeros((n_groups - 1, 4))
    lam[0, 0] = 2.0  # ||lambda||_1 = B = 2, all on one constraint
    tau = reductions_game.cell_costs(lam, props)
    assert np.abs(tau).max() <= 2.0 / props.min() + 1e-9
    assert reductions_game.oracle_sensitivity(2.0, props, 3.0, aware=False) == pytest.approx(2 * 2.0 / props.min() * 4.0)


# ------------------------------------------------------------------ empirical privacy audits
def _llr_statistic(outputs, mean_a, mean_b, scale):
    """Privacy-loss statistic of a Laplace vector release (a post-processing: it inherits the DP bound).

    Rounded: its atoms at +-epsilon would otherwise split on floating-point rounding of the
    (unhardened, seeded) noise, the floating-point leak the audit is not about.
    """
    return np.round((np.abs(outputs - mean_b).sum(axis=-1) - np.abs(outputs - mean_a).sum(axis=-1)) / scale, 6)


def _auditor_mechanism(eps_step, half_noise=False):
    den = np.array([[20.0, 20.0], [20.0, 20.0]])  # public (noisy) cell counts
    sens = reductions_game.auditor_sensitivity(den)
    pos_a = np.array([[10.0, 8.0], [6.0, 9.0]])
    pos_b = pos_a.copy()
    pos_b[0, 0] -= 1  # one row with h = 1, y = 0 moves from group 0 to group 1: neighbouring datasets
    pos_b[1, 0] += 1
    mean_a, mean_b = reductions_game.violations(pos_a, den, 0.05).ravel(), reductions_game.violations(pos_b, den, 0.05).ravel()
    assert np.abs(mean_a - mean_b).sum() == pytest.approx(sens)  # the worst case

    def mechanism(pos, size, rng):
        noise = get_noise_source(rng)
        out = np.stack([reductions_game.noisy_violations(pos, den, 0.05, eps_step, noise).ravel() for _ in range(size)])
        return _llr_statistic(out, mean_a, mean_b, sens / eps_step)

    return mechanism, pos_a, pos_b


def _oracle_mechanism(eps_step):
    rng = np.random.default_rng(0)
    m, B, R = 40, 1.0, 1.0
    X = rng.normal(size=(m, 1))
    X[0] = R  # the changed row sits on the norm bound (d = 1: ||x||_1 = R)
    X = np.clip(X, -R, R)
    y = np.zeros(m, dtype=int)
    index_a = np.r_[np.zeros(20, dtype=int), np.ones(20, dtype=int)]
    index_b = index_a.copy()
    index_b[0] = 1  # neighbouring: row 0's group changes
    props = np.full((2, 2), 0.25)  # public proportions
    lam = np.array([[B, 0.0, 0.0, 0.0]])  # all of B on one constraint: the worst case
    Z = np.hstack([X, np.ones((m, 1))])
    sens = reductions_game.oracle_sensitivity(B, props, R, aware=False)

    def costs(index):
        return 1.0 - y + reductions_game.cell_costs(lam, props)[index, y]

    mean_a, mean_b = Z.T @ costs(index_a), Z.T @ costs(index_b)
    assert np.abs(mean_a - mean_b).sum() == pytest.approx(sens)

    def mechanism(index, size, rng):
        noise = get_noise_source(rng)
        c = costs(index)
        # the release fit makes (reductions_game._noisy_moment of the exact Z^T C, see the spy test below)
        out = np.stack([reductions_game._noisy_moment(Z.T @ c, sens, eps_step, noise) for _ in range(size)])
        return _llr_statistic(out, mean_a, mean_b, sens / eps_step)

    return mechanism, index_a, index_b


def _auditor_overall_mechanism(eps_step):
    den = np.array([[20.0, 20.0], [20.0, 20.0]])
    labels = den.sum(axis=0)
    kw = dict(reference="overall", label_counts=labels)
    sens = reductions_game.auditor_sensitivity(den, **kw)
    pos_a = np.array([[10.0, 8.0], [6.0, 9.0]])
    pos_b = pos_a.copy()
    pos_b[0, 0] -= 1
    pos_b[1, 0] += 1
    mean_a = reductions_game.violations(pos_a, den, 0.05, **kw).ravel()
    mean_b = reductions_game.violations(pos_b, den, 0.05, **kw).ravel()
    assert np.abs(mean_a - mean_b).sum() == pytest.approx(sens)

    def mechanism(pos, size, rng):
        noise = get_noise_source(rng)
        out = np.stack([reductions_game.noisy_violations(pos, den, 0.05, eps_step, noise, **kw).ravel() for _ in range(size)])
        return _llr_statistic(out, mean_a, mean_b, sens / eps_step)

    return mechanism, pos_a, pos_b


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("which", ["auditor", "auditor-overall", "oracle"])
def test_audit_honest_mechanisms_within_claim_and_half_noise_mutant_caught(which, monkeypatch):
    # one round's releases at the per-round epsilon' the tight accountant gives Adult's fit at epsilon = 1,000
    # (T = 1,000 rounds, 2,000 releases, delta = 1e-7)
    eps_step, how = reductions_accounting.per_round_epsilon(900.0, 1e-7, 2000)
    assert how == "pld" and 0.9 < eps_step < 1.1
    build = {"auditor": _auditor_mechanism, "auditor-overall": _auditor_overall_mechanism, "oracle": _oracle_mechanism}[which]
    mechanism, data_a, data_b = build(eps_step)
    honest = audit_epsilon(mechanism, data_a, data_b, n_samples=20_000, random_state=1)
    assert honest.epsilon_lower_bound <= eps_step

    real = reductions_game.laplace_mechanism

    def half_noise(values, *, sensitivity, epsilon, random_state=None, **kwargs):
        return real(values, sensitivity=sensitivity / 2.0, epsilon=epsilon, random_state=random_state, **kwargs)

    monkeypatch.setattr(reductions_game, "laplace_mechanism", half_noise)  # the oracle's and the auditor's releases
    mutant = audit_epsilon(mechanism, data_a, data_b, n_samples=20_000, random_state=1)
    assert mutant.epsilon_lower_bound > eps_step


def test_the_paper_oracles_fit_releases_through_the_audited_noisy_moment(monkeypatch):
    # the audit above targets reductions_game._noisy_moment: fit with oracle="paper" must release Z^T C through it
    # (the game, reductions_run, calls it), at the oracle's declared sensitivity, once per round
    X, y, g = _data(300)
    calls = []
    real = reductions_game._noisy_moment

    def spy(exact, sensitivity, epsilon_step, noise):
        calls.append((np.shape(exact), sensitivity, epsilon_step))
        return real(exact, sensitivity, epsilon_step, noise)

    monkeypatch.setattr(reductions_run, "_noisy_moment", spy)
    est = DPExponentiatedGradient(epsilon=5.0, delta=1e-5, gamma=0.1, bound_B=1.0, x_norm_bound=1.0, n_iter=6,
                                  groups=[0, 1], oracle="paper", random_state=0).fit(X, y, sensitive_features=g)
    assert len(calls) >= est.n_iter_ >= 1  # at least one best response per round
    sensitivities = {c[1] for c in calls}
    assert len(sensitivities) == 1 and min(sensitivities) > 0  # one declared sensitivity, never read off the data
    assert all(math.isfinite(c[2]) and c[2] > 0 for c in calls)  # every release is noisy


# ------------------------------------------------------------------ contract: groups, budget, warnings, prediction
def test_groups_required_with_finite_epsilon_and_inf_warns():
    X, y, g = _data(300)
    with pytest.raises(ValueError, match="groups"):
        DPExponentiatedGradient(epsilon=1.0, delta=1e-5, gamma=0.1, bound_B=1.0, x_norm_bound=1.0).fit(
            X, y, sensitive_features=g
        )
    with pytest.warns(PrivacyLeakWarning):
        DPExponentiatedGradient(epsilon=math.inf, delta=1e-5, gamma=0.1, bound_B=1.0, x_norm_bound=1.0, n_iter=5).fit(
            X, y, sensitive_features=g
        )


def test_budget_refusal_leaves_budget_and_fitted_state_unchanged():
    X, y, g = _data(300)
    budget = PrivacyBudget(1.5, 1e-4, neighbouring="change_attribute")
    clf = DPExponentiatedGradient(
        epsilon=1.0, delta=1e-5, gamma=0.1, bound_B=1.0, x_norm_bound=1.0, groups=[0, 1], budget=budget, random_state=0
    ).fit(X, y, sensitive_features=g)
    coef, spent = clf.coef_.copy(), budget.spent()
    assert spent[0] == pytest.approx(1.0) and spent[1] == pytest.approx(1e-5)
    with pytest.raises(PrivacyBudgetExceededError):
        clf.fit(X[:200], y[:200], sensitive_features=g[:200])
    assert budget.spent() == spent
    np.testing.assert_array_equal(clf.coef_, coef)


def test_norm_above_bound_raises_naming_the_bound():
    X, y, g = _data(200)
    with pytest.raises(ValueError, match="x_norm_bound") as info:
        DPExponentiatedGradient(epsilon=1.0, delta=1e-5, gamma=0.1, bound_B=1.0, x_norm_bound=0.5, groups=[0, 1]).fit(
            X, y, sensitive_features=g
        )
    assert "0.5" in str(info.value)


def test_predict_is_randomized_reproducible_and_a_blind():
    X, y, g = _data(1000)
    kw = dict(epsilon=math.inf, delta=1e-5, gamma=0.02, bound_B=5.0, x_norm_bound=1.0, n_iter=50, eta=1.0,
              selection="average")
    clf = DPExponentiatedGradient(random_state=0, **kw).fit(X, y, sensitive_features=g)
    p1 = clf.predict_proba(X)[:, 1]
    assert ((p1 > 0) & (p1 < 1)).any()  # a genuine mixture
    first = clf.predict(X)  # no sensitive features needed (A-blind)
    np.testing.assert_array_equal(first, clf.predict(X))
    np.testing.assert_array_equal(first, DPExponentiatedGradient(random_state=0, **kw).fit(X, y, sensitive_features=g).predict(X))
    draws = np.mean([clf.predict(X, random_state=s) for s in range(200)], axis=0)
    assert np.abs(draws - p1).max() < 0.15
    assert set(np.unique(first)) <= {0, 1}


def test_a_aware_needs_groups_at_predict_and_is_private():
    X, y, g = _data(1000)
    clf = DPExponentiatedGradient(
        epsilon=20.0, delta=1e-5, gamma=0.05, bound_B=2.0, x_norm_bound=1.0, groups=[0, 1],
        use_sensitive_at_test_time=True, random_state=0,
    ).fit(X, y, sensitive_features=g)
    assert clf.coef_.shape[1] == X.shape[1] + 2
    with pytest.raises(ValueError, match="sensitive_features"):
        clf.predict(X)
    assert clf.predict(X, sensitive_features=g).shape == y.shape
    assert clf.privacy_spent_["epsilon"] == 20.0
    clf_inf = DPExponentiatedGradient(
        epsilon=math.inf, delta=1e-5, gamma=0.02, bound_B=5.0, x_norm_bound=1.0, n_iter=300, eta=1.0,
        use_sensitive_at_test_time=True,
    ).fit(X, y, sensitive_features=g)
    _, viol = _error_and_violation(clf_inf.predict_proba(X, sensitive_features=g)[:, 1], y, g)
    assert viol <= 0.02 + 0.02
