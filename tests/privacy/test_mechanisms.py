"""Laplace, Gaussian and exponential mechanisms: calibration, budgets, limits, bad input."""

import math

import numpy as np
import pytest

from dpfair.privacy import (
    PrivacyBudget,
    PrivacyBudgetExceededError,
    exponential_mechanism,
    exponential_probabilities,
    gaussian_mechanism,
    laplace_mechanism,
)

# exact analyses and epsilon=inf runs are deliberate here (tests/privacy/test_refusals.py checks the warning)
pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")


def test_laplace_scale_and_budget_charge():
    budget = PrivacyBudget(1.0)
    out = laplace_mechanism(np.zeros(200_000), sensitivity=2.0, epsilon=0.5, random_state=0, budget=budget, label="x")
    assert out.var() == pytest.approx(2 * 4.0**2, rel=0.02)
    assert budget.spent()[0] == pytest.approx(0.5)
    with pytest.raises(PrivacyBudgetExceededError):
        laplace_mechanism([1.0], sensitivity=1.0, epsilon=0.6, random_state=0, budget=budget)


def test_infinite_epsilon_is_exact():
    x = np.array([1.5, -2.0])
    np.testing.assert_array_equal(laplace_mechanism(x, sensitivity=1.0, epsilon=math.inf), x)
    np.testing.assert_array_equal(gaussian_mechanism(x, sensitivity=1.0, rho=math.inf), x)


def test_gaussian_zcdp_sigma():
    out = gaussian_mechanism(np.zeros(200_000), sensitivity=3.0, rho=0.5, random_state=1)
    assert out.std() == pytest.approx(3.0, rel=0.01)
    with pytest.raises(ValueError, match="rho"):
        gaussian_mechanism([0.0], sensitivity=1.0, rho=1.0, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_mechanism([0.0], sensitivity=1.0, epsilon=1.0)


def test_exponential_probabilities_and_sampling():
    u = np.array([0.0, 0.5, 1.0])
    p = exponential_probabilities(u, sensitivity=1.0, epsilon=2.0)
    np.testing.assert_allclose(p, np.exp(u) / np.exp(u).sum())
    draws = np.array([exponential_mechanism(u, sensitivity=1.0, epsilon=2.0, random_state=i) for i in range(20_000)])
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / 20_000, p, atol=0.012)
    np.testing.assert_allclose(exponential_probabilities([1, 3, 3], sensitivity=1.0, epsilon=math.inf), [0, 0.5, 0.5])
    assert exponential_mechanism([1, 3, 2], sensitivity=1.0, epsilon=math.inf, random_state=0) == 1


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: laplace_mechanism([np.nan], sensitivity=1.0, epsilon=1.0), "values"),
        (lambda: laplace_mechanism([1.0], sensitivity=-1.0, epsilon=1.0), "sensitivity"),
        (lambda: laplace_mechanism([1.0], sensitivity=1.0, epsilon=0.0), "epsilon"),
        (lambda: gaussian_mechanism([1.0], sensitivity=1.0, epsilon=1.0, delta=1.0), "delta"),
        (lambda: gaussian_mechanism([np.inf], sensitivity=1.0, rho=1.0), "values"),
        (lambda: exponential_mechanism([], sensitivity=1.0, epsilon=1.0), "utilities"),
        (lambda: exponential_mechanism([1.0, np.nan], sensitivity=1.0, epsilon=1.0), "utilities"),
        (lambda: exponential_probabilities([1.0], sensitivity=0.0, epsilon=1.0), "sensitivity"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_noise_keyword_is_the_same_draw_as_random_state_and_refuses_ambiguity():
    """An estimator passes the noise source it opened after its charge as ``noise=``; the draw is the one
    ``random_state=`` gives with the same source, and passing both (or a seed as ``noise``) is refused."""
    from dpfair.privacy.noise import get_noise_source

    values = np.arange(5.0)
    by_keyword = laplace_mechanism(values, sensitivity=1.0, epsilon=1.0, noise=get_noise_source(7))
    by_state = laplace_mechanism(values, sensitivity=1.0, epsilon=1.0, random_state=get_noise_source(7))
    np.testing.assert_array_equal(by_keyword, by_state)
    pick = exponential_mechanism([1.0, 3.0, 2.0], sensitivity=1.0, epsilon=1.0, noise=get_noise_source(3))
    assert pick == exponential_mechanism([1.0, 3.0, 2.0], sensitivity=1.0, epsilon=1.0,
                                         random_state=get_noise_source(3))
    budget = PrivacyBudget(1.0)
    with pytest.raises(TypeError, match=r"either noise= .* or random_state="):
        laplace_mechanism(values, sensitivity=1.0, epsilon=1.0, random_state=0, noise=get_noise_source(0),
                          budget=budget)
    with pytest.raises(TypeError, match=r"noise must be a dpfair\.privacy\.NoiseSource"):
        gaussian_mechanism(values, sensitivity=1.0, rho=0.5, noise=0, budget=budget)
    assert budget.spent() == (0.0, 0.0)  # refused before any charge
