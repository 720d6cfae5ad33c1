"""Every public private estimator, selector, scorer and search refuses bad input before it charges.

For each, every kind of refused input -- NaN, a wrong shape, an undeclared group, a bad parameter, too
small a budget -- must raise a clear error (ValueError / TypeError naming what is wrong, or
PrivacyBudgetExceededError), leave the budget exactly as it was, and leave nothing fitted.  The classes and
what they are fitted on come from the one registry, ``tests/_registry.py``: a new public class with an
``epsilon`` or a ``budget`` must be added there or ``test_every_public_private_class_is_in_the_registry`` fails.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from _registry import (  # the one registry of private classes (tests/_registry.py)
    ANALYSES,
    ESTIMATORS,
    GROUPS,
    PACKAGES,
    SCORERS,
    Y_BIN,
    Y_REAL,
    _pfg,
    _reset_pfg,
    public_private_classes,
    registered_names,
)
from _registry import ONLINE as BANDITS
from _registry import budget_for as _budget
from dpfair.metrics import PrivateMetricFrame
from dpfair.privacy import (
    BinaryTreeMechanism,
    PrivacyBudget,
    PrivacyBudgetExceededError,
    TopMExponentialMechanism,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
)
from dpfair.privacy.noise import get_noise_source
from dpfair.regression import FairRegressionPostProcessor


def _nan(a):
    a = np.array(a, dtype=float)
    a.flat[3] = np.nan
    return a


def _other_group(g):
    g = np.array(g, dtype=object)
    g[5] = "zzz"
    return g


def _refused_inputs(name):
    x, y, g = ESTIMATORS[name][2]
    cases = {"NaN": (_nan(x), y, g)}
    if np.ndim(x) == 2:
        cases["wrong shape"] = (x[:, :1].ravel()[:, None].T, y, g)
    else:
        cases["wrong shape"] = (np.stack([x, x, x], axis=1), y, g)
    if g is not None:
        cases["undeclared group"] = (x, y, _other_group(g))
    return cases


def _fitted(est):
    return sorted(k for k in vars(est) if k.endswith("_") and not k.startswith("_"))


def test_every_public_private_class_is_in_the_registry():
    missing = sorted(path for path in public_private_classes() if path.rpartition(".")[2] not in registered_names())
    assert not missing, f"add an entry for each of these to tests/_registry.py: {missing}"


def test_the_registry_check_finds_a_class_without_an_entry(monkeypatch):
    import dpfair.linear_model as linear_model

    class DPNewRegression(linear_model.DPLinearRegression):  # a new private estimator nobody registered
        pass

    monkeypatch.setattr(linear_model, "DPNewRegression", DPNewRegression, raising=False)
    monkeypatch.setattr(linear_model, "__all__", [*linear_model.__all__, "DPNewRegression"])
    assert "dpfair.linear_model.DPNewRegression" in public_private_classes()
    assert "DPNewRegression" not in registered_names()


def test_every_private_class_runs_the_one_release_template():
    """Every estimator, selector, scorer, the search and the metric frame use dpfair.base."""
    from dpfair.base import PrivateEstimator, PrivateMechanismMixin

    classes = {name: getattr(importlib.import_module(f"dpfair.{package}"), name)
               for package in PACKAGES  # every subpackage of dpfair._layout but privacy
               for name in importlib.import_module(f"dpfair.{package}").__all__}
    for name in {key.split("[")[0] for key in ESTIMATORS}:
        assert issubclass(classes[name], PrivateEstimator), name
        assert classes[name].__mro__[1] is PrivateEstimator or issubclass(classes[name].__mro__[1], PrivateEstimator), (
            f"{name}: PrivateEstimator must come before the scikit-learn mixins")
    for name in (*SCORERS, *ANALYSES):
        assert issubclass(classes[name], PrivateMechanismMixin), name


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_fit_goes_through_the_template_once(name, monkeypatch):
    """A subclass's own fit must call the template (validate, charge once, noise, set results)."""
    from dpfair.base import PrivateMechanismMixin

    calls = []
    release = PrivateMechanismMixin._release

    def counting(self, *args, **kwargs):
        calls.append(type(self).__name__)
        return release(self, *args, **kwargs)

    monkeypatch.setattr(PrivateMechanismMixin, "_release", counting)
    make, fit, (x, y, g), _ = ESTIMATORS[name]
    fit(make(_budget(name, 10.0, 1e-3)), x, y, g)
    top = name.split("[")[0]
    # the template runs exactly once for the estimator itself (a wrapped private base model runs its own after it)
    assert calls[:1] == [top] and calls.count(top) == 1, f"{name}.fit did not run dpfair.base's template once: {calls}"


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("kind", ["NaN", "wrong shape", "undeclared group", "bad parameter", "too small a budget"])
def test_refused_input_spends_nothing_and_fits_nothing(name, kind):
    make, fit, (x, y, g), bad = ESTIMATORS[name]
    budget = _budget(name, 10.0, 1e-3)
    if kind == "bad parameter":
        est, data, errors = make(budget, **bad), (x, y, g), (ValueError, TypeError)
    elif kind == "too small a budget":
        budget = _budget(name, 0.5, 1e-3)
        est, data, errors = make(budget), (x, y, g), (PrivacyBudgetExceededError,)
    else:
        cases = _refused_inputs(name)
        if kind not in cases:
            pytest.skip(f"{name} takes no sensitive_features")
        est, data, errors = make(budget), cases[kind], (ValueError, TypeError)
    before = budget.spent()
    with pytest.raises(errors) as caught:
        fit(est, *data)
    assert str(caught.value).strip(), "the error says nothing"
    assert budget.spent() == before, f"{name} spent its budget on a refused {kind}"
    assert not _fitted(est), f"{name} kept fitted attributes after a refused {kind}: {_fitted(est)}"


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_the_valid_fit_charges_once(name):
    make, fit, (x, y, g), _ = ESTIMATORS[name]
    budget = _budget(name, 10.0, 1e-3)
    est = fit(make(budget), x, y, g)
    assert budget.spent()[0] > 0 and len(budget.ledger) == 1, f"{name} made {len(budget.ledger)} charges"
    assert est.privacy_spent_["epsilon"] > 0
    assert est.privacy_spent_["relation"] == budget.neighbouring


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_fit_without_a_budget_charges_the_default_ledger_once(name):
    """With budget=None every private class charges the program's one ledger, once, what it says it spent."""
    from dpfair.privacy import set_default_budget

    make, fit, (x, y, g), _ = ESTIMATORS[name]
    ledger = _budget(name, math.inf, 0.5)
    previous = set_default_budget(ledger)
    try:
        est = fit(make(None), x, y, g)
    finally:
        set_default_budget(previous)
    assert len(ledger.ledger) == 1, f"{name} charged the default ledger {len(ledger.ledger)} times"
    assert ledger.ledger[0].epsilon == pytest.approx(est.privacy_spent_["epsilon"])
    assert ledger.ledger[0].relation == est.privacy_spent_["relation"]


@pytest.mark.parametrize("release", [
    lambda: PrivateMetricFrame(metrics="selection_rate", y_true=Y_BIN, y_pred=Y_BIN, sensitive_features=GROUPS,
                               epsilon=1.0, groups=["a", "b"]),
    lambda: laplace_mechanism([1.0], sensitivity=1.0, epsilon=1.0),
    lambda: gaussian_mechanism([1.0], sensitivity=1.0, rho=0.5),
    lambda: exponential_mechanism([1.0, 2.0], sensitivity=1.0, epsilon=1.0),
    lambda: TopMExponentialMechanism([1.0, 2.0, 3.0], 2, sensitivity=1.0, epsilon=1.0).sample(),
    lambda: BinaryTreeMechanism(4, (1,), sensitivity=1.0, epsilon=1.0),
], ids=["PrivateMetricFrame", "laplace", "gaussian", "exponential", "TopMExponentialMechanism", "BinaryTreeMechanism"])
def test_every_mechanism_and_the_metric_frame_charge_the_default_ledger_once(release):
    from dpfair.privacy import set_default_budget

    ledger = PrivacyBudget(math.inf, 0.5)
    previous = set_default_budget(ledger)
    try:
        release()
    finally:
        set_default_budget(previous)
    assert len(ledger.ledger) == 1 and ledger.spent()[0] > 0


@pytest.mark.parametrize("name", list(SCORERS))
def test_scorers_refuse_bad_rows_before_any_noise(name):
    scorer = SCORERS[name]()
    model = FairRegressionPostProcessor(bounds=(0, 1), groups=["a", "b"], epsilon=float("inf"))
    with pytest.warns(Warning):
        model.fit(Y_REAL, Y_REAL, sensitive_features=GROUPS)
    noise = get_noise_source(0)
    state = noise.rng.bit_generator.state
    with pytest.raises((ValueError, TypeError)):
        if name in ("PrivateMSEScorer", "PrivateAccuracyScorer"):  # the accuracy scorer reads no group
            scorer.check(Y_REAL, _nan(Y_REAL), GROUPS)
        else:
            scorer.check(Y_REAL, Y_REAL, _other_group(GROUPS))
    assert noise.rng.bit_generator.state == state  # nothing drawn


@pytest.mark.parametrize(
    ("kind", "changes", "errors"),
    [
        ("NaN", {"y_pred": _nan(Y_BIN)}, (ValueError, TypeError)),
        ("wrong shape", {"y_pred": Y_BIN[:-1]}, (ValueError, TypeError)),
        ("undeclared group", {"sensitive_features": _other_group(GROUPS)}, (ValueError,)),
        ("bad parameter", {"confidence_level": 1.5}, (ValueError, TypeError)),
        ("too small a budget", {"budget": "small"}, (PrivacyBudgetExceededError,)),
    ],
)
def test_private_metric_frame_refuses_before_charging(kind, changes, errors):
    budget = PrivacyBudget(0.5) if changes.get("budget") == "small" else PrivacyBudget(10.0)
    args = {"metrics": "selection_rate", "y_true": Y_BIN, "y_pred": Y_BIN, "sensitive_features": GROUPS,
            "epsilon": 1.0, "groups": ["a", "b"], "random_state": 0, **changes, "budget": budget}
    before = budget.spent()
    with pytest.raises(errors):
        PrivateMetricFrame(**args)
    assert budget.spent() == before


@pytest.mark.parametrize("name", [key for key, spec in ESTIMATORS.items() if np.ndim(spec[2][0]) == 2])
def test_a_refit_on_an_array_drops_the_feature_names_of_an_earlier_dataframe_fit(name):
    import pandas as pd

    make, fit, (x, y, g), _ = ESTIMATORS[name]
    changes = {"estimator": LogisticRegression(), "prefit": False} if name == "DPEqualizedOddsPostProcessor" else {}
    est = fit(make(_budget(name, 100.0, 1e-2), **changes), pd.DataFrame(x, columns=[f"f{i}" for i in range(x.shape[1])]),
              y, g)
    assert list(est.feature_names_in_) == ["f0", "f1"]
    fit(est, x, y, g)
    assert not hasattr(est, "feature_names_in_"), f"{name} kept the feature names of the earlier DataFrame fit"


# ---------------------------------------------------- bandits (they once spent their own budget, not the ledger)
# The bandit policies and federated learners release online: one "fit" is one reset() of a policy (or one
# simulate() / simulate_federated() of it).  Each must charge the one ledger (dpfair._estimator.charge_budget:
# budget=None goes to the default ledger) exactly once, after every check and before its noise source exists.
import warnings  # noqa: E402

from dpfair.bandits import (  # noqa: E402
    PrivateFairGreedy,
)
from dpfair.privacy import set_default_budget  # noqa: E402


@pytest.fixture
def default_ledger():
    ledger = PrivacyBudget(math.inf, 0.5)
    previous = set_default_budget(ledger)
    try:
        yield ledger
    finally:
        set_default_budget(previous)


def _quietly(run, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(*args, **kwargs)


@pytest.mark.parametrize("name", list(BANDITS))
def test_a_bandit_release_without_a_budget_charges_the_default_ledger_once(name, default_ledger):
    make, release, _ = BANDITS[name]
    _quietly(release, make(None))
    assert len(default_ledger.ledger) == 1, f"{name} charged the default ledger {len(default_ledger.ledger)} times"
    assert default_ledger.spent()[0] > 0


@pytest.mark.parametrize("name", list(BANDITS))
def test_a_bandit_release_with_a_budget_charges_it_once_and_not_the_default_ledger(name, default_ledger):
    make, release, _ = BANDITS[name]
    budget = PrivacyBudget(10.0, 0.5)
    _quietly(release, make(budget))
    assert len(budget.ledger) == 1 and not default_ledger.ledger


@pytest.mark.parametrize("name", ["PrivateFairGreedy", "PrivFairXLinUCB"])
def test_a_bandit_release_with_secure_noise_charges_the_default_ledger_once(name, default_ledger):
    make, release, _ = BANDITS[name]
    learner = _quietly(release, make(None, random_state=None))
    assert len(default_ledger.ledger) == 1
    assert learner.privacy_spent_["epsilon"] == default_ledger.ledger[0].epsilon


@pytest.mark.parametrize("name", list(BANDITS))
@pytest.mark.parametrize("kind", ["bad parameter", "bad call", "too small a budget"])
@pytest.mark.parametrize("ledger", ["budget", "default ledger"])
def test_refused_bandit_input_charges_nothing(name, kind, ledger, default_ledger):
    make, release, bad = BANDITS[name]
    budget = None
    if ledger == "budget":
        budget = PrivacyBudget(0.5, 0.5) if kind == "too small a budget" else PrivacyBudget(10.0, 0.5)
    if ledger == "default ledger" and kind == "too small a budget":
        set_default_budget(PrivacyBudget(0.5, 0.5))
    learner = make(budget, **bad) if kind == "bad parameter" else make(budget)
    errors = (PrivacyBudgetExceededError,) if kind == "too small a budget" else (ValueError, TypeError)
    with pytest.raises(errors):
        if kind == "bad call":
            _quietly(release, learner, horizon=0)
        else:
            _quietly(release, learner)
    from dpfair.privacy import default_budget

    for charged in (budget, default_budget()):
        assert charged is None or not charged.ledger, f"{name} charged on a refused {kind}"
    assert not hasattr(learner, "privacy_spent_")


def test_the_bandit_policy_creates_its_noise_source_only_after_the_charge(monkeypatch):
    """The template's order: validate everything, charge, and only then create the noise source."""
    import dpfair.bandits.gmf.policy_base
    import dpfair.base

    events = []

    class RecordingBudget(PrivacyBudget):
        def _charge(self, entry):
            events.append("charge")
            return super()._charge(entry)

    for module in (dpfair.base, dpfair.bandits.gmf.policy_base):
        if hasattr(module, "get_noise_source"):
            original = module.get_noise_source
            monkeypatch.setattr(module, "get_noise_source",
                                lambda state, original=original: events.append("noise") or original(state))
    _reset_pfg(_pfg(RecordingBudget(10.0, 0.5)))
    assert "noise" in events and events.index("charge") < events.index("noise"), events
    events.clear()
    with pytest.raises(PrivacyBudgetExceededError):
        _reset_pfg(_pfg(RecordingBudget(0.5, 0.5)))
    assert "noise" not in events, "a refused charge must not create a noise source"


@pytest.mark.parametrize("name", ["PrivateFairGreedy", "PrivateFairGreedy[simulate]"])
def test_the_private_bandit_policy_runs_the_one_release_template_once(name, monkeypatch):
    from dpfair.base import PrivateMechanismMixin

    assert issubclass(PrivateFairGreedy, PrivateMechanismMixin)
    assert PrivateFairGreedy.__mro__[1] is PrivateMechanismMixin, "the template's mixin must come first in the bases"
    calls = []
    release = PrivateMechanismMixin._release

    def counting(self, *args, **kwargs):
        calls.append(type(self).__name__)
        return release(self, *args, **kwargs)

    monkeypatch.setattr(PrivateMechanismMixin, "_release", counting)
    make, run, _ = BANDITS[name]
    _quietly(run, make(PrivacyBudget(10.0, 0.5)))
    assert calls == ["PrivateFairGreedy"], calls
