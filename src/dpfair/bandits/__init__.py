"""Online selection with linear contextual bandits: group meritocratic fairness and fairness of exposure.

Shared pieces live here: :class:`RidgeState` and :func:`confidence_radius` (``ridge``), the regret measures
(``regret``), the result types built on :class:`SimulationResult` (``results``), rank tie-breaking and the
numba set-up.  Each family is a sub-package, its reference modules with its compiled kernels beside them:

- :mod:`dpfair.bandits.gmf`: group meritocratic fairness (OFUL, Fair-Greedy, Private-Fair-Greedy, the hiring
  environments and :func:`simulate`);
- :mod:`dpfair.bandits.fairx`: fairness of exposure (FairX-LinUCB, Fed-/Priv-FairX-LinUCB, the privatizer, the
  synchronization protocols and :func:`simulate_federated`).

Every public name of both families is importable from here.
"""

from dpfair.bandits.fairx import (
    AgentStream,
    FairXLinUCB,
    FederatedResult,
    FederatedServer,
    FederatedSyntheticEnvironment,
    FedFairXLinUCB,
    Privatizer,
    PrivFairXLinUCB,
    communication_schedule,
    merit_policy,
    optimistic_parameter,
    privatizer_depth,
    privatizer_node_variance,
    project_onto_ellipsoid,
    simulate_federated,
)
from dpfair.bandits.gmf import (
    OFUL,
    BanditPolicy,
    CensusHiringEnvironment,
    Episode,
    FairGreedy,
    GroupEnvironment,
    PrivateFairGreedy,
    RandomPolicy,
    SyntheticGroupEnvironment,
    rank_noise_std,
    simulate,
)
from dpfair.bandits.regret import cumulative_fair_regret, cumulative_regret
from dpfair.bandits.results import BanditResult, SimulationResult, mean_and_standard_error
from dpfair.bandits.ridge import RidgeState, confidence_radius

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
