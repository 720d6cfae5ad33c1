"""Online selection with linear contextual bandits: group meritocratic fairness and fairness of exposure.

Shared pieces: :class:`RidgeState` (batched ridge statistics), :func:`confidence_radius`, and the
result types built on :class:`SimulationResult`.  Group meritocratic fairness: ``policies`` (OFUL,
Fair-Greedy), ``private`` (Private-Fair-Greedy), ``environments``, ``simulate``.  Fairness of exposure:
``fairx`` (one agent), ``federated_learners``, ``protocols``, ``privatizer``, ``federated_environment``,
``federated_result`` and ``federated`` (the simulator).
"""

from dpfair.bandits.base import BanditPolicy
from dpfair.bandits.environments import CensusHiringEnvironment, Episode, GroupEnvironment, SyntheticGroupEnvironment
from dpfair.bandits.fairx import FairXLinUCB, merit_policy, optimistic_parameter, project_onto_ellipsoid
from dpfair.bandits.fairx_online import FederatedServer
from dpfair.bandits.federated import simulate_federated
from dpfair.bandits.federated_environment import AgentStream, FederatedSyntheticEnvironment
from dpfair.bandits.federated_learners import FedFairXLinUCB, PrivFairXLinUCB
from dpfair.bandits.federated_result import FederatedResult
from dpfair.bandits.metrics import cumulative_fair_regret, cumulative_regret
from dpfair.bandits.policies import OFUL, FairGreedy, RandomPolicy
from dpfair.bandits.private import PrivateFairGreedy, rank_noise_std
from dpfair.bandits.privatizer import Privatizer, privatizer_depth, privatizer_node_variance
from dpfair.bandits.protocols import communication_schedule
from dpfair.bandits.results import BanditResult, SimulationResult, mean_and_standard_error
from dpfair.bandits.ridge import RidgeState, confidence_radius
from dpfair.bandits.simulate import simulate

__all__ = [
    "OFUL",
    "AgentStream",
    "BanditPolicy",
    "BanditResult",
    "CensusHiringEnvironment",
    "Episode",
    "FairGreedy",
    "FairXLinUCB",
    "FedFairXLinUCB",
    "FederatedResult",
    "FederatedServer",
    "FederatedSyntheticEnvironment",
    "GroupEnvironment",
    "PrivFairXLinUCB",
    "PrivateFairGreedy",
    "Privatizer",
    "RandomPolicy",
    "RidgeState",
    "SimulationResult",
    "SyntheticGroupEnvironment",
    "communication_schedule",
    "confidence_radius",
    "cumulative_fair_regret",
    "cumulative_regret",
    "mean_and_standard_error",
    "merit_policy",
    "optimistic_parameter",
    "privatizer_depth",
    "privatizer_node_variance",
    "project_onto_ellipsoid",
    "rank_noise_std",
    "simulate",
    "simulate_federated",
]
