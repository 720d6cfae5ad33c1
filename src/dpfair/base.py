"""One private-estimator protocol: privacy parameters declared once, one release template.

A private class declares its privacy parameters once, in the spirit of scikit-learn's
``_parameter_constraints``::

    _privacy_parameters = {"epsilon": "epsilon", "delta": "delta", "bounds": "bounds",
                           "groups": "groups", "budget": "budget", "random_state": "random_state"}

(parameter name -> role; the roles are :data:`ROLES`).  The template :meth:`PrivateMechanismMixin._release`
then runs the one pipeline of the estimator contract (``CONTRIBUTING.md``, rules 7-9):

1. ``_validate_all``: every declared privacy parameter by its role, the subclass's other parameters
   (:meth:`~PrivateMechanismMixin._validate_params`) and the data
   (:meth:`~PrivateMechanismMixin._validate_data`);
2. resolve the declared groups (:func:`dpfair._estimator.resolve_groups`);
3. :meth:`~PrivateMechanismMixin._compute_statistics` (exact statistics, no noise available);
4. charge the budget once (:func:`dpfair._estimator.charge_budget`), done by the template only;
5. :meth:`~PrivateMechanismMixin._draw_noise`, which receives the noise source, created only after
   the charge;
6. :meth:`~PrivateMechanismMixin._solve` (post-processing of the noisy statistics);
7. the result, with ``privacy_spent_``; :class:`PrivateEstimator` sets the fitted attributes only
   here, so nothing fitted is left, and earlier fitted state is unchanged, if any step raises.

Subclasses fill steps 1, 3, 5 and 6; they cannot override the template nor the charge
(:meth:`~PrivateMechanismMixin.__init_subclass__` refuses it), and the noise source is handed to them only
after the charge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
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
from dpfair.privacy.budget import charged_release, check_budget, inside_charged_release
from dpfair.privacy.noise import NoiseSource, check_random_state, get_noise_source
from dpfair.privacy.relations import REPLACE, check_relation

__all__ = ["ROLES", "PrivacyParameters", "PrivateEstimator", "PrivateMechanismMixin"]

#: The roles a declared privacy parameter may have.
ROLES = ("epsilon", "delta", "bounds", "groups", "budget", "random_state")

#: Methods of the template that no subclass may redefine.
_FINAL = ("_release", "_validate_all", "_charge", "_validate_privacy_parameters", "_resolve_declared_groups",
          "_set_fitted")


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
    extra : dict
        What :meth:`PrivateMechanismMixin._validate_params` returned (the other parameters).
    """

    epsilon: float = math.inf
    delta: float = 0.0
    bounds: tuple[float, float] | None = None
    groups: Any = None
    budget: Any = None
    random_state: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


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
                    "fill _validate_params, _validate_data, _compute_statistics, _draw_noise and _solve instead."
                )
        unknown = {role for role in cls._privacy_parameters.values() if role not in ROLES}
        if unknown:
            raise TypeError(f"{cls.__name__}._privacy_parameters uses unknown role(s) {sorted(unknown)}; use {ROLES}.")
        check_relation(cls._privacy_relation, f"{cls.__name__}._privacy_relation")

    # ------------------------------------------------------------------ steps a subclass fills
    def _validate_params(self) -> dict[str, Any]:
        """Validate the parameters that are not privacy parameters; return them by name.

        Raise ``ValueError`` / ``TypeError`` naming the argument and the fix.  Nothing is charged yet.
        """
        return {}

    def _validate_data(self, params: PrivacyParameters, *data: Any, **metadata: Any) -> dict[str, Any]:
        """Validate the data; return it by name.

        Include ``"sensitive_features"`` (the raw labels, or ``None``) and ``"n_rows"`` when the class
        declares ``groups``: the template resolves them into ``"groups"`` (declared labels) and
        ``"group_index"`` (each row's group number).  A value outside a declared bound raises.
        """
        raise NotImplementedError(f"{type(self).__name__} must define _validate_data")

    def _compute_statistics(self, params: PrivacyParameters, data: dict[str, Any]) -> Any:
        """Exact (not yet private) statistics of ``data``; no noise is available here."""
        raise NotImplementedError(f"{type(self).__name__} must define _compute_statistics")

    def _privacy_cost(self, params: PrivacyParameters) -> tuple[float, float]:
        """What one release charges; ``(epsilon, delta)`` by default."""
        return params.epsilon, params.delta

    def _charge_label(self, params: PrivacyParameters) -> str:
        """The ledger's label of the one charge: ``_privacy_label``, else the class name.

        Override it when the label depends on validated parameters (``params.extra``).
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

    def _draw_noise(self, params: PrivacyParameters, statistics: Any, noise: NoiseSource) -> Any:
        """Privatise ``statistics`` with ``noise`` (called only after the budget was charged)."""
        raise NotImplementedError(f"{type(self).__name__} must define _draw_noise")

    def _solve(self, params: PrivacyParameters, noisy: Any, data: dict[str, Any]) -> dict[str, Any]:
        """Post-process the noisy statistics; return the results by name (fitted attributes end in ``_``)."""
        raise NotImplementedError(f"{type(self).__name__} must define _solve")

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        """Raise the :class:`~dpfair.privacy.PrivacyLeakWarning` of an ``epsilon = inf`` release.

        Called by the template, before any statistic is computed, only when ``params.epsilon`` is
        infinite; override it to name what is released.
        """
        # stacklevel 6: warn_non_private <- here <- _release <- fit / select <- the user's line
        warn_non_private(params.epsilon, f"the release of {type(self).__name__}", estimator=self, stacklevel=6)

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        """The ``privacy_spent_`` of this release (override to compose it with a private base model's)."""
        epsilon, delta = self._privacy_cost(params)
        return privacy_spent(epsilon, delta, protects=self._privacy_protects, neighbouring=self._privacy_neighbouring,
                             relation=self._charge_relation(params))

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

    def _validate_all(
        self, *data: Any, privacy_overrides: dict[str, Any] | None = None, **metadata: Any
    ) -> tuple[PrivacyParameters, dict[str, Any]]:
        """Step 1: every argument, then the data.  Returns ``(params, data)``; charges nothing.

        ``privacy_overrides`` may give this release's own ``budget`` / ``random_state`` (by role;
        ``None`` values keep the declared ones), as :meth:`ExponentialSelector.select` does.
        """
        params = self._validate_privacy_parameters(privacy_overrides)
        params = replace(params, extra=dict(self._validate_params()))
        validated = dict(self._validate_data(params, *data, **metadata))
        if "groups" in self._privacy_parameters.values() and "group_index" not in validated:
            # (a subclass that had to resolve them earlier, before a wrapped fit, returns them)
            validated.update(self._resolve_declared_groups(params, validated))
        return params, validated

    def _resolve_declared_groups(self, params: PrivacyParameters, data: dict[str, Any]) -> dict[str, Any]:
        """Step 2: map rows to the declared groups (ValueError for an undeclared label)."""
        n_rows = int(data["n_rows"])
        raw = data.get("sensitive_features")
        if raw is None:
            declared, index = single_group_rows(params.groups, n_rows, params.epsilon, type(self).__name__)
        else:
            values = as_sensitive_features(raw, n_rows)
            declared, index = resolve_groups(params.groups, values, params.epsilon, name=self._privacy_name("groups"))
        return {"groups": declared, "group_index": np.asarray(index, dtype=np.int64)}

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
            warn_seeded_noise(noise, params.epsilon, f"{type(self).__name__} (epsilon={params.epsilon:g})")
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
            noisy = self._draw_noise(params, statistics, noise)
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
        return self._set_fitted(self._release(X, y, sensitive_features=sensitive_features))

    #: ``True`` when the results of :meth:`_release` are the only source of ``n_features_in_`` /
    #: ``feature_names_in_`` (not scikit-learn's ``validate_data`` on ``self``): :meth:`_set_fitted` then
    #: removes those an earlier fit left and this one does not set (a DataFrame fit, then an array fit).
    _results_hold_feature_attributes: ClassVar[bool] = False

    def _set_fitted(self, results: dict[str, Any]) -> PrivateEstimator:
        """Set every result of :meth:`_release` as an attribute, all at once, at the end of a fit.

        A subclass whose ``fit`` has another signature calls ``self._set_fitted(self._release(...))``.
        """
        if self._results_hold_feature_attributes:
            for name in ("n_features_in_", "feature_names_in_"):
                if name not in results and name in vars(self):
                    delattr(self, name)  # stale, from an earlier fit
        for name, value in results.items():
            setattr(self, name, value)
        return self
