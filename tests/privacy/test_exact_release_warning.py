"""One epsilon = inf warning text, raised by the mechanisms through ``leaks.warn_exact_release``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dpfair.privacy.mechanisms as mechanisms
from dpfair.privacy import (
    PrivacyLeakWarning,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    top_m_exponential_mechanism,
)

RELEASES = {
    "laplace_mechanism's output": lambda: laplace_mechanism([1.0], sensitivity=1.0, epsilon=math.inf, random_state=0),
    "gaussian_mechanism's output": lambda: gaussian_mechanism([1.0], sensitivity=1.0, rho=math.inf, random_state=0),
    "exponential_mechanism's choice": lambda: exponential_mechanism(
        [0.0, 1.0], sensitivity=1.0, epsilon=math.inf, random_state=0
    ),
    "top_m_exponential_mechanism's subset": lambda: top_m_exponential_mechanism(
        [0.0, 1.0, 2.0], 1, sensitivity=1.0, epsilon=math.inf, random_state=0
    ),
}


@pytest.mark.parametrize("what", list(RELEASES))
def test_an_exact_release_warns_through_warn_non_private_at_the_callers_line(what, monkeypatch):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        RELEASES[what]()
    assert [w.category for w in caught] == [PrivacyLeakWarning]
    assert str(caught[0].message).startswith(f"epsilon=inf: {what} is an exact function of the data")
    assert caught[0].filename == __file__  # stacklevel: the line that called the mechanism
    calls = []
    monkeypatch.setattr(mechanisms, "warn_exact_release", lambda epsilon, text, **_: calls.append((epsilon, text)))
    RELEASES[what]()
    assert calls == [(math.inf, what)]


def test_a_finite_epsilon_with_secure_noise_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        laplace_mechanism(np.zeros(2), sensitivity=1.0, epsilon=1.0)
        gaussian_mechanism(np.zeros(2), sensitivity=1.0, epsilon=1.0, delta=1e-6)


def test_estimators_and_mechanisms_share_one_text():
    from dpfair._estimator import warn_non_private
    from dpfair.privacy.leaks import exact_release_message

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_non_private(math.inf, "the thing")
        laplace_mechanism([1.0], sensitivity=1.0, epsilon=math.inf, random_state=0)
    assert [str(w.message) for w in caught] == [exact_release_message("the thing"),
                                                exact_release_message("laplace_mechanism's output")]
