"""The privacy layer: every DP noise draw in dpfair goes through this package.

Modules
-------
budget      :class:`PrivacyBudget` with a ledger; refuses overspending; the opt-in process-wide ledger.
accounting  Conversions (zCDP <-> approximate DP, Renyi DP -> approximate DP), composition, noise calibration.
noise       Secure (OpenDP) and seeded (numpy) noise sources behind one interface.
lattice     Tabulated discrete Gaussian noise on a fine grid (secure at ~0.1 us per sample).
mechanisms  Laplace, Gaussian, exponential and exact top-m exponential mechanisms.
continual   Continual release of running sums: binary tree, and factorizations (square root, Honaker).
audit       Empirical lower bounds on epsilon for testing mechanisms.
leaks       :class:`PrivacyLeakWarning` for exact outputs; :class:`SeededNoiseWarning` for seeded noise.
relations   Neighbouring relations (add/remove, replace, change one attribute) and their sound conversions.
"""

from dpfair.privacy.accounting import (
    advanced_composition,
    approx_dp_to_zcdp,
    basic_composition,
    exponential_mechanism_to_zcdp,
    gaussian_delta,
    gaussian_dp_delta,
    gaussian_dp_epsilon,
    gaussian_dp_mu,
    gaussian_sigma_approx_dp,
    gaussian_sigma_zcdp,
    laplace_scale,
    pure_dp_to_zcdp,
    rdp_to_approx_dp,
    zcdp_composition,
    zcdp_delta,
    zcdp_for_approx_dp,
    zcdp_to_approx_dp,
)
from dpfair.privacy.audit import AuditResult, audit_epsilon
from dpfair.privacy.budget import (
    LedgerEntry,
    PrivacyBudget,
    PrivacyBudgetExceededError,
    default_budget,
    set_default_budget,
    suspend_default_budget,
)
from dpfair.privacy.continual import BinaryTreeMechanism, ContinualSumMechanism, Factorization, get_factorization
from dpfair.privacy.leaks import PrivacyLeakWarning, SeededNoiseWarning, warn_privacy_leak
from dpfair.privacy.mechanisms import (
    TopMExponentialMechanism,
    exponential_mechanism,
    exponential_probabilities,
    gaussian_mechanism,
    laplace_mechanism,
    top_m_exponential_mechanism,
    top_m_inclusion_probabilities,
)
from dpfair.privacy.noise import NoiseSource, SecureNoise, SeededNoise, get_noise_source

__all__ = [
    "AuditResult",
    "BinaryTreeMechanism",
    "ContinualSumMechanism",
    "Factorization",
    "LedgerEntry",
    "NoiseSource",
    "PrivacyBudget",
    "PrivacyBudgetExceededError",
    "PrivacyLeakWarning",
    "SecureNoise",
    "SeededNoise",
    "SeededNoiseWarning",
    "TopMExponentialMechanism",
    "advanced_composition",
    "approx_dp_to_zcdp",
    "audit_epsilon",
    "basic_composition",
    "default_budget",
    "exponential_mechanism",
    "exponential_mechanism_to_zcdp",
    "exponential_probabilities",
    "gaussian_delta",
    "gaussian_dp_delta",
    "gaussian_dp_epsilon",
    "gaussian_dp_mu",
    "gaussian_mechanism",
    "gaussian_sigma_approx_dp",
    "gaussian_sigma_zcdp",
    "get_factorization",
    "get_noise_source",
    "laplace_mechanism",
    "laplace_scale",
    "pure_dp_to_zcdp",
    "rdp_to_approx_dp",
    "set_default_budget",
    "suspend_default_budget",
    "top_m_exponential_mechanism",
    "top_m_inclusion_probabilities",
    "warn_privacy_leak",
    "zcdp_composition",
    "zcdp_delta",
    "zcdp_for_approx_dp",
    "zcdp_to_approx_dp",
]
