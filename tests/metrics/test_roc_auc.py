"""``roc_auc_score`` at a finite epsilon: a released per-group, per-label histogram of the scores on declared bins.

* Coverage: groups of 500 rows, the default bins for the frame's epsilon (20 at 1, 12 at .5; the histogram's
  share is half of epsilon), 300 repetitions: the 95 % interval of each group's AUC covers the population's
  (binned) AUC at >= .93 (measured .947 / .967 at epsilon 1; at .5, .957 / .967 with 12 bins, where 20 bins gave
  .920 / .950); the binning error of the population's AUC (exact scores against the bins) is printed and
  bounded as documented.
* Audit: the histogram release passes :func:`dpfair.privacy.audit_epsilon` at its claimed epsilon and a half-noise
  mutant is caught.
* At epsilon=inf the AUC is scikit-learn's on the exact scores.
"""

import math
import warnings

import numpy as np
import pytest
import sklearn.metrics as skm
from scipy import stats

from dpfair.metrics import PrivateMetricFrame, _core
from dpfair.metrics._core import MetricSpec
from dpfair.metrics._metric_specs import default_score_bins
from dpfair.privacy import audit_epsilon
from dpfair.privacy.noise import SeededNoise

BINS, N_ROWS, N_REPETITIONS = 20, 500, 300
#: per group: (share of positives, Beta law of the negatives' scores, of the positives')
GROUPS = [(0.4, (2, 3), (3, 2)), (0.25, (2, 2.5), (2.5, 2))]


def _population(bins: int = BINS) -> tuple[np.ndarray, np.ndarray]:
    """Cell probabilities ``(G, 2 bins)`` and the exact-score AUC of every group."""
    cells, exact = [], []
    edges = np.linspace(0.0, 1.0, bins + 1)
    for positive, negatives, positives in GROUPS:
        neg = np.diff(stats.beta.cdf(edges, *negatives))
        pos = np.diff(stats.beta.cdf(edges, *positives))
        cells.append(np.concatenate([(1 - positive) * neg, positive * pos]))
        grid = np.linspace(0, 1, 20001)  # P(score of a positive > score of a negative), by quadrature
        exact.append(float(np.trapezoid(stats.beta.pdf(grid, *positives) * stats.beta.cdf(grid, *negatives), grid)))
    return np.array(cells), np.array(exact)


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("epsilon", [0.5, 1.0])
def test_auc_intervals_cover_in_500_row_groups(epsilon):
    share = epsilon / 2  # the frame releases the group sizes and the histogram, each at half of epsilon
    rng = np.random.default_rng(int(10 * epsilon))
    bins = default_score_bins(epsilon)
    spec = MetricSpec("auc", "roc_auc_score", 0.0, 1.0, zero_division=math.nan, score_bins=bins)
    cells, exact = _population(bins)
    counts = np.stack([rng.multinomial(N_ROWS, p, size=N_REPETITIONS) for p in cells], axis=1)  # (R, G, 2 BINS)
    sizes = _core.release_table(counts.sum(-1, keepdims=True), share, SeededNoise(rng))
    histogram = _core.release_table(counts, share, SeededNoise(rng))
    _, _, cis = _core.intervals(sizes, {"auc": histogram}, [spec], share, share, 0.95, rng, 500)
    truth = _core.histogram_auc(cells)  # the population's AUC of the binned scores, what the histogram measures
    lower, upper = cis["auc"].by_group.lower, cis["auc"].by_group.upper
    coverage = ((lower <= truth) & (truth <= upper)).mean(axis=0)
    binning = np.abs(truth - exact)
    bound = (cells[:, :bins] * cells[:, bins:]).sum(-1) / (2 * cells[:, :bins].sum(-1) * cells[:, bins:].sum(-1))
    print(f"epsilon={epsilon}, {bins} bins: coverage {np.round(coverage, 3).tolist()}, mean width "
          f"{np.round((upper - lower).mean(axis=0), 3).tolist()}, binning error {np.round(binning, 4).tolist()} "
          f"(bound {np.round(bound, 4).tolist()})")
    assert (coverage >= 0.93).all()
    assert (binning <= bound).all()


def _histogram_mechanism(share_of_noise=1.0):
    def mechanism(histogram, size, rng):
        stack = np.broadcast_to(histogram, (size, *histogram.shape))
        return _core.release_table(stack, 1.0 / share_of_noise, SeededNoise(rng))[:, 0, BINS + 7]

    return mechanism


@pytest.mark.slow
@pytest.mark.statistical
def test_histogram_release_passes_the_audit_and_a_half_noise_mutant_is_caught():
    cells, _ = _population()
    histogram = np.rint(N_ROWS * cells).astype(np.int64)
    plus_one = histogram.copy()
    plus_one[0, BINS + 7] += 1  # one more positive of group 0, its score in bin 7: one cell moves by one
    honest = audit_epsilon(_histogram_mechanism(), histogram, plus_one, n_samples=200_000, discrete=True, random_state=3)
    mutant = audit_epsilon(_histogram_mechanism(0.5), histogram, plus_one, n_samples=200_000, discrete=True,
                           random_state=3)
    print(f"histogram audit at epsilon 1: honest {honest.epsilon_lower_bound:.3f}, mutant {mutant.epsilon_lower_bound:.3f}")
    assert honest.epsilon_lower_bound <= 1.0 < mutant.epsilon_lower_bound


def test_the_frame_releases_the_histogram_at_its_share_and_scikit_learns_auc_at_epsilon_inf():
    rng = np.random.default_rng(8)
    group, y_true = rng.choice(["a", "b"], 600), rng.integers(0, 2, 600)
    scores = rng.beta(2 + y_true, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        private = PrivateMetricFrame(metrics="roc_auc_score", y_true=y_true, y_pred=scores, sensitive_features=group,
                                     epsilon=1.0, groups=["a", "b"], bounds=(0.0, 1.0), noise_random_state=1)
        exact = PrivateMetricFrame(metrics=skm.roc_auc_score, y_true=y_true, y_pred=scores, sensitive_features=group,
                                   epsilon=math.inf)
    assert [r["epsilon"] for r in private.releases_] == [0.5, 0.5] and "histogram" in private.releases_[1]["release"]
    for label in ("a", "b"):
        mask = group == label
        assert exact.by_group[label] == skm.roc_auc_score(y_true[mask], scores[mask])
        assert abs(private.by_group[label] - exact.by_group[label]) < 0.15
    with pytest.raises(ValueError, match="bounds is required"):
        PrivateMetricFrame(metrics="roc_auc_score", y_true=y_true, y_pred=scores, sensitive_features=group, epsilon=1.0,
                           groups=["a", "b"])
