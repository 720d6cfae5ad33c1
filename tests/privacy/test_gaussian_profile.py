"""The mu-GDP privacy profile (Balle & Wang 2018) in dpfair.privacy.accounting.

Against numeric integration of the privacy-loss definition, scipy's normal CDF, the certified inverse
(mu for a target (epsilon, delta), epsilon for a target delta) and the zCDP conversion it improves on.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpfair.privacy.accounting import (
    gaussian_dp_delta,
    gaussian_dp_epsilon,
    gaussian_dp_mu,
    zcdp_delta,
    zcdp_for_approx_dp,
)


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 1.3662, 3.0])
@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0, 2.0, 5.0])
def test_profile_equals_the_hockey_stick_divergence_by_integration_and_scipy(mu, epsilon):
    # delta(eps) = int max(0, p(x) - e^eps q(x)) dx with p = N(mu, 1), q = N(0, 1) (the definition)
    def excess(x):
        return max(0.0, stats.norm.pdf(x, mu) - math.exp(epsilon) * stats.norm.pdf(x))

    cut = epsilon / mu + mu / 2  # p / q = e^eps exactly here; above it p > e^eps q
    numeric = integrate.quad(excess, cut, cut + 40, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
    closed = stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2)
    assert gaussian_dp_delta(mu, epsilon) == pytest.approx(numeric, rel=1e-8, abs=1e-15)
    assert gaussian_dp_delta(mu, epsilon) == pytest.approx(closed, rel=1e-10, abs=1e-16)


def test_mu_for_a_target_is_certified_and_tight():
    for epsilon, delta in [(2.0, 0.1), (1.0, 1e-5), (0.1, 1e-3), (8.0, 1e-9)]:
        mu = gaussian_dp_mu(epsilon, delta)
        assert gaussian_dp_delta(mu, epsilon) <= delta  # never above the guarantee
        assert gaussian_dp_delta(mu * (1 + 1e-9), epsilon) > delta * (1 - 1e-6)  # and no slack to speak of
        eps = gaussian_dp_epsilon(mu, delta)
        assert eps <= epsilon * (1 + 1e-9) and gaussian_dp_delta(mu, eps) <= delta
    assert gaussian_dp_mu(2.0, 0.1) == pytest.approx(1.36620375, abs=1e-8)
    assert gaussian_dp_epsilon(1e-3, 0.1) == 0.0  # delta(0) below the target already
    assert gaussian_dp_delta(0.0, 1.0) == 0.0


def test_profile_is_tighter_than_the_zcdp_conversion():
    """Exp 1's (2, 0.1): the profile allows mu 1.366, the zCDP route sqrt(2 rho) = 1.127 (1.21x less noise)."""
    rho = zcdp_for_approx_dp(2.0, 0.1)
    mu_zcdp = math.sqrt(2 * rho)
    assert gaussian_dp_mu(2.0, 0.1) / mu_zcdp == pytest.approx(1.2126, abs=1e-3)
    for mu in np.linspace(0.1, 3.0, 12):
        for epsilon in (0.5, 1.0, 2.0):
            assert gaussian_dp_delta(mu, epsilon) <= zcdp_delta(mu * mu / 2, epsilon) * (1 + 1e-9) + 1e-300


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="mu"):
        gaussian_dp_delta(-1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_dp_mu(math.inf, 0.1)
    with pytest.raises(ValueError, match="delta"):
        gaussian_dp_epsilon(1.0, 1.5)
