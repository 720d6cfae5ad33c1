"""At ``epsilon = inf`` :class:`PrivateMetricFrame` is fairlearn's ``MetricFrame``: the installed fairlearn is the oracle.

Every accessor (``overall``, ``by_group``, the summaries with ``errors="raise"`` and ``"coerce"``, and the ``*_ci``
lists of fairlearn's seeded bootstrap) is compared with fairlearn's on the same arguments, for the metric kinds the
private table cannot release: any callable, a non-scalar ``confusion_matrix``, per-metric ``sample_params``,
multiclass labels.  Then fairlearn's refusals (messages word for word) and the single-group 0/0 ratio.
"""

import functools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn.metrics as skm

fairlearn_metrics = pytest.importorskip("fairlearn.metrics")

from dpfair.metrics import PrivateMetricFrame  # noqa: E402
from dpfair.privacy import PrivacyLeakWarning  # noqa: E402

RNG = np.random.default_rng(7)
N = 150
Y_TRUE, Y_PRED = RNG.integers(0, 2, N), RNG.integers(0, 2, N)
GROUP, CONTROL = RNG.choice(["a", "b", "c"], N), RNG.choice(["x", "y"], N)
WEIGHT = RNG.integers(1, 4, N)
SUMMARIES = ("group_min", "group_max", "difference", "ratio")


def _both(**kwargs):
    arguments = {"y_true": Y_TRUE, "y_pred": Y_PRED, "sensitive_features": GROUP, **kwargs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = fairlearn_metrics.MetricFrame(**arguments)
    with pytest.warns(PrivacyLeakWarning):
        frame = PrivateMetricFrame(**arguments, epsilon=math.inf)
    return reference, frame


def _outcome(frame, name, errors):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return repr(getattr(frame, name)(errors=errors))
    except ValueError as exc:
        return f"ValueError: {exc}"


CASES = {
    "lambda": dict(metrics=lambda t, p: float(np.mean(t == p))),
    "confusion_matrix": dict(metrics=skm.confusion_matrix),
    "mixed dict, controls": dict(metrics={"recall": skm.recall_score, "cm": skm.confusion_matrix},
                                 control_features=CONTROL),
    "weights on one metric": dict(metrics={"recall": skm.recall_score, "precision": skm.precision_score},
                                  sample_params={"recall": {"sample_weight": WEIGHT}}),
    "multiclass": dict(metrics=functools.partial(skm.recall_score, average="macro"),
                       y_true=RNG.integers(0, 3, N), y_pred=RNG.integers(0, 3, N)),
    "empty dict, controls": dict(metrics={}, control_features=CONTROL),
    "2-d multi-output": dict(metrics=functools.partial(skm.mean_squared_error, multioutput="raw_values"),
                             y_true=RNG.random((N, 2)), y_pred=RNG.random((N, 2))),
    "per-class scores": dict(metrics=functools.partial(skm.roc_auc_score, multi_class="ovr", labels=[0, 1, 2]),
                             y_true=np.tile([0, 1, 2], N // 3), y_pred=RNG.dirichlet(np.ones(3), N)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_accessor_equals_fairlearns(case):
    reference, frame = _both(**CASES[case])
    for name in ("overall", "by_group"):
        assert repr(getattr(frame, name)) == repr(getattr(reference, name)), name
    for name in SUMMARIES:
        for errors in ("raise", "coerce"):
            assert _outcome(frame, name, errors) == _outcome(reference, name, errors), (name, errors)
    assert frame.ci_quantiles is None and frame.n_boot is None
    assert frame._user_supplied_callable is reference._user_supplied_callable
    with pytest.raises(ValueError, match="Bootstrapping parameters n_boot and ci_quantiles were not specified"):
        frame.overall_ci  # noqa: B018


def test_the_bootstrap_equals_fairlearns_with_the_same_random_state():
    kwargs = dict(metrics={"mse": skm.mean_squared_error, "frac": lambda t, p: len(t) / N}, control_features=CONTROL,
                  n_boot=12, ci_quantiles=[0.1, 0.5, 0.9], random_state=20231020)
    reference, frame = _both(**kwargs)
    assert repr(frame.overall_ci) == repr(reference.overall_ci)
    assert repr(frame.by_group_ci) == repr(reference.by_group_ci)
    for name in ("group_min_ci", "group_max_ci", "difference_ci", "ratio_ci"):
        assert repr(getattr(frame, name)()) == repr(getattr(reference, name)()), name
    assert repr(frame.ratio_ci(method="to_overall")) == repr(reference.ratio_ci(method="to_overall"))


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(n_boot=10), "Must specify both n_boot and ci_quantiles"),
    (dict(n_boot=0, ci_quantiles=[0.5]), "Must have n_boot be a positive integer"),
    (dict(n_boot=5, ci_quantiles=[1.0]), "Must have all ci_quantiles be floats in (0, 1)"),
    (dict(n_boot=5, ci_quantiles=[0.5], random_state="abd"), "Unsupported random_state: abd"),
    (dict(sample_params=[1]), "Sample parameters must be a dictionary"),
    (dict(metrics={"r": skm.recall_score}, sample_params={"s": {}}), "Keys in 'sample_params' do not match those in 'metric'"),
])
def test_fairlearns_refusals_word_for_word(kwargs, message):
    arguments = {"metrics": skm.recall_score, **kwargs}
    with pytest.raises(ValueError) as reference:
        fairlearn_metrics.MetricFrame(y_true=Y_TRUE, y_pred=Y_PRED, sensitive_features=GROUP, **arguments)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError) as ours:
            PrivateMetricFrame(y_true=Y_TRUE, y_pred=Y_PRED, sensitive_features=GROUP, epsilon=math.inf, **arguments)
    assert ours.value.args[0] == reference.value.args[0] == message


def test_a_callable_is_refused_at_a_finite_epsilon():
    with pytest.raises(ValueError, match="not supported"):
        PrivateMetricFrame(metrics=lambda t, p: 0.0, y_true=Y_TRUE, y_pred=Y_PRED, sensitive_features=GROUP,
                           epsilon=1.0, groups=["a", "b", "c"])


@pytest.mark.parametrize("epsilon", [math.inf, 1e6])
def test_a_single_groups_ratio_is_nan_for_zero_over_zero_as_fairlearns(epsilon):
    zeros = np.zeros(40, dtype=int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = PrivateMetricFrame(metrics="selection_rate", y_true=zeros, y_pred=zeros, sensitive_features=["a"] * 40,
                                   groups=["a"], epsilon=epsilon, noise_random_state=0)
        reference = fairlearn_metrics.MetricFrame(metrics=fairlearn_metrics.selection_rate, y_true=zeros, y_pred=zeros,
                                                  sensitive_features=["a"] * 40)
    assert math.isnan(reference.ratio()) and math.isnan(frame.ratio()) and frame.difference() == 0.0
    assert frame.conf_int["ratio"]["lower"] == 0.0 and frame.conf_int["ratio"]["upper"] == 1.0
    ones = np.ones(40, dtype=int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = PrivateMetricFrame(metrics="selection_rate", y_true=ones, y_pred=ones, sensitive_features=["a"] * 40,
                                   groups=["a"], epsilon=epsilon, noise_random_state=0)
    assert frame.ratio() == 1.0 and frame.difference() == 0.0


def test_labels_other_than_0_1_leave_the_table_extras_refused_by_name():
    reference, frame = _both(metrics={"accuracy": skm.accuracy_score}, y_true=RNG.integers(0, 3, N),
                             y_pred=RNG.integers(0, 3, N))
    assert repr(frame.by_group) == repr(reference.by_group)  # accuracy_score called on every group's rows
    with pytest.raises(ValueError, match="conf_int is not available"):
        frame.conf_int  # noqa: B018
    assert list(frame.noisy_table_.columns) == ["count"]
    assert pd.api.types.is_integer_dtype(frame.group_sizes_)


def test_a_bare_callables_column_is_named_as_fairlearn_names_it():
    named = functools.partial(skm.precision_score, zero_division=0)
    named.__name__ = "precision_score_zero_div"
    for metric, name in ((named, "precision_score_zero_div"), (skm.recall_score, "recall_score")):
        reference, frame = _both(metrics=metric, control_features=CONTROL)
        assert frame.by_group.name == reference.by_group.name == name
        assert repr(frame.ratio(method="to_overall")) == repr(reference.ratio(method="to_overall"))
