"""DPFairClassifier (attribute private, blind) is DPBlindPostProcessor on its public base: the same computation.

The fairness suite's DPBlindPostProcessor row passes a logistic base, so its figures differ from DPFairClassifier's
by the base model and the independent noise.  On the same base and seeded alike, the two fits must agree exactly
(the declared ``data_norm`` only sets ``feature_scale_`` under the attribute relation, and the base model is the
same deterministic PublicBaseClassifier).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpfair.classification import DPBlindPostProcessor, DPFairClassifier
from dpfair.classification.recommended import PublicBaseClassifier
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
    for base, prefit, kwargs in ((PublicBaseClassifier(), False, {"data_norm": norm}),
                                 (PublicBaseClassifier().fit(X, y), True, {})):
        alone = DPBlindPostProcessor(base, epsilon=1.0, groups=[0, 1], prefit=prefit, random_state=seed,
                                     **kwargs).fit(X, y, sensitive_features=g)
        np.testing.assert_array_equal(alone.probabilities_, fair.estimator_.probabilities_)
        np.testing.assert_array_equal(alone.predict_proba(X), fair.predict_proba(X))
    assert fair.estimator_.gamma == DPBlindPostProcessor().gamma  # the recommended entry keeps the default gamma
