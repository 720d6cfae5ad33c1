"""``r2_score`` at a finite epsilon: released per-group sums of the squared residual and of the centred ``y_true`` and
its square (L1 sensitivity 3 on values in the declared bounds, :mod:`dpfair.metrics._r2`).

* Coverage: two groups of 500 rows, epsilon 1 (the sums' share is half of it, as in a frame with the group sizes),
  600 repetitions: the 95 % interval of each group's r2 covers the population's r2 at >= .93 (measured .947 / .967
  here, .964 / .966 over 2,000 repetitions; mean widths .63 / 1.01 against 2 x 1.96 standard deviations of the
  estimate over the repetitions of .67 / .83: the noise dominates at this size; the sampling term is a
  distribution-free bound, conservative alone: 5x too wide at epsilon = inf).
* Audit: the release (three sums of one group) passes :func:`dpfair.privacy.audit_epsilon` at its claimed epsilon and
  a half-noise mutant is caught (the audited output is the privacy-loss statistic of the three noisy sums).
* At epsilon=inf r2 is scikit-learn's, exactly, with a ``PrivacyLeakWarning``.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfair.metrics import PrivateMetricFrame, _core, _r2
from dpfair.privacy import PrivacyLeakWarning, audit_epsilon
from dpfair.privacy.noise import SeededNoise

N_ROWS, N_REPETITIONS = 500, 600
#: per group: slope of the prediction on y_true and the standard deviation of its error (all clipped to [0, 1])
GROUPS = [(0.85, 0.12), (0.6, 0.2)]


def _rows(rng: np.random.Generator, n: int, slope: float, sd: float) -> tuple[np.ndarray, np.ndarray]:
    y_true = rng.random(n)
    return y_true, np.clip(slope * y_true + (1 - slope) / 2 + rng.normal(0.0, sd, n), 0.0, 1.0)


@pytest.mark.slow
@pytest.mark.statistical
def test_r2_intervals_cover_in_500_row_groups_at_epsilon_1():
    share = 0.5  # the frame releases the group sizes and the sums, each at half of epsilon 1
    rng = np.random.default_rng(0)
    truth = []
    for slope, sd in GROUPS:  # the population's r2, from a million rows
        y_true, y_pred = _rows(rng, 1_000_000, slope, sd)
        truth.append(1 - np.mean((y_true - y_pred) ** 2) / np.var(y_true))
    sums = np.zeros((N_REPETITIONS, len(GROUPS), 3))
    for r in range(N_REPETITIONS):
        for g, (slope, sd) in enumerate(GROUPS):
            sums[r, g] = _r2.per_row(*_rows(rng, N_ROWS, slope, sd), (0.0, 1.0)).sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise, on purpose
        sizes = _core.release_table(np.full((N_REPETITIONS, len(GROUPS), 1), N_ROWS), share, SeededNoise(rng))
        released = _core.release_sums(sums, _r2.SENSITIVITY, share, SeededNoise(rng))
    spec = _core.MetricSpec("r2", "r2_score", -math.inf, 1.0, zero_division=math.nan)
    estimates, _, cis = _core.intervals(sizes, {"r2": released}, [spec], share, share, 0.95, rng, 500)
    lower, upper = cis["r2"].by_group.lower, cis["r2"].by_group.upper
    coverage = ((lower <= np.array(truth)) & (np.array(truth) <= upper)).mean(axis=0)
    needed = 2 * 1.959964 * np.nanstd(estimates["r2"][0], axis=0, ddof=1)
    print(f"r2 at epsilon 1, groups of {N_ROWS}: truth {np.round(truth, 3).tolist()}, coverage "
          f"{np.round(coverage, 3).tolist()}, mean width {np.round((upper - lower).mean(axis=0), 3).tolist()} "
          f"(needed {np.round(needed, 3).tolist()})")
    assert (coverage >= 0.93).all()
    assert (upper <= 1.0).all()


def _release(share_of_noise: float, sums: np.ndarray, plus_one: np.ndarray):
    """The group's three noisy sums, read through their privacy-loss statistic (a function of the release)."""

    def mechanism(data, size, rng):
        stack = np.broadcast_to(data, (size, 3))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            noisy = _core.release_sums(stack, _r2.SENSITIVITY, 1.0 / share_of_noise, SeededNoise(rng))
        return (np.abs(noisy - sums) - np.abs(noisy - plus_one)).sum(axis=1)

    return mechanism


@pytest.mark.slow
@pytest.mark.statistical
def test_r2_sums_pass_the_audit_and_a_half_noise_mutant_is_caught():
    sums = np.array([40.0, -12.0, 150.0])  # (sum rho, sum v, sum v ** 2) of a group
    plus_one = sums + 1.0  # one more row with y_true = hi and y_pred = lo: (rho, v, v ** 2) = (1, 1, 1), L1 norm 3
    honest = audit_epsilon(_release(1.0, sums, plus_one), sums, plus_one, n_samples=100_000, n_bins=40, random_state=4)
    mutant = audit_epsilon(_release(0.5, sums, plus_one), sums, plus_one, n_samples=100_000, n_bins=40, random_state=4)
    print(f"r2 sums audit at epsilon 1: honest {honest.epsilon_lower_bound:.3f}, mutant {mutant.epsilon_lower_bound:.3f}")
    assert honest.epsilon_lower_bound <= 1.0 < mutant.epsilon_lower_bound


def test_the_frame_releases_the_sums_at_their_share_and_scikit_learns_r2_at_epsilon_inf():
    rng = np.random.default_rng(8)
    group = rng.choice(["a", "b"], 1200)
    y_true, y_pred = _rows(rng, 1200, 0.8, 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        private = PrivateMetricFrame(metrics="r2_score", y_true=y_true, y_pred=y_pred, sensitive_features=group,
                                     epsilon=1.0, groups=["a", "b"], bounds=(0.0, 1.0), noise_random_state=1)
    release = private.releases_[1]
    assert [r["epsilon"] for r in private.releases_] == [0.5, 0.5] and "sensitivity 3" in release["mechanism"]
    assert release["scale"] == 6.0
    for label in ("a", "b"):
        mask = group == label
        exact = skm.r2_score(y_true[mask], y_pred[mask])
        assert abs(private.by_group[label] - exact) < 0.6
        lower, upper = private.conf_int["by_group"]["lower"][label], private.conf_int["by_group"]["upper"][label]
        assert lower <= private.by_group[label] <= upper <= 1.0
    for metrics in ("r2_score", skm.r2_score):
        with pytest.warns(PrivacyLeakWarning):
            exact_frame = PrivateMetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=group,
                                             epsilon=math.inf)
        for label in ("a", "b"):
            mask = group == label
            assert exact_frame.by_group[label] == skm.r2_score(y_true[mask], y_pred[mask])
    with pytest.raises(ValueError, match="bounds is required"):
        PrivateMetricFrame(metrics="r2_score", y_true=y_true, y_pred=y_pred, sensitive_features=group, epsilon=1.0,
                           groups=["a", "b"])


def test_r2_from_counts_equals_the_frame_of_the_rows():
    rng = np.random.default_rng(2)
    group = rng.choice(["a", "b"], 400)
    y_true, y_pred = _rows(rng, 400, 0.7, 0.15)
    values = _r2.per_row(y_true, y_pred, (0.0, 1.0))
    rows_table = pd.DataFrame({"g": group, "rho": values[:, 0], "v": values[:, 1], "v2": values[:, 2], "n": 1})
    counts = rows_table.groupby("g", as_index=False).sum()  # what an engine computes: one row per group
    common = dict(metrics={"r2": "r2_score"}, epsilon=1.0, groups=["a", "b"], bounds=(0.0, 1.0), noise_random_state=3,
                  random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = PrivateMetricFrame(y_true=y_true, y_pred=y_pred, sensitive_features=group, **common)
        table = PrivateMetricFrame.from_counts(counts, sensitive_features="g", count="n",
                                               sums={"r2": ["rho", "v", "v2"]}, **common)
    np.testing.assert_allclose(table.by_group["r2"].to_numpy(), rows.by_group["r2"].to_numpy(), rtol=1e-9)
    with pytest.raises(ValueError, match="three columns"):
        PrivateMetricFrame.from_counts(counts, sensitive_features="g", count="n", sums={"r2": "rho"}, **common)


@settings(max_examples=25, derandomize=True, database=None, deadline=None)
@given(st.integers(1, 60), st.integers(1, 3), st.sampled_from([0.05, 1.0, 10.0]), st.integers(0, 99))
def test_any_small_input_gives_r2_at_most_1_inside_its_interval(n, n_groups, epsilon, seed):
    rng = np.random.default_rng(seed)
    y_true, y_pred, group = rng.random(n), rng.random(n), rng.integers(0, n_groups, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mf = PrivateMetricFrame(metrics={"r2": "r2_score"}, y_true=y_true, y_pred=y_pred, sensitive_features=group,
                                groups=list(range(n_groups)), epsilon=epsilon, bounds=(0.0, 1.0),
                                noise_random_state=seed, random_state=0, n_boot=200)
    value = mf.by_group["r2"].to_numpy(float)
    lower = mf.conf_int["by_group"]["lower"]["r2"].to_numpy(float)
    upper = mf.conf_int["by_group"]["upper"]["r2"].to_numpy(float)
    known = ~np.isnan(value)
    assert (value[known] <= 1.0).all() and (upper <= 1.0).all() and not np.isnan(lower).any()
    assert (lower[known] <= value[known]).all() and (value[known] <= upper[known]).all()
    assert np.isnan(value[mf.flagged["r2"].to_numpy(bool)]).all()  # a flagged group is NaN at a finite epsilon
