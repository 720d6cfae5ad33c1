"""dpfair: decisions about people that are both fair and differentially private.

Subpackages
-----------
privacy
    Budgets, accounting, noise sources, mechanisms, continual release and audits.
    The only place in dpfair that draws privacy noise.
fairness
    Fairness metrics shared by every experiment.
selection
    Exponential-mechanism selection of m of n applicants and its exact analysis.
regression
    Differentially private fair post-processing of regressors.
"""

from dpfair._version import __version__

__all__ = ["__version__"]
