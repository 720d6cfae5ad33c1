"""Fair regression under statistical parity: DP post-processing (Xian et al. 2024) and its reference point.

* :class:`FairRegressionPostProcessor`: Algorithm 1 (private histograms, L-inf isotonic CDF repair,
  fixed-support Wasserstein barycenter LP with a KS relaxation, optimal-transport remapping).
* :class:`WassersteinBarycenterPostProcessor`: Chzhen et al. (2020), non-private and non-discretized.
* :func:`solve_barycenter_lp` (exact closed form, sparse couplings) and
  :func:`solve_barycenter_lp_reference` (the plain HiGHS LP it is tested against; dense, so refused beyond
  :data:`MAX_COUPLING_CELLS` coupling cells).
* :class:`PrivateRandomSearch` with :class:`PrivateMSEScorer`, :class:`PrivateKSScorer` and
  :class:`PrivateMSEKSScorer`: differentially private choice of ``(n_bins, alpha)`` (or any
  hyper-parameter of a dpfair estimator) on a validation split (Liu & Talwar 2019; Papernot & Steinke 2022).
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
from dpfair.regression.tuning import (
    PrivateKSScorer,
    PrivateMSEKSScorer,
    PrivateMSEScorer,
    PrivateRandomSearch,
    random_stopping_epsilon,
    trial_epsilon_for,
)

__all__ = [
    "MAX_COUPLING_CELLS",
    "BarycenterSolution",
    "FairRegressionPostProcessor",
    "PrivateKSScorer",
    "PrivateMSEKSScorer",
    "PrivateMSEScorer",
    "PrivateRandomSearch",
    "WassersteinBarycenterPostProcessor",
    "l_inf_isotonic_cdf",
    "random_stopping_epsilon",
    "solve_barycenter_alpha0",
    "solve_barycenter_lp",
    "solve_barycenter_lp_reference",
    "trial_epsilon_for",
]
