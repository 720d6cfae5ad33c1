"""Online selection with linear contextual bandits: group meritocratic fairness and fairness of exposure.

Shared pieces: :class:`RidgeState` (batched ridge statistics), :func:`confidence_radius`, and the
result types built on :class:`SimulationResult`.
"""

from dpfair.bandits.results import BanditResult, SimulationResult, mean_and_standard_error
from dpfair.bandits.ridge import RidgeState, confidence_radius

__all__ = [
    "BanditResult",
    "RidgeState",
    "SimulationResult",
    "confidence_radius",
    "mean_and_standard_error",
]
