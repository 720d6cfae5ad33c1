"""Private feature ranges of :class:`~dpfair.linear_model.DPLinearRegression`: each feature's central quantiles.

With ``feature_bounds`` the estimator spends ``range_share`` of epsilon on locating where each feature's values lie
inside its declared range (two exponential-mechanism quantiles per feature, on a public grid), so a feature whose
values fill a small part of its declared range is not drowned by noise calibrated to the whole range.  The mechanism
is :func:`dpfair.preprocessing.private_feature_ranges`, which :class:`~dpfair.preprocessing.DPQuantileClipper` runs
too (one implementation, one audit).
"""

from __future__ import annotations

from dpfair.preprocessing import RANGE_GRID, RANGE_QUANTILE, private_feature_ranges, quantile_utilities

__all__ = ["RANGE_GRID", "RANGE_QUANTILE", "private_feature_ranges", "quantile_utilities"]
