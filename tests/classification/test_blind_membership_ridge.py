"""The pooled membership model's ridge: stronger when the public clusters are few for its weights."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor
from dpfair.classification import blind_membership as membership_module
from dpfair.datasets import make_classification

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning",
                                        "ignore::dpfair.classification.SmallBudgetWarning")


@pytest.mark.parametrize("n_clusters, n_features, expected", [
    (83, 121, 83 / (2 * 123)),  # the fairness suite's Communities task: 1,329 training rows, 121 features
    (1884, 46, 1.0),  # Adult: the default ridge
    (10, 3, 1.0),  # exactly two clusters per weight
    (9, 3, 0.9),
])
def test_the_ridge_is_a_closed_form_of_the_public_shape(n_clusters, n_features, expected):
    value = membership_module.pooled_membership_regularization(n_clusters, n_features)
    assert value == pytest.approx(expected, rel=1e-12)
    assert 0.0 < value <= 1.0


def test_no_clusters_is_refused_by_name():
    with pytest.raises(ValueError, match="n_clusters"):
        membership_module.pooled_membership_regularization(0, 5)


def _reference(centres, counts, regularization):
    """The multinomial model fitted directly to the weighted pseudo-rows, two groups."""
    k = centres.shape[0]
    cell_c, cell_y, cell_a = np.meshgrid(np.arange(k), np.arange(2), np.arange(2), indexing="ij")
    rows = np.column_stack([centres[cell_c.ravel()], cell_y.ravel()])
    weights = counts.ravel()
    keep = weights > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LogisticRegression(C=regularization, max_iter=500).fit(rows[keep], cell_a.ravel()[keep],
                                                                     sample_weight=weights[keep])
    return np.concatenate([model.coef_[0], model.intercept_])


@pytest.mark.parametrize("n_clusters, n_features", [(12, 20), (40, 3)])
def test_the_pooled_model_is_fitted_with_that_ridge(n_clusters, n_features):
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(n_clusters, n_features))
    counts = rng.integers(0, 6, size=(n_clusters, 2, 2)).astype(float)
    counts[:, :, 1] += (centres[:, :1] > 0) * 4.0  # group 1 where the first feature is positive: a signal to fit
    fitted = membership_module.fit_pooled_membership(centres, counts)[1]
    regularization = membership_module.pooled_membership_regularization(n_clusters, n_features)
    assert np.allclose(fitted, _reference(centres, counts, regularization), atol=1e-4)
    if regularization < 1.0:  # a fit that ignored the ridge (scikit-learn's default C = 1) is caught
        unregularized = _reference(centres, counts, 1.0)
        assert not np.allclose(fitted, unregularized, atol=1e-3)
        assert np.linalg.norm(fitted[:-1]) < np.linalg.norm(unregularized[:-1])


def test_a_fit_with_many_features_for_its_clusters_reaches_the_ridge(monkeypatch):
    X, y, g = make_classification(480, n_features=40, disparity=1.5, random_state=0)  # 30 clusters, 40 features
    seen = []
    original = membership_module.pooled_membership_regularization

    def spy(n_clusters, n_features):
        seen.append(original(n_clusters, n_features))
        return seen[-1]

    monkeypatch.setattr(membership_module, "pooled_membership_regularization", spy)
    model = DPBlindPostProcessor(LogisticRegression(max_iter=1000), prefit=False, epsilon=1.0, groups=[0, 1],
                                 random_state=0).fit(X, y, sensitive_features=g)
    assert seen == [pytest.approx(30 / (2 * 42))]
    assert model.membership_clusters_ == 30
