"""Private fairness assessment: fairlearn's ``MetricFrame`` with a privacy guarantee and confidence intervals.

:class:`PrivateMetricFrame` measures per-group metrics (selection rate, true- and false-positive
rates, accuracy, precision, errors of a regressor, ...) and their disparities from one noisy
release of the ``(group, y_true, y_pred)`` contingency table, with confidence intervals that
cover both the sampling error and the privacy noise.  ``dpfair assess`` runs it on a CSV file and
writes a table and an HTML page (:func:`write_assessment`, :func:`assessment_table`).
"""

from dpfair.metrics._frame import SUPPORTED_METRICS, PrivateMetricFrame
from dpfair.metrics._report import assessment_table, write_assessment

__all__ = ["SUPPORTED_METRICS", "PrivateMetricFrame", "assessment_table", "write_assessment"]
