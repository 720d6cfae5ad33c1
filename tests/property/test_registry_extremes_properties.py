"""Valid inputs at their extremes, for every private estimator of the registry (``tests/_registry.py``).

For each ``ESTIMATORS`` entry, hypothesis draws valid extremes (:class:`_registry.Extremes`: ``epsilon`` from
1e-300 to 1e300 and ``inf``, declared bounds from tiny to the whole float range, one to three declared groups, as
few as one row) and the entry's ``EXTREMES`` factory turns them into an instance and its fit.  The fit either is
refused before the charge (``ValueError``/``TypeError`` naming an argument, the budget untouched, nothing fitted),
or releases a finite output inside the declared range, with ``privacy_spent_`` and the one ledger entry equal to
the request.  A new estimator gets this test from its ``EXTREMES`` line: no property file of its own.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from _registry import ESTIMATORS, EXTREMES, EXTREMES_SLOW, EXTREMES_XFAIL, Extremes, budget_for

EPSILONS = st.sampled_from([1e-300, 1e-6, 0.5, 1e6, 1e300, math.inf])
BOUNDS = st.sampled_from([(0.0, 1.0), (-1e-300, 1e-300), (-1e150, 1e150), (1e300, 1.5e300), (-1e308, 1e308)])
EXTREME_DRAWS = st.builds(Extremes, epsilon=EPSILONS, bounds=BOUNDS, n_groups=st.integers(1, 3),
                          n_rows=st.integers(1, 12), seed=st.integers(0, 2**16))
#: words a refusal may name besides the estimator's parameters
DATA_NAMES = ("X", "y", "sensitive_features", "scores", "groups", "epsilon", "bounds")


def test_every_registered_estimator_has_its_extremes():
    assert set(EXTREMES) == set(ESTIMATORS), "add the class's extremes factory to EXTREMES in tests/_registry.py"


def _fitted(est) -> bool:
    try:
        check_is_fitted(est)
    except NotFittedError:
        return False
    return True


def _marks(name: str) -> list:
    marks = [pytest.mark.slow] if name in EXTREMES_SLOW else []
    if name in EXTREMES_XFAIL:
        marks.append(pytest.mark.xfail(strict=True, reason=EXTREMES_XFAIL[name]))
    return marks


@pytest.mark.parametrize("name", [pytest.param(name, marks=_marks(name)) for name in sorted(EXTREMES)])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(x=EXTREME_DRAWS)
# every epsilon extreme and every bound extreme at least once, whatever the draws
@example(x=Extremes(1e-300, (0.0, 1.0), 2, 4, 0))
@example(x=Extremes(1e6, (0.0, 1.0), 2, 2, 0))
@example(x=Extremes(1e300, (0.0, 1.0), 2, 2, 0))
@example(x=Extremes(math.inf, (0.0, 1.0), 3, 3, 0))
@example(x=Extremes(0.5, (-1e-300, 1e-300), 2, 2, 0))
@example(x=Extremes(0.5, (1e300, 1.5e300), 2, 2, 0))
@example(x=Extremes(1e-6, (-1e308, 1e308), 1, 1, 0))
def test_valid_extremes_are_refused_before_the_charge_or_released_finite_and_in_bounds(name, x):
    budget = budget_for(name, math.inf, 0.5)
    est = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            case = EXTREMES[name](x, budget)  # a part built there (a scorer) may refuse the bounds already
            est = case.estimator
            case.fit(est)
        except (ValueError, TypeError) as exc:
            message = str(exc)
            names = (*(est.get_params(deep=False) if est is not None else ()), *DATA_NAMES)
            assert any(word in message for word in names), f"{type(exc).__name__} names no argument: {message}"
            assert not budget.ledger, f"refused after the charge: {message}"
            assert est is None or not _fitted(est)
            event("refused")
            return
        output = np.asarray(case.output(est), dtype=float)
    event("released")
    assert np.isfinite(output).all()
    if case.bounds is not None:
        low, high = case.bounds
        assert ((low <= output) & (output <= high)).all()
    spent = est.privacy_spent_
    assert spent["epsilon"] == x.epsilon
    assert len(budget.ledger) == 1
    assert (budget.ledger[0].epsilon, budget.ledger[0].delta) == (spent["epsilon"], spent["delta"])
