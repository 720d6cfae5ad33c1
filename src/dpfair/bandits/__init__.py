"""Online selection with linear contextual bandits: group meritocratic fairness and fairness of exposure.

Shared pieces: :class:`RidgeState` (batched ridge statistics), :func:`confidence_radius`, and the
result types built on :class:`SimulationResult`.
"""

from dpfair.bandits.environments import CensusHiringEnvironment, Episode, GroupEnvironment, SyntheticGroupEnvironment
from dpfair.bandits.metrics import cumulative_fair_regret, cumulative_regret
from dpfair.bandits.policies import OFUL, BanditPolicy, FairGreedy, RandomPolicy
from dpfair.bandits.private import PrivateFairGreedy, rank_noise_std
from dpfair.bandits.results import BanditResult, SimulationResult, mean_and_standard_error
from dpfair.bandits.ridge import RidgeState, confidence_radius
from dpfair.bandits.simulate import simulate

__all__ = [
    "OFUL",
    "BanditPolicy",
    "BanditResult",
    "CensusHiringEnvironment",
    "Episode",
    "FairGreedy",
    "GroupEnvironment",
    "PrivateFairGreedy",
    "RandomPolicy",
    "RidgeState",
    "SimulationResult",
    "SyntheticGroupEnvironment",
    "confidence_radius",
    "cumulative_fair_regret",
    "cumulative_regret",
    "mean_and_standard_error",
    "rank_noise_std",
    "simulate",
]
