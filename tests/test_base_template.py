"""The release template's typed stages, its ``_run`` step, its public dry runs, and one warning locator.

* the steps hand each other frozen dataclasses: a dict is refused by name, a misspelt field is an AttributeError;
* an iterative mechanism fills ``_run`` (noise and computation interleaved), never beside ``_draw_noise``;
* ``planned_charge()`` (parameters only) and ``check_release(X, y, ...)`` (parameters and data) say what one fit
  would charge -- the very ledger entry the fit then makes -- while fitting, drawing and charging nothing;
* :func:`dpfair._warnings.find_stack_level` points a warning at the caller's line however deep in dpfair it is raised.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import FrozenInstanceError, dataclass
from typing import ClassVar

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.linear_model import LinearRegression

from _registry import ESTIMATORS, GROUPS, Y_REAL, N, X, budget_for
from dpfair import _warnings
from dpfair.bandits import PrivateFairGreedy, SyntheticGroupEnvironment, simulate
from dpfair.base import (
    PlannedCharge,
    PrivacyParameters,
    PrivateEstimator,
    PrivateMechanismMixin,
    ValidatedData,
    ValidatedOptions,
)
from dpfair.classification import DPExponentiatedGradient
from dpfair.linear_model import DPLinearRegression
from dpfair.model_selection import PrivateMSEScorer, PrivateRandomSearch
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning
from dpfair.regression import FairRegressionPostProcessor

HERE = __file__


# ------------------------------------------------------------------ a minimal private mean, typed
@dataclass(frozen=True, eq=False)
class _MeanOptions(ValidatedOptions):
    scale: float


@dataclass(frozen=True, eq=False, kw_only=True)
class _Targets(ValidatedData):
    y: np.ndarray


class _NoisyMean(PrivateEstimator, RegressorMixin, BaseEstimator):
    _privacy_parameters: ClassVar[dict[str, str]] = {"epsilon": "epsilon", "bounds": "bounds", "groups": "groups",
                                                     "budget": "budget", "random_state": "random_state"}

    def __init__(self, *, epsilon=1.0, bounds=(0.0, 1.0), groups=("a", "b"), scale=1.0, budget=None, random_state=None):
        self.epsilon = epsilon
        self.bounds = bounds
        self.groups = groups
        self.scale = scale
        self.budget = budget
        self.random_state = random_state

    def _validate_params(self):
        return _MeanOptions(scale=float(self.scale))

    def _validate_data(self, params, X, y, *, sensitive_features=None):
        y = np.asarray(y, dtype=float)
        if not np.all(np.isfinite(y)):
            raise ValueError("y must hold finite numbers.")
        return _Targets(y=y * params.options.scale, n_rows=y.size, sensitive_features=sensitive_features)

    def _compute_statistics(self, params, data):
        return np.bincount(data.group_index, weights=data.y, minlength=data.groups.size)

    def _draw_noise(self, params, statistics, noise):
        return noise.laplace(statistics, 2.0 / params.epsilon)

    def _solve(self, params, noisy, data):
        return {"sums_": noisy, "groups_": data.groups}


Y = np.linspace(0, 1, 40)
G = np.tile(["a", "b"], 20)


def test_the_stages_are_frozen_dataclasses_and_a_typo_fails_at_once():
    est = _NoisyMean(random_state=0)
    params, data = est._validate_all(None, Y, sensitive_features=G)
    assert isinstance(params, PrivacyParameters) and isinstance(params.options, _MeanOptions)
    assert isinstance(data, _Targets) and data.groups.tolist() == ["a", "b"] and data.group_index.shape == (40,)
    with pytest.raises(AttributeError):
        data.group_idx  # noqa: B018 - the misspelt field fails where it is read
    with pytest.raises(AttributeError):
        params.options.scal  # noqa: B018
    with pytest.raises(FrozenInstanceError):
        data.n_rows = 3


@pytest.mark.parametrize("step", ["_validate_data", "_validate_params"])
def test_a_dict_where_a_stage_is_expected_is_refused_by_name(step):
    class _Untyped(_NoisyMean):
        pass

    if step == "_validate_data":
        _Untyped._validate_data = lambda self, params, X, y, **kw: {"y": np.asarray(y), "n_rows": 40}
    else:
        _Untyped._validate_params = lambda self: {"scale": 1.0}
    budget = PrivacyBudget(5.0)
    with pytest.raises(TypeError, match=f"{step} returned a dict.*dpfair.base.Validated"):
        _Untyped(budget=budget, random_state=0).fit(None, Y, sensitive_features=G)
    assert budget.ledger == ()


def test_a_class_that_declares_groups_must_set_n_rows():
    class _NoRows(_NoisyMean):
        def _validate_data(self, params, X, y, *, sensitive_features=None):
            return _Targets(y=np.asarray(y, dtype=float), sensitive_features=sensitive_features)

    with pytest.raises(TypeError, match="left n_rows unset"):
        _NoRows(random_state=0).fit(None, Y, sensitive_features=G)


# ------------------------------------------------------------------ the _run step
def test_run_and_draw_noise_are_exclusive_and_the_template_stays_final():
    with pytest.raises(TypeError, match="both _draw_noise and _run"):
        type("Both", (_NoisyMean,), {"_run": lambda self, params, data, statistics, noise: None})
    for step in ("planned_charge", "check_release", "_dry_run", "_validate_every_parameter"):
        with pytest.raises(TypeError, match=step):
            type("Bad", (PrivateEstimator,), {step: lambda self, *args, **kwargs: None})


def test_an_iterative_mechanism_runs_in_run_after_the_charge():
    seen = []

    class _Rounds(_NoisyMean):
        _draw_noise = PrivateMechanismMixin._draw_noise  # (the iterative form instead)

        def _run(self, params, data, statistics, noise):
            state = np.zeros_like(statistics)
            for _ in range(3):  # every round's release depends on the last one's
                seen.append(len(budget.ledger))
                state = noise.laplace(statistics + 0.5 * state, 2.0 / params.epsilon)
            return state

    budget = PrivacyBudget(5.0)
    est = _Rounds(budget=budget, random_state=0).fit(None, Y, sensitive_features=G)
    assert seen == [1, 1, 1] and est.sums_.shape == (2,)
    # the game of DPExponentiatedGradient and the search's trials are _run steps; their one-shot noise is not
    assert "_run" in vars(DPExponentiatedGradient) and "_draw_noise" not in vars(DPExponentiatedGradient)
    assert "_run" in vars(PrivateRandomSearch) and "_draw_noise" not in vars(PrivateRandomSearch)


# ------------------------------------------------------------------ the dry runs
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_planned_charge_and_check_release_say_the_ledger_entry_of_one_fit(name):
    make, fit, (x, y, g), _ = ESTIMATORS[name]
    budget = budget_for(name, 10.0, 1e-3)
    est = make(budget)
    planned = est.planned_charge()
    assert isinstance(planned, PlannedCharge) and planned.budget is budget
    kwargs = {} if g is None else {"sensitive_features": g}
    if name.startswith("ExponentialSelector"):
        checked = est.check_release(x)
    else:
        checked = est.check_release(x, y, **kwargs)
    assert checked == planned
    assert budget.ledger == () and not [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(est, x, y, g)
    own = budget.ledger[-1]  # (a private base model fitted inside charges first)
    assert (own.epsilon, own.delta, own.label, own.relation) == (
        planned.epsilon, planned.delta, planned.label, planned.relation)


class _CountingRegression(LinearRegression):
    fits: ClassVar[list[int]] = []

    def fit(self, X, y, sample_weight=None):
        self.fits.append(len(y))
        return super().fit(X, y, sample_weight)


def test_the_dry_run_fits_no_wrapped_model_and_refuses_what_fit_refuses():
    _CountingRegression.fits.clear()
    budget = PrivacyBudget(5.0)
    post = FairRegressionPostProcessor(_CountingRegression(), bounds=(0, 1), groups=["a", "b"], prefit=False,
                                       budget=budget, random_state=0)
    assert post.check_release(X, Y_REAL, sensitive_features=GROUPS).epsilon == 1.0
    assert _CountingRegression.fits == [] and budget.ledger == ()  # the wrapped fit is step 3's, not step 1's
    with pytest.raises(ValueError, match="groups"):
        post.check_release(X, Y_REAL, sensitive_features=np.where(GROUPS == "a", "c", GROUPS))
    with pytest.raises(ValueError, match="y must have one value per row"):
        post.check_release(X, Y_REAL[:-1], sensitive_features=GROUPS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post.fit(X, Y_REAL, sensitive_features=GROUPS)
    assert _CountingRegression.fits == [N] and len(budget.ledger) == 1


def test_the_dry_run_of_a_post_processor_runs_its_private_base_models_dry_run():
    base = DPLinearRegression(epsilon=0.5, data_norm=0.5, target_bound=1.0, mechanism="laplace", budget=PrivacyBudget(1.0))
    post = FairRegressionPostProcessor(base, bounds=(0, 1), groups=["a", "b"], prefit=False, budget=PrivacyBudget(1.0))
    with pytest.raises(ValueError, match=r"X, y: .*data_norm"):  # rows of norm up to sqrt(2) > data_norm=0.5
        post.check_release(X, Y_REAL, sensitive_features=GROUPS)
    assert base.budget.ledger == () and post.budget.ledger == ()
    assert post.set_params(estimator__data_norm=2.0).check_release(X, Y_REAL, sensitive_features=GROUPS).epsilon == 1.0


def test_check_release_leaves_the_estimator_as_it_was():
    est = DPExponentiatedGradient(epsilon=2.0, delta=1e-5, gamma=0.1, x_norm_bound=2.0, n_iter=3, groups=["a", "b"],
                                  random_state=0)
    est.check_release(X, (Y_REAL > 0.5).astype(int), sensitive_features=GROUPS)
    assert not hasattr(est, "n_features_in_")  # scikit-learn's validate_data set it while checking X: put back
    with pytest.raises(ValueError, match="outside the declared groups"):
        est.check_release(X, (Y_REAL > 0.5).astype(int), sensitive_features=np.where(GROUPS == "a", "z", GROUPS))


def test_the_search_checks_its_candidates_with_their_dry_run_before_its_charge(monkeypatch):
    calls = []
    real = PrivateEstimator.check_release

    def spy(self, *args, **kwargs):
        calls.append(type(self).__name__)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PrivateEstimator, "check_release", spy)
    budget = PrivacyBudget(10.0)
    base = DPLinearRegression(epsilon=0.5, data_norm=0.5, target_bound=1.0, mechanism="laplace")
    search = PrivateRandomSearch(FairRegressionPostProcessor(base, bounds=(0, 1), groups=["a", "b"], prefit=False),
                                 {"n_bins": [4, 8]}, scoring=PrivateMSEScorer((0, 1)), epsilon=3.0, budget=budget,
                                 random_state=0)
    with pytest.raises(ValueError, match=r"param_grid candidate .*data_norm"):  # the base refuses X, before the charge
        search.fit(X, Y_REAL, sensitive_features=GROUPS)
    assert budget.ledger == () and calls[:2] == ["FairRegressionPostProcessor", "DPLinearRegression"]
    import dpfair.model_selection._search as search_module

    assert not hasattr(search_module, "_ProbeBudget")  # no budget that raises a BaseException to stop a probe


# ------------------------------------------------------------------ one warning locator
def _leaks(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]


def _two_levels_deep():
    """A post-processor (one dpfair wrapper) fitting a private base model (a second) at epsilon = inf: the base's
    warning is raised two templates deep."""
    base = DPLinearRegression(epsilon=math.inf, data_norm=2.0, target_bound=1.0, random_state=0)
    FairRegressionPostProcessor(base, epsilon=math.inf, bounds=(0, 1), groups=["a", "b"], prefit=False,
                                random_state=0).fit(X, Y_REAL, sensitive_features=GROUPS)


def test_a_warning_two_dpfair_wrappers_deep_points_at_the_callers_file():
    leaks = _leaks(_two_levels_deep)
    messages = " | ".join(str(w.message) for w in leaks)
    assert "DPLinearRegression's coefficients" in messages and "post-processor" in messages
    assert {w.filename for w in leaks} == {HERE}, [(w.filename, w.lineno) for w in leaks]


def test_a_hand_counted_stack_level_is_caught(monkeypatch):
    """The mutant: a fixed level (what the literals were) points the inner warning into dpfair's own code."""
    import dpfair.privacy.leaks as leaks_module

    monkeypatch.setattr(leaks_module, "find_stack_level", lambda: 6)
    assert {w.filename for w in _leaks(_two_levels_deep)} != {HERE}


def test_a_bandit_policy_simulated_at_epsilon_inf_warns_at_the_callers_line():
    env = SyntheticGroupEnvironment(n_groups=3, dim=2, population_size=20, random_state=0)
    policy = PrivateFairGreedy(math.inf, 0.1, reward_bound=1.3, continual="tree")
    leaks = _leaks(lambda: simulate(env, {"p": policy}, 4, [0], engine="numpy"))
    assert leaks and {w.filename for w in leaks} == {HERE}  # (it once pointed at simulate.py)


def test_find_stack_level_counts_the_frames_inside_dpfair():
    assert _warnings.find_stack_level() == 1  # called from here: the caller's own frame
    assert _warnings.is_internal_file(_warnings.__file__) and not _warnings.is_internal_file(HERE)
    assert clone(_NoisyMean()).get_params()["scale"] == 1.0  # (a test-defined estimator is outside dpfair too)
