"""One private-estimator protocol: privacy parameters declared once, one release template, typed stages.

A private class declares its privacy parameters once, in the spirit of scikit-learn's
``_parameter_constraints``::

    _privacy_parameters = {"epsilon": "epsilon", "delta": "delta", "bounds": "bounds",
                           "groups": "groups", "budget": "budget", "random_state": "random_state"}

(parameter name -> role; the roles are :data:`ROLES`).  The template :meth:`PrivateMechanismMixin._release`
then runs the one pipeline of the estimator contract (``CONTRIBUTING.md``, rules 7-9):

1. ``_validate_all``: every declared privacy parameter by its role, the subclass's other parameters
   (:meth:`~PrivateMechanismMixin._validate_params`, returned as a frozen :class:`ValidatedOptions`) and the
   data (:meth:`~PrivateMechanismMixin._validate_data`, returned as a frozen :class:`ValidatedData`);
2. resolve the declared groups (:func:`dpfair._estimator.resolve_groups`) into ``data.groups`` and
   ``data.group_index``;
3. :meth:`~PrivateMechanismMixin._compute_statistics` (exact statistics, no noise available);
4. charge the budget once (:func:`dpfair._estimator.charge_budget`), done by the template only;
5. :meth:`~PrivateMechanismMixin._run`, which receives the noise source, created only after the charge:
   by default :meth:`~PrivateMechanismMixin._draw_noise` (privatise the statistics in one go); an iterative
   mechanism that interleaves noise and computation (a game, a search's trials) overrides ``_run`` instead;
6. :meth:`~PrivateMechanismMixin._solve` (post-processing of the noisy statistics);
7. the result, with ``privacy_spent_``; :class:`PrivateEstimator` sets the fitted attributes only
   here, so nothing fitted is left, and earlier fitted state is unchanged, if any step raises.

Subclasses fill steps 1, 3, 5 and 6; they cannot override the template nor the charge
(:meth:`~PrivateMechanismMixin.__init_subclass__` refuses it), and the noise source is handed to them only
after the charge.

The stages are typed: the template passes frozen dataclasses, never dicts, so that a misspelt field is an
``AttributeError`` where it is written, not a ``KeyError`` (or a silent default) steps later.
:class:`PrivacyParameters` carries the validated privacy parameters and the class's :class:`ValidatedOptions`
subclass (``params.options``); :class:`ValidatedData` carries the fields the template itself reads
(``n_rows``, ``sensitive_features``) and fills (``groups``, ``group_index``), and each class adds its own
fields in a subclass.  A step that returns a dict where a stage is expected raises ``TypeError`` naming the
class and the fix.

Two public dry runs say what one release would charge without fitting anything, drawing any noise or
touching a budget: :meth:`PrivateMechanismMixin.planned_charge` (from the parameters alone) and
:meth:`PrivateEstimator.check_release` (the parameters and the data: steps 1 and 2 of the template, whose
refusals of an argument or of the data it raises as ``fit`` would; a refusal that needs the exact statistics of
step 3, or a wrapped model fitted there, comes only from ``fit``).  Both return a :class:`PlannedCharge`; a
private search checks its candidates with them before its one charge.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from dpfair._estimator import (
    as_sensitive_features,
    charge_budget,
    check_groups_declared,
    noise_kind,
    privacy_spent,
    resolve_groups,
    single_group_rows,
    warn_non_private,
    warn_seeded_noise,
)
from dpfair._validation import check_bounds, check_delta, check_epsilon
from dpfair.privacy.budget import PrivacyBudget, charged_release, check_budget, inside_charged_release
from dpfair.privacy.noise import NoiseSource, check_random_state, get_noise_source
from dpfair.privacy.relations import REPLACE, check_relation

#: The feature attributes scikit-learn's ``validate_data`` sets on an estimator while it checks ``X``.
_FEATURE_ATTRIBUTES = ("n_features_in_", "feature_names_in_")

__all__ = [
    "ROLES",
    "PlannedCharge",
    "PrivacyParameters",
    "PrivateEstimator",
    "PrivateMechanismMixin",
    "ValidatedData",
    "ValidatedOptions",
]

#: The roles a declared privacy parameter may have.
ROLES = ("epsilon", "delta", "bounds", "groups", "budget", "random_state")

#: Methods of the template that no subclass may redefine.
_FINAL = ("_release", "_validate_all", "_charge", "_validate_privacy_parameters", "_validate_every_parameter",
          "_resolve_declared_groups", "_set_fitted", "planned_charge", "_planned", "check_release", "_dry_run")


@dataclass(frozen=True, eq=False)
class ValidatedOptions:
    """What :meth:`PrivateMechanismMixin._validate_params` returns: a class's other parameters, validated.

    Each class that has such parameters subclasses it with one typed field per parameter (a frozen
    dataclass); a class without any uses this empty base.
    """


@dataclass(frozen=True)
class PrivacyParameters:
    """The validated privacy parameters of one release.

    Parameters
    ----------
    epsilon : float
        Privacy loss parameter (``inf`` for a non-private release).
    delta : float
        Failure probability (0 for pure DP).
    bounds : tuple of float or None
        The declared ``(low, high)``, or ``None`` when the class declares none.
    groups : object
        The caller's declaration of the groups, unchanged (resolved in step 2).
    budget : PrivacyBudget or None
        The budget to charge.
    random_state : object
        The noise seed (``None``: the secure source), as declared or overridden for this release.
    options : ValidatedOptions
        What :meth:`PrivateMechanismMixin._validate_params` returned (the class's other parameters).
    plan : object
        What :meth:`PrivateMechanismMixin._plan_release` returned for this release's validated data (``None``
        when the class plans nothing, and in :meth:`~PrivateMechanismMixin.planned_charge`, which has no data).
    """

    epsilon: float = math.inf
    delta: float = 0.0
    bounds: tuple[float, float] | None = None
    groups: Any = None
    budget: Any = None
    random_state: Any = None
    options: ValidatedOptions = ValidatedOptions()
    plan: Any = None


@dataclass(frozen=True, eq=False, kw_only=True)
class ValidatedData:
    """What :meth:`PrivateMechanismMixin._validate_data` returns: the validated data of one release (step 1).

    A class subclasses it (a frozen, keyword-only dataclass) with a typed field for each of its own arrays;
    the fields below are the template's.

    Parameters
    ----------
    n_rows : int or None, default None
        The number of rows; required when the class declares ``groups`` (the template maps each row to one).
    sensitive_features : object, default None
        Each row's raw group label, as given (``None``: one declared group, every row in it).
    groups : ndarray or None, default None
        The declared groups, in order; filled by the template (step 2) for a class that declares ``groups``.
    group_index : ndarray of int64 or None, default None
        Each row's position in ``groups``; filled by the template (step 2).
    """

    n_rows: int | None = None
    sensitive_features: Any = None
    groups: np.ndarray | None = None
    group_index: np.ndarray | None = None


@dataclass(frozen=True)
class PlannedCharge:
    """What one release would charge, said before it runs (:meth:`PrivateMechanismMixin.planned_charge`).

    Parameters
    ----------
    epsilon, delta : float
        The charge (``delta = 0`` for pure DP; ``epsilon = inf`` for a non-private release).
    relation : str
        The neighbouring relation of the guarantee, a key of :mod:`dpfair.privacy.relations`: the budget
        converts the charge into its own relation or refuses it.
    label : str
        The ledger's label of the charge.
    budget : PrivacyBudget or None
        The budget it would be charged to (``None``: the process-wide ledger, if one is set).  It is not
        touched.
    """

    epsilon: float
    delta: float
    relation: str
    label: str
    budget: PrivacyBudget | None = None


class PrivateMechanismMixin:
    """Mixin for private mechanisms that are not estimators (selectors, scorers, the search).

    A subclass sets these class attributes: ``_privacy_parameters`` (parameter name -> role, one of
    :data:`ROLES`; each name is an attribute of the object), ``_privacy_protects`` and
    ``_privacy_neighbouring`` (the words of ``privacy_spent_``), ``_privacy_relation`` (the same relation as
    a key of :mod:`dpfair.privacy.relations`: what the budget converts or refuses) and, optionally,
    ``_privacy_label`` (the label of the budget charge; the class name when ``None``).
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {}
    _privacy_protects: ClassVar[str] = "every row"
    _privacy_neighbouring: ClassVar[str] = "replace one row"
    _privacy_relation: ClassVar[str] = REPLACE
    _privacy_label: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in _FINAL:
            if name in vars(cls) and cls.__module__ != __name__:  # PrivateEstimator defines _set_fitted
                raise TypeError(
                    f"{cls.__name__} redefines {name}, a step of the one release template of dpfair.base; "
                    "fill _validate_params, _validate_data, _compute_statistics, _draw_noise (or _run) and _solve "
                    "instead."
                )
        if cls._run is not PrivateMechanismMixin._run and cls._draw_noise is not PrivateMechanismMixin._draw_noise:
            raise TypeError(
                f"{cls.__name__} fills both _draw_noise and _run: fill _draw_noise for a mechanism that privatises its "
                "statistics in one go, or _run for one that interleaves noise and computation, not both."
            )
        unknown = {role for role in cls._privacy_parameters.values() if role not in ROLES}
        if unknown:
            raise TypeError(f"{cls.__name__}._privacy_parameters uses unknown role(s) {sorted(unknown)}; use {ROLES}.")
        check_relation(cls._privacy_relation, f"{cls.__name__}._privacy_relation")

    # ------------------------------------------------------------------ steps a subclass fills
    def _validate_params(self) -> ValidatedOptions:
        """Validate the parameters that are not privacy parameters; return them as a :class:`ValidatedOptions`.

        Raise ``ValueError`` / ``TypeError`` naming the argument and the fix.  Nothing is charged yet.
        """
        return ValidatedOptions()

    def _validate_data(self, params: PrivacyParameters, *data: Any, **metadata: Any) -> ValidatedData:
        """Validate the data; return it as the class's :class:`ValidatedData`.

        Set ``n_rows`` and ``sensitive_features`` (the raw labels, or ``None``) when the class declares
        ``groups``: the template resolves them into ``groups`` (declared labels) and ``group_index`` (each
        row's group number).  A value outside a declared bound raises.  Nothing may be fitted here (it is
        also the dry run, :meth:`PrivateEstimator.check_release`).
        """
        raise NotImplementedError(f"{type(self).__name__} must define _validate_data")

    def _plan_release(self, params: PrivacyParameters, data: ValidatedData) -> Any:
        """The part of the release that depends on the validated data's public sizes, or ``None`` (the default).

        A class whose charge depends on more than its parameters (Priv-FairX-LinUCB: on the run's horizon, agents
        and dimension) returns it here; the template puts it in ``params.plan`` after step 2, so that the charge's
        hooks (:meth:`_privacy_cost`, :meth:`_charge_label`, :meth:`_release_subject`, :meth:`_warn_non_private`)
        read it from their argument, never from state kept on the object.
        """
        return None

    def _compute_statistics(self, params: PrivacyParameters, data: ValidatedData) -> Any:
        """Exact (not yet private) statistics of ``data``; no noise is available here."""
        raise NotImplementedError(f"{type(self).__name__} must define _compute_statistics")

    def _privacy_cost(self, params: PrivacyParameters) -> tuple[float, float]:
        """What one release charges; ``(epsilon, delta)`` by default."""
        return params.epsilon, params.delta

    def _charge_label(self, params: PrivacyParameters) -> str:
        """The ledger's label of the one charge: ``_privacy_label``, else the class name.

        Override it when the label depends on validated parameters (``params.options``).
        """
        return self._privacy_label or type(self).__name__

    def _declared_relation(self) -> str:
        """The neighbouring relation one release will hold under, from the parameters alone (a dry run).

        ``_privacy_relation`` by default; override it when the relation depends on the parameters (a
        post-processor whose own step holds under replacement only when its base model is private).
        Containers (a search) read it before they charge.
        """
        return self._privacy_relation

    def _charge_relation(self, params: PrivacyParameters) -> str:
        """The neighbouring relation of this release's guarantee (:meth:`_declared_relation` by default).

        The budget converts the charge into its own relation or refuses it (:mod:`dpfair.privacy.relations`).
        """
        return self._declared_relation()

    def _release_subject(self, params: PrivacyParameters) -> str:
        """What the seeded-noise warning of step 4 names: the class and its epsilon by default.

        Override it to name the release more precisely (one learner of a simulation, one agent).
        """
        return f"{type(self).__name__} (epsilon={params.epsilon:g})"

    def _draw_noise(self, params: PrivacyParameters, statistics: Any, noise: NoiseSource) -> Any:
        """Privatise ``statistics`` with ``noise`` in one go (called by :meth:`_run`, only after the charge)."""
        raise NotImplementedError(f"{type(self).__name__} must define _draw_noise (or _run)")

    def _run(self, params: PrivacyParameters, data: ValidatedData, statistics: Any, noise: NoiseSource) -> Any:
        """Step 5: everything that uses ``noise`` (called only after the charge); its result goes to :meth:`_solve`.

        By default the one-shot :meth:`_draw_noise` of ``statistics``.  An iterative mechanism, whose noise and
        computation interleave (each round's release depends on the previous rounds' released values), overrides
        ``_run`` instead of ``_draw_noise``; it runs inside :func:`~dpfair.privacy.budget.charged_release`, so
        the mechanisms it calls charge no ledger again and warn no second time.
        """
        return self._draw_noise(params, statistics, noise)

    def _solve(self, params: PrivacyParameters, noisy: Any, data: ValidatedData) -> dict[str, Any]:
        """Post-process the noisy statistics; return the results by name (fitted attributes end in ``_``)."""
        raise NotImplementedError(f"{type(self).__name__} must define _solve")

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        """Raise the :class:`~dpfair.privacy.PrivacyLeakWarning` of an ``epsilon = inf`` release.

        Called by the template, before any statistic is computed, only when ``params.epsilon`` is
        infinite; override it to name what is released.  The warning points at the user's line
        (:func:`dpfair._warnings.find_stack_level`).
        """
        warn_non_private(params.epsilon, f"the release of {type(self).__name__}", estimator=self)

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        """The ``privacy_spent_`` of this release (override to compose it with a private base model's)."""
        epsilon, delta = self._privacy_cost(params)
        return privacy_spent(epsilon, delta, protects=self._privacy_protects, neighbouring=self._privacy_neighbouring,
                             relation=self._charge_relation(params))

    # ------------------------------------------------------------------ the dry runs (final)
    def planned_charge(self) -> PlannedCharge:
        """What one release would charge, from the parameters alone: nothing is fitted, drawn or charged.

        Every privacy parameter is validated by its role and the other parameters by the class's own rules,
        as a release validates them first; the data are not needed (see
        :meth:`PrivateEstimator.check_release` for the dry run that checks them too).

        Returns
        -------
        PlannedCharge
            ``epsilon``, ``delta``, the neighbouring ``relation``, the ledger's ``label`` and the ``budget``.

        Raises
        ------
        ValueError, TypeError
            If a parameter is invalid (the message names it), as the release would raise.
        """
        return self._planned(self._validate_every_parameter())

    def _planned(self, params: PrivacyParameters) -> PlannedCharge:
        epsilon, delta = self._privacy_cost(params)
        return PlannedCharge(epsilon=epsilon, delta=delta,
                             relation=check_relation(self._charge_relation(params), "_charge_relation"),
                             label=self._charge_label(params), budget=params.budget)

    def _dry_run(self, *data: Any, **metadata: Any) -> PlannedCharge:
        """Steps 1 and 2 of the template on ``data`` (every check of a release), then its planned charge."""
        params, _ = self._validate_all(*data, **metadata)
        return self._planned(params)

    # ------------------------------------------------------------------ the template (final)
    def _privacy_value(self, role: str, default: Any = None) -> Any:
        for name, declared_role in self._privacy_parameters.items():
            if declared_role == role:
                return getattr(self, name)
        return default

    def _privacy_name(self, role: str) -> str:
        for name, declared_role in self._privacy_parameters.items():
            if declared_role == role:
                return name
        return role

    def _validate_privacy_parameters(self, overrides: dict[str, Any] | None = None) -> PrivacyParameters:
        overrides = {role: value for role, value in (overrides or {}).items() if value is not None}
        unknown = set(overrides) - {"budget", "random_state"}
        if unknown:
            raise TypeError(f"only budget and random_state may be given for one release, not {sorted(unknown)}")
        roles = set(self._privacy_parameters.values())
        epsilon = check_epsilon(self._privacy_value("epsilon"), self._privacy_name("epsilon")) if "epsilon" in roles else math.inf
        delta = check_delta(self._privacy_value("delta"), self._privacy_name("delta")) if "delta" in roles else 0.0
        bounds = check_bounds(self._privacy_value("bounds"), self._privacy_name("bounds")) if "bounds" in roles else None
        budget = overrides.get("budget", self._privacy_value("budget"))
        budget = check_budget(budget, self._privacy_name("budget")) if "budget" in roles or "budget" in overrides else None
        random_state = overrides.get("random_state", self._privacy_value("random_state"))
        check_random_state(random_state)
        groups = self._privacy_value("groups")
        if "groups" in roles:
            check_groups_declared(groups, epsilon, self._privacy_name("groups"))
        return PrivacyParameters(epsilon=epsilon, delta=delta, bounds=bounds, groups=groups, budget=budget,
                                 random_state=random_state)

    def _validate_every_parameter(self, privacy_overrides: dict[str, Any] | None = None) -> PrivacyParameters:
        """The privacy parameters by their roles, then the class's other parameters: every check that needs no data."""
        params = self._validate_privacy_parameters(privacy_overrides)
        options = self._validate_params()
        if not isinstance(options, ValidatedOptions):
            raise TypeError(
                f"{type(self).__name__}._validate_params returned a {type(options).__name__}; return a frozen "
                "dataclass subclassing dpfair.base.ValidatedOptions (one typed field per parameter)."
            )
        return replace(params, options=options)

    def _validate_all(
        self, *data: Any, privacy_overrides: dict[str, Any] | None = None, **metadata: Any
    ) -> tuple[PrivacyParameters, ValidatedData]:
        """Steps 1 and 2: every argument, then the data, then the groups.  Returns ``(params, data)``; charges nothing.

        ``privacy_overrides`` may give this release's own ``budget`` / ``random_state`` (by role;
        ``None`` values keep the declared ones), as :meth:`ExponentialSelector.select` does.
        """
        params = self._validate_every_parameter(privacy_overrides)
        validated = self._validate_data(params, *data, **metadata)
        if not isinstance(validated, ValidatedData):
            raise TypeError(
                f"{type(self).__name__}._validate_data returned a {type(validated).__name__}; return a frozen "
                "dataclass subclassing dpfair.base.ValidatedData (the template's fields and the class's own, typed)."
            )
        if "groups" in self._privacy_parameters.values() and validated.group_index is None:
            # (a subclass that had to resolve them earlier returns them already)
            validated = self._resolve_declared_groups(params, validated)
        plan = self._plan_release(params, validated)
        if plan is not None:
            params = replace(params, plan=plan)
        return params, validated

    def _resolve_declared_groups(self, params: PrivacyParameters, data: ValidatedData) -> ValidatedData:
        """Step 2: map rows to the declared groups (ValueError for an undeclared label); ``data`` with them filled."""
        if data.n_rows is None:
            raise TypeError(
                f"{type(self).__name__}._validate_data left n_rows unset: a class that declares groups sets the number "
                "of rows (and sensitive_features) of its ValidatedData, so that the template can map each row."
            )
        n_rows = int(data.n_rows)
        if data.sensitive_features is None:
            declared, index = single_group_rows(params.groups, n_rows, params.epsilon, type(self).__name__)
        else:
            values = as_sensitive_features(data.sensitive_features, n_rows)
            declared, index = resolve_groups(params.groups, values, params.epsilon, name=self._privacy_name("groups"))
        return replace(data, groups=declared, group_index=np.asarray(index, dtype=np.int64))

    def _charge(self, params: PrivacyParameters) -> NoiseSource:
        """Step 4: charge the budget once, then (only then) create the noise source.

        Seeded noise at finite epsilon raises :class:`~dpfair.privacy.SeededNoiseWarning` at the user's
        line (and the template marks ``privacy_spent_["noise"] = "seeded"``).
        """
        epsilon, delta = self._privacy_cost(params)
        charge_budget(params.budget, epsilon, delta, label=self._charge_label(params),
                      neighbouring=check_relation(self._charge_relation(params), "_charge_relation"))
        noise = get_noise_source(params.random_state)
        if not inside_charged_release():  # (a container's release warned once for its parts)
            warn_seeded_noise(noise, params.epsilon, self._release_subject(params))
        return noise

    def _release(
        self, *data: Any, privacy_overrides: dict[str, Any] | None = None, **metadata: Any
    ) -> dict[str, Any]:
        """Run the template once; return the results with ``privacy_spent_`` (nothing is set on ``self``)."""
        params, validated = self._validate_all(*data, privacy_overrides=privacy_overrides, **metadata)
        if math.isinf(params.epsilon):
            self._warn_non_private(params)
        statistics = self._compute_statistics(params, validated)
        noise = self._charge(params)
        with charged_release():  # the mechanisms it calls charge no ledger again and warn no second time
            noisy = self._run(params, validated, statistics, noise)
        results = dict(self._solve(params, noisy, validated))
        spent = dict(self._privacy_spent(params, results))
        if noise_kind(noise, params.epsilon) == "seeded" and spent.get("noise") != "none":
            spent["noise"] = "seeded"  # (a composed base model's own mark is kept by _privacy_spent)
        results["privacy_spent_"] = spent
        return results


class PrivateEstimator(PrivateMechanismMixin):
    """Mixin for private estimators, used beside :class:`sklearn.base.BaseEstimator`.

    ``class MyEstimator(PrivateEstimator, RegressorMixin, BaseEstimator)``: declare
    ``_privacy_parameters`` and fill the steps of :class:`PrivateMechanismMixin`; :meth:`fit` runs the
    template and sets every result (names ending in ``_``, and ``privacy_spent_``) at the very end.
    """

    def fit(self, X: Any, y: Any = None, *, sensitive_features: Any = None) -> PrivateEstimator:
        """Validate, charge once, draw noise, solve; set the fitted attributes at the end.

        Parameters
        ----------
        X : array-like
            Training rows.
        y : array-like or None
            Targets or labels, where the estimator uses them.
        sensitive_features : array-like or None
            Each row's group label (declared in ``groups=``).

        Returns
        -------
        self
            The fitted estimator.
        """
        args, kwargs = self._release_arguments(X, y, sensitive_features=sensitive_features)
        return self._set_fitted(self._release(*args, **kwargs))

    def check_release(self, X: Any, y: Any = None, **fit_params: Any) -> PlannedCharge:
        """A dry run of :meth:`fit`: every check it makes before its charge, and what it would charge.

        Runs steps 1 and 2 of the release template (the parameters, the data, the groups) on the arguments
        ``fit`` takes, and returns the planned charge.  Nothing is fitted (a wrapped model that ``fit`` would
        train is not; a private one runs its own dry run), no noise is drawn, no budget is touched, and the
        estimator is left as it was.  The refusals of step 3 (a check of the exact statistics, or of a wrapped
        model's outputs) come only from ``fit``, still before its charge.

        Parameters
        ----------
        X : array-like
            As for :meth:`fit`.
        y : array-like or None, default None
            As for :meth:`fit`.
        **fit_params
            The other arguments of :meth:`fit` (``sensitive_features=`` where it takes them).

        Returns
        -------
        PlannedCharge
            What one ``fit`` on these rows would charge (:meth:`planned_charge`'s).

        Raises
        ------
        ValueError, TypeError
            Whatever :meth:`fit` would refuse before its charge (the message names the argument).
        """
        with self._feature_attributes_kept(always=True):  # a dry run leaves no trace
            args, kwargs = self._release_arguments(X, y, **fit_params)
            return self._dry_run(*args, **kwargs)

    @contextmanager
    def _feature_attributes_kept(self, *, always: bool) -> Iterator[None]:
        """Put back ``n_features_in_`` / ``feature_names_in_`` as they were before the block.

        scikit-learn's ``validate_data`` sets them while it checks ``X``.  ``always=True`` restores them after
        the block whatever happens (a dry run charges and changes nothing); ``always=False`` only when the block
        raises (a refused fit leaves the estimator as it was, contract rule 3; a fit that succeeds keeps them).
        """
        saved = {name: vars(self)[name] for name in _FEATURE_ATTRIBUTES if name in vars(self)}
        try:
            yield
        except BaseException:
            self._restore_feature_attributes(saved)
            raise
        if always:
            self._restore_feature_attributes(saved)

    def _restore_feature_attributes(self, saved: dict[str, Any]) -> None:
        for name in _FEATURE_ATTRIBUTES:
            vars(self).pop(name, None)
        vars(self).update(saved)

    def _release_arguments(self, X: Any, y: Any = None, **fit_params: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments of :meth:`_release` for ``fit(X, y, **fit_params)``: ``((X, y), fit_params)`` by default.

        Override it when ``fit`` maps its arguments otherwise (a selector's one column of scores).
        """
        return (X, y), fit_params

    #: ``True`` when the results of :meth:`_release` are the only source of ``n_features_in_`` /
    #: ``feature_names_in_`` (not scikit-learn's ``validate_data`` on ``self``): :meth:`_set_fitted` then
    #: removes those an earlier fit left and this one does not set (a DataFrame fit, then an array fit).
    _results_hold_feature_attributes: ClassVar[bool] = False

    def _set_fitted(self, results: dict[str, Any]) -> PrivateEstimator:
        """Set every result of :meth:`_release` as an attribute, all at once, at the end of a fit.

        A subclass whose ``fit`` has another signature calls ``self._set_fitted(self._release(...))``.
        """
        if self._results_hold_feature_attributes:
            for name in _FEATURE_ATTRIBUTES:
                if name not in results and name in vars(self):
                    delattr(self, name)  # stale, from an earlier fit
        for name, value in results.items():
            setattr(self, name, value)
        return self
