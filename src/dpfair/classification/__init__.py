"""Fair classification with a private sensitive attribute (Jagielski et al. 2019).

Privacy here protects the sensitive attribute A of every training row; features X and labels Y are
public, as in the paper.

* :class:`DPEqualizedOddsPostProcessor`: Algorithm 1, differentially private equalized-odds
  post-processing (Hardt et al.'s LP on Laplace-noised confusion statistics, with slack).
"""

from dpfair.classification.postprocessing import DPEqualizedOddsPostProcessor

__all__ = ["DPEqualizedOddsPostProcessor"]
