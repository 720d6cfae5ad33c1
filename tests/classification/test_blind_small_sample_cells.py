"""Below SMALL_SAMPLE_ROWS rows, two groups, the attribute private: a table of at least SMALL_SAMPLE_CELLS cells."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor
from dpfair.classification import _blind_small_sample as small_module
from dpfair.classification import blind_postprocessing as blind_module
from dpfair.classification import blind_table as table_module
from dpfair.datasets import make_classification
from dpfair.linear_model import DPLogisticRegression
from dpfair.privacy import PrivacyLeakWarning

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning",
                                        "ignore::dpfair.classification.SmallBudgetWarning",
                                        "ignore::dpfair.linear_model.NoiseDominatesWarning")


def _shape(n_rows, epsilon=1.0, n_groups=2, **kwargs):
    X, y, g = make_classification(n_rows, disparity=1.5, random_state=0)
    if n_groups > 2:
        g = np.arange(n_rows) % n_groups
    model = DPBlindPostProcessor(kwargs.pop("estimator", LogisticRegression().fit(X, y)), epsilon=epsilon,
                                 groups=list(range(n_groups)), random_state=0, **kwargs)
    model.fit(X, y, sensitive_features=g)
    return model.score_bins_, model.membership_bins_


def _plan(n_rows, epsilon, n_groups=2):
    share = 1.0 - blind_module.DEFAULT_MEMBERSHIP_SHARE
    return table_module.plan_cells(n_rows, table_module.table_noise_epsilon(share * epsilon, n_groups, True), n_groups)


def test_the_shape_rule_keeps_four_membership_cells_and_a_finer_plan_s_number_of_cells():
    cells = small_module.SMALL_SAMPLE_CELLS
    assert cells == (9, 4) and small_module.small_sample_cells((5, 3)) == cells
    assert small_module.small_sample_cells((16, 3)) == (12, 4)  # 48 cells: as many, over 4 membership cells
    assert small_module.small_sample_cells((12, 3)) == cells  # 36 cells: the measured 9 x 4, not 12 x 3
    assert small_module.small_sample_cells((11, 3)) == cells
    assert small_module.small_sample_cells((16, 4)) == (16, 4)


def test_below_the_public_row_count_two_groups_get_the_sampling_shape_and_at_it_the_noise_plan():
    n_small = 667  # the fairness suite's 1,000-row task's training rows
    assert _plan(n_small, 1.0) == (5, 3)  # the noise plan is coarser here
    assert _shape(n_small) == small_module.SMALL_SAMPLE_CELLS
    assert _shape(n_small, epsilon=0.5) == small_module.SMALL_SAMPLE_CELLS
    assert _plan(blind_module.SMALL_SAMPLE_ROWS, 0.5) == (5, 3)
    assert _shape(blind_module.SMALL_SAMPLE_ROWS, epsilon=0.5) == (5, 3)  # at the public row count: the noise plan
    assert _shape(blind_module.SMALL_SAMPLE_ROWS - 1, epsilon=0.5) == small_module.SMALL_SAMPLE_CELLS
    assert _plan(blind_module.SMALL_SAMPLE_ROWS - 1, 1.0) == (12, 3)
    assert _shape(blind_module.SMALL_SAMPLE_ROWS - 1) == small_module.SMALL_SAMPLE_CELLS  # as many cells, 4 membership
    assert _plan(n_small, 5.0) == (16, 3) and _shape(n_small, epsilon=5.0) == (12, 4)  # a finer plan's cells kept
    with pytest.warns(PrivacyLeakWarning):
        assert _shape(n_small, epsilon=float("inf")) == (16, 4)  # the exact fit's own plan


def test_the_sampling_shape_leaves_explicit_bins_more_groups_and_whole_rows_alone():
    n_small = 667
    assert _shape(n_small, score_bins=5, membership_bins=3) == (5, 3)
    assert _shape(n_small, membership_bins=2) == (_plan(n_small, 1.0)[0], 2)  # one given: the plan and the choice
    assert _shape(n_small, n_groups=3) == _plan(n_small, 1.0, 3)
    private = DPLogisticRegression(epsilon=0.5, data_norm=10.0)
    whole = _shape(n_small, estimator=private, prefit=False, data_norm=10.0)
    assert whole != small_module.SMALL_SAMPLE_CELLS and whole[0] * whole[1] < 36


def test_the_sampling_factor_is_five_only_on_the_small_sample_table_and_four_on_any_other_below_the_row_count():
    from types import SimpleNamespace

    from dpfair.privacy.relations import CHANGE_ATTRIBUTE, REPLACE

    def applies(n_rows=667, n_groups=2, relation=CHANGE_ATTRIBUTE, score_bins="auto", membership_bins="auto"):
        options = SimpleNamespace(relation=relation, score_bins=score_bins, membership_bins=membership_bins)
        return small_module.small_sample_shape_applies(options, n_rows, n_groups, blind_module.SMALL_SAMPLE_ROWS)

    assert applies() and applies(n_rows=blind_module.SMALL_SAMPLE_ROWS - 1)
    assert not applies(n_rows=blind_module.SMALL_SAMPLE_ROWS)
    assert not applies(n_groups=3) and not applies(n_groups=1) and not applies(relation=REPLACE)
    assert not applies(score_bins=5) and not applies(membership_bins=3)
    assert (blind_module.SMALL_SAMPLE_FACTOR, small_module.OTHER_SMALL_SAMPLE_FACTOR) == (5.0, 4.0)
