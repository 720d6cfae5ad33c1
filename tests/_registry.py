"""The registry of private classes: one instance (or builder) of every public private class and what it is fitted on.

Adding a private estimator is one entry here (CONTRIBUTING.md, "Checklists", step 3):
``tests/test_private_protocol.py`` feeds every entry each kind of refused input and checks the one charge, and
the scikit-learn contract tests take their private instances from :data:`CONTRACT`.  A public class of
``dpfair`` that takes ``epsilon`` or ``budget`` (or a ``*Scorer``) and has no entry fails
``test_every_public_private_class_is_in_the_registry``.

Tables (the keys are class names, ``Name[variant]`` for a second way to run a class):

* :data:`ESTIMATORS`: ``name -> (make(budget, **changes), fit(estimator, X, y, groups), (X, y, groups), refused
  parameter)`` -- estimators, the selector and the search;
* :data:`SCORERS`: ``name -> make()`` -- the private scorers of ``dpfair.model_selection``;
* :data:`ONLINE`: ``name -> (make(budget, **changes), one release(made, horizon=...), refused parameter)`` -- the
  bandit policies, the federated learner and the PRIVATIZER (one ``reset`` / ``simulate`` is one release);
* :data:`ANALYSES`, :data:`NOT_ESTIMATORS`, :data:`BUILDING_BLOCKS`: classes with an ``epsilon`` that are tested
  elsewhere or release nothing by themselves;
* :data:`CONTRACT`: ``name -> instance`` for the scikit-learn contract checks;
* :data:`EXTREMES`: ``name -> extremes(x, budget)`` for every :data:`ESTIMATORS` entry: the instance and the fit
  that one draw ``x`` of valid extremes (:class:`Extremes`) gives (``tests/property/test_registry_extremes_properties.py``).
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge

from dpfair import _layout
from dpfair.bandits import (
    FederatedSyntheticEnvironment,
    PrivateFairGreedy,
    Privatizer,
    PrivFairXLinUCB,
    SyntheticGroupEnvironment,
    simulate,
    simulate_federated,
)
from dpfair.classification import (
    DPBlindPostProcessor,
    DPEqualizedOddsPostProcessor,
    DPExponentiatedGradient,
    DPFairClassifier,
)
from dpfair.linear_model import DPLinearRegression, DPLogisticRegression
from dpfair.model_selection import (
    PrivateAccuracyScorer,
    PrivateEqualizedOddsScorer,
    PrivateKSScorer,
    PrivateMSEKSScorer,
    PrivateMSEScorer,
    PrivateRandomSearch,
)
from dpfair.preprocessing import DPMedianImputer, DPQuantileClipper
from dpfair.privacy import PrivacyBudget
from dpfair.regression import BlindFairRegressionPostProcessor, FairRegressionPostProcessor
from dpfair.selection import ExponentialSelector

#: the subpackages whose public classes the registry must cover: every one of ``dpfair._layout`` but the privacy
#: layer, whose budgets and mechanisms are the building blocks (tested in tests/privacy/), so a new subpackage
#: needs no line here
PACKAGES = tuple(name for name in _layout.subpackages() if name != "privacy")

RNG = np.random.default_rng(0)
N = 240
X = RNG.uniform(0, 1, size=(N, 2))
GROUPS = np.tile(["a", "b"], N // 2)
Y_BIN = (X[:, 0] + 0.3 * (GROUPS == "a") + RNG.normal(0, 0.2, N) > 0.7).astype(int)
Y_REAL = np.clip(X[:, 0] * 0.8 + RNG.normal(0, 0.05, N), 0, 1)
SCORES = RNG.uniform(0, 1, size=N)
#: the blind post-processor's model of P(A | x) (trained on other rows in real use)
MEMBERSHIP = LogisticRegression().fit(X, GROUPS)
REGRESSOR = LinearRegression().fit(X, Y_REAL)


# ------------------------------------------------------------------ estimators, the selector, the search
def _eo(budget, **kw):
    return DPEqualizedOddsPostProcessor(LogisticRegression().fit(X, Y_BIN), epsilon=2.0, groups=["a", "b"],
                                        budget=budget, random_state=0).set_params(**kw)


def _blind_classifier(budget, **kw):
    return DPBlindPostProcessor(LogisticRegression().fit(X, Y_BIN), epsilon=2.0, groups=["a", "b"], budget=budget,
                                random_state=0).set_params(**kw)


def _recommended(budget, **kw):
    return DPFairClassifier(epsilon=2.0, groups=["a", "b"], budget=budget, random_state=0).set_params(**kw)


def _eg(budget, **kw):
    return DPExponentiatedGradient(epsilon=2.0, delta=1e-5, gamma=0.1, x_norm_bound=2.0, n_iter=3, groups=["a", "b"],
                                   budget=budget, random_state=0).set_params(**kw)


def _frpp(budget, **kw):
    return FairRegressionPostProcessor(epsilon=2.0, bounds=(0, 1), groups=["a", "b"], budget=budget,
                                       random_state=0).set_params(**kw)


def _blind(budget, **kw):
    return BlindFairRegressionPostProcessor(REGRESSOR, MEMBERSHIP, epsilon=2.0, n_bins=8, bounds=(0, 1),
                                            groups=["a", "b"], budget=budget, random_state=0).set_params(**kw)


def _sel(budget, **kw):
    return ExponentialSelector(epsilon=1.0, n_select=3, score_bounds=(0, 1), budget=budget, random_state=0).set_params(**kw)


def _lin(budget, **kw):
    return DPLinearRegression(epsilon=2.0, data_norm=2.0, target_bound=1.0, budget=budget, random_state=0).set_params(**kw)


def _log(budget, **kw):
    return DPLogisticRegression(epsilon=2.0, data_norm=2.0, budget=budget, random_state=0).set_params(**kw)


#: the median imputer's rows: a declared marker (-1) for the missing entries, so that NaN stays a refused input
X_MISSING = X.copy()
X_MISSING[::7, 0] = -1.0


def _median(budget, **kw):
    return DPMedianImputer(epsilon=2.0, bounds=[(0, 1), (0, 1)], missing_values=-1.0, budget=budget,
                           random_state=0).set_params(**kw)


def _clipper(budget, **kw):
    return DPQuantileClipper(epsilon=2.0, bounds=[(0, 1), (0, 1)], budget=budget, random_state=0).set_params(**kw)


def _search(budget, **kw):
    est = FairRegressionPostProcessor(LinearRegression(), bounds=(0, 1), groups=["a", "b"], prefit=False)
    return PrivateRandomSearch(est, {"n_bins": [4, 8]}, scoring=PrivateMSEScorer((0, 1)), epsilon=2.0, budget=budget,
                               random_state=0).set_params(**kw)


def _search_private_base(budget, **kw):
    """A search over a post-processor that fits a private base model on the same rows (prefit=False)."""
    base = DPLinearRegression(epsilon=0.5, data_norm=2.0, target_bound=1.0, mechanism="laplace", random_state=0)
    est = FairRegressionPostProcessor(base, bounds=(0, 1), groups=["a", "b"], prefit=False)
    return PrivateRandomSearch(est, {"n_bins": [4, 8]}, scoring=PrivateMSEScorer((0, 1)), epsilon=3.0, budget=budget,
                               random_state=0).set_params(**kw)


#: The neighbouring relation of each class's guarantee where it is not "replace one row": its budgets are kept in
#: that relation (a replace-one-row budget refuses a change-one-attribute charge: their epsilons are not in the same unit).
RELATIONS = {"DPBlindPostProcessor": "change_attribute", "DPFairClassifier": "change_attribute",
             "DPEqualizedOddsPostProcessor": "change_attribute", "DPExponentiatedGradient": "change_attribute"}


def budget_for(name: str, epsilon: float, delta: float = 0.0) -> PrivacyBudget:
    """A budget kept in the neighbouring relation of ``name``'s guarantee."""
    return PrivacyBudget(epsilon, delta, neighbouring=RELATIONS.get(name, "replace"))


def _fit_xy_g(est, x, y, g):
    return est.fit(x, y, sensitive_features=g)


def _fit_xy(est, x, y, g):
    return est.fit(x, y)


def _fit_scores(est, x, y, g):
    return est.fit(x)


ESTIMATORS = {
    "DPEqualizedOddsPostProcessor": (_eo, _fit_xy_g, (X, Y_BIN, GROUPS), {"gamma": -1.0}),
    "DPExponentiatedGradient": (_eg, _fit_xy_g, (X, Y_BIN, GROUPS), {"gamma": -1.0}),
    "DPBlindPostProcessor": (_blind_classifier, _fit_xy_g, (X, Y_BIN, GROUPS), {"gamma": -1.0}),
    "DPFairClassifier": (_recommended, _fit_xy_g, (X, Y_BIN, GROUPS), {"protects": "nothing"}),
    "FairRegressionPostProcessor": (_frpp, _fit_xy_g, (Y_REAL, Y_REAL, GROUPS), {"n_bins": 0}),
    "BlindFairRegressionPostProcessor": (_blind, _fit_xy_g, (X, Y_REAL, GROUPS), {"membership_bins": 0}),
    "ExponentialSelector": (_sel, _fit_scores, (SCORES, None, None), {"n_select": 0}),
    "DPLinearRegression": (_lin, _fit_xy, (X, Y_REAL, None), {"alpha": -1.0}),
    "DPLogisticRegression": (_log, _fit_xy, (X, Y_BIN, None), {"C": -1.0}),
    "DPMedianImputer": (_median, _fit_xy, (X_MISSING, Y_REAL, None), {"bounds": (1.0, 0.0)}),
    "DPQuantileClipper": (_clipper, _fit_xy, (X, Y_REAL, None), {"quantile": 0.7}),
    "PrivateRandomSearch": (_search, _fit_xy_g, (X, Y_REAL, GROUPS), {"validation_fraction": 1.5}),
    "PrivateRandomSearch[private base]": (_search_private_base, _fit_xy_g, (X, Y_REAL, GROUPS),
                                          {"param_grid": {"n_bins": [0]}}),
}
SCORERS = {
    "PrivateMSEScorer": lambda: PrivateMSEScorer((0, 1)),
    "PrivateKSScorer": lambda: PrivateKSScorer((0, 1), groups=["a", "b"]),
    "PrivateMSEKSScorer": lambda: PrivateMSEKSScorer((0, 1), groups=["a", "b"]),
    "PrivateAccuracyScorer": lambda: PrivateAccuracyScorer(),
    "PrivateEqualizedOddsScorer": lambda: PrivateEqualizedOddsScorer(groups=["a", "b"]),
}
ANALYSES = {"PrivateMetricFrame"}  # computes in its constructor: tested below
NOT_ESTIMATORS = {"SearchCost", "SearchPayoff"}  # a cost description, a search's handicap (epsilon is its output), no data


# ------------------------------------------- online releases (they charge the default ledger like any estimator)
GMF_ENV = SyntheticGroupEnvironment(n_groups=3, dim=2, population_size=20, random_state=0)
FED_ENV = FederatedSyntheticEnvironment(dim=2, n_actions=3)


def _pfg(budget, **kw):
    return PrivateFairGreedy(1.0, 0.1, reward_bound=1.3, budget=budget, random_state=0).set_params(**kw)


def _pfx(budget, **kw):
    return PrivFairXLinUCB(2.0, 0.1, context_bound=math.sqrt(2), budget=budget, random_state=0).set_params(**kw)


def _reset_pfg(policy, horizon=8):
    return policy.reset(3, 2, horizon)


def _simulate_pfg(policy, horizon=8):
    simulate(GMF_ENV, {"p": policy}, horizon, [0, 1])
    return policy


def _reset_pfx(learner, horizon=8):
    return learner.reset(3, 2, horizon, n_agents=2, agent=1)


def _simulate_pfx(learner, horizon=8):
    simulate_federated(FED_ENV, {"p": learner}, horizon, 2, [0])
    return learner


def _privatizer(budget, **kw):
    """The PRIVATIZER on its own: its release is its construction (the charge), with ``n_releases`` trees' worth."""
    args = {"epsilon": 2.0, "delta": 0.1, "context_bound": 1.0, "dim": 2, "batch_shape": (2,), "random_state": 0, **kw}
    return lambda horizon: Privatizer(**args, n_releases=horizon, budget=budget)


def _build_privatizer(make, horizon=8):
    return make(horizon)


ONLINE = {
    "Privatizer": (_privatizer, _build_privatizer, {"tree_keys": np.zeros(3, dtype=np.uint64)}),
    "PrivateFairGreedy": (_pfg, _reset_pfg, {"budget_split": 1.5}),
    "PrivateFairGreedy[simulate]": (_pfg, _simulate_pfg, {"context_bound": 0.5}),
    "PrivFairXLinUCB": (_pfx, _reset_pfx, {"noise_calibration": "nope"}),
    "PrivFairXLinUCB[simulate_federated]": (_pfx, _simulate_pfx, {"context_bound": 1.0}),
}
#: public classes of dpfair.bandits that take epsilon but release nothing by themselves: their learner charges
#: (the PRIVATIZER charges when used on its own, and its learners create it inside their own charged release)
BUILDING_BLOCKS: set[str] = set()


# ------------------------------------------------------------------ valid inputs at their extremes
@dataclass(frozen=True)
class Extremes:
    """One draw of valid extremes: ``epsilon`` from 1e-300 to 1e300 and ``inf``, a declared range ``bounds`` from
    tiny to the whole float range, one to three declared groups ``list(range(n_groups))`` (one may have no row),
    and as few as one row (per group)."""

    epsilon: float
    bounds: tuple[float, float]
    n_groups: int
    n_rows: int
    seed: int

    @property
    def groups(self) -> list[int]:
        return list(range(self.n_groups))

    @property
    def magnitude(self) -> float:
        """The largest ``|value|`` inside ``bounds`` (finite): a norm bound for rows scaled by it."""
        return max(abs(self.bounds[0]), abs(self.bounds[1]))

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(X, y, y_binary, g)``: features in ``[0, 1]^2``, targets inside ``bounds``, labels (both classes when
        there are two rows), each row's group."""
        rng = np.random.default_rng(self.seed)
        low, high = self.bounds
        u = rng.uniform(size=self.n_rows)
        y = np.clip((1.0 - u) * low + u * high, low, high)  # finite even where high - low is not
        y_bin = (np.arange(self.n_rows) + rng.integers(0, 2)) % 2
        return rng.uniform(0, 1, (self.n_rows, 2)), y, y_bin, rng.integers(0, self.n_groups, self.n_rows)


class Extreme(NamedTuple):
    """What an ``EXTREMES`` factory returns: the instance, how it is fitted, its released output and the declared
    range that output must lie in (``None``: finite is all)."""

    estimator: Any
    fit: Callable[[Any], Any]
    output: Callable[[Any], Any]
    bounds: tuple[float, float] | None = None


#: a public model of P(y | x) for the classification post-processors (trained on other rows in real use)
CLASSIFIER = LogisticRegression().fit(X, Y_BIN)


def _x_eo(x, budget):
    X_, _, yb, g = x.rows()
    est = DPEqualizedOddsPostProcessor(CLASSIFIER, epsilon=x.epsilon, groups=x.groups, budget=budget, random_state=0)
    return Extreme(est, lambda e: e.fit(X_, yb, sensitive_features=g),
                   lambda e: e.predict_proba(X_, sensitive_features=g), (0.0, 1.0))


def _x_eg(x, budget):
    X_, _, yb, g = x.rows()
    X_ = X_ * (x.magnitude / 2.0)  # row norms up to the declared x_norm_bound
    est = DPExponentiatedGradient(epsilon=x.epsilon, delta=1e-5, gamma=0.1, x_norm_bound=x.magnitude, n_iter=2,
                                  groups=x.groups, budget=budget, random_state=0)
    return Extreme(est, lambda e: e.fit(X_, yb, sensitive_features=g), lambda e: e.predict(X_), (0.0, 1.0))


def _x_blind_classifier(x, budget):
    X_, _, yb, g = x.rows()
    est = DPBlindPostProcessor(CLASSIFIER, epsilon=x.epsilon, groups=x.groups, budget=budget, random_state=0)
    return Extreme(est, lambda e: e.fit(X_, yb, sensitive_features=g), lambda e: e.predict_proba(X_), (0.0, 1.0))


def _x_recommended(x, budget):
    X_, _, yb, g = x.rows()
    est = DPFairClassifier(epsilon=x.epsilon, groups=x.groups, budget=budget, random_state=0)
    return Extreme(est, lambda e: e.fit(X_, yb, sensitive_features=g),
                   lambda e: e.predict_proba(X_, sensitive_features=g), (0.0, 1.0))


def _x_frpp(x, budget):
    _, y, _, g = x.rows()
    est = FairRegressionPostProcessor(epsilon=x.epsilon, n_bins=4, bounds=x.bounds, groups=x.groups, budget=budget,
                                      random_state=0)
    return Extreme(est, lambda e: e.fit(y, sensitive_features=g),
                   lambda e: e.predict(y, sensitive_features=g, random_state=1), x.bounds)


def _x_blind(x, budget):
    _, y, _, g = x.rows()
    membership = np.random.default_rng(x.seed).exponential(1.0, (x.n_rows, x.n_groups))
    X_ = np.column_stack([y, membership]) if x.n_groups > 1 else y
    est = BlindFairRegressionPostProcessor(epsilon=x.epsilon, n_bins=4, membership_bins=2, bounds=x.bounds,
                                           groups=x.groups, budget=budget, random_state=0)
    return Extreme(est, lambda e: e.fit(X_, sensitive_features=g), lambda e: e.predict(X_, random_state=1), x.bounds)


def _x_sel(x, budget):
    _, y, _, _ = x.rows()
    est = ExponentialSelector(epsilon=x.epsilon, n_select=1, score_bounds=x.bounds, budget=budget, random_state=0)
    return Extreme(est, lambda e: e.fit(y), lambda e: e.selected_, (0, x.n_rows - 1))


def _x_lin(x, budget):
    X_, y, _, _ = x.rows()
    X_ = X_ * (x.magnitude / 2.0)
    est = DPLinearRegression(epsilon=x.epsilon, data_norm=x.magnitude, target_bound=x.bounds, budget=budget,
                             random_state=0)
    return Extreme(est, lambda e: e.fit(X_, y), lambda e: e.predict(X_))


def _x_log(x, budget):
    X_, _, yb, _ = x.rows()
    X_ = X_ * (x.magnitude / 2.0)
    est = DPLogisticRegression(epsilon=x.epsilon, data_norm=x.magnitude, budget=budget, random_state=0)
    return Extreme(est, lambda e: e.fit(X_, yb), lambda e: e.predict_proba(X_), (0.0, 1.0))


def _x_median(x, budget):
    _, y, _, _ = x.rows()
    X_ = np.column_stack([y, y[::-1]])
    X_[::3, 0] = np.nan  # missing entries
    est = DPMedianImputer(epsilon=x.epsilon, bounds=x.bounds, budget=budget, random_state=0)
    return Extreme(est, lambda e: e.fit(X_), lambda e: e.transform(X_), x.bounds)


def _x_clipper(x, budget):
    _, y, _, _ = x.rows()
    X_ = np.column_stack([y, y[::-1]])
    est = DPQuantileClipper(epsilon=x.epsilon, bounds=x.bounds, budget=budget, random_state=0)
    return Extreme(est, lambda e: e.fit(X_), lambda e: e.transform(X_), x.bounds)


def _x_search(x, budget, base=None):
    X_, y, _, g = x.rows()
    inner = FairRegressionPostProcessor(base if base is not None else LinearRegression(), bounds=x.bounds,
                                        groups=x.groups, prefit=False)
    est = PrivateRandomSearch(inner, {"n_bins": [2, 4]}, scoring=PrivateMSEScorer(x.bounds), epsilon=x.epsilon,
                              mean_trials=2.0, budget=budget, random_state=0)
    return Extreme(est, lambda e: e.fit(X_, y, sensitive_features=g),
                   lambda e: e.predict(X_, sensitive_features=g), x.bounds)


def _x_search_private_base(x, budget):
    base = DPLinearRegression(epsilon=x.epsilon / 4.0, data_norm=2.0, target_bound=x.bounds, mechanism="laplace",
                              random_state=0)
    return _x_search(x, budget, base)


EXTREMES: dict[str, Callable[[Extremes, PrivacyBudget], Extreme]] = {
    "DPEqualizedOddsPostProcessor": _x_eo,
    "DPExponentiatedGradient": _x_eg,
    "DPBlindPostProcessor": _x_blind_classifier,
    "DPFairClassifier": _x_recommended,
    "FairRegressionPostProcessor": _x_frpp,
    "BlindFairRegressionPostProcessor": _x_blind,
    "ExponentialSelector": _x_sel,
    "DPLinearRegression": _x_lin,
    "DPLogisticRegression": _x_log,
    "DPMedianImputer": _x_median,
    "DPQuantileClipper": _x_clipper,
    "PrivateRandomSearch": _x_search,
    "PrivateRandomSearch[private base]": _x_search_private_base,
}

#: Entries whose extremes test fails today, with the defect it found (the test is a strict xfail: fixing the
#: defect makes it pass, and then the line must go).
EXTREMES_XFAIL: dict[str, str] = {
}
#: entries whose 27 fits take over ~2 s (marked ``slow``)
EXTREMES_SLOW = {"DPFairClassifier", "PrivateRandomSearch", "PrivateRandomSearch[private base]"}


# ------------------------------------------------------------------ the scikit-learn contract's instances
#: A large epsilon and wide declared bounds: the checks fit on their own random data (rows of norm up to a few
#: thousand) and test the private code path (noise drawn, PSD repair), not the noise's size.  The
#: post-processors wrap a Ridge fitted inside fit (prefit=False), so the checks can call fit(X, y) on any X, and
#: declare a single group so that sensitive_features may be omitted.
CONTRACT = {
    "DPFairClassifier": DPFairClassifier(epsilon=50.0, groups=["all"], random_state=0),
    "DPBlindPostProcessor": DPBlindPostProcessor(LogisticRegression(), prefit=False, epsilon=50.0, groups=["all"],
                                                 random_state=0),
    "DPLinearRegression": DPLinearRegression(epsilon=1e12, data_norm=1e4, target_bound=1e4, alpha=1e-3,
                                             mechanism="laplace", random_state=0),
    "DPLogisticRegression": DPLogisticRegression(epsilon=1e6, data_norm=1e4, C=1.0, random_state=0),
    "DPMedianImputer": DPMedianImputer(epsilon=1e6, bounds=(-1e4, 1e4), random_state=0),
    "DPQuantileClipper": DPQuantileClipper(epsilon=1e6, bounds=(-1e4, 1e4), random_state=0),
    "FairRegressionPostProcessor": FairRegressionPostProcessor(
        Ridge(), epsilon=50.0, n_bins=400, bounds=(-10.0, 10.0), groups=["all"], prefit=False, random_state=0),
    "BlindFairRegressionPostProcessor": BlindFairRegressionPostProcessor(
        Ridge(), epsilon=50.0, n_bins=400, bounds=(-10.0, 10.0), groups=["all"], prefit=False, random_state=0),
    "PrivateRandomSearch": PrivateRandomSearch(
        FairRegressionPostProcessor(Ridge(), n_bins=400, bounds=(-10.0, 10.0), groups=["all"], prefit=False),
        {"alpha": [0.0, 0.1]}, scoring=PrivateMSEScorer((-10.0, 10.0)), epsilon=300.0, mean_trials=3.0, random_state=0),
    "PrivateFairGreedy": PrivateFairGreedy(3.0, 1e-3, budget_split=0.4, context_bound=2.0, reward_bound=4.0,
                                           random_state=3),
    "PrivFairXLinUCB": PrivFairXLinUCB(1.0, 0.05, math.sqrt(5), "log-det", sync_threshold=10.0, random_state=0),
}


#: For a CONTRACT class checked by ``tests/test_sklearn_contract.py`` (one without a contract file of its own):
#: ``name -> {check name: why it cannot apply}``.
CONTRACT_EXPECTED_FAILED: dict[str, dict[str, str]] = {}


def contract_instances(*names: str) -> list:
    """Fresh copies of the :data:`CONTRACT` instances of ``names``, in that order (the tests may fit them)."""
    from sklearn.base import clone

    return [clone(CONTRACT[name]) for name in names]


def registered_names() -> set[str]:
    """Every class name the registry covers (variants folded onto their class)."""
    keys = {*ESTIMATORS, *SCORERS, *ONLINE}
    return {key.split("[")[0] for key in keys} | ANALYSES | NOT_ESTIMATORS | BUILDING_BLOCKS


def public_private_classes(packages: tuple[str, ...] = PACKAGES) -> dict[str, type]:
    """``{"dpfair.package.Name": class}`` of every public class that takes ``epsilon`` or ``budget``, or is a scorer."""
    found = {}
    for package in packages:
        module = importlib.import_module(f"dpfair.{package}")
        for name in module.__all__:
            obj = getattr(module, name)
            if not inspect.isclass(obj):
                continue
            parameters = inspect.signature(obj.__init__).parameters
            if "epsilon" in parameters or "budget" in parameters or name.endswith("Scorer"):
                found[f"dpfair.{package}.{name}"] = obj
    return found
