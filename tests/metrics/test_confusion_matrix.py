"""``confusion_matrix`` at a finite epsilon: the released table itself, per group (free), with per-cell intervals.

* It is post-processing of the one released table (no extra release, no extra epsilon): the matrices are the noisy
  table with negative counts set to 0, so the table's audit (``test_metrics_privacy.py``: honest release passes,
  half-noise mutant caught) covers it.
* Coverage of the per-cell intervals of the expected count ``n p_cell``, groups of 500 rows, epsilon 1 and .5,
  300 repetitions: each cell's interval must cover at >= .93.
* fairlearn's shape: a Series of 2 x 2 matrices; its summaries are NaN (``errors="coerce"``) or refused
  (``"raise"``), as fairlearn's are for non-scalar metrics; at epsilon=inf, scikit-learn's own matrices.
"""

import math
import warnings

import numpy as np
import pytest
import sklearn.metrics as skm

from dpfair.metrics import PrivateMetricFrame, _core
from dpfair.metrics._intervals import matrix_intervals
from dpfair.privacy.noise import SeededNoise

N_ROWS, N_REPETITIONS = 500, 300
CELLS = np.array([[0.40, 0.10, 0.15, 0.35], [0.55, 0.05, 0.30, 0.10]])  # TN, FP, FN, TP of two groups


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("epsilon", [1.0, 0.5])
def test_cell_intervals_cover_the_expected_counts_in_500_row_groups(epsilon):
    rng = np.random.default_rng(int(100 * epsilon))
    counts = np.stack([rng.multinomial(N_ROWS, p, size=N_REPETITIONS) for p in CELLS], axis=1)  # (R, 2, 4)
    noisy = _core.release_table(counts, epsilon, SeededNoise(rng))
    _, _, intervals = matrix_intervals(noisy, epsilon, 0.95, rng, 1000)  # the repetitions as control levels
    lower = np.stack([np.stack([m.reshape(-1) for m in row]) for row in intervals.by_group.lower])
    upper = np.stack([np.stack([m.reshape(-1) for m in row]) for row in intervals.by_group.upper])
    truth = N_ROWS * CELLS[None]
    coverage = ((lower <= truth) & (truth <= upper)).mean(axis=0)
    print(f"epsilon={epsilon}: coverage per cell {np.round(coverage, 3).tolist()}, "
          f"mean width {np.round((upper - lower).mean(axis=0), 1).tolist()}")
    assert (coverage >= 0.93).all()


def test_the_matrices_are_the_released_table_and_its_summaries_are_fairlearns_for_a_non_scalar():
    rng = np.random.default_rng(4)
    y_true, y_pred, group = rng.integers(0, 2, 400), rng.integers(0, 2, 400), rng.choice(["a", "b"], 400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = PrivateMetricFrame(metrics={"cm": skm.confusion_matrix, "tpr": "true_positive_rate"}, y_true=y_true,
                                   y_pred=y_pred, sensitive_features=group, epsilon=1.0, groups=["a", "b"],
                                   noise_random_state=2)
    released = np.maximum(frame.noisy_table_.to_numpy(), 0)
    for g, label in enumerate(["a", "b"]):
        assert np.array_equal(frame.by_group["cm"][label], released[g].reshape(2, 2))
        lower, upper = frame.conf_int["by_group"]["lower"]["cm"][label], frame.conf_int["by_group"]["upper"]["cm"][label]
        assert (lower <= released[g].reshape(2, 2)).all() and (released[g].reshape(2, 2) <= upper).all()
    assert np.array_equal(frame.overall["cm"], released.sum(axis=0).reshape(2, 2))
    assert math.isnan(frame.difference()["cm"]) and not math.isnan(frame.difference()["tpr"])
    assert math.isnan(frame.group_min(errors="coerce")["cm"])
    with pytest.raises(ValueError, match="non-scalar"):
        frame.group_min()
    assert len(frame.releases_) == 1 and frame.privacy_spent_["epsilon"] == 1.0  # one table: no extra release


def test_at_epsilon_inf_the_matrices_are_scikit_learns():
    rng = np.random.default_rng(5)
    y_true, y_pred, group = rng.integers(0, 2, 300), rng.integers(0, 2, 300), rng.choice(["a", "b"], 300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = PrivateMetricFrame(metrics="confusion_matrix", y_true=y_true, y_pred=y_pred, sensitive_features=group,
                                   epsilon=math.inf)
    for label in ("a", "b"):
        mask = group == label
        assert np.array_equal(frame.by_group[label], skm.confusion_matrix(y_true[mask], y_pred[mask]))
    assert np.array_equal(frame.overall, skm.confusion_matrix(y_true, y_pred))
