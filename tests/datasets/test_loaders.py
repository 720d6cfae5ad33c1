"""Loaders against the staged copies in DPFAIR_DATA_HOME (row and group counts from PROVENANCE.md)."""

import numpy as np
import pytest

from dpfair import datasets as ds
from dpfair.datasets import DataUnavailableError


def _available(name):
    try:
        ds.dataset_paths(name, download=False)
        return True
    except DataUnavailableError:
        return False


def needs(name):
    return pytest.mark.skipif(not _available(name), reason=f"{name} is not in DPFAIR_DATA_HOME (run `dpfair data fetch {name}`)")


@needs("law_school")
def test_law_school():
    d = ds.load_law_school()
    assert len(d.y) == 21_983
    assert d.sensitive.value_counts().to_dict() == {"white": 18_716, "black": 1_343, "hisp": 1_027, "asian": 897}
    assert 1.0 <= d.y.min() and d.y.max() <= 4.0


@needs("communities")
def test_communities_both_variants():
    reg = ds.load_communities("uci")
    assert reg.X.shape == (1994, 99) and not reg.X.isna().any().any()
    assert sorted(reg.sensitive.value_counts().tolist()) == [970, 1024]
    assert reg.y.between(0, 1).all()
    clf = ds.load_communities("kearns")
    assert int(clf.y.sum()) == 583 and len(clf.y) == 1994
    assert sorted(clf.sensitive.value_counts().tolist()) == [970, 1024]
    assert "racepctblack" not in clf.X.columns
    with pytest.raises(ValueError, match="variant"):
        ds.load_communities("other")


@needs("fico")
def test_fico():
    f = ds.load_fico()
    assert f.scores.shape == (198,) and f.scores.min() == 0.0 and f.scores.max() == 1.0
    np.testing.assert_allclose(f.pmf.sum().to_numpy(), 1.0)
    assert f.totals.to_dict() == {"white": 133_165, "black": 18_274, "hispanic": 14_702, "asian": 7_906}
    assert f.non_default["white"].iloc[0] == pytest.approx(1 - 0.9854)
    assert (f.non_default.diff().iloc[1:] >= -0.05).all().all()  # non-default rises with the score


@needs("adult")
def test_adult():
    d = ds.load_adult()
    assert len(d.y) == 45_222
    assert (d.extra["split"] == "train").sum() == 30_162


@needs("acs")
def test_acs():
    d = ds.load_acs_excerpt("ma")
    assert set(d.sensitive.unique()) <= {"white", "black", "asian", "other"}
    assert d.y.isin([0, 1]).all() and len(d.y) > 1000
    with pytest.raises(ValueError, match="region"):
        ds.load_acs_excerpt("ca")


def test_synthetic_generators_are_seeded():
    a = ds.make_bandit_contexts(50, 4, 3, random_state=1)
    b = ds.make_bandit_contexts(50, 4, 3, random_state=1)
    np.testing.assert_array_equal(a["contexts"], b["contexts"])
    assert np.linalg.norm(a["contexts"], axis=-1).max() <= 1 + 1e-12
    pmf = ds.make_selection_pmf(np.linspace(0, 1, 11), group_probabilities=(0.1, 0.9), qualified_rates=(0.3, 0.4))
    assert pmf.shape == (2, 2, 11) and pmf.sum() == pytest.approx(1.0)
    assert pmf[0].sum() == pytest.approx(0.1) and pmf[0, 1].sum() == pytest.approx(0.03)
    X, y, _ = ds.make_regression(100, disparity=2.0, random_state=0)
    assert X.shape == (100, 5) and ((0 < y) & (y < 1)).all()
    X, y, _ = ds.make_classification(100, random_state=0)
    assert set(np.unique(y)) <= {0, 1}


def test_regressions_found_by_hypothesis(tmp_path):
    # arguments are checked before the files are looked up (and before any download)
    with pytest.raises(ValueError, match="variant"):
        ds.load_communities("other", data_home=tmp_path, download=False)
    with pytest.raises(TypeError, match="region"):
        ds.load_acs_excerpt(["ma"], data_home=tmp_path)
    with pytest.raises(TypeError, match="download"):
        ds.load_adult(data_home=tmp_path, download="no")
    with pytest.raises(TypeError, match="data_home"):
        ds.load_fico(data_home=3, download=False)
    with pytest.raises(TypeError, match="name"):
        ds.dataset_paths(["adult"], tmp_path, download=False)
    with pytest.raises(TypeError, match="remote"):
        ds.fetch_file("fico/totals.csv", tmp_path, download=False)
    # a folder where a file should be is an integrity error, not IsADirectoryError
    (tmp_path / "law_school" / "bar_pass_prediction.csv").mkdir(parents=True)
    with pytest.raises(ds.DataIntegrityError, match="move it aside"):
        ds.load_law_school(data_home=tmp_path, download=False)
    # generators: overflow and bad sizes raise or stay finite, never NaN or an unnamed numpy error
    contexts = ds.make_bandit_contexts(3, 2, 2, group_shift=1e200, random_state=0)["contexts"]
    np.testing.assert_allclose(np.linalg.norm(contexts, axis=-1), 1.0)
    with pytest.raises(ValueError, match="noise_sd"):
        ds.make_bandit_contexts(3, 2, 2, noise_sd=float("nan"))
    with pytest.raises(ValueError, match="n_groups"):
        ds.make_regression(5, n_groups=0)
    with pytest.raises(ValueError, match="disparity"):
        ds.make_classification(5, disparity=float("inf"))
    with pytest.raises(TypeError, match="random_state"):
        ds.make_regression(5, random_state="seed")
    with pytest.raises(ValueError, match="score_values"):
        ds.make_selection_pmf([0.5, 0.5])
    with pytest.raises(ValueError, match="qualified_rates"):
        ds.make_selection_pmf(np.linspace(0, 1, 5), qualified_rates=(0.5,))


def test_make_selection_pmf_refuses_a_grid_whose_span_overflows():
    import pytest

    from dpfair.datasets import make_selection_pmf

    with pytest.raises(ValueError, match="score_values spans more than the float range"):
        make_selection_pmf([-1e308, 1e308], group_probabilities=(0.5, 0.5))


@pytest.mark.parametrize("generator", [ds.make_classification, ds.make_regression])
def test_synthetic_sizes_that_cannot_fit_in_memory_are_refused_by_name(generator):
    """It was a MemoryError / "Maximum allowed size exceeded" for make_classification."""
    for n_samples in (10**20, 2**70):
        with pytest.raises(ValueError, match="n_samples") as info:
            generator(n_samples)
        assert "lower n_samples" in str(info.value)
    with pytest.raises(ValueError, match="n_features=10000000000000000"):
        generator(10, n_features=10**16)
    X, y, groups = generator(7, random_state=0)
    assert X.shape == (7, 5) and y.shape == groups.shape == (7,)
