"""Group meritocratic fairness in online selection (Fair-Greedy, Private-Fair-Greedy and OFUL).

Each round one candidate arrives per group and a policy hires one; fairness is judged by the candidates'
relative ranks within their groups.  The reference modules and the compiled engine sit side by side:

- :mod:`~dpfair.bandits.gmf.policy_base`: :class:`BanditPolicy`, the per-round protocol every policy follows;
- :mod:`~dpfair.bandits.gmf.policies`: OFUL, Fair-Greedy and the random baseline;
- :mod:`~dpfair.bandits.gmf.private_fair_greedy`: Private-Fair-Greedy (joint differential privacy);
- :mod:`~dpfair.bandits.gmf.environments`: the synthetic and census hiring environments;
- :mod:`~dpfair.bandits.gmf.simulate`: the batched simulator;
- ``_kernels``: the numba rounds behind ``simulate(engine="compiled")``.

The public names are re-exported by :mod:`dpfair.bandits`.
"""

from dpfair.bandits.gmf.environments import CensusHiringEnvironment, Episode, GroupEnvironment, SyntheticGroupEnvironment
from dpfair.bandits.gmf.policies import OFUL, FairGreedy, RandomPolicy
from dpfair.bandits.gmf.policy_base import BanditPolicy
from dpfair.bandits.gmf.private_fair_greedy import PrivateFairGreedy, rank_noise_std
from dpfair.bandits.gmf.simulate import simulate

__all__ = [
    "OFUL",
    "BanditPolicy",
    "CensusHiringEnvironment",
    "Episode",
    "FairGreedy",
    "GroupEnvironment",
    "PrivateFairGreedy",
    "RandomPolicy",
    "SyntheticGroupEnvironment",
    "rank_noise_std",
    "simulate",
]
