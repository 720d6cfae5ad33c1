"""Conversions and composition agree with OpenDP and dp-accounting where they compute the same thing."""

import math

import dp_accounting
import numpy as np
import opendp.prelude as dp
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld import privacy_loss_mechanism as plm

from dpfair.privacy import accounting as acc

dp.enable_features("contrib")


@pytest.mark.parametrize("rho", [0.01, 0.1, 0.5, 2.0, 10.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 1e-2])
def test_tight_zcdp_conversion_matches_opendp(rho, delta):
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    meas = dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=1 / math.sqrt(2 * rho)))
    expected = meas.map(1.0).epsilon(delta)
    assert acc.zcdp_to_approx_dp(rho, delta) == pytest.approx(expected, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("rho", [0.05, 1.0, 5.0])
def test_tight_conversion_matches_dp_accounting_rdp_and_beats_standard(rho):
    delta = 1e-6
    orders = np.concatenate([np.linspace(1.001, 10, 20_000), np.linspace(10, 2000, 20_000)])
    rdp = rho * orders  # rho-zCDP is (alpha, rho*alpha)-RDP for every alpha
    eps_rdp, _ = dp_accounting.rdp.rdp_privacy_accountant.compute_epsilon(orders, rdp, delta)
    ours = acc.zcdp_to_approx_dp(rho, delta)
    assert ours == pytest.approx(eps_rdp, rel=1e-6)
    assert ours < acc.zcdp_to_approx_dp(rho, delta, method="standard")


def test_standard_conversion_and_its_inverse():
    for eps, delta in [(0.5, 1e-6), (15 / 2, 0.05), (2.0, 0.1)]:
        rho = acc.approx_dp_to_zcdp(eps, delta)
        assert rho == pytest.approx((math.sqrt(math.log(1 / delta) + eps) - math.sqrt(math.log(1 / delta))) ** 2)
        assert acc.zcdp_to_approx_dp(rho, delta, method="standard") == pytest.approx(eps, rel=1e-12)


def test_pure_and_exponential_to_zcdp():
    assert acc.pure_dp_to_zcdp(0.4) == pytest.approx(0.08)
    assert acc.exponential_mechanism_to_zcdp(0.4) == pytest.approx(0.02)


def test_gaussian_calibration_matches_dp_accounting():
    for eps, delta in [(0.1, 1e-5), (1.0, 1e-5), (5.0, 1e-8)]:
        assert acc.gaussian_sigma_approx_dp(1.0, eps, delta) == pytest.approx(
            dp_accounting.get_sigma_gaussian(eps, delta), rel=1e-6
        )
        sigma = acc.gaussian_sigma_approx_dp(2.0, eps, delta)
        exact = plm.GaussianPrivacyLoss(standard_deviation=sigma, sensitivity=2.0).get_delta_for_epsilon(eps)
        assert exact == pytest.approx(delta, rel=1e-6)


def test_gaussian_zcdp_sigma_matches_opendp_map():
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    sigma = acc.gaussian_sigma_zcdp(3.0, 0.7)
    assert dp.m.make_gaussian(*space, scale=sigma).map(3.0) == pytest.approx(0.7, rel=1e-9)


def test_laplace_scale_matches_opendp_map():
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    b = acc.laplace_scale(2.0, 0.5)
    assert dp.m.make_laplace(*space, scale=b).map(2.0) == pytest.approx(0.5, rel=1e-9)


def test_advanced_composition_formula_and_soundness_against_pld():
    eps, k, slack = 0.1, 50, 1e-6
    got, got_delta = acc.advanced_composition(eps, 0.0, k, slack)
    assert got == pytest.approx(math.sqrt(2 * k * math.log(1 / slack)) * eps + k * eps * math.expm1(eps))
    assert got_delta == pytest.approx(slack)
    # the exact (optimal) composition computed by dp-accounting's PLD never exceeds the bound
    pld = pld_lib.from_privacy_parameters(pld_lib.common.DifferentialPrivacyParameters(eps, 0.0))
    exact = pld.self_compose(k).get_epsilon_for_delta(slack)
    assert exact <= got
    assert exact > 0.5 * got  # and the bound is not absurdly loose here


def test_basic_and_zcdp_composition():
    assert acc.basic_composition([(0.5, 1e-6), (0.25, 0.0)]) == pytest.approx((0.75, 1e-6))
    assert acc.zcdp_composition([0.1, 0.2]) == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: acc.zcdp_to_approx_dp(float("nan"), 1e-5), "rho"),
        (lambda: acc.zcdp_to_approx_dp(1.0, float("nan")), "delta"),
        (lambda: acc.zcdp_to_approx_dp(1.0, 1.0), "delta"),
        (lambda: acc.zcdp_to_approx_dp(1.0, -0.1), "delta"),
        (lambda: acc.approx_dp_to_zcdp(0.0, 1e-5), "epsilon"),
        (lambda: acc.pure_dp_to_zcdp(float("nan")), "epsilon"),
        (lambda: acc.advanced_composition(1.0, 0.0, 0, 1e-5), "k"),
        (lambda: acc.gaussian_sigma_zcdp(-1.0, 1.0), "sensitivity"),
        (lambda: acc.laplace_scale(float("inf"), 1.0), "sensitivity"),
        (lambda: acc.basic_composition([(1.0, float("nan"))]), "delta"),
        (lambda: acc.zcdp_to_approx_dp("1", 1e-5), "rho"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_rdp_conversion_matches_dp_accounting_and_the_zcdp_bound():
    delta = 1e-6
    orders = 1.0 + np.logspace(-3, 4, 700)
    for rdp in (0.3 * orders, np.minimum(0.5, orders * 0.5**2 / 2), np.full(orders.size, 2.0)):
        ours = acc.rdp_to_approx_dp(rdp, orders, delta)
        # Mironov (2017), Proposition 3, by brute force over the same orders
        assert ours == pytest.approx(float(np.min(rdp + math.log(1 / delta) / (orders - 1))), rel=1e-12)
        # dp-accounting uses a tighter conversion (Canonne et al. 2020): never above ours
        theirs, _ = dp_accounting.rdp.rdp_privacy_accountant.compute_epsilon(orders, rdp, delta)
        assert theirs <= ours + 1e-12
    # rho-zCDP is (lambda, rho * lambda)-RDP: over a fine grid this is the standard zCDP conversion
    fine = np.concatenate([np.linspace(1.001, 10, 20_000), np.linspace(10, 2000, 20_000)])
    assert acc.rdp_to_approx_dp(0.05 * fine, fine, delta) == pytest.approx(
        acc.zcdp_to_approx_dp(0.05, delta, method="standard"), rel=1e-5)
    # a single order, and orders with no bound
    assert acc.rdp_to_approx_dp(1.0, 2.0, math.exp(-3.0)) == pytest.approx(4.0)
    assert acc.rdp_to_approx_dp([math.inf, 1.0], [2.0, 3.0], math.exp(-2.0)) == pytest.approx(2.0)
    assert acc.rdp_to_approx_dp([math.inf], [2.0], 1e-5) == math.inf


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1.0, 2.0, 0.0), "delta"),
        ((1.0, 2.0, 1.0), "delta"),
        ((1.0, 2.0, float("nan")), "delta"),
        ((-0.1, 2.0, 1e-5), "rdp"),
        ((float("nan"), 2.0, 1e-5), "rdp"),
        ((1.0, 1.0, 1e-5), "orders"),
        ((1.0, float("inf"), 1e-5), "orders"),
        (([1.0, 2.0], [2.0], 1e-5), "same length"),
        (("1", 2.0, 1e-5), "rdp"),
        (([], [], 1e-5), "rdp"),
    ],
)
def test_rdp_conversion_refuses_bad_input(args, match):
    with pytest.raises((ValueError, TypeError), match=match):
        acc.rdp_to_approx_dp(*args)
