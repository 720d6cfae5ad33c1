"""Fairness of exposure in (federated) linear contextual bandits: FairX-LinUCB, Fed- and Priv-FairX-LinUCB.

A learner plays the merit-proportional policy over ``K`` candidates; ``m`` agents share their ridge
statistics through a server, exactly (Fed-FairX-LinUCB) or privately (Priv-FairX-LinUCB).  Layered bottom up:

- :mod:`~dpfair.bandits.fairx.merit_policy`: the merit policy, the ellipsoid projection and the optimistic ascent;
- :mod:`~dpfair.bandits.fairx.schedules`: when agents synchronize (bounded-gap, p-fcb, log-det);
- :mod:`~dpfair.bandits.fairx.privatizer`: the private release of the running sums (tree, Honaker, square
  root), with its calibration and noise modules;
- :mod:`~dpfair.bandits.fairx.synchronization`: the agent and server sides of one synchronization;
- :mod:`~dpfair.bandits.fairx.online`, :mod:`~dpfair.bandits.fairx.linucb`, :mod:`~dpfair.bandits.fairx.learners`:
  the online learners (one agent, and federated);
- :mod:`~dpfair.bandits.fairx.environment`, :mod:`~dpfair.bandits.fairx.result`,
  :mod:`~dpfair.bandits.fairx.simulator`: the synthetic streams, the result type and the batched simulator;
- ``_kernels``: the numba rounds and synchronizations behind ``simulate_federated(engine="compiled")``.

The public names are re-exported by :mod:`dpfair.bandits`.
"""

from dpfair.bandits.fairx.environment import AgentStream, FederatedSyntheticEnvironment
from dpfair.bandits.fairx.learners import FedFairXLinUCB, PrivFairXLinUCB
from dpfair.bandits.fairx.linucb import FairXLinUCB
from dpfair.bandits.fairx.merit_policy import merit_policy, optimistic_parameter, project_onto_ellipsoid
from dpfair.bandits.fairx.online import FederatedServer
from dpfair.bandits.fairx.privatizer import Privatizer, privatizer_depth, privatizer_node_variance
from dpfair.bandits.fairx.result import FederatedResult
from dpfair.bandits.fairx.schedules import communication_schedule
from dpfair.bandits.fairx.simulator import simulate_federated

__all__ = [
    "AgentStream",
    "FairXLinUCB",
    "FedFairXLinUCB",
    "FederatedResult",
    "FederatedServer",
    "FederatedSyntheticEnvironment",
    "PrivFairXLinUCB",
    "Privatizer",
    "communication_schedule",
    "merit_policy",
    "optimistic_parameter",
    "privatizer_depth",
    "privatizer_node_variance",
    "project_onto_ellipsoid",
    "simulate_federated",
]
