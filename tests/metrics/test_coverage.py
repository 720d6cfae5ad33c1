"""Coverage of PrivateMetricFrame's intervals on a synthetic population.

The nominal 95 % intervals of the true-positive-rate difference and of the demographic-parity
(selection-rate) difference must cover the population value at least 93 % of the time, at
epsilon = 1 and at epsilon = inf, with groups of 200 and of 20,000 rows.

Vectorized: every repetition draws one sample of the population (the cell counts of each group
are multinomial: the same law as tabulating i.i.d. rows), releases its table with the frame's own
mechanism, and runs the frame's own bootstrap (:func:`dpfair.metrics._core.intervals`, with the
frame's number of replicates) -- for all repetitions at once.
``test_the_vectorized_path_is_the_frame`` checks that one repetition gives exactly what
:class:`~dpfair.metrics.PrivateMetricFrame` gives on those rows.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfair.metrics import PrivateMetricFrame, _core
from dpfair.metrics._core import MetricSpec
from dpfair.privacy import PrivacyLeakWarning
from dpfair.privacy.noise import SeededNoise

N_REPETITIONS = 500  # the binomial standard error of a 95 % coverage is then 1 %
CHUNK = 250
SPECS = [MetricSpec("tpr", "true_positive_rate"), MetricSpec("sr", "selection_rate")]


def _cells(positives, tpr, fpr):
    """Population probabilities of (TN, FP, FN, TP) in a group."""
    return np.array([(1 - positives) * (1 - fpr), (1 - positives) * fpr, positives * (1 - tpr), positives * tpr])


POPULATION = np.stack([_cells(0.5, 0.80, 0.20), _cells(0.3, 0.60, 0.10)])  # groups a and b
TRUE_TPR_DIFFERENCE = 0.80 - 0.60
TRUE_DP_DIFFERENCE = (0.5 * 0.80 + 0.5 * 0.20) - (0.3 * 0.60 + 0.7 * 0.10)


def _coverage(n_rows, epsilon, seed):
    rng = np.random.default_rng(seed)
    covered = {"tpr": [], "sr": []}
    widths = {"tpr": [], "sr": []}
    estimates = {"tpr": [], "sr": []}
    for _ in range(0, N_REPETITIONS, CHUNK):
        counts = np.stack([rng.multinomial(n_rows, POPULATION[g], size=CHUNK) for g in range(2)], axis=1)
        noisy = _core.release_table(counts, epsilon, SeededNoise(rng))
        _, _, cis = _core.intervals(noisy, {}, SPECS, epsilon, epsilon, 0.95, rng)
        for key, truth in (("tpr", TRUE_TPR_DIFFERENCE), ("sr", TRUE_DP_DIFFERENCE)):
            estimate, interval = cis[key].difference["between_groups"]
            covered[key].append((interval.lower <= truth) & (truth <= interval.upper))
            widths[key].append(interval.upper - interval.lower)
            estimates[key].append(estimate)
    # the width a calibrated 95 % interval needs: 2 x 1.96 standard deviations of the released estimate, measured
    # over the repetitions themselves (sampling and noise together; no model of either)
    needed = {k: 2 * 1.959964 * float(np.std(np.concatenate(v), ddof=1)) for k, v in estimates.items()}
    return {k: float(np.mean(np.concatenate(v))) for k, v in covered.items()}, {
        k: float(np.mean(np.concatenate(v))) for k, v in widths.items()
    }, needed


@pytest.mark.statistical
@pytest.mark.slow
@pytest.mark.parametrize("n_rows", [200, 20_000])
@pytest.mark.parametrize("epsilon", [1.0, math.inf], ids=["epsilon=1", "epsilon=inf"])
def test_intervals_of_the_tpr_and_demographic_parity_differences_cover(n_rows, epsilon):
    coverage, width, needed = _coverage(n_rows, epsilon, seed=n_rows + (0 if math.isinf(epsilon) else 1))
    print(f"groups of {n_rows} rows, epsilon={epsilon}: coverage TPR difference {coverage['tpr']:.3f} "
          f"(mean width {width['tpr']:.4f}, needed {needed['tpr']:.4f}), DP difference {coverage['sr']:.3f} "
          f"(mean width {width['sr']:.4f}, needed {needed['sr']:.4f})")
    assert coverage["tpr"] >= 0.93
    assert coverage["sr"] >= 0.93
    # covering is easy with a wide interval: the mean width is at most 20 % over what calibration needs
    assert width["tpr"] <= 1.2 * needed["tpr"]
    assert width["sr"] <= 1.2 * needed["sr"]


@pytest.mark.slow
@pytest.mark.statistical
def test_the_width_bound_catches_an_interval_twice_too_wide(monkeypatch):
    honest = _core.intervals

    def doubled(*args, **kwargs):  # the mutant: every interval stretched to twice its width about its centre
        out = honest(*args, **kwargs)
        for ci in out[2].values():
            estimate, interval = ci.difference["between_groups"]
            centre, half = (interval.lower + interval.upper) / 2, interval.upper - interval.lower
            ci.difference["between_groups"] = (estimate, _core.Interval(centre - half, centre + half))
        return out

    monkeypatch.setattr(_core, "intervals", doubled)
    coverage, width, needed = _coverage(20_000, math.inf, seed=20_000)
    assert coverage["tpr"] >= 0.93 and width["tpr"] > 1.2 * needed["tpr"]


def test_the_vectorized_path_is_the_frame():
    rng = np.random.default_rng(5)
    group = np.repeat([0, 1], 200)
    cells = np.concatenate([rng.choice(4, 200, p=POPULATION[g]) for g in range(2)])
    y_true, y_pred = cells // 2, cells % 2
    for epsilon in (1.0, math.inf):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            mf = PrivateMetricFrame(metrics={"tpr": "true_positive_rate", "sr": "selection_rate"}, y_true=y_true,
                                    y_pred=y_pred, sensitive_features=group, epsilon=epsilon, groups=[0, 1],
                                    noise_random_state=11, random_state=12)
        noise = SeededNoise(11)
        noisy = _core.release_table(_core.tabulate(group, 2, y_true, y_pred), epsilon, noise)
        bootstrap_rng = np.random.default_rng(12)  # fairlearn's random_state seeds the draws, never the noise
        _, _, cis = _core.intervals(noisy[None], {}, SPECS, epsilon, epsilon, 0.95, bootstrap_rng)
        for key in ("tpr", "sr"):
            estimate, interval = cis[key].difference["between_groups"]
            assert mf.difference()[key] == estimate[0]
            assert mf.conf_int["difference"]["lower"][key] == interval.lower[0]
            assert mf.conf_int["difference"]["upper"][key] == interval.upper[0]
