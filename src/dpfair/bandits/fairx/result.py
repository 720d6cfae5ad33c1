"""The result of a federated simulation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from dpfair.bandits.results import SimulationResult

__all__ = ["FederatedResult"]


# --------------------------------------------------------------------------------------------------
# result
# --------------------------------------------------------------------------------------------------
@dataclass
class FederatedResult(SimulationResult):
    """Result of :func:`simulate_federated`.

    Parameters
    ----------
    seeds : tuple of int
        The seeds.
    privacy_spent : dict
        Per learner, the privacy guarantee per agent.
    learner_names : tuple of str
        Learners, in the order of axis 0.
    fair_regret : numpy.ndarray
        Cumulative fairness regret (Definition 1, averaged over agents), ``(n_learners, n_seeds, horizon)``.
    reward_regret : numpy.ndarray
        Cumulative reward regret of the played policies against the optimal fair policy, same shape.
    communication_rounds : numpy.ndarray
        Synchronizations per learner and seed, ``(n_learners, n_seeds)``.
    actions : numpy.ndarray, optional
        Every agent's action, ``(n_learners, n_seeds, n_agents, horizon)``, when the simulation was
        asked to record them (``record_actions=True``); else ``None``.
    failed : dict, optional
        Learner name -> ``{"code": ..., "argument": ...}`` for each learner whose run failed after its
        budget was charged (``"invalid_merit"``: its callable ``merit`` failed on its own estimates); its
        curves are NaN, its communication rounds (and recorded actions) ``-1``.  Empty when every run completed.
    """

    learner_names: tuple[str, ...] = ()
    fair_regret: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    reward_regret: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    communication_rounds: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    actions: np.ndarray | None = None
    failed: dict[str, dict[str, str]] = field(default_factory=dict)

    _curves: ClassVar[tuple[str, ...]] = ("fair_regret", "reward_regret")
    _names_attribute: ClassVar[str] = "learner_names"

    def communication_table(self) -> pd.DataFrame:
        """Communication rounds per learner: mean, minimum and maximum over seeds.

        Returns
        -------
        pandas.DataFrame
            Index: learner names; columns ``mean``, ``min``, ``max``.
        """
        c = np.asarray(self.communication_rounds, dtype=float)
        return pd.DataFrame(
            {"mean": c.mean(axis=1), "min": c.min(axis=1), "max": c.max(axis=1)},
            index=pd.Index(self.names, name="learner"),
        )
