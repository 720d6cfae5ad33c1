"""Speed of dpfair.metrics, printed, not asserted.

``PrivateMetricFrame`` on one million rows, 10 groups and the 8 count metrics of fairlearn's usual
assessment (target: under 0.5 s, secure noise, 2,000 bootstrap replicates), with fairlearn's
``MetricFrame`` on the same rows timed beside it.  Labels, predictions and groups are given as
numpy arrays (string group labels), as they come out of a model.

Run: ``.venv/bin/python benchmarks/bench_metrics.py`` (or ``make bench``).
"""

from __future__ import annotations

import statistics
import time
import warnings

import numpy as np

from dpfair.metrics import PrivateMetricFrame

N_ROWS = 1_000_000
N_GROUPS = 10
TARGET_S = 0.5
METRICS = (
    "selection_rate",
    "true_positive_rate",
    "false_positive_rate",
    "true_negative_rate",
    "false_negative_rate",
    "accuracy_score",
    "precision_score",
    "balanced_accuracy_score",
)


def _data():
    rng = np.random.default_rng(0)
    groups = [f"group_{k}" for k in range(N_GROUPS)]
    group = rng.choice(np.array(groups, dtype=object), N_ROWS)
    y_true = rng.integers(0, 2, N_ROWS)
    y_pred = (rng.uniform(size=N_ROWS) < 0.3 + 0.4 * y_true).astype(np.int64)
    return y_true, y_pred, group, groups


def _times(fn, repeats):
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    y_true, y_pred, group, groups = _data()

    def ours():
        PrivateMetricFrame(metrics={m: m for m in METRICS}, y_true=y_true, y_pred=y_pred, sensitive_features=group,
                           epsilon=1.0, groups=groups)

    ours()  # imports and OpenDP's first call
    times = _times(ours, 5)
    median = statistics.median(times)
    verdict = "meets" if median < TARGET_S else "MISSES"
    print(f"PrivateMetricFrame, {N_ROWS:,} rows, {N_GROUPS} groups, {len(METRICS)} count metrics, epsilon=1, "
          f"secure noise: median {median:.3f} s, best {min(times):.3f} s ({verdict} the {TARGET_S} s target)")
    try:
        import fairlearn.metrics as fm
        import sklearn.metrics as skm
    except ImportError:  # pragma: no cover - fairlearn is a test extra
        print("fairlearn is not installed: no comparison")
        return 0
    functions = {
        "selection_rate": fm.selection_rate, "true_positive_rate": fm.true_positive_rate,
        "false_positive_rate": fm.false_positive_rate, "true_negative_rate": fm.true_negative_rate,
        "false_negative_rate": fm.false_negative_rate, "accuracy_score": skm.accuracy_score,
        "precision_score": skm.precision_score, "balanced_accuracy_score": skm.balanced_accuracy_score,
    }

    def theirs():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fm.MetricFrame(metrics=functions, y_true=y_true, y_pred=y_pred, sensitive_features=group)

    theirs_times = _times(theirs, 1)  # fairlearn takes tens of seconds here: one run
    print(f"fairlearn MetricFrame on the same rows (no privacy, no intervals): median "
          f"{statistics.median(theirs_times):.3f} s; ratio ours / fairlearn "
          f"{median / statistics.median(theirs_times):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
