"""Private tuning of classifiers: accuracy and equalized-odds scorers, estimators without
``sensitive_features``, a working ``score``, string labels and ``FrozenEstimator`` for prefit bases."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
import sklearn
from fairlearn.metrics import equalized_odds_difference
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import GridSearchCV, cross_validate

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.linear_model import DPLinearRegression, DPLogisticRegression
from dpfair.model_selection import (
    PrivateAccuracyScorer,
    PrivateEqualizedOddsScorer,
    PrivateMSEScorer,
    PrivateRandomSearch,
    accuracy_sensitivity,
    equalized_odds_sensitivity,
)
from dpfair.privacy import PrivacyBudget, SeededNoiseWarning, audit_epsilon
from dpfair.privacy.noise import get_noise_source
from dpfair.privacy.relations import CHANGE_ATTRIBUTE, REPLACE

RNG = np.random.default_rng(32)
N = 2000
X = RNG.uniform(-0.5, 0.5, size=(N, 2))
G = np.where(RNG.random(N) < 0.4, "F", "M")
SIGNAL = X[:, 0] + 0.15 * (G == "M") + 0.2 * RNG.normal(size=N)
WORDS = np.where(SIGNAL > 0.05, "yes", "no")  # string labels
INF = math.inf


class _Fixed:
    """A fitted 'classifier' whose predictions are its input; it takes no sensitive_features."""

    def predict(self, X):
        return np.asarray(X)


def _table_by_hand(pred, labels, groups, declared, pos):
    """The (group, label, prediction) frequency table, by brute force."""
    table = np.zeros((len(declared), 2, 2))
    for p, y, a in zip(pred, labels, groups, strict=True):
        table[declared.index(a), int(y == pos), int(p == pos)] += 1 / len(pred)
    return table


def test_exact_scores_match_scikit_learn_and_fairlearn_with_string_labels():
    noise = get_noise_source(None)
    pred = np.where(RNG.random(N) < 0.8, WORDS, np.where(WORDS == "yes", "no", "yes"))
    accuracy = PrivateAccuracyScorer()(_Fixed(), pred, WORDS, G, epsilon=INF, noise=noise)
    assert accuracy == pytest.approx(accuracy_score(WORDS, pred))
    scorer = PrivateEqualizedOddsScorer(["F", "M"], pos_label="yes", eo_weight=2.0)
    table = scorer.noisy_table(_Fixed(), pred, WORDS, G, epsilon=INF, noise=noise)
    np.testing.assert_allclose(table, _table_by_hand(pred, WORDS, G, ["F", "M"], "yes"))
    error, violation = scorer.error_and_violation(table)
    assert error == pytest.approx(1 - accuracy_score(WORDS, pred))
    assert violation == pytest.approx(equalized_odds_difference(WORDS == "yes", pred == "yes", sensitive_features=G))
    assert scorer(_Fixed(), pred, WORDS, G, epsilon=INF, noise=noise) == pytest.approx(-(error + 2.0 * violation))
    target = PrivateEqualizedOddsScorer(["F", "M"], pos_label="yes", eo_weight=2.0, eo_target=violation + 0.01)
    assert target(_Fixed(), pred, WORDS, G, epsilon=INF, noise=noise) == pytest.approx(-error)


def test_sensitivities_hold_by_brute_force_over_every_replacement():
    """Every replacement of one row of a small instance moves the error count by <= 1 and the table by <= 2 (L1)."""
    declared, n = ["F", "M"], 5
    rows = list(itertools.product(["yes", "no"], ["yes", "no"], declared))  # (prediction, label, group)
    rng = np.random.default_rng(0)
    largest_table, largest_error = 0.0, 0.0
    for _ in range(20):
        data = [rows[i] for i in rng.integers(0, len(rows), n)]
        for i, new in itertools.product(range(n), rows):
            other = data.copy()
            other[i] = new
            tables = [_table_by_hand(*map(np.array, zip(*d, strict=True)), declared, "yes") for d in (data, other)]
            largest_table = max(largest_table, np.abs(tables[0] - tables[1]).sum())
            errors = [np.mean([p != y for p, y, _ in d]) for d in (data, other)]
            largest_error = max(largest_error, abs(errors[0] - errors[1]))
    assert largest_table == pytest.approx(equalized_odds_sensitivity(n))  # attained, never exceeded
    assert largest_error == pytest.approx(accuracy_sensitivity(n))
    assert PrivateEqualizedOddsScorer(declared).sensitivity(n) == 2 / n and PrivateAccuracyScorer().sensitivity(n) == 1 / n


@pytest.mark.statistical
@pytest.mark.slow
@pytest.mark.parametrize("which", ["accuracy", "eo"])
def test_classifier_scorers_pass_a_privacy_audit_and_a_reduced_noise_mutant_is_caught(which, monkeypatch):
    """Neighbours differ in one whole row (prediction, label and group): the released score is epsilon-DP."""
    eps = 1.0
    pred = np.array(["yes"] * 5 + ["no"] * 5)
    labels = pred.copy()
    groups = np.array(["F", "M"] * 5)
    pred2, labels2, groups2 = pred.copy(), labels.copy(), groups.copy()
    pred2[0], groups2[0] = "no", "M"  # row 0 becomes an error and changes group
    if which == "accuracy":
        scorer = PrivateAccuracyScorer()
    else:
        scorer = PrivateEqualizedOddsScorer(["F", "M"], pos_label="yes", eo_weight=0.0)  # the error part of the table

    def mech(data, size, rng):
        xs, ys, gs = data
        noise = get_noise_source(rng)
        return np.array([scorer(_Fixed(), xs, ys, gs, epsilon=eps, noise=noise) for _ in range(size)])

    n_samples = 3000 if which == "accuracy" else 1500  # the table's release is slower; a 10x mutant is still caught
    honest = audit_epsilon(mech, (pred, labels, groups), (pred2, labels2, groups2), n_samples=n_samples)
    assert honest.epsilon_lower_bound <= eps
    import dpfair.model_selection._classifier_scorers as scorers

    real = scorers.laplace_mechanism
    monkeypatch.setattr(scorers, "laplace_mechanism", lambda v, sensitivity, **kw: real(v, sensitivity=sensitivity / 10, **kw))
    broken = audit_epsilon(mech, (pred, labels, groups), (pred2, labels2, groups2), n_samples=n_samples)
    assert broken.epsilon_lower_bound > eps


def test_search_over_a_classifier_without_sensitive_features_with_string_labels():
    """Secure noise, default arguments: DPLogisticRegression.fit takes no groups; the labels are words."""
    budget = PrivacyBudget(3.0)
    search = PrivateRandomSearch(DPLogisticRegression(data_norm=1.0), {"C": [0.5, 2.0]}, scoring=PrivateAccuracyScorer(),
                                 epsilon=3.0, budget=budget)
    search.fit(X, WORDS)
    assert is_classifier(search) and search.classes_.tolist() == ["no", "yes"]
    assert set(search.predict(X[:50])) <= {"no", "yes"}
    assert [e.epsilon for e in budget.ledger] == [3.0] == [search.privacy_spent_["epsilon"]]
    assert search.privacy_spent_["noise"] == "secure" and search.privacy_spent_["relation"] == REPLACE
    assert search.score(X, WORDS) == pytest.approx(accuracy_score(WORDS, search.predict(X)))
    assert search.score(X, WORDS) > 0.7 and -0.5 < search.best_score_ < 1.5
    assert search.score(X, WORDS, sensitive_features=G) == search.score(X, WORDS)  # groups the model does not take


def test_search_over_a_private_linear_regression_and_its_r2_score():
    target = np.clip(X @ [1.0, -0.5], -1, 1)
    search = PrivateRandomSearch(DPLinearRegression(data_norm=1.0, target_bound=1.0, mechanism="laplace"),
                                 {"alpha": [1.0, 10.0]}, scoring=PrivateMSEScorer((-1, 1)), epsilon=30.0, random_state=0)
    with pytest.warns(SeededNoiseWarning):
        search.fit(X, target)
    assert not is_classifier(search)
    assert search.score(X, target) == pytest.approx(r2_score(target, search.predict(X)))
    with pytest.raises(AttributeError, match="classes_"):
        search.classes_  # noqa: B018


def test_scorers_refuse_bad_input_before_anything_is_charged():
    budget = PrivacyBudget(5.0)

    def fit(scoring, y=WORDS, groups=G):
        search = PrivateRandomSearch(DPLogisticRegression(data_norm=1.0), {"C": [1.0]}, scoring=scoring, epsilon=3.0,
                                     budget=budget)
        search.fit(X, y, sensitive_features=groups)

    with pytest.raises(ValueError, match="needs sensitive_features"):
        fit(PrivateEqualizedOddsScorer(["F", "M"], "yes"), groups=None)
    with pytest.raises(ValueError, match="groups"):
        fit(PrivateEqualizedOddsScorer(["F", "X"], "yes"))  # "M" is not declared
    with pytest.raises(ValueError, match="y contains missing values"):
        fit(PrivateAccuracyScorer(), y=np.where(np.arange(N) == 3, None, WORDS).astype(object))
    with pytest.raises(TypeError, match="y must hold real numbers"):  # a regressor still needs numbers
        PrivateRandomSearch(DPLinearRegression(data_norm=1.0, target_bound=1.0, mechanism="laplace"), {"alpha": [1.0]},
                            scoring=PrivateMSEScorer((0, 1)), budget=budget).fit(X, WORDS)
    assert budget.ledger == ()
    for bad, match in (({"eo_weight": -1.0}, "eo_weight"), ({"eo_target": 2.0}, "eo_target"), ({"pos_label": []}, "pos_label")):
        with pytest.raises((ValueError, TypeError), match=match):
            PrivateEqualizedOddsScorer(["F", "M"], **bad)


def _eo_search(base_epsilon=0.5, **kwargs):
    post = DPEqualizedOddsPostProcessor(DPLogisticRegression(epsilon=base_epsilon, data_norm=1.0), groups=["F", "M"],
                                        prefit=False)
    scoring = PrivateEqualizedOddsScorer(["F", "M"], pos_label="yes", eo_target=0.05)
    return PrivateRandomSearch(post, {"gamma": [0.0, 0.05], "estimator__C": [0.5, 2.0]}, scoring=scoring, **kwargs)


def test_eo_search_over_a_private_pipeline_charges_once_and_states_replace_one_row():
    budget = PrivacyBudget(6.0)
    search = _eo_search(epsilon=6.0, mean_trials=3.0, budget=budget).fit(X, WORDS, sensitive_features=G)
    assert [e.epsilon for e in budget.ledger] == [6.0] and budget.ledger[0].relation == REPLACE
    assert search.best_estimator_.privacy_spent_["epsilon"] == search.privacy_spent_["epsilon"] == 6.0
    assert PrivateEqualizedOddsScorer._privacy_relation == REPLACE  # the scorer's read of the groups is inside its noise
    predictions = search.predict(X, sensitive_features=G)
    assert set(predictions) <= {"no", "yes"}
    assert 0.5 < search.score(X, WORDS, sensitive_features=G) <= 1


def _frozen_base():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPLogisticRegression(epsilon=INF, data_norm=1.0).fit(X[:1000], WORDS[:1000])


def test_a_prefit_base_survives_clone_in_a_frozen_estimator():
    """scikit-learn's FrozenEstimator keeps a fitted base fitted through clone: cross_validate and GridSearchCV run."""
    base = _frozen_base()
    bare = DPEqualizedOddsPostProcessor(base, epsilon=INF, groups=["F", "M"])
    with pytest.raises(NotFittedError):  # clone drops the fit of a bare base model
        clone(bare).fit(X, WORDS, sensitive_features=G)
    post = DPEqualizedOddsPostProcessor(FrozenEstimator(base), epsilon=INF, groups=["F", "M"])
    with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post.set_fit_request(sensitive_features=True).set_score_request(sensitive_features=True)
        scores = cross_validate(post, X, WORDS, cv=2, params={"sensitive_features": G})["test_score"]
        grid = GridSearchCV(post, {"gamma": [0.0, 0.05]}, cv=2).fit(X, WORDS, sensitive_features=G)
    assert np.all(scores > 0.6) and grid.best_params_["gamma"] in (0.0, 0.05)
    np.testing.assert_array_equal(grid.best_estimator_.estimator.coef_, base.coef_)  # never refitted


def test_private_search_over_a_frozen_base_and_a_bare_prefit_base_refused_with_the_fix():
    base = _frozen_base()
    budget = PrivacyBudget(2.0, neighbouring=CHANGE_ATTRIBUTE)  # prefit base: the post-processor protects the groups
    scoring = PrivateEqualizedOddsScorer(["F", "M"], pos_label="yes")
    bare = PrivateRandomSearch(DPEqualizedOddsPostProcessor(base, groups=["F", "M"]), {"gamma": [0.0, 0.05]},
                               scoring=scoring, epsilon=2.0, budget=budget)
    with pytest.raises(NotFittedError, match="FrozenEstimator"):
        bare.fit(X, WORDS, sensitive_features=G)
    assert budget.ledger == ()
    frozen = clone(bare).set_params(estimator__estimator=FrozenEstimator(base))
    frozen.fit(X, WORDS, sensitive_features=G)
    assert [e.relation for e in budget.ledger] == [CHANGE_ATTRIBUTE] and frozen.privacy_spent_["relation"] == CHANGE_ATTRIBUTE
    assert frozen.best_estimator_.estimator_.estimator is base  # clone keeps a frozen model as it is: never refitted
    np.testing.assert_array_equal(frozen.best_estimator_.estimator_.estimator.coef_, base.coef_)


def test_an_eo_search_over_a_private_pipeline_on_adult_runs_end_to_end():
    """Adult (sex), public feature scaling, secure noise: one ledger entry = the search's = the chosen model's."""
    from dpfair.datasets import load_adult

    adult = load_adult(download=False)
    maximum = {"age": 90, "education-num": 16, "hours-per-week": 99}
    features = adult.X[list(maximum)].to_numpy(float) / list(maximum.values())  # public ranges: ||x|| <= sqrt(3)
    order = np.random.default_rng(0).permutation(len(adult.y))[:12_000]  # public randomness
    labels = np.where(adult.y.to_numpy()[order] == 1, ">50K", "<=50K")
    sex = adult.sensitive.to_numpy()[order]
    base = DPLogisticRegression(epsilon=0.5, data_norm=math.sqrt(3))  # objective perturbation: pure epsilon-DP
    post = DPEqualizedOddsPostProcessor(base, groups=["Female", "Male"], prefit=False)
    budget = PrivacyBudget(4.0)
    search = PrivateRandomSearch(post, {"gamma": [0.0, 0.02, 0.05], "estimator__C": [0.1, 1.0]},
                                 scoring=PrivateEqualizedOddsScorer(["Female", "Male"], pos_label=">50K"),
                                 epsilon=4.0, mean_trials=3.0, budget=budget)
    search.fit(features[order][:8000], labels[:8000], sensitive_features=sex[:8000])
    assert len(budget.ledger) == 1 and budget.ledger[0].epsilon == search.privacy_spent_["epsilon"] == 4.0
    assert search.best_estimator_.privacy_spent_["epsilon"] == 4.0 and search.privacy_spent_["noise"] == "secure"
    assert search.privacy_spent_["relation"] == REPLACE
    accuracy = search.score(features[order][8000:], labels[8000:], sensitive_features=sex[8000:])
    assert 0.6 < accuracy <= 1 and search.classes_.tolist() == ["<=50K", ">50K"]
