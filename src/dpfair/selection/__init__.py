"""Selection of m of n applicants with the exponential mechanism (Khalili et al. 2021).

* :class:`ExponentialSelector` selects applicants (exact samplers, exact inclusion probabilities).
* :class:`SelectionProblem` computes the paper's fairness gap gamma(epsilon), accuracy
  theta(epsilon), perfectly fair epsilons and Corollary 1's best epsilon, exactly where possible.
"""

from dpfair.selection.analysis import Estimate, SelectionProblem
from dpfair.selection.selector import ExponentialSelector

__all__ = ["Estimate", "ExponentialSelector", "SelectionProblem"]
