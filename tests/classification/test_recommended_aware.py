"""The attribute-aware fit below 2,000 rows: the constant mixed in, the table projected onto its public totals."""

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import dpfair.classification.postprocessing as pp
from dpfair.classification import DPEqualizedOddsPostProcessor, DPFairClassifier
from dpfair.classification._postprocessing_guarantee import base_scores, score_bins_of
from dpfair.classification._postprocessing_mix import (
    SMALL_SAMPLE_CONSTANT_MIX,
    SMALL_SAMPLE_ROWS,
    check_constant_mix,
    mixed_with_constant,
)
from dpfair.classification._postprocessing_table import projected_to_totals
from dpfair.linear_model import DPLogisticRegression
from dpfair.privacy import PrivacyBudget


def _rates(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``R[a, y] = sum_k p[k, a] q[k, a, y] / q_ay``."""
    return np.einsum("ka,kay->ay", p, q) / q.sum(axis=0)


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + 0.5 * group[:, None]
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=1.0, size=n) > 0.3).astype(int)
    return X, y, group


@pytest.mark.parametrize("positives_majority", [False, True])
def test_mix_scales_every_rate_difference_and_the_advantage_by_one_minus_the_share(positives_majority):
    rng = np.random.default_rng(3)
    q = rng.uniform(0.01, 0.1, size=(5, 3, 2))
    q[:, :, int(positives_majority)] *= 3.0  # the majority label decides the constant
    q /= q.sum()
    p = np.sort(rng.uniform(size=(5, 3)), axis=0)
    share = 0.12
    mixed, objective = mixed_with_constant(p, q, share)
    c = 1.0 if positives_majority else 0.0
    np.testing.assert_allclose(mixed, (1 - share) * p + share * c)
    before, after = _rates(q, p), _rates(q, mixed)
    for a in range(3):
        for b in range(3):  # every pairwise difference of every rate, times 1 - share
            np.testing.assert_allclose(after[a] - after[b], (1 - share) * (before[a] - before[b]), atol=1e-12)
    error = float((q[:, :, 0] * p + q[:, :, 1] * (1 - p)).sum())
    error_constant = float(q[:, :, 1].sum() if c == 0 else q[:, :, 0].sum())
    assert objective == pytest.approx((1 - share) * error + share * error_constant)
    assert np.all(np.diff(mixed, axis=0) >= 0)  # still a randomized threshold per group
    same, none = mixed_with_constant(p, q, 0.0)
    assert same is p and none is None


@pytest.mark.parametrize("bad", [1.0, 1.5, -0.1, math.nan, math.inf])
def test_constant_mix_refuses_a_share_outside_zero_one(bad):
    with pytest.raises(ValueError, match="constant_mix"):
        check_constant_mix(bad)
    X, y, group = _data(60)
    model = DPEqualizedOddsPostProcessor(LogisticRegression(), groups=[0, 1], prefit=False, random_state=0,
                                         constant_mix=bad)
    with pytest.raises(ValueError, match="constant_mix"):
        model.fit(X, y, sensitive_features=group)
    with pytest.raises(TypeError, match="constant_mix"):
        check_constant_mix("0.1")


@pytest.mark.parametrize("score_bins", [8, None])
def test_post_processor_mixes_the_same_release(score_bins):
    """The same noise (seed): the same released table; the rule is the unmixed one times 1 - share, plus share c."""
    X, y, group = _data(400)
    fits = {}
    for share in (0.0, 0.25):
        model = DPEqualizedOddsPostProcessor(LogisticRegression(), epsilon=1.0, groups=[0, 1], prefit=False,
                                             random_state=5, score_bins=score_bins, constant_mix=share)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[share] = model.fit(X, y, sensitive_features=group)
    plain, mixed = fits[0.0], fits[0.25]
    np.testing.assert_array_equal(plain.noisy_frequencies_, mixed.noisy_frequencies_)
    q = np.clip(plain.noisy_frequencies_, 0, None)
    c = float(q[:, :, 1].sum() > q[:, :, 0].sum())
    np.testing.assert_allclose(mixed.probabilities_, 0.75 * plain.probabilities_ + 0.25 * c)
    rows = _data(200, seed=9)
    held = [m.predict_proba(rows[0], sensitive_features=rows[2])[:, 1] for m in (plain, mixed)]
    for label in (0, 1):  # a held-out rate difference, exactly 0.75 of the unmixed one
        diff = [h[(rows[2] == 1) & (rows[1] == label)].mean() - h[(rows[2] == 0) & (rows[1] == label)].mean()
                for h in held]
        assert diff[1] == pytest.approx(0.75 * diff[0], abs=1e-12)
    default = DPEqualizedOddsPostProcessor(LogisticRegression(), epsilon=1.0, groups=[0, 1], prefit=False,
                                           random_state=5, score_bins=score_bins)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default.fit(X, y, sensitive_features=group)
    np.testing.assert_array_equal(default.probabilities_, plain.probabilities_)  # the default: unchanged bit for bit
    assert default.objective_ == plain.objective_


@pytest.mark.parametrize(("n", "protects", "expected"), [
    (SMALL_SAMPLE_ROWS - 1, "attribute", SMALL_SAMPLE_CONSTANT_MIX),
    (SMALL_SAMPLE_ROWS, "attribute", 0.0),
    (600, "records", 0.0),  # (m epsilon = 600: a table; below 500 the count alone)
])
def test_recommended_mixes_and_projects_below_the_public_row_count_only(n, protects, expected):
    X, y, group = _data(n)
    extra = {"data_norm": 10.0} if protects == "records" else {}
    model = DPFairClassifier(epsilon=1.0, groups=[0, 1], protects=protects, attribute_at_prediction=True,
                             random_state=0, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, sensitive_features=group)
    assert model.mechanism_ == "DPEqualizedOddsPostProcessor"
    assert model.estimator_.constant_mix == expected
    assert model.estimator_.public_totals is (expected > 0)


def test_recommended_mix_reads_the_row_count_not_the_attribute():
    """Scrambled groups and labels on the same number of rows: the same share (a public fact decides it)."""
    X, y, group = _data(500)
    shares = []
    for g, labels in ((group, y), (np.random.default_rng(1).permutation(group), 1 - y)):
        model = DPFairClassifier(epsilon=1.0, groups=[0, 1], attribute_at_prediction=True, random_state=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, labels, sensitive_features=g)
        shares.append(model.estimator_.constant_mix)
    assert shares == [SMALL_SAMPLE_CONSTANT_MIX, SMALL_SAMPLE_CONSTANT_MIX]


def test_projection_onto_the_totals_removes_the_noise_common_to_the_groups():
    """Least squares onto sum_a q[k, a, y] = t[k, y]: the error left is W - mean_a W, cell by cell (closed form)."""
    rng = np.random.default_rng(4)
    q_hat = rng.dirichlet(np.ones(24)).reshape(4, 3, 2)
    noise = rng.laplace(scale=0.01, size=q_hat.shape)
    totals = q_hat.sum(axis=1)
    projected = projected_to_totals(q_hat + noise, totals)
    np.testing.assert_allclose(projected.sum(axis=1), totals, atol=1e-15)
    np.testing.assert_allclose(projected - q_hat, noise - noise.mean(axis=1, keepdims=True), atol=1e-15)
    np.testing.assert_allclose(projected_to_totals(q_hat, totals), q_hat, atol=1e-15)  # consistent: unchanged
    table = q_hat + noise
    assert projected_to_totals(table, None) is table


def test_projection_reads_the_totals_of_x_and_y_only(monkeypatch):
    """The totals the table is projected onto: the (bin, label) frequencies of (X, y), the same under scrambled groups."""
    X, y, group = _data(500)
    seen = []
    original = pp.projected_to_totals
    monkeypatch.setattr(pp, "projected_to_totals", lambda q, t: seen.append(t) or original(q, t))
    for g in (group, np.random.default_rng(7).permutation(group)):
        model = DPEqualizedOddsPostProcessor(LogisticRegression(), epsilon=1.0, groups=[0, 1], prefit=False,
                                             random_state=3, public_totals=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y, sensitive_features=g)
    bins = score_bins_of(base_scores(model.estimator_, X, model.classes_), 8)
    expected = np.array([[np.mean((bins == k) & (y == label)) for label in (0, 1)] for k in range(8)])
    np.testing.assert_array_equal(seen[0], seen[1])
    np.testing.assert_allclose(seen[0], expected, atol=1e-15)


def test_projection_is_refused_where_the_labels_are_private():
    X, y, group = _data(200)
    budget = PrivacyBudget(5.0)
    model = DPEqualizedOddsPostProcessor(DPLogisticRegression(epsilon=1.0, data_norm=10.0), epsilon=1.0,
                                         groups=[0, 1], prefit=False, budget=budget, random_state=0,
                                         public_totals=True)
    with pytest.raises(ValueError, match="public_totals=True reads the exact"):
        model.fit(X, y, sensitive_features=group)
    assert budget.spent()[0] == 0
    with pytest.raises(TypeError, match="public_totals"):
        DPEqualizedOddsPostProcessor(LogisticRegression(), groups=[0, 1], prefit=False,
                                     public_totals="yes").fit(X, y, sensitive_features=group)


def test_projection_changes_the_rule_not_the_release_and_the_guarantee_reads_the_release():
    """Same seed: the release is the same with or without the projection, the rule is not; with three groups the
    guarantee is computed on the release itself (its proof bounds each released cell's Laplace noise, which the
    projection mixes across the groups)."""
    from dpfair.classification._frequency_table import valid_frequencies
    from dpfair.classification._postprocessing_guarantee import guaranteed_violation

    rng = np.random.default_rng(11)
    n = 900
    group = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 3)) + 0.4 * group[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.4).astype(int)
    fits = {}
    for projected in (False, True):
        model = DPEqualizedOddsPostProcessor(LogisticRegression(), epsilon=1.0, groups=[0, 1, 2], prefit=False,
                                             random_state=5, public_totals=projected)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[projected] = model.fit(X, y, sensitive_features=group)
    np.testing.assert_array_equal(fits[False].noisy_frequencies_, fits[True].noisy_frequencies_)
    assert not np.allclose(fits[False].probabilities_, fits[True].probabilities_)
    fit = fits[True]
    mass = fit.noisy_frequencies_.sum(axis=(0, 2))  # the projection moves every group's mass alike: same anchor
    anchor = int(np.argmax(mass))
    order = np.array([anchor] + [a for a in range(3) if a != anchor])
    expected, _ = guaranteed_violation(valid_frequencies(fit.noisy_frequencies_[:, order, :]),
                                       fit.probabilities_[:, order], n, 1.0, 0.05, pp._CONSTRAINED_LABELS["equalized_odds"])
    assert fit.guaranteed_violation_ == pytest.approx(expected, rel=1e-12)


def test_on_its_defaults_with_secure_noise_the_small_sample_rule_is_mixed_and_charged_once():
    """As users run it: no seed (secure noise), default arguments, 800 rows; the rule is the mixed one."""
    X, y, group = _data(800, seed=2)
    budget = PrivacyBudget(1.0, neighbouring="change_attribute")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPFairClassifier(epsilon=1.0, groups=[0, 1], attribute_at_prediction=True, budget=budget)
        model.fit(X, y, sensitive_features=group)
    inner = model.estimator_
    assert model.privacy_spent_["noise"] == "secure" and model.privacy_spent_["epsilon"] == 1.0
    assert budget.spent()[0] == pytest.approx(1.0)
    assert inner.constant_mix == SMALL_SAMPLE_CONSTANT_MIX and inner.public_totals is True
    p = inner.probabilities_  # (1 - lambda) p_LP + lambda c with c in {0, 1}: within [lambda, 1] or [0, 1 - lambda]
    lam = SMALL_SAMPLE_CONSTANT_MIX
    assert np.all(p >= lam - 1e-12) or np.all(p <= 1 - lam + 1e-12)
    proba = model.predict_proba(X, sensitive_features=group)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
