"""Private preprocessing for real tables: transformers that read nothing private, and two that are charged.

A private model is only as private as what runs before it.  scikit-learn's preprocessing learns from the rows
it is fitted on (the levels of ``OneHotEncoder``, the fill values of ``SimpleImputer``, the means of
``StandardScaler``): statistics of private data, released in every transformed row and spent from no budget.
The transformers here fit into the same ``ColumnTransformer`` / ``Pipeline`` in front of a private estimator:

* :class:`DeclaredOneHotEncoder`, :class:`DeclaredImputer` and :class:`DeclaredRangeScaler` take their
  categories, fill values and ranges from the caller (the data's published schema): ``fit`` reads only the
  table's shape and column names, and ``transform`` maps each row on its own.  They spend nothing.
* :class:`DPMedianImputer` and :class:`DPQuantileClipper` estimate fill values and clip ranges with the
  exponential mechanism (:func:`private_quantiles`, the mechanism of ``DPLinearRegression(feature_bounds=...)``),
  charged to the budget like every private estimator.
* :func:`row_norm_bound` turns the declarations into the ``data_norm`` a private model needs.
"""

from dpfair.preprocessing._encoder import DeclaredOneHotEncoder
from dpfair.preprocessing._impute import DeclaredImputer, DPMedianImputer
from dpfair.preprocessing._norms import row_norm_bound
from dpfair.preprocessing._quantiles import (
    RANGE_GRID,
    RANGE_QUANTILE,
    private_feature_ranges,
    private_quantiles,
    quantile_utilities,
)
from dpfair.preprocessing._scale import DeclaredRangeScaler, DPQuantileClipper

__all__ = [
    "RANGE_GRID",
    "RANGE_QUANTILE",
    "DPMedianImputer",
    "DPQuantileClipper",
    "DeclaredImputer",
    "DeclaredOneHotEncoder",
    "DeclaredRangeScaler",
    "private_feature_ranges",
    "private_quantiles",
    "quantile_utilities",
    "row_norm_bound",
]
