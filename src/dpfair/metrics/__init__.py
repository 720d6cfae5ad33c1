"""Private fairness assessment: fairlearn's ``MetricFrame`` with a privacy guarantee and confidence intervals.

:class:`PrivateMetricFrame` measures per-group metrics (selection rate, true- and false-positive
rates, accuracy, precision, errors of a regressor, ...) and their disparities from one noisy
release of the ``(group, y_true, y_pred)`` contingency table, with confidence intervals that
cover both the sampling error and the privacy noise.  ``dpfair assess`` runs it on a CSV or Parquet file and
writes a table and an HTML page (:func:`write_assessment`, :func:`assessment_table`) and records what it spent
(:func:`record_spending`).  :meth:`PrivateMetricFrame.from_counts` releases a table of counts computed elsewhere
(DuckDB, SQL, Spark), and :func:`count_table` / :func:`add_count_tables` build that table from partitions of the
rows on any cluster (a Dask ``LocalCluster`` in the tests).
"""

from dpfair.metrics._core import REAL_METRICS
from dpfair.metrics._frame import OTHER, SUPPORTED_METRICS, CountMetric, PrivateMetricFrame
from dpfair.metrics._partial import add_count_tables, count_table
from dpfair.metrics._report import assessment_table, epsilon_in_words, record_spending, write_assessment

__all__ = [
    "OTHER",
    "REAL_METRICS",
    "SUPPORTED_METRICS",
    "CountMetric",
    "PrivateMetricFrame",
    "add_count_tables",
    "assessment_table",
    "count_table",
    "epsilon_in_words",
    "record_spending",
    "write_assessment",
]
