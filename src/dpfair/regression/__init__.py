"""Fair regression under statistical parity: DP post-processing (Xian et al. 2024) and its reference point.

* :class:`FairRegressionPostProcessor`: Algorithm 1 (private histograms, L-inf isotonic CDF repair,
  fixed-support Wasserstein barycenter LP with a KS relaxation, optimal-transport remapping).
* :class:`WassersteinBarycenterPostProcessor`: Chzhen et al. (2020), non-private and non-discretized.
* :func:`solve_barycenter_lp` (fast, exact) and :func:`solve_barycenter_lp_reference` (plain HiGHS LP);
  problems with more than :data:`MAX_COUPLING_CELLS` coupling cells (``n_groups * n_bins**2``) are refused.
"""

from dpfair.regression._lp import (
    MAX_COUPLING_CELLS,
    BarycenterSolution,
    solve_barycenter_alpha0,
    solve_barycenter_lp,
    solve_barycenter_lp_reference,
)
from dpfair.regression.postprocessing import (
    FairRegressionPostProcessor,
    WassersteinBarycenterPostProcessor,
    l_inf_isotonic_cdf,
)

__all__ = [
    "MAX_COUPLING_CELLS",
    "BarycenterSolution",
    "FairRegressionPostProcessor",
    "WassersteinBarycenterPostProcessor",
    "l_inf_isotonic_cdf",
    "solve_barycenter_alpha0",
    "solve_barycenter_lp",
    "solve_barycenter_lp_reference",
]
