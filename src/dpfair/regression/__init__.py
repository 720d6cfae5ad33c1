"""Fair regression under statistical parity: DP post-processing (Xian et al. 2024) and its reference point.

* :class:`FairRegressionPostProcessor`: Algorithm 1 (private histograms, L-inf isotonic CDF repair,
  fixed-support Wasserstein barycenter LP with a KS relaxation, optimal-transport remapping).
* :class:`BlindFairRegressionPostProcessor`: the attribute-blind extension (Section 5 of the paper): ``predict``
  takes no sensitive features; the map reads the regressor's output and a membership model's ``P(A | x)``.
* :class:`WassersteinBarycenterPostProcessor`: Chzhen et al. (2020), non-private and non-discretized.
* :func:`solve_barycenter_lp`: the barycenter LP of Algorithm 1 solved exactly in closed form, with
  sparse couplings (no LP solver); :func:`solve_barycenter_alpha0` its ``alpha = 0`` case.
  :data:`MAX_COUPLING_CELLS` bounds the *dense* coupling views.

The private choice of ``(n_bins, alpha)`` on a validation split is in :mod:`dpfair.model_selection`
(:class:`~dpfair.model_selection.PrivateRandomSearch`).
"""

from dpfair.regression._lp import (
    MAX_COUPLING_CELLS,
    BarycenterSolution,
    solve_barycenter_alpha0,
    solve_barycenter_lp,
)
from dpfair.regression.blind import BlindFairRegressionPostProcessor
from dpfair.regression.postprocessing import FairRegressionPostProcessor, l_inf_isotonic_cdf
from dpfair.regression.wasserstein import WassersteinBarycenterPostProcessor

__all__ = [
    "MAX_COUPLING_CELLS",
    "BarycenterSolution",
    "BlindFairRegressionPostProcessor",
    "FairRegressionPostProcessor",
    "WassersteinBarycenterPostProcessor",
    "l_inf_isotonic_cdf",
    "solve_barycenter_alpha0",
    "solve_barycenter_lp",
]
