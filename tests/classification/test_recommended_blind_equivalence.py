"""DPFairClassifier (attribute private, blind) is DPBlindPostProcessor on a logistic base: the same computation.

Two rows of the fairness suite run them side by side; their figures differ only by their independent noise.  Seeded
alike, the two fits must agree exactly (the declared ``data_norm`` only sets ``feature_scale_`` under the attribute
relation, and the base model is the same logistic regression).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor, DPFairClassifier
from dpfair.datasets import make_classification

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning")


def test_blind_attribute_fit_is_the_blind_post_processor_with_its_derived_seed():
    X, y, g = make_classification(1500, disparity=1.5, random_state=0)
    norm = float(np.linalg.norm(X, axis=1).max()) * 1.01
    fair = DPFairClassifier(epsilon=1.0, groups=[0, 1], data_norm=norm, random_state=5).fit(X, y, sensitive_features=g)
    assert fair.mechanism_ == "DPBlindPostProcessor"
    seed = fair.estimator_.random_state
    for base, prefit, kwargs in ((LogisticRegression(max_iter=1000), False, {"data_norm": norm}),
                                 (LogisticRegression(max_iter=1000).fit(X, y), True, {})):
        alone = DPBlindPostProcessor(base, epsilon=1.0, groups=[0, 1], prefit=prefit, random_state=seed,
                                     **kwargs).fit(X, y, sensitive_features=g)
        np.testing.assert_array_equal(alone.probabilities_, fair.estimator_.probabilities_)
        np.testing.assert_array_equal(alone.predict_proba(X), fair.predict_proba(X))
    assert fair.estimator_.gamma == DPBlindPostProcessor().gamma  # the recommended entry keeps the default gamma
