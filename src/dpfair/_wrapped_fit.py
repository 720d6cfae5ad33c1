"""The wrapped estimator of a post-processor: fitted once, by one function, for every subpackage.

A dpfair post-processor wraps an ``estimator`` (a regressor in :mod:`dpfair.regression`, a
classifier in :mod:`dpfair.classification`).  Rule 5 of the estimator contract (``CONTRIBUTING.md``)
says how it is used: as is with ``prefit=True`` (it must then be fitted), or as
``clone(estimator).fit(X, y)`` with ``prefit=False`` (the caller's object is never modified).  What
differs between post-processors is declared once per class in a :class:`WrappedEstimator`: the
word for the wrapped model, whether it may be ``None`` (``X`` then holds its outputs), the advice of
the not-fitted error, and whether a clone trained non-privately on the same rows voids the guarantee
(it does when the post-processor protects the rows the clone is trained on; it does not when ``X``
and ``y`` are public, as in Jagielski et al.).

* :func:`check_wrapped_estimator` runs, without fitting anything, every check of the wrapped estimator
  that :func:`fit_wrapped_estimator` makes before its fit (a private dpfair estimator's own dry run
  included): the step 1 of the :mod:`dpfair.base` template of a post-processor;
* :func:`fit_wrapped_estimator` returns the estimator to post-process;
* :func:`rehearse_wrapped_fit` fits, and throws away, the non-private model a post-processor would
  train inside its fit: the only way to run that model's checks, used by a private search before it charges;
* :func:`check_shared_budgets` refuses, before the wrapped estimator is fitted, budgets that cannot pay
  for its fit and the post-processor's release together;
* :func:`post_processor_fit_charges` lists what one ``fit`` of a post-processor charges (its
  ``_dpfair_fit_charges``), and :func:`wrapped_privacy_spent` composes its own guarantee with a private
  wrapped estimator fitted on the same rows;
* :func:`wrapped_feature_attributes` gives the ``n_features_in_`` / ``feature_names_in_`` a fitted
  post-processor takes from its estimator;
* :class:`SensitiveScoreMixin` is the one ``score(X, y, sample_weight=None, *, sensitive_features=None)``
  of the post-processors (R^2 for a regressor, accuracy for a classifier), whose ``y`` is validated
  and named like every other argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils.validation import _num_samples, check_is_fitted, column_or_1d

from dpfair._estimator import combined_privacy_spent, fit_charges, private_base, refuse_raw_values, warn_leak_once
from dpfair._validation import as_finite_array, check_epsilon
from dpfair.privacy.budget import PrivacyBudget, check_budget, check_budgets_cover
from dpfair.privacy.relations import REPLACE

__all__ = [
    "SensitiveScoreMixin",
    "WrappedEstimator",
    "check_shared_budgets",
    "check_wrapped_estimator",
    "fit_wrapped_estimator",
    "post_processor_fit_charges",
    "rehearse_wrapped_fit",
    "wrapped_feature_attributes",
    "wrapped_privacy_spent",
]


@dataclass(frozen=True)
class WrappedEstimator:
    """How a post-processor uses its wrapped ``estimator`` (declared once per class).

    Parameters
    ----------
    kind : str
        The word for the wrapped model in messages ("regressor", "classifier").
    optional : bool
        Whether ``estimator=None`` is accepted (``X`` then holds the model's outputs).
    not_fitted : str
        The ``NotFittedError`` message for an unfitted estimator with ``prefit=True`` (``{owner}`` is
        replaced by the post-processor's class name).
    clone_leak : str or None
        With ``prefit=False``, the :class:`~dpfair.privacy.PrivacyLeakWarning` raised when the clone
        fitted on ``(X, y)`` is not private (reports no ``privacy_spent_``); ``None`` when ``X`` and
        ``y`` are public, so that training on them does not weaken the guarantee.
    """

    kind: str
    optional: bool = False
    not_fitted: str = (
        "estimator is not fitted but prefit=True: fit it first, or pass prefit=False to let {owner} fit a clone "
        "of it on (X, y)."
    )
    clone_leak: str | None = None


def _refitted_message(exc: Exception) -> str:
    return f"X, y: fitting clone(estimator) on (X, y) failed ({exc}); pass valid features and targets."


def _refused(exc: Exception, X: Any, owner: str) -> Exception:
    """The error to raise when the wrapped estimator refused ``X``: dpfair's for strings and missing values.

    scikit-learn's own message for a string column prints one row's value ("could not convert string to float:
    '<the value>'"), and for NaN advises an imputer (which reads private statistics) or a model that takes NaN.
    :func:`~dpfair._estimator.refuse_raw_values` names the column and the declared-parameter transformer
    instead, never a value; anything else (an undeclared level in a pipeline that encodes declared categories, an
    invalid parameter) keeps the estimator's message, naming ``X, y``.  ``X`` is checked only after the estimator
    refused it: a pipeline that encodes declared categories takes strings.
    """
    try:
        refuse_raw_values(exc, X, owner=f"{owner}'s estimator")
    except ValueError as refused:
        return refused
    return type(exc)(_refitted_message(exc))


def _checked_target(
    spec: WrappedEstimator, estimator: Any, X: Any, y: Any, *, prefit: bool, owner: str, warn: bool
) -> np.ndarray | None:
    """The checks made before the wrapped fit; ``y`` as a 1-d array when a clone is to be fitted, else ``None``."""
    if estimator is None and spec.optional:
        return None
    if estimator is None or not hasattr(estimator, "predict"):
        alternative = " (or None)" if spec.optional else ""
        raise TypeError(
            f"estimator must be a {spec.kind} with a predict method{alternative}, got {type(estimator).__name__}."
        )
    if prefit:
        try:
            check_is_fitted(estimator)
        except NotFittedError:
            raise NotFittedError(spec.not_fitted.format(owner=owner)) from None
        except TypeError:
            pass  # not a scikit-learn estimator: trust prefit=True, its predict is called next
        return None
    if y is None:
        raise ValueError(
            f"{owner} requires y to be passed, but the target y is None: prefit=False fits a clone of estimator "
            "on (X, y); pass y, or pass a fitted estimator with prefit=True."
        )
    y = column_or_1d(y, warn=warn)  # its values are the wrapped estimator's to validate
    n_rows = _num_samples(X)
    if y.shape[0] != n_rows:
        raise ValueError(f"y must have one value per row of X ({n_rows} rows), got {y.shape[0]}.")
    return y


def check_wrapped_estimator(spec: WrappedEstimator, estimator: Any, X: Any, y: Any, *, prefit: bool, owner: str) -> None:
    """Every check of the wrapped estimator that needs no fit: what :func:`fit_wrapped_estimator` refuses before fitting.

    A post-processor calls it in its ``_validate_data`` (step 1 of the :mod:`dpfair.base` template), so that its dry
    run (:meth:`dpfair.base.PrivateEstimator.check_release`) and its ``fit`` refuse the same arguments before any
    fit or charge.  With ``prefit=False`` and a private dpfair estimator (one with a ``check_release``), that
    estimator's own dry run on ``(X, y)`` is part of it; a non-private model's checks need its fit (see
    :func:`rehearse_wrapped_fit`).

    Parameters
    ----------
    spec : WrappedEstimator
        The post-processor's declaration.
    estimator : estimator or None
        The wrapped estimator, as the caller passed it (never modified).
    X, y : array-like
        The rows ``clone(estimator)`` would be fitted on with ``prefit=False``.
    prefit : bool
        Already validated.
    owner : str
        The post-processor's class name, for messages.

    Raises
    ------
    TypeError
        If ``estimator`` has no ``predict`` method (or is ``None`` where it is required).
    NotFittedError
        If ``prefit=True`` and ``estimator`` is not fitted.
    ValueError
        If ``prefit=False`` and ``y`` is missing or not one value per row of ``X``, or a private wrapped
        estimator's dry run refuses ``(X, y)`` (its message, naming ``X, y``).
    """
    target = _checked_target(spec, estimator, X, y, prefit=prefit, owner=owner, warn=False)
    dry_run = getattr(estimator, "check_release", None)
    if target is not None and callable(dry_run) and not isinstance(estimator, type):
        try:
            clone(estimator).check_release(X, target)
        except (TypeError, ValueError) as exc:
            raise _refused(exc, X, owner) from None


def fit_wrapped_estimator(
    spec: WrappedEstimator, estimator: Any, X: Any, y: Any, *, prefit: bool, owner: str, caller: Any = None,
) -> Any:
    """Return the estimator to post-process: as is (``prefit``) or ``clone(estimator).fit(X, y)``.

    Parameters
    ----------
    spec : WrappedEstimator
        The post-processor's declaration.
    estimator : estimator or None
        The wrapped estimator, as the caller passed it (never modified).
    X, y : array-like
        The rows ``clone(estimator)`` is fitted on with ``prefit=False`` (``y`` is the wrapped
        estimator's to validate; only its presence and length are checked here).
    prefit : bool
        Already validated.
    owner : str
        The post-processor's class name, for messages.
    caller : estimator, optional
        The post-processor: a search's clones of it warn once per configuration.

    Returns
    -------
    estimator or None
        ``None`` only when ``spec.optional`` and ``estimator`` is ``None``.

    Raises
    ------
    TypeError
        If ``estimator`` has no ``predict`` method (or is ``None`` where it is required).
    NotFittedError
        If ``prefit=True`` and ``estimator`` is not fitted.
    ValueError
        If ``prefit=False`` and ``y`` is missing or not one value per row of ``X``; the clone's own
        ``ValueError`` / ``TypeError`` is re-raised naming ``X, y``.

    Warns
    -----
    PrivacyLeakWarning
        ``spec.clone_leak``, when a clone fitted here is not private (at the user's line).
    """
    target = _checked_target(spec, estimator, X, y, prefit=prefit, owner=owner, warn=True)
    if target is None:  # no clone to fit: the estimator as given (None: X holds the outputs)
        return estimator
    try:
        fitted = clone(estimator).fit(X, target)
    except (TypeError, ValueError) as exc:
        raise _refused(exc, X, owner) from None
    if spec.clone_leak is not None and not private_base(fitted):
        warn_leak_once(caller, spec.clone_leak.format(owner=owner))
    return fitted


def rehearse_wrapped_fit(post_processor: Any, X: Any, y: Any) -> None:
    """Fit, and throw away, the non-private model ``post_processor`` would train inside its ``fit``.

    A dry run (:meth:`dpfair.base.PrivateEstimator.check_release`) fits nothing, so the checks of a
    scikit-learn model that a post-processor fits itself (``prefit=False``) run only in that fit.  A private
    search calls this function before its one charge, so that such a model's refusal of the rows (NaN in
    ``X``, say) comes before the charge, as every other check does.  Nothing is released: the clone is
    discarded, and it reads no noise.  A wrapped model that charges privacy (a dpfair estimator, or a
    pipeline holding one) is not fitted here: its own dry run is part of the post-processor's.

    Parameters
    ----------
    post_processor : estimator
        An estimator with ``estimator`` and ``prefit`` parameters (anything else: nothing is done).
    X, y : array-like
        The rows ``post_processor`` would be fitted on.

    Raises
    ------
    TypeError, ValueError
        The clone's own refusal, naming ``X, y``, as :func:`fit_wrapped_estimator` words it.
    """
    try:
        own = post_processor.get_params(deep=False)
    except (AttributeError, TypeError):
        return
    estimator = own.get("estimator")
    if own.get("prefit", True) is not False or estimator is None or not hasattr(estimator, "fit") or y is None:
        return
    if fit_charges(estimator):  # a private model (or a pipeline of one): checked by its own dry run, never fitted here
        return
    try:
        clone(estimator).fit(X, column_or_1d(y, warn=False))
    except (TypeError, ValueError) as exc:
        raise _refused(exc, X, type(post_processor).__name__) from None


def _charges_privacy(estimator: Any) -> bool:
    """Whether fitting ``estimator`` charges a budget: a dpfair private estimator (it has an ``epsilon``)."""
    try:
        return "epsilon" in estimator.get_params(deep=False)
    except (AttributeError, TypeError):
        return False


def check_shared_budgets(caller: Any, prefit: bool, *, kind: str) -> None:
    """With ``prefit=False``, refuse before any fit budgets that cannot pay for the wrapped fit and ``caller``'s release.

    ``caller._dpfair_fit_charges()`` lists the wrapped estimator's charges first and ``caller``'s own
    last (see :func:`dpfair._estimator.fit_charges`).

    Raises
    ------
    PrivacyBudgetExceededError
        If a budget cannot pay for every charge made to it; nothing is charged.
    """
    if prefit or caller.estimator is None or not _charges_privacy(caller.estimator):
        # a non-private wrapped model charges nothing: the caller's own charge, after every check, refuses atomically
        return
    charges = list(caller._dpfair_fit_charges())
    # each charge under the relation it holds under: a post-processor that protects only the attribute charges
    # "change_attribute", which a budget kept under "replace" refuses; refused here, before the wrapped fit spends
    wrapped, own = _release_relation(caller.estimator), _release_relation(caller)
    check_budgets_cover(
        [(b, e, d, "estimator.budget", wrapped) if i < len(charges) - 1 else (b, e, d, "budget", own)
         for i, (b, e, d) in enumerate(charges)],
        fix=f"give the post-processor and its {kind} a budget that pays for both fits",
    )


def _release_relation(estimator: Any) -> str:
    """The neighbouring relation ``estimator``'s fit charges under: its ``_declared_relation()``, else replace-one."""
    declared = getattr(estimator, "_declared_relation", None)
    return declared() if callable(declared) and not isinstance(estimator, type) else REPLACE


def post_processor_fit_charges(post_processor: Any) -> list[tuple[PrivacyBudget | None, float, float]]:
    """``[(budget, epsilon, delta)]`` of one ``fit`` of a post-processor: its wrapped fit, then its own release.

    The ``_dpfair_fit_charges`` of every post-processor (read by :func:`dpfair._estimator.fit_charges`): with
    ``prefit=False`` the charges of fitting its ``estimator`` come first (none for a non-private one), then its
    own ``(epsilon, 0)`` to its ``budget``.  From the parameters alone: nothing is fitted or charged.

    Parameters
    ----------
    post_processor : estimator
        An estimator with ``estimator``, ``prefit``, ``epsilon`` and ``budget`` parameters.

    Returns
    -------
    list of (PrivacyBudget or None, float, float)

    Raises
    ------
    ValueError, TypeError
        If ``epsilon`` or ``budget`` (or a privacy parameter of the wrapped estimator) is invalid.
    """
    own = [(check_budget(post_processor.budget), check_epsilon(post_processor.epsilon), 0.0)]
    if post_processor.prefit is False and post_processor.estimator is not None:
        return fit_charges(post_processor.estimator) + own
    return own


def wrapped_privacy_spent(own: dict[str, Any], estimator: Any, *, prefit: bool, protects: str,
                          neighbouring: str) -> dict[str, Any]:
    """A post-processor's ``privacy_spent_``: ``own``, composed with a private wrapped estimator fitted here.

    With ``prefit=False`` and a fitted ``estimator`` that reports a ``privacy_spent_`` (a private dpfair
    estimator, trained on the same rows), the whole object's guarantee is their basic composition
    (:func:`dpfair._estimator.combined_privacy_spent`) for what both protect; otherwise it is ``own``.

    Parameters
    ----------
    own : dict
        The post-processor's own ``privacy_spent_`` (its release given the wrapped estimator).
    estimator : estimator or None
        The fitted wrapped estimator (``estimator_``).
    prefit : bool
        Already validated.
    protects, neighbouring : str
        What the composed guarantee protects, and under which neighbouring relation (words).

    Returns
    -------
    dict
        The one ``privacy_spent_`` shape.
    """
    if not prefit and private_base(estimator):
        return combined_privacy_spent(own, estimator, protects=protects, neighbouring=neighbouring)
    return own


def wrapped_feature_attributes(estimator: Any) -> dict[str, Any]:
    """``n_features_in_`` / ``feature_names_in_`` of a post-processor of ``estimator`` (``None``: 1 feature).

    Parameters
    ----------
    estimator : estimator or None
        The fitted wrapped estimator (``None``: ``X`` held the outputs, one column).

    Returns
    -------
    dict
        The attributes the fitted post-processor takes, by name (those the estimator lacks are left out).
    """
    out: dict[str, Any] = {}
    if estimator is None:
        out["n_features_in_"] = 1
    elif hasattr(estimator, "n_features_in_"):
        out["n_features_in_"] = estimator.n_features_in_
    if hasattr(estimator, "feature_names_in_"):
        out["feature_names_in_"] = estimator.feature_names_in_
    return out


def _score_targets(y: Any, *, real: bool) -> np.ndarray:
    """``y`` of :meth:`SensitiveScoreMixin.score` as a 1-d array: finite numbers (``real``) or labels without gaps."""
    if y is None:
        raise ValueError("y is required: pass the true target of every row, score(X, y, sensitive_features=g).")
    if real:
        arr = as_finite_array(y, "y", allow_bool=True)
    else:
        if isinstance(y, str | bytes):
            raise TypeError(f"y must hold one class label per row, got a {type(y).__name__}.")
        arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
        if arr.dtype.kind == "O" and pd.isna(pd.Series(arr.ravel(), dtype=object)).any():
            raise ValueError("y contains missing values (None or NaN); pass a class label for every row.")
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValueError("y contains NaN or infinite values; pass a class label for every row.")
        if arr.size == 0:
            raise ValueError("y is empty; pass at least one row.")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"y must be 1-dimensional (one value per row), got shape {arr.shape}.")
    return arr


class SensitiveScoreMixin:
    """``score(X, y, sample_weight=None, *, sensitive_features=None)`` of a post-processor (before the scikit-learn mixin).

    The score is R^2 (``_score_metric = "r2"``) or accuracy (``"accuracy"``) of :meth:`predict`, which
    receives ``sensitive_features``; routed by ``set_score_request(sensitive_features=True)``.
    """

    _score_metric: ClassVar[str] = "r2"

    def score(self, X: Any, y: Any, sample_weight: Any = None, *, sensitive_features: Any = None) -> float:
        """R^2 (regressors) or accuracy (classifiers) of :meth:`predict` on ``(X, y)``.

        Parameters
        ----------
        X : array-like
            As in :meth:`predict`.
        y : array-like of shape (n_samples,)
            True targets (finite numbers for a regressor, class labels for a classifier).
        sample_weight : array-like of shape (n_samples,) or None, default None
            Sample weights.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row; routed by ``set_score_request(sensitive_features=True)``.

        Returns
        -------
        float
            The score of the (randomized) predictions.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError, TypeError
            On invalid input (the message names the argument): ``y`` with NaN, of the wrong shape or
            length, or ``X`` / ``sensitive_features`` as in :meth:`predict`.
        """
        real = self._score_metric == "r2"
        y_true = _score_targets(y, real=real)
        pred = self.predict(X, sensitive_features=sensitive_features)
        if y_true.shape[0] != pred.shape[0]:
            raise ValueError(f"y must have one value per row of X ({pred.shape[0]} rows), got {y_true.shape[0]}.")
        metric = r2_score if real else accuracy_score
        return float(metric(y_true, pred, sample_weight=sample_weight))
