"""pytest plugin (``scripts/run_fairlearn_metricframe_tests.py``): fairlearn's ``MetricFrame`` replaced by
``PrivateMetricFrame(..., epsilon=inf)``, given only fairlearn's arguments (groups read off the data, the bounds of
real-valued metrics the range of the numbers given, ``PrivacyLeakWarning`` filtered).  A bare
``MetricFrame.__new__(MetricFrame)`` (fairlearn's tests of its internals) is a bare ``PrivateMetricFrame``."""

import math
import warnings

import fairlearn.metrics
import numpy as np

from dpfair.metrics import PrivateMetricFrame
from dpfair.privacy import PrivacyLeakWarning


def _bounds(*arrays):
    try:
        values = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays])
    except (TypeError, ValueError):
        return None
    finite = values.size and np.isfinite(values).all()
    return (float(values.min()), float(values.max()) + (values.min() == values.max())) if finite else None


class MetricFrame:
    """The shim: fairlearn's keyword arguments in, a ``PrivateMetricFrame`` at ``epsilon=inf`` out."""

    def __new__(cls, *, metrics=None, y_true=None, y_pred=None, sensitive_features=None, control_features=None,
                sample_params=None, n_boot=None, ci_quantiles=None, random_state=None):
        if metrics is None and y_true is None:
            return PrivateMetricFrame.__new__(PrivateMetricFrame)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            return PrivateMetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, epsilon=math.inf,
                                      sensitive_features=sensitive_features, control_features=control_features,
                                      sample_params=sample_params, bounds=_bounds(y_true, y_pred), n_boot=n_boot,
                                      ci_quantiles=ci_quantiles, random_state=random_state)


fairlearn.metrics.MetricFrame = MetricFrame
