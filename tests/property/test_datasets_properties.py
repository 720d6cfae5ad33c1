"""Property tests (hypothesis) for the public entry points of :mod:`dpfair.datasets`.

Loaders never touch the network here (``download=False``, or an argument error that comes
first): given a data home whose files are missing, garbage, empty, truncated, folders or the
real ones, each loader returns a consistent dataset or raises ``DataUnavailableError`` /
``DataIntegrityError`` naming the file, the data home and the fix.  Odd arguments raise
``ValueError`` / ``TypeError`` naming the argument.  Synthetic generators, given odd
arguments, return finite arrays of the documented shapes or raise ``ValueError`` /
``TypeError`` naming the argument; never another exception, never a warning, never NaN.
"""

from __future__ import annotations

import math
import os
import tempfile
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dpfair import datasets as ds
from dpfair.datasets import DATASETS, REMOTE_FILES, DataIntegrityError, DataUnavailableError

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

REAL_HOME = Path(os.environ.get("DPFAIR_DATA_HOME", "/nonexistent"))
LOADERS = {
    "communities": lambda **kw: ds.load_communities("uci", **kw),
    "law_school": ds.load_law_school,
    "fico": ds.load_fico,
    "adult": ds.load_adult,
    "acs": lambda **kw: ds.load_acs_excerpt("ma", **kw),
}


def _real(path: str) -> Path | None:
    candidate = REAL_HOME / path
    return candidate if candidate.is_file() else None


def expect(call, names):
    """Run ``call``: a result, or a ValueError / TypeError naming one of ``names``; nothing else, no warning."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return call()
    except (ValueError, TypeError) as exc:
        assert any(name in str(exc) for name in names), f"message does not name the argument: {exc!r}"
        return None


# --- loaders and the data home -----------------------------------------------------------------------

FILE_STATES = ["missing", "garbage", "empty", "folder", "truncated", "real"]


def _stage(home: Path, path: str, state: str) -> None:
    target = home / path
    target.parent.mkdir(parents=True, exist_ok=True)
    real = _real(path)
    if state == "garbage":
        target.write_bytes(b"\x00\xff not,the,file\n" * 10)
    elif state == "empty":
        target.write_bytes(b"")
    elif state == "folder":
        target.mkdir()
    elif state == "truncated" and real is not None:
        with open(real, "rb") as fh:
            target.write_bytes(fh.read(4096))
    elif state == "real" and real is not None:
        target.symlink_to(real)


@SETTINGS
@given(st.sampled_from(sorted(DATASETS)), st.data())
def test_loaders_given_odd_files_in_the_data_home(name, data):
    files = DATASETS[name]
    states = [data.draw(st.sampled_from(FILE_STATES[:-1] if _real(p) is None else FILE_STATES), label=p) for p in files]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        for path, state in zip(files, states, strict=True):
            _stage(home, path, state)
        first_bad = next(((p, s) for p, s in zip(files, states, strict=True) if s != "real"), None)
        if first_bad is None:
            result = LOADERS[name](data_home=home, download=False)
            _check_loaded(result)
            return
        path, state = first_bad
        expected = (
            DataUnavailableError if state == "missing" or (state == "truncated" and _real(path) is None) else DataIntegrityError
        )
        with pytest.raises(expected) as info:
            LOADERS[name](data_home=home, download=False)
        message = str(info.value)
        assert str(home / path) in message
        # a missing file points at the data home's setting; a corrupt one at the fix for that very file
        assert ("DPFAIR_DATA_HOME" in message) if expected is DataUnavailableError else ("dpfair data fetch" in message)
        if state in ("garbage", "empty", "folder"):
            assert "sha256" in message or "move it aside" in message


def _check_loaded(result) -> None:
    if isinstance(result, ds.FicoData):
        assert result.pmf.shape == result.non_default.shape == (result.scores.size, len(result.groups))
        assert np.isfinite(result.pmf.to_numpy()).all()
        return
    assert isinstance(result, ds.Dataset)
    assert len(result.X) == len(result.y) == len(result.sensitive) > 0
    assert np.isfinite(result.y.to_numpy(float)).all() and not result.sensitive.isna().any()


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_real_files_load_consistently(name):
    if any(_real(p) is None for p in DATASETS[name]):
        pytest.skip(f"{name} is not in DPFAIR_DATA_HOME")
    _check_loaded(LOADERS[name](data_home=REAL_HOME, download=False))


ODD = st.one_of(
    st.none(),
    st.integers(-2, 2),
    st.floats(allow_nan=True),
    st.text(max_size=4),
    st.binary(max_size=3),
    st.just(["uci"]),
    st.just({"a": 1}),
    st.just(np.array(["ma"])),
)
NOT_TRUE = ODD.filter(lambda v: not (isinstance(v, bool | np.bool_) and v))  # True would reach for the network


@SETTINGS
@given(
    variant=st.one_of(st.sampled_from(["uci", "kearns"]), ODD),
    region=st.one_of(st.sampled_from(["ma", "tx", "national"]), ODD),
    drop_missing=st.one_of(st.booleans(), ODD),
    download=st.one_of(st.just(False), NOT_TRUE),
    data_home=st.one_of(st.just("EMPTY"), st.just("a\x00b"), st.integers(), st.just(b"bytes"), st.just(3.5)),
)
@example(variant="bogus", region="ma", drop_missing=True, download=False, data_home="EMPTY")
def test_loader_arguments(variant, region, drop_missing, download, data_home):
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) if data_home == "EMPTY" else data_home
        calls = {
            "load_communities": (lambda: ds.load_communities(variant, data_home=home, download=download), ("variant",)),
            "load_acs_excerpt": (lambda: ds.load_acs_excerpt(region, data_home=home, download=download), ("region",)),
            "load_adult": (
                lambda: ds.load_adult(drop_missing=drop_missing, data_home=home, download=download),
                ("drop_missing",),
            ),
            "load_fico": (lambda: ds.load_fico(data_home=home, download=download), ()),
            "load_law_school": (lambda: ds.load_law_school(data_home=home, download=download), ()),
        }
        for call, names in calls.values():
            try:
                result = expect(call, (*names, "data_home", "download"))
            except DataUnavailableError as exc:  # every argument was valid; the empty data home has no files
                assert str(tmp) in str(exc) and "dpfair data fetch" in str(exc)
                continue
            assert result is None, "a loader returned data from an empty data home"


def test_environment_data_home_without_files_is_a_clear_error(tmp_path):
    with mock.patch.dict(os.environ, {"DPFAIR_DATA_HOME": str(tmp_path / "nothing")}):
        assert ds.get_data_home() == tmp_path / "nothing"
        with pytest.raises(DataUnavailableError, match="DPFAIR_DATA_HOME") as info:
            ds.load_adult(download=False)
    assert str(tmp_path / "nothing" / "adult" / "adult.data") in str(info.value)


@SETTINGS
@given(
    name=st.one_of(st.sampled_from(sorted(DATASETS)), ODD),
    retries=st.one_of(st.integers(-2, 3), ODD),
    backoff=st.one_of(st.floats(allow_nan=True, allow_infinity=True), ODD),
    timeout=st.one_of(st.floats(allow_nan=True, allow_infinity=True), ODD),
    remote=st.one_of(st.sampled_from(sorted(REMOTE_FILES)), ODD),
)
def test_dataset_paths_and_fetch_file_arguments(name, retries, backoff, timeout, remote):
    with tempfile.TemporaryDirectory() as tmp:
        try:
            expect(lambda: ds.dataset_paths(name, tmp, download=False), ("name",))
        except DataUnavailableError:
            assert name in DATASETS
        file = REMOTE_FILES.get(remote) if isinstance(remote, str) else remote
        try:
            expect(
                lambda: ds.fetch_file(file, tmp, download=False, retries=retries, backoff=backoff, timeout=timeout),
                ("remote", "retries", "backoff", "timeout"),
            )
        except DataUnavailableError:
            assert isinstance(file, ds.RemoteFile)


def test_a_folder_in_place_of_a_file_is_an_integrity_error(tmp_path):
    (tmp_path / "fico" / "totals.csv").mkdir(parents=True)
    with pytest.raises(DataIntegrityError, match="move it aside"):
        ds.fetch_file(REMOTE_FILES["fico/totals.csv"], tmp_path, download=False)


def test_a_file_in_place_of_the_data_home_folder_is_reported_not_crashed(tmp_path):
    blocker = tmp_path / "home"
    blocker.write_text("not a folder")
    with pytest.raises(DataUnavailableError, match="cannot create the folder"):
        ds.fetch_file(REMOTE_FILES["fico/totals.csv"], blocker, retries=0)  # fails before any network use


# --- synthetic generators ---------------------------------------------------------------------------------

SIZES = st.one_of(
    st.integers(1, 6), st.integers(1, 6), st.integers(-3, 0), st.floats(0, 5), st.booleans(), st.none(), st.text(max_size=2)
)
REALS = st.one_of(
    st.floats(-3, 3),
    st.floats(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 5e-324, 0.0]),
    st.integers(-(10**400), 10**400),
    st.booleans(),
    st.none(),
    st.text(max_size=2),
    st.complex_numbers(max_magnitude=1.0),
)
SEEDS = st.one_of(
    st.none(),
    st.integers(0, 2**70),
    st.integers(-5, -1),
    st.floats(0, 3),
    st.text(max_size=2),
    st.booleans(),
    st.builds(np.random.default_rng, st.integers(0, 9)),
)


@SETTINGS
@given(SIZES, SIZES, SIZES, REALS, REALS, SEEDS)
@example(3, 2, 2, 1e308, 0.1, 0)
@example(3, 2, 2, 1e200, 0.1, 0)
@example(3, 2, 2, 0.5, 1e308, 0)
@example(3, 2, 2, 0.5, math.nan, 0)
def test_make_bandit_contexts(n_rounds, n_arms, dim, group_shift, noise_sd, random_state):
    names = ("n_rounds", "n_arms", "dim", "group_shift", "noise_sd", "random_state")
    out = expect(
        lambda: ds.make_bandit_contexts(
            n_rounds, n_arms, dim, group_shift=group_shift, noise_sd=noise_sd, random_state=random_state
        ),
        names,
    )
    if out is None:
        return
    assert out["contexts"].shape == (n_rounds, n_arms, dim) and out["theta"].shape == (dim,)
    assert out["mean_rewards"].shape == out["rewards"].shape == (n_rounds, n_arms)
    assert all(np.isfinite(v).all() for v in out.values())
    norms = np.linalg.norm(out["contexts"], axis=-1)
    assert norms.max() <= 1 + 1e-9 and norms.min() > 0
    assert np.linalg.norm(out["theta"]) == pytest.approx(1.0)


def test_bandit_contexts_are_unchanged_for_small_shifts():
    # the overflow-safe branch (group_shift > 1) must not change the existing streams
    a = ds.make_bandit_contexts(20, 3, 4, group_shift=0.5, random_state=3)["contexts"]
    rng = np.random.default_rng(3)
    theta = rng.normal(size=4)
    means = 0.5 * rng.normal(size=(3, 4)) / 2.0
    contexts = means[None] + rng.normal(size=(20, 3, 4)) / 2.0
    contexts /= np.maximum(np.linalg.norm(contexts, axis=-1, keepdims=True), 1.0)
    np.testing.assert_array_equal(a, contexts)
    assert theta.shape == (4,)
    # and for a large shift it equals the exact formula where that formula does not overflow
    b = ds.make_bandit_contexts(20, 3, 4, group_shift=7.0, random_state=3)["contexts"]
    rng = np.random.default_rng(3)
    rng.normal(size=4)
    means = 7.0 * rng.normal(size=(3, 4)) / 2.0
    contexts = means[None] + rng.normal(size=(20, 3, 4)) / 2.0
    contexts /= np.maximum(np.linalg.norm(contexts, axis=-1, keepdims=True), 1.0)
    np.testing.assert_allclose(b, contexts, rtol=1e-12, atol=1e-15)


def _vector(draw, n):
    kind = draw(st.sampled_from(["probs", "probs", "odd", "array"]))
    if kind == "probs":
        return tuple(draw(st.lists(st.floats(0.05, 0.95), min_size=n, max_size=n)))
    if kind == "array":
        return np.asarray(draw(st.lists(REALS.filter(lambda v: isinstance(v, float)), min_size=0, max_size=4)))
    return draw(st.one_of(REALS, st.lists(REALS, max_size=3), st.just(pd.Series([0.5, 0.5], index=[9, 3]))))


@st.composite
def selection_arguments(draw):
    n_groups = draw(st.integers(1, 3))
    grid_kind = draw(st.sampled_from(["grid", "grid", "odd"]))
    if grid_kind == "grid":
        lo = draw(st.floats(-1e3, 1e3))
        score_values = np.linspace(lo, lo + draw(st.floats(1e-3, 1e3)), draw(st.integers(2, 12)))
    else:
        score_values = draw(
            st.one_of(st.lists(REALS, max_size=5), REALS, st.just([1.0, 0.0, 2.0]), st.just([0.5, 0.5]), st.just([-1e308, 1e308]))
        )
    if draw(st.booleans()):
        p = np.asarray(draw(st.lists(st.floats(0.1, 1.0), min_size=n_groups, max_size=n_groups)))
        group_probabilities = tuple(p / p.sum())
    else:
        group_probabilities = _vector(draw, n_groups)
    kwargs = {
        "group_probabilities": group_probabilities,
        "qualified_rates": _vector(draw, n_groups),
        "qualified_means": _vector(draw, n_groups),
        "unqualified_means": _vector(draw, n_groups),
        "concentration": draw(st.one_of(st.floats(0.5, 50), REALS)),
    }
    return score_values, kwargs


@SETTINGS
@given(selection_arguments())
@example((np.linspace(0, 1, 5), {"concentration": 1e300}))
@example((np.linspace(0, 1, 5), {"concentration": 1e-300}))
@example(([0.0, 0.0], {}))
@example(([0.3, 0.2, 0.9], {}))
@example((np.linspace(0, 1, 5), {"group_probabilities": (0.5, 0.5), "qualified_rates": (0.5,)}))
@example((np.linspace(0, 1, 5), {"qualified_rates": (1.5, 0.5)}))
def test_make_selection_pmf(arguments):
    score_values, kwargs = arguments
    names = ("score_values", *kwargs, "group_probabilities", "qualified_rates", "qualified_means", "unqualified_means")
    pmf = expect(lambda: ds.make_selection_pmf(score_values, **kwargs), names)
    if pmf is None:
        return
    n_groups = len(np.atleast_1d(kwargs.get("group_probabilities", (0.5, 0.5))))
    assert pmf.shape == (n_groups, 2, len(score_values))
    assert np.isfinite(pmf).all() and (pmf >= 0).all() and pmf.sum() == pytest.approx(1.0)


@SETTINGS
@given(SIZES, SIZES, SIZES, REALS, SEEDS)
@example(5, 2, 3, 1e308, 0)
@example(5, 2, 3, math.inf, 0)
@example(5, 0, 3, 1.0, 0)
@example(5, 2, 0, 1.0, 0)
def test_make_regression(n_samples, n_groups, n_features, disparity, random_state):
    names = ("n_samples", "n_groups", "n_features", "disparity", "random_state")
    out = expect(
        lambda: ds.make_regression(
            n_samples, n_groups=n_groups, n_features=n_features, disparity=disparity, random_state=random_state
        ),
        names,
    )
    if out is None:
        return
    X, y, groups = out
    assert X.shape == (n_samples, n_features) and y.shape == groups.shape == (n_samples,)
    assert np.isfinite(X).all() and np.isfinite(y).all() and ((y >= 0) & (y <= 1)).all()
    assert ((groups >= 0) & (groups < n_groups)).all()


@SETTINGS
@given(SIZES, SIZES, REALS, SEEDS)
@example(5, 3, 1e308, 0)
@example(5, 3, math.nan, 0)
def test_make_classification(n_samples, n_features, disparity, random_state):
    names = ("n_samples", "n_features", "disparity", "random_state")
    out = expect(
        lambda: ds.make_classification(n_samples, n_features=n_features, disparity=disparity, random_state=random_state), names
    )
    if out is None:
        return
    X, y, groups = out
    assert X.shape == (n_samples, n_features) and y.shape == groups.shape == (n_samples,)
    assert np.isfinite(X).all() and set(np.unique(y)) <= {0, 1} and set(np.unique(groups)) <= {0, 1}


def test_seeded_generators_are_reproducible():
    for make in (ds.make_regression, ds.make_classification):
        a, b = make(30, random_state=4), make(30, random_state=4)
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
