"""Fairness metrics shared by every dpfair experiment (see :mod:`dpfair.fairness.metrics`)."""

from dpfair.fairness.metrics import (
    demographic_parity_difference,
    equal_opportunity_difference,
    equalized_odds_difference,
    fairness_regret,
    group_rates,
    ks_distance,
    ks_distance_histograms,
    merit_proportional_policy,
    relative_rank,
    statistical_parity_ks,
    statistical_parity_ks_histograms,
)

__all__ = [
    "demographic_parity_difference",
    "equal_opportunity_difference",
    "equalized_odds_difference",
    "fairness_regret",
    "group_rates",
    "ks_distance",
    "ks_distance_histograms",
    "merit_proportional_policy",
    "relative_rank",
    "statistical_parity_ks",
    "statistical_parity_ks_histograms",
]
