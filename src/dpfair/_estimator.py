"""Shared pieces of the estimator contract (see ``CONTRIBUTING.md``, "The estimator contract").

Every private estimator in dpfair uses these helpers so that the same situation gives the same
message and the same privacy accounting everywhere:

* :func:`privacy_spent` builds the one shape of ``privacy_spent_``;
* :func:`check_budget` and :func:`charge_budget` handle ``budget=`` (validate first, charge just
  before the first noise draw);
* :func:`as_sensitive_features` turns ``sensitive_features`` into a clean 1-d array;
* :func:`resolve_groups` and :func:`group_index` map rows to *declared* groups (``groups=``): the
  set of groups is public knowledge the caller declares, never read off private data;
* :func:`warn_non_private` raises :class:`~dpfair.privacy.PrivacyLeakWarning` for ``epsilon = inf`` (also
  for the mechanisms of :mod:`dpfair.privacy.mechanisms`), once per estimator configuration among the clones
  of one estimator (:class:`CloneLineageMixin`);
* :func:`fit_charges` says, before any fit, what one ``fit`` of an estimator charges to which budget
  (the search costs of :mod:`dpfair.model_selection` add them up);
* :func:`combined_privacy_spent` composes a post-processor's own release with the ``privacy_spent_``
  of a private base estimator it fitted on the same rows.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from dpfair._validation import check_bool, check_delta, check_epsilon
from dpfair.privacy.budget import PrivacyBudget, charge, check_budget
from dpfair.privacy.leaks import exact_release_message, warn_privacy_leak, warn_seeded_noise
from dpfair.privacy.noise import NoiseSource, get_noise_source
from dpfair.privacy.relations import REPLACE, check_relation, convert_guarantee

__all__ = [
    "STRING_FEATURES_FIX",
    "CloneLineageMixin",
    "as_sensitive_features",
    "charge_budget",
    "check_bool",
    "check_budget",
    "check_feature_values",
    "check_groups_declared",
    "combined_privacy_spent",
    "fit_charges",
    "group_index",
    "noise_kind",
    "predict_seed",
    "prediction_noise",
    "privacy_spent",
    "private_base",
    "refuse_raw_values",
    "resolve_groups",
    "rows_of_fitted_groups",
    "single_group_rows",
    "warn_leak_once",
    "warn_non_private",
    "warn_seeded_noise",
    "wrapped_tags",
]


def privacy_spent(epsilon: float, delta: float, *, protects: str, neighbouring: str, relation: str = REPLACE,
                  noise: str | None = None) -> dict[str, Any]:
    """The one shape of every ``privacy_spent_`` attribute.

    Parameters
    ----------
    epsilon, delta : float
        The guarantee the fitted object gives about ``protects`` (``inf`` when it gives none).
    protects : str
        What is protected, in words (e.g. "the group and regressor output of every post-processing row").
    neighbouring : str
        The neighbouring relation in words (e.g. "replace one row (the number of rows n is public)").
    relation : {"replace", "add_remove", "change_attribute"}, default "replace"
        The same relation as a key of :mod:`dpfair.privacy.relations`, for budgets and composition.
    noise : {"secure", "seeded", "none"} or None
        Where the noise came from: ``"seeded"`` marks reproducible, *not hardened* noise (a
        ``random_state`` was given), ``"none"`` an exact release.  ``None``: ``"none"`` when ``epsilon``
        is infinite, else ``"secure"``.

    Returns
    -------
    dict
        ``{"epsilon", "delta", "protects", "neighbouring", "relation", "noise"}``.
    """
    if noise is None:
        noise = "none" if math.isinf(float(epsilon)) else "secure"
    if noise not in NOISE_KINDS:
        raise ValueError(f"noise must be one of {NOISE_KINDS}, got {noise!r}.")
    return {"epsilon": float(epsilon), "delta": float(delta), "protects": str(protects), "neighbouring": str(neighbouring),
            "relation": check_relation(relation, "relation"), "noise": noise}


#: The values of ``privacy_spent_["noise"]``.
NOISE_KINDS = ("secure", "seeded", "none")


def noise_kind(noise: NoiseSource | None, epsilon: float) -> str:
    """``privacy_spent_["noise"]`` of a release that drew from ``noise`` at ``epsilon``."""
    if math.isinf(epsilon):
        return "none"
    return "secure" if noise is None or noise.secure else "seeded"


def charge_budget(budget: PrivacyBudget | None, epsilon: float, delta: float = 0.0, *, label: str,
                  neighbouring: str = REPLACE) -> None:
    """Charge ``(epsilon, delta)`` to ``budget``, or to the process-wide ledger when ``budget`` is ``None``.

    Call it after every argument has been validated and just before the first noise draw, and
    assign fitted attributes only after it: a refused charge
    (:class:`~dpfair.privacy.PrivacyBudgetExceededError`) then leaves the budget and any earlier
    fitted state unchanged.  With ``budget=None`` the charge goes to
    :func:`dpfair.privacy.default_budget` when the program has opted in with
    :func:`dpfair.privacy.set_default_budget` (otherwise nothing is recorded; in a worker process of a
    program whose ledger is on, the charge is refused: it would be lost).  ``neighbouring`` is the
    relation of the release's guarantee (:mod:`dpfair.privacy.relations`); the budget converts it or refuses.
    """
    charge(budget, epsilon, delta, label=label, neighbouring=neighbouring)


class _Lineage:
    """The configurations of one estimator's clones that have already raised a PrivacyLeakWarning."""

    __slots__ = ("__weakref__", "warned")

    def __init__(self) -> None:
        self.warned: set[tuple[str, str]] = set()


_ORIGINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # estimator that was cloned -> its lineage
_CLONES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # clone -> the lineage it belongs to


class CloneLineageMixin:
    """Clones remember the estimator they were cloned from, so a search warns once per configuration.

    ``GridSearchCV`` and ``cross_validate`` fit a fresh :func:`sklearn.base.clone` of one estimator per
    fold and candidate; an ``epsilon = inf`` fit raises a :class:`~dpfair.privacy.PrivacyLeakWarning`,
    which scikit-learn's workers show again for every fit (they reset the warning filters).  Clones of
    one estimator (and clones of those clones) share a lineage, and :func:`warn_leak_once` raises each
    message once per configuration (the parameters other than ``budget``) of a lineage.  An estimator
    fitted directly, not a clone, always warns.  Nothing is stored on the estimators themselves (the
    lineages live in weak dictionaries), so parameters, pickles and ``joblib.hash`` are unchanged.
    """

    def __sklearn_clone__(self):
        new = super().__sklearn_clone__()
        lineage = _CLONES.get(self)
        if lineage is None:
            lineage = _ORIGINS.get(self)
            if lineage is None:
                lineage = _ORIGINS[self] = _Lineage()
        _CLONES[new] = lineage
        return new


def _configuration(estimator: Any) -> str:
    try:
        params = estimator.get_params(deep=False)
    except Exception:  # not a scikit-learn estimator
        return repr(id(estimator))
    return repr(sorted((k, repr(v)) for k, v in params.items() if k != "budget"))


def warn_leak_once(estimator: Any, message: str) -> None:
    """Raise :class:`~dpfair.privacy.PrivacyLeakWarning` unless a clone of the same lineage and configuration already did.

    The warning points at the first frame outside dpfair, the user's line (:func:`dpfair._warnings.find_stack_level`),
    however many of dpfair's frames lie between it and this call.

    Parameters
    ----------
    estimator : estimator or None
        The estimator being fitted (``None``: always warn).
    message : str
        The warning.
    """
    try:
        lineage = _CLONES.get(estimator) if estimator is not None else None
    except TypeError:  # not weak-referenceable
        lineage = None
    if lineage is not None:
        key = (message, _configuration(estimator))
        if key in lineage.warned:
            return
        lineage.warned.add(key)
    warn_privacy_leak(message)


def warn_non_private(epsilon: float, what: str, *, estimator: Any = None) -> None:
    """Raise :class:`~dpfair.privacy.PrivacyLeakWarning` when ``epsilon`` is infinite (exact, non-private output).

    The estimators' exact-release warning; its text is :func:`dpfair.privacy.leaks.exact_release_message`,
    the one the mechanisms of :mod:`dpfair.privacy.mechanisms` raise through
    :func:`dpfair.privacy.leaks.warn_exact_release`.  With ``estimator``, a clone made by a search warns
    once per configuration (:func:`warn_leak_once`).

    Parameters
    ----------
    epsilon : float
        The privacy parameter (a zCDP ``rho`` works the same way); only ``inf`` warns.
    what : str
        What is released exactly, as the message names it (e.g. ``"the post-processed predictions"``).
    estimator : estimator, optional
        The estimator being fitted (``None``: always warn).

    Warns
    -----
    PrivacyLeakWarning
        If ``epsilon`` is infinite, at the user's line (the first frame outside dpfair).
    """
    if math.isinf(epsilon):
        warn_leak_once(estimator, exact_release_message(what))


def fit_charges(estimator: Any) -> list[tuple[PrivacyBudget | None, float, float]]:
    """What one ``fit`` of ``estimator`` charges, before any fit: a list of ``(budget, epsilon, delta)``.

    dpfair estimators say it through a ``_dpfair_fit_charges()`` method (a post-processor with
    ``prefit=False`` adds its base estimator's charges); a :class:`~sklearn.pipeline.Pipeline` adds up
    its steps; any other estimator with an ``epsilon`` parameter is taken to charge
    ``(epsilon, delta)`` to its ``budget`` once (``delta = 0`` when it has none or ``epsilon`` is
    infinite); a plain scikit-learn estimator charges nothing.  ``budget`` is ``None`` for an estimator
    given no budget (it then charges :func:`dpfair.privacy.default_budget`, if set).

    Parameters
    ----------
    estimator : estimator
        Unfitted or fitted; it is not modified.

    Returns
    -------
    list of (PrivacyBudget or None, float, float)

    Raises
    ------
    TypeError
        For a scikit-learn meta-estimator other than ``Pipeline`` that wraps a private dpfair estimator:
        how many times it fits it is unknown.
    ValueError
        If a privacy parameter is invalid (the estimator's own message).
    """
    hook = getattr(estimator, "_dpfair_fit_charges", None)
    if callable(hook) and not isinstance(estimator, type):
        return list(hook())
    steps = getattr(estimator, "steps", None)
    if steps is not None and hasattr(estimator, "named_steps"):  # a Pipeline: every step is fitted once
        out: list[tuple[PrivacyBudget | None, float, float]] = []
        for _, step in steps:
            if step is not None and not (isinstance(step, str) and step == "passthrough"):
                out += fit_charges(step)
        return out
    if not hasattr(estimator, "get_params") or isinstance(estimator, type):
        return []
    own = estimator.get_params(deep=False)
    if "epsilon" in own:
        epsilon = check_epsilon(own["epsilon"])
        delta = 0.0 if math.isinf(epsilon) else check_delta(own.get("delta", 0.0) or 0.0)
        return [(check_budget(own.get("budget")), epsilon, delta)]
    for name, value in own.items():
        if hasattr(value, "get_params") and not isinstance(value, type) and fit_charges(value):
            raise TypeError(
                f"{type(estimator).__name__} wraps the private estimator {name}={type(value).__name__}, and how many "
                "times it fits it is unknown: compute the cost of that meta-estimator by hand."
            )
    return []


def private_base(estimator: Any) -> bool:
    """Whether a fitted ``estimator`` reports a ``privacy_spent_`` (a private dpfair estimator).

    Parameters
    ----------
    estimator : estimator
        A fitted estimator.

    Returns
    -------
    bool
    """
    spent = getattr(estimator, "privacy_spent_", None)
    return isinstance(spent, dict) and "epsilon" in spent and "delta" in spent


def combined_privacy_spent(own: dict[str, Any], base: Any, *, protects: str, neighbouring: str,
                           relation: str = REPLACE) -> dict[str, Any]:
    """``privacy_spent_`` of a post-processor that fitted a private ``base`` estimator on the same rows.

    Basic composition: the base's fit is released first and the post-processor's own release is
    computed given it, so the whole object is ``(eps_base + eps_own, delta_base + delta_own)``-DP for
    what both protect (``protects``, under ``neighbouring``).  The base's guarantee is first converted
    into ``relation`` (:func:`dpfair.privacy.relations.convert_guarantee`: an add/remove-one-row base
    counts twice under replacement); the post-processor's own step is stated under ``relation`` by the
    caller (its own mechanism's sensitivity must hold under it given the base).

    Parameters
    ----------
    own : dict
        The post-processor's own ``privacy_spent_``.
    base : estimator
        The fitted base estimator, with a ``privacy_spent_``.
    protects, neighbouring : str
        What the composed guarantee protects, and under which neighbouring relation (words).
    relation : str, default "replace"
        The composed relation's key (:mod:`dpfair.privacy.relations`).

    Returns
    -------
    dict
        The one ``privacy_spent_`` shape.

    Raises
    ------
    ValueError
        When the base's guarantee cannot be converted into ``relation`` (no sound conversion exists).
    """
    spent = base.privacy_spent_
    base_epsilon, base_delta, _ = convert_guarantee(float(spent["epsilon"]), float(spent["delta"]), 0.0,
                                                    spent.get("relation", REPLACE), relation)
    epsilon = base_epsilon + float(own["epsilon"])
    delta = min(1.0, base_delta + float(own["delta"]))
    if math.isinf(epsilon):
        protects = f"nothing end to end (the base estimator spent epsilon={float(spent['epsilon']):g})"
    kinds = {spent.get("noise"), own.get("noise")}
    noise = "none" if math.isinf(epsilon) else ("seeded" if "seeded" in kinds else "secure")
    return privacy_spent(epsilon, delta, protects=protects, neighbouring=neighbouring, relation=relation, noise=noise)


def as_sensitive_features(sensitive_features: Any, n_rows: int, name: str = "sensitive_features") -> np.ndarray:
    """Return ``sensitive_features`` as a 1-d object array with one non-missing label per row.

    Accepts lists, numpy arrays, pandas Series and one-column DataFrames (any index: it is ignored).

    Raises
    ------
    ValueError
        If it is missing, not one label per row (``n_rows``), or holds missing values.
    TypeError
        If a label is not hashable.
    """
    if sensitive_features is None:
        raise ValueError(
            f"{name} is required: pass the group of every row (a 1-d array, list or pandas Series), "
            "for example fit(X, y, sensitive_features=groups)."
        )
    if isinstance(sensitive_features, pd.DataFrame):
        if sensitive_features.shape[1] != 1:
            raise ValueError(
                f"{name} must be one column, got a DataFrame with {sensitive_features.shape[1]} columns; "
                "combine them into one label per row first."
            )
        sensitive_features = sensitive_features.iloc[:, 0]
    values = sensitive_features.to_numpy() if hasattr(sensitive_features, "to_numpy") else sensitive_features
    if isinstance(values, str | bytes) or np.isscalar(values):
        raise ValueError(f"{name} must hold one label per row, got the scalar {type(values).__name__}.")
    arr = np.asarray(values, dtype=object)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise ValueError(f"{name} must be 1-dimensional with one label per row ({n_rows} rows), got shape {arr.shape}.")
    if pd.isna(pd.Series(arr, dtype=object)).any():
        raise ValueError(f"{name} contains missing values (None or NaN); every row needs a group label.")
    try:
        pd.unique(pd.Series(arr, dtype=object))  # hashes every label once
    except TypeError:
        raise TypeError(f"{name} must hold hashable labels (str, int, ...), not lists, dicts or arrays.") from None
    return arr


def _declared(groups: Any, name: str) -> np.ndarray:
    if isinstance(groups, str | bytes) or np.isscalar(groups):
        raise TypeError(f"{name} must be a list of group labels, e.g. groups=['a', 'b'], got {groups!r}.")
    try:
        declared = np.asarray(list(groups), dtype=object)
    except TypeError:
        raise TypeError(f"{name} must be a list of group labels, got {type(groups).__name__}.") from None
    if declared.ndim != 1 or declared.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d list of group labels, got {groups!r}.")
    if pd.isna(pd.Series(declared, dtype=object)).any():
        raise ValueError(f"{name} must not contain missing values (None or NaN).")
    try:
        if len(set(declared.tolist())) != declared.size:
            raise ValueError(f"{name} lists a group more than once: {groups!r}; list each group once.")
    except TypeError:
        raise TypeError(f"{name} must hold hashable labels (str, int, ...).") from None
    return declared


def group_index(declared: np.ndarray, values: np.ndarray, name: str = "sensitive_features") -> np.ndarray:
    """Index of each row's label in ``declared`` (int64); ``ValueError`` if any label was not declared.

    The message names the declared groups, never the offending (private) values.
    """
    index = pd.Index(declared, dtype=object).get_indexer(pd.Index(values, dtype=object))
    if (index < 0).any():
        raise ValueError(
            f"{name} holds label(s) outside the declared groups {declared.tolist()}; "
            "declare every group in groups= (the set of groups is public knowledge) or drop those rows."
        )
    return index.astype(np.int64)


def check_groups_declared(groups: Any, epsilon: float, name: str = "groups") -> None:
    """Refuse ``groups=None`` with a finite ``epsilon``: the set of groups must be declared, not read off the data.

    Parameters
    ----------
    groups : object
        The declaration (``None``: not declared).
    epsilon : float
        The release's privacy parameter; ``inf`` allows reading the groups off the data.
    name : str, default "groups"
        The parameter's name in the message.

    Raises
    ------
    ValueError
        If ``groups`` is ``None`` and ``epsilon`` is finite.
    """
    if groups is None and not math.isinf(epsilon):
        raise ValueError(
            f"{name} is required with a finite epsilon: declare the list of possible group labels "
            f"(e.g. {name}=['a', 'b']). Reading them off the data would reveal, without noise, whether a rare "
            "group is present, which breaks differential privacy (allowed only with epsilon=inf)."
        )


def resolve_groups(
    groups: Any, values: np.ndarray, epsilon: float, *, name: str = "groups"
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(declared_groups, row_index)`` for the rows' labels ``values``.

    ``groups`` is the caller's declaration (its order is kept: group 0 is the first declared group).
    With finite ``epsilon`` it is required: reading the set of groups off the data would release,
    without noise, whether a rare group is present, which breaks differential privacy.  With
    ``epsilon = inf`` it may be omitted and is then read off the data (sorted when the labels are
    comparable, else in order of appearance).

    A declared group absent from the data is not an error: the mechanism handles it (its private
    weight is noise around 0).

    Raises
    ------
    ValueError
        If ``groups`` is missing with finite ``epsilon``, is empty or has duplicates, or a row's label
        is not declared.
    TypeError
        If ``groups`` is not a list of hashable labels.
    """
    if groups is None:
        check_groups_declared(groups, epsilon, name)
        uniques = pd.unique(pd.Series(values, dtype=object))
        try:
            declared = np.asarray(sorted(uniques.tolist()), dtype=object)
        except TypeError:
            declared = np.asarray(uniques.tolist(), dtype=object)
    else:
        declared = _declared(groups, name)
    return declared, group_index(declared, values)


def single_group_rows(groups: Any, n_rows: int, epsilon: float, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """``sensitive_features=None``: every row belongs to the one declared group, else ``ValueError``."""
    if groups is not None:
        declared, _ = resolve_groups(groups, np.empty(0, dtype=object), epsilon)
        if declared.size == 1:
            return declared, np.zeros(n_rows, dtype=np.int64)
    raise ValueError(
        f"sensitive_features is required: pass the group of every row, e.g. {owner}.fit(X, y, sensitive_features=g) "
        "(with metadata routing, set_fit_request(sensitive_features=True)). It may be omitted only when groups= "
        "declares exactly one group, which then holds every row."
    )


def rows_of_fitted_groups(declared: np.ndarray, sensitive_features: Any, n_rows: int) -> np.ndarray:
    """Index into the fitted ``groups_`` of every row at predict time."""
    if sensitive_features is None:
        if declared.size == 1:
            return np.zeros(n_rows, dtype=np.int64)
        raise ValueError(
            "sensitive_features is required: pass the group of every row, e.g. predict(X, sensitive_features=g) "
            "(with metadata routing, set_predict_request(sensitive_features=True)). It may be omitted only when "
            "a single group was declared."
        )
    return group_index(declared, as_sensitive_features(sensitive_features, n_rows))


def predict_seed(noise: NoiseSource) -> list[int] | None:
    """Entropy for the randomized predictions of a seeded estimator (``None``: secure randomness)."""
    if noise.secure:
        return None
    return [int(u * 2**32) for u in noise.uniform(4)]


def prediction_noise(random_state: Any, predict_seed: list[int] | None) -> NoiseSource:
    """Noise for randomized predictions: ``random_state`` if given, else the fit's ``predict_seed``, else secure."""
    if random_state is not None:
        return get_noise_source(random_state)
    if predict_seed is None:
        return get_noise_source(None)
    return get_noise_source(np.random.default_rng(predict_seed))


def wrapped_tags(self: Any, tags: Any) -> Any:
    """scikit-learn tags of an estimator that wraps ``self.estimator`` (y required only when it fits the wrapped one)."""
    from sklearn.utils import get_tags  # here, not at the top: it costs seconds of `dpfair assess` start-up

    tags.target_tags.required = self.estimator is not None and self.prefit is False
    if self.estimator is not None:
        try:
            tags.input_tags.sparse = get_tags(self.estimator).input_tags.sparse
        except Exception:  # not a scikit-learn estimator: keep the defaults
            pass
    return tags


# ------------------------------------------------------------------ feature matrices a private estimator refuses
#: What a string feature column is told: encode it over declared levels (a private estimator takes numbers only).
STRING_FEATURES_FIX = (
    "encode categories over their declared (public) levels with dpfair.preprocessing.DeclaredOneHotEncoder("
    "categories=...), in a sklearn.compose.ColumnTransformer for a DataFrame of mixed types; scikit-learn's "
    "OneHotEncoder without categories= learns its columns from the private rows"
)

#: What a missing value is told: impute with declared values, or with a private median charged to the budget.
MISSING_FEATURES_FIX = (
    "fill them with declared values (dpfair.preprocessing.DeclaredImputer(fill_values=...)) or with private medians "
    "charged to your budget (dpfair.preprocessing.DPMedianImputer); scikit-learn's SimpleImputer and the like "
    "compute their fill values from the private rows, outside any privacy budget"
)


def _holds_strings(values: np.ndarray) -> bool:
    if values.dtype.kind in "US":
        return True
    if values.dtype.kind != "O":
        return False
    return any(isinstance(item, str | bytes) for item in values.ravel())


#: Words of the refusals of strings and missing values by numpy, pandas and scikit-learn ("could not convert string
#: to float: '<the value>'", "Input X contains NaN", ...): only these are replaced by dpfair's message.
_RAW_VALUE_REFUSALS = ("could not convert", "contains nan", "unable to convert", "nonetype", "natype",
                       "value of na is ambiguous", "float() argument")


def refuse_raw_values(exc: BaseException, X: Any, *, owner: str) -> None:
    """After a wrapped model refused ``X`` with ``exc``: dpfair's message if it refused strings or missing values.

    scikit-learn's message for a string column prints one row's value and, for NaN, advises an imputer that reads
    private statistics; :func:`check_feature_values` names the column and the declared-parameter transformer
    instead.  Any other refusal (an undeclared level in a pipeline that encodes declared categories, an invalid
    parameter of the model) keeps the model's own message: this function returns and the caller re-raises.

    Parameters
    ----------
    exc : BaseException
        The wrapped model's refusal.
    X : array-like
        The rows it refused.
    owner : str
        Who refused them, for messages (e.g. ``"FairRegressionPostProcessor's estimator"``).

    Raises
    ------
    ValueError
        dpfair's message, when ``exc`` refused strings or missing values and ``X`` holds them.
    """
    text = str(exc).lower()
    if any(words in text for words in _RAW_VALUE_REFUSALS):
        check_feature_values(X, owner=owner)


def check_feature_values(X: Any, name: str = "X", *, owner: str) -> None:
    """Refuse strings and missing values in a feature matrix with the private fix, before scikit-learn's advice.

    scikit-learn refuses a string column with "could not convert string to float: '<the value>'" (a private value
    in a message) and NaN with the generic advice to use an imputer, which would read private statistics.  This
    check runs first and names the argument, the column (for a ``DataFrame``: its name and dtype, never a value)
    and the dpfair transformer to use.  Anything else (a ragged list, a dict inside an object array, infinity,
    a sparse matrix) is left to the caller's own validation.

    Parameters
    ----------
    X : array-like, DataFrame or sparse matrix
        The features.
    name : str, default "X"
        Argument name used in messages.
    owner : str
        The estimator's name, for messages.

    Raises
    ------
    ValueError
        If ``X`` holds strings (categories) or missing values (None, NaN, pd.NA).
    """
    if sparse.issparse(X) or X is None:
        return
    if isinstance(X, pd.DataFrame):
        text = [str(column) for column in X.columns
                if not (pd.api.types.is_numeric_dtype(X[column].dtype) or pd.api.types.is_bool_dtype(X[column].dtype))
                and _holds_strings(np.asarray(X[column].to_numpy(dtype=object)))]
        if text:
            raise ValueError(f"{name} has column(s) {text} holding strings: {owner} takes numbers only; "
                             f"{STRING_FEATURES_FIX}.")
        if bool(X.isna().to_numpy().any()):
            raise ValueError(f"{name} contains missing values (None, NaN or pd.NA): {owner} does not impute; "
                             f"{MISSING_FEATURES_FIX}.")
        return
    try:
        values = np.asarray(X)
    except (TypeError, ValueError):  # ragged: the caller's validation names it
        return
    if _holds_strings(values):
        raise ValueError(f"{name} holds strings: {owner} takes numbers only; {STRING_FEATURES_FIX}.")
    if values.dtype.kind == "f":
        missing = bool(np.isnan(values).any())
    elif values.dtype.kind == "O":
        missing = bool(np.asarray(pd.isna(values.ravel()), dtype=bool).any())
    else:
        missing = False
    if missing:
        raise ValueError(f"{name} contains missing values (NaN): {owner} does not impute; {MISSING_FEATURES_FIX}.")
