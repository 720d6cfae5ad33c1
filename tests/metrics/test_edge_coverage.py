"""Intervals that cover at the edges: a rate of .01 in a ~75-row group, n = 500, epsilon 1 and .5.

Each repetition draws 500 rows from a population (group 'b' is 15 % of it, selection rate .01 there; group 'a'
has rate .30), releases the table with the frame's own mechanism and builds the frame's own intervals
(:func:`dpfair.metrics._core.intervals`, the frame's number of draws) -- 300 repetitions at once.
With the earlier intervals (clipped counts) the selection-rate interval of 'b' covered .913 (epsilon 1) and .907
(epsilon .5): clipped negative counts pushed the estimate up and the percentile interval inherited it.  The difference and ratio
intervals must cover too, and agree with each other (the same draws, the same groups).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpfair.metrics import _core
from dpfair.metrics._core import MetricSpec
from dpfair.privacy.noise import SeededNoise

N_ROWS = 500
N_REPETITIONS = 300
SPECS = [MetricSpec("sr", "selection_rate")]
RATE_A, RATE_B = 0.30, 0.01
POPULATION = np.array([
    0.85 * np.array([0.5 * (1 - RATE_A), 0.5 * RATE_A, 0.5 * (1 - RATE_A), 0.5 * RATE_A]),  # group a: TN, FP, FN, TP
    0.15 * np.array([0.5 * (1 - RATE_B), 0.5 * RATE_B, 0.5 * (1 - RATE_B), 0.5 * RATE_B]),  # group b
]).ravel()


def _coverage(epsilon: float, seed: int) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(N_ROWS, POPULATION, size=N_REPETITIONS).reshape(N_REPETITIONS, 2, 4)
    noisy = _core.release_table(counts, epsilon, SeededNoise(rng))
    _, _, cis = _core.intervals(noisy, {}, SPECS, epsilon, epsilon, 0.95, rng)
    ci = cis["sr"]
    out = {}
    for name, interval, truth in [
        ("rate .01 in ~75 rows", _core.Interval(ci.by_group.lower[:, 1], ci.by_group.upper[:, 1]), RATE_B),
        ("difference", ci.difference["between_groups"][1], RATE_A - RATE_B),
        ("ratio", ci.ratio["between_groups"][1], RATE_B / RATE_A),
    ]:
        covered = (interval.lower <= truth) & (truth <= interval.upper)
        out[name] = (float(covered.mean()), float((interval.upper - interval.lower).mean()))
    difference, ratio = ci.difference["between_groups"][1], ci.ratio["between_groups"][1]
    out["agree"] = (float(np.mean((difference.lower > 0) == (ratio.upper < 1))), 0.0)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.0, 0.5], ids=["epsilon=1", "epsilon=0.5"])
def test_a_rate_of_one_percent_in_75_rows_is_covered(epsilon):
    result = _coverage(epsilon, seed=int(10 * epsilon))
    for name, (coverage, width) in result.items():
        print(f"epsilon={epsilon}: {name}: coverage {coverage:.3f}, mean width {width:.3f}")
    assert result["rate .01 in ~75 rows"][0] >= 0.93
    assert result["difference"][0] >= 0.93
    assert result["ratio"][0] >= 0.93
    assert result["agree"][0] >= 0.95  # the difference excludes 0 when (and only when) the ratio excludes 1
