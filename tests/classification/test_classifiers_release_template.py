"""Both classifiers fit through dpfair.base's one release template."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.base import PrivateEstimator
from dpfair.classification import (
    DPEqualizedOddsPostProcessor,
    DPExponentiatedGradient,
    _postprocessing_lp,
)
from dpfair.classification.reductions import _game as reductions_game
from dpfair.classification.reductions import _oracle as reductions_oracle
from dpfair.classification.reductions import _run as reductions_run
from dpfair.datasets import make_classification
from dpfair.linear_model import DPLogisticRegression
from dpfair.privacy import PrivacyBudget

X, Y, G = make_classification(400, n_features=4, random_state=0)
X = X / np.linalg.norm(X, axis=1).max()


def _eo(budget, **kw):
    return DPEqualizedOddsPostProcessor(LogisticRegression().fit(X, Y), epsilon=1.0, groups=[0, 1], budget=budget,
                                        random_state=0).set_params(**kw)


def _eg(budget, **kw):
    return DPExponentiatedGradient(epsilon=2.0, delta=1e-5, gamma=0.1, x_norm_bound=1.0, n_iter=4, groups=[0, 1],
                                   budget=budget, random_state=0).set_params(**kw)


@pytest.mark.parametrize("make", [_eo, _eg])
def test_private_estimator_first_in_the_bases(make):
    assert type(make(None)).__mro__[1] is PrivateEstimator


@pytest.mark.parametrize("make", [_eo, _eg])
def test_a_bad_random_state_is_refused_before_the_charge(make):
    budget = PrivacyBudget(10.0, 1e-3, neighbouring="change_attribute")
    with pytest.raises(TypeError, match="random_state"):
        make(budget, random_state="seed").fit(X, Y, sensitive_features=G)
    assert budget.spent() == (0.0, 0.0) and not budget.ledger


def _eg_paper(budget, **kw):
    return _eg(budget, oracle="paper", **kw)


@pytest.mark.parametrize(("make", "modules"), [
    (_eo, [(_postprocessing_lp, "laplace_mechanism")]),
    (_eg_paper, [(reductions_run, "laplace_mechanism"), (reductions_game, "laplace_mechanism")]),
    (_eg, [(reductions_oracle, "gaussian_mechanism")]),  # the default oracle: Gaussian cell sums and counts
])
def test_every_noise_draw_comes_after_the_single_charge(make, modules, monkeypatch):
    budget = PrivacyBudget(10.0, 1e-3, neighbouring="change_attribute")
    seen = []
    for module, name in modules:
        real = getattr(module, name)

        def spy(*args, _real=real, **kwargs):
            seen.append(len(budget.ledger))
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    make(budget).fit(X, Y, sensitive_features=G)
    assert seen and set(seen) == {1} and len(budget.ledger) == 1


def test_a_private_base_is_charged_first_and_composed_into_privacy_spent():
    budget = PrivacyBudget(3.0)
    base = DPLogisticRegression(epsilon=1.0, data_norm=1.0, budget=budget, random_state=1)
    est = _eo(budget, estimator=base, prefit=False).fit(X, Y, sensitive_features=G)
    assert [entry.label for entry in budget.ledger] == [
        "DPLogisticRegression.fit (objective perturbation)", "DPEqualizedOddsPostProcessor.fit (Laplace frequency table)"]
    assert est.privacy_spent_["epsilon"] == pytest.approx(2.0) and "every training row" in est.privacy_spent_["protects"]


def test_a_refused_fit_restores_n_features_in():
    est = _eg(None).fit(X, Y, sensitive_features=G)
    with pytest.raises(ValueError, match="outside the declared groups"):
        est.fit(X[:, :2], Y, sensitive_features=np.where(G == 1, 7, 0))
    assert est.n_features_in_ == X.shape[1] and est.coef_.shape[1] == X.shape[1] + 1
