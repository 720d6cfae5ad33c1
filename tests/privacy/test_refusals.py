"""Refused calls spend nothing, leaks are flagged, bad input is refused by name.

Every test here failed on the code before the fix.
"""

import math
import warnings

import numpy as np
import pytest

from dpfair._validation import as_finite_array
from dpfair.privacy import (
    BinaryTreeMechanism,
    PrivacyBudget,
    PrivacyBudgetExceededError,
    PrivacyLeakWarning,
    TopMExponentialMechanism,
    advanced_composition,
    audit_epsilon,
    exponential_mechanism,
    exponential_probabilities,
    gaussian_delta,
    gaussian_mechanism,
    gaussian_sigma_approx_dp,
    gaussian_sigma_zcdp,
    get_noise_source,
    laplace_mechanism,
    pure_dp_to_zcdp,
    top_m_exponential_mechanism,
    top_m_inclusion_probabilities,
    zcdp_delta,
    zcdp_to_approx_dp,
)
from dpfair.privacy.noise import SecureNoise, SeededNoise

# ---------------------------------------------------------------- 1. audit_epsilon


def laplace_claimed_at_one(true_epsilon):
    def mech(data, size, rng):
        return laplace_mechanism(np.full(size, float(data)), sensitivity=1.0, epsilon=true_epsilon, random_state=rng)

    return mech


def test_audit_catches_a_4dp_laplace_claimed_at_1_and_refuses_uninformative_bins():
    leaky = laplace_claimed_at_one(4.0)
    assert audit_epsilon(leaky, 0.0, 1.0, n_samples=50_000).epsilon_lower_bound > 3.0
    for n_bins in (0, 1):
        with pytest.raises(ValueError, match="n_bins"):
            audit_epsilon(leaky, 0.0, 1.0, n_samples=50_000, n_bins=n_bins)
    with pytest.raises(TypeError, match="n_bins"):
        audit_epsilon(leaky, 0.0, 1.0, n_samples=1000, n_bins=2.5)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("discrete", [False, True])
def test_audit_refuses_non_finite_outputs(bad, discrete):
    def mech(data, size, rng):
        out = laplace_claimed_at_one(4.0)(data, size, rng)
        out[::7] = bad
        return out

    with pytest.raises(ValueError, match="mechanism"):
        audit_epsilon(mech, 0.0, 1.0, n_samples=2000, discrete=discrete)


def test_audit_refuses_bad_arguments_by_name():
    mech = laplace_claimed_at_one(1.0)
    with pytest.raises(TypeError, match="mechanism"):
        audit_epsilon("laplace", 0.0, 1.0, n_samples=100)
    with pytest.raises(TypeError, match="random_state"):
        audit_epsilon(mech, 0.0, 1.0, n_samples=100, random_state=0.5)
    with pytest.raises(TypeError, match="confidence"):
        audit_epsilon(mech, 0.0, 1.0, n_samples=100, confidence="0.9")
    with pytest.raises(ValueError, match="n_bins"):
        audit_epsilon(mech, 0.0, 1.0, n_samples=100, n_bins=10_000)


# ---------------------------------------------------------------- 2. refused calls spend nothing

U = np.array([0.0, 1.0, 0.5])

CHARGING_CALLS = {
    "laplace random_state": lambda b: laplace_mechanism([1.0], sensitivity=1.0, epsilon=0.1, budget=b, random_state=0.5),
    "laplace values": lambda b: laplace_mechanism(["1"], sensitivity=1.0, epsilon=0.1, budget=b, random_state=0),
    "laplace overflow": lambda b: laplace_mechanism([1.7e308], sensitivity=1.0, epsilon=1e-305, budget=b, random_state=0),
    "laplace budget type": lambda b: laplace_mechanism([1.0], sensitivity=1.0, epsilon=0.1, budget=b, random_state=-1),
    "gaussian rho random_state": lambda b: gaussian_mechanism([1.0], sensitivity=1.0, rho=0.01, budget=b, random_state=0.5),
    "gaussian approx random_state": lambda b: gaussian_mechanism(
        [1.0], sensitivity=1.0, epsilon=0.1, delta=1e-9, budget=b, random_state="0"
    ),
    "gaussian values": lambda b: gaussian_mechanism([1 + 1j], sensitivity=1.0, rho=0.01, budget=b, random_state=0),
    "exponential random_state": lambda b: exponential_mechanism(U, sensitivity=1.0, epsilon=0.1, budget=b, random_state=0.5),
    "exponential utilities": lambda b: exponential_mechanism([[0.0, 1]], sensitivity=1.0, epsilon=0.1, budget=b, random_state=0),
    "top-m random_state": lambda b: top_m_exponential_mechanism(U, 2, sensitivity=1.0, epsilon=0.1, budget=b, random_state=0.5),
    "top-m size": lambda b: top_m_exponential_mechanism(U, 2, sensitivity=1.0, epsilon=0.1, budget=b, random_state=0, size=0),
    "top-m n_select": lambda b: top_m_exponential_mechanism(U, 4, sensitivity=1.0, epsilon=0.1, budget=b, random_state=0),
    "tree rho random_state": lambda b: BinaryTreeMechanism(8, (2,), sensitivity=1.0, rho=0.01, budget=b, random_state=0.5),
    "tree epsilon random_state": lambda b: BinaryTreeMechanism(8, (2,), sensitivity=1.0, epsilon=0.1, budget=b, random_state=0.5),
    "tree symmetric": lambda b: BinaryTreeMechanism(
        8, (2, 2), sensitivity=1.0, rho=0.01, symmetric="yes", budget=b, random_state=0
    ),
    "tree scale overflow": lambda b: BinaryTreeMechanism(8, (2,), sensitivity=1e300, epsilon=1e-300, budget=b, random_state=0),
}


@pytest.mark.parametrize("name", sorted(CHARGING_CALLS))
def test_a_refused_call_spends_nothing(name):
    budget = PrivacyBudget(10.0, 1e-6)
    budget.spend(0.7, label="earlier")
    before = (budget.ledger, budget.spent())
    with pytest.raises((TypeError, ValueError)):
        CHARGING_CALLS[name](budget)
    assert (budget.ledger, budget.spent()) == before
    assert budget.spent() == (0.7, 0.0)


def test_laplace_with_a_float_random_state_names_it_and_spends_nothing():
    b = PrivacyBudget(1.0)
    b.spend(0.7)
    with pytest.raises(TypeError, match="random_state"):
        laplace_mechanism([1.0], sensitivity=1.0, epsilon=0.1, budget=b, random_state=0.5)
    assert b.spent() == (0.7, 0.0)


def test_a_budget_that_is_not_a_budget_is_refused_by_name():
    with pytest.raises(TypeError, match="budget"):
        laplace_mechanism([1.0], sensitivity=1.0, epsilon=0.1, budget=1.0, random_state=0)
    with pytest.raises(TypeError, match="budget"):
        BinaryTreeMechanism(8, (2,), sensitivity=1.0, rho=0.1, budget="b", random_state=0)


# ---------------------------------------------------------------- 3. PrivacyLeakWarning

ANALYSES = {
    "exponential_probabilities": lambda: exponential_probabilities(U, sensitivity=1.0, epsilon=1.0),
    "top_m_inclusion_probabilities": lambda: top_m_inclusion_probabilities(U, 2, sensitivity=1.0, epsilon=1.0),
    "inclusion_probabilities": lambda: TopMExponentialMechanism(U, 2, sensitivity=1.0, epsilon=1.0).inclusion_probabilities(),
    "laplace inf": lambda: laplace_mechanism(U, sensitivity=1.0, epsilon=math.inf),
    "gaussian rho inf": lambda: gaussian_mechanism(U, sensitivity=1.0, rho=math.inf),
    "gaussian epsilon inf": lambda: gaussian_mechanism(U, sensitivity=1.0, epsilon=math.inf, delta=1e-5),
    "exponential inf": lambda: exponential_mechanism(U, sensitivity=1.0, epsilon=math.inf, random_state=0),
    "top-m inf": lambda: top_m_exponential_mechanism(U, 2, sensitivity=1.0, epsilon=math.inf, random_state=0),
    "sample inf": lambda: TopMExponentialMechanism(U, 2, sensitivity=1.0, epsilon=math.inf).sample(random_state=0),
    "tree inf": lambda: BinaryTreeMechanism(4, (2,), sensitivity=1.0, rho=math.inf, random_state=0),
}


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_exact_functions_of_private_data_warn_once_at_the_callers_line(name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ANALYSES[name]()
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1, [str(w.message) for w in caught]
    assert leaks[0].filename == __file__


def test_private_releases_and_internal_probabilities_do_not_warn():
    """Secure noise (the default) at finite epsilon: no warning at all (seeded noise warns: tests/privacy/test_seams.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mech = TopMExponentialMechanism(U, 2, sensitivity=1.0, epsilon=1.0)
        mech.sample(size=3)
        top_m_exponential_mechanism(U, 2, sensitivity=1.0, epsilon=1.0)
        exponential_mechanism(U, sensitivity=1.0, epsilon=1.0)
        laplace_mechanism(U, sensitivity=1.0, epsilon=1.0)
        gaussian_mechanism(U, sensitivity=1.0, rho=1.0)
        BinaryTreeMechanism(4, (2,), sensitivity=1.0, rho=1.0).step([1.0, 2.0])


def test_a_refused_charge_at_infinite_epsilon_releases_and_warns_nothing():
    budget = PrivacyBudget(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(PrivacyBudgetExceededError):
            laplace_mechanism(U, sensitivity=1.0, epsilon=math.inf, budget=budget)


# ---------------------------------------------------------------- 4. bad input


@pytest.mark.parametrize("source", [SeededNoise(0), SecureNoise()], ids=["seeded", "secure"])
def test_discrete_laplace_refuses_non_integers_instead_of_truncating(source):
    with pytest.raises(ValueError, match="values"):
        source.discrete_laplace([1.7], 1.0)
    np.testing.assert_array_equal(source.discrete_laplace([2.0, -3.0], 0.0), [2, -3])
    with pytest.raises(ValueError, match="values"):
        source.discrete_laplace([2.0**70], 1.0)
    with pytest.raises(ValueError, match="values"):
        source.discrete_laplace([0], 1e300)  # the noise would overflow int64


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ([1 + 2j], TypeError),
        (np.array([1.0, 2.0], dtype=complex), TypeError),
        ("1.5", TypeError),
        (["1.5", "2"], TypeError),
        (np.array(["1", "2"], dtype=object), TypeError),
        ([1.0, None], TypeError),
        ([True, False], TypeError),
        (np.array([1, 0], dtype=bool), TypeError),
        (np.array([True, 1.0], dtype=object), TypeError),
        (np.array(["2020-01-01"], dtype="datetime64[D]"), TypeError),
        ([[1.0], [2.0, 3.0]], ValueError),
        ([10**400], ValueError),
    ],
)
def test_as_finite_array_refuses_what_is_not_a_real_number(values, error):
    with pytest.raises(error, match="values"):
        as_finite_array(values, "values")
    with pytest.raises(error, match="values"):
        laplace_mechanism(values, sensitivity=1.0, epsilon=1.0, random_state=0)


def test_as_finite_array_keeps_real_numbers_and_bool_on_request():
    np.testing.assert_array_equal(as_finite_array(np.array([1, 2], dtype=object), "x"), [1.0, 2.0])
    np.testing.assert_array_equal(as_finite_array(np.float16([1.5]), "x"), [1.5])
    np.testing.assert_array_equal(as_finite_array([True, False], "x", allow_bool=True), [1.0, 0.0])
    assert as_finite_array(3, "x").shape == ()


def test_binary_tree_refuses_a_nan_shift_and_keeps_its_state():
    tree = BinaryTreeMechanism(4, (2, 2), sensitivity=1.0, rho=1.0, random_state=0)
    tree.update(np.eye(2))
    for shift in (np.nan, np.inf):
        with pytest.raises(ValueError, match="shift"):
            tree.release(shift=shift)
        with pytest.raises(ValueError, match="shift"):
            tree.step(np.eye(2), shift=shift)
    with pytest.raises(TypeError, match="shift"):
        tree.release(shift="1")
    assert tree.t == 1  # the refused step added nothing
    assert np.isfinite(tree.release(shift=0.5)).all()


def test_gaussian_mechanism_at_epsilon_1e300_is_finite():
    out = gaussian_mechanism([1.0, 2.0], sensitivity=1.0, epsilon=1e300, delta=1e-5, random_state=0)
    np.testing.assert_allclose(out, [1.0, 2.0])
    assert 0 < gaussian_sigma_approx_dp(1.0, 1e300, 1e-5) < 1e-149


def test_gaussian_calibration_is_sound_for_tiny_delta_and_epsilon():
    """Phi(a - b) - e^eps Phi(-a - b) cancels below ~1e-16: the old bisection returned sigma = 1e18 here."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 400
    for epsilon, delta in [(1e-300, 1e-300), (1e-3, 1e-20), (1e-10, 1e-25), (1.0, 1e-5)]:
        sigma = gaussian_sigma_approx_dp(1.0, epsilon, delta)
        a, b = mpmath.mpf(1) / (2 * sigma), mpmath.mpf(epsilon) * sigma
        exact = mpmath.ncdf(a - b) - mpmath.e ** mpmath.mpf(epsilon) * mpmath.ncdf(-a - b)
        assert exact <= delta * (1 + 1e-9)
        assert exact >= delta * (1 - 1e-6)  # and not much more noise than needed
    assert gaussian_delta(1e20, 1e-300) == pytest.approx(1 / (1e20 * math.sqrt(2 * math.pi)), rel=1e-9)


def test_conversions_do_not_overflow():
    assert zcdp_to_approx_dp(1e300, 1e-5) >= 1e300
    assert zcdp_to_approx_dp(1e30, 1e-5) >= 1e30
    assert zcdp_delta(1e300, 1.0) == 1.0
    assert advanced_composition(1e300, 0.0, 2, 1e-5) == (math.inf, 1e-5)
    assert advanced_composition(800.0, 0.0, 2, 1e-5)[0] == math.inf
    assert pure_dp_to_zcdp(1e300) == math.inf
    assert pure_dp_to_zcdp(1e-300) > 0  # rounded up, never 0
    with pytest.raises(ValueError, match="k"):
        advanced_composition(1.0, 0.0, 10**400, 1e-5)


def test_zcdp_conversion_with_tiny_delta_does_not_crash():
    budget = PrivacyBudget(1.0, 1e-300)
    budget.spend_zcdp(1e-300)
    assert 0 <= budget.spent()[0] < 1e-100


def test_spend_zcdp_on_a_pure_budget_says_delta_is_needed():
    with pytest.raises(PrivacyBudgetExceededError, match="delta > 0") as info:
        PrivacyBudget(1.0).spend_zcdp(0.01)
    assert "inf" not in str(info.value)
    budget = PrivacyBudget(1.0, 1e-6)
    budget.spend(0.1, 1e-6)
    with pytest.raises(PrivacyBudgetExceededError, match="delta"):
        budget.spend_zcdp(0.01)
    assert len(budget.ledger) == 1


def test_budget_tolerance_is_relative():
    tiny = PrivacyBudget(1e-300)
    with pytest.raises(PrivacyBudgetExceededError):
        tiny.spend(1e-13)
    with pytest.raises(PrivacyBudgetExceededError):
        PrivacyBudget(1.0).spend(0.1, 1e-16)  # no delta in a pure budget, however small
    b = PrivacyBudget(0.3)
    b.spend(0.1)
    b.spend(0.2)  # 0.1 + 0.2 > 0.3 by rounding only


def test_subnormal_sensitivity_is_refused_by_name():
    for call in (
        lambda: TopMExponentialMechanism([0.0, 1.0, 2.0], 1, sensitivity=1e-310, epsilon=1.0),
        lambda: laplace_mechanism([0.0], sensitivity=1e-310, epsilon=1.0, random_state=0),
    ):
        with pytest.raises(ValueError, match="sensitivity"):
            call()


def test_huge_log_weights_are_exact_not_floating_point_errors():
    u = np.array([0.0, 1.0, 2.0, 3.0])
    with pytest.warns(PrivacyLeakWarning):
        p = exponential_probabilities(u, sensitivity=1e-300, epsilon=1e300)
    np.testing.assert_array_equal(p, [0, 0, 0, 1])
    with pytest.warns(PrivacyLeakWarning):
        incl = top_m_inclusion_probabilities(u, 2, sensitivity=1e-300, epsilon=1e300)
    np.testing.assert_allclose(incl, [0, 0, 1, 1])
    assert exponential_mechanism(u, sensitivity=1e-300, epsilon=1e300, random_state=0) == 3
    assert exponential_mechanism(u, sensitivity=1e10, epsilon=1e-300, random_state=0) in range(4)
    np.testing.assert_array_equal(top_m_exponential_mechanism(u, 2, sensitivity=1e-300, epsilon=1e300, random_state=0), [2, 3])


def test_noise_scales_that_are_not_representable_are_refused_by_name():
    with pytest.raises(ValueError, match="epsilon"):
        laplace_mechanism([0.0], sensitivity=1e10, epsilon=1e-300, random_state=0)
    with pytest.raises(ValueError, match="epsilon"):
        laplace_mechanism([0.0], sensitivity=1e-300, epsilon=1e300, random_state=0)  # scale underflows to 0
    with pytest.raises(ValueError, match="rho"):
        gaussian_sigma_zcdp(1e-300, 1e300)
    with pytest.raises(ValueError, match="values"):
        laplace_mechanism([1.7e308], sensitivity=1.0, epsilon=1e-305, random_state=0)


@pytest.mark.parametrize(("random_state", "error"), [(0.5, TypeError), (True, TypeError), ("0", TypeError), (-1, ValueError),
                                                     ([1, 2], TypeError), (np.random.RandomState(0), TypeError)])
def test_get_noise_source_refuses_bad_random_state_by_name(random_state, error):
    with pytest.raises(error, match="random_state"):
        get_noise_source(random_state)
    with pytest.raises(error, match="random_state"):
        SeededNoise(random_state)


def test_noise_sources_refuse_bad_shapes_and_scores():
    for source in (SeededNoise(0), SecureNoise()):
        with pytest.raises(ValueError, match="shape"):
            source.uniform(-1)
        with pytest.raises(TypeError, match="shape"):
            source.uniform(2.5)
        assert source.uniform((0, 3)).shape == (0, 3)
        with pytest.raises(ValueError, match="scores"):
            source.noisy_argmax_gumbel([], 1.0)
        with pytest.raises(ValueError, match="scores"):
            source.noisy_argmax_gumbel([[1.0, 2.0]], 1.0)


def test_zero_scale_gumbel_breaks_ties_uniformly_for_seeded_noise_too():
    picks = {SeededNoise(i).noisy_argmax_gumbel([1.0, 1.0, 0.0], 0.0) for i in range(40)}
    assert picks == {0, 1}


def test_binary_tree_validates_t_and_beta():
    tree = BinaryTreeMechanism(4, (2, 2), sensitivity=1.0, rho=1.0, symmetric=True, random_state=0)
    with pytest.raises(ValueError, match="t"):
        tree.release_variance(5)
    with pytest.raises(TypeError, match="beta"):
        tree.noise_operator_norm_bound("0.1")
    with pytest.raises(TypeError, match="t"):
        tree.noise_operator_norm_bound(0.1, t=1.5)


def test_secure_discrete_laplace_handles_64_bit_counts():
    out = SecureNoise().discrete_laplace([2**40, -(2**35)], 1.0)
    assert out.dtype == np.int64 and abs(int(out[0]) - 2**40) < 100 and abs(int(out[1]) + 2**35) < 100
